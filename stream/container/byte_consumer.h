// ByteConsumer: what the loader (stream/ingest/loader.h) drives, whatever the
// framing. Bytes go in as they arrive, in chunks of any size; for a network
// peer the consumer also has bytes to send back (hello, requests, pongs),
// which the loader writes to the same connection.
//
// Adapters exist for bare streams (StreamReader), .hrry files
// (HrryForwardReader) and the network client session (NetClientSession);
// each reports its events to a TensorSink.
//
// Threading: a consumer is used from one thread at a time.
#ifndef HURRAY_STREAM_CONTAINER_BYTE_CONSUMER_H_
#define HURRAY_STREAM_CONTAINER_BYTE_CONSUMER_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace hurray::stream::container {

class ByteConsumer {
 public:
  virtual ~ByteConsumer() = default;

  // Takes all of `chunk` unless the input is rejected; a rejection carries
  // the rule id and byte offset (rules.h ToStatus). Once rejected, every
  // later call returns the same status.
  [[nodiscard]] virtual absl::Status Feed(absl::Span<const uint8_t> chunk) = 0;
  // The input ended cleanly (EOF, peer closed).
  [[nodiscard]] virtual absl::Status Finish() = 0;
  // The byte source failed (I/O error, timeout, cancellation): STREAM-IO at
  // the current offset, `why` in the message.
  [[nodiscard]] virtual absl::Status FailSource(absl::string_view why) = 0;

  // Bytes consumed so far.
  virtual uint64_t position() const = 0;

  // Bytes to send to the peer; empty for files and pipes. The view stays
  // valid until ConsumeOutput() or the next Feed().
  virtual absl::Span<const uint8_t> PendingOutput() const { return {}; }
  virtual void ConsumeOutput(size_t /*n*/) {}
  // True once the consumer needs no more input although the source has not
  // ended (a network client that received every tensor it asked for).
  virtual bool Satisfied() const { return false; }
  // Tensors whose bytes all arrived and passed, for progress reports.
  virtual uint64_t tensors_completed() const { return 0; }
};

}  // namespace hurray::stream::container

#endif  // HURRAY_STREAM_CONTAINER_BYTE_CONSUMER_H_
