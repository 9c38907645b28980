"""Tensors: a descriptor plus its buffers, held without copying."""

import builtins
import operator

import numpy

from . import _hurray
from ._dtype import Device, dtype as _dtype
from ._errors import (BufferError, CopyRequiredError,
                      InvalidDescriptorError, UnsupportedError)
from ._quantization import _from_fields as _scheme_from_fields
from ._sections import (ColumnMajorLayout, CompositeLayout, RowMajorLayout,
                        Shard,
                        Statistics, StridedLayout, layout_from_fields,
                        layout_to_fields)

__all__ = ["Descriptor", "Tensor", "from_numpy", "from_hurray"]

_MIN_ALIGNMENT = 64  # buffer-protocol.md § Buffer Handle: alignment ≥ 64
_SPARSE = (0x06, 0x07, 0x08, 0x09)  # COO, CSR, CSC, CSF
_INDEXED = (*_SPARSE, 0x0A)  # and block-paged: parser/data_checks.h
# file-format.md § Composite Tensors: a member's role (CompositeMember).
_MEMBER_ROLES = {"correction": 0x00, "base": 0x01}


class _NotExchangeable(builtins.BufferError, TypeError):
    """No numpy/DLPack view of these elements: the builtin BufferError the
    buffer protocols raise, and a TypeError as before."""


class Descriptor:
    """A decoded tensor descriptor: what a reader knows before the data."""

    def __init__(self, fields):
        self._fields = fields

    shape = property(lambda self: tuple(self._fields["shape"]))
    ndim = property(lambda self: len(self._fields["shape"]))
    dtype = property(lambda self: _dtype.from_tag(self._fields["type"]))
    byte_offset = property(lambda self: self._fields["byte_offset"])
    buffer_count = property(lambda self: len(self._fields["buffers"]))
    buffer_sizes = property(
        lambda self: tuple(b[0] for b in self._fields["buffers"]))
    # A composite member's role, "base" or "correction"; None otherwise.
    member_role = property(lambda self: {v: k for k, v in _MEMBER_ROLES.items()}
                           .get(self._fields.get("member_role")))

    @property
    def size(self):
        n = 1
        for d in self._fields["shape"]:
            n *= d
        return n

    @property
    def device(self):
        buffers = self._fields["buffers"]
        return Device.from_tag(buffers[0][2]) if buffers else Device("cpu")

    @property
    def layout(self):
        return layout_from_fields(self._fields)

    @property
    def nnz(self):
        """Stored values of a sparse tensor; AttributeError for other
        layouts (so ``hasattr(t, "nnz")`` tells whether it is sparse)."""
        if self._fields["layout"] not in _SPARSE:
            raise AttributeError(f"a {self.layout.name} tensor has no nnz")
        return self._fields["nnz"]

    @property
    def quantization(self):
        q = self._fields.get("quantization")
        return None if q is None else _scheme_from_fields(q)

    @property
    def statistics(self):
        s = self._fields.get("statistics")
        return None if s is None else Statistics._from_fields(s)

    @property
    def shard(self):
        s = self._fields.get("shard")
        return None if s is None else Shard(*s)

    def encode(self) -> bytes:
        """The descriptor's bytes, validated strictly as a reader would."""
        return _hurray.encode_descriptor(self._fields)

    def __repr__(self):
        q = self.quantization
        nnz = self._fields.get("nnz") if self._fields["layout"] in _SPARSE \
            else None
        return (f"hurray.{type(self).__name__}(shape={self.shape}, "
                f"dtype={self.dtype.name}, layout={self.layout.name!r}"
                + (f", nnz={nnz}" if nnz is not None else "")
                + (f", quantization={type(q).__name__}" if q else "") + ")")


# Buffer-protocol formats (struct module syntax) of plain numbers: bool,
# integers, floats and complex, with an optional byte-order prefix. Anything
# else (numpy object arrays, strings, records, void) is refused: an object
# array's bytes are PyObject* addresses, not values.
_PLAIN_FORMATS = frozenset("?bBhHiIlLqQnNefd") | {"Ze", "Zf", "Zd"}


def _contiguous_view(obj, what):
    try:
        view = memoryview(obj)
    except TypeError:
        raise TypeError(f"{what} must support the buffer protocol (bytes, "
                        f"bytearray, a numpy array), not "
                        f"{type(obj).__name__}") from None
    fmt = view.format.lstrip("@=<>!")
    if fmt not in _PLAIN_FORMATS:
        raise TypeError(f"{what} holds {view.format!r} items: a tensor's "
                        "buffers hold plain numbers (bool, integer, float), "
                        "not objects, strings or records")
    if not view.c_contiguous:
        raise ValueError(f"{what} must be a contiguous buffer")
    return obj, view.nbytes


def _check_rank_fields(layout, rank):
    """A layout's per-dimension fields need one entry per dimension (the
    wire stores exactly rank of them, so a short list cannot be encoded)."""
    for name in ("strides", "morton_bits", "mode_order"):
        values = getattr(layout, name, None)
        if values is not None and len(values) != rank:
            raise InvalidDescriptorError(
                f"{type(layout).__name__}.{name} has {len(values)} entries; "
                f"the tensor has rank {rank}")
    hilbert_rank = getattr(layout, "hilbert_rank", None)
    if hilbert_rank is not None and hilbert_rank != rank:
        raise InvalidDescriptorError(
            f"HilbertLayout.hilbert_rank is {hilbert_rank}; the tensor has "
            f"rank {rank}")


# The components of the sparse layouts, in buffer order, with the bytes each
# needs (layouts/coo.md, csr.md, csc.md § Buffer Size).
def _components(fields, itemsize):
    nnz, shape = fields.get("nnz", 0), fields["shape"]
    values = ("values", nnz * itemsize if itemsize else None)
    if fields["layout"] == 0x06:
        return [values, ("indices", nnz * len(shape) * 8)]
    if fields["layout"] in (0x07, 0x08) and len(shape) == 2:
        rows = shape[0] if fields["layout"] == 0x07 else shape[1]
        return [values,
                ("col_indices" if fields["layout"] == 0x07 else "row_indices",
                 nnz * 8),
                ("row_ptr" if fields["layout"] == 0x07 else "col_ptr",
                 (rows + 1) * 8)]
    return []


def _explain(fields, layout, handles):
    """Words naming what a refusal is about: the sparse component that is
    too small, a quantization index naming one of the layout's buffers."""
    notes = []
    dtype = _dtype.from_tag(fields["type"])
    itemsize = dtype.numpy.itemsize if dtype.numpy is not None else None
    for i, (name, need) in enumerate(_components(fields, itemsize)):
        if need is not None and i < len(handles) and handles[i][0] < need:
            notes.append(f"{name} (buffer {i}) has {handles[i][0]} bytes, "
                         f"needs {need}")
    q = fields.get("quantization")
    own = layout.buffer_count or 1
    if q is not None:
        for key in ("scale_buffer_index", "zero_point_buffer_index"):
            i = q.get(key)
            if i is not None and 1 <= i < own:
                notes.append(f"quantization buffer index {i} ({key}) names "
                             f"one of the {layout.name} layout's own "
                             f"{own} buffers")
    return (" (" + "; ".join(notes) + ")") if notes else ""


def _aligned_copy(data):
    """A writable copy of ``data`` at an address that is a multiple of 64
    (the handle's declared minimum alignment)."""
    raw = numpy.empty(len(data) + _MIN_ALIGNMENT, dtype=numpy.uint8)
    start = -raw.ctypes.data % _MIN_ALIGNMENT
    out = raw[start:start + len(data)]
    out[:] = numpy.frombuffer(data, dtype=numpy.uint8)
    return out


def _index(value, what):
    """An integer argument: numpy integers accepted, floats and bool not."""
    if isinstance(value, bool):
        raise TypeError(f"{what} must be an integer, not bool")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{what} must be an integer, not "
                        f"{type(value).__name__}") from None


def _shape_of(shape):
    """A shape as a tuple of Python ints: a sequence of integers (numpy
    integers included), never a str, bytes or a float."""
    if isinstance(shape, (str, bytes, bytearray)) or not hasattr(shape,
                                                                 "__iter__"):
        raise TypeError("shape must be a sequence of integers, not "
                        f"{type(shape).__name__}")
    dims = []
    for d in shape:
        if isinstance(d, bool):
            raise TypeError("shape holds integers, not bool")
        try:
            dims.append(operator.index(d))
        except TypeError:
            raise TypeError("shape holds integers, not "
                            f"{type(d).__name__} ({d!r})") from None
    return tuple(dims)


class Tensor(Descriptor):
    """One tensor: element type, shape, layout, optional sections, and its
    buffers (``data`` is buffer 0, ``aux_buffers`` the others, in order).

    Construction checks what a descriptor must satisfy: the shape, the
    buffer sizes (hurray.BufferError), and where quantization parameters
    live (indices name buffers that exist, none aliases the data, all on
    one device: InvalidDescriptorError). One rule waits for the write: the
    user's documents build NF4 over ``int4``, which the wire forbids
    (QNT-NF4-05, uint4 only); such a tensor can be built and inspected, and
    ``encode``, ``save``, ``StreamWriter`` and ``dequantize`` refuse it.
    Buffers are kept, not copied.
    """

    def __init__(self, data, dtype, shape, device=None, *, aux_buffers=(),
                 quantization=None, layout=None, shard=None, statistics=None,
                 byte_offset=0, member_role=None):
        if isinstance(dtype, str):
            dtype = _dtype.from_name(dtype)
        if not isinstance(dtype, _dtype):
            raise TypeError("dtype must be a hurray.dtype, e.g. hurray.float32")
        device = device if device is not None else Device("cpu")
        if isinstance(data, bytes):
            # Immutable: the tensor owns a writable copy, so numpy views of
            # it are writable as numpy's contract expects.
            data = _aligned_copy(data)
        if isinstance(layout, CompositeLayout):
            if data is not None or aux_buffers:
                raise UnsupportedError(
                    "a composite head owns no buffers: build it with "
                    "data=None, then its members (member_role=...)")
        elif data is None:
            raise TypeError("data is None: only a composite head "
                            "(CompositeLayout) has no buffers")
        buffers, handles = [], []
        for i, b in enumerate([] if data is None else [data, *aux_buffers]):
            obj, nbytes = _contiguous_view(b, f"buffer {i}")
            buffers.append(obj)
            handles.append((nbytes, _MIN_ALIGNMENT, device.tag, 0, 0))
        shape = _shape_of(shape)
        layout = RowMajorLayout() if layout is None else layout
        fields = {"type": dtype.tag, "shape": shape,
                  "byte_offset": _index(byte_offset, "byte_offset"),
                  "buffers": handles,
                  **layout_to_fields(layout, len(shape))}
        if member_role is not None:
            if member_role not in _MEMBER_ROLES:
                raise ValueError("member_role is 'base' or 'correction'")
            fields["member_role"] = _MEMBER_ROLES[member_role]
        _check_rank_fields(layout, len(shape))
        if quantization is not None:
            fields["quantization"] = _hurray.decode_quantization(
                quantization.encode())[0]
        if shard is not None:
            fields["shard"] = (shard.parent_shape, shard.shard_offset)
        if statistics is not None:
            fields["statistics"] = statistics._fields()
        try:
            _hurray.check_construction(fields)
            if fields["layout"] in _INDEXED:  # the index buffers' rules
                _hurray.check_index_data(fields, buffers)
        except InvalidDescriptorError as e:
            message = str(e) + _explain(fields, layout, handles)
            if e.rule and e.rule.startswith("BUF-SZ"):
                raise BufferError(message, e.rule, e.offset) from None
            raise InvalidDescriptorError(message, e.rule, e.offset) from None
        super().__init__(fields)
        self._buffers = buffers
        self._device = device

    @classmethod
    def _from_parts(cls, fields, buffers):
        """A tensor a reader has already validated."""
        t = cls.__new__(cls)
        Descriptor.__init__(t, fields)
        t._buffers = list(buffers)
        t._device = Descriptor.device.fget(t)
        return t

    device = property(lambda self: self._device)
    buffers = property(lambda self: tuple(self._buffers))
    data = property(lambda self: self._buffers[0])

    def buffer(self, index):
        """Buffer ``index`` of the buffer table as a uint8 numpy array over
        the tensor's memory (no copy). IndexError outside
        ``0 .. buffer_count - 1`` (no counting from the end)."""
        index = operator.index(index)
        if not 0 <= index < len(self._buffers):
            raise IndexError(f"buffer {index} of a tensor with "
                             f"{len(self._buffers)} buffers")
        return numpy.frombuffer(self._buffers[index], dtype=numpy.uint8)

    def _sparse(self, index, layouts, np_type, what):
        if self._fields["layout"] not in layouts:
            raise AttributeError(f"a {self.layout.name} tensor has no {what}")
        return numpy.frombuffer(self._buffers[index], dtype=np_type)

    # Sparse component views (layouts/coo.md, csr.md, csc.md), no copy:
    # values in the element type, indices as the uint64 the layouts store.
    # An accessor that does not apply is absent (AttributeError), so hasattr
    # tells the truth.
    @property
    def values(self):
        a = self._sparse(0, _SPARSE, self.dtype.numpy, "values")
        return a[:self._fields["nnz"]]

    col_indices = property(lambda self: self._sparse(
        1, (0x07,), numpy.dtype("<u8"), "col_indices")[:self._fields["nnz"]])
    row_ptr = property(lambda self: self._sparse(
        2, (0x07,), numpy.dtype("<u8"), "row_ptr")[:self.shape[0] + 1])
    row_indices = property(lambda self: self._sparse(
        1, (0x08,), numpy.dtype("<u8"), "row_indices")[:self._fields["nnz"]])
    col_ptr = property(lambda self: self._sparse(
        2, (0x08,), numpy.dtype("<u8"), "col_ptr")[:self.shape[1] + 1])
    coordinates = property(lambda self: self._sparse(
        1, (0x06,), numpy.dtype("<u8"), "coordinates"))

    @property
    def indices(self):
        """COO coordinates as an (nnz, rank) uint64 view."""
        flat = self._sparse(1, (0x06,), numpy.dtype("<u8"), "indices")
        n, rank = self._fields["nnz"], len(self.shape)
        return flat[:n * rank].reshape(n, rank)

    @property
    def T(self):
        raise NotImplementedError(
            "hurray tensors are not arrays: use numpy.asarray(t).T")

    # -- numpy -------------------------------------------------------------

    def _stored_array(self):
        """The elements as stored, viewed in logical order (no copy), for
        byte-addressable types in row-major, column-major or strided
        layout."""
        np_type = self.dtype.numpy
        if self._fields["layout"] in _SPARSE:
            raise UnsupportedError(
                f"a {self.layout.name} tensor has no dense array view: read "
                "its values and indices, or dequantize()")
        if self.dtype.name == "bool":
            raise _NotExchangeable(
                "bool is stored bit-packed (one bit per element); numpy and "
                "DLPack's bool take a byte per element: no view, use "
                "dequantize() or unpack t.data with numpy.unpackbits")
        if np_type is None:
            raise _NotExchangeable(f"numpy has no dtype for {self.dtype.name} "
                                   "(not exchangeable through DLPack either); "
                                   "use dequantize()")
        if self.size == 0:
            return numpy.zeros(self.shape, dtype=np_type)
        flat = numpy.frombuffer(self._buffers[0], dtype=numpy.uint8)
        flat = flat[self.byte_offset:].view(np_type)
        layout = self.layout
        item = np_type.itemsize
        if isinstance(layout, RowMajorLayout):
            return flat[:self.size].reshape(self.shape)
        if isinstance(layout, ColumnMajorLayout):
            return flat[:self.size].reshape(self.shape[::-1]).T
        if isinstance(layout, StridedLayout):
            return numpy.lib.stride_tricks.as_strided(
                flat, shape=self.shape,
                strides=[s * item for s in layout.strides], writeable=False)
        raise UnsupportedError(f"no numpy view of a {layout.name} tensor")

    def __array__(self, dtype=None, copy=None):
        """numpy's conversion (numpy 2's signature): a view of the tensor's
        memory when no cast is asked (writable when the tensor's memory is),
        a new array for a cast or ``copy=True``; ``copy=False`` with a cast
        raises CopyRequiredError."""
        a = self._stored_array()
        if dtype is not None and numpy.dtype(dtype) != a.dtype:
            if copy is False:
                raise CopyRequiredError(
                    f"copy=False: {self.dtype.name} to {numpy.dtype(dtype)} "
                    "needs a copy")
            return a.astype(dtype)
        return a.copy() if copy else a

    def __dlpack__(self, stream=None, **kwargs):
        if self._fields["layout"] in _SPARSE:
            raise builtins.BufferError(
                f"DLPack describes dense arrays: a {self.layout.name} tensor "
                "has none (use __hurray__ for every layout)")
        try:
            a = self._stored_array()
        except UnsupportedError as e:
            raise builtins.BufferError(str(e)) from None
        if not a.flags.writeable:
            # DLPack cannot say read-only: hand out a copy rather than a
            # writable alias of bytes Python considers immutable.
            a = a.copy()
        return a.__dlpack__(stream=stream) if stream is not None \
            else a.__dlpack__()

    def __hurray__(self):
        """The native protocol: a fresh PyCapsule named "hurray_tensor"
        carrying the encoded descriptor and every buffer of the buffer
        table, shared, not copied (python/ext/tensor_capsule.h). Every
        layout and element type; the descriptor is validated strictly as
        for a write."""
        return _hurray.make_tensor_capsule(self.encode(), self._buffers)

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU

    def dequantize(self, dtype=numpy.float32, threads=1, out=None):
        """The tensor's values in logical row-major order as a new numpy
        array: float32, float16, or bfloat16 (``"bfloat16"``: the bits as
        uint16, rounded to nearest even). Quantized tensors go through the
        C++ SIMD kernels with the GIL released, any dense layout; plain
        tensors are converted (floats, minifloats, integers).

        ``out``: a C-contiguous float32 array of ``size`` elements to write
        into instead of a new array (quantized tensors; float32 only): no
        allocation and no copy, for loops that reuse one buffer."""
        if self._fields.get("quantization") is not None:
            if out is not None and numpy.dtype(dtype) != numpy.float32:
                raise ValueError("out= takes float32 results only")
            out = self._dequantizer(threads).run(self._buffers[0], out, threads)
        elif out is not None:
            raise ValueError("out= is for quantized tensors")
        else:
            out = self._plain_to_float32()
        return _cast(out, dtype)

    def _dequantizer(self, threads):
        """The C++ Dequantizer of this tensor. It copies the parameters when
        built, so it is kept for the next call only while no parameter
        buffer can change (bytes, read-only views such as a loaded file's)."""
        dq = getattr(self, "_dq", None)
        if dq is not None:
            return dq
        dq = _hurray.Dequantizer(self._fields, self._buffers, threads)
        if all(memoryview(b).readonly for b in self._buffers[1:]):
            self._dq = dq
        return dq

    def _plain_to_float32(self):
        name = self.dtype.name
        if name == "bfloat16":
            bits = self._with_numpy_type(numpy.dtype("<u2"))
            return (bits.astype(numpy.uint32) << 16).view(numpy.float32)
        if name in ("float8_e4m3", "float8_e5m2"):
            codes = self._with_numpy_type(numpy.dtype("u1"))
            return _hurray.minifloat_table(self.dtype.tag)[codes]
        if name in ("float4_e2m1", "float6_e2m3", "float6_e3m2"):
            return _hurray.minifloat_table(self.dtype.tag)[self._packed_codes()]
        if self.dtype.numpy is None:
            raise TypeError(f"cannot convert {name} to float32")
        if self._fields["layout"] not in (0x01, 0x02, 0x03):
            raise NotImplementedError(
                f"plain {self.layout.NAME} tensors are not converted here")
        return numpy.array(self._stored_array(), dtype=numpy.float32)

    def _with_numpy_type(self, np_type):
        flat = numpy.frombuffer(self._buffers[0], dtype=numpy.uint8)
        flat = flat[self.byte_offset:].view(np_type)
        if self._fields["layout"] == 0x01:
            return flat[:self.size].reshape(self.shape)
        if self._fields["layout"] == 0x02:
            return flat[:self.size].reshape(self.shape[::-1]).T
        raise NotImplementedError(f"plain {self.dtype.name} in {self.layout.NAME}")

    def _packed_codes(self):
        """Sub-byte codes of a row-major tensor, LSB first
        (element-types.md § Packing): 4-bit two per byte, 6-bit four per
        three bytes."""
        if self._fields["layout"] != 0x01:
            raise NotImplementedError(f"plain {self.dtype.name} in {self.layout.NAME}")
        raw = numpy.frombuffer(self._buffers[0], dtype=numpy.uint8)[self.byte_offset:]
        n = self.size
        if self.dtype.bit_width == 4:
            codes = numpy.empty(raw.size * 2, dtype=numpy.uint8)
            codes[0::2], codes[1::2] = raw & 0x0F, raw >> 4
        else:
            groups = raw[: (raw.size // 3) * 3].reshape(-1, 3).astype(numpy.uint32)
            word = groups[:, 0] | (groups[:, 1] << 8) | (groups[:, 2] << 16)
            codes = numpy.stack([(word >> (6 * k)) & 0x3F for k in range(4)],
                                axis=1).reshape(-1).astype(numpy.uint8)
        return codes[:n].reshape(self.shape)

    def __repr__(self):
        return super().__repr__().replace("<hurray.Tensor", "<hurray.Tensor", 1)


def _cast(out, dtype):
    if dtype in ("bfloat16", "bf16"):
        bits = numpy.ascontiguousarray(out, dtype=numpy.float32).view(numpy.uint32)
        rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(numpy.uint16)
        return numpy.where(numpy.isnan(out), numpy.uint16(0x7FC0), rounded)
    dtype = numpy.dtype(dtype)
    if dtype == numpy.float32:
        return out
    if dtype == numpy.float16:
        return out.astype(numpy.float16)
    raise ValueError("dequantize to float32, float16 or 'bfloat16'")


_FROM_NUMPY = {"f2": "float16", "f4": "float32", "f8": "float64",
               "i1": "int8", "u1": "uint8", "i2": "int16", "u2": "uint16",
               "i4": "int32", "u4": "uint32", "i8": "int64", "u8": "uint64",
               "b1": "bool", "c8": "complex64", "c16": "complex128"}


def from_hurray(obj):
    """A Tensor over the memory of any object implementing the native
    protocol (``__hurray__``, see Tensor.__hurray__): no copy. The
    descriptor is decoded and validated strictly, and every buffer must
    match the size its handle declares. TypeError for an object without
    the protocol."""
    method = getattr(type(obj), "__hurray__", None)
    if method is None:
        raise TypeError(f"{type(obj).__name__} does not implement the Hurray "
                        "native protocol (__hurray__)")
    descriptor, buffers = _hurray.open_tensor_capsule(method(obj))
    fields, consumed = _hurray.decode_descriptor(descriptor, False)
    if consumed != len(descriptor):
        raise InvalidDescriptorError(
            f"the capsule's descriptor has {len(descriptor) - consumed} bytes "
            "after its end")
    declared = [h[0] for h in fields["buffers"]]
    given = [b.nbytes for b in buffers]
    if declared != given:
        raise BufferError(f"the capsule's buffers have {given} bytes; its "
                          f"descriptor declares {declared}")
    return Tensor._from_parts(fields, buffers)


def from_numpy(array):
    """A row-major tensor over a numpy array's memory (no copy when the
    array is C-contiguous and little-endian; otherwise over a copy that is)."""
    array = numpy.asarray(array)
    if array.dtype.byteorder == ">":
        array = array.astype(array.dtype.newbyteorder("<"))
    name = _FROM_NUMPY.get(f"{array.dtype.kind}{array.dtype.itemsize}")
    if name is None:
        raise TypeError(f"no Hurray element type for numpy {array.dtype}")
    array = numpy.ascontiguousarray(array)
    return Tensor(array.reshape(-1).view(numpy.uint8) if array.size else b"",
                  _dtype.from_name(name), array.shape)
