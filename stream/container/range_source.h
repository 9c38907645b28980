// RangeSource: the bytes of one object read by absolute ranges. The partial
// read of a .hrry (stream/ingest/partial_hrry.h) takes one: a mapped file
// (MemoryRangeSource there) or an HTTP(S) server that serves ranges
// (stream/http/http_ranges.h). Here, below both, so that the HTTP client
// does not depend on ingest.
#ifndef HURRAY_STREAM_CONTAINER_RANGE_SOURCE_H_
#define HURRAY_STREAM_CONTAINER_RANGE_SOURCE_H_

#include <cstdint>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/types/span.h"

namespace hurray::stream::container {

// Bytes of one object at absolute offsets.
class RangeSource {
 public:
  using PieceFn = absl::FunctionRef<absl::Status(absl::Span<const uint8_t>)>;
  virtual ~RangeSource() = default;
  virtual uint64_t size() const = 0;
  // Passes the bytes [offset, offset + length) to `feed` in order, in
  // pieces (views valid during the call). Fewer bytes than asked for is an
  // error (reported as STREAM-IO: the source failed); FailedPrecondition
  // (the object changed) is reported as it is; `feed`'s error stops it.
  [[nodiscard]] virtual absl::Status Read(uint64_t offset, uint64_t length,
                                          PieceFn feed) = 0;
};

}  // namespace hurray::stream::container

#endif  // HURRAY_STREAM_CONTAINER_RANGE_SOURCE_H_
