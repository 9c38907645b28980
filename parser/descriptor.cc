#include "parser/descriptor.h"

#include <algorithm>
#include <cstring>

#include "parser/element_type.h"
#include "parser/wire.h"

namespace hurray {
namespace {

template <typename T>
bool SameN(const T* a, const T* b, uint32_t n) {
  return std::equal(a, a + n, b);
}

bool SameBits(double a, double b) { return std::memcmp(&a, &b, 8) == 0; }

bool SameTiledLevel(const TiledLevel& a, const TiledLevel& b, uint32_t rank) {
  if (a.outer_layout != b.outer_layout || a.inner_layout != b.inner_layout ||
      a.reserved != b.reserved || !SameN(a.tile_shape, b.tile_shape, rank)) {
    return false;
  }
  if (a.outer_layout == layout_tag::kStrided &&
      !SameN(a.outer_strides, b.outer_strides, rank)) {
    return false;
  }
  return a.inner_layout != layout_tag::kStrided ||
         SameN(a.inner_strides, b.inner_strides, rank);
}

bool SameLayout(const TensorDescriptor& a, const TensorDescriptor& b) {
  const LayoutFields& x = a.layout;
  const LayoutFields& y = b.layout;
  const uint32_t r = a.rank;
  switch (a.layout_tag) {
    case layout_tag::kRowMajor:
    case layout_tag::kColumnMajor:
      return true;
    case layout_tag::kStrided:
      return SameN(x.strides, y.strides, r);
    case layout_tag::kTiled:
      if (x.tiled_depth != y.tiled_depth) return false;
      for (uint32_t i = 0; i < x.tiled_depth; ++i) {
        if (!SameTiledLevel(x.tiled[i], y.tiled[i], r)) return false;
      }
      return true;
    case layout_tag::kMorton:
      return SameN(x.morton_bits, y.morton_bits, r);
    case layout_tag::kCoo:  // 7 reserved bytes on the wire (layouts/coo.md)
      return x.nnz == y.nnz && x.is_sorted == y.is_sorted &&
             SameN(x.sparse_reserved.data(), y.sparse_reserved.data(), 7);
    case layout_tag::kCsr:
    case layout_tag::kCsc:
      return x.nnz == y.nnz && x.sparse_reserved == y.sparse_reserved;
    case layout_tag::kCsf:
      return x.nnz == y.nnz && x.sparse_reserved == y.sparse_reserved &&
             SameN(x.mode_order, y.mode_order, r);
    case layout_tag::kBlockPaged:
      return x.page_size == y.page_size && x.num_pages == y.num_pages &&
             x.paged_axis == y.paged_axis && x.num_seqs == y.num_seqs &&
             x.kv_role == y.kv_role && x.layer_index == y.layer_index &&
             x.block_table_index_type == y.block_table_index_type &&
             x.paged_reserved == y.paged_reserved;
    case layout_tag::kComposite:
      return x.composition_rule == y.composition_rule &&
             x.combine_op == y.combine_op &&
             x.composite_reserved == y.composite_reserved &&
             x.member_count == y.member_count;
    case layout_tag::kHilbert:
      return x.hilbert_order == y.hilbert_order &&
             x.hilbert_rank == y.hilbert_rank;
    default:
      if (layout_tag::IsExtension(a.layout_tag)) {
        return x.extension_layout_id == y.extension_layout_id &&
               x.extension_data_length == y.extension_data_length;
      }
      return true;  // unparsed layout: nothing known
  }
}

}  // namespace

const char* LayoutName(uint8_t tag) {
  switch (tag) {
    case layout_tag::kRowMajor:
      return "row_major";
    case layout_tag::kColumnMajor:
      return "column_major";
    case layout_tag::kStrided:
      return "strided";
    case layout_tag::kTiled:
      return "tiled";
    case layout_tag::kMorton:
      return "morton";
    case layout_tag::kCoo:
      return "coo";
    case layout_tag::kCsr:
      return "csr";
    case layout_tag::kCsc:
      return "csc";
    case layout_tag::kCsf:
      return "csf";
    case layout_tag::kBlockPaged:
      return "block_paged";
    case layout_tag::kComposite:
      return "composite";
    case layout_tag::kHilbert:
      return "hilbert";
    default:
      return layout_tag::IsExtension(tag) ? "extension" : "unknown";
  }
}

bool operator==(const Statistics& a, const Statistics& b) {
  return a.computed_mask == b.computed_mask && a.reserved == b.reserved &&
         a.nnz == b.nnz && SameBits(a.sparsity_ratio, b.sparsity_ratio) &&
         SameBits(a.value_min, b.value_min) &&
         SameBits(a.value_max, b.value_max) &&
         SameBits(a.value_abs_max, b.value_abs_max) &&
         SameBits(a.value_mean, b.value_mean) &&
         SameBits(a.value_stddev, b.value_stddev) && a.nm_n == b.nm_n &&
         a.nm_m == b.nm_m && a.has_nan == b.has_nan && a.has_inf == b.has_inf &&
         a.reserved2 == b.reserved2;
}

uint32_t TensorDescriptor::ExtensionElementBits() const {
  const uint32_t w = extension_type.bit_width;
  const bool sized = w >= 8 ? w % 8 == 0 && extension_type.packing_factor == 1
                            : (w == 1 || w == 2 || w == 4) &&
                                  extension_type.packing_factor == 8 / w;
  return sized ? w : 0;
}

bool TensorDescriptor::ExtensionStorageBytesFor(uint64_t count,
                                                uint64_t* bytes) const {
  return ExtensionElementBits() != 0 &&
         ExtensionStorageBytes(extension_type.bit_width,
                               extension_type.packing_factor, count, bytes);
}

bool operator==(const TensorDescriptor& a, const TensorDescriptor& b) {
  if (a.version_major != b.version_major ||
      a.version_minor != b.version_minor || a.flags != b.flags ||
      a.type_tag != b.type_tag || a.layout_tag != b.layout_tag ||
      a.rank != b.rank || a.byte_offset != b.byte_offset ||
      a.layout_parsed != b.layout_parsed ||
      a.trailing_length != b.trailing_length ||
      !SameN(a.shape, b.shape, a.rank)) {
    return false;
  }
  if (!a.layout_parsed) return true;
  if (!SameLayout(a, b) || a.buffer_count != b.buffer_count ||
      !SameN(a.buffers, b.buffers, a.buffer_count)) {
    return false;
  }
  if (a.has(flag::kHasQuantization) && !(a.quantization == b.quantization)) {
    return false;
  }
  if (a.has(flag::kHasShard) &&
      (!SameN(a.shard.parent_shape, b.shard.parent_shape, a.rank) ||
       !SameN(a.shard.shard_offset, b.shard.shard_offset, a.rank))) {
    return false;
  }
  if (a.has(flag::kHasStatistics) && !(a.statistics == b.statistics)) {
    return false;
  }
  if (a.has(flag::kHasExtensionType) &&
      !(a.extension_type == b.extension_type)) {
    return false;
  }
  return !a.has(flag::kHasCompositeMember) ||
         a.composite_member == b.composite_member;
}

void ResetDescriptor(TensorDescriptor* d) {
  d->version_major = kSupportedMajor;
  d->version_minor = kSupportedMinor;
  d->descriptor_length = 0;
  d->flags = 0;
  d->type_tag = 0;
  d->layout_tag = 0;
  d->rank = 0;
  d->byte_offset = 0;
  d->layout_parsed = true;
  d->layout.tiled_depth = 0;
  d->buffer_count = 0;
  // Copied from a constant: building the default in place made the
  // compiler store it in pieces and reload it whole (a store-forwarding
  // stall that cost more than the rest of Reset()).
  static constexpr QuantizationDescriptor kNone{};
  d->quantization = kNone;
  d->trailing_length = 0;
  d->offsets = PartOffsets();
}

}  // namespace hurray
