// The stored elements of a sparse tensor (layouts/coo.md, csr.md, csc.md,
// csf.md) with their logical row-major positions, for writing it dense.
//
// The index buffers are read whole (the ingest sink spools them). The
// validator checks the layouts' invariants in strict mode; in permissive
// mode they may be broken, so every coordinate and pointer is checked here
// again: an index out of bounds or a pointer past its array is an error,
// never a read or write out of range.
#ifndef HURRAY_STREAM_INGEST_OUTPUT_SPARSE_WALK_H_
#define HURRAY_STREAM_INGEST_OUTPUT_SPARSE_WALK_H_

#include <cstdint>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/types/span.h"
#include "parser/descriptor.h"

namespace hurray::stream::ingest {

inline bool IsSparseLayout(uint8_t tag) {
  return tag == layout_tag::kCoo || tag == layout_tag::kCsr ||
         tag == layout_tag::kCsc || tag == layout_tag::kCsf;
}

// Calls place(value_index, row_major_index) for every stored element;
// `buffers[i]` is buffer i of `d` (buffer 0, the values, is not read).
// Errors: InvalidArgument for an index or pointer out of range.
[[nodiscard]] absl::Status ForEachSparseElement(
    const TensorDescriptor& d,
    absl::Span<const absl::Span<const uint8_t>> buffers,
    absl::FunctionRef<void(uint64_t value, uint64_t position)> place);

}  // namespace hurray::stream::ingest

#endif  // HURRAY_STREAM_INGEST_OUTPUT_SPARSE_WALK_H_
