// FindOverlap: is any pair of axis-aligned integer boxes overlapping? Used
// for the partition non-overlap rule (layouts/composite.md § Partition,
// CMP-CLS-01) with a bounded amount of work (REJECT-RULES.md §5: "sort/sweep
// or cap N; budget the work").
//
// Boxes are half-open, [lo, hi) per dimension, laid out in `words` as
// 2·rank+1 words each: a header word the caller uses freely, lo[0..rank),
// hi[0..rank). Two boxes overlap when they share an index: max(lo) < min(hi)
// in every dimension (an empty box overlaps nothing).
//
// The sweep runs along the dimension that cuts the fewest boxes (the smallest
// Σ extent_k / shape_k, the average number of boxes a hyperplane across
// dimension k meets): boxes sorted by lo along it, each compared with the
// boxes still active. A partition split along one or two dimensions costs
// O(n log n) plus n × (boxes per slab) comparisons; the total is capped by
// `budget`.
#ifndef HURRAY_PARSER_BOX_OVERLAP_H_
#define HURRAY_PARSER_BOX_OVERLAP_H_

#include <cstdint>
#include <vector>

namespace hurray {

enum class [[nodiscard]] OverlapResult : uint8_t{kNone, kFound, kOverBudget};

// `shape` is the enclosing index space (every box lies inside it). `order`
// and `active` are scratch with capacity for `count` entries (reserved by the
// caller: nothing is allocated when they are). On kFound, *first and *second
// are the box numbers (0-based, in storage order) of an overlapping pair,
// *first < *second.
OverlapResult FindOverlap(const uint64_t* words, uint32_t count, uint32_t rank,
                          const uint64_t* shape, uint64_t budget,
                          std::vector<uint32_t>* order,
                          std::vector<uint32_t>* active, uint32_t* first,
                          uint32_t* second);

}  // namespace hurray

#endif  // HURRAY_PARSER_BOX_OVERLAP_H_
