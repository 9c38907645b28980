#include "stream/ingest/values_buffer.h"

#include <cstring>

#include "absl/strings/str_cat.h"

namespace hurray::stream::ingest {

void ValuesBuffer::Reset() {
  open_ = closed_ = false;
  tensor_ = kNone;
  size_ = 0;
  expected_ = 0;
}

absl::Status ValuesBuffer::Start(uint64_t bytes) {
  Reset();
  if (!Fits(bytes)) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the float32 values of a tensor take ", bytes,
                     " bytes, over the limit of ", max_bytes_,
                     " (IngestRequest::max_values_bytes)"));
  }
  const size_t n = static_cast<size_t>(bytes);
  // Kept from one tensor to the next; a larger one replaces it.
  if (n > block_.size()) {
    block_ = dequant::LargeBytes();
    block_ = dequant::LargeBytes(n);
  }
  expected_ = n;
  open_ = true;
  return absl::OkStatus();
}

absl::Status ValuesBuffer::Append(absl::Span<const uint8_t> bytes) {
  if (!open_ || bytes.size() > expected_ - size_) {
    return absl::DataLossError(absl::StrCat("more values than the tensor's ",
                                            expected_, " bytes of output"));
  }
  if (!bytes.empty())
    std::memcpy(block_.data() + size_, bytes.data(), bytes.size());
  size_ += bytes.size();
  return absl::OkStatus();
}

absl::Span<uint8_t> ValuesBuffer::Next(size_t n) {
  if (!open_ || n > expected_ - size_) return {};
  return {block_.data() + size_, n};
}

absl::Span<uint8_t> ValuesBuffer::ZeroFilled() {
  if (!open_) return {};
  if (expected_ > 0) std::memset(block_.data(), 0, expected_);
  size_ = expected_;
  return {block_.data(), expected_};
}

}  // namespace hurray::stream::ingest
