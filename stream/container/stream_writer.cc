#include "stream/container/stream_writer.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "parser/decoder.h"
#include "parser/encoder.h"

namespace hurray::stream::container {

absl::Status CheckBuffers(const TensorDescriptor& d,
                          absl::Span<const absl::Span<const uint8_t>> buffers) {
  if (buffers.size() != d.buffer_count) {
    return absl::InvalidArgumentError(
        absl::StrCat("the descriptor has ", d.buffer_count, " buffers, ",
                     buffers.size(), " were given"));
  }
  for (uint32_t i = 0; i < d.buffer_count; ++i) {
    if (buffers[i].size() != d.buffers[i].byte_size) {
      return absl::InvalidArgumentError(
          absl::StrCat("buffer ", i, " holds ", buffers[i].size(),
                       " bytes, its byte_size is ", d.buffers[i].byte_size));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<uint8_t>> EncodeChecked(
    const TensorDescriptor& d, absl::Span<const uint8_t> extension_data,
    DescriptorDecoder* decoder) {
  absl::StatusOr<std::vector<uint8_t>> bytes = Encode(d, extension_data);
  if (!bytes.ok()) return bytes.status();
  // What a reader would see: framing and validation, with its offsets.
  const Rejection r = DecodeWith(*bytes, decoder);
  if (!r.ok()) return ToStatus(r);
  return bytes;
}

StreamWriter::StreamWriter(const ParseOptions& options)
    : decoder_(std::make_unique<DescriptorDecoder>(options)),
      composites_(options.mode, ContainerLimits()) {}

StreamWriter::~StreamWriter() = default;

absl::Status StreamWriter::Write(
    const TensorDescriptor& d,
    absl::Span<const absl::Span<const uint8_t>> buffers, ByteSink sink,
    absl::Span<const uint8_t> extension_data) {
  absl::Status s = CheckBuffers(d, buffers);
  if (!s.ok()) return s;
  absl::StatusOr<std::vector<uint8_t>> bytes =
      EncodeChecked(d, extension_data, decoder_.get());
  if (!bytes.ok()) return bytes.status();
  // Offsets are stream offsets; the decoded copy locates the fields.
  const Rejection bound =
      composites_.OnDescriptor(decoder_->descriptor(), bytes_);
  if (!bound.ok()) return ToStatus(bound);
  s = sink(*bytes);
  if (!s.ok()) return s;
  bytes_ += bytes->size();
  for (absl::Span<const uint8_t> buffer : buffers) {
    s = sink(buffer);
    if (!s.ok()) return s;
    bytes_ += buffer.size();
  }
  ++tensors_;
  return absl::OkStatus();
}

absl::Status StreamWriter::Close() const {
  if (composites_.open() > 0) {
    return ToStatus(
        {Rule::kCmpCls03, bytes_, "a composite head still waits for members"});
  }
  return absl::OkStatus();
}

}  // namespace hurray::stream::container
