// SinkCheckedConsumer: a ByteConsumer that fails as soon as its sink does.
// NetClientSession reports to a plain TensorSink and never looks at an
// IngestSink's status; wrapped in this, a sink failure (DequantSink's disk
// error or data-level rule, ResumeCheckSink's refusal of a changed server)
// stops the loader at the next chunk, as the file consumers already do
// (stream/consumers.h).
#ifndef HURRAY_STREAM_SINK_CHECKED_CONSUMER_H_
#define HURRAY_STREAM_SINK_CHECKED_CONSUMER_H_

#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "stream/byte_consumer.h"
#include "stream/sinks.h"

namespace hurray::stream {

class SinkCheckedConsumer : public ByteConsumer {
 public:
  // `sink` (the one `inner` reports to) must outlive this.
  SinkCheckedConsumer(std::unique_ptr<ByteConsumer> inner,
                      const IngestSink* sink)
      : inner_(std::move(inner)), sink_(sink) {}

  absl::Status Feed(absl::Span<const uint8_t> chunk) override {
    return Check(inner_->Feed(chunk));
  }
  absl::Status Finish() override { return Check(inner_->Finish()); }
  absl::Status FailSource(absl::string_view why) override {
    return Check(inner_->FailSource(why));
  }
  uint64_t position() const override { return inner_->position(); }
  absl::Span<const uint8_t> PendingOutput() const override {
    return inner_->PendingOutput();
  }
  void ConsumeOutput(size_t n) override { inner_->ConsumeOutput(n); }
  bool Satisfied() const override {
    return sink_->status().ok() && inner_->Satisfied();
  }

 private:
  // The sink's failure wins: it saw events before the session's own error
  // in the same chunk could stop them (a refused resume check before the
  // server's ERROR for a later key).
  absl::Status Check(absl::Status s) {
    const absl::Status sink = sink_->status();
    return sink.ok() ? s : sink;
  }

  std::unique_ptr<ByteConsumer> inner_;
  const IngestSink* sink_;
};

}  // namespace hurray::stream

#endif  // HURRAY_STREAM_SINK_CHECKED_CONSUMER_H_
