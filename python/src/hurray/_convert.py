"""hurray.convert: safetensors and GGUF files to .hrry, as ``hurray
convert`` does it (the same C++ converter, stream/convert/convert_file.h)."""

import os

from . import _hurray
from ._errors import UnsupportedError


class ConvertedTensor:
    """One tensor of a conversion, in output order.

    ``exact`` is True when the tensor dequantizes to the source's values bit
    for bit; False for tensors ``quantize`` / ``requantize`` took and GGUF
    Q4_K / Q5_K / Q2_K, whose errors against the source's values are
    ``max_abs_error`` and ``rms_error`` (0.0 when exact). ``type`` is the
    Hurray element type ("float32", "int8", ...), ``scheme`` its
    quantization ("" or "per_block_affine", "nf4", "mxfp", ...), ``note``
    why ``quantize`` kept it ("1-D", "--skip", ...) or ""."""

    __slots__ = ("name", "shape", "source_type", "type", "scheme", "exact",
                 "quantized", "max_abs_error", "rms_error", "note")

    def __init__(self, name, shape, source_type, type, scheme, exact,
                 quantized, max_abs_error, rms_error, note):
        self.name = name
        self.shape = tuple(shape)
        self.source_type = source_type
        self.type = type
        self.scheme = scheme
        self.exact = exact
        self.quantized = quantized
        self.max_abs_error = max_abs_error
        self.rms_error = rms_error
        self.note = note

    def _fields(self):
        return tuple(getattr(self, n) for n in self.__slots__)

    def __eq__(self, other):
        if not isinstance(other, ConvertedTensor):
            return NotImplemented
        return self._fields() == other._fields()

    __hash__ = None

    def __repr__(self):
        errors = ("" if self.exact else
                  f", max_abs_error={self.max_abs_error:.3g}, "
                  f"rms_error={self.rms_error:.3g}")
        return (f"ConvertedTensor({self.name!r}, shape={self.shape}, "
                f"{self.source_type} -> {self.type}"
                f"{' ' + self.scheme if self.scheme else ''}, "
                f"exact={self.exact}{errors})")


class ConvertReport(list):
    """The converted tensors (a list of ConvertedTensor, in output order)
    with the run's totals: ``format`` ("safetensors" or "gguf"),
    ``kv_entries``, ``bytes_written`` (the output's size),
    ``kernel_copied_bytes`` and ``padding_bytes`` (of them) and
    ``warnings`` (e.g. a shard index whose total_size disagrees)."""

    format = ""
    kv_entries = 0
    bytes_written = 0
    kernel_copied_bytes = 0
    padding_bytes = 0
    warnings = ()


def _optional_int(name, value):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if value < 0:
        raise ValueError(f"{name} must not be negative")
    return value


def _scheme(name, value):
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"{name} must be a scheme name such as "
                    f"'per_block:int8:32', not {type(value).__name__}")


def _kv_pairs(kv):
    if kv is None:
        return []
    items = kv.items() if hasattr(kv, "items") else kv
    pairs = []
    for item in items:
        key, value = item
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError("kv keys and values must be str")
        pairs.append((key, value))
    return pairs


def convert(input, output, *, quantize=None, requantize=None, skip=(),
            compact_kquants=False, data_alignment=None, kv=None,
            chunk_size=None, scale_spool_bytes=None, max_metadata_bytes=None,
            max_buffer_bytes=None, max_safetensors_header_bytes=None,
            max_gguf_metadata_bytes=None):
    """Converts a safetensors or GGUF file to a .hrry file and returns a
    ConvertReport (a list of ConvertedTensor with the totals), as
    ``hurray convert INPUT -o OUTPUT`` does, with the GIL released while it
    runs (Ctrl-C stops it: KeyboardInterrupt, nothing written).

    ``input``: a safetensors or GGUF file (told apart by its first bytes), a
    sharded model (a ``*.index.json``, or a directory holding
    ``model.safetensors.index.json``) or the first part of a split GGUF
    (``<prefix>-00001-of-0000N.gguf``, the parts beside it). ``output`` is
    written through a temp file of its directory and appears only when the
    conversion succeeded (replacing a file there).

    Every tensor keeps its values exactly (stream/convert/README.md has the
    type map) unless: ``quantize="per_block:int8:32"`` (SCHEME[:STORAGE]
    [:BLOCK]: per_tensor, per_channel, per_block, nf4, mxfp) quantizes float
    tensors of rank >= 2 whose names match no ``skip`` glob;
    ``requantize=SCHEME`` takes GGUF Q4_1 / Q5_0 / Q5_1 / Q8_1 (and
    Q4_K / Q5_K / Q2_K); GGUF Q4_K / Q5_K / Q2_K are within a documented
    bound of ggml's values (``compact_kquants=True``: Q4_K and Q2_K at their
    own width, within half of ggml's step). ``kv`` ({key: value} or
    (key, value) pairs of str) adds KV entries, replacing source keys of the
    same name. ``data_alignment``: the output's data_buffer_alignment, a
    power of two from 4096 to 2 MiB. ``chunk_size`` (512 KiB),
    ``scale_spool_bytes`` (32 MiB) bound memory; ``max_metadata_bytes``
    (64 MiB) and ``max_buffer_bytes`` (4 GiB) are the limits of the reader
    the output is for (``hurray ingest``'s), ``max_safetensors_header_bytes``
    (8 MiB) and ``max_gguf_metadata_bytes`` (32 MiB) the input readers'.

    Raises ValueError / TypeError for a bad argument (an unknown scheme),
    InvalidDescriptorError for a refused input (``rule`` and ``offset`` set
    when a Hurray rule is broken, such as LIMIT-BUFFER-BYTES; the message
    names the tensor, key or shard), UnsupportedError for a GGUF type with no
    Hurray form (Q4_1 without ``requantize``, IQ*), FileError when the input
    or the output cannot be opened, read or written.
    """
    if isinstance(skip, str):
        skip = (skip,)
    skip = list(skip)
    if not all(isinstance(p, str) for p in skip):
        raise TypeError("skip must hold str glob patterns")
    try:
        raw = _hurray.convert(
            os.fspath(input), os.fspath(output),
            quantize=_scheme("quantize", quantize),
            requantize=_scheme("requantize", requantize), skip=skip,
            compact_kquants=bool(compact_kquants),
            data_alignment=_optional_int("data_alignment", data_alignment),
            kv=_kv_pairs(kv),
            chunk_size=_optional_int("chunk_size", chunk_size),
            scale_spool_bytes=_optional_int("scale_spool_bytes",
                                            scale_spool_bytes),
            max_metadata_bytes=_optional_int("max_metadata_bytes",
                                             max_metadata_bytes),
            max_buffer_bytes=_optional_int("max_buffer_bytes",
                                           max_buffer_bytes),
            max_safetensors_header_bytes=_optional_int(
                "max_safetensors_header_bytes", max_safetensors_header_bytes),
            max_gguf_metadata_bytes=_optional_int("max_gguf_metadata_bytes",
                                                  max_gguf_metadata_bytes))
    except NotImplementedError as e:
        if isinstance(e, UnsupportedError):
            raise
        raise UnsupportedError(str(e)) from None
    (fmt, _count, kv_entries, written, copied, padding, tensors,
     warnings) = raw
    report = ConvertReport(ConvertedTensor(*t) for t in tensors)
    report.format = fmt
    report.kv_entries = kv_entries
    report.bytes_written = written
    report.kernel_copied_bytes = copied
    report.padding_bytes = padding
    report.warnings = tuple(warnings)
    return report
