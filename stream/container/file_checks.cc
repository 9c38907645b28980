#include "stream/container/file_checks.h"

#include <algorithm>

#include "parser/wire.h"

namespace hurray::stream::container {
namespace {

struct Range {
  uint64_t start;
  uint64_t end;
  uint64_t at;  // offset reported when this range overlaps an earlier one
};

}  // namespace

Rejection CheckEntry(const IndexEntry& e, const TensorExtent& x,
                     const FileGeometry& g, Mode mode) {
  const uint64_t descriptor_end = e.descriptor_offset + e.descriptor_length;
  if (x.descriptor_length != e.descriptor_length) {
    return {Rule::kFileIdx08, e.descriptor_length_at(),
            "descriptor_length differs from the descriptor's own"};
  }
  if (x.buffer_count >= 1 &&
      e.data_offset % g.header.data_buffer_alignment != 0) {
    return {Rule::kFileIdx10, e.data_offset_at(),
            "data_offset is not a multiple of data_buffer_alignment"};
  }
  if (e.data_offset < descriptor_end) {
    return {Rule::kFileIdx11, e.data_offset_at(),
            "data_offset is inside the tensor's descriptor"};
  }
  if (x.composite_head && e.data_length != 0) {
    return {Rule::kFileReg03, e.data_length_at(),
            "a composite head's data_length is not 0"};
  }
  if (e.data_length != x.data_length) {
    return {Rule::kFileIdx12, e.data_length_at(),
            "data_length differs from the buffers and their padding"};
  }
  // RESOLUTIONS.md 12: an empty range touching the KV section is fine.
  uint64_t data_end;
  if (e.data_offset > g.region_limit ||
      !wire::CheckedAdd(e.data_offset, e.data_length, &data_end) ||
      data_end > g.region_limit) {
    return {Rule::kFileIdx13, e.data_length_at(),
            "the data range reaches the KV section, index or trailer"};
  }
  if (x.buffer_count >= 1 && e.data_offset != x.data_offset &&
      Applies(Rule::kFileIdx15, mode)) {
    return {Rule::kFileIdx15, e.data_offset_at(),
            "data_offset is not where the tensor's buffers start"};
  }
  return kAccepted;
}

Rejection CheckEntryPlacement(const IndexEntry& e, const FileGeometry& g) {
  // file-format.md § Descriptor Placement; the descriptor lies inside the
  // tensor region (all later arithmetic on it is then overflow-free).
  uint64_t descriptor_end;
  if (e.descriptor_offset < g.header.first_descriptor_offset ||
      e.descriptor_offset % 8 != 0 ||
      !wire::CheckedAdd(e.descriptor_offset, e.descriptor_length,
                        &descriptor_end) ||
      descriptor_end > g.region_limit) {
    return {Rule::kFileIdx09, e.descriptor_offset_at(),
            "descriptor_offset is misplaced"};
  }
  return kAccepted;
}

// FILE-IDX-14: no two entries' descriptor or data ranges overlap.
Rejection CheckOverlaps(const FileIndex& index) {
  std::vector<Range> ranges;
  ranges.reserve(2 * index.size());
  for (const IndexEntry& e : index.entries()) {
    ranges.push_back({e.descriptor_offset,
                      e.descriptor_offset + e.descriptor_length,
                      e.descriptor_offset_at()});
    if (e.data_length > 0) {
      ranges.push_back(
          {e.data_offset, e.data_offset + e.data_length, e.data_offset_at()});
    }
  }
  std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) {
    return a.start != b.start ? a.start < b.start : a.at < b.at;
  });
  uint64_t reach = 0;
  for (size_t i = 0; i < ranges.size(); ++i) {
    if (i > 0 && ranges[i].start < reach) {
      return {Rule::kFileIdx14, ranges[i].at,
              "two index entries overlap in the file"};
    }
    reach = std::max(reach, ranges[i].end);
  }
  return kAccepted;
}

const TensorExtent* FindExtent(absl::Span<const TensorExtent> walked,
                               uint64_t descriptor_offset) {
  auto it = std::lower_bound(walked.begin(), walked.end(), descriptor_offset,
                             [](const TensorExtent& x, uint64_t off) {
                               return x.descriptor_offset < off;
                             });
  return it != walked.end() && it->descriptor_offset == descriptor_offset
             ? &*it
             : nullptr;
}

Rejection CheckIndexEntries(const FileIndex& index, const FileGeometry& g,
                            Mode mode, ExtentLookup lookup,
                            std::vector<const TensorExtent*>* extent_of_entry) {
  extent_of_entry->assign(index.size(), nullptr);
  for (size_t i = 0; i < index.size(); ++i) {
    const IndexEntry& e = index.entries()[i];
    const Rejection placed = CheckEntryPlacement(e, g);
    if (!placed.ok()) return placed;
    const TensorExtent* x = nullptr;
    const Rejection bad = lookup(e, &x);
    if (!bad.ok()) return bad;
    if (x == nullptr) {
      if (Applies(Rule::kFileIdx15, mode)) {
        return {Rule::kFileIdx15, e.descriptor_offset_at(),
                "no tensor of the region starts at descriptor_offset"};
      }
      continue;
    }
    const Rejection r = CheckEntry(e, *x, g, mode);
    if (!r.ok()) return r;
    (*extent_of_entry)[i] = x;
  }
  if (Applies(Rule::kFileIdx14, mode)) return CheckOverlaps(index);
  return kAccepted;
}

Rejection CheckWalk(absl::Span<const TensorExtent> walked, uint64_t region_end,
                    absl::Span<const TensorExtent* const> extent_of_entry,
                    const FileGeometry& g, Mode mode) {
  if (!Applies(Rule::kFileIdx15, mode)) return kAccepted;
  std::vector<bool> indexed(walked.size(), false);
  for (const TensorExtent* x : extent_of_entry) {
    if (x != nullptr) indexed[static_cast<size_t>(x - walked.data())] = true;
  }
  for (size_t i = 0; i < walked.size(); ++i) {
    if (!indexed[i]) {
      return {Rule::kFileIdx15, walked[i].descriptor_offset,
              "a tensor of the region has no index entry"};
    }
  }
  if (region_end != g.region_limit) {
    return {Rule::kFileIdx15, region_end,
            "the tensor region does not end where the KV or index starts"};
  }
  // file-format.md § Sequential Reader 4: a reader iterating
  // tensor_count_hint tensors must land on a section boundary.
  if (g.header.tensor_count_hint != kUnknownTensorCount &&
      g.header.tensor_count_hint != walked.size()) {
    return {Rule::kFileIdx15, header_at::kTensorCountHint,
            "tensor_count_hint does not count the tensors"};
  }
  return kAccepted;
}

}  // namespace hurray::stream::container
