// Internal to Ingest() (ingest.cc): the sink that stands between the reader
// and the run's sink and hands each tensor whose verdict is final to the
// IngestObserver (ingest.h), with its float32 values (from the DequantSink's
// values buffer, values_buffer.h, or mapped from its f32 output) or its raw
// buffers; and the private scratch directory values are staged in when the
// run writes no outputs and they cannot stay in memory.
#ifndef HURRAY_STREAM_INGEST_OBSERVER_TAP_H_
#define HURRAY_STREAM_INGEST_OBSERVER_TAP_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "stream/container/safe_output_dir.h"
#include "stream/ingest/ingest.h"
#include "stream/ingest/sinks.h"
#include "stream/ingest/values_buffer.h"

namespace hurray::stream::ingest {

// Forwards every event to `next`; `records` is the run's RecordingIngestSink
// (the records it reads). A tensor is handed over once its record is
// complete: at its end, or, when the container names its tensors at its end
// (.hrry read forward), after OnTensorNames; a tensor a range read named
// before its bytes (OnTensorKey), and every tensor with TensorData::kRaw, at
// its end.
// The observer's Cancelled() is polled after each tensor: `cancel` stops
// the loader; without one (a range read) the tap fails the read with
// Cancelled.

// Stands between the reader and the run's sink: hands each tensor whose
// verdict is final to the observer (with its values or buffers when asked),
// and polls the cancel check.
class ObserverTap final : public IngestSink {
 public:
  // TensorData::kDequantized: `values` the sink's values buffer (may be
  // null), `values_dir` where the float32 outputs are that are not in it;
  // `remove_values`: they are staged (scratch) and removed once handed over.
  ObserverTap(IngestSink* next, const RecordingIngestSink* records,
              IngestObserver* observer, const IngestRequest& request,
              const ValuesBuffer* values, container::SafeOutputDir* values_dir,
              bool remove_values, std::function<void()> cancel)
      : next_(next),
        records_(records),
        observer_(observer),
        data_(request.data),
        max_raw_(request.max_raw_tensor_bytes),
        values_(values),
        values_dir_(values_dir),
        remove_values_(remove_values),
        cancel_(std::move(cancel)),
        delivered_(records->records().size()) {}

  [[nodiscard]] absl::Status OnTensorKey(absl::string_view key) override {
    return next_->OnTensorKey(key);
  }
  [[nodiscard]] absl::Status OnDescriptor(const TensorDescriptor& d) override {
    if (data_ == TensorData::kRaw) {
      descriptor_ = std::make_unique<TensorDescriptor>(d);
      uint64_t total = 0;
      buffers_.assign(d.buffer_count, {});
      for (uint32_t i = 0; i < d.buffer_count && i < kMaxBuffers; ++i) {
        total += d.buffers[i].byte_size;
      }
      if (total > max_raw_) {
        return Stop(absl::ResourceExhaustedError(
            absl::StrCat("a tensor of ", total, " buffer bytes is over the ",
                         max_raw_, " bytes the observer may be handed")));
      }
    }
    return next_->OnDescriptor(d);
  }
  [[nodiscard]] absl::Status OnBufferPiece(
      uint32_t buffer_index, uint64_t offset,
      absl::Span<const uint8_t> piece) override {
    if (data_ == TensorData::kRaw && buffer_index < buffers_.size()) {
      buffers_[buffer_index].insert(buffers_[buffer_index].end(), piece.begin(),
                                    piece.end());
    }
    return next_->OnBufferPiece(buffer_index, offset, piece);
  }
  [[nodiscard]] absl::Status OnTensorEnd() override {
    HURRAY_RETURN_IF_ERROR(next_->OnTensorEnd());
    HURRAY_RETURN_IF_ERROR(
        DeliverUpTo(records_->records().size(),
                    /*named_only=*/names_at_end_ && data_ != TensorData::kRaw));
    if (observer_->Cancelled()) {
      // Without a loader to stop (a range read): stop the reader here.
      if (!cancel_) return Stop(absl::CancelledError("cancelled"));
      cancel_();
    }
    return absl::OkStatus();
  }
  void ExpectTensorNames() override {
    names_at_end_ = true;
    next_->ExpectTensorNames();
  }
  [[nodiscard]] absl::Status OnTensorNames(
      absl::Span<const std::string> names) override {
    HURRAY_RETURN_IF_ERROR(next_->OnTensorNames(names));
    // A forward selection renumbered the records (SelectingSink).
    delivered_ = std::min(delivered_, records_->records().size());
    if (data_ == TensorData::kRaw) return absl::OkStatus();
    return DeliverUpTo(records_->records().size(), /*named_only=*/false);
  }
  void OnMetadata(
      absl::Span<const std::pair<std::string, std::string>> kv) override {
    next_->OnMetadata(kv);
  }
  [[nodiscard]] absl::Status OnEndOfStream() override {
    return next_->OnEndOfStream();
  }
  void OnInputRejected() override { next_->OnInputRejected(); }

 private:
  // The status that stops the reader (it remembers it, not the tap).
  [[nodiscard]] static absl::Status Stop(absl::Status s) { return s; }

  // Hands over the complete records from delivered_ up to `end`; with
  // `named_only`, up to the first that has no name yet.
  [[nodiscard]] absl::Status DeliverUpTo(size_t end, bool named_only);

  IngestSink* next_;
  const RecordingIngestSink* records_;
  IngestObserver* observer_;
  TensorData data_;
  uint64_t max_raw_;
  const ValuesBuffer* values_;
  container::SafeOutputDir* values_dir_;
  bool remove_values_;
  std::function<void()> cancel_;
  size_t delivered_;
  bool names_at_end_ = false;
  std::vector<std::vector<uint8_t>> buffers_;
  std::unique_ptr<TensorDescriptor> descriptor_;  // kRaw: the last one
};

// A private directory for staged values, removed with what is in it.
class ScratchDir {
 public:
  ~ScratchDir();
  // A new directory (mkdtemp, mode 0700) in `parent` ("": $TMPDIR, else
  // /tmp).
  [[nodiscard]] absl::Status Create(const std::string& parent);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace hurray::stream::ingest

#endif  // HURRAY_STREAM_INGEST_OBSERVER_TAP_H_
