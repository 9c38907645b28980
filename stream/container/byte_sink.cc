#include "stream/container/byte_sink.h"

#include <algorithm>

namespace hurray::stream::container {

absl::Status OstreamSink::operator()(absl::Span<const uint8_t> bytes) const {
  out_->write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
  if (!*out_) return absl::DataLossError("writing to the output stream failed");
  return absl::OkStatus();
}

absl::Status WriteZeros(ByteSink sink, uint64_t count) {
  static constexpr uint8_t kZeros[4096] = {};
  while (count > 0) {
    const uint64_t n = std::min<uint64_t>(count, sizeof(kZeros));
    absl::Status s = sink(absl::MakeConstSpan(kZeros, n));
    if (!s.ok()) return s;
    count -= n;
  }
  return absl::OkStatus();
}

}  // namespace hurray::stream::container
