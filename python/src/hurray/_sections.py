"""Layouts (layouts/*.md) and the optional descriptor sections: statistics
and shard (metadata.md)."""

import operator

from ._errors import InvalidDescriptorError, UnsupportedError

__all__ = ["RowMajorLayout", "ColumnMajorLayout", "ColMajorLayout",
           "StridedLayout", "TiledLayout", "MortonLayout", "HilbertLayout",
           "CooLayout", "CsrLayout", "CscLayout", "CsfLayout",
           "BlockPagedLayout", "CompositeLayout", "PrivateExtensionLayout",
           "UnknownLayout", "Layout", "Statistics", "Shard"]


def _ints(values):
    return tuple(operator.index(v) for v in values)


class Layout:
    """How the elements sit in the buffers (layouts/*.md): a value carrying
    the layout's parameters. Equal when of one class with equal fields;
    never equal to a string. Only its subclasses are built."""

    TAG = 0
    NAME = "layout"
    _FIELDS = ()

    def __init__(self):
        if type(self) is Layout:
            raise TypeError("hurray.Layout is the base class: build one of "
                            "its layouts, e.g. hurray.RowMajorLayout()")

    def _fields(self):
        return {f: getattr(self, f) for f in self._FIELDS}

    name = property(lambda self: self.NAME)
    tag = property(lambda self: self.TAG)
    is_dense = property(lambda self: self.TAG in (0x01, 0x02, 0x03, 0x04,
                                                  0x05, 0x40))
    is_virtual = property(lambda self: False)

    @property
    def buffer_count(self):
        """Buffers the layout itself uses (before quantization parameters);
        None when the format cannot say (extension layouts)."""
        return 1

    def __eq__(self, other):
        return type(other) is type(self) and other._fields() == self._fields()

    def __hash__(self):
        return hash((type(self).__name__, tuple(self._fields().items())))

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self._fields().items())
        return f"{type(self).__name__}({args})"


class RowMajorLayout(Layout):
    TAG, NAME = 0x01, "row_major"


class ColumnMajorLayout(Layout):
    TAG, NAME = 0x02, "column_major"


ColMajorLayout = ColumnMajorLayout  # the reference's spelling


class StridedLayout(Layout):
    """Element strides (in elements, signed, zero allowed) per dimension."""

    TAG, NAME, _FIELDS = 0x03, "strided", ("strides",)

    def __init__(self, strides):
        self.strides = _ints(strides)


_TILE_PARTS = ("row_major", "col_major", "column_major", "strided", "tiled")
_PART_CODES = {"row_major": 0x01, "col_major": 0x02, "column_major": 0x02,
               "strided": 0x03, "tiled": 0x04}


class TiledLayout(Layout):
    """Tiles of ``tile_shape`` (layouts/tiled.md): tiles placed by
    ``outer_layout``, elements inside a tile by ``inner_layout``; a nested
    level is another TiledLayout as ``inner_tiled``. ``outer_strides`` (in
    tiles) and ``inner_strides`` (in elements) go with a "strided" part."""

    TAG, NAME = 0x04, "tiled"
    _FIELDS = ("tile_shape", "outer_layout", "inner_layout", "inner_tiled",
               "outer_strides", "inner_strides")

    def __init__(self, tile_shape, outer_layout="row_major",
                 inner_layout="row_major", inner_tiled=None,
                 outer_strides=None, inner_strides=None):
        for what, part in (("outer_layout", outer_layout),
                           ("inner_layout", inner_layout)):
            if part not in _TILE_PARTS:
                raise ValueError(f"{what} must be one of {_TILE_PARTS}")
        if (inner_layout == "tiled") != (inner_tiled is not None):
            raise ValueError("inner_tiled is given exactly when "
                             "inner_layout is 'tiled'")
        if inner_tiled is not None and not isinstance(inner_tiled, TiledLayout):
            raise TypeError("inner_tiled must be a hurray.TiledLayout")
        self.tile_shape = _ints(tile_shape)
        self.outer_layout = outer_layout
        self.inner_layout = inner_layout
        self.inner_tiled = inner_tiled
        self.outer_strides = None if outer_strides is None else _ints(outer_strides)
        self.inner_strides = None if inner_strides is None else _ints(inner_strides)
        for what, part, strides in (
                ("outer", outer_layout, self.outer_strides),
                ("inner", inner_layout, self.inner_strides)):
            if (part == "strided") != (strides is not None):
                raise ValueError(f"{what}_strides is given exactly when "
                                 f"{what}_layout is 'strided'")

    def __repr__(self):
        # The reference's repr: the strides only when they are given.
        shown = {k: v for k, v in self._fields().items()
                 if not (k in ("outer_strides", "inner_strides") and v is None)}
        args = ", ".join(f"{k}={v!r}" for k, v in shown.items())
        return f"{type(self).__name__}({args})"

    def _levels(self, rank):
        """The wire levels, outermost first (layouts/tiled.md)."""
        if len(self.tile_shape) != rank:
            raise InvalidDescriptorError(
                f"TiledLayout.tile_shape has {len(self.tile_shape)} entries; "
                f"the tensor has rank {rank}")
        level = {"tile_shape": self.tile_shape,
                 "outer_layout": _PART_CODES[self.outer_layout],
                 "inner_layout": _PART_CODES[self.inner_layout],
                 "outer_strides": self.outer_strides,
                 "inner_strides": self.inner_strides}
        inner = self.inner_tiled._levels(rank) if self.inner_tiled else []
        return [level, *inner]


class MortonLayout(Layout):
    TAG, NAME, _FIELDS = 0x05, "morton", ("morton_bits",)

    def __init__(self, morton_bits):
        self.morton_bits = _ints(morton_bits)


class HilbertLayout(Layout):
    """Hilbert curve of ``hilbert_order`` bits per axis over
    ``hilbert_rank`` axes (the tensor's rank; None: taken from the shape
    when a tensor is built)."""

    TAG, NAME, _FIELDS = 0x40, "hilbert", ("hilbert_order", "hilbert_rank")

    def __init__(self, hilbert_order, hilbert_rank=None):
        self.hilbert_order = operator.index(hilbert_order)
        self.hilbert_rank = (None if hilbert_rank is None
                             else operator.index(hilbert_rank))


class CooLayout(Layout):
    """Buffers: values, then the coordinates (uint64, nnz × rank)."""

    TAG, NAME, _FIELDS = 0x06, "coo", ("nnz", "is_sorted")
    buffer_count = property(lambda self: 2)

    def __init__(self, nnz, is_sorted=False):
        self.nnz = operator.index(nnz)
        self.is_sorted = bool(is_sorted)


class CsrLayout(Layout):
    """Buffers: values, column indices (uint64, nnz), row pointers
    (uint64, rows + 1)."""

    TAG, NAME, _FIELDS = 0x07, "csr", ("nnz",)
    buffer_count = property(lambda self: 3)

    def __init__(self, nnz):
        self.nnz = operator.index(nnz)


class CscLayout(CsrLayout):
    TAG, NAME = 0x08, "csc"


class CsfLayout(Layout):
    """Buffers: values, then a (pos, crd) pair per level: 2 × rank + 1."""

    TAG, NAME, _FIELDS = 0x09, "csf", ("nnz", "mode_order")

    def __init__(self, nnz, mode_order):
        self.nnz = operator.index(nnz)
        self.mode_order = _ints(mode_order)

    buffer_count = property(lambda self: 2 * len(self.mode_order) + 1)


# layouts/block-paged.md § Layout-Specific Fields, in wire-code order.
_KV_ROLES = ("key", "value", "fused")
_INDEX_TYPES = ("uint32", "uint64")


class BlockPagedLayout(Layout):
    """Pages of a KV cache (layouts/block-paged.md): buffers pages,
    block_table and seq_ptr (``aux_buffers``)."""

    TAG, NAME = 0x0A, "block_paged"
    _FIELDS = ("page_size", "num_pages", "paged_axis", "num_seqs", "kv_role",
               "layer_index", "block_table_index_type")
    is_dense = property(lambda self: False)
    # pages, block_table, seq_ptr (layouts/block-paged.md § Buffer Table)
    buffer_count = property(lambda self: 3)

    def __init__(self, page_size, num_pages, paged_axis, num_seqs,
                 kv_role="fused", layer_index=0,
                 block_table_index_type="uint32"):
        if kv_role not in _KV_ROLES:
            raise ValueError(f"kv_role must be one of {_KV_ROLES}")
        if block_table_index_type not in _INDEX_TYPES:
            raise ValueError("block_table_index_type must be one of "
                             f"{_INDEX_TYPES}")
        self.page_size = operator.index(page_size)
        self.num_pages = operator.index(num_pages)
        self.paged_axis = operator.index(paged_axis)
        self.num_seqs = operator.index(num_seqs)
        self.kv_role = kv_role
        self.layer_index = operator.index(layer_index)
        self.block_table_index_type = block_table_index_type


# metadata.md § Composite / Virtual: the wire codes of the rules and of the
# overlay's combine operation.
_COMPOSITION_RULES = {"partition": 1, "overlay": 2, "group": 3}
_COMBINE_OPS = {"replace": 1, "add": 2}


class CompositeLayout(Layout):
    """The head of a composite (file-format.md § Composite Tensors): it
    owns no buffers (build it with ``data=None``); its ``member_count``
    members follow it in the file or stream, each built with
    ``member_role`` ("base" or "correction"). ``combine_op`` applies to the
    overlay rule only."""

    TAG, NAME = 0x0B, "composite"
    is_dense = property(lambda self: False)
    is_virtual = property(lambda self: True)
    buffer_count = property(lambda self: 0)

    def __init__(self, composition_rule, member_count, combine_op=None):
        if composition_rule not in _COMPOSITION_RULES:
            raise ValueError(f"composition_rule must be one of "
                             f"{tuple(_COMPOSITION_RULES)}")
        if combine_op is not None and combine_op not in _COMBINE_OPS:
            raise ValueError(f"combine_op must be one of {tuple(_COMBINE_OPS)}")
        if (composition_rule == "overlay") != (combine_op is not None):
            raise ValueError("combine_op is given exactly for the 'overlay' "
                             "rule")
        self.composition_rule = composition_rule
        self.member_count = operator.index(member_count)
        self.combine_op = combine_op

    @property
    def _FIELDS(self):
        return (("composition_rule", "member_count")
                + (("combine_op",) if self.combine_op is not None else ()))


class PrivateExtensionLayout(Layout):
    """A private extension layout (tags 0xF0 to 0xFE): its id and opaque
    data. Its buffers are the extension's to define."""

    NAME = "extension"
    _FIELDS = ("tag", "extension_layout_id", "extension_data")
    is_dense = property(lambda self: False)
    buffer_count = property(lambda self: None)

    def __init__(self, tag, extension_layout_id, extension_data=b""):
        tag = operator.index(tag)
        if not 0xF0 <= tag <= 0xFE:
            raise ValueError("private extension layouts have tags 0xF0 to 0xFE")
        self.TAG = tag
        self.extension_layout_id = operator.index(extension_layout_id)
        self.extension_data = bytes(extension_data)

    def _wire_fields(self):
        if any(self.extension_data):
            raise UnsupportedError(
                "writing a private extension layout's data is not supported "
                "from Python (its bytes would be written as zeros): build it "
                "with extension_data of zeros, or none")
        return {"layout": self.TAG,
                "extension_layout_id": self.extension_layout_id,
                "extension_data_length": len(self.extension_data)}


class UnknownLayout(Layout):
    """A layout tag this package has no class for, with its raw field
    bytes: what a permissive reader met."""

    NAME = "extension"
    _FIELDS = ("tag", "raw_bytes")
    is_dense = property(lambda self: False)
    buffer_count = property(lambda self: None)

    def __init__(self, tag, raw_bytes=b""):
        tag = operator.index(tag)
        named = _LAYOUTS.get(tag)
        if named is not None:
            raise ValueError(f"layout tag 0x{tag:02X} is {named.__name__}: "
                             "build that class")
        if 0xF0 <= tag <= 0xFE:
            raise ValueError(f"layout tag 0x{tag:02X} is a private extension: "
                             "build a PrivateExtensionLayout")
        self.TAG = tag
        self.raw_bytes = bytes(raw_bytes)


class OtherLayout(Layout):
    """A layout read from bytes whose fields Python does not decode (tiled,
    block-paged, composite, extension): tensors in it can be read, saved
    and streamed, not built."""

    _FIELDS = ("tag",)

    def __init__(self, tag):
        self.TAG = tag

    NAME = property(lambda self: {0x04: "tiled", 0x0A: "block_paged",
                                  0x0B: "composite"}.get(self.TAG, "extension"))
    is_dense = property(lambda self: self.TAG == 0x04)

    def _fields(self):
        return {"tag": self.TAG}


_LAYOUTS = {c.TAG: c for c in (RowMajorLayout, ColumnMajorLayout,
                               StridedLayout, TiledLayout, MortonLayout,
                               HilbertLayout, CooLayout, CsrLayout, CscLayout,
                               CsfLayout, BlockPagedLayout, CompositeLayout)}
_BUILDABLE = (RowMajorLayout, ColumnMajorLayout, StridedLayout, MortonLayout,
              HilbertLayout, CooLayout, CsrLayout, CscLayout, CsfLayout,
              TiledLayout, BlockPagedLayout, CompositeLayout,
              PrivateExtensionLayout, OtherLayout)


def layout_to_fields(layout, rank=None):
    if not isinstance(layout, Layout):
        raise TypeError("layout must be a hurray.Layout (e.g. "
                        "hurray.CsrLayout(nnz=...)), not "
                        f"{type(layout).__name__}: a string cannot carry the "
                        "layout's parameters")
    if isinstance(layout, UnknownLayout):
        raise InvalidDescriptorError(
            f"layout tag 0x{layout.tag:02X} is not assigned: no reader can "
            "find the buffer table after it, so no tensor is written with it",
            "LAY-TAG-02", None)
    if not isinstance(layout, _BUILDABLE):
        raise UnsupportedError(f"building a tensor in a {layout.name} layout "
                               "is not supported from Python (reading, "
                               "saving and streaming one is)")
    fields = {"layout": layout.TAG}
    if isinstance(layout, CooLayout):
        fields["nnz"], fields["is_sorted"] = layout.nnz, int(layout.is_sorted)
    elif isinstance(layout, (CsrLayout, CsfLayout)):
        fields["nnz"] = layout.nnz
        if isinstance(layout, CsfLayout):
            fields["mode_order"] = layout.mode_order
    elif isinstance(layout, HilbertLayout):
        fields["hilbert_order"] = layout.hilbert_order
    elif isinstance(layout, TiledLayout):
        fields["tiled"] = layout._levels(rank)
    elif isinstance(layout, BlockPagedLayout):
        fields.update(page_size=layout.page_size, num_pages=layout.num_pages,
                      paged_axis=layout.paged_axis, num_seqs=layout.num_seqs,
                      kv_role=_KV_ROLES.index(layout.kv_role),
                      layer_index=layout.layer_index,
                      block_table_index_type=_INDEX_TYPES.index(
                          layout.block_table_index_type))
    elif isinstance(layout, CompositeLayout):
        fields.update(
            composition_rule=_COMPOSITION_RULES[layout.composition_rule],
            combine_op=_COMBINE_OPS.get(layout.combine_op, 0),
            member_count=layout.member_count)
    elif isinstance(layout, PrivateExtensionLayout):
        fields.update(layout._wire_fields())
    elif not isinstance(layout, OtherLayout):
        fields.update(layout._fields())
    return fields


_PART_NAMES = {0x01: "row_major", 0x02: "col_major", 0x03: "strided",
               0x04: "tiled"}


def _tiled_from_levels(levels):
    """The TiledLayout of decoded levels (outermost first), or None when a
    level holds what the class cannot say."""
    inner = None
    for level in reversed(levels):
        outer_name = _PART_NAMES.get(level["outer_layout"])
        inner_name = _PART_NAMES.get(level["inner_layout"])
        if outer_name is None or inner_name is None:
            return None
        inner = TiledLayout(level["tile_shape"], outer_name, inner_name,
                            inner if inner_name == "tiled" else None,
                            level["outer_strides"],
                            level.get("inner_strides"))
    return inner


def _by_code(names, code):
    if isinstance(names, dict):
        names = {v: k for k, v in names.items()}
        return names.get(code)
    return names[code] if 0 <= code < len(names) else None


def layout_from_fields(f):
    """The Layout of decoded descriptor fields. Tiled, block-paged and
    composite layouts are reported with their parameters; what no class
    can state (extension layouts, private composition rules) as a tag-only
    value."""
    tag = f["layout"]
    if tag == 0x40:
        return HilbertLayout(f["hilbert_order"], len(f["shape"]))
    if tag == 0x04 and f.get("tiled"):
        return _tiled_from_levels(f["tiled"]) or OtherLayout(tag)
    if tag == 0x0A and "page_size" in f:
        role = _by_code(_KV_ROLES, f["kv_role"])
        index = _by_code(_INDEX_TYPES, f["block_table_index_type"])
        if role is not None and index is not None:
            return BlockPagedLayout(f["page_size"], f["num_pages"],
                                    f["paged_axis"], f["num_seqs"], role,
                                    f["layer_index"], index)
        return OtherLayout(tag)
    if tag == 0x0B and "composition_rule" in f:
        rule = _by_code(_COMPOSITION_RULES, f["composition_rule"])
        op = _by_code(_COMBINE_OPS, f["combine_op"]) if rule == "overlay" \
            else None
        if rule is not None and (rule != "overlay" or op is not None):
            return CompositeLayout(rule, f["member_count"], op)
        return OtherLayout(tag)
    if 0xF0 <= tag <= 0xFE and f.get("extension_data_length") == 0:
        return PrivateExtensionLayout(tag, f["extension_layout_id"])
    cls = _LAYOUTS.get(tag)
    if cls is None or cls in (TiledLayout, BlockPagedLayout, CompositeLayout):
        return OtherLayout(tag)
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
        self.parent_shape = _ints(parent_shape)
        self.shard_offset = _ints(shard_offset)
        if len(self.parent_shape) != len(self.shard_offset):
            raise InvalidDescriptorError(
                f"a shard's parent_shape ({len(self.parent_shape)} entries) "
                f"and shard_offset ({len(self.shard_offset)}) need one entry "
                "per dimension (metadata.md § Shard Section)")

    def __eq__(self, other):
        return (isinstance(other, Shard)
                and other.parent_shape == self.parent_shape
                and other.shard_offset == self.shard_offset)

    def __repr__(self):
        return (f"hurray.Shard(parent_shape={list(self.parent_shape)}, "
                f"shard_offset={list(self.shard_offset)})")
