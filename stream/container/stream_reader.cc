#include "stream/container/stream_reader.h"

#include <vector>

namespace hurray::stream::container {

StreamReader::StreamReader(const StreamOptions& options, TensorSink* sink,
                           uint64_t start)
    : walker_(options.parse, options.limits, Framing(), start, sink) {}

StreamState StreamReader::state() const { return walker_.state(); }

StreamState StreamReader::Feed(absl::Span<const uint8_t> chunk) {
  // A bare stream never ends early: all of `chunk` is taken, or rejected.
  return walker_.Feed(chunk).state;
}

StreamState StreamReader::Finish() {
  if (walker_.state() == WalkState::kNeedMore &&
      walker_.Finish() == WalkState::kDone) {
    return walker_.EndOfStream(walker_.position());
  }
  return state();
}

StreamState StreamReader::FailSource() {
  return walker_.Fail(
      Rejection{Rule::kStreamIo, walker_.position(), "the byte source failed"});
}

Rejection ReadStream(std::istream& in, const StreamOptions& options,
                     TensorSink* sink, size_t chunk_size) {
  StreamReader reader(options, sink);
  std::vector<char> buffer(chunk_size == 0 ? 1 : chunk_size);
  StreamState state = reader.state();
  while (state == StreamState::kNeedMore) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    const std::streamsize got = in.gcount();
    if (got > 0) {
      state = reader.Feed(
          absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(buffer.data()),
                              static_cast<size_t>(got)));
    }
    if (in.bad()) {
      state = reader.FailSource();
    } else if (in.eof()) {
      state = reader.Finish();
    } else if (in.fail()) {
      state = reader.FailSource();
    }
  }
  return reader.rejection();
}

Rejection ReadStream(absl::Span<const uint8_t> bytes,
                     const StreamOptions& options, TensorSink* sink) {
  StreamReader reader(options, sink);
  StreamState state = reader.Feed(bytes);
  if (state == StreamState::kNeedMore) state = reader.Finish();
  return state == StreamState::kRejected ? reader.rejection() : kAccepted;
}

}  // namespace hurray::stream::container
