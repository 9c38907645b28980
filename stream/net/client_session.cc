#include "stream/net/client_session.h"

#include <algorithm>
#include <deque>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "parser/rules.h"
#include "parser/wire.h"
#include "stream/container/utf8.h"
#include "stream/net/framer.h"
#include "stream/net/response_stream.h"

namespace hurray::stream::net {
namespace {

using net::MessageHeader;
using net::MessageType;
using net::ResponseStream;

constexpr absl::string_view kNetErrorPayloadUrl = "hurray.dev/net-error";
constexpr size_t kMaxErrorText = 1024;

bool Is(const MessageHeader& h, MessageType t) {
  return h.type == static_cast<uint32_t>(t);
}

}  // namespace

class NetClientSession::Impl : public net::FrameHandler {
 public:
  Impl(const NetClientOptions& options, container::TensorSink* sink)
      : options_(options),
        shared_(options_),
        framer_(net::FramerOptions{options.max_message_size, options.parse.mode,
                                   options.agreed_private_types},
                this) {
    if (options_.max_outstanding == 0) options_.max_outstanding = 1;
    if (options_.max_open_streams == 0) options_.max_open_streams = 1;
    shared_.sink = sink;
    net::Hello hello;
    hello.max_message_size = options_.max_message_size;
    static constexpr uint8_t kLayouts[] = {layout_tag::kRowMajor};
    hello.layouts = net::LayoutList(1, kLayouts);
    static constexpr uint8_t kDevices[] = {device_tag::kCpu};
    hello.devices = kDevices;
    net::AppendHello(&out_, MessageType::kClientHello, 1, hello);
  }

  // --- ByteConsumer --------------------------------------------------------

  absl::Status Feed(absl::Span<const uint8_t> chunk) {
    if (!status().ok()) return status();
    const Rejection r = framer_.Feed(chunk);
    // Once satisfied (every requested tensor arrived, the sink told so),
    // what the server sends after is not read: the framer stops at the
    // next message and nothing can fail the session any more.
    if (!r.ok() && status().ok() && !satisfied_) Fail(r);
    return status();
  }

  absl::Status Finish() {
    if (!status().ok() || satisfied_) return status();
    Rejection r = framer_.Finish();
    if (r.ok()) {
      // Between messages, but responses are missing.
      r = {Rule::kNet05, framer_.position(),
           hello_ ? "the connection ended before every requested tensor "
                    "arrived"
                  : "the connection ended before SERVER_HELLO"};
    }
    FailQuietly(r);
    return status();
  }

  absl::Status FailSource(absl::string_view why) {
    if (!status().ok() || satisfied_) return status();
    absl::Status s = ToStatus(
        {Rule::kStreamIo, framer_.position(), "the byte source failed"});
    s = absl::Status(s.code(), absl::StrCat(s.message(), ": ", why));
    s.SetPayload(kRulePayloadUrl, absl::Cord(RuleId(Rule::kStreamIo)));
    s.SetPayload(kOffsetPayloadUrl,
                 absl::Cord(absl::StrCat(framer_.position())));
    shared_.status = std::move(s);
    return status();
  }

  uint64_t position() const { return framer_.position(); }
  absl::Span<const uint8_t> PendingOutput() const {
    return absl::MakeConstSpan(out_).subspan(out_pos_);
  }
  void ConsumeOutput(size_t n) {
    out_pos_ += std::min(n, out_.size() - out_pos_);
    if (out_pos_ == out_.size()) {
      out_.clear();
      out_pos_ = 0;
    }
  }
  bool Satisfied() const { return satisfied_; }
  const absl::Status& status() const { return shared_.status; }
  uint64_t tensors_completed() const { return shared_.tensors_completed; }
  size_t keys_completed() const { return keys_done_; }
  bool has_server_hello() const { return hello_; }
  uint32_t server_max_message_size() const { return server_max_; }

  // --- FrameHandler ----------------------------------------------------------

  Rejection OnMessage(const MessageHeader& h, uint64_t at,
                      absl::Span<const uint8_t> payload) override {
    if (!status().ok() || satisfied_) return Over(at);
    if (!hello_) return FirstMessage(h, at, payload);
    switch (static_cast<MessageType>(h.type)) {
      case MessageType::kTensorDescriptor:
        return OnDescriptorMessage(h, at, payload);
      case MessageType::kTensorDataEnd:
        return OnDataEndMessage(h, at, payload);
      case MessageType::kError:
        return OnErrorMessage(h, at, payload);
      case MessageType::kPing:
        net::AppendMessage(&out_, MessageType::kPong, h.stream_id, payload);
        return kAccepted;
      case MessageType::kPong:
        return kAccepted;
      case MessageType::kClientHello:
      case MessageType::kTensorRequest:
      case MessageType::kTensorPut:
        // Client-to-server types (§ Message Types, direction column).
        if (Applies(Rule::kNet07, options_.parse.mode)) {
          return {Rule::kNet07, at,
                  "a client-to-server message arrived from the server"};
        }
        return kAccepted;
      case MessageType::kServerHello:
        return {Rule::kNetSeq01, at, "a second SERVER_HELLO"};
      case MessageType::kTensorPutAck:
        return {Rule::kNetSeq01, at,
                "TENSOR_PUT_ACK but no TENSOR_PUT was sent"};
      case MessageType::kRdmaRegister:
      case MessageType::kRdmaReady:
        return {Rule::kNetSeq01, at,
                "an RDMA message, but no RDMA data plane was negotiated"};
      default:
        return kAccepted;  // an agreed private type: not ours to interpret
    }
  }

  Rejection OnDataBegin(const MessageHeader& h, uint64_t at,
                        uint64_t offset) override {
    if (!status().ok() || satisfied_) return Over(at);
    if (!hello_) {
      return {Rule::kNet06, at,
              "the server's first message is not SERVER_HELLO or ERROR"};
    }
    data_ = StreamOn(h.stream_id);
    if (data_ == nullptr || !data_->tensor_open()) {
      return {Rule::kNetDat01, at,
              "TENSOR_DATA on a stream with no open TENSOR_DESCRIPTOR"};
    }
    return data_->OnDataBegin(at, offset,
                              h.payload_length - net::kDataPrefixSize);
  }

  Rejection OnDataPiece(uint64_t at, absl::Span<const uint8_t> piece) override {
    return data_->OnDataPiece(at, piece);
  }

  Rejection OnDataEnd() override { return kAccepted; }

 private:
  // A request without its complete response. `stream` is null until the
  // response's first TENSOR_DESCRIPTOR arrives; `shard_streams` carry the
  // shard sequences that arrive on other streams (§ Parallel Transfers),
  // in the order they began. At most one stream of the front response is
  // live (`live`); the others spool until it is between tensors.
  struct Outstanding {
    size_t key;
    uint32_t stream_id;
    ResponseStream* stream = nullptr;
    std::vector<ResponseStream*> shard_streams;
    ResponseStream* live = nullptr;
  };

  // The session already failed (e.g. a request could not be sent): stops
  // the framer; the status stays what it is.
  static Rejection Over(uint64_t at) {
    return {Rule::kNet08, at, "the session is over"};
  }

  void Fail(const Rejection& r) {
    if (!status().ok()) return;
    shared_.status = shared_.wrapped.ok() ? ToStatus(r) : shared_.wrapped;
    // Tell the server (interchange.md § Error Handling), on the stream at
    // fault; the caller writes it and closes the connection.
    uint32_t code = static_cast<uint32_t>(net::ErrorCode::kInvalidMessage);
    if (r.rule == Rule::kNet01) {
      code = static_cast<uint32_t>(net::ErrorCode::kMessageTooLarge);
    } else if (r.rule == Rule::kNetPar01 || r.rule == Rule::kNetPar02 ||
               r.rule == Rule::kNetPar03) {
      code = static_cast<uint32_t>(net::ErrorCode::kShardMismatch);
    }
    uint32_t stream = framer_.header().stream_id;
    if (stream == 0)
      stream = outstanding_.empty() ? 1 : outstanding_.front().stream_id;
    net::AppendError(
        &out_, stream,
        {code, net::TruncateUtf8(status().message(), kMaxErrorText)});
  }

  // The connection is over: no ERROR to send.
  void FailQuietly(const Rejection& r) {
    if (status().ok()) shared_.status = ToStatus(r);
  }

  Rejection FirstMessage(const MessageHeader& h, uint64_t at,
                         absl::Span<const uint8_t> payload) {
    if (Is(h, MessageType::kError)) return OnErrorMessage(h, at, payload);
    if (!Is(h, MessageType::kServerHello)) {
      return {Rule::kNet06, at,
              "the server's first message is not SERVER_HELLO or ERROR"};
    }
    net::Hello hello;
    const Rejection r = net::DecodeHello(payload, &hello);
    if (!r.ok()) return {r.rule, at + net::kHeaderSize + r.offset, r.message};
    // § SERVER_HELLO: the server's version must be <= ours.
    if (hello.protocol_version == 0 ||
        hello.protocol_version > net::kProtocolVersion) {
      return {Rule::kNetMsg01, at + net::kHeaderSize,
              "SERVER_HELLO names a protocol version this client does not "
              "speak"};
    }
    hello_ = true;
    server_max_ = hello.max_message_size;
    SendRequests();
    CheckDone();
    return kAccepted;
  }

  void SendRequests() {
    while (next_key_ < options_.keys.size() &&
           outstanding_.size() < options_.max_outstanding) {
      const std::string& key = options_.keys[next_key_];
      net::TensorRequest req;
      req.key = key;
      req.preferred_device = options_.preferred_device;
      req.min_alignment = options_.min_alignment;
      req.request_flags = options_.parallel_ok ? net::kRequestParallelOk : 0;
      if (!container::IsValidUtf8(key) || net::RequestSize(req) > server_max_) {
        shared_.status = absl::InvalidArgumentError(absl::StrCat(
            "tensor key '", net::TruncateUtf8(key, 256),
            "' is not valid UTF-8 or too long for the server's message size"));
        return;
      }
      const uint32_t stream = next_stream_++;
      net::AppendRequest(&out_, stream, req);
      Outstanding o;
      o.key = next_key_;
      o.stream_id = stream;
      outstanding_.push_back(std::move(o));
      ++next_key_;
    }
  }

  void CheckDone() {
    if (!status().ok() || satisfied_) return;
    if (outstanding_.empty() && next_key_ == options_.keys.size()) {
      satisfied_ = true;
      if (shared_.sink != nullptr)
        shared_.status = shared_.sink->OnEndOfStream();
    }
  }

  // The open response stream `id` now carries (shards may move a response
  // to another stream), or null.
  ResponseStream* StreamOn(uint32_t id) const {
    const Outstanding* o = ResponseOn(id);
    if (o == nullptr) return nullptr;
    if (o->stream->stream_id() == id) return o->stream;
    for (ResponseStream* s : o->shard_streams) {
      if (s->stream_id() == id) return s;
    }
    return nullptr;
  }

  // The response whose streams include `id`, or null.
  const Outstanding* ResponseOn(uint32_t id) const {
    for (const Outstanding& o : outstanding_) {
      if (o.stream == nullptr) continue;
      if (o.stream->stream_id() == id) return &o;
      for (const ResponseStream* s : o.shard_streams) {
        if (s->stream_id() == id) return &o;
      }
    }
    return nullptr;
  }

  Outstanding* RequestOn(uint32_t id) {
    for (Outstanding& o : outstanding_) {
      if (o.stream_id == id) return &o;
    }
    return nullptr;
  }

  // LIMIT-OPEN-STREAMS bounds the streams open at once (each holds a walker
  // and, until its turn, a spool).
  Rejection Open(Outstanding* o, uint64_t at) {
    HURRAY_RETURN_IF_REJECTED(NewStream(at, &o->stream));
    o->stream->Start(o->stream_id, o->key, o == &outstanding_.front());
    if (o == &outstanding_.front()) o->live = o->stream;
    return kAccepted;
  }

  // A shard sequence of `o`'s response on stream `id`.
  Rejection OpenShard(Outstanding* o, uint32_t id, uint64_t at) {
    ResponseStream* s = nullptr;
    HURRAY_RETURN_IF_REJECTED(NewStream(at, &s));
    s->StartShard(id, *o->stream);
    o->shard_streams.push_back(s);
    return kAccepted;
  }

  Rejection NewStream(uint64_t at, ResponseStream** out) {
    if (open_streams_ >= options_.max_open_streams) {
      return {Rule::kLimitOpenStreams, at + 4,
              "a response on more streams at once than the open stream "
              "limit"};
    }
    std::unique_ptr<ResponseStream> s;
    if (free_.empty()) {
      s = std::make_unique<ResponseStream>(&shared_);
    } else {
      s = std::move(free_.back());
      free_.pop_back();
    }
    *out = s.get();
    streams_.push_back(std::move(s));
    ++open_streams_;
    return kAccepted;
  }

  void Close(ResponseStream* s) {
    for (size_t i = 0; i < streams_.size(); ++i) {
      if (streams_[i].get() != s) continue;
      free_.push_back(std::move(streams_[i]));
      streams_.erase(streams_.begin() + i);
      --open_streams_;
      return;
    }
  }

  // Responses complete at the front are done (what their streams still
  // hold is delivered, primary stream first); the next one goes live.
  Rejection Advance(uint64_t at) {
    const size_t keys_before = keys_done_;
    Rejection r = AdvanceKeys(at);
    if (keys_done_ != keys_before && options_.on_keys_completed) {
      options_.on_keys_completed(keys_done_);
    }
    return r;
  }

  Rejection AdvanceKeys(uint64_t at) {
    while (!outstanding_.empty()) {
      Outstanding& o = outstanding_.front();
      ResponseStream* s = o.stream;
      if (s == nullptr) break;
      if (o.live == nullptr) {
        o.live = s;
        HURRAY_RETURN_IF_REJECTED(s->GoLive(at));
      }
      if (!s->complete()) {
        HURRAY_RETURN_IF_REJECTED(Schedule(&o, at));
        break;
      }
      if (!s->live()) HURRAY_RETURN_IF_REJECTED(s->GoLive(at));
      for (ResponseStream* shard : o.shard_streams) {
        if (!shard->live()) HURRAY_RETURN_IF_REJECTED(shard->GoLive(at));
        Close(shard);
      }
      Close(s);
      outstanding_.pop_front();
      ++keys_done_;
    }
    SendRequests();
    CheckDone();
    return kAccepted;
  }

  // The front response's live stream is between tensors: the first of its
  // streams with something waiting (its primary stream first, then its
  // shard streams as they began) takes the sink.
  Rejection Schedule(Outstanding* o, uint64_t at) {
    if (o != &outstanding_.front() || o->live == nullptr ||
        !o->live->between_tensors()) {
      return kAccepted;
    }
    ResponseStream* next = o->stream->pending() ? o->stream : nullptr;
    for (size_t i = 0; next == nullptr && i < o->shard_streams.size(); ++i) {
      if (o->shard_streams[i]->pending()) next = o->shard_streams[i];
    }
    if (next == nullptr || next == o->live) return kAccepted;
    o->live->GoQuiet();
    o->live = next;
    return next->GoLive(at);
  }

  Rejection OnErrorMessage(const MessageHeader& h, uint64_t at,
                           absl::Span<const uint8_t> payload) {
    net::ErrorMessage e;
    const Rejection r = net::DecodeError(payload, &e);
    if (!r.ok()) return {r.rule, at + net::kHeaderSize + r.offset, r.message};
    std::string what = "the session";
    for (const Outstanding& o : outstanding_) {
      if (o.stream_id == h.stream_id) {
        what = absl::StrCat("tensor '", options_.keys[o.key], "'");
      }
    }
    const absl::StatusCode code =
        e.code == static_cast<uint32_t>(net::ErrorCode::kUnknownTensor)
            ? absl::StatusCode::kNotFound
            : absl::StatusCode::kUnavailable;
    char hex[16];
    snprintf(hex, sizeof(hex), "0x%02X", e.code);
    shared_.status = absl::Status(
        code,
        absl::StrCat(what, ": server ERROR ", hex, " ",
                     net::ErrorCodeName(e.code), " on stream ", h.stream_id,
                     ": ", net::TruncateUtf8(e.message, kMaxErrorText)));
    shared_.status.SetPayload(kNetErrorPayloadUrl,
                              absl::Cord(absl::StrCat(e.code)));
    // Stop the framer quietly: the session is over, nothing to send back.
    return {Rule::kNet08, at, "server ERROR"};
  }

  // Which response a TENSOR_DESCRIPTOR on `id` continues or starts.
  Rejection StreamFor(uint32_t id, uint64_t at, ResponseStream** out) {
    ResponseStream* s = StreamOn(id);
    if (s != nullptr) {
      if (s->head_open()) {
        return {Rule::kNetCmp01, at,
                "a composite head's TENSOR_DESCRIPTOR is not followed "
                "directly by TENSOR_DATA_END"};
      }
      if (s->tensor_open()) {
        return {Rule::kNetTd09, at,
                "TENSOR_DESCRIPTOR before the previous tensor's "
                "TENSOR_DATA_END"};
      }
      if (s->complete()) {
        return {Rule::kNetSeq01, at + 4,
                "TENSOR_DESCRIPTOR on a stream whose response is complete"};
      }
      *out = s;
      return kAccepted;
    }
    if (outstanding_.empty()) {
      return {Rule::kNetSeq01, at,
              "TENSOR_DESCRIPTOR but no request is outstanding"};
    }
    Outstanding* o = RequestOn(id);
    if (o != nullptr && o->stream == nullptr) {
      // The first message of the response to this request.
      HURRAY_RETURN_IF_REJECTED(Open(o, at));
      *out = o->stream;
      return kAccepted;
    }
    // A shard sequence (§ Parallel Transfers) on a stream no request uses,
    // possibly interleaved with the other shards: for the oldest response
    // still waiting for shards.
    for (Outstanding& r : outstanding_) {
      if (r.stream != nullptr && r.stream->more_shards()) {
        HURRAY_RETURN_IF_REJECTED(OpenShard(&r, id, at));
        *out = r.shard_streams.back();
        return kAccepted;
      }
    }
    return {Rule::kNetSeq01, at + 4,
            "TENSOR_DESCRIPTOR on a stream with no outstanding request"};
  }

  Rejection OnDescriptorMessage(const MessageHeader& h, uint64_t at,
                                absl::Span<const uint8_t> payload) {
    ResponseStream* s = nullptr;
    HURRAY_RETURN_IF_REJECTED(StreamFor(h.stream_id, at, &s));
    net::DescriptorMessage m;
    const Rejection r =
        net::DecodeDescriptorMessage(payload, options_.parse.mode, &m);
    if (!r.ok()) return {r.rule, at + net::kHeaderSize + r.offset, r.message};
    HURRAY_RETURN_IF_REJECTED(s->OnDescriptor(m, at));
    return Schedule(h.stream_id, at);
  }

  // After a descriptor or a TENSOR_DATA_END on stream `id`: a complete front
  // response is delivered, or its sink goes to the stream with work.
  Rejection Schedule(uint32_t id, uint64_t at) {
    if (outstanding_.empty() || ResponseOn(id) != &outstanding_.front()) {
      return kAccepted;
    }
    Outstanding& front = outstanding_.front();
    if (front.stream->complete()) return Advance(at);
    return Schedule(&front, at);
  }

  Rejection OnDataEndMessage(const MessageHeader& h, uint64_t at,
                             absl::Span<const uint8_t> payload) {
    const Rejection r = net::DecodeDataEnd(payload);
    if (!r.ok()) return {r.rule, at + 8, r.message};
    ResponseStream* s = StreamOn(h.stream_id);
    if (s == nullptr || !s->tensor_open()) {
      return {Rule::kNetEnd03, at,
              "TENSOR_DATA_END with no open TENSOR_DESCRIPTOR on the stream"};
    }
    HURRAY_RETURN_IF_REJECTED(s->OnDataEnd(at));
    // The response is complete when its composites closed and its shards
    // all arrived; it is delivered once the earlier ones are.
    return Schedule(h.stream_id, at);
  }

  NetClientOptions options_;
  net::ClientShared shared_;
  net::MessageFramer framer_;

  std::vector<uint8_t> out_;
  size_t out_pos_ = 0;

  bool hello_ = false;
  bool satisfied_ = false;
  uint32_t server_max_ = 0;
  size_t next_key_ = 0;
  uint32_t next_stream_ = 1;
  std::deque<Outstanding> outstanding_;
  size_t keys_done_ = 0;

  // Open response streams, and closed ones kept for reuse.
  std::vector<std::unique_ptr<ResponseStream>> streams_;
  std::vector<std::unique_ptr<ResponseStream>> free_;
  uint32_t open_streams_ = 0;
  ResponseStream* data_ = nullptr;  // the TENSOR_DATA being read
};

NetClientSession::NetClientSession(const NetClientOptions& options,
                                   container::TensorSink* sink)
    : impl_(std::make_unique<Impl>(options, sink)) {}
NetClientSession::~NetClientSession() = default;

absl::Status NetClientSession::Feed(absl::Span<const uint8_t> chunk) {
  return impl_->Feed(chunk);
}
absl::Status NetClientSession::Finish() { return impl_->Finish(); }
absl::Status NetClientSession::FailSource(absl::string_view why) {
  return impl_->FailSource(why);
}
uint64_t NetClientSession::position() const { return impl_->position(); }
absl::Span<const uint8_t> NetClientSession::PendingOutput() const {
  return impl_->PendingOutput();
}
void NetClientSession::ConsumeOutput(size_t n) { impl_->ConsumeOutput(n); }
bool NetClientSession::Satisfied() const { return impl_->Satisfied(); }
absl::Status NetClientSession::status() const { return impl_->status(); }
uint64_t NetClientSession::tensors_completed() const {
  return impl_->tensors_completed();
}
size_t NetClientSession::keys_completed() const {
  return impl_->keys_completed();
}
bool NetClientSession::has_server_hello() const {
  return impl_->has_server_hello();
}
uint32_t NetClientSession::server_max_message_size() const {
  return impl_->server_max_message_size();
}

absl::StatusOr<std::vector<std::string>> ParseTensorList(
    absl::Span<const uint8_t> bytes) {
  std::vector<std::string> names;
  size_t at = 0;
  while (at < bytes.size()) {
    if (bytes.size() - at < 4) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor list: truncated length at byte ", at));
    }
    const uint32_t n = wire::LoadU32(bytes.data() + at);
    at += 4;
    if (bytes.size() - at < n) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor list: truncated name at byte ", at));
    }
    const absl::Span<const uint8_t> name = bytes.subspan(at, n);
    if (!container::IsValidUtf8(name)) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor list: a name is not UTF-8 at byte ", at));
    }
    names.emplace_back(reinterpret_cast<const char*>(name.data()), n);
    at += n;
  }
  return names;
}

}  // namespace hurray::stream::net
