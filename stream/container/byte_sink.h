// Where writers put their bytes: any callable taking a span and returning a
// status, passed by absl::FunctionRef for the duration of a call, or a
// std::ostream through OstreamSink.
#ifndef HURRAY_STREAM_CONTAINER_BYTE_SINK_H_
#define HURRAY_STREAM_CONTAINER_BYTE_SINK_H_

#include <cstdint>
#include <ostream>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/types/span.h"

namespace hurray::stream::container {

using ByteSink = absl::FunctionRef<absl::Status(absl::Span<const uint8_t>)>;

// Writes to a std::ostream; a stream in a failed state is kDataLoss.
class OstreamSink {
 public:
  explicit OstreamSink(std::ostream* out) : out_(out) {}
  [[nodiscard]] absl::Status operator()(absl::Span<const uint8_t> bytes) const;

 private:
  std::ostream* out_;
};

// Writes `count` zero bytes.
[[nodiscard]] absl::Status WriteZeros(ByteSink sink, uint64_t count);

}  // namespace hurray::stream::container

#endif  // HURRAY_STREAM_CONTAINER_BYTE_SINK_H_
