"""hurray: read, check, write and dequantize Hurray tensors from Python.

A binding of hurray-cpp (the C++ library and the ``hurray`` tool): the same
parser, validator, SIMD dequantizer and containers, so Python refuses
exactly what the C++ library refuses, with the same rule ids and offsets.

    import hurray, numpy
    t = hurray.quantize(numpy.random.rand(64, 64).astype("f4"), "nf4", block_size=64)
    hurray.save("model.hrry", {"w": t})
    w = hurray.load("model.hrry")["w"].dequantize()      # float32 numpy array
"""

from . import _hurray
from ._errors import (BufferError, CopyRequiredError, FileError,
                      HurrayError, InternalError, InvalidDescriptorError,
                      StreamError, UnsupportedError)

_hurray._set_error_classes(InvalidDescriptorError, FileError, StreamError)

from ._dtype import Device, device, dtype  # noqa: E402
from ._io import (DONE, NEED_MORE, REJECTED, Decoder, HrryFile,  # noqa: E402
                  StreamReader, StreamWriter, decode_descriptor, ingest, load,
                  open, save)
from ._quantization import (MXFP, NF4, PerBlockAffine,  # noqa: E402
                            PerChannelAffine, PerTensorAffine,
                            decode_quantization)
from ._quantize import quantize  # noqa: E402
from ._convert import (ConvertedTensor, ConvertReport,  # noqa: E402
                       convert)
from ._sections import (BlockPagedLayout, ColMajorLayout,  # noqa: E402
                        ColumnMajorLayout, CompositeLayout, CooLayout,
                        CscLayout, CsfLayout, CsrLayout, HilbertLayout,
                        Layout, MortonLayout, PrivateExtensionLayout,
                        RowMajorLayout, Shard, Statistics, StridedLayout,
                        TiledLayout, UnknownLayout)
from ._creation import (arange, asarray, empty, empty_like,  # noqa: E402
                        eye, from_dlpack, full, full_like, linspace, ones,
                        ones_like, zeros, zeros_like)
from ._tensor import (Descriptor, Tensor, from_hurray,  # noqa: E402
                      from_numpy)
from ._sparse import (from_scipy, sparse_coo, sparse_csc,  # noqa: E402
                      sparse_csf, sparse_csr)

from ._version import __version__  # noqa: E402  (generated from version.bzl)
Dtype = dtype

# Module-level element types: the Tier 1 ones (hurray.float32, hurray.int8,
# ...), as in the reference's module; every type, Tier 2 included, is on
# hurray.dtype (hurray.dtype.int4).
for _name, _t in dtype._by_name.items():
    if _t.tier == 1:
        globals()[_name] = _t
del _name, _t

NF4_LUT = NF4.LUT
MXFP_CANONICAL_BLOCK_SIZE = MXFP.CANONICAL_BLOCK_SIZE
