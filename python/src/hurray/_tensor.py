"""Tensors: a descriptor plus its buffers, held without copying."""

import operator

import numpy

from . import _hurray
from ._dtype import Device, dtype as _dtype
from ._errors import BufferError, InvalidDescriptorError
from ._quantization import _from_fields as _scheme_from_fields
from ._sections import (ColumnMajorLayout, RowMajorLayout, Shard,
                        Statistics, StridedLayout, layout_from_fields,
                        layout_to_fields)

__all__ = ["Descriptor", "Tensor", "from_numpy"]

_MIN_ALIGNMENT = 64  # buffer-protocol.md § Buffer Handle: alignment ≥ 64


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
        return self._fields.get("nnz")

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
        return (f"<hurray.{type(self).__name__} shape={self.shape} "
                f"dtype={self.dtype} layout={self.layout.NAME}"
                + (f" quantization={type(q).__name__}" if q else "") + ">")


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
                 byte_offset=0):
        if isinstance(dtype, str):
            dtype = _dtype.from_name(dtype)
        if not isinstance(dtype, _dtype):
            raise TypeError("dtype must be a hurray.dtype, e.g. hurray.float32")
        device = device if device is not None else Device("cpu")
        buffers, handles = [], []
        for i, b in enumerate([data, *aux_buffers]):
            obj, nbytes = _contiguous_view(b, f"buffer {i}")
            buffers.append(obj)
            handles.append((nbytes, _MIN_ALIGNMENT, device.tag, 0, 0))
        fields = {"type": dtype.tag, "shape": _shape_of(shape),
                  "byte_offset": int(byte_offset), "buffers": handles,
                  **layout_to_fields(layout or RowMajorLayout())}
        if quantization is not None:
            fields["quantization"] = _hurray.decode_quantization(
                quantization.encode())[0]
        if shard is not None:
            fields["shard"] = (shard.parent_shape, shard.shard_offset)
        if statistics is not None:
            fields["statistics"] = statistics._fields()
        try:
            _hurray.check_construction(fields)
        except InvalidDescriptorError as e:
            if e.rule and e.rule.startswith("BUF-SZ"):
                raise BufferError(str(e), e.rule, e.offset) from None
            raise
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
            raise AttributeError(f"a {self.layout.NAME} tensor has no {what}")
        return numpy.frombuffer(self._buffers[index], dtype=np_type)

    # Sparse component views (layouts/coo.md, csr.md, csc.md): values in the
    # element type, indices as the uint64 the layouts store.
    values = property(lambda self: self._sparse(
        0, (0x06, 0x07, 0x08, 0x09), self.dtype.numpy, "values"))
    col_indices = property(lambda self: self._sparse(
        1, (0x07,), numpy.dtype("<u8"), "col_indices"))
    row_ptr = property(lambda self: self._sparse(
        2, (0x07,), numpy.dtype("<u8"), "row_ptr"))
    row_indices = property(lambda self: self._sparse(
        1, (0x08,), numpy.dtype("<u8"), "row_indices"))
    col_ptr = property(lambda self: self._sparse(
        2, (0x08,), numpy.dtype("<u8"), "col_ptr"))
    coordinates = property(lambda self: self._sparse(
        1, (0x06,), numpy.dtype("<u8"), "coordinates"))

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
        if np_type is None:
            raise TypeError(f"numpy has no dtype for {self.dtype.name}; "
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
        raise TypeError(f"no numpy view of a {layout.NAME} tensor")

    def __array__(self, dtype=None):
        a = self._stored_array()
        return a if dtype is None else a.astype(dtype)

    def __dlpack__(self, stream=None):
        a = self._stored_array()
        if not a.flags.writeable:
            # DLPack cannot say read-only: hand out a copy rather than a
            # writable alias of bytes Python considers immutable.
            a = a.copy()
        return a.__dlpack__(stream=stream) if stream is not None \
            else a.__dlpack__()

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
