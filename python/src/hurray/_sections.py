"""Layouts (layouts/*.md) and the optional descriptor sections: statistics
and shard (metadata.md)."""

from ._errors import InvalidDescriptorError

__all__ = ["RowMajorLayout", "ColumnMajorLayout", "StridedLayout",
           "MortonLayout", "HilbertLayout", "CooLayout", "CsrLayout",
           "CscLayout", "CsfLayout", "Layout", "Statistics", "Shard"]


class Layout:
    """How the elements sit in the data buffer. Equality compares fields."""

    TAG = 0
    NAME = "layout"
    _FIELDS = ()

    def _fields(self):
        return {f: getattr(self, f) for f in self._FIELDS}

    name = property(lambda self: self.NAME)
    tag = property(lambda self: self.TAG)
    is_dense = property(lambda self: self.TAG in (0x01, 0x02, 0x03, 0x04,
                                                  0x05, 0x40))

    @property
    def buffer_count(self):
        """Buffers the layout itself uses (before quantization
        parameters)."""
        return {0x06: 2, 0x07: 3, 0x08: 3}.get(self.TAG, 1)

    def __eq__(self, other):
        return type(other) is type(self) and other._fields() == self._fields()

    def __hash__(self):
        return hash((self.TAG, tuple(self._fields().items())))

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self._fields().items())
        return f"hurray.{type(self).__name__}({args})"


class RowMajorLayout(Layout):
    TAG, NAME = 0x01, "row_major"


class ColumnMajorLayout(Layout):
    TAG, NAME = 0x02, "column_major"


class StridedLayout(Layout):
    """Element strides (in elements, signed) per dimension."""

    TAG, NAME, _FIELDS = 0x03, "strided", ("strides",)

    def __init__(self, strides):
        self.strides = tuple(int(s) for s in strides)


class MortonLayout(Layout):
    TAG, NAME, _FIELDS = 0x05, "morton", ("morton_bits",)

    def __init__(self, morton_bits):
        self.morton_bits = tuple(int(b) for b in morton_bits)


class HilbertLayout(Layout):
    TAG, NAME, _FIELDS = 0x40, "hilbert", ("hilbert_order",)

    def __init__(self, hilbert_order):
        self.hilbert_order = int(hilbert_order)


class CooLayout(Layout):
    """Buffers: values, then the coordinates (uint64, nnz × rank)."""

    TAG, NAME, _FIELDS = 0x06, "coo", ("nnz", "is_sorted")

    def __init__(self, nnz, is_sorted=False):
        self.nnz = int(nnz)
        self.is_sorted = bool(is_sorted)


class CsrLayout(Layout):
    """Buffers: values, column indices (uint64, nnz), row pointers
    (uint64, rows + 1)."""

    TAG, NAME, _FIELDS = 0x07, "csr", ("nnz",)

    def __init__(self, nnz):
        self.nnz = int(nnz)


class CscLayout(CsrLayout):
    TAG, NAME = 0x08, "csc"


class CsfLayout(Layout):
    TAG, NAME, _FIELDS = 0x09, "csf", ("nnz", "mode_order")

    def __init__(self, nnz, mode_order):
        self.nnz = int(nnz)
        self.mode_order = tuple(int(m) for m in mode_order)


class OtherLayout(Layout):
    """A layout read from bytes that Python only names (tiled, block-paged,
    composite, extension): tensors in it can be read, saved and streamed,
    not built."""

    NAME = "other"
    _FIELDS = ("tag",)

    def __init__(self, tag):
        self.TAG = tag

    def _fields(self):
        return {"tag": self.TAG}


_LAYOUTS = {c.TAG: c for c in (RowMajorLayout, ColumnMajorLayout,
                               StridedLayout, MortonLayout, HilbertLayout,
                               CooLayout, CsrLayout, CscLayout, CsfLayout)}


def layout_to_fields(layout):
    fields = {"layout": layout.TAG}
    if isinstance(layout, CooLayout):
        fields["nnz"], fields["is_sorted"] = layout.nnz, int(layout.is_sorted)
    elif isinstance(layout, (CsrLayout, CsfLayout)):
        fields["nnz"] = layout.nnz
        if isinstance(layout, CsfLayout):
            fields["mode_order"] = layout.mode_order
    elif not isinstance(layout, OtherLayout):
        fields.update(layout._fields())
    return fields


def layout_from_fields(f):
    cls = _LAYOUTS.get(f["layout"])
    if cls is None:
        return OtherLayout(f["layout"])
    if cls._FIELDS == ():
        return cls()
    if cls is CooLayout:
        return CooLayout(f["nnz"], f["is_sorted"])
    return cls(*(f[name] for name in cls._FIELDS))


# Statistics: each group of fields has one validity bit (metadata.md §
# Statistics Section); a group is supplied whole or not at all.
_STAT_GROUPS = (
    (0x01, ("nnz",)),
    (0x02, ("sparsity_ratio",)),
    (0x04, ("value_min", "value_max", "value_abs_max")),
    (0x08, ("value_mean", "value_stddev")),
    (0x10, ("nm_n", "nm_m")),
    (0x20, ("has_nan", "has_inf")),
)


class Statistics:
    """Optional statistics of a tensor. Pass the values you have; the
    validity mask follows from them, so a value is never claimed without its
    bit. Absent values read as None."""

    def __init__(self, **values):
        known = {n for _, names in _STAT_GROUPS for n in names}
        unknown = set(values) - known
        if unknown:
            raise TypeError(f"unknown statistics: {sorted(unknown)}")
        mask = 0
        for bit, names in _STAT_GROUPS:
            given = [values.get(n) is not None for n in names]
            if any(given) and not all(given):
                raise InvalidDescriptorError(
                    f"statistics {', '.join(names)} share one validity bit: "
                    "supply all of them or none")
            if all(given):
                mask |= bit
        self.computed_mask = mask
        for n in known:
            setattr(self, n, values.get(n))

    def _fields(self):
        f = {"computed_mask": self.computed_mask}
        for bit, names in _STAT_GROUPS:
            for n in names:
                value = getattr(self, n)
                f[n] = (int(value) if isinstance(value, bool) else value) \
                    if self.computed_mask & bit else None
        return f

    @classmethod
    def _from_fields(cls, f):
        values = {}
        for bit, names in _STAT_GROUPS:
            if f["computed_mask"] & bit:
                for n in names:
                    values[n] = bool(f[n]) if n.startswith("has_") else f[n]
        return cls(**values)

    def __eq__(self, other):
        return isinstance(other, Statistics) and other._fields() == self._fields()

    def __repr__(self):
        shown = ", ".join(f"{k}={v!r}" for k, v in self._fields().items()
                          if v is not None and k != "computed_mask")
        return f"hurray.Statistics({shown})"


class Shard:
    """This tensor's place in a larger one: its parent's shape and the
    offset of its first element there."""

    def __init__(self, parent_shape, shard_offset):
        self.parent_shape = tuple(int(d) for d in parent_shape)
        self.shard_offset = tuple(int(d) for d in shard_offset)

    def __eq__(self, other):
        return (isinstance(other, Shard)
                and other.parent_shape == self.parent_shape
                and other.shard_offset == self.shard_offset)

    def __repr__(self):
        return (f"hurray.Shard(parent_shape={list(self.parent_shape)}, "
                f"shard_offset={list(self.shard_offset)})")
