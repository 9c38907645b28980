// ResponseStream: the data plane of one response on the client side
// (client_session.h). The descriptor bytes of its TENSOR_DESCRIPTOR messages
// and the payload bytes of its TENSOR_DATA messages are fed, in order, to a
// TensorWalker as one bare stream (stream/container/tensor_walker.h, framing
// data_alignment 0): the walker decodes and validates each descriptor,
// checks LIMIT-BUFFER-BYTES and the composite binding, and maps the data
// plane (all buffers back to back, RESOLUTIONS.md 15) to (buffer, offset)
// pieces, exactly as for a file or a bare stream. This class is the
// TensorSink in front of the user's: its OnDescriptor runs what only the
// network protocol has (interchange.md § TENSOR_DESCRIPTOR Payload,
// § Parallel Transfers): NET-TD-04..08, LIMIT-BUFFER-BYTES on
// total_data_bytes, LIMIT-TOTAL-BYTES over the session, NET-PAR-01..03. It
// also checks the message sequence of its stream (NET-TD-09, NET-DAT-*,
// NET-END-*, NET-CMP-01), maps the walker's offsets back to offsets in the
// received byte stream, and wraps the walker's descriptor rejections in
// NET-TD-03 and its composite rejections in NET-CMP-02.
//
// Events go to the user's sink while the stream is live (its request is the
// oldest unanswered one); before that they are kept in an EventSpool,
// bounded by LIMIT-SPOOL-BYTES over the session, and replayed by GoLive.
#ifndef HURRAY_STREAM_NET_RESPONSE_STREAM_H_
#define HURRAY_STREAM_NET_RESPONSE_STREAM_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "parser/descriptor.h"
#include "parser/rules.h"
#include "stream/container/tensor_sink.h"
#include "stream/container/tensor_walker.h"
#include "stream/net/client_session.h"
#include "stream/net/event_spool.h"
#include "stream/net/message.h"

namespace hurray::stream::net {

// What the streams of one client session share.
struct ClientShared {
  explicit ClientShared(const NetClientOptions& o) : options(o) {}
  const NetClientOptions& options;
  container::TensorSink* sink = nullptr;  // the user's; may be null
  absl::Status status;                    // the session's first failure
  absl::Status wrapped;                   // the status of a wrapping rejection
  uint64_t declared_bytes = 0;            // total_data_bytes accepted so far
  uint64_t spooled_bytes = 0;             // what every EventSpool holds
  uint64_t tensors_completed = 0;
};

// `inner` wrapped in `outer` (NET-TD-03, NET-CMP-02): the status names both
// rules, and carries the inner one in the "hurray.dev/inner-rule" payload.
[[nodiscard]] absl::Status WrapRejection(const Rejection& outer,
                                         const Rejection& inner);

// The shards of one response (§ Parallel Transfers, § Shard Consistency):
// what the first fixes and the others must share, shared by every stream
// that carries a shard sequence of the response.
struct ShardSet {
  uint32_t total = 0;  // total_shards; 0 or 1: not sharded, or closed
  uint32_t done = 0;
  std::vector<bool> seen;
  uint32_t rank = 0;
  uint8_t type = 0;
  uint8_t layout = 0;
  uint64_t parent_shape[kMaxRank] = {};
  std::vector<uint64_t> boxes;  // per shard: 0, offset[rank], end[rank]
};

class ResponseStream : private container::TensorSink {
 public:
  explicit ResponseStream(ClientShared* shared);
  ~ResponseStream() override;
  ResponseStream(const ResponseStream&) = delete;
  ResponseStream& operator=(const ResponseStream&) = delete;

  // Starts the response to the request for options.keys[key] on
  // `stream_id` (a fresh walker; an object may be reused).
  void Start(uint32_t stream_id, size_t key, bool live);
  // A shard sequence of `primary`'s response on another stream
  // (§ Parallel Transfers), its messages possibly interleaved with the
  // other shards': a fresh walker, the primary's ShardSet; never live at
  // first, and never reports the key (the primary's first tensor does).
  void StartShard(uint32_t stream_id, ResponseStream& primary);
  uint32_t stream_id() const { return stream_id_; }
  size_t key() const { return key_; }
  bool live() const { return live_; }
  // Turns live: reports the key (once) and replays what was spooled.
  Rejection GoLive(uint64_t at);
  // Stops being live between tensors (another stream of the response takes
  // the sink); what comes next is spooled.
  void GoQuiet() { live_ = false; }
  // Events wait in the spool, or a tensor is open.
  bool pending() const { return !spool_.empty() || open_; }

  // TENSOR_DESCRIPTOR at `at` (its payload at at + kHeaderSize).
  Rejection OnDescriptor(const DescriptorMessage& m, uint64_t at);
  // TENSOR_DATA at `at`: `offset` is byte_offset_in_buffer, `length` the
  // data bytes the message carries.
  Rejection OnDataBegin(uint64_t at, uint64_t offset, uint64_t length);
  // `at`: the absolute offset of the piece's first byte.
  Rejection OnDataPiece(uint64_t at, absl::Span<const uint8_t> piece);
  // TENSOR_DATA_END at `at`.
  Rejection OnDataEnd(uint64_t at);

  bool tensor_open() const { return open_; }
  // No tensor and no composite open: another stream may take the sink.
  bool between_tensors() const {
    return !open_ && walker_->open_composites() == 0;
  }
  // A composite head's TENSOR_DESCRIPTOR waits for its TENSOR_DATA_END.
  bool head_open() const { return open_ && head_; }
  // Further shards of this response are due.
  bool more_shards() const {
    return shards_->total > 1 && shards_->done < shards_->total;
  }
  // The whole response arrived: no open tensor, composite or shard.
  bool complete() const {
    return !open_ && walker_->open_composites() == 0 && shards_->total <= 1;
  }

 private:
  // TensorSink, called by the walker.
  [[nodiscard]] absl::Status OnDescriptor(const TensorDescriptor& d) override;
  [[nodiscard]] absl::Status OnBufferPiece(
      uint32_t buffer_index, uint64_t offset_in_buffer,
      absl::Span<const uint8_t> piece) override;
  [[nodiscard]] absl::Status OnTensorEnd() override;

  // Feeds `bytes`, received from absolute `at` on, to the walker.
  Rejection Walk(absl::Span<const uint8_t> bytes, uint64_t at);
  // Why the walk stopped, in received-stream offsets.
  Rejection Stopped(uint64_t at);
  Rejection NetChecks(const TensorDescriptor& d);
  Rejection CheckShard(const TensorDescriptor& d);
  Rejection CloseShards(uint64_t at);
  // The user's sink failed: its status becomes the session's.
  [[nodiscard]] absl::Status UserFailed(absl::Status s);
  void SinkFailed(absl::Status s);
  bool Spool(uint64_t cost);

  ClientShared* shared_;
  std::unique_ptr<container::TensorWalker> walker_;
  EventSpool spool_;
  uint32_t stream_id_ = 0;
  size_t key_ = 0;
  bool live_ = false;
  bool key_reported_ = false;

  // Walker offsets of the segment being fed map to received offsets.
  uint64_t walker_at_ = 0;
  uint64_t received_at_ = 0;
  // Set by the sink callbacks when they stop the walk.
  Rejection net_rejection_;
  bool user_failed_ = false;
  bool descriptor_seen_ = false;

  // The TENSOR_DESCRIPTOR being checked.
  TransportFields transport_;
  uint64_t base_ = 0;          // its payload's offset
  uint64_t transport_at_ = 0;  // its transport fields' offset

  // The open tensor.
  bool open_ = false;
  bool head_ = false;
  bool walker_done_ = false;  // every buffer byte reached the walker
  uint64_t total_ = 0;        // total_data_bytes
  uint64_t sum_ = 0;          // Σ byte_size: the bytes the walker takes
  uint64_t received_ = 0;

  // Shards of this response: own_shards_ on the primary stream, the
  // primary's on a shard stream.
  ShardSet own_shards_;
  ShardSet* shards_ = &own_shards_;
};

}  // namespace hurray::stream::net

#endif  // HURRAY_STREAM_NET_RESPONSE_STREAM_H_
