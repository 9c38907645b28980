// PullReader: a source of bytes that blocks in Read until they arrive, with
// its own deadlines. The loader pulls one into its ring on its reader thread
// (stream/ingest/loader.h, LoadSource::Reader); the body of an HTTP(S)
// response is one (stream/http/http_body.h). Here, below both, so that the
// HTTP client does not depend on the loader.
#ifndef HURRAY_STREAM_CONTAINER_PULL_READER_H_
#define HURRAY_STREAM_CONTAINER_PULL_READER_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace hurray::stream::container {

// A source that blocks in Read until bytes arrive, with its own deadlines
// (every wait of it must have one). Read returns the number of bytes put
// in `into` (> 0), 0 at the end of the input, or an error (the loader
// reports it as STREAM-IO at the current offset with the message).
class PullReader {
 public:
  virtual ~PullReader() = default;
  [[nodiscard]] virtual absl::StatusOr<size_t> Read(
      absl::Span<uint8_t> into) = 0;
  // Thread-safe: a Read in progress (or the next one) fails soon.
  virtual void Interrupt() = 0;
};

}  // namespace hurray::stream::container

#endif  // HURRAY_STREAM_CONTAINER_PULL_READER_H_
