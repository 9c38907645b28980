// Element addressing of the dense layouts: logical index → element offset in
// buffer 0 (memory-layout.md § Element Address Computation), for row-major,
// column-major, strided, tiled (nested, strided outer and inner), Morton and
// Hilbert (layouts/*.md § Element Address / Index Computation).
//
// An ElementAddresser is built once from a descriptor that passed the
// validator: strides, tile strides and Morton bit masks are precomputed, and
// nothing allocates afterwards. Offset() is the element offset relative to
// the element at byte_offset (negative with negative strides); BitOffset()
// the bit position from the start of buffer 0, for every element width
// including the sub-byte types (LSB-first packing) and the 6-bit types, whose
// 4-in-3-bytes groups are the same LSB-first bit stream
// (element-types.md § 6-bit packing).
//
// RowMajorWalker visits the elements in logical row-major order and gives
// each one's offset incrementally: every layout but Hilbert is a sum of one
// term per dimension, so a step updates one term (a stride, a Morton masked
// increment, or a tile-boundary recomputation); Hilbert recomputes the curve
// index (O(rank·order)) per element.
#ifndef HURRAY_PARSER_ADDRESSING_H_
#define HURRAY_PARSER_ADDRESSING_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "parser/descriptor.h"

namespace hurray {

class ElementAddresser {
 public:
  // Fails (InvalidArgument) for a non-dense layout, a dynamic dimension, an
  // element type that cannot be sized, or offsets that would leave int64 or
  // buffer 0 (a rejection status with the layout's BUF-SZ rule: a safety net
  // behind the validator, which normally rejects those first).
  [[nodiscard]] static absl::StatusOr<ElementAddresser> Create(
      const TensorDescriptor& d);

  // Element offset of `index` (rank() entries, each below its dimension)
  // relative to byte_offset.
  int64_t Offset(absl::Span<const uint64_t> index) const;
  // Bit position of the element's first (least significant) bit, from the
  // start of buffer 0.
  uint64_t BitOffset(absl::Span<const uint64_t> index) const {
    return BitOffsetOf(Offset(index));
  }
  uint64_t BitOffsetOf(int64_t offset) const {
    return 8 * byte_offset_ + static_cast<uint64_t>(offset) * element_bits_;
  }
  // Byte position from the start of buffer 0 (whole-byte types).
  uint64_t ByteOffset(absl::Span<const uint64_t> index) const {
    return BitOffset(index) / 8;
  }
  bool Contains(absl::Span<const uint64_t> index) const;

  uint32_t rank() const { return rank_; }
  absl::Span<const uint64_t> shape() const { return {shape_, rank_}; }
  uint32_t element_bits() const { return element_bits_; }
  uint64_t byte_offset() const { return byte_offset_; }
  uint8_t layout_tag() const { return layout_tag_; }
  bool empty() const { return empty_; }
  // Range of offsets the valid indices can reach (a superset for tiled:
  // the whole tile grid, as the validator sizes it).
  int64_t min_offset() const { return min_offset_; }
  int64_t max_offset() const { return max_offset_; }

 private:
  friend class RowMajorWalker;
  enum class Kind : uint8_t { kAffine, kTiled, kMorton, kHilbert };
  struct Level {  // one tiled level, strides in elements
    uint64_t tile[kMaxRank];
    int64_t outer[kMaxRank];  // tile-grid stride × elements per tile
    int64_t inner[kMaxRank];  // deepest level only
  };

  ElementAddresser() = default;
  [[nodiscard]] absl::Status Init(const TensorDescriptor& d);
  // Tile strides, and the offset range of the whole tile grid.
  [[nodiscard]] absl::Status InitTiled(const TensorDescriptor& d, __int128* min,
                                       __int128* max);
  // The term of dimension k for coordinate x (every kind but Hilbert).
  int64_t Term(uint32_t k, uint64_t x) const;
  // Increments x along dimension k keep the term's slope for this many more
  // steps (tiled: up to the next tile boundary).
  uint64_t TiledRun(uint32_t k, uint64_t x) const;
  int64_t HilbertOffset(absl::Span<const uint64_t> index) const;

  Kind kind_ = Kind::kAffine;
  uint8_t layout_tag_ = 0;
  uint32_t rank_ = 0;
  uint32_t element_bits_ = 0;
  uint32_t depth_ = 0;  // tiled levels
  uint32_t hilbert_order_ = 0;
  bool empty_ = false;
  uint64_t byte_offset_ = 0;
  int64_t min_offset_ = 0;
  int64_t max_offset_ = 0;
  uint64_t shape_[kMaxRank] = {};
  int64_t stride_[kMaxRank] = {};  // affine; tiled: the deepest inner stride
  uint64_t mask_[kMaxRank] = {};   // Morton: the code bits of dimension k
  Level levels_[kMaxTiledDepth] = {};
};

// Logical row-major order over an addresser's index space.
class RowMajorWalker {
 public:
  explicit RowMajorWalker(const ElementAddresser& a);

  bool done() const { return done_; }
  // The current element: its offset (as ElementAddresser::Offset) and index.
  int64_t offset() const { return offset_; }
  absl::Span<const uint64_t> index() const { return {index_, a_->rank_}; }
  // Moves to the next element; inline along the last dimension.
  void Next() {
    using Kind = ElementAddresser::Kind;
    const uint32_t k = last_;
    if (!done_ && a_->rank_ > 0 && index_[k] + 1 < last_extent_) {
      switch (kind_) {
        case Kind::kAffine:
          ++index_[k];
          term_[k] += last_stride_;
          offset_ += last_stride_;
          return;
        case Kind::kMorton: {
          // The next code on the dimension's bits: the other bits set to 1
          // carry through.
          ++index_[k];
          const int64_t t = static_cast<int64_t>(
              ((static_cast<uint64_t>(term_[k]) | ~last_mask_) + 1) &
              last_mask_);
          offset_ += t - term_[k];
          term_[k] = t;
          return;
        }
        case Kind::kTiled:
          if (run_[k] == 0) break;
          ++index_[k];
          --run_[k];
          term_[k] += last_stride_;
          offset_ += last_stride_;
          return;
        case Kind::kHilbert:
          break;
      }
    }
    NextSlow();
  }
  // Writes the offsets of the next out.size() elements (fewer at the end)
  // and moves past them; returns how many were written.
  size_t Fill(absl::Span<int64_t> out);

 private:
  void NextSlow();
  // The term of dimension k after index_[k] was incremented.
  int64_t Step(uint32_t k);

  const ElementAddresser* a_;
  ElementAddresser::Kind kind_;
  uint32_t last_ = 0;  // the last dimension, its extent, stride and mask
  uint64_t last_extent_ = 0;
  int64_t last_stride_ = 0;
  uint64_t last_mask_ = 0;
  bool done_ = false;
  int64_t offset_ = 0;
  uint64_t index_[kMaxRank] = {};
  int64_t term_[kMaxRank] = {};
  uint64_t run_[kMaxRank] = {};  // tiled: steps left at the current slope
};

// The normative Hilbert mapping (layouts/hilbert.md § CoordsToHilbert,
// Skilling 2004): the curve index of `coords` (rank entries below 2^order),
// for 2 ≤ rank ≤ 64, order ≥ 1 and rank·order ≤ 63.
uint64_t HilbertIndex(const uint64_t* coords, uint32_t rank, uint32_t order);
// Its inverse (§ HilbertToCoords): writes rank coordinates of curve index h.
void HilbertCoordinates(uint64_t h, uint32_t rank, uint32_t order,
                        uint64_t* coords);

}  // namespace hurray

#endif  // HURRAY_PARSER_ADDRESSING_H_
