// Reads the elements of a dense tensor stored in any dense layout
// (column-major, strided, tiled, Morton, Hilbert: parser/addressing.h) in
// logical row-major order, packed as a row-major tensor stores them
// (sub-byte types LSB-first, element-types.md), so that the row-major
// converters and the streaming Dequantizer can take them.
//
// The source is buffer 0 whole: in memory, or a file (the spool the ingest
// sink wrote, the temp copy `hurray dequant` made) read through a
// FileBlockCache of a fixed budget. The output goes out in chunks of whole
// bytes. Memory: the chunk, plus the cache's budget for a file source,
// whatever the tensor's size.
#ifndef HURRAY_STREAM_INGEST_OUTPUT_ROW_MAJOR_GATHER_H_
#define HURRAY_STREAM_INGEST_OUTPUT_ROW_MAJOR_GATHER_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/types/span.h"
#include "parser/descriptor.h"

namespace hurray::stream::ingest {

using GatherEmit = absl::FunctionRef<absl::Status(absl::Span<const uint8_t>)>;

// `d`: a validated dense descriptor (for a quantized tensor, its stored grid:
// dequant::StoredGridDescriptor); `buffer0`: its whole data buffer. Calls
// `emit` with consecutive chunks of about `chunk_bytes` (the last one may be
// shorter; the packed row-major bytes, the last byte's unused bits zero).
// Errors: the addresser's (a layout that does not fit buffer 0), or emit's.
[[nodiscard]] absl::Status GatherRowMajor(const TensorDescriptor& d,
                                          absl::Span<const uint8_t> buffer0,
                                          size_t chunk_bytes, GatherEmit emit);

struct GatherFile {
  int fd = -1;        // borrowed
  uint64_t base = 0;  // where buffer 0 starts in the file
  uint64_t size = 0;  // buffer 0's length
  std::string name;   // for errors
  size_t cache_bytes = size_t{32} << 20;
};

// The same, buffer 0 read from a file through a FileBlockCache of
// `file.cache_bytes`. Its block size follows the walk: the distinct pages
// the first elements touch tell how many places of the file the walk reads
// at once (a column-major matrix: one per column), and the blocks are made
// small enough for all of them to stay cached. A layout that reads more
// places at once than the budget holds (a column-major matrix with more
// columns than the budget has 256-byte blocks) stays correct and bounded
// but reads a block per element. `block_reads`, when given, receives the
// number of block reads (for tests and benchmarks).
[[nodiscard]] absl::Status GatherRowMajorFromFile(
    const TensorDescriptor& d, const GatherFile& file, size_t chunk_bytes,
    GatherEmit emit, uint64_t* block_reads = nullptr);

}  // namespace hurray::stream::ingest

#endif  // HURRAY_STREAM_INGEST_OUTPUT_ROW_MAJOR_GATHER_H_
