// Reads the elements of a dense tensor stored in any dense layout
// (column-major, strided, tiled, Morton, Hilbert: parser/addressing.h) in
// logical row-major order, packed as a row-major tensor stores them
// (sub-byte types LSB-first, element-types.md), so that the row-major
// converters and the streaming Dequantizer can take them.
//
// The source is buffer 0 whole (in memory, or a mapping of the spool the
// ingest sink wrote); the output goes out in chunks of whole bytes, so the
// memory used is the chunk, whatever the tensor's size.
#ifndef HURRAY_STREAM_INGEST_OUTPUT_ROW_MAJOR_GATHER_H_
#define HURRAY_STREAM_INGEST_OUTPUT_ROW_MAJOR_GATHER_H_

#include <cstddef>
#include <cstdint>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/types/span.h"
#include "parser/descriptor.h"

namespace hurray::stream {

// `d`: a validated dense descriptor (for a quantized tensor, its stored grid:
// dequant::StoredGridDescriptor); `buffer0`: its whole data buffer. Calls
// `emit` with consecutive chunks of about `chunk_bytes` (the last one may be
// shorter; the packed row-major bytes, the last byte's unused bits zero).
// Errors: the addresser's (a layout that does not fit buffer 0), or emit's.
// `release`, when given, is called after every `release_every` elements
// read (a mapped source drops the pages touched so far: the walk may touch
// a page per element, and the kernel maps its neighbours too).
absl::Status GatherRowMajor(
    const TensorDescriptor& d, absl::Span<const uint8_t> buffer0,
    size_t chunk_bytes,
    absl::FunctionRef<absl::Status(absl::Span<const uint8_t>)> emit,
    absl::FunctionRef<void()> release = [] {}, uint64_t release_every = 0);

}  // namespace hurray::stream

#endif  // HURRAY_STREAM_INGEST_OUTPUT_ROW_MAJOR_GATHER_H_
