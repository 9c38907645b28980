#include "parser/layout_rules.h"

#include <algorithm>

#include "parser/element_type.h"
#include "parser/validator.h"
#include "parser/wire.h"

namespace hurray {
namespace {

using wire::CheckedAdd;
using wire::CheckedMul;
using int128 = __int128;

// Element offsets are tracked in 128 bits; anything beyond this bound cannot
// fit a buffer whose size is a u64 and is reported as too small.
constexpr int128 kHugeOffset = static_cast<int128>(1) << 100;

using wire::FirstNonZero;

// x · y > kHugeOffset, for x, y ≥ 0, without overflow: the product itself
// when both are below 2^64 (then it fits 128 bits unsigned), else by
// division (x > ⌊kHugeOffset / y⌋ exactly when x · y > kHugeOffset). The
// tiled range check's bounds, without a 128-bit division (__divti3) in the
// common case.
bool ProductExceedsHuge(int128 x, int128 y) {
  using uint128 = unsigned __int128;
  constexpr int128 k2To64 = static_cast<int128>(1) << 64;
  if (x < k2To64 && y < k2To64) {
    return static_cast<uint128>(x) * static_cast<uint128>(y) >
           static_cast<uint128>(kHugeOffset);
  }
  return y != 0 && x > kHugeOffset / y;
}

uint32_t Params(const TensorDescriptor& d) {
  if (!d.has(flag::kHasQuantization) || !d.quantization.interpreted()) {
    return 0;
  }
  return ParameterBufferCount(d.quantization);
}

// True when elements [min, max] (offsets in elements from byte_offset) lie
// inside buffer 0 (layouts/strided.md § Buffer Size; sub-byte types address
// bits, memory-layout.md § Sub-Byte Types).
bool ExtentFits(const TensorDescriptor& d, int128 min, int128 max) {
  const uint32_t bits = d.ElementBits();  // ≤ 2^32 (extension bit_width)
  if (bits == 0 || min < -kHugeOffset || max > kHugeOffset) return false;
  // The first element must not start before the buffer: −min·bits ≤
  // 8·byte_offset, tested by division so the product cannot overflow.
  if (min < 0 && -min > static_cast<int128>(d.byte_offset) * 8 / bits) {
    return false;
  }
  // max + 1 elements must be countable in a u64 before they are sized.
  if (max + 1 > static_cast<int128>(UINT64_MAX)) return false;
  uint64_t bytes = 0;
  if (!d.StorageBytesFor(static_cast<uint64_t>(max + 1), &bytes)) return false;
  return static_cast<int128>(d.byte_offset) + bytes <=
         static_cast<int128>(d.buffers[0].byte_size);
}

// Σ min(0, s_k·(n_k−1)) and Σ max(0, s_k·(n_k−1)). Each product fits in
// 128 bits (|s| < 2^63, n < 2^64); it is clamped to ±2^110 before summing so
// that 64 of them cannot overflow either (anything beyond 2^100 is reported
// as not fitting by the callers).
void StridedRange(const int64_t* strides, const uint64_t* extent, uint32_t rank,
                  int128* min, int128* max) {
  constexpr int128 kClamp = static_cast<int128>(1) << 110;
  *min = *max = 0;
  for (uint32_t k = 0; k < rank; ++k) {
    if (extent[k] == 0) continue;  // addresses nothing
    int128 span =
        static_cast<int128>(strides[k]) * static_cast<int128>(extent[k] - 1);
    span = std::clamp(span, -kClamp, kClamp);
    if (span < 0) *min += span;
    if (span > 0) *max += span;
  }
}

// --- Dense layouts. --------------------------------------------------------

Rejection CheckTiledFields(const TensorDescriptor& d) {
  const uint32_t r = d.rank;
  if (r == 0) return {Rule::kLayTil06, 16, "a tiled tensor needs rank ≥ 1"};
  uint64_t at = d.offsets.layout;
  for (uint32_t i = 0; i < d.layout.tiled_depth; ++i) {
    const TiledLevel& level = d.layout.tiled[i];
    for (uint32_t k = 0; k < r; ++k) {
      if (level.tile_shape[k] == 0) {
        return {Rule::kLayTil01, at + 8 * k, "a tile_shape entry is 0"};
      }
    }
    at += 8ull * r;
    const int z = FirstNonZero(level.reserved.data(), 2);
    if (z >= 0) {
      return {Rule::kLayTil04, at + 2 + z, "tiled reserved byte is not zero"};
    }
    at += 4;
    if (level.outer_layout == layout_tag::kStrided) at += 8ull * r;
    if (level.inner_layout == layout_tag::kStrided) at += 8ull * r;
  }
  return kAccepted;
}

// Lowest and highest element offset a tiled level addresses for an index
// space of `extent` (the tensor shape, or the enclosing tile for a nested
// level: REJECT-RULES.md §4 item 32).
bool TiledRange(const TensorDescriptor& d, uint32_t level_index,
                const uint64_t* extent, int128* min, int128* max) {
  const uint32_t r = d.rank;
  const TiledLevel& level = d.layout.tiled[level_index];
  uint64_t grid[kMaxRank];
  int128 tile_elems = 1;
  for (uint32_t k = 0; k < r; ++k) {
    const uint64_t t = level.tile_shape[k];
    grid[k] = extent[k] / t + (extent[k] % t != 0);
    if (ProductExceedsHuge(t, tile_elems)) return false;
    tile_elems *= t;
  }
  int128 tile_min = 0, tile_max = 0;
  if (level.outer_layout == layout_tag::kStrided) {
    StridedRange(level.outer_strides, grid, r, &tile_min, &tile_max);
  } else {
    int128 tiles = 1;
    for (uint32_t k = 0; k < r; ++k) {
      if (grid[k] == 0) return false;  // callers skip empty tensors
      if (ProductExceedsHuge(grid[k], tiles)) return false;
      tiles *= grid[k];
    }
    tile_max = tiles - 1;
  }
  int128 inner_min = 0, inner_max = tile_elems - 1;
  if (level.inner_layout == layout_tag::kStrided) {
    StridedRange(level.inner_strides, level.tile_shape, r, &inner_min,
                 &inner_max);
  } else if (level.inner_layout == layout_tag::kTiled) {
    if (!TiledRange(d, level_index + 1, level.tile_shape, &inner_min,
                    &inner_max)) {
      return false;
    }
  }
  // Tile t starts at t · ∏ tile_shape (layouts/tiled.md § Element Address):
  // an inner layout whose addresses span more than ∏ tile_shape slots would
  // make neighbouring tiles share storage (nested tiles that do not divide
  // the enclosing tile, oversized inner strides). Rejected as BUF-SZ-03
  // (docs/design.md).
  if (inner_max - inner_min >= tile_elems) return false;
  if (ProductExceedsHuge(tile_max, tile_elems) ||
      ProductExceedsHuge(-tile_min, tile_elems)) {
    return false;
  }
  *min = tile_min * tile_elems + inner_min;
  *max = tile_max * tile_elems + inner_max;
  return true;
}

Rejection CheckMortonFields(const TensorDescriptor& d) {
  if (d.rank == 0) return {Rule::kLayMor03, 16, "Morton needs rank ≥ 1"};
  for (uint32_t k = 0; k < d.rank; ++k) {
    const uint64_t at = d.offsets.layout + 4 * k;
    const uint32_t bits = d.layout.morton_bits[k];
    if (bits == 0) return {Rule::kLayMor01, at, "a morton_bits entry is 0"};
    if (d.shape[k] != kDynamicDim && bits < 64 &&
        d.shape[k] > (uint64_t{1} << bits)) {
      return {Rule::kLayMor02, at, "shape exceeds 2^morton_bits"};
    }
  }
  return kAccepted;
}

Rejection CheckHilbertFields(const TensorDescriptor& d) {
  const LayoutFields& l = d.layout;
  const uint64_t at = d.offsets.layout;
  if (l.hilbert_order == 0) {
    return {Rule::kLayHil01, at, "hilbert_order is 0"};
  }
  if (l.hilbert_rank < 2) {
    return {Rule::kLayHil02, at + 4, "hilbert_rank is below 2"};
  }
  if (l.hilbert_rank != d.rank) {
    return {Rule::kLayHil03, at + 4, "hilbert_rank differs from rank"};
  }
  for (uint32_t k = 0; k < d.rank; ++k) {
    if (l.hilbert_order >= 64 ||
        d.shape[k] != (uint64_t{1} << l.hilbert_order)) {
      return {Rule::kLayHil04, d.offsets.shape(k),
              "every dimension must equal 2^hilbert_order"};
    }
  }
  return kAccepted;
}

// --- Sparse layouts. -------------------------------------------------------

Rejection CheckSparseFields(const TensorDescriptor& d, const ParseOptions& o) {
  const LayoutFields& l = d.layout;
  const uint64_t at = d.offsets.layout;
  const uint32_t bt = d.offsets.buffer_table;
  const uint32_t params = Params(d);
  switch (d.layout_tag) {
    case layout_tag::kCoo: {
      if (d.rank == 0) return {Rule::kLayCoo01, 16, "COO needs rank ≥ 1"};
      if (l.is_sorted > 1 && Applies(Rule::kLayCoo02, o.mode)) {
        return {Rule::kLayCoo02, at + 8, "is_sorted is not 0x00 or 0x01"};
      }
      const int z = FirstNonZero(l.sparse_reserved.data(), 7);
      if (z >= 0) return {Rule::kLayCoo03, at + 9 + z, "reserved byte set"};
      if (d.buffer_count != 2 + params) {
        return {Rule::kLayCoo04, bt, "COO needs 2 buffers + parameters"};
      }
      return kAccepted;
    }
    case layout_tag::kCsr:
    case layout_tag::kCsc: {
      const bool csr = d.layout_tag == layout_tag::kCsr;
      if (d.rank != 2) {
        return {csr ? Rule::kLayCsr01 : Rule::kLayCsc01, 16,
                "CSR and CSC need rank 2"};
      }
      const int z = FirstNonZero(l.sparse_reserved.data(), 8);
      if (z >= 0) {
        return {csr ? Rule::kLayCsr02 : Rule::kLayCsc02, at + 8 + z,
                "reserved byte is not zero"};
      }
      if (d.buffer_count != 3 + params) {
        return {csr ? Rule::kLayCsr03 : Rule::kLayCsc03, bt,
                "CSR and CSC need 3 buffers + parameters"};
      }
      return kAccepted;
    }
    default: {  // CSF
      if (d.rank < 3) return {Rule::kLayCsf01, 16, "CSF needs rank ≥ 3"};
      if (Applies(Rule::kLayCsf02, o.mode)) {
        uint64_t seen = 0;  // rank ≤ 64
        for (uint32_t k = 0; k < d.rank; ++k) {
          const uint32_t m = l.mode_order[k];
          if (m >= d.rank || ((seen >> m) & 1)) {
            return {Rule::kLayCsf02, at + 8 + 4 * k,
                    "mode_order is not a permutation of the dimensions"};
          }
          seen |= uint64_t{1} << m;
        }
      }
      const int z = FirstNonZero(l.sparse_reserved.data(), 8);
      if (z >= 0) {
        return {Rule::kLayCsf03, at + 8 + 4ull * d.rank + z,
                "reserved byte is not zero"};
      }
      if (d.buffer_count != 2 * d.rank + 1 + params) {
        return {Rule::kLayCsf04, bt, "CSF needs 2·rank+1 buffers + parameters"};
      }
      if (d.has(flag::kHasShard)) {
        return {Rule::kLayCsf05, 10, "a CSF tensor cannot be a shard"};
      }
      return kAccepted;
    }
  }
}

// Component sizes: smaller than stated is always a rejection, larger only in
// strict mode (BUF-SZ-12).
Rejection CheckComponent(const TensorDescriptor& d, uint32_t index,
                         uint64_t need, bool overflow, Rule rule,
                         const ParseOptions& o) {
  const uint64_t have = d.buffers[index].byte_size;
  const uint64_t at = d.offsets.handle(index);
  if (overflow || have < need) {
    return {rule, at, "sparse component buffer is too small"};
  }
  if (have > need && Applies(Rule::kBufSz12, o.mode)) {
    return {Rule::kBufSz12, at, "sparse component buffer is too large"};
  }
  return kAccepted;
}

Rejection CheckSparseSizes(const TensorDescriptor& d, const ParseOptions& o) {
  const uint64_t nnz = d.layout.nnz;
  uint64_t values = 0;
  const bool values_overflow = !d.StorageBytesFor(nnz, &values);
  uint64_t n8 = 0;
  const bool nnz8_overflow = !CheckedMul(nnz, 8, &n8);
  switch (d.layout_tag) {
    case layout_tag::kCoo: {
      const Rule r = Rule::kBufSz06;
      HURRAY_RETURN_IF_REJECTED(
          CheckComponent(d, 0, values, values_overflow, r, o));
      uint64_t idx = 0;
      const bool of = nnz8_overflow || !CheckedMul(n8, d.rank, &idx);
      return CheckComponent(d, 1, idx, of, r, o);
    }
    case layout_tag::kCsr:
    case layout_tag::kCsc: {
      const bool csr = d.layout_tag == layout_tag::kCsr;
      const Rule r = csr ? Rule::kBufSz07 : Rule::kBufSz08;
      HURRAY_RETURN_IF_REJECTED(
          CheckComponent(d, 0, values, values_overflow, r, o));
      HURRAY_RETURN_IF_REJECTED(CheckComponent(d, 1, n8, nnz8_overflow, r, o));
      const uint64_t dim = d.shape[csr ? 0 : 1];
      if (dim == kDynamicDim) return kAccepted;
      uint64_t ptr = 0;
      const bool of = !CheckedAdd(dim, 1, &ptr) || !CheckedMul(ptr, 8, &ptr);
      return CheckComponent(d, 2, ptr, of, r, o);
    }
    default: {  // CSF: level sizes depend on the data, only fixed parts here.
      const Rule r = Rule::kBufSz09;
      HURRAY_RETURN_IF_REJECTED(
          CheckComponent(d, 0, values, values_overflow, r, o));
      if (d.buffers[1].byte_size != 16) {
        return {r, d.offsets.handle(1), "pos_0 must hold 2 u64 entries"};
      }
      if (nnz8_overflow || d.buffers[2 * d.rank].byte_size != n8) {
        return {r, d.offsets.handle(2 * d.rank),
                "the leaf crd buffer must hold nnz u64 entries"};
      }
      for (uint32_t i = 1; i <= 2 * d.rank; ++i) {
        if (d.buffers[i].byte_size % 8 != 0) {
          return {r, d.offsets.handle(i),
                  "pos/crd buffer size is not a multiple of 8"};
        }
      }
      return kAccepted;
    }
  }
}

// --- Block-paged. ----------------------------------------------------------

Rejection CheckPagedFields(const TensorDescriptor& d, const ParseOptions& o) {
  const LayoutFields& l = d.layout;
  const uint64_t at = d.offsets.layout;
  if (d.rank != 3) return {Rule::kLayBpg01, 16, "block-paged needs rank 3"};
  if (l.paged_axis != 0 && Applies(Rule::kLayBpg02, o.mode)) {
    return {Rule::kLayBpg02, at + 12, "paged_axis must be 0"};
  }
  if (l.page_size == 0) return {Rule::kLayBpg03, at, "page_size is 0"};
  if (l.kv_role > 0x02) {
    return {Rule::kLayBpg04, at + 20, "kv_role is not 0x00, 0x01 or 0x02"};
  }
  if (l.block_table_index_type > 0x01) {
    return {Rule::kLayBpg05, at + 25,
            "block_table_index_type is not 0x00 or 0x01"};
  }
  const int z = FirstNonZero(l.paged_reserved.data(), 6);
  if (z >= 0) return {Rule::kLayBpg06, at + 26 + z, "reserved byte set"};
  if (l.block_table_index_type == 0x00 && l.num_pages > 0xFFFFFFFFull) {
    return {Rule::kLayBpg13, at + 4, "num_pages exceeds u32 page ids"};
  }
  if (d.buffer_count < 3 || d.buffer_count != 3 + Params(d)) {
    return {Rule::kLayBpg07, d.offsets.buffer_table,
            "block-paged needs 3 buffers + parameters"};
  }
  if (d.has(flag::kHasShard)) {
    return {Rule::kLayBpg08, 10, "a block-paged tensor cannot be a shard"};
  }
  return kAccepted;
}

Rejection CheckPagedSizes(const TensorDescriptor& d, const ParseOptions& o) {
  const LayoutFields& l = d.layout;
  const uint64_t w = l.block_table_index_type == 0 ? 4 : 8;
  const Rule r = Rule::kBufSz10;
  // Slots: num_pages · page_size tokens.
  uint64_t slots = 0;
  const bool slots_ok = CheckedMul(l.num_pages, l.page_size, &slots);
  if (d.has(flag::kHasQuantization) && d.quantization.interpreted()) {
    const QuantizationDescriptor& q = d.quantization;
    const uint64_t qbase = d.offsets.quantization + 4;
    switch (q.scheme_tag) {
      case scheme_tag::kPerBlockAffine: {
        if (q.axis != 0) {
          return {Rule::kLayBpg09, qbase + 4, "per-block axis must be 0"};
        }
        if (q.block_size != l.page_size) {
          return {Rule::kLayBpg10, qbase + 8,
                  "per-block block_size must equal page_size"};
        }
        // Per-page-slot parameters (layouts/block-paged.md § Scale-buffer
        // size), the same layout for scales and zero-points.
        const uint64_t sw = q.scale_type_tag == type_tag::kFloat32 ? 4 : 2;
        uint64_t scale = 0, zp = 0;
        const bool ok = slots_ok && CheckedMul(slots, sw, &scale) &&
                        CheckedMul(slots, 4, &zp);
        const bool shared =
            !q.symmetric() && q.zero_point_buffer_index == q.scale_buffer_index;
        uint64_t both = 0;
        if (shared) {
          if (!ok || !CheckedAdd(scale, zp, &both) ||
              d.buffers[q.scale_buffer_index].byte_size != both) {
            return {Rule::kLayBpg14, d.offsets.handle(q.scale_buffer_index),
                    "shared parameter buffer does not match the page slots"};
          }
        } else {
          if (!ok || d.buffers[q.scale_buffer_index].byte_size != scale) {
            return {Rule::kLayBpg14, d.offsets.handle(q.scale_buffer_index),
                    "scale buffer does not match the page slots"};
          }
          if (!q.symmetric() &&
              d.buffers[q.zero_point_buffer_index].byte_size != zp) {
            return {Rule::kLayBpg14,
                    d.offsets.handle(q.zero_point_buffer_index),
                    "zero-point buffer does not match the page slots"};
          }
        }
        break;
      }
      case scheme_tag::kPerChannelAffine:
        if (q.axis == 0 && Applies(Rule::kLayBpg11, o.mode)) {
          return {Rule::kLayBpg11, qbase + 4,
                  "per-channel on the paged axis is not allowed"};
        }
        break;
      case scheme_tag::kNf4:
      case scheme_tag::kMxfp:
        if (Applies(Rule::kLayBpg12, o.mode)) {
          return {Rule::kLayBpg12, qbase,
                  "NF4 and MXFP are not defined on block-paged tensors"};
        }
        break;
    }
  }
  if (d.shape[1] != kDynamicDim && d.shape[2] != kDynamicDim) {
    uint64_t elems = 0, bytes = 0;
    wire::CheckedProduct product;  // exact: a zero factor empties the pool
    product.Mul(slots);
    product.Mul(d.shape[1]);
    product.Mul(d.shape[2]);
    const bool ok =
        slots_ok && product.Get(&elems) && d.StorageBytesFor(elems, &bytes);
    if (d.ElementBits() != 0 && (!ok || d.buffers[0].byte_size != bytes)) {
      return {r, d.offsets.handle(0), "page pool size does not match"};
    }
  }
  if (d.buffers[1].byte_size % w != 0) {
    return {r, d.offsets.handle(1),
            "block table size is not a multiple of the index width"};
  }
  uint64_t seq = 0;
  if (!CheckedMul(static_cast<uint64_t>(l.num_seqs) + 1, w, &seq) ||
      d.buffers[2].byte_size != seq) {
    return {r, d.offsets.handle(2), "seq_ptr must hold num_seqs + 1 entries"};
  }
  return kAccepted;
}

// --- Composite head. -------------------------------------------------------

Rejection CheckCompositeHead(const TensorDescriptor& d, const ParseOptions& o) {
  const LayoutFields& l = d.layout;
  const uint64_t at = d.offsets.layout;
  const uint8_t rule = l.composition_rule;
  if (rule == 0x00 || rule == 0xFF || (rule >= 0x04 && rule <= 0xEF)) {
    return {Rule::kLayCmp01, at, "composition_rule is reserved or invalid"};
  }
  if (rule >= 0xF0) {
    // No private composition rule is agreed in this reader.
    if (Applies(Rule::kLayCmp02, o.mode)) {
      return {Rule::kLayCmp02, at, "private composition_rule is unknown"};
    }
  } else if (rule == 0x02) {
    if (l.combine_op != 0x01 && l.combine_op != 0x02) {
      return {Rule::kLayCmp04, at + 1, "overlay combine_op must be 1 or 2"};
    }
  } else if (l.combine_op != 0x00) {
    return {Rule::kLayCmp03, at + 1, "combine_op must be 0"};
  }
  const int z = FirstNonZero(l.composite_reserved.data(), 2);
  if (z >= 0) return {Rule::kLayCmp05, at + 2 + z, "reserved byte is set"};
  if (l.member_count == 0xFFFFFFFF && Applies(Rule::kLayCmp06, o.mode)) {
    return {Rule::kLayCmp06, at + 4, "open composites are reserved"};
  }
  if (d.buffer_count != 0) {
    return {Rule::kLayCmp07, d.offsets.buffer_table,
            "a composite head owns no buffers"};
  }
  if (d.byte_offset != 0) {
    return {Rule::kLayCmp08, d.offsets.byte_offset(),
            "a composite head has byte_offset 0"};
  }
  if (d.has(flag::kHasQuantization)) {
    return {Rule::kLayCmp09, 10, "a composite head cannot be quantized"};
  }
  if (d.has(flag::kHasCompositeMember)) {
    return {Rule::kLayCmp10, 10, "a composite head cannot be a member"};
  }
  if (rule == 0x02 && l.member_count == 0) {
    return {Rule::kLayCmp11, at + 4, "an overlay needs members"};
  }
  if (rule == 0x01 || rule == 0x02) {
    for (uint32_t k = 0; k < d.rank; ++k) {
      if (d.shape[k] == kDynamicDim) {
        return {Rule::kLayCmp12, d.offsets.shape(k),
                "partition and overlay heads need a static shape"};
      }
    }
  }
  return kAccepted;
}

}  // namespace

bool LayoutRulesImplemented(uint8_t tag) {
  return layout_tag::IsAssigned(tag) || layout_tag::IsExtension(tag);
}

Rejection CheckLayoutFields(const TensorDescriptor& d, const ParseOptions& o) {
  const uint8_t tag = d.layout_tag;
  if ((!LayoutRulesImplemented(tag) || o.disabled_layouts.test(tag)) &&
      Applies(Rule::kLayTag03, o.mode)) {
    return {Rule::kLayTag03, 15, "this reader does not implement the layout"};
  }
  switch (tag) {
    case layout_tag::kStrided:
      if (d.rank == 0) return {Rule::kLayStr01, 16, "strided needs rank ≥ 1"};
      return kAccepted;
    case layout_tag::kTiled:
      return CheckTiledFields(d);
    case layout_tag::kMorton:
      return CheckMortonFields(d);
    case layout_tag::kHilbert:
      return CheckHilbertFields(d);
    case layout_tag::kCoo:
    case layout_tag::kCsr:
    case layout_tag::kCsc:
    case layout_tag::kCsf:
      return CheckSparseFields(d, o);
    case layout_tag::kBlockPaged:
      return CheckPagedFields(d, o);
    case layout_tag::kComposite:
      return CheckCompositeHead(d, o);
    default:
      break;
  }
  if (layout_tag::IsExtension(tag) &&
      !o.agreed.HasLayoutId(d.layout.extension_layout_id) &&
      Applies(Rule::kLayTag04, o.mode)) {
    return {Rule::kLayTag04, d.offsets.layout,
            "extension_layout_id is not recognised"};
  }
  return kAccepted;
}

Rejection CheckLayoutSizes(const TensorDescriptor& d, const ParseOptions& o) {
  const uint8_t tag = d.layout_tag;
  if (tag == layout_tag::kBlockPaged) return CheckPagedSizes(d, o);
  if (tag >= layout_tag::kCoo && tag <= layout_tag::kCsf) {
    return d.ElementBits() ? CheckSparseSizes(d, o) : kAccepted;
  }
  // Dense layouts other than row/column-major (those are checked with the
  // quantization padding, BUF-SZ-01/11). Sizes need a static shape and a
  // sizeable type; an empty tensor addresses nothing.
  if (tag != layout_tag::kStrided && tag != layout_tag::kTiled &&
      tag != layout_tag::kMorton && tag != layout_tag::kHilbert) {
    return kAccepted;
  }
  if (d.buffer_count == 0 || d.HasDynamicDim() || d.ElementBits() == 0) {
    return kAccepted;
  }
  for (uint32_t k = 0; k < d.rank; ++k) {
    if (d.shape[k] == 0) return kAccepted;
  }
  const uint64_t at = d.offsets.handle(0);
  int128 min = 0, max = 0;
  switch (tag) {
    case layout_tag::kStrided:
      StridedRange(d.layout.strides, d.shape, d.rank, &min, &max);
      if (!ExtentFits(d, min, max)) {
        return {Rule::kBufSz02, at, "buffer 0 does not hold every stride"};
      }
      return kAccepted;
    case layout_tag::kTiled:
      if (!TiledRange(d, 0, d.shape, &min, &max) || !ExtentFits(d, min, max)) {
        return {Rule::kBufSz03, at, "buffer 0 does not hold every tile"};
      }
      return kAccepted;
    case layout_tag::kMorton: {
      // The buffer holds 2^Σbits elements (layouts/morton.md § Buffer Size)
      // and, since the code puts bit b of dimension k at b·rank + k, every
      // code the shape reaches: with unequal morton_bits the largest code
      // can pass 2^Σbits (docs/design.md, Morton ruling). The largest code is
      // the interleave of shape[k] − 1, the code being monotone in each index.
      uint64_t bits = 0;
      int128 max_code = 0;
      bool fits = true;
      for (uint32_t k = 0; k < d.rank; ++k) {
        const uint32_t b_k = d.layout.morton_bits[k];
        bits += b_k;
        const uint64_t last = d.shape[k] - 1;  // < 2^b_k (LAY-MOR-02)
        for (uint32_t b = 0; b < b_k && b < 64; ++b) {
          if (!((last >> b) & 1)) continue;
          const uint64_t position = uint64_t{b} * d.rank + k;
          if (position >= 100) {
            fits = false;
            break;
          }
          max_code |= int128{1} << position;
        }
      }
      if (!fits || bits > 63 ||
          !ExtentFits(d, 0, std::max((int128{1} << bits) - 1, max_code))) {
        return {Rule::kBufSz04, at,
                "buffer 0 does not hold every Morton code of the shape"};
      }
      return kAccepted;
    }
    case layout_tag::kHilbert: {
      const uint64_t bits =
          static_cast<uint64_t>(d.layout.hilbert_order) * d.rank;
      if (bits > 63 || !ExtentFits(d, 0, (int128{1} << bits) - 1)) {
        return {Rule::kBufSz05, at,
                "buffer 0 does not hold 2^(rank·order) elements"};
      }
      return kAccepted;
    }
    default:
      return kAccepted;
  }
}

}  // namespace hurray
