"""Element types and devices."""

import operator

from . import _hurray
from ._errors import InvalidDescriptorError

__all__ = ["dtype", "Device", "device"]


class dtype:
    """One element type of the specification (element-types.md).

    Instances are shared: ``hurray.dtype.int4 is hurray.int4``. Compare with
    ``==``; ``bit_width`` is 6 for the float6 types (4 packed per 3 bytes).
    """

    __slots__ = ("name", "tag", "bit_width", "is_float", "is_signed", "tier")
    _by_tag = {}
    _by_name = {}

    def __init__(self, tag, name, bit_width, is_float, is_signed, tier):
        self.tag = tag
        self.name = name
        self.bit_width = bit_width
        self.is_float = is_float
        self.is_signed = is_signed
        self.tier = tier

    @classmethod
    def from_tag(cls, tag):
        found = cls._by_tag.get(tag)
        if found is None:
            raise ValueError(f"unknown element type tag 0x{tag:02X}")
        return found

    @classmethod
    def from_name(cls, name):
        found = cls._by_name.get(name)
        if found is None:
            from ._errors import InvalidDescriptorError

            raise InvalidDescriptorError(f"unknown element type {name!r}")
        return found

    @property
    def is_array_api(self):
        """One of the Array API standard's types (which numpy holds as is)."""
        return self.name in _ARRAY_API

    @property
    def numpy(self):
        """The numpy dtype holding one element as stored, or None (sub-byte
        and minifloat types have none)."""
        import numpy

        return _NUMPY.get(self.name) and numpy.dtype(_NUMPY[self.name])

    # numpy.dtype(hurray.uint8) reads this, so numpy dtypes compare equal
    # to the hurray type stored the same way (numpy.uint8 == hurray.uint8).
    dtype = property(lambda self: self.numpy)

    def __eq__(self, other):
        if isinstance(other, dtype):
            return other.tag == self.tag
        if type(other).__module__ == "numpy" and self.numpy is not None:
            import numpy
            try:
                return numpy.dtype(other) == self.numpy
            except TypeError:
                return False
        return NotImplemented

    def __hash__(self):
        return hash(self.tag)

    def __repr__(self):
        return f"hurray.{self.name}"

    __str__ = lambda self: self.name  # noqa: E731


_NUMPY = {
    "float16": "<f2", "float32": "<f4", "float64": "<f8",
    "int8": "i1", "uint8": "u1", "int16": "<i2", "uint16": "<u2",
    "int32": "<i4", "uint32": "<u4", "int64": "<i8", "uint64": "<u8",
    "bool": "?", "complex64": "<c8", "complex128": "<c16",
}

_ARRAY_API = {"bool", "int8", "uint8", "int16", "uint16", "int32", "uint32",
              "int64", "uint64", "float32", "float64", "complex64",
              "complex128"}

for _entry in _hurray.element_types():
    _t = dtype(*_entry)
    dtype._by_tag[_t.tag] = _t
    dtype._by_name[_t.name] = _t
    setattr(dtype, _t.name, _t)


class Device:
    """Where a tensor's buffers live (buffer-protocol.md § Device Tags).

    The index is kept by Python only: the wire format records the device
    kind, not which device of that kind.
    """

    KINDS = {"cpu": 0, "cuda": 1, "rocm": 2, "metal": 3, "vulkan": 4,
             "webgpu": 5, "hexagon": 6, "level_zero": 7, "opencl": 8}

    __slots__ = ("kind", "index")

    def __init__(self, kind="cpu", index=0):
        if kind not in self.KINDS:
            raise InvalidDescriptorError(
                f"unknown device kind {kind!r} (buffer-protocol.md § Device "
                f"Tags: {', '.join(self.KINDS)})")
        if isinstance(index, bool):
            raise TypeError("a device index is an integer, not bool")
        index = operator.index(index)
        if index < 0:
            raise ValueError(f"a device index is >= 0, not {index}")
        self.kind = kind
        self.index = index

    @property
    def tag(self):
        return self.KINDS[self.kind]

    device_id = property(lambda self: self.index)
    # Buffers this package builds are in standard memory (memory_class 0).
    memory_class = property(lambda self: "standard")

    @classmethod
    def from_tag(cls, tag):
        for kind, value in cls.KINDS.items():
            if value == tag:
                return cls(kind)
        raise InvalidDescriptorError(f"unknown device tag 0x{tag:02X}")

    def __eq__(self, other):
        return (isinstance(other, Device) and other.kind == self.kind
                and other.index == self.index)

    def __hash__(self):
        return hash((self.kind, self.index))

    def __repr__(self):
        return f"Device({self.kind!r}, {self.index})"


class device:
    """Ready-made devices: ``hurray.device.cpu``."""

    cpu = Device("cpu", 0)
