"""The five quantization schemes (quantization.md, quantization/*.md).

Each class holds the fields of its section; construction checks them with
the C++ library's validating factories (the QNT-* rule ids), ``encode()``
gives the section's bytes and ``decode_quantization`` reads any of them back.
Where the parameters live (which buffer of which tensor) is checked when a
``Tensor`` is built with the scheme, against the buffers it was given.
"""

from . import _hurray
from ._dtype import dtype

__all__ = ["PerTensorAffine", "PerChannelAffine", "PerBlockAffine", "NF4",
           "MXFP", "decode_quantization"]

_NO_BUFFER = 0xFFFFFFFF
_SYMMETRIC = 0x0001


class _Scheme:
    """Common behaviour: fields, equality, encoding."""

    TAG = 0
    _FIELDS = ()

    def _wire_fields(self):
        raise NotImplementedError

    def _check(self):
        self._wire = _hurray.encode_quantization(self._wire_fields())

    def encode(self) -> bytes:
        """The section's bytes (16 to 24), as a descriptor carries them."""
        return self._wire

    def __eq__(self, other):
        return type(other) is type(self) and other._wire == self._wire

    def __hash__(self):
        return hash(self._wire)

    def __repr__(self):
        args = ", ".join(f"{f}={getattr(self, f)!r}" for f in self._FIELDS)
        return f"hurray.{type(self).__name__}({args})"


class PerTensorAffine(_Scheme):
    """x = scale · (q − zero_point), one pair for the whole tensor."""

    TAG = 0x01
    _FIELDS = ("scale", "zero_point")

    def __init__(self, scale, zero_point=0):
        self.scale = float(scale)
        self.zero_point = int(zero_point)
        self._check()
        # The section stores float32: report the value it holds.
        self.scale = _hurray.decode_quantization(self._wire)[0]["scale"]

    symmetric = property(lambda self: self.zero_point == 0)

    def _wire_fields(self):
        return {"scheme": self.TAG, "scale": self.scale,
                "zero_point": self.zero_point}


class _FactoryOrFlag:
    """``Cls.symmetric(...)`` builds a symmetric scheme (the documents'
    factory); ``instance.symmetric`` says whether the instance is one."""

    def __init__(self, factory):
        self._factory = factory

    def __get__(self, instance, owner=None):
        if instance is None:
            return self._factory.__get__(owner, owner)
        return instance.zero_point_buffer_index is None


class _Affine(_Scheme):
    """Per-channel and per-block: a scale buffer, an optional zero-point
    buffer (None when symmetric)."""

    def _zp_index(self):
        return (_NO_BUFFER if self.zero_point_buffer_index is None
                else self.zero_point_buffer_index)


class PerChannelAffine(_Affine):
    """x = scale[c] · (q − zero_point[c]), c the index along ``axis``."""

    TAG = 0x02
    _FIELDS = ("axis", "scale_buffer_index", "zero_point_buffer_index")

    def __init__(self, axis, scale_buffer_index, zero_point_buffer_index=None):
        self.axis = int(axis)
        self.scale_buffer_index = int(scale_buffer_index)
        self.zero_point_buffer_index = (
            None if zero_point_buffer_index is None
            else int(zero_point_buffer_index))
        self.scale_type = dtype.float32
        self._check()

    @_FactoryOrFlag
    @classmethod
    def symmetric(cls, axis, scale_buffer_index):
        return cls(axis, scale_buffer_index)

    @classmethod
    def asymmetric(cls, axis, scale_buffer_index, zero_point_buffer_index):
        return cls(axis, scale_buffer_index, zero_point_buffer_index)

    def _wire_fields(self):
        return {"scheme": self.TAG,
                "flags": _SYMMETRIC if self.zero_point_buffer_index is None else 0,
                "axis": self.axis, "scale_buffer_index": self.scale_buffer_index,
                "zero_point_buffer_index": self._zp_index(),
                "scale_type": dtype.float32.tag}


class PerBlockAffine(_Affine):
    """x = scale[b] · (q − zero_point[b]), b = index along ``axis`` //
    ``block_size``; a partial last block is padded (RESOLUTIONS.md 2)."""

    TAG = 0x03
    _FIELDS = ("axis", "block_size", "scale_buffer_index",
               "zero_point_buffer_index", "scale_type")

    def __init__(self, axis, block_size, scale_buffer_index,
                 zero_point_buffer_index=None, scale_type=dtype.float32):
        self.axis = int(axis)
        self.block_size = int(block_size)
        self.scale_buffer_index = int(scale_buffer_index)
        self.zero_point_buffer_index = (
            None if zero_point_buffer_index is None
            else int(zero_point_buffer_index))
        self.scale_type = scale_type
        self._check()

    @_FactoryOrFlag
    @classmethod
    def symmetric(cls, axis, block_size, scale_buffer_index,
                  scale_type=dtype.float32):
        return cls(axis, block_size, scale_buffer_index, None, scale_type)

    @classmethod
    def asymmetric(cls, axis, block_size, scale_buffer_index,
                   zero_point_buffer_index, scale_type=dtype.float32):
        return cls(axis, block_size, scale_buffer_index,
                   zero_point_buffer_index, scale_type)

    def _wire_fields(self):
        return {"scheme": self.TAG,
                "flags": _SYMMETRIC if self.zero_point_buffer_index is None else 0,
                "axis": self.axis, "block_size": self.block_size,
                "scale_buffer_index": self.scale_buffer_index,
                "zero_point_buffer_index": self._zp_index(),
                "scale_type": self.scale_type.tag}


class NF4(_Scheme):
    """x = scale[b] · NF4_LUT[q]: 16 fixed levels, one absmax per block."""

    TAG = 0x04
    _FIELDS = ("axis", "block_size", "scale_buffer_index")
    LUT = None  # filled below from the C++ table

    def __init__(self, axis, block_size, scale_buffer_index):
        self.axis = int(axis)
        self.block_size = int(block_size)
        self.scale_buffer_index = int(scale_buffer_index)
        self._check()

    def _wire_fields(self):
        return {"scheme": self.TAG, "axis": self.axis,
                "block_size": self.block_size,
                "scale_buffer_index": self.scale_buffer_index}


class MXFP(_Scheme):
    """x = 2^(e − 127) · q: OCP microscaling, one float8_e8m0 exponent per
    block of ``block_size`` (a power of two in [16, 2048], no partial
    blocks)."""

    TAG = 0x05
    _FIELDS = ("axis", "block_size", "scale_buffer_index")
    CANONICAL_BLOCK_SIZE = 32

    def __init__(self, axis, block_size=32, scale_buffer_index=1):
        self.axis = int(axis)
        self.block_size = int(block_size)
        self.scale_buffer_index = int(scale_buffer_index)
        self._check()

    def _wire_fields(self):
        return {"scheme": self.TAG, "axis": self.axis,
                "block_size": self.block_size,
                "scale_buffer_index": self.scale_buffer_index}


def _from_fields(f):
    """The scheme object of a decoded section's fields."""
    tag = f["scheme"]
    zp = (None if f["zero_point_buffer_index"] == _NO_BUFFER
          or f["flags"] & _SYMMETRIC else f["zero_point_buffer_index"])
    if tag == PerTensorAffine.TAG:
        return PerTensorAffine(f["scale"], f["zero_point"])
    if tag == PerChannelAffine.TAG:
        return PerChannelAffine(f["axis"], f["scale_buffer_index"], zp)
    if tag == PerBlockAffine.TAG:
        return PerBlockAffine(f["axis"], f["block_size"],
                              f["scale_buffer_index"], zp,
                              dtype.from_tag(f["scale_type"]))
    if tag == NF4.TAG:
        return NF4(f["axis"], f["block_size"], f["scale_buffer_index"])
    if tag == MXFP.TAG:
        return MXFP(f["axis"], f["block_size"], f["scale_buffer_index"])
    raise NotImplementedError(f"quantization scheme 0x{tag:02X} is not interpreted")


def decode_quantization(data):
    """Reads a quantization section from the start of ``data`` and returns
    the object of whichever scheme its tag names. Bytes after the section
    are ignored (the section carries its own length)."""
    fields, _consumed = _hurray.decode_quantization(bytes(data))
    return _from_fields(fields)


NF4.LUT = tuple(_hurray.nf4_lut())
