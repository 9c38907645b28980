// StreamWriter: writes the bare streaming format read by StreamReader — each
// tensor's descriptor (metadata.md) then its buffers back to back, in
// buffer-table order (interchange.md § Scope; RESOLUTIONS.md 14).
//
// The writer refuses what a strict reader would reject and it can see: an
// invalid descriptor (the validator's rule id in the status), buffers that do
// not match the buffer table, composite heads nested too deep (CMP-MEM-10),
// composites the composite validator refuses (CMP-MEM-*, CMP-CLS-01/02), and,
// at Close(), a composite still waiting for members (CMP-CLS-03).
#ifndef HURRAY_STREAM_CONTAINER_STREAM_WRITER_H_
#define HURRAY_STREAM_CONTAINER_STREAM_WRITER_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "parser/decoder.h"
#include "parser/descriptor.h"
#include "parser/options.h"
#include "stream/container/byte_sink.h"
#include "stream/container/composite_binder.h"

namespace hurray::stream::container {

class StreamWriter {
 public:
  explicit StreamWriter(const ParseOptions& options = ParseOptions());
  ~StreamWriter();

  // Writes one tensor. `buffers` holds one span per buffer-table entry, each
  // exactly byte_size bytes long. `extension_data` is the opaque data of an
  // extension layout (zeros when empty). Nothing is written when the tensor is
  // refused.
  [[nodiscard]] absl::Status Write(
      const TensorDescriptor& d,
      absl::Span<const absl::Span<const uint8_t>> buffers, ByteSink sink,
      absl::Span<const uint8_t> extension_data = {});

  // Ends the stream: fails when a composite head still waits for members.
  [[nodiscard]] absl::Status Close() const;

  uint64_t bytes_written() const { return bytes_; }
  uint64_t tensors_written() const { return tensors_; }

 private:
  std::unique_ptr<DescriptorDecoder> decoder_;
  CompositeBinder composites_;
  uint64_t bytes_ = 0;
  uint64_t tensors_ = 0;
};

// Encodes `d` and decodes the result as a reader would (framing and
// validation under `decoder`'s options): the bytes, or the rejection.
[[nodiscard]] absl::StatusOr<std::vector<uint8_t>> EncodeChecked(
    const TensorDescriptor& d, absl::Span<const uint8_t> extension_data,
    DescriptorDecoder* decoder);

// Checks that `buffers` matches the buffer table of `d` (count and sizes).
[[nodiscard]] absl::Status CheckBuffers(
    const TensorDescriptor& d,
    absl::Span<const absl::Span<const uint8_t>> buffers);

}  // namespace hurray::stream::container

#endif  // HURRAY_STREAM_CONTAINER_STREAM_WRITER_H_
