// TensorSink: the events a tensor reader emits while bytes arrive, for bare
// streams (interchange.md § Scope) and for the tensor region of .hrry files
// (file-format.md § Tensor Region).
//
// For each tensor, in order: OnDescriptor once its descriptor is complete and
// valid, OnBufferPiece for every run of buffer bytes as it arrives, OnTensorEnd
// once every byte of every buffer has arrived. OnEndOfStream follows the last
// tensor of a stream that ended cleanly. Nothing is reported for a tensor
// whose descriptor was rejected, and OnTensorEnd is never called for a tensor
// whose bytes did not all arrive.
//
// Every callback returns a status: anything but OK stops the reader at once
// (as Beast's parser callbacks do with their error_code). The reader reports
// that status as its own, and calls the sink no more. A sink therefore never
// needs to check its own state on entry, and its caller never polls it.
#ifndef HURRAY_STREAM_CONTAINER_TENSOR_SINK_H_
#define HURRAY_STREAM_CONTAINER_TENSOR_SINK_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "parser/descriptor.h"

namespace hurray::stream::container {

class TensorSink {
 public:
  virtual ~TensorSink() = default;

  // The container names the tensor before its descriptor (the key of a
  // network TENSOR_REQUEST). .hrry names come from the index, at the end of
  // the file (HrryForwardReader::entry_of_tensor); bare streams have none.
  // The view is valid only during the call.
  [[nodiscard]] virtual absl::Status OnTensorKey(absl::string_view /*key*/) {
    return absl::OkStatus();
  }
  // The descriptor is only valid during the call; copy what you need.
  [[nodiscard]] virtual absl::Status OnDescriptor(
      const TensorDescriptor& /*descriptor*/) {
    return absl::OkStatus();
  }
  // `piece` views the chunk being fed: valid only during the call, never
  // copied by the reader. Pieces of one buffer arrive in order, without gaps,
  // and empty buffers produce no piece.
  [[nodiscard]] virtual absl::Status OnBufferPiece(
      uint32_t /*buffer_index*/, uint64_t /*offset_in_buffer*/,
      absl::Span<const uint8_t> /*piece*/) {
    return absl::OkStatus();
  }
  [[nodiscard]] virtual absl::Status OnTensorEnd() { return absl::OkStatus(); }
  [[nodiscard]] virtual absl::Status OnEndOfStream() {
    return absl::OkStatus();
  }
};

}  // namespace hurray::stream::container

#endif  // HURRAY_STREAM_CONTAINER_TENSOR_SINK_H_
