// The index of a .hrry file checked against the tensors it names and against
// the walk of the tensor region (file-format.md § Index Encoding, § Descriptor
// Placement, § Data Buffer Placement, § Composite Tensors; REJECT-RULES.md
// §3.13): FILE-IDX-08..15 and FILE-REG-03. Shared by the forward reader and
// the random-access reader so both judge a file the same way.
#ifndef HURRAY_STREAM_CONTAINER_FILE_CHECKS_H_
#define HURRAY_STREAM_CONTAINER_FILE_CHECKS_H_

#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/types/span.h"
#include "parser/rules.h"
#include "stream/container/file_format.h"
#include "stream/container/file_index.h"
#include "stream/container/tensor_walker.h"

namespace hurray::stream::container {

// Finds (or computes) the extent of the tensor whose descriptor starts at
// entry.descriptor_offset. Sets *out to nullptr when no tensor is known
// there; returns a rejection when the descriptor there is invalid.
using ExtentLookup =
    absl::FunctionRef<Rejection(const IndexEntry&, const TensorExtent** out)>;

// Per entry, in index order: FILE-IDX-09 (descriptor placement), then,
// against the extent `lookup` gives, FILE-IDX-08, 10, 11, FILE-REG-03,
// FILE-IDX-12, 13, and 15 (data_offset not where the buffers are); an entry
// naming no known tensor is FILE-IDX-15 (strict). Then FILE-IDX-14 across
// entries (strict). Fills `extent_of_entry` (nullptr where unknown).
Rejection CheckIndexEntries(const FileIndex& index, const FileGeometry& g,
                            Mode mode, ExtentLookup lookup,
                            std::vector<const TensorExtent*>* extent_of_entry);

// FILE-IDX-15 (strict): the walk visited exactly the indexed tensors
// (`extent_of_entry` points into `walked`), ended where the KV or index
// section starts, and tensor_count_hint, when known, counts the tensors.
Rejection CheckWalk(absl::Span<const TensorExtent> walked, uint64_t region_end,
                    absl::Span<const TensorExtent* const> extent_of_entry,
                    const FileGeometry& g, Mode mode);

// The pieces of CheckIndexEntries, for a reader that checks only some
// entries (stream/ingest/partial_hrry.h). FILE-IDX-09: the descriptor lies
// at an 8-byte boundary inside the tensor region.
Rejection CheckEntryPlacement(const IndexEntry& e, const FileGeometry& g);
// One placed entry against the extent of the tensor at its
// descriptor_offset: FILE-IDX-08, 10, 11, FILE-REG-03, FILE-IDX-12, 13, 15.
Rejection CheckEntry(const IndexEntry& e, const TensorExtent& x,
                     const FileGeometry& g, Mode mode);
// FILE-IDX-14 (the caller checks that it applies): no two entries'
// descriptor or data ranges overlap.
Rejection CheckOverlaps(const FileIndex& index);

// Lookup over walked extents (ascending descriptor offsets).
const TensorExtent* FindExtent(absl::Span<const TensorExtent> walked,
                               uint64_t descriptor_offset);

}  // namespace hurray::stream::container

#endif  // HURRAY_STREAM_CONTAINER_FILE_CHECKS_H_
