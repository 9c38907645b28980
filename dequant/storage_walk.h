// The elements of a dense quantized tensor in storage order: for layouts
// other than row-major, the streaming Dequantizer receives the data buffer
// front to back and scatters each element it completes to its logical
// position (Dequantizer::ConsumeScattered).
//
// Every dense layout's element offset is a sum of terms over "digits":
// row-major, column-major and strided have one digit per dimension (the
// index, times its stride); tiled has one per dimension and level (the tile
// coordinate, times the tile-grid stride times the elements per tile) plus
// the intra-tile index (times the inner stride); Morton one per bit of each
// index (times 2^(b·rank + k), layouts/morton.md). Visiting the digits as an
// odometer, largest |stride| outermost and negative strides reversed, gives
// non-decreasing offsets whenever each stride is at least the span of the
// digits inside it ("nested"): then the walk is in storage order and a
// streaming reader needs no more than a few carried bytes. Hilbert walks the
// curve index h = 0, 1, ... and maps it back with HilbertCoordinates.
// Odometer positions that are no element (a partial tile past the shape, a
// Morton code past shape[k] - 1, a nested tile's slots past its enclosing
// tile) are holes and are skipped.
//
// The grid walked is the stored grid: shape[axis] rounded up to whole blocks
// for per-block affine and NF4 (RESOLUTIONS.md 2, the layout applies to the
// padded grid); positions with i_axis >= shape[axis] are padding. Each
// element carries its logical row-major index (over the unpadded shape) and
// its parameter index (channel i_axis, or block
// b = outer · ceil(S/K) + i_axis / K with outer the row-major index over the
// non-axis dimensions, RESOLUTIONS.md 3).
//
// A layout whose strides interleave or overlap (strided [3, 3] with strides
// [2, 3], say) has no nested order: the walk still visits every element once,
// but not in storage order (ordered() is false), and the Dequantizer then
// needs the whole data buffer in one piece.
#ifndef HURRAY_DEQUANT_STORAGE_WALK_H_
#define HURRAY_DEQUANT_STORAGE_WALK_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "dequant/plan.h"
#include "parser/addressing.h"
#include "parser/descriptor.h"

namespace hurray::dequant {

// The descriptor of the stored grid: `d` with shape[axis] padded to whole
// blocks for per-block affine and NF4 (unchanged otherwise).
TensorDescriptor StoredGridDescriptor(const TensorDescriptor& d,
                                      const Plan& plan);

class StorageWalk {
 public:
  // `d` is a validated dense descriptor and `plan` its MakePlan. Fails with
  // the ElementAddresser's error when the stored grid does not fit buffer 0
  // (or, for Morton, morton_bits: LAY-MOR-02).
  // (Heap-allocated: it holds the odometer of up to 576 digits.)
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<StorageWalk>> Create(
      const TensorDescriptor& d, const Plan& plan);

  // True when offsets never decrease along the walk.
  bool ordered() const { return ordered_; }
  // Back to the first element.
  void Reset();

  bool done() const { return done_; }
  // The current element (never a hole): its element offset relative to
  // byte_offset (as ElementAddresser::Offset), whether it is padding, and
  // otherwise its logical row-major index and parameter index.
  int64_t offset() const { return offset_; }
  bool padding() const { return axis_pos_ >= axis_len_; }
  uint64_t logical() const { return logical_; }
  uint64_t param() const {
    return block_shift_ < 0
               ? axis_pos_ * param_axis_
               : outer_ * blocks_per_axis_ + (axis_pos_ >> block_shift_);
  }
  // Moves to the next element (skipping holes); inline along the innermost
  // digit of a layout without holes.
  void Next() {
    if (simple_ && value_[0] + 1 < digits_[0].extent) {
      ++value_[0];
      const Digit& g = digits_[0];
      offset_ += g.step;
      logical_ += static_cast<uint64_t>(g.d_logical);
      outer_ += static_cast<uint64_t>(g.d_outer);
      axis_pos_ += static_cast<uint64_t>(g.d_axis);
      return;
    }
    NextSlow();
  }

  // Lowest and highest offset of any element (the addresser's range).
  int64_t min_offset() const { return min_offset_; }
  int64_t max_offset() const { return max_offset_; }

 private:
  static constexpr uint32_t kMaxDigits = kMaxRank * (kMaxTiledDepth + 1);
  static constexpr uint32_t kMaxSlots = kMaxRank * (kMaxTiledDepth + 1);

  struct Digit {
    uint64_t extent = 0;
    int64_t step = 0;  // offset change per step (>= 0 once oriented)
    int64_t d_logical = 0;
    int64_t d_outer = 0;  // row-major index over the non-axis dimensions
    int64_t d_axis = 0;
    uint32_t dim = 0;
    uint32_t level = 0;  // tiled: 0..depth (depth: the intra-tile digit)
    int64_t weight = 0;  // change of the coordinate on `dim` per step
  };

  StorageWalk() = default;
  [[nodiscard]] absl::Status Init(const TensorDescriptor& d, const Plan& plan);
  void AddDigit(uint64_t extent, int64_t stride, uint32_t dim, uint32_t level,
                uint64_t weight);
  void NextSlow();
  void Step();
  bool Valid() const;
  void LoadHilbert();

  bool ordered_ = true;
  bool done_ = false;
  bool hilbert_ = false;
  bool empty_ = false;
  uint32_t rank_ = 0;
  uint32_t axis_ = 0;
  uint32_t hilbert_order_ = 0;
  uint64_t stored_shape_[kMaxRank] = {};
  uint64_t logical_stride_[kMaxRank] = {};
  uint64_t outer_stride_[kMaxRank] = {};  // 0 on the axis
  uint64_t axis_len_ = 0;    // unpadded shape[axis] (UINT64_MAX: per-tensor)
  uint64_t param_axis_ = 0;  // per-channel: 1; per-tensor: 0
  int block_shift_ = -1;     // log2(block_size) for block schemes
  uint64_t blocks_per_axis_ = 0;
  int64_t min_offset_ = 0;
  int64_t max_offset_ = 0;

  // Odometer, innermost digit first.
  uint32_t digit_count_ = 0;
  Digit digits_[kMaxDigits];
  uint64_t value_[kMaxDigits] = {};
  // Hole checks: coordinate partial sums per (dim, level) against a limit.
  uint32_t slot_count_ = 0;
  uint32_t slot_dim_[kMaxSlots] = {};
  uint32_t slot_level_[kMaxSlots] = {};
  uint64_t slot_limit_[kMaxSlots] = {};
  // Partial coordinate of dim k from levels >= l: part_[k][l].
  uint64_t part_[kMaxRank][kMaxTiledDepth + 1] = {};
  bool check_holes_ = false;
  bool simple_ = false;  // odometer without holes: Next's inline step

  // Start state and current state.
  int64_t start_offset_ = 0;
  uint64_t start_logical_ = 0, start_outer_ = 0, start_axis_ = 0;
  uint64_t start_part_[kMaxRank][kMaxTiledDepth + 1] = {};
  int64_t offset_ = 0;
  uint64_t logical_ = 0;
  uint64_t outer_ = 0;
  uint64_t axis_pos_ = 0;
  uint64_t hilbert_h_ = 0;
  uint64_t hilbert_end_ = 0;
};

}  // namespace hurray::dequant

#endif  // HURRAY_DEQUANT_STORAGE_WALK_H_
