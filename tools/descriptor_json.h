// JSON form of a decoded tensor descriptor, shared by the hurray
// subcommands (`hurray inspect --json` and those to come).
//
// Descriptor members, in this order (u64 values exact; see json_writer.h):
//
//   "descriptor_length", "version_major", "version_minor", "flags",
//   "element_type_tag", "layout_tag", "rank", "shape": [u64...],
//   "byte_offset",
//   "buffers": [{"byte_size", "alignment", "device_tag", "sync_mode",
//                "memory_class"}...]            null when the layout was
//                                               not parsed,
//   "quantization": null | {"scheme_tag", "scheme_version", "flags", "axis",
//                "block_size", "scale_buffer_index",
//                "zero_point_buffer_index", "scale_type_tag", "scale",
//                "zero_point"}  (fields the scheme lacks are null),
//   "has_shard", "has_statistics", "has_extension_type",
//   "has_composite_member"                      (the flag bits),
//   then, after the fixed set:
//   "element_type_name", "layout_name",
//   "layout": null (layout not parsed) | {"name", then the layout's own
//                fields by their spec names: "strides"; "levels": [{
//                "tile_shape", "outer_layout", "inner_layout",
//                "outer_strides"?, "inner_strides"?}]; "morton_bits"; "nnz",
//                "is_sorted"; "mode_order"; "page_size", "num_pages",
//                "paged_axis", "num_seqs", "kv_role", "layer_index",
//                "block_table_index_type"; "composition_rule",
//                "combine_op", "member_count"; "hilbert_order",
//                "hilbert_rank"; "extension_layout_id",
//                "extension_data_length", "extension_data_offset"},
//   "shard": null | {"parent_shape": [...], "shard_offset": [...]},
//   "statistics": null | {"computed_mask", "nnz", "sparsity_ratio",
//                "value_min", "value_max", "value_abs_max", "value_mean",
//                "value_stddev", "nm_n", "nm_m", "has_nan", "has_inf"}
//                (a value whose computed_mask bit is clear is null),
//   "extension_type": null | {"bit_width", "packing_factor", "is_float",
//                "is_signed", "sign_bits", "exponent_bits", "mantissa_bits",
//                "exponent_bias", "has_nan", "has_inf"},
//   "composite_member": null | {"member_role"}.
//
// Sections are null when their flag is clear, and also when the layout was
// not parsed (permissive mode, unassigned layout tag: the decoder skips
// everything after byte_offset, so only the has_* flags are known).
// Byte-valued booleans (is_float, has_nan, ...) are printed as the numbers
// read: permissive mode accepts values other than 0 and 1.
#ifndef HURRAY_TOOLS_DESCRIPTOR_JSON_H_
#define HURRAY_TOOLS_DESCRIPTOR_JSON_H_

#include <string>

#include "parser/descriptor.h"
#include "parser/quantization.h"
#include "parser/rules.h"
#include "tools/json_writer.h"

namespace hurray::tools {

// Writes the members above into the object `w` has open, so that callers
// can put their own members (e.g. "file", "valid") first.
void WriteDescriptorMembers(const TensorDescriptor& d, JsonWriter* w);

// The descriptor as one JSON object holding just the members above.
std::string DescriptorToJson(const TensorDescriptor& d);

// Writes the "quantization" object (not null) of a descriptor whose
// quantization section was read.
void WriteQuantization(const QuantizationDescriptor& q, JsonWriter* w);

// Writes "rule", "offset" and "error" of a rejection into the open object.
void WriteRejectionMembers(const Rejection& r, JsonWriter* w);

}  // namespace hurray::tools

#endif  // HURRAY_TOOLS_DESCRIPTOR_JSON_H_
