#include "stream/ingest/resume_check_sink.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace hurray::stream::ingest {

ResumeCheckSink::ResumeCheckSink(std::vector<resume::TensorRecord> expected,
                                 IngestSink* inner)
    : expected_(std::move(expected)), inner_(inner) {
  probe_.set_record_data_crc(true);
  forwarding_ = expected_.empty();
}

absl::Status ResumeCheckSink::Mismatch(absl::string_view why) const {
  return absl::FailedPreconditionError(absl::StrCat(
      "the server's '",
      expected_.empty() ? "" : expected_[0].name.substr(0, 200),
      "' is not what the interrupted run fetched (", why,
      "): refusing to resume; remove the state file to start over"));
}

absl::Status ResumeCheckSink::OnTensorKey(absl::string_view key) {
  if (forwarding_) return inner_->OnTensorKey(key);
  if (!key_seen_) {
    key_seen_ = true;
    return probe_.OnTensorKey(key);
  }
  // The next key: the one fetched again must be over.
  if (checked_ < expected_.size()) return Mismatch("fewer tensors");
  forwarding_ = true;
  return inner_->OnTensorKey(key);
}

absl::Status ResumeCheckSink::OnDescriptor(const TensorDescriptor& d) {
  if (forwarding_) return inner_->OnDescriptor(d);
  if (checked_ == expected_.size()) return Mismatch("more tensors");
  // The probe only records; the comparison at OnTensorEnd decides.
  probe_.OnDescriptor(d).IgnoreError();
  return absl::OkStatus();
}

absl::Status ResumeCheckSink::OnBufferPiece(uint32_t buffer_index,
                                            uint64_t offset_in_buffer,
                                            absl::Span<const uint8_t> piece) {
  if (forwarding_) {
    return inner_->OnBufferPiece(buffer_index, offset_in_buffer, piece);
  }
  // The probe only records; the comparison at OnTensorEnd decides.
  probe_.OnBufferPiece(buffer_index, offset_in_buffer, piece).IgnoreError();
  return absl::OkStatus();
}

absl::Status ResumeCheckSink::OnTensorEnd() {
  if (forwarding_) return inner_->OnTensorEnd();
  probe_.OnTensorEnd().IgnoreError();  // only records, as above
  const resume::TensorRecord& got = probe_.records().back();
  const resume::TensorRecord& want = expected_[checked_];
  if (got.name != want.name || got.shape != want.shape ||
      got.type != want.type || got.scheme != want.scheme ||
      got.bytes != want.bytes) {
    return Mismatch(absl::StrCat("tensor ", checked_, " is ", got.type, " ",
                                 got.shape, ", was ", want.type, " ",
                                 want.shape));
  }
  if (got.data_crc32c != want.data_crc32c) {
    return Mismatch(
        absl::StrCat("the data of tensor ", checked_, " differs: CRC-32C"));
  }
  ++checked_;
  return absl::OkStatus();
}

absl::Status ResumeCheckSink::OnEndOfStream() {
  if (!forwarding_) {
    if (checked_ < expected_.size()) return Mismatch("fewer tensors");
    forwarding_ = true;
  }
  return inner_->OnEndOfStream();
}

absl::Status ResumeCheckSink::OnTensorNames(
    absl::Span<const std::string> names) {
  return inner_->OnTensorNames(names);
}

}  // namespace hurray::stream::ingest
