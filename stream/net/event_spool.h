// EventSpool: the TensorSink events of one response stream that arrived
// while an earlier request's response was still being delivered, kept until
// that stream's turn (client_session.h § Multiplexed streams). Descriptors
// are copied, buffer pieces appended to one byte vector; Replay hands them
// to the real sink in arrival order (pieces of one buffer merged where they
// are contiguous). Memory grows only with what is spooled: the caller
// bounds it (LIMIT-SPOOL-BYTES) with bytes() before each Record call.
#ifndef HURRAY_STREAM_NET_EVENT_SPOOL_H_
#define HURRAY_STREAM_NET_EVENT_SPOOL_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "parser/descriptor.h"
#include "stream/container/tensor_sink.h"

namespace hurray::stream::net {

class EventSpool {
 public:
  // What one event costs (the caller's budget): a descriptor copy, or the
  // piece's bytes plus a small record.
  static uint64_t DescriptorCost();
  static uint64_t PieceCost(size_t piece_size);

  void RecordDescriptor(const TensorDescriptor& d);
  void RecordPiece(uint32_t buffer_index, uint64_t offset,
                   absl::Span<const uint8_t> piece);
  void RecordTensorEnd();

  // Hands every event to `sink` in order and empties the spool; stops at
  // the first non-OK status and returns it.
  [[nodiscard]] absl::Status Replay(container::TensorSink* sink);
  bool empty() const { return events_.empty(); }
  // What the spool holds, in DescriptorCost / PieceCost units.
  uint64_t bytes() const { return bytes_; }
  void Clear();

 private:
  enum class Kind : uint8_t { kDescriptor, kPiece, kTensorEnd };
  struct Event {
    Kind kind;
    uint32_t buffer_index;  // kPiece
    uint64_t offset;        // kPiece: offset in buffer
    size_t at;              // kPiece: first byte in data_
    size_t size;            // kPiece
  };
  std::vector<Event> events_;
  std::vector<std::unique_ptr<TensorDescriptor>> descriptors_;
  std::vector<uint8_t> data_;
  uint64_t bytes_ = 0;
};

}  // namespace hurray::stream::net

#endif  // HURRAY_STREAM_NET_EVENT_SPOOL_H_
