#include "parser/addressing.h"

#include <algorithm>

#include "absl/status/status.h"
#include "parser/rules.h"

namespace hurray {
namespace {

using int128 = __int128;

// Offsets are bounded here while summing; anything beyond cannot fit int64.
constexpr int128 kHuge = static_cast<int128>(1) << 100;

int128 Clamp(int128 v) { return std::clamp(v, -kHuge, kHuge); }

// a·b clamped like Clamp(): a clamped value (up to 2^100) times a shape, a
// tile size or an element width can leave int128 (found by qnn_import_fuzz:
// a clamped stride times a dimension near 2^64).
int128 MulClamp(int128 a, int128 b) {
  int128 r;
  if (__builtin_mul_overflow(a, b, &r)) {
    return (a < 0) != (b < 0) ? -kHuge : kHuge;
  }
  return Clamp(r);
}

// Σ min(0, s_k·(n_k − 1)) and Σ max(0, s_k·(n_k − 1)).
void AddAffineRange(int128 stride, uint64_t n, int128* min, int128* max) {
  if (n == 0) return;
  const int128 span = MulClamp(stride, static_cast<int128>(n - 1));
  if (span < 0) *min = Clamp(*min + span);
  if (span > 0) *max = Clamp(*max + span);
}

// Row-major (last dimension fastest) or column-major strides of `shape`;
// a dimension of size ≤ 1 gets stride 0 (it is never stepped).
void ContiguousStrides(const uint64_t* shape, uint32_t rank, bool row_major,
                       int128* strides) {
  int128 s = 1;
  for (uint32_t i = 0; i < rank; ++i) {
    const uint32_t k = row_major ? rank - 1 - i : i;
    strides[k] = shape[k] > 1 ? s : 0;
    s = MulClamp(s, static_cast<int128>(shape[k]));
  }
}

absl::Status NotAddressable(const char* why) {
  return absl::InvalidArgumentError(why);
}

Rule SizeRule(uint8_t tag) {
  switch (tag) {
    case layout_tag::kStrided:
      return Rule::kBufSz02;
    case layout_tag::kTiled:
      return Rule::kBufSz03;
    case layout_tag::kMorton:
      return Rule::kBufSz04;
    case layout_tag::kHilbert:
      return Rule::kBufSz05;
    default:
      return Rule::kBufSz01;
  }
}

uint32_t BitLength(uint64_t v) { return v == 0 ? 0 : 64 - __builtin_clzll(v); }

// Bit b of x to bit b·rank (Morton, layouts/morton.md); rank 2 and 3 with
// the usual shift-and-mask steps, x below 2^32 and 2^21 there.
uint64_t Spread(uint64_t x, uint32_t rank) {
  switch (rank) {
    case 1:
      return x;
    case 2:
      x &= 0xFFFFFFFFull;
      x = (x | x << 16) & 0x0000FFFF0000FFFFull;
      x = (x | x << 8) & 0x00FF00FF00FF00FFull;
      x = (x | x << 4) & 0x0F0F0F0F0F0F0F0Full;
      x = (x | x << 2) & 0x3333333333333333ull;
      return (x | x << 1) & 0x5555555555555555ull;
    case 3:
      x &= 0x1FFFFFull;
      x = (x | x << 32) & 0x001F00000000FFFFull;
      x = (x | x << 16) & 0x001F0000FF0000FFull;
      x = (x | x << 8) & 0x100F00F00F00F00Full;
      x = (x | x << 4) & 0x10C30C30C30C30C3ull;
      return (x | x << 2) & 0x1249249249249249ull;
    default: {
      uint64_t code = 0;
      for (uint32_t b = 0; x != 0; ++b, x >>= 1) code |= (x & 1) << (b * rank);
      return code;
    }
  }
}

// --- Hilbert (layouts/hilbert.md § Normative Index Mapping, Skilling). ------

// Bits as masks: all ones when `v` is non-zero. The curve's branches depend
// on the coordinates' bits, so they are taken without branching.
uint64_t AllIf(uint64_t v) { return 0 - static_cast<uint64_t>(v != 0); }

// HilbertIndex for rank 2, both coordinates in registers.
uint64_t HilbertIndex2(uint64_t a, uint64_t b, uint32_t p) {
  const uint64_t m = uint64_t{1} << (p - 1);
  for (uint64_t q = m; q > 1; q >>= 1) {
    const uint64_t mask = q - 1;
    a ^= mask & AllIf(a & q);
    const uint64_t set = AllIf(b & q);
    const uint64_t t = (a ^ b) & mask & ~set;
    a ^= (mask & set) | t;
    b ^= t;
  }
  b ^= a;
  uint64_t t = 0;
  for (uint64_t q = m; q > 1; q >>= 1) t ^= (q - 1) & AllIf(b & q);
  return Spread(a ^ t, 2) << 1 | Spread(b ^ t, 2);
}

}  // namespace

uint64_t HilbertIndex(const uint64_t* coords, uint32_t r, uint32_t p) {
  if (r == 2) return HilbertIndex2(coords[0], coords[1], p);
  uint64_t x[kMaxRank];
  for (uint32_t i = 0; i < r; ++i) x[i] = coords[i];
  const uint64_t m = uint64_t{1} << (p - 1);
  // X[0] lives in a register: it changes at every step.
  uint64_t x0 = x[0];
  for (uint64_t q = m; q > 1; q >>= 1) {
    const uint64_t mask = q - 1;
    // i = 0: the swap is a no-op there.
    x0 ^= mask & AllIf(x0 & q);
    for (uint32_t i = 1; i < r; ++i) {
      // if (X[i] & Q) X[0] ^= P; else swap the low bits of X[0] and X[i],
      // without a branch.
      const uint64_t set = AllIf(x[i] & q);
      const uint64_t t = (x0 ^ x[i]) & mask & ~set;
      x0 ^= (mask & set) | t;
      x[i] ^= t;
    }
  }
  x[0] = x0;
  for (uint32_t i = 1; i < r; ++i) x[i] ^= x[i - 1];
  uint64_t t = 0;
  for (uint64_t q = m; q > 1; q >>= 1) {
    t ^= (q - 1) & AllIf(x[r - 1] & q);
  }
  for (uint32_t i = 0; i < r; ++i) x[i] ^= t;
  // Bit b of X[d] goes to bit b·r + (r − 1 − d).
  uint64_t h = 0;
  for (uint32_t d = 0; d < r; ++d) h |= Spread(x[d], r) << (r - 1 - d);
  return h;
}

void HilbertCoordinates(uint64_t h, uint32_t r, uint32_t p, uint64_t* x) {
  for (uint32_t d = 0; d < r; ++d) x[d] = 0;
  for (uint32_t b = 0; b < p; ++b) {
    for (uint32_t d = 0; d < r; ++d) {
      x[d] |= ((h >> (b * r + (r - 1 - d))) & 1) << b;
    }
  }
  const uint64_t t = x[r - 1] >> 1;
  for (uint32_t i = r - 1; i >= 1; --i) x[i] ^= x[i - 1];
  x[0] ^= t;
  for (uint64_t q = 2; q != (uint64_t{1} << p); q <<= 1) {
    const uint64_t mask = q - 1;
    for (uint32_t i = r; i-- > 0;) {
      if (x[i] & q) {
        x[0] ^= mask;
      } else {
        const uint64_t u = (x[0] ^ x[i]) & mask;
        x[0] ^= u;
        x[i] ^= u;
      }
    }
  }
}

// --- ElementAddresser. -------------------------------------------------------

absl::StatusOr<ElementAddresser> ElementAddresser::Create(
    const TensorDescriptor& d) {
  ElementAddresser a;
  const absl::Status s = a.Init(d);
  if (!s.ok()) return s;
  return a;
}

absl::Status ElementAddresser::Init(const TensorDescriptor& d) {
  layout_tag_ = d.layout_tag;
  if (!d.layout_parsed || !layout_tag::IsDense(layout_tag_)) {
    return NotAddressable("not a dense layout");
  }
  if (d.buffer_count == 0) return NotAddressable("no data buffer");
  if (d.rank > kMaxRank) return NotAddressable("rank above 64");
  rank_ = d.rank;
  byte_offset_ = d.byte_offset;
  element_bits_ = d.ElementBits();
  if (element_bits_ == 0) return NotAddressable("the element type is unsized");
  for (uint32_t k = 0; k < rank_; ++k) {
    if (d.shape[k] == kDynamicDim) {
      return NotAddressable("a dimension is dynamic (unresolved)");
    }
    shape_[k] = d.shape[k];
    empty_ |= shape_[k] == 0;
  }
  int128 min = 0, max = 0;
  int128 strides[kMaxRank] = {};
  switch (layout_tag_) {
    case layout_tag::kRowMajor:
    case layout_tag::kColumnMajor:
      ContiguousStrides(shape_, rank_, layout_tag_ == layout_tag::kRowMajor,
                        strides);
      break;
    case layout_tag::kStrided:
      for (uint32_t k = 0; k < rank_; ++k) {
        strides[k] = shape_[k] > 1 ? d.layout.strides[k] : 0;
      }
      break;
    case layout_tag::kTiled: {
      kind_ = Kind::kTiled;
      const absl::Status s = InitTiled(d, &min, &max);
      if (!s.ok()) return s;
      break;
    }
    case layout_tag::kMorton:
      kind_ = Kind::kMorton;
      // Bit b of index k is code bit b·rank + k (layouts/morton.md § Morton
      // Index Computation); only the bits an index below shape[k] can set
      // are kept.
      for (uint32_t k = 0; k < rank_ && !empty_; ++k) {
        const uint32_t bits = BitLength(shape_[k] - 1);
        if (d.layout.morton_bits[k] < bits) {
          return ToStatus({Rule::kLayMor02, d.offsets.layout + 4 * k,
                           "shape exceeds 2^morton_bits"});
        }
        for (uint32_t b = 0; b < bits; ++b) {
          const uint64_t at = uint64_t{b} * rank_ + k;
          if (at >= 63) {
            return ToStatus({SizeRule(layout_tag_), d.offsets.handle(0),
                             "Morton codes leave int64"});
          }
          mask_[k] |= uint64_t{1} << at;
        }
        max += static_cast<int128>(Term(k, shape_[k] - 1));
      }
      break;
    case layout_tag::kHilbert:
      kind_ = Kind::kHilbert;
      hilbert_order_ = d.layout.hilbert_order;
      if (hilbert_order_ == 0 || rank_ < 2 ||
          uint64_t{hilbert_order_} * rank_ > 63) {
        return ToStatus({SizeRule(layout_tag_), d.offsets.handle(0),
                         "Hilbert indices leave int64"});
      }
      max = (static_cast<int128>(1) << (hilbert_order_ * rank_)) - 1;
      break;
  }
  if (kind_ == Kind::kAffine) {
    for (uint32_t k = 0; k < rank_; ++k) {
      AddAffineRange(strides[k], shape_[k], &min, &max);
    }
    if (min >= INT64_MIN && max <= INT64_MAX) {
      for (uint32_t k = 0; k < rank_; ++k) {
        stride_[k] = static_cast<int64_t>(strides[k]);
      }
    }
  }
  if (empty_) {
    min_offset_ = 0;
    max_offset_ = -1;
    return absl::OkStatus();
  }
  // Every element's bits inside buffer 0 (memory-layout.md § Element Address
  // Computation; the validator sizes the buffer the same way).
  const int128 bits = element_bits_;
  const int128 first =
      static_cast<int128>(byte_offset_) * 8 + MulClamp(min, bits);
  const int128 end =
      static_cast<int128>(byte_offset_) * 8 + MulClamp(max + 1, bits);
  if (min < INT64_MIN || max > INT64_MAX || first < 0 ||
      end > static_cast<int128>(d.buffers[0].byte_size) * 8) {
    return ToStatus({SizeRule(layout_tag_), d.offsets.handle(0),
                     "element offsets leave buffer 0"});
  }
  min_offset_ = static_cast<int64_t>(min);
  max_offset_ = static_cast<int64_t>(max);
  return absl::OkStatus();
}

// Tiled (layouts/tiled.md § Element Address): per level, the tile
// coordinate times the tile-grid stride times the elements per tile, then
// the intra-tile coordinate for the next level, the last level's inner
// layout giving the element stride. A nested level's index space is the
// enclosing tile (REJECT-RULES.md §4 item 32). The range covers the whole
// grid of every level, padding included, like the validator's BUF-SZ-03.
absl::Status ElementAddresser::InitTiled(const TensorDescriptor& d,
                                         int128* min_out, int128* max_out) {
  depth_ = d.layout.tiled_depth;
  if (depth_ == 0 || depth_ > kMaxTiledDepth) {
    return NotAddressable("tiled depth out of range");
  }
  uint64_t extent[kMaxRank];
  std::copy(shape_, shape_ + rank_, extent);
  int128 min = 0, max = 0;
  for (uint32_t l = 0; l < depth_; ++l) {
    const TiledLevel& t = d.layout.tiled[l];
    Level& level = levels_[l];
    uint64_t grid[kMaxRank];
    int128 tile_elements = 1;
    for (uint32_t k = 0; k < rank_; ++k) {
      level.tile[k] = t.tile_shape[k];
      if (level.tile[k] == 0) return NotAddressable("a tile_shape entry is 0");
      grid[k] = extent[k] / level.tile[k] + (extent[k] % level.tile[k] != 0);
      tile_elements = MulClamp(tile_elements, level.tile[k]);
    }
    int128 outer[kMaxRank];
    if (t.outer_layout == layout_tag::kStrided) {
      for (uint32_t k = 0; k < rank_; ++k) {
        outer[k] = grid[k] > 1 ? t.outer_strides[k] : 0;
      }
    } else {
      ContiguousStrides(grid, rank_, t.outer_layout == layout_tag::kRowMajor,
                        outer);
    }
    for (uint32_t k = 0; k < rank_; ++k) {
      outer[k] = MulClamp(outer[k], tile_elements);
      AddAffineRange(outer[k], grid[k], &min, &max);
      if (outer[k] < INT64_MIN || outer[k] > INT64_MAX) {
        return ToStatus({SizeRule(layout_tag_), d.offsets.handle(0),
                         "tile offsets leave int64"});
      }
      level.outer[k] = static_cast<int64_t>(outer[k]);
    }
    if (t.inner_layout == layout_tag::kTiled) {
      if (l + 1 == depth_) return NotAddressable("tiled levels are missing");
      std::copy(level.tile, level.tile + rank_, extent);
      continue;
    }
    if (l + 1 != depth_) return NotAddressable("tiled levels are inconsistent");
    int128 inner[kMaxRank];
    if (t.inner_layout == layout_tag::kStrided) {
      for (uint32_t k = 0; k < rank_; ++k) {
        inner[k] = level.tile[k] > 1 ? t.inner_strides[k] : 0;
      }
    } else {
      ContiguousStrides(level.tile, rank_,
                        t.inner_layout == layout_tag::kRowMajor, inner);
    }
    for (uint32_t k = 0; k < rank_; ++k) {
      AddAffineRange(inner[k], level.tile[k], &min, &max);
      if (inner[k] < INT64_MIN || inner[k] > INT64_MAX) {
        return ToStatus({SizeRule(layout_tag_), d.offsets.handle(0),
                         "tile offsets leave int64"});
      }
      stride_[k] = static_cast<int64_t>(inner[k]);
    }
  }
  *min_out = min;
  *max_out = max;
  return absl::OkStatus();
}

int64_t ElementAddresser::Term(uint32_t k, uint64_t x) const {
  switch (kind_) {
    case Kind::kAffine:
      return static_cast<int64_t>(x) * stride_[k];
    case Kind::kTiled: {
      int64_t term = 0;
      for (uint32_t l = 0; l < depth_; ++l) {
        const uint64_t tile = levels_[l].tile[k];
        term += static_cast<int64_t>(x / tile) * levels_[l].outer[k];
        x %= tile;
      }
      return term + static_cast<int64_t>(x) * stride_[k];
    }
    case Kind::kMorton:
      // x < shape[k] ≤ 2^morton_bits[k], and every code bit it reaches is
      // below 63 (checked by Init).
      return static_cast<int64_t>(Spread(x, rank_) << k);
    case Kind::kHilbert:
      break;
  }
  return 0;
}

uint64_t ElementAddresser::TiledRun(uint32_t k, uint64_t x) const {
  uint64_t run = UINT64_MAX;
  for (uint32_t l = 0; l < depth_; ++l) {
    const uint64_t tile = levels_[l].tile[k];
    x %= tile;
    run = std::min(run, tile - 1 - x);
  }
  return run;
}

int64_t ElementAddresser::HilbertOffset(
    absl::Span<const uint64_t> index) const {
  return static_cast<int64_t>(
      HilbertIndex(index.data(), rank_, hilbert_order_));
}

int64_t ElementAddresser::Offset(absl::Span<const uint64_t> index) const {
  int64_t offset = 0;
  switch (kind_) {
    case Kind::kAffine:
      for (uint32_t k = 0; k < rank_; ++k) {
        offset += static_cast<int64_t>(index[k]) * stride_[k];
      }
      return offset;
    case Kind::kHilbert:
      return HilbertOffset(index);
    default:
      for (uint32_t k = 0; k < rank_; ++k) offset += Term(k, index[k]);
      return offset;
  }
}

bool ElementAddresser::Contains(absl::Span<const uint64_t> index) const {
  if (index.size() != rank_) return false;
  for (uint32_t k = 0; k < rank_; ++k) {
    if (index[k] >= shape_[k]) return false;
  }
  return true;
}

// --- RowMajorWalker. ---------------------------------------------------------

RowMajorWalker::RowMajorWalker(const ElementAddresser& a)
    : a_(&a), kind_(a.kind_) {
  done_ = a.empty_;
  if (a.rank_ > 0) {
    last_ = a.rank_ - 1;
    last_extent_ = a.shape_[last_];
    last_stride_ = a.stride_[last_];
    last_mask_ = a.mask_[last_];
  }
  // Every term is 0 at coordinate 0, and so is the Hilbert index of 0.
  if (a.kind_ == ElementAddresser::Kind::kTiled) {
    for (uint32_t k = 0; k < a.rank_; ++k) run_[k] = a.TiledRun(k, 0);
  }
}

int64_t RowMajorWalker::Step(uint32_t k) {
  const ElementAddresser& a = *a_;
  switch (a.kind_) {
    case ElementAddresser::Kind::kAffine:
      return term_[k] + a.stride_[k];
    case ElementAddresser::Kind::kMorton: {
      // The next code on dimension k's bits: fill the other bits with ones
      // so the carry runs through them.
      const uint64_t mask = a.mask_[k];
      return static_cast<int64_t>(
          ((static_cast<uint64_t>(term_[k]) | ~mask) + 1) & mask);
    }
    case ElementAddresser::Kind::kTiled:
      if (run_[k] > 0) {
        --run_[k];
        return term_[k] + a.stride_[k];
      }
      run_[k] = a.TiledRun(k, index_[k]);
      return a.Term(k, index_[k]);
    case ElementAddresser::Kind::kHilbert:
      break;
  }
  return 0;
}

void RowMajorWalker::NextSlow() {
  if (done_) return;
  const ElementAddresser& a = *a_;
  if (a.rank_ == 0) {
    done_ = true;
    return;
  }
  for (uint32_t k = a.rank_ - 1;; --k) {
    if (++index_[k] < a.shape_[k]) {
      const int64_t term = Step(k);
      offset_ += term - term_[k];
      term_[k] = term;
      break;
    }
    offset_ -= term_[k];
    term_[k] = 0;
    index_[k] = 0;
    if (a.kind_ == ElementAddresser::Kind::kTiled) run_[k] = a.TiledRun(k, 0);
    if (k == 0) {
      done_ = true;
      return;
    }
  }
  if (a.kind_ == ElementAddresser::Kind::kHilbert) {
    offset_ = a.HilbertOffset(index());
  }
}

size_t RowMajorWalker::Fill(absl::Span<int64_t> out) {
  const ElementAddresser& a = *a_;
  size_t n = 0;
  while (n < out.size() && !done_) {
    if (a.rank_ == 0) {
      out[n++] = offset_;
      Next();
      continue;
    }
    // The rest of the current row, up to the room left in `out`.
    const uint32_t k = a.rank_ - 1;
    const size_t m = static_cast<size_t>(
        std::min<uint64_t>(a.shape_[k] - index_[k], out.size() - n));
    int64_t* o = out.data() + n;
    switch (a.kind_) {
      case ElementAddresser::Kind::kAffine: {
        const int64_t s = a.stride_[k];
        int64_t v = offset_;
        for (size_t j = 0; j < m; ++j, v += s) o[j] = v;
        index_[k] += m - 1;
        term_[k] += static_cast<int64_t>(m - 1) * s;
        offset_ += static_cast<int64_t>(m - 1) * s;
        break;
      }
      case ElementAddresser::Kind::kMorton: {
        const uint64_t mask = a.mask_[k];
        uint64_t t = static_cast<uint64_t>(term_[k]);
        const int64_t rest = offset_ - term_[k];
        o[0] = offset_;
        for (size_t j = 1; j < m; ++j) {
          t = ((t | ~mask) + 1) & mask;
          o[j] = rest + static_cast<int64_t>(t);
        }
        index_[k] += m - 1;
        term_[k] = static_cast<int64_t>(t);
        offset_ = rest + term_[k];
        break;
      }
      case ElementAddresser::Kind::kTiled: {
        const int64_t s = a.stride_[k];
        o[0] = offset_;
        for (size_t j = 1; j < m; ++j) {
          ++index_[k];
          if (run_[k] > 0) {  // inside the innermost tile row
            --run_[k];
            term_[k] += s;
            offset_ += s;
          } else {
            const int64_t term = Step(k);
            offset_ += term - term_[k];
            term_[k] = term;
          }
          o[j] = offset_;
        }
        break;
      }
      case ElementAddresser::Kind::kHilbert:
        o[0] = offset_;
        for (size_t j = 1; j < m; ++j) {
          ++index_[k];
          o[j] = offset_ = a.HilbertOffset(index());
        }
        break;
    }
    n += m;
    Next();
  }
  return n;
}

}  // namespace hurray
