#include "stream/container/stream_reader.h"

#include <vector>

namespace hurray::stream {

StreamReader::StreamReader(const StreamOptions& options, TensorSink* sink,
                           uint64_t start)
    : sink_(sink),
      walker_(options.parse, options.limits, Framing(), start, sink) {}

StreamState StreamReader::state() const {
  if (!end_status_.ok()) return StreamState::kRejected;
  return walker_.state();
}

StreamState StreamReader::Feed(absl::Span<const uint8_t> chunk) {
  walker_.Feed(chunk);  // a bare stream never ends early: all or rejected
  return state();
}

StreamState StreamReader::Finish() {
  if (walker_.state() == WalkState::kNeedMore &&
      walker_.Finish() == WalkState::kDone && sink_ != nullptr) {
    end_status_ = sink_->OnEndOfStream();
    if (!end_status_.ok()) {
      end_rejection_ = {RuleFromId(RuleIdOf(end_status_).value_or(""))
                            .value_or(Rule::kStreamIo),
                        walker_.position(), "the sink stopped the stream"};
    }
  }
  return state();
}

StreamState StreamReader::FailSource() {
  walker_.Fail(
      Rejection{Rule::kStreamIo, walker_.position(), "the byte source failed"});
  return state();
}

Rejection ReadStream(std::istream& in, const StreamOptions& options,
                     TensorSink* sink, size_t chunk_size) {
  StreamReader reader(options, sink);
  std::vector<char> buffer(chunk_size == 0 ? 1 : chunk_size);
  while (reader.state() == StreamState::kNeedMore) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    const std::streamsize got = in.gcount();
    if (got > 0) {
      reader.Feed(
          absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(buffer.data()),
                              static_cast<size_t>(got)));
    }
    if (in.bad()) {
      reader.FailSource();
    } else if (in.eof()) {
      reader.Finish();
    } else if (in.fail()) {
      reader.FailSource();
    }
  }
  return reader.rejection();
}

Rejection ReadStream(absl::Span<const uint8_t> bytes,
                     const StreamOptions& options, TensorSink* sink) {
  StreamReader reader(options, sink);
  reader.Feed(bytes);
  reader.Finish();
  return reader.rejection();
}

}  // namespace hurray::stream
