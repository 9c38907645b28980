#include "parser/box_overlap.h"

#include <algorithm>

namespace hurray {
namespace {

struct Boxes {
  const uint64_t* words;
  uint32_t rank;
  const uint64_t* Lo(uint32_t i) const {
    return words + static_cast<uint64_t>(i) * (2 * rank + 1) + 1;
  }
  const uint64_t* Hi(uint32_t i) const { return Lo(i) + rank; }
  bool Overlap(uint32_t a, uint32_t b) const {
    for (uint32_t k = 0; k < rank; ++k) {
      if (std::max(Lo(a)[k], Lo(b)[k]) >= std::min(Hi(a)[k], Hi(b)[k])) {
        return false;
      }
    }
    return true;
  }
};

// The dimension with the smallest Σ (hi − lo) / shape among those some box
// does not span; rank when every box spans every dimension.
uint32_t SweepDimension(const Boxes& b, uint32_t count, const uint64_t* shape) {
  uint32_t best = b.rank;
  double best_cost = 0;
  for (uint32_t k = 0; k < b.rank; ++k) {
    bool cut = false;
    double cost = 0;
    for (uint32_t i = 0; i < count; ++i) {
      const uint64_t lo = b.Lo(i)[k], hi = b.Hi(i)[k];
      cut |= lo != 0 || hi != shape[k];
      cost += static_cast<double>(hi - lo) / static_cast<double>(shape[k]);
    }
    if (cut && (best == b.rank || cost < best_cost)) {
      best = k;
      best_cost = cost;
    }
  }
  return best;
}

}  // namespace

OverlapResult FindOverlap(const uint64_t* words, uint32_t count, uint32_t rank,
                          const uint64_t* shape, uint64_t budget,
                          std::vector<uint32_t>* order,
                          std::vector<uint32_t>* active, uint32_t* first,
                          uint32_t* second) {
  const Boxes b{words, rank};
  if (count < 2) return OverlapResult::kNone;
  const uint32_t k = SweepDimension(b, count, shape);
  if (k == rank) {  // every box is the whole (non-empty) space
    *first = 0;
    *second = 1;
    return OverlapResult::kFound;
  }
  order->clear();
  for (uint32_t i = 0; i < count; ++i) order->push_back(i);
  std::sort(order->begin(), order->end(), [&](uint32_t x, uint32_t y) {
    return b.Lo(x)[k] != b.Lo(y)[k] ? b.Lo(x)[k] < b.Lo(y)[k] : x < y;
  });
  active->clear();
  uint64_t work = 0;
  for (uint32_t next : *order) {
    const uint64_t at = b.Lo(next)[k];
    // Boxes that end at or before `at` along k meet no later box.
    work += active->size();
    active->erase(std::remove_if(active->begin(), active->end(),
                                 [&](uint32_t a) { return b.Hi(a)[k] <= at; }),
                  active->end());
    for (uint32_t a : *active) {
      if (++work > budget) return OverlapResult::kOverBudget;
      if (b.Overlap(a, next)) {
        *first = std::min(a, next);
        *second = std::max(a, next);
        return OverlapResult::kFound;
      }
    }
    if (work > budget) return OverlapResult::kOverBudget;
    active->push_back(next);
  }
  return OverlapResult::kNone;
}

}  // namespace hurray
