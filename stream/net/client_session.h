// NetClientSession: the client side of the Hurray network protocol
// (interchange.md § Network Transport Protocol), sans I/O. It is a
// ByteConsumer (stream/container/byte_consumer.h): feed it the bytes received
// from the server, in chunks of any size, and write what PendingOutput() holds
// to the server (then ConsumeOutput(n)). A transport (the loader's TCP source,
// the tests' blocking client) does nothing else.
//
//   NetClientOptions o;
//   o.keys = {"w1", "w2"};
//   NetClientSession s(o, &sink);
//   write(s.PendingOutput()); s.ConsumeOutput(...);   // CLIENT_HELLO
//   loop: read chunk; status = s.Feed(chunk); write(s.PendingOutput()) ...
//         until s.Satisfied() (every tensor arrived) or !status.ok().
//
// Conversation: CLIENT_HELLO; after SERVER_HELLO, one TENSOR_REQUEST per key
// on stream ids 1, 2, 3, ... (at most `max_outstanding` unanswered at a
// time); PONG for every PING; ERROR (INVALID_MESSAGE, MESSAGE_TOO_LARGE for
// NET-01, SHARD_MISMATCH for NET-PAR-*) when the session rejects the
// server's input; the caller should then write the pending output and close
// the connection.
//
// One data plane: each response stream's descriptor bytes (from its
// TENSOR_DESCRIPTOR messages) and data bytes (TENSOR_DATA payloads) go
// through a TensorWalker of its own, as a bare stream (response_stream.h),
// so the descriptor rules, LIMIT-BUFFER-BYTES, LIMIT-MEMBERS, the composite
// binding and the mapping of the data plane to buffers (all buffers
// concatenated in table order without padding, RESOLUTIONS.md 15) are
// checked by the same code as for files and bare streams. The network's own
// rules run in front of the user's sink.
//
// Multiplexed streams (interchange.md § Overview: streams MAY be
// multiplexed on one connection and demultiplexed on stream_id; no
// ordering across streams is mandated): the answers to pipelined requests
// may arrive interleaved, message by message. Every stream is demultiplexed
// and validated as its bytes arrive (a hostile stream is refused at once,
// whatever stream it hides behind). Delivery keeps the TensorSink contract,
// one tensor at a time, and request order: the response to the oldest
// unanswered request goes to the sink as it arrives, without a copy; the
// events of later responses that arrive meanwhile are held (copied) until
// their turn. That is the only way to give interleaved data to a
// tensor-at-a-time sink (the ingest sinks and outputs are), and costs
// nothing when the server answers in order, which ours does. Memory is
// bounded by LIMIT-OPEN-STREAMS (responses in progress at once, each with a
// walker) and LIMIT-SPOOL-BYTES (bytes held, over all streams).
//
// Events to the TensorSink, per requested key, in request order:
// OnTensorKey(key), then for the tensor (and, for a composite head, each of
// its members in stream order, without a key of their own) OnDescriptor,
// OnBufferPiece for its data (pieces cut anywhere) and OnTensorEnd at its
// TENSOR_DATA_END. OnEndOfStream follows the last tensor of the last key;
// Satisfied() is then true and Feed/Finish return OK.
//
// Rejections (rule id + absolute offset in the received byte stream, as
// absl::Status from rules.h ToStatus): every client-side NET-* rule of
// REJECT-RULES.md §3.14; LIMIT-BUFFER-BYTES and LIMIT-TOTAL-BYTES (the
// data bytes of the whole session, all streams) from declared sizes before
// any data is read; LIMIT-OPEN-STREAMS, LIMIT-SPOOL-BYTES; NET-MSG-01 /
// NET-SEQ-01 (our own: malformed control payloads, messages out of
// sequence). NET-TD-03 and NET-CMP-02 wrap the walker's descriptor and
// composite rejections; the inner rule id and offset stay in the message
// (and in the "hurray.dev/inner-rule" payload). A server ERROR is a failed
// status (NotFound for UNKNOWN_TENSOR, Unavailable otherwise) naming the
// key and the error code.
//
// Shards (§ Parallel Transfers): a response may come as total_shards shard
// sequences on the request's stream or on stream ids no request uses,
// one after another or interleaved with each other (a shard sequence on
// another stream belongs to the oldest response still waiting for shards;
// each such stream counts toward LIMIT-OPEN-STREAMS). They are checked
// (NET-TD-04/05, NET-PAR-01..03: shared parent_shape/type/layout, distinct
// indices, boxes that tile parent_shape exactly) and reported as separate
// tensors.
//
// Threading: one thread at a time. Nothing is allocated per data byte of
// the live response.
#ifndef HURRAY_STREAM_NET_CLIENT_SESSION_H_
#define HURRAY_STREAM_NET_CLIENT_SESSION_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "parser/options.h"
#include "stream/container/byte_consumer.h"
#include "stream/container/limits.h"
#include "stream/container/tensor_sink.h"
#include "stream/net/message.h"

namespace hurray::stream::net {

// The tensor key our server answers with the list of its tensor names
// (docs/network.md § Listing), unless the file has a tensor of that name.
inline constexpr absl::string_view kListKey = "hurray:list";
// The tensor key our server answers with what identifies the file it
// serves (docs/network.md § Identity): printable ASCII, at most 1024 bytes.
// Reserved: a tensor of the file with this name is not served by it.
inline constexpr absl::string_view kIdentityKey = "hurray:identity";

struct NetClientOptions {
  // Mode (strict/permissive), descriptor limits, agreed private values.
  ParseOptions parse;
  // LIMIT-BUFFER-BYTES (per buffer and, times the buffer count, per
  // total_data_bytes), LIMIT-TOTAL-BYTES (data bytes of the whole session),
  // composite depth and members.
  container::ContainerLimits limits;
  // Advertised in CLIENT_HELLO; a larger payload is NET-01.
  uint32_t max_message_size = net::kDefaultMaxMessageSize;
  // Tensors to request, in order.
  std::vector<std::string> keys;
  // Requests in flight at once (≥ 1).
  uint32_t max_outstanding = 4;
  // LIMIT-OPEN-STREAMS: responses in progress at once (multiplexed streams;
  // each holds a TensorWalker and, until its turn, a spool).
  uint32_t max_open_streams = 16;
  // LIMIT-SPOOL-BYTES: bytes of later responses held, over all streams,
  // while an earlier response is being delivered.
  uint64_t max_spooled_bytes = uint64_t{64} << 20;
  // TENSOR_REQUEST fields.
  uint8_t preferred_device = 0;
  uint32_t min_alignment = 64;
  bool parallel_ok = false;  // PARALLEL_OK
  // Private message types agreed with the server (bit i: 0xF0 + i).
  uint16_t agreed_private_types = 0;
  // NET-TD-08: TCP is a cross-machine transport.
  bool cross_machine = true;
  // Called on the thread that feeds the session each time one or more keys'
  // responses completed (keys complete in request order), with
  // keys_completed(): the checkpoint of a resumable network ingest
  // (stream/ingest/ingest.h).
  std::function<void(size_t keys_completed)> on_keys_completed;
};

class NetClientSession : public container::ByteConsumer {
 public:
  NetClientSession(const NetClientOptions& options,
                   container::TensorSink* sink);
  ~NetClientSession() override;
  NetClientSession(const NetClientSession&) = delete;
  NetClientSession& operator=(const NetClientSession&) = delete;

  [[nodiscard]] absl::Status Feed(absl::Span<const uint8_t> chunk) override;
  [[nodiscard]] absl::Status Finish() override;
  [[nodiscard]] absl::Status FailSource(absl::string_view why) override;
  uint64_t position() const override;
  absl::Span<const uint8_t> PendingOutput() const override;
  void ConsumeOutput(size_t n) override;
  bool Satisfied() const override;

  // OK, or the rejection / server error that stopped the session.
  [[nodiscard]] absl::Status status() const;
  // Tensors (members and shards included) whose bytes all arrived.
  uint64_t tensors_completed() const override;
  // Keys whose response is complete.
  size_t keys_completed() const;
  // The server's HELLO, once received (views valid for the session's life).
  bool has_server_hello() const;
  uint32_t server_max_message_size() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// Parses the bytes of the `hurray:list` tensor: for each name, a u32 LE
// byte length and the UTF-8 bytes. InvalidArgument when malformed.
[[nodiscard]] absl::StatusOr<std::vector<std::string>> ParseTensorList(
    absl::Span<const uint8_t> bytes);

}  // namespace hurray::stream::net

#endif  // HURRAY_STREAM_NET_CLIENT_SESSION_H_
