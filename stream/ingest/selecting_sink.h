// `hurray ingest --tensors a,b` in one forward pass (a server without range
// support, standard input): the names of a .hrry come only with the index at
// its end (file-format.md § File Layout), so every tensor is read, validated
// and written as usual (as hidden temps: nothing is published before the
// index), and once the names are known the tensors not asked for are
// dropped (RecordingIngestSink::DropTensors) before the others get their
// names. A named composite head keeps its members (§ Composite Tensors:
// the next member_count tensors, nested heads pre-order).
//
// A name the index lacks fails the run (NotFound) before anything is
// published; so does a bare stream (no names at all) at its first tensor.
#ifndef HURRAY_STREAM_INGEST_SELECTING_SINK_H_
#define HURRAY_STREAM_INGEST_SELECTING_SINK_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "parser/descriptor.h"
#include "stream/ingest/sinks.h"

namespace hurray::stream::ingest {

class SelectingSink final : public IngestSink {
 public:
  // `inner` outlives this sink.
  SelectingSink(RecordingIngestSink* inner, std::vector<std::string> names);

  void ExpectTensorNames() override;
  [[nodiscard]] absl::Status OnTensorKey(absl::string_view key) override {
    return inner_->OnTensorKey(key);
  }
  [[nodiscard]] absl::Status OnDescriptor(const TensorDescriptor& d) override;
  [[nodiscard]] absl::Status OnBufferPiece(
      uint32_t buffer_index, uint64_t offset_in_buffer,
      absl::Span<const uint8_t> piece) override {
    return inner_->OnBufferPiece(buffer_index, offset_in_buffer, piece);
  }
  [[nodiscard]] absl::Status OnTensorEnd() override {
    return inner_->OnTensorEnd();
  }
  void OnMetadata(
      absl::Span<const std::pair<std::string, std::string>> kv) override {
    inner_->OnMetadata(kv);
  }
  [[nodiscard]] absl::Status OnTensorNames(
      absl::Span<const std::string> names) override;
  [[nodiscard]] absl::Status OnEndOfStream() override {
    return inner_->OnEndOfStream();
  }
  void OnInputRejected() override { inner_->OnInputRejected(); }

 private:
  RecordingIngestSink* inner_;
  std::vector<std::string> names_;
  absl::flat_hash_set<std::string> wanted_;
  bool named_ = false;  // a .hrry: ExpectTensorNames came
  // Per tensor (file order): the head it is a member of (-1: none).
  std::vector<int64_t> parent_;
  struct Open {
    int64_t head;
    uint64_t left;
  };
  std::vector<Open> open_;
};

}  // namespace hurray::stream::ingest

#endif  // HURRAY_STREAM_INGEST_SELECTING_SINK_H_
