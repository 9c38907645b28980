// ResumeCheckSink: binds a resumed network ingest to the server's data
// (issue 13 item 2). The interrupted run recorded, for each completed
// tensor, its shape, type, scheme, size and the CRC-32C of its data bytes
// (TensorRecord::data_crc32c). The resumed run asks for the last completed
// key again, first: this sink compares every tensor of that answer with the
// records before anything reaches the real sink, and fails
// (FailedPrecondition, the loader stops) when the server's tensor is not
// the one fetched before. Tensors of the keys after it go to `inner`
// unchanged.
#ifndef HURRAY_STREAM_INGEST_RESUME_CHECK_SINK_H_
#define HURRAY_STREAM_INGEST_RESUME_CHECK_SINK_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "stream/ingest/sinks.h"
#include "stream/resume/tensor_record.h"

namespace hurray::stream::ingest {

class ResumeCheckSink : public IngestSink {
 public:
  // `expected`: the records of the key fetched again (from
  // resume::LastKeyStart on, stream/resume/network_records.h).
  ResumeCheckSink(std::vector<resume::TensorRecord> expected,
                  IngestSink* inner);

  [[nodiscard]] absl::Status OnTensorKey(absl::string_view key) override;
  [[nodiscard]] absl::Status OnDescriptor(const TensorDescriptor& d) override;
  [[nodiscard]] absl::Status OnBufferPiece(
      uint32_t buffer_index, uint64_t offset_in_buffer,
      absl::Span<const uint8_t> piece) override;
  [[nodiscard]] absl::Status OnTensorEnd() override;
  [[nodiscard]] absl::Status OnEndOfStream() override;
  [[nodiscard]] absl::Status OnTensorNames(
      absl::Span<const std::string> names) override;
  void ExpectTensorNames() override { inner_->ExpectTensorNames(); }
  void OnInputRejected() override { inner_->OnInputRejected(); }
  void OnMetadata(
      absl::Span<const std::pair<std::string, std::string>> kv) override {
    inner_->OnMetadata(kv);
  }

  // Every tensor of the key fetched again matched.
  bool checked() const { return forwarding_; }

 private:
  // The status that stops the reader: the fetched tensor is not the one
  // the interrupted run fetched.
  [[nodiscard]] absl::Status Mismatch(absl::string_view why) const;

  std::vector<resume::TensorRecord> expected_;
  IngestSink* inner_;
  ValidateSink probe_;  // records what arrives for the key fetched again
  size_t checked_ = 0;
  bool key_seen_ = false;
  bool forwarding_ = false;
};

}  // namespace hurray::stream::ingest

#endif  // HURRAY_STREAM_INGEST_RESUME_CHECK_SINK_H_
