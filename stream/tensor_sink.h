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
#ifndef HURRAY_STREAM_TENSOR_SINK_H_
#define HURRAY_STREAM_TENSOR_SINK_H_

#include <cstdint>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "parser/descriptor.h"

namespace hurray::stream {

class TensorSink {
 public:
  virtual ~TensorSink() = default;

  // The container names the tensor before its descriptor (the key of a
  // network TENSOR_REQUEST). .hrry names come from the index, at the end of
  // the file (HrryForwardReader::entry_of_tensor); bare streams have none.
  // The view is valid only during the call.
  virtual void OnTensorKey(absl::string_view /*key*/) {}
  // The descriptor is only valid during the call; copy what you need.
  virtual void OnDescriptor(const TensorDescriptor& /*descriptor*/) {}
  // `piece` views the chunk being fed: valid only during the call, never
  // copied by the reader. Pieces of one buffer arrive in order, without gaps,
  // and empty buffers produce no piece.
  virtual void OnBufferPiece(uint32_t /*buffer_index*/,
                             uint64_t /*offset_in_buffer*/,
                             absl::Span<const uint8_t> /*piece*/) {}
  virtual void OnTensorEnd() {}
  virtual void OnEndOfStream() {}
};

}  // namespace hurray::stream

#endif  // HURRAY_STREAM_TENSOR_SINK_H_
