#include "dequant/storage_walk.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "parser/addressing.h"

namespace hurray::dequant {
namespace {

uint32_t BitLength(uint64_t v) { return v == 0 ? 0 : 64 - __builtin_clzll(v); }

uint64_t Magnitude(int64_t v) {
  return v < 0 ? uint64_t{0} - static_cast<uint64_t>(v)
               : static_cast<uint64_t>(v);
}

// Row-major (last fastest) or column-major strides of `shape`.
void Contiguous(const uint64_t* shape, uint32_t rank, bool row_major,
                int64_t* strides) {
  int64_t s = 1;
  for (uint32_t i = 0; i < rank; ++i) {
    const uint32_t k = row_major ? rank - 1 - i : i;
    strides[k] = s;
    s = static_cast<int64_t>(static_cast<uint64_t>(s) * shape[k]);
  }
}

}  // namespace

TensorDescriptor StoredGridDescriptor(const TensorDescriptor& d,
                                      const Plan& plan) {
  TensorDescriptor stored = d;
  if (plan.scheme == Scheme::kPerBlockAffine || plan.scheme == Scheme::kNf4) {
    stored.shape[plan.axis] = plan.padded_axis_len;
  }
  return stored;
}

absl::StatusOr<std::unique_ptr<StorageWalk>> StorageWalk::Create(
    const TensorDescriptor& d, const Plan& plan) {
  std::unique_ptr<StorageWalk> w(new StorageWalk());
  const absl::Status s = w->Init(d, plan);
  if (!s.ok()) return s;
  return w;
}

void StorageWalk::AddDigit(uint64_t extent, int64_t stride, uint32_t dim,
                           uint32_t level, uint64_t weight) {
  if (extent <= 1) return;
  Digit g;
  g.extent = extent;
  g.step = stride;
  g.dim = dim;
  g.level = level;
  g.weight = static_cast<int64_t>(weight);
  digits_[digit_count_++] = g;
}

absl::Status StorageWalk::Init(const TensorDescriptor& d, const Plan& plan) {
  const TensorDescriptor stored = StoredGridDescriptor(d, plan);
  // The addresser checks that every stored element lies in buffer 0 (and
  // the Morton bits, Hilbert order); the walk relies on it.
  absl::StatusOr<ElementAddresser> addresser = ElementAddresser::Create(stored);
  if (!addresser.ok()) return addresser.status();
  min_offset_ = addresser->min_offset();
  max_offset_ = addresser->max_offset();

  rank_ = d.rank;
  axis_ = plan.axis;
  for (uint32_t k = 0; k < rank_; ++k) {
    stored_shape_[k] = stored.shape[k];
    empty_ |= stored.shape[k] == 0;
  }
  // Logical row-major strides, and row-major strides over the non-axis
  // dimensions (the block formula's `outer`).
  uint64_t ls = 1, os = 1;
  for (uint32_t k = rank_; k-- > 0;) {
    logical_stride_[k] = ls;
    ls *= d.shape[k];
    if (plan.scheme == Scheme::kPerTensorAffine || k != axis_) {
      outer_stride_[k] = os;
      os *= d.shape[k];
    }
  }
  switch (plan.scheme) {
    case Scheme::kPerTensorAffine:
      axis_len_ = UINT64_MAX;
      break;
    case Scheme::kPerChannelAffine:
      axis_len_ = plan.axis_len;
      param_axis_ = 1;
      break;
    default:
      axis_len_ = plan.axis_len;
      block_shift_ = __builtin_ctzll(plan.block_size);
      blocks_per_axis_ = plan.blocks_per_axis;
      break;
  }
  if (empty_ || rank_ == 0) {
    done_ = empty_;
    return absl::OkStatus();
  }

  const uint8_t tag = d.layout_tag;
  int64_t strides[kMaxRank] = {};
  switch (tag) {
    case layout_tag::kRowMajor:
    case layout_tag::kColumnMajor:
      Contiguous(stored_shape_, rank_, tag == layout_tag::kRowMajor, strides);
      for (uint32_t k = 0; k < rank_; ++k) {
        AddDigit(stored_shape_[k], strides[k], k, 0, 1);
      }
      break;
    case layout_tag::kStrided:
      for (uint32_t k = 0; k < rank_; ++k) {
        AddDigit(stored_shape_[k], d.layout.strides[k], k, 0, 1);
      }
      break;
    case layout_tag::kMorton:
      // Bit b of index k is code bit b·rank + k (layouts/morton.md).
      for (uint32_t k = 0; k < rank_; ++k) {
        const uint32_t bits = BitLength(stored_shape_[k] - 1);
        for (uint32_t b = 0; b < bits; ++b) {
          AddDigit(2, int64_t{1} << (b * rank_ + k), k, 0, uint64_t{1} << b);
        }
        if (stored_shape_[k] != uint64_t{1} << bits) {
          slot_dim_[slot_count_] = k;
          slot_level_[slot_count_] = 0;
          slot_limit_[slot_count_++] = stored_shape_[k];
        }
      }
      break;
    case layout_tag::kTiled: {
      // layouts/tiled.md § Element Address; a nested level's index space is
      // the enclosing tile (as ElementAddresser).
      const uint32_t depth = d.layout.tiled_depth;
      uint64_t extent[kMaxRank];
      std::copy(stored_shape_, stored_shape_ + rank_, extent);
      for (uint32_t l = 0; l < depth; ++l) {
        const TiledLevel& t = d.layout.tiled[l];
        uint64_t grid[kMaxRank];
        uint64_t tile_elements = 1;
        for (uint32_t k = 0; k < rank_; ++k) {
          const uint64_t tile = t.tile_shape[k];
          grid[k] = extent[k] / tile + (extent[k] % tile != 0);
          tile_elements *= tile;
          if (grid[k] * tile > extent[k]) {  // a partial tile: holes
            slot_dim_[slot_count_] = k;
            slot_level_[slot_count_] = l;
            slot_limit_[slot_count_++] = extent[k];
          }
        }
        int64_t outer[kMaxRank];
        if (t.outer_layout == layout_tag::kStrided) {
          std::copy(t.outer_strides, t.outer_strides + rank_, outer);
        } else {
          Contiguous(grid, rank_, t.outer_layout == layout_tag::kRowMajor,
                     outer);
        }
        for (uint32_t k = 0; k < rank_; ++k) {
          AddDigit(grid[k],
                   static_cast<int64_t>(static_cast<uint64_t>(outer[k]) *
                                        tile_elements),
                   k, l, t.tile_shape[k]);
        }
        std::copy(t.tile_shape, t.tile_shape + rank_, extent);
        if (t.inner_layout == layout_tag::kTiled) continue;
        int64_t inner[kMaxRank];
        if (t.inner_layout == layout_tag::kStrided) {
          std::copy(t.inner_strides, t.inner_strides + rank_, inner);
        } else {
          Contiguous(extent, rank_, t.inner_layout == layout_tag::kRowMajor,
                     inner);
        }
        for (uint32_t k = 0; k < rank_; ++k) {
          AddDigit(extent[k], inner[k], k, depth, 1);
        }
        break;
      }
      break;
    }
    case layout_tag::kHilbert:
      hilbert_ = true;
      hilbert_order_ = d.layout.hilbert_order;
      hilbert_end_ = uint64_t{1} << (hilbert_order_ * rank_);
      break;
    default:
      return absl::UnimplementedError(
          absl::StrCat("layout ", LayoutName(tag), " is not dense"));
  }
  check_holes_ = slot_count_ > 0;
  // A digit value whose own term already passes a limit its coordinate
  // must stay below starts only holes (a tile larger than the shape, say,
  // or a huge tile whose inner strides are 0): cut the digit's extent there,
  // so the holes the walk visits stay within a small factor of the grid.
  uint32_t kept = 0;
  for (uint32_t j = 0; j < digit_count_; ++j) {
    Digit g = digits_[j];
    for (uint32_t s = 0; s < slot_count_; ++s) {
      if (slot_dim_[s] == g.dim && slot_level_[s] <= g.level) {
        const uint64_t w = static_cast<uint64_t>(g.weight);
        g.extent = std::min(g.extent, (slot_limit_[s] + w - 1) / w);
      }
    }
    if (g.extent > 1) digits_[kept++] = g;
  }
  digit_count_ = kept;
  simple_ = !check_holes_ && digit_count_ > 0;

  // Innermost digit first: ascending |stride|; a negative stride is walked
  // backwards from its last index.
  std::stable_sort(digits_, digits_ + digit_count_,
                   [](const Digit& a, const Digit& b) {
                     return Magnitude(a.step) < Magnitude(b.step);
                   });
  start_offset_ = 0;
  int64_t start_coord[kMaxRank] = {};
  uint64_t span = 0;
  for (uint32_t j = 0; j < digit_count_; ++j) {
    Digit& g = digits_[j];
    const int64_t last = static_cast<int64_t>(g.extent - 1);
    if (g.step < 0) {
      start_offset_ += last * g.step;
      start_coord[g.dim] += last * g.weight;
      // The start partial sums of levels <= this digit's.
      for (uint32_t l = 0; l <= g.level; ++l) {
        start_part_[g.dim][l] += static_cast<uint64_t>(last * g.weight);
      }
      g.step = -g.step;
      g.weight = -g.weight;
    }
    // Nested: a step of this digit passes everything inside it.
    if (static_cast<uint64_t>(g.step) < span) ordered_ = false;
    span += static_cast<uint64_t>(g.step) * (g.extent - 1);
    g.d_logical = g.weight * static_cast<int64_t>(logical_stride_[g.dim]);
    g.d_outer = g.dim == axis_ && plan.scheme != Scheme::kPerTensorAffine
                    ? 0
                    : g.weight * static_cast<int64_t>(outer_stride_[g.dim]);
    g.d_axis = g.dim == axis_ && plan.scheme != Scheme::kPerTensorAffine
                   ? g.weight
                   : 0;
  }
  for (uint32_t k = 0; k < rank_; ++k) {
    const uint64_t c = static_cast<uint64_t>(start_coord[k]);
    start_logical_ += c * logical_stride_[k];
    if (k == axis_) {
      start_axis_ = c;
    } else {
      start_outer_ += c * outer_stride_[k];
    }
  }
  if (plan.scheme == Scheme::kPerTensorAffine) start_axis_ = 0;
  Reset();
  return absl::OkStatus();
}

void StorageWalk::Reset() {
  done_ = empty_;
  if (done_) return;
  if (hilbert_) {
    hilbert_h_ = 0;
    LoadHilbert();
    return;
  }
  std::fill(value_, value_ + digit_count_, 0);
  offset_ = start_offset_;
  logical_ = start_logical_;
  outer_ = start_outer_;
  axis_pos_ = start_axis_;
  for (uint32_t k = 0; k < rank_; ++k) {
    std::copy(start_part_[k], start_part_[k] + kMaxTiledDepth + 1, part_[k]);
  }
  if (!Valid()) Next();
}

void StorageWalk::LoadHilbert() {
  uint64_t c[kMaxRank];
  HilbertCoordinates(hilbert_h_, rank_, hilbert_order_, c);
  offset_ = static_cast<int64_t>(hilbert_h_);
  logical_ = 0;
  outer_ = 0;
  axis_pos_ = 0;
  for (uint32_t k = 0; k < rank_; ++k) {
    logical_ += c[k] * logical_stride_[k];
    if (k == axis_) {
      axis_pos_ = c[k];
    } else {
      outer_ += c[k] * outer_stride_[k];
    }
  }
  if (param_axis_ == 0 && block_shift_ < 0) axis_pos_ = 0;  // per-tensor
}

void StorageWalk::NextSlow() {
  Step();
  while (!done_ && !Valid()) Step();
}

void StorageWalk::Step() {
  if (hilbert_) {
    if (++hilbert_h_ == hilbert_end_) {
      done_ = true;
      return;
    }
    LoadHilbert();
    return;
  }
  for (uint32_t j = 0; j < digit_count_; ++j) {
    const Digit& g = digits_[j];
    int64_t times = 1;
    if (++value_[j] == g.extent) {
      value_[j] = 0;
      times = 1 - static_cast<int64_t>(g.extent);
    }
    offset_ += times * g.step;
    logical_ += static_cast<uint64_t>(times * g.d_logical);
    outer_ += static_cast<uint64_t>(times * g.d_outer);
    axis_pos_ += static_cast<uint64_t>(times * g.d_axis);
    if (check_holes_) {
      for (uint32_t l = 0; l <= g.level && l <= kMaxTiledDepth; ++l) {
        part_[g.dim][l] += static_cast<uint64_t>(times * g.weight);
      }
    }
    if (times == 1) return;
  }
  done_ = true;
}

bool StorageWalk::Valid() const {
  if (!check_holes_ || done_) return true;
  for (uint32_t s = 0; s < slot_count_; ++s) {
    if (part_[slot_dim_[s]][slot_level_[s]] >= slot_limit_[s]) return false;
  }
  return true;
}

}  // namespace hurray::dequant
