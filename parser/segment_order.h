// SegmentOrderCheck: "coordinates inside one segment are strictly
// increasing" for a compressed index (LAY-CSR-07, LAY-CSC-07, LAY-CSF-09),
// checked on two streams in bounded memory.
//
// A compressed index is a pointer array (row_ptr, col_ptr, pos_L) whose
// entries are segment starts, and a coordinate array (col_indices,
// row_indices, crd_L). Inside a segment coordinates must strictly increase, so
// every *descent* — a position j ≥ 1 with crd[j] ≤ crd[j−1] — must be a
// segment start. The check is therefore "descent positions ⊆ start values",
// two sorted sequences merged like a merge join: only the stream that is ahead
// keeps entries, and only the ones the other stream still has to meet (start
// values not yet passed, or descent positions not yet matched), in a
// fixed-capacity window.
//
// When a stream gets further ahead than the window holds, the caller chooses:
// stall (the entry is refused, the caller feeds the other stream first; used
// by callers with random access to both buffers) or give up (the check is
// marked skipped and keeps no more state; used by one-pass stream readers).
// No order check with memory independent of the data exists for the
// table order of CSR/CSC, where every coordinate arrives before the first
// pointer: deciding "descents ⊆ starts" from one pass over descents then
// starts is a set-inclusion problem, which needs memory linear in the number
// of descents.
//
// The merge relies on the pointer stream being non-decreasing: callers check
// that (LAY-*-06/07) before offering a start.
#ifndef HURRAY_PARSER_SEGMENT_ORDER_H_
#define HURRAY_PARSER_SEGMENT_ORDER_H_

#include <cstdint>

namespace hurray {

class SegmentOrderCheck {
 public:
  enum class Step : uint8_t {
    kOk,         // consumed
    kStall,      // refused: the window is full, feed the other stream first
    kViolation,  // violation() names the coordinate position
  };

  // The window holds `capacity` ≥ 1 entries at `window` (owned by the
  // caller, alive as long as this object); the coordinate stream holds
  // `coordinates` entries.
  SegmentOrderCheck(uint64_t* window, uint32_t capacity, uint64_t coordinates)
      : window_(window), capacity_(capacity), coordinates_(coordinates) {}

  // Next entry of the pointer stream (a segment start, non-decreasing).
  Step OfferStart(uint64_t start, bool may_stall);
  // Next entry of the coordinate stream.
  Step OfferCoordinate(uint64_t value, bool may_stall);
  // The pointer stream has ended: no descent can be matched any more.
  Step EndStarts();

  // Position (entry index in the coordinate stream) of the violation.
  uint64_t violation() const { return violation_; }
  // True once the window overflowed in give-up mode.
  bool skipped() const { return skipped_; }

 private:
  enum class Holds : uint8_t { kNothing, kStarts, kDescents };

  uint64_t Front() const { return window_[head_]; }
  uint64_t Back() const { return window_[(head_ + size_ - 1) % capacity_]; }
  void Pop();
  // False when the window is full.
  bool Push(uint64_t v, Holds kind);
  // Handles a full window: stall, or give up on the check.
  Step Full(bool may_stall);
  Step Violation(uint64_t position);

  uint64_t* window_;
  uint32_t capacity_;
  uint64_t coordinates_;
  uint32_t head_ = 0;
  uint32_t size_ = 0;
  Holds holds_ = Holds::kNothing;
  uint64_t next_position_ = 0;  // coordinates consumed so far
  uint64_t previous_ = 0;       // the last coordinate consumed
  uint64_t violation_ = 0;
  bool starts_ended_ = false;
  bool skipped_ = false;
};

}  // namespace hurray

#endif  // HURRAY_PARSER_SEGMENT_ORDER_H_
