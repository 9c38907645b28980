// A pass over a tensor's chunks in two stages: each chunk's output bytes are
// made (read from the source and rewritten) on a worker thread while the
// caller's thread puts the chunks made before it to the sink, so that the
// CPU time of the rewrite overlaps the kernel's time in the reads and
// writes (issue 48: the K-quant rewrite against `cp`).
#ifndef HURRAY_STREAM_CONVERT_CHUNK_PIPELINE_H_
#define HURRAY_STREAM_CONVERT_CHUNK_PIPELINE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/types/span.h"

namespace hurray::stream::convert {

// Fills `*out` with chunk i's output bytes (its size set by the call).
using MakeChunk =
    absl::FunctionRef<absl::Status(uint64_t i, std::vector<uint8_t>* out)>;
// Takes chunk i's output bytes, in chunk order.
using PutChunk = absl::FunctionRef<absl::Status(absl::Span<const uint8_t>)>;

// Output chunks made ahead of the one being put, at most: the pipeline
// holds this many output chunks (and `make`'s own input buffer).
inline constexpr size_t kPipelineDepth = 3;

// Runs make(0), put(0), make(1), put(1), ... up to chunk `chunks` - 1 and
// returns the first error in that order, as the serial loop would: put is
// never called for a chunk whose make failed nor after it, and make is not
// called again once a put has failed. With `threaded` and two chunks or
// more, make runs on a worker thread up to kPipelineDepth chunks ahead of
// put (so make may have run for chunks after a failed put, never put);
// make is called in chunk order from one thread either way, and the worker
// has ended when this returns. One chunk runs on the caller's thread:
// its read, rewrite and write depend on each other, so a thread would only
// add its start-up. `scratch` is the serial path's output buffer.
[[nodiscard]] absl::Status RunChunks(uint64_t chunks, bool threaded,
                                     MakeChunk make, PutChunk put,
                                     std::vector<uint8_t>* scratch);

}  // namespace hurray::stream::convert

#endif  // HURRAY_STREAM_CONVERT_CHUNK_PIPELINE_H_
