#include "python/ext/descriptor_dict.h"

#include <pybind11/stl.h>

#include <cstdint>
#include <limits>
#include <string>

namespace hurray::python {
namespace {

// A Python integer (anything with __index__) that must fit T.
template <typename T>
T IntOf(const py::handle& v, const char* what) {
  PyObject* index = PyNumber_Index(v.ptr());
  if (index == nullptr) throw py::error_already_set();
  py::object number = py::reinterpret_steal<py::object>(index);
  if constexpr (std::numeric_limits<T>::is_signed) {
    int overflow = 0;
    const long long x = PyLong_AsLongLongAndOverflow(number.ptr(), &overflow);
    if (overflow != 0 ||
        x < static_cast<long long>(std::numeric_limits<T>::min()) ||
        x > static_cast<long long>(std::numeric_limits<T>::max())) {
      throw py::value_error(std::string(what) + " is out of range");
    }
    return static_cast<T>(x);
  } else {
    const unsigned long long x = PyLong_AsUnsignedLongLong(number.ptr());
    if (PyErr_Occurred() != nullptr) {
      PyErr_Clear();
      throw py::value_error(std::string(what) + " is out of range");
    }
    if (x > static_cast<unsigned long long>(std::numeric_limits<T>::max())) {
      throw py::value_error(std::string(what) + " is out of range");
    }
    return static_cast<T>(x);
  }
}

// An integer key of `d`; `fallback` when the key is absent or None.
template <typename T>
T IntField(const py::dict& d, const char* key, T fallback) {
  if (!d.contains(key)) return fallback;
  py::object v = d[key];
  if (v.is_none()) return fallback;
  return IntOf<T>(v, key);
}

// A sequence of at most kMaxRank integers into `out`; returns its length.
template <typename T>
uint32_t IntArray(const py::dict& d, const char* key, T* out) {
  if (!d.contains(key) || py::object(d[key]).is_none()) return 0;
  py::sequence seq = d[key].cast<py::sequence>();
  if (seq.size() > kMaxRank) {
    throw py::value_error(std::string(key) + " has more than 64 entries");
  }
  for (size_t i = 0; i < seq.size(); ++i) out[i] = IntOf<T>(seq[i], key);
  return static_cast<uint32_t>(seq.size());
}

template <typename T>
py::tuple Tuple(const T* values, uint32_t n) {
  py::tuple t(n);
  for (uint32_t i = 0; i < n; ++i) t[i] = py::int_(values[i]);
  return t;
}

py::dict StatisticsToDict(const Statistics& s) {
  py::dict d;
  d["computed_mask"] = s.computed_mask;
  d["nnz"] = s.nnz;
  d["sparsity_ratio"] = s.sparsity_ratio;
  d["value_min"] = s.value_min;
  d["value_max"] = s.value_max;
  d["value_abs_max"] = s.value_abs_max;
  d["value_mean"] = s.value_mean;
  d["value_stddev"] = s.value_stddev;
  d["nm_n"] = s.nm_n;
  d["nm_m"] = s.nm_m;
  d["has_nan"] = s.has_nan;
  d["has_inf"] = s.has_inf;
  return d;
}

double FloatField(const py::dict& d, const char* key) {
  if (!d.contains(key) || py::object(d[key]).is_none()) return 0.0;
  return d[key].cast<double>();
}

void StatisticsFromDict(const py::dict& d, Statistics* s) {
  s->computed_mask = IntField<uint32_t>(d, "computed_mask", 0);
  s->nnz = IntField<uint64_t>(d, "nnz", 0);
  s->sparsity_ratio = FloatField(d, "sparsity_ratio");
  s->value_min = FloatField(d, "value_min");
  s->value_max = FloatField(d, "value_max");
  s->value_abs_max = FloatField(d, "value_abs_max");
  s->value_mean = FloatField(d, "value_mean");
  s->value_stddev = FloatField(d, "value_stddev");
  s->nm_n = IntField<uint8_t>(d, "nm_n", 0);
  s->nm_m = IntField<uint8_t>(d, "nm_m", 0);
  s->has_nan = IntField<uint8_t>(d, "has_nan", 0);
  s->has_inf = IntField<uint8_t>(d, "has_inf", 0);
}

}  // namespace

py::dict QuantizationToDict(const QuantizationDescriptor& q) {
  py::dict d;
  d["scheme"] = q.scheme_tag;
  d["version"] = q.scheme_version;
  d["flags"] = q.flags;
  d["scale"] = q.scale;
  d["zero_point"] = q.zero_point;
  d["axis"] = q.axis;
  d["block_size"] = q.block_size;
  d["scale_buffer_index"] = q.scale_buffer_index;
  d["zero_point_buffer_index"] = q.zero_point_buffer_index;
  d["scale_type"] = q.scale_type_tag;
  return d;
}

QuantizationDescriptor QuantizationFromDict(const py::dict& d) {
  QuantizationDescriptor q;
  q.scheme_tag = IntField<uint8_t>(d, "scheme", 0);
  q.scheme_version = IntField<uint8_t>(d, "version", kCurrentSchemeVersion);
  q.flags = IntField<uint16_t>(d, "flags", 0);
  if (d.contains("scale") && !py::object(d["scale"]).is_none()) {
    q.scale = d["scale"].cast<float>();
  }
  q.zero_point = IntField<int32_t>(d, "zero_point", 0);
  q.axis = IntField<uint32_t>(d, "axis", 0);
  q.block_size = IntField<uint32_t>(d, "block_size", 0);
  q.scale_buffer_index = IntField<uint32_t>(d, "scale_buffer_index", 0);
  q.zero_point_buffer_index =
      IntField<uint32_t>(d, "zero_point_buffer_index", kNoBufferIndex);
  q.scale_type_tag = IntField<uint8_t>(d, "scale_type", 0);
  return q;
}

py::dict DescriptorToDict(const TensorDescriptor& d) {
  py::dict out;
  out["version"] = py::make_tuple(d.version_major, d.version_minor);
  out["type"] = d.type_tag;
  out["layout"] = d.layout_tag;
  out["shape"] = Tuple(d.shape, d.rank);
  out["byte_offset"] = d.byte_offset;
  py::list buffers;
  for (const BufferHandle& b : d.buffer_table()) {
    buffers.append(py::make_tuple(b.byte_size, b.alignment, b.device_tag,
                                  b.sync_mode, b.memory_class));
  }
  out["buffers"] = buffers;
  const LayoutFields& l = d.layout;
  switch (d.layout_tag) {
    case layout_tag::kStrided:
      out["strides"] = Tuple(l.strides, d.rank);
      break;
    case layout_tag::kMorton:
      out["morton_bits"] = Tuple(l.morton_bits, d.rank);
      break;
    case layout_tag::kCoo:
      out["nnz"] = l.nnz;
      out["is_sorted"] = l.is_sorted;
      break;
    case layout_tag::kCsr:
    case layout_tag::kCsc:
      out["nnz"] = l.nnz;
      break;
    case layout_tag::kCsf:
      out["nnz"] = l.nnz;
      out["mode_order"] = Tuple(l.mode_order, d.rank);
      break;
    case layout_tag::kHilbert:
      out["hilbert_order"] = l.hilbert_order;
      break;
    case layout_tag::kComposite:
      out["member_count"] = l.member_count;
      out["composition_rule"] = l.composition_rule;
      out["combine_op"] = l.combine_op;
      break;
    case layout_tag::kTiled: {
      // One dict per level, outermost first (layouts/tiled.md).
      py::list levels;
      for (uint32_t i = 0; i < l.tiled_depth && i < kMaxTiledDepth; ++i) {
        const TiledLevel& t = l.tiled[i];
        py::dict level;
        level["tile_shape"] = Tuple(t.tile_shape, d.rank);
        level["outer_layout"] = t.outer_layout;
        level["inner_layout"] = t.inner_layout;
        level["outer_strides"] =
            t.outer_layout == layout_tag::kStrided
                ? py::object(Tuple(t.outer_strides, d.rank))
                : py::object(py::none());
        level["inner_strides"] =
            t.inner_layout == layout_tag::kStrided
                ? py::object(Tuple(t.inner_strides, d.rank))
                : py::object(py::none());
        levels.append(level);
      }
      out["tiled"] = levels;
      break;
    }
    case layout_tag::kBlockPaged:
      out["page_size"] = l.page_size;
      out["num_pages"] = l.num_pages;
      out["paged_axis"] = l.paged_axis;
      out["num_seqs"] = l.num_seqs;
      out["kv_role"] = l.kv_role;
      out["layer_index"] = l.layer_index;
      out["block_table_index_type"] = l.block_table_index_type;
      break;
    default:
      if (layout_tag::IsExtension(d.layout_tag)) {
        out["extension_layout_id"] = l.extension_layout_id;
        out["extension_data_length"] = l.extension_data_length;
      }
      break;
  }
  out["quantization"] = d.has(flag::kHasQuantization)
                            ? py::object(QuantizationToDict(d.quantization))
                            : py::object(py::none());
  if (d.has(flag::kHasShard)) {
    out["shard"] = py::make_tuple(Tuple(d.shard.parent_shape, d.rank),
                                  Tuple(d.shard.shard_offset, d.rank));
  } else {
    out["shard"] = py::none();
  }
  out["member_role"] =
      d.has(flag::kHasCompositeMember)
          ? py::object(py::int_(d.composite_member.member_role))
          : py::object(py::none());
  out["statistics"] = d.has(flag::kHasStatistics)
                          ? py::object(StatisticsToDict(d.statistics))
                          : py::object(py::none());
  return out;
}

void DescriptorFromDict(const py::dict& in, TensorDescriptor* d) {
  ResetDescriptor(d);
  d->type_tag = IntField<uint8_t>(in, "type", 0);
  d->layout_tag = IntField<uint8_t>(in, "layout", layout_tag::kRowMajor);
  d->rank = IntArray<uint64_t>(in, "shape", d->shape);
  d->byte_offset = IntField<uint64_t>(in, "byte_offset", 0);
  if (in.contains("buffers")) {
    py::sequence buffers = in["buffers"].cast<py::sequence>();
    if (buffers.size() > kMaxBuffers) {
      throw py::value_error("more than 255 buffers");
    }
    d->buffer_count = static_cast<uint32_t>(buffers.size());
    for (size_t i = 0; i < buffers.size(); ++i) {
      py::sequence t = buffers[i].cast<py::sequence>();
      if (t.size() != 5) throw py::value_error("a buffer handle has 5 fields");
      BufferHandle& b = d->buffers[i];
      b.byte_size = IntOf<uint64_t>(t[0], "byte_size");
      b.alignment = IntOf<uint32_t>(t[1], "alignment");
      b.device_tag = IntOf<uint8_t>(t[2], "device_tag");
      b.sync_mode = IntOf<uint8_t>(t[3], "sync_mode");
      b.memory_class = IntOf<uint8_t>(t[4], "memory_class");
    }
  }
  LayoutFields& l = d->layout;
  switch (d->layout_tag) {
    case layout_tag::kRowMajor:
    case layout_tag::kColumnMajor:
      break;
    case layout_tag::kStrided:
      IntArray<int64_t>(in, "strides", l.strides);
      break;
    case layout_tag::kMorton:
      IntArray<uint32_t>(in, "morton_bits", l.morton_bits);
      break;
    case layout_tag::kCoo:
      l.nnz = IntField<uint64_t>(in, "nnz", 0);
      l.is_sorted = IntField<uint8_t>(in, "is_sorted", 0);
      break;
    case layout_tag::kCsr:
    case layout_tag::kCsc:
      l.nnz = IntField<uint64_t>(in, "nnz", 0);
      break;
    case layout_tag::kCsf:
      l.nnz = IntField<uint64_t>(in, "nnz", 0);
      IntArray<uint32_t>(in, "mode_order", l.mode_order);
      break;
    case layout_tag::kHilbert:
      l.hilbert_order = IntField<uint32_t>(in, "hilbert_order", 0);
      l.hilbert_rank = d->rank;
      break;
    case layout_tag::kTiled: {
      // One dict per level, outermost first (layouts/tiled.md).
      py::sequence levels = in["tiled"].cast<py::sequence>();
      if (levels.size() == 0 || levels.size() > kMaxTiledDepth) {
        throw py::value_error("a tiled layout has 1 to 8 levels");
      }
      l.tiled_depth = static_cast<uint32_t>(levels.size());
      for (size_t i = 0; i < levels.size(); ++i) {
        py::dict level = levels[i].cast<py::dict>();
        TiledLevel& t = l.tiled[i];
        if (IntArray<uint64_t>(level, "tile_shape", t.tile_shape) != d->rank) {
          throw py::value_error("a tile shape has one entry per dimension");
        }
        t.outer_layout = IntField<uint8_t>(level, "outer_layout", 0);
        t.inner_layout = IntField<uint8_t>(level, "inner_layout", 0);
        if (level.contains("outer_strides") &&
            !py::object(level["outer_strides"]).is_none()) {
          IntArray<int64_t>(level, "outer_strides", t.outer_strides);
        }
        if (level.contains("inner_strides") &&
            !py::object(level["inner_strides"]).is_none()) {
          IntArray<int64_t>(level, "inner_strides", t.inner_strides);
        }
      }
      break;
    }
    case layout_tag::kBlockPaged:
      l.page_size = IntField<uint32_t>(in, "page_size", 0);
      l.num_pages = IntField<uint64_t>(in, "num_pages", 0);
      l.paged_axis = IntField<uint32_t>(in, "paged_axis", 0);
      l.num_seqs = IntField<uint32_t>(in, "num_seqs", 0);
      l.kv_role = IntField<uint8_t>(in, "kv_role", 0);
      l.layer_index = IntField<uint32_t>(in, "layer_index", 0);
      l.block_table_index_type =
          IntField<uint8_t>(in, "block_table_index_type", 0);
      break;
    case layout_tag::kComposite:
      l.composition_rule = IntField<uint8_t>(in, "composition_rule", 0);
      l.combine_op = IntField<uint8_t>(in, "combine_op", 0);
      l.member_count = IntField<uint32_t>(in, "member_count", 0);
      break;
    default:
      if (layout_tag::IsExtension(d->layout_tag)) {
        // The extension's opaque data is written as zeros of its length
        // (the Python layout refuses other data, _sections.py).
        l.extension_layout_id =
            IntField<uint64_t>(in, "extension_layout_id", 0);
        l.extension_data_length =
            IntField<uint32_t>(in, "extension_data_length", 0);
        break;
      }
      PyErr_SetString(PyExc_NotImplementedError,
                      (std::string("building a tensor in layout '") +
                       LayoutName(d->layout_tag) +
                       "' is not supported from Python (reading one is)")
                          .c_str());
      throw py::error_already_set();
  }
  if (in.contains("quantization") &&
      !py::object(in["quantization"]).is_none()) {
    d->flags |= flag::kHasQuantization;
    d->quantization = QuantizationFromDict(in["quantization"].cast<py::dict>());
  }
  if (in.contains("shard") && !py::object(in["shard"]).is_none()) {
    py::sequence s = in["shard"].cast<py::sequence>();
    if (s.size() != 2) throw py::value_error("shard is (parent, offset)");
    py::dict parts;
    parts["parent_shape"] = s[0];
    parts["shard_offset"] = s[1];
    if (IntArray<uint64_t>(parts, "parent_shape", d->shard.parent_shape) !=
            d->rank ||
        IntArray<uint64_t>(parts, "shard_offset", d->shard.shard_offset) !=
            d->rank) {
      throw py::value_error(
          "shard parent_shape and shard_offset need rank entries");
    }
    d->flags |= flag::kHasShard;
  }
  if (in.contains("member_role") && !py::object(in["member_role"]).is_none()) {
    d->composite_member.member_role = IntField<uint8_t>(in, "member_role", 0);
    d->flags |= flag::kHasCompositeMember;
  }
  if (in.contains("statistics") && !py::object(in["statistics"]).is_none()) {
    StatisticsFromDict(in["statistics"].cast<py::dict>(), &d->statistics);
    d->flags |= flag::kHasStatistics;
  }
}

}  // namespace hurray::python
