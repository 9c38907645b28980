#include "tools/descriptor_json.h"

#include <cstdint>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "parser/element_type.h"

namespace hurray::tools {
namespace {

void WriteUintOrNull(JsonWriter* w, absl::string_view key, bool present,
                     uint64_t value) {
  w->Key(key);
  if (present) {
    w->Uint(value);
  } else {
    w->Null();
  }
}

void WriteDoubleOrNull(JsonWriter* w, absl::string_view key, bool present,
                       double value) {
  w->Key(key);
  if (present) {
    w->Double(value);
  } else {
    w->Null();
  }
}

void WriteUintArray(JsonWriter* w, absl::string_view key,
                    absl::Span<const uint64_t> values) {
  w->Key(key).BeginArray();
  for (uint64_t v : values) w->Uint(v);
  w->EndArray();
}

void WriteBuffers(const TensorDescriptor& d, JsonWriter* w) {
  w->Key("buffers");
  if (!d.layout_parsed) {
    w->Null();
    return;
  }
  w->BeginArray();
  for (const BufferHandle& h : d.buffer_table()) {
    w->BeginObject();
    w->Key("byte_size").Uint(h.byte_size);
    w->Key("alignment").Uint(h.alignment);
    w->Key("device_tag").Uint(h.device_tag);
    w->Key("sync_mode").Uint(h.sync_mode);
    w->Key("memory_class").Uint(h.memory_class);
    w->EndObject();
  }
  w->EndArray();
}

void WriteShard(const TensorDescriptor& d, JsonWriter* w) {
  w->BeginObject();
  WriteUintArray(w, "parent_shape", {d.shard.parent_shape, d.rank});
  WriteUintArray(w, "shard_offset", {d.shard.shard_offset, d.rank});
  w->EndObject();
}

void WriteStatistics(const Statistics& s, JsonWriter* w) {
  const uint32_t m = s.computed_mask;
  const bool nnz = (m & stat_bit::kNnz) != 0;
  const bool sparsity = (m & stat_bit::kSparsity) != 0;
  const bool range = (m & stat_bit::kValueRange) != 0;
  const bool stats = (m & stat_bit::kValueStats) != 0;
  const bool nm = (m & stat_bit::kNmSparsity) != 0;
  const bool nan_inf = (m & stat_bit::kNanInf) != 0;
  w->BeginObject();
  w->Key("computed_mask").Uint(m);
  WriteUintOrNull(w, "nnz", nnz, s.nnz);
  WriteDoubleOrNull(w, "sparsity_ratio", sparsity, s.sparsity_ratio);
  WriteDoubleOrNull(w, "value_min", range, s.value_min);
  WriteDoubleOrNull(w, "value_max", range, s.value_max);
  WriteDoubleOrNull(w, "value_abs_max", range, s.value_abs_max);
  WriteDoubleOrNull(w, "value_mean", stats, s.value_mean);
  WriteDoubleOrNull(w, "value_stddev", stats, s.value_stddev);
  WriteUintOrNull(w, "nm_n", nm, s.nm_n);
  WriteUintOrNull(w, "nm_m", nm, s.nm_m);
  WriteUintOrNull(w, "has_nan", nan_inf, s.has_nan);
  WriteUintOrNull(w, "has_inf", nan_inf, s.has_inf);
  w->EndObject();
}

void WriteExtensionType(const ExtensionType& e, JsonWriter* w) {
  w->BeginObject();
  w->Key("bit_width").Uint(e.bit_width);
  w->Key("packing_factor").Uint(e.packing_factor);
  w->Key("is_float").Uint(e.is_float);
  w->Key("is_signed").Uint(e.is_signed);
  w->Key("sign_bits").Uint(e.sign_bits);
  w->Key("exponent_bits").Uint(e.exponent_bits);
  w->Key("mantissa_bits").Uint(e.mantissa_bits);
  w->Key("exponent_bias").Uint(e.exponent_bias);
  w->Key("has_nan").Uint(e.has_nan);
  w->Key("has_inf").Uint(e.has_inf);
  w->EndObject();
}

// Writes `key` and the section object, or null when the section is absent
// or was not parsed.
template <typename WriteFn>
void WriteSection(const TensorDescriptor& d, uint32_t flag_bit,
                  absl::string_view key, JsonWriter* w, WriteFn write) {
  w->Key(key);
  if (d.layout_parsed && d.has(flag_bit)) {
    write();
  } else {
    w->Null();
  }
}

void WriteIntArray(JsonWriter* w, absl::string_view key, const int64_t* v,
                   uint32_t n) {
  w->Key(key).BeginArray();
  for (uint32_t i = 0; i < n; ++i) w->Int(v[i]);
  w->EndArray();
}

template <typename T>
void WriteUints(JsonWriter* w, absl::string_view key, const T* v, uint32_t n) {
  w->Key(key).BeginArray();
  for (uint32_t i = 0; i < n; ++i) w->Uint(v[i]);
  w->EndArray();
}

// The layout's own fields (metadata.md § Layout-Specific Fields,
// layouts/*.md), keyed by their spec names.
void WriteLayout(const TensorDescriptor& d, JsonWriter* w) {
  const LayoutFields& l = d.layout;
  const uint32_t r = d.rank;
  w->BeginObject();
  w->Key("name").String(LayoutName(d.layout_tag));
  switch (d.layout_tag) {
    case layout_tag::kStrided:
      WriteIntArray(w, "strides", l.strides, r);
      break;
    case layout_tag::kTiled:
      w->Key("levels").BeginArray();
      for (uint32_t i = 0; i < l.tiled_depth; ++i) {
        const TiledLevel& level = l.tiled[i];
        w->BeginObject();
        WriteUints(w, "tile_shape", level.tile_shape, r);
        w->Key("outer_layout").Uint(level.outer_layout);
        w->Key("inner_layout").Uint(level.inner_layout);
        if (level.outer_layout == layout_tag::kStrided) {
          WriteIntArray(w, "outer_strides", level.outer_strides, r);
        }
        if (level.inner_layout == layout_tag::kStrided) {
          WriteIntArray(w, "inner_strides", level.inner_strides, r);
        }
        w->EndObject();
      }
      w->EndArray();
      break;
    case layout_tag::kMorton:
      WriteUints(w, "morton_bits", l.morton_bits, r);
      break;
    case layout_tag::kCoo:
      w->Key("nnz").Uint(l.nnz);
      w->Key("is_sorted").Uint(l.is_sorted);
      break;
    case layout_tag::kCsr:
    case layout_tag::kCsc:
      w->Key("nnz").Uint(l.nnz);
      break;
    case layout_tag::kCsf:
      w->Key("nnz").Uint(l.nnz);
      WriteUints(w, "mode_order", l.mode_order, r);
      break;
    case layout_tag::kBlockPaged:
      w->Key("page_size").Uint(l.page_size);
      w->Key("num_pages").Uint(l.num_pages);
      w->Key("paged_axis").Uint(l.paged_axis);
      w->Key("num_seqs").Uint(l.num_seqs);
      w->Key("kv_role").Uint(l.kv_role);
      w->Key("layer_index").Uint(l.layer_index);
      w->Key("block_table_index_type").Uint(l.block_table_index_type);
      break;
    case layout_tag::kComposite:
      w->Key("composition_rule").Uint(l.composition_rule);
      w->Key("combine_op").Uint(l.combine_op);
      w->Key("member_count").Uint(l.member_count);
      break;
    case layout_tag::kHilbert:
      w->Key("hilbert_order").Uint(l.hilbert_order);
      w->Key("hilbert_rank").Uint(l.hilbert_rank);
      break;
    default:
      if (layout_tag::IsExtension(d.layout_tag)) {
        w->Key("extension_layout_id").Uint(l.extension_layout_id);
        w->Key("extension_data_length").Uint(l.extension_data_length);
        w->Key("extension_data_offset").Uint(l.extension_data_offset);
      }
      break;
  }
  w->EndObject();
}

}  // namespace

void WriteQuantization(const QuantizationDescriptor& q, JsonWriter* w) {
  // The payload fields each scheme has (quantization/*.md); an
  // uninterpreted scheme (unassigned, private or newer version) has none.
  bool per_tensor = false, axis = false, block_size = false,
       scale_index = false, zero_point_index = false, scale_type = false;
  if (q.interpreted()) {
    switch (q.scheme_tag) {
      case scheme_tag::kPerTensorAffine:
        per_tensor = true;
        break;
      case scheme_tag::kPerChannelAffine:
        axis = scale_index = zero_point_index = scale_type = true;
        break;
      case scheme_tag::kPerBlockAffine:
        axis = block_size = scale_index = zero_point_index = scale_type = true;
        break;
      case scheme_tag::kNf4:
      case scheme_tag::kMxfp:
        axis = block_size = scale_index = true;
        break;
      default:
        break;
    }
  }
  // A symmetric scheme has no zero-point buffer (its index is the
  // 0xFFFFFFFF sentinel; permissive mode tolerates other values for
  // per-block affine, QNT-PBA-07, which are then meaningless).
  if (q.symmetric()) zero_point_index = false;

  w->BeginObject();
  w->Key("scheme_tag").Uint(q.scheme_tag);
  w->Key("scheme_version").Uint(q.scheme_version);
  w->Key("flags").Uint(q.flags);
  WriteUintOrNull(w, "axis", axis, q.axis);
  WriteUintOrNull(w, "block_size", block_size, q.block_size);
  WriteUintOrNull(w, "scale_buffer_index", scale_index, q.scale_buffer_index);
  WriteUintOrNull(w, "zero_point_buffer_index", zero_point_index,
                  q.zero_point_buffer_index);
  WriteUintOrNull(w, "scale_type_tag", scale_type, q.scale_type_tag);
  // float32 widened to double: exact, and "%.17g" round-trips it.
  WriteDoubleOrNull(w, "scale", per_tensor, static_cast<double>(q.scale));
  w->Key("zero_point");
  if (per_tensor) {
    w->Int(q.zero_point);
  } else {
    w->Null();
  }
  w->EndObject();
}

void WriteDescriptorMembers(const TensorDescriptor& d, JsonWriter* w) {
  w->Key("descriptor_length").Uint(d.descriptor_length);
  w->Key("version_major").Uint(d.version_major);
  w->Key("version_minor").Uint(d.version_minor);
  w->Key("flags").Uint(d.flags);
  w->Key("element_type_tag").Uint(d.type_tag);
  w->Key("layout_tag").Uint(d.layout_tag);
  w->Key("rank").Uint(d.rank);
  WriteUintArray(w, "shape", d.dims());
  w->Key("byte_offset").Uint(d.byte_offset);
  WriteBuffers(d, w);
  WriteSection(d, flag::kHasQuantization, "quantization", w,
               [&] { WriteQuantization(d.quantization, w); });
  w->Key("has_shard").Bool(d.has(flag::kHasShard));
  w->Key("has_statistics").Bool(d.has(flag::kHasStatistics));
  w->Key("has_extension_type").Bool(d.has(flag::kHasExtensionType));
  w->Key("has_composite_member").Bool(d.has(flag::kHasCompositeMember));

  // Members beyond the fixed set.
  w->Key("element_type_name").String(ElementTypeName(d.type_tag));
  w->Key("layout_name").String(LayoutName(d.layout_tag));
  w->Key("layout");
  if (d.layout_parsed) {
    WriteLayout(d, w);
  } else {
    w->Null();
  }
  WriteSection(d, flag::kHasShard, "shard", w, [&] { WriteShard(d, w); });
  WriteSection(d, flag::kHasStatistics, "statistics", w,
               [&] { WriteStatistics(d.statistics, w); });
  WriteSection(d, flag::kHasExtensionType, "extension_type", w,
               [&] { WriteExtensionType(d.extension_type, w); });
  WriteSection(d, flag::kHasCompositeMember, "composite_member", w, [&] {
    w->BeginObject();
    w->Key("member_role").Uint(d.composite_member.member_role);
    w->EndObject();
  });
}

std::string DescriptorToJson(const TensorDescriptor& d) {
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();
  WriteDescriptorMembers(d, &w);
  w.EndObject();
  return out;
}

void WriteRejectionMembers(const Rejection& r, JsonWriter* w) {
  w->Key("rule").String(RuleId(r.rule));
  w->Key("offset").Uint(r.offset);
  w->Key("error").String(r.message != nullptr ? r.message : "");
}

}  // namespace hurray::tools
