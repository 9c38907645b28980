#include "parser/segment_order.h"

namespace hurray {

void SegmentOrderCheck::Pop() {
  head_ = (head_ + 1) % capacity_;
  if (--size_ == 0) {
    head_ = 0;
    holds_ = Holds::kNothing;
  }
}

bool SegmentOrderCheck::Push(uint64_t v, Holds kind) {
  if (size_ == capacity_) return false;
  window_[(head_ + size_) % capacity_] = v;
  ++size_;
  holds_ = kind;
  return true;
}

SegmentOrderCheck::Step SegmentOrderCheck::Full(bool may_stall) {
  if (may_stall) return Step::kStall;
  skipped_ = true;
  size_ = 0;
  head_ = 0;
  holds_ = Holds::kNothing;
  return Step::kOk;
}

SegmentOrderCheck::Step SegmentOrderCheck::Violation(uint64_t position) {
  violation_ = position;
  return Step::kViolation;
}

SegmentOrderCheck::Step SegmentOrderCheck::OfferStart(uint64_t start,
                                                      bool may_stall) {
  if (skipped_) return Step::kOk;
  if (holds_ == Holds::kDescents) {
    // Every start seen before this one was below the queued descents, and
    // every later start is ≥ this one: a queued descent below it is no start.
    if (Front() < start) return Violation(Front());
    if (Front() == start) Pop();
    return Step::kOk;  // a start below every pending descent is not needed
  }
  // Descents sit at positions next_position_ … coordinates_ − 1.
  if (start < next_position_ || start >= coordinates_) return Step::kOk;
  if (size_ > 0 && Back() == start) return Step::kOk;  // an empty segment
  if (!Push(start, Holds::kStarts)) return Full(may_stall);
  return Step::kOk;
}

SegmentOrderCheck::Step SegmentOrderCheck::OfferCoordinate(uint64_t value,
                                                           bool may_stall) {
  const uint64_t position = next_position_;
  const bool descent = position > 0 && value <= previous_;
  if (descent && !skipped_) {
    bool matched = false;
    if (holds_ == Holds::kStarts) {
      // Starts below this position can no longer match anything.
      while (size_ > 0 && Front() < position) Pop();
      if (size_ > 0) {
        if (Front() != position) return Violation(position);
        Pop();
        matched = true;
      }
    }
    if (!matched) {
      if (starts_ended_) return Violation(position);
      if (!Push(position, Holds::kDescents)) {
        const Step step = Full(may_stall);
        if (step == Step::kStall) return step;
      }
    }
  }
  previous_ = value;
  next_position_ = position + 1;
  return Step::kOk;
}

SegmentOrderCheck::Step SegmentOrderCheck::EndStarts() {
  starts_ended_ = true;
  if (!skipped_ && holds_ == Holds::kDescents) return Violation(Front());
  return Step::kOk;
}

}  // namespace hurray
