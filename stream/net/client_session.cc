#include "stream/net/client_session.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "parser/box_overlap.h"
#include "parser/composite_validator.h"
#include "parser/decoder.h"
#include "parser/descriptor.h"
#include "parser/rules.h"
#include "parser/wire.h"
#include "stream/container/composite_binder.h"
#include "stream/container/utf8.h"
#include "stream/net/framer.h"

namespace hurray::stream {
namespace {

using net::MessageHeader;
using net::MessageType;

constexpr absl::string_view kInnerRulePayloadUrl = "hurray.dev/inner-rule";
constexpr absl::string_view kNetErrorPayloadUrl = "hurray.dev/net-error";
constexpr size_t kMaxErrorText = 1024;

bool Is(const MessageHeader& h, MessageType t) {
  return h.type == static_cast<uint32_t>(t);
}

uint64_t SaturatingMul(uint64_t a, uint64_t b) {
  uint64_t r;
  return wire::CheckedMul(a, b, &r) ? r : std::numeric_limits<uint64_t>::max();
}

// `outer` as a status whose message also names the inner rejection, which
// the payload kInnerRulePayloadUrl carries too (NET-TD-03, NET-CMP-02 wrap
// the validators' rule ids).
absl::Status Wrap(const Rejection& outer, const Rejection& inner,
                  uint64_t inner_absolute_offset) {
  const absl::Status s = ToStatus(outer);
  const absl::string_view id = RuleId(inner.rule);
  absl::Status wrapped(
      s.code(), absl::StrCat(s.message(), ": ", id, " at byte ",
                             inner_absolute_offset, ": ", inner.message));
  s.ForEachPayload([&](absl::string_view url, const absl::Cord& payload) {
    wrapped.SetPayload(url, payload);
  });
  wrapped.SetPayload(kInnerRulePayloadUrl, absl::Cord(id));
  return wrapped;
}

}  // namespace

class NetClientSession::Impl : public net::FrameHandler {
 public:
  Impl(const NetClientOptions& options, TensorSink* sink)
      : options_(options),
        sink_(sink),
        framer_(net::FramerOptions{options.max_message_size, options.parse.mode,
                                   options.agreed_private_types},
                this),
        decoder_(std::make_unique<DescriptorDecoder>(options.parse)),
        composites_(options.parse.mode, options.limits) {
    if (options_.max_outstanding == 0) options_.max_outstanding = 1;
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
    if (!status_.ok()) return status_;
    const Rejection r = framer_.Feed(chunk);
    if (!r.ok() && status_.ok()) Fail(r);
    return status_;
  }

  absl::Status Finish() {
    if (!status_.ok() || satisfied_) return status_;
    Rejection r = framer_.Finish();
    if (r.ok()) {
      // Between messages, but responses are missing.
      r = {Rule::kNet05, framer_.position(),
           hello_ ? "the connection ended before every requested tensor "
                    "arrived"
                  : "the connection ended before SERVER_HELLO"};
    }
    FailQuietly(r);
    return status_;
  }

  absl::Status FailSource(absl::string_view why) {
    if (!status_.ok() || satisfied_) return status_;
    status_ = ToStatus(
        {Rule::kStreamIo, framer_.position(), "the byte source failed"});
    status_ = absl::Status(status_.code(),
                           absl::StrCat(status_.message(), ": ", why));
    status_.SetPayload(kRulePayloadUrl, absl::Cord(RuleId(Rule::kStreamIo)));
    status_.SetPayload(kOffsetPayloadUrl,
                       absl::Cord(absl::StrCat(framer_.position())));
    return status_;
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
  const absl::Status& status() const { return status_; }
  uint64_t tensors_completed() const { return tensors_completed_; }
  size_t keys_completed() const { return keys_done_; }
  bool has_server_hello() const { return hello_; }
  uint32_t server_max_message_size() const { return server_max_; }

  // --- FrameHandler ----------------------------------------------------------

  Rejection OnMessage(const MessageHeader& h, uint64_t at,
                      absl::Span<const uint8_t> payload) override {
    if (!status_.ok()) return Over(at);
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
    if (!status_.ok()) return Over(at);
    if (!hello_) {
      return {Rule::kNet06, at,
              "the server's first message is not SERVER_HELLO or ERROR"};
    }
    if (!open_ || h.stream_id != tensor_stream_) {
      return {Rule::kNetDat01, at,
              "TENSOR_DATA on a stream with no open TENSOR_DESCRIPTOR"};
    }
    if (head_) {
      return {Rule::kNetCmp01, at,
              "a composite head's TENSOR_DESCRIPTOR is not followed directly "
              "by TENSOR_DATA_END"};
    }
    if (total_ == 0) {
      return {Rule::kNetDat05, at,
              "TENSOR_DATA for a tensor whose total_data_bytes is 0"};
    }
    if (offset != received_) {
      return {Rule::kNetDat03, at + net::kHeaderSize,
              "byte_offset_in_buffer is not the number of bytes received"};
    }
    const uint64_t length = h.payload_length - net::kDataPrefixSize;
    if (length > total_ - received_) {
      return {Rule::kNetDat04, at + 8, "the frame goes past total_data_bytes"};
    }
    return kAccepted;
  }

  Rejection OnDataPiece(uint64_t at, absl::Span<const uint8_t> piece) override {
    received_ += piece.size();
    session_bytes_ += piece.size();
    // RESOLUTIONS.md 15: the data plane is the buffers back to back.
    const TensorDescriptor& d = decoder_->descriptor();
    while (!piece.empty() && buffer_ < d.buffer_count) {
      const uint64_t size = d.buffers[buffer_].byte_size;
      if (in_buffer_ == size) {
        ++buffer_;
        in_buffer_ = 0;
        continue;
      }
      const size_t n = static_cast<size_t>(
          std::min<uint64_t>(piece.size(), size - in_buffer_));
      if (sink_ != nullptr) {
        HURRAY_RETURN_IF_REJECTED(FromSink(
            sink_->OnBufferPiece(buffer_, in_buffer_, piece.first(n)), at));
      }
      in_buffer_ += n;
      piece.remove_prefix(n);
    }
    // Bytes past Σ byte_size (permissive mode, NET-TD-06 relaxed) are
    // dropped.
    return kAccepted;
  }

  Rejection OnDataEnd() override { return kAccepted; }

 private:
  struct Outstanding {
    size_t key;
    uint32_t stream_id;
  };

  // A sink callback's result: a failure becomes the session's status and
  // stops the framer quietly (the sink's failure is no fault of the
  // server's: no ERROR is sent).
  Rejection FromSink(absl::Status s, uint64_t at) {
    if (s.ok()) return kAccepted;
    if (status_.ok()) status_ = std::move(s);
    return Over(at);
  }

  // The session already failed (e.g. a request could not be sent): stops
  // the framer; the status stays what it is.
  static Rejection Over(uint64_t at) {
    return {Rule::kNet08, at, "the session is over"};
  }

  void Fail(const Rejection& r) {
    if (!status_.ok()) return;
    if (!wrapped_.ok()) {
      status_ = wrapped_;
    } else {
      status_ = ToStatus(r);
    }
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
        {code, net::TruncateUtf8(status_.message(), kMaxErrorText)});
  }

  // The connection is over: no ERROR to send.
  void FailQuietly(const Rejection& r) {
    if (status_.ok()) status_ = ToStatus(r);
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
      if (!IsValidUtf8(key) || net::RequestSize(req) > server_max_) {
        status_ = absl::InvalidArgumentError(absl::StrCat(
            "tensor key '", net::TruncateUtf8(key, 256),
            "' is not valid UTF-8 or too long for the server's message size"));
        return;
      }
      const uint32_t stream = next_stream_++;
      net::AppendRequest(&out_, stream, req);
      outstanding_.push_back({next_key_, stream});
      ++next_key_;
    }
  }

  void CheckDone() {
    if (!status_.ok() || satisfied_) return;
    if (outstanding_.empty() && next_key_ == options_.keys.size()) {
      satisfied_ = true;
      if (sink_ != nullptr) status_ = sink_->OnEndOfStream();
    }
  }

  bool StreamOfOtherRequest(uint32_t stream) const {
    for (size_t i = 1; i < outstanding_.size(); ++i) {
      if (outstanding_[i].stream_id == stream) return true;
    }
    return false;
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
    status_ = absl::Status(
        code,
        absl::StrCat(what, ": server ERROR ", hex, " ",
                     net::ErrorCodeName(e.code), " on stream ", h.stream_id,
                     ": ", net::TruncateUtf8(e.message, kMaxErrorText)));
    status_.SetPayload(kNetErrorPayloadUrl, absl::Cord(absl::StrCat(e.code)));
    // Stop the framer quietly: the session is over, nothing to send back.
    return {Rule::kNet08, at, "server ERROR"};
  }

  Rejection OnDescriptorMessage(const MessageHeader& h, uint64_t at,
                                absl::Span<const uint8_t> payload) {
    if (open_ && h.stream_id == tensor_stream_) {
      if (head_) {
        return {Rule::kNetCmp01, at,
                "a composite head's TENSOR_DESCRIPTOR is not followed "
                "directly by TENSOR_DATA_END"};
      }
      return {Rule::kNetTd09, at,
              "TENSOR_DESCRIPTOR before the previous tensor's "
              "TENSOR_DATA_END"};
    }
    if (open_ || outstanding_.empty()) {
      return {Rule::kNetSeq01, at,
              open_ ? "TENSOR_DESCRIPTOR on another stream while a tensor is "
                      "open (interleaved streams are not supported)"
                    : "TENSOR_DESCRIPTOR but no request is outstanding"};
    }
    const bool more_shards = shards_ > 1 && shards_done_ < shards_;
    if (h.stream_id != outstanding_.front().stream_id &&
        (!more_shards || StreamOfOtherRequest(h.stream_id))) {
      return {Rule::kNetSeq01, at + 4,
              "TENSOR_DESCRIPTOR on a stream that is not the oldest "
              "outstanding request's"};
    }
    const uint64_t base = at + net::kHeaderSize;
    net::DescriptorMessage m;
    Rejection r =
        net::DecodeDescriptorMessage(payload, options_.parse.mode, &m);
    if (!r.ok()) return {r.rule, base + r.offset, r.message};
    const uint64_t transport_at = base + m.descriptor.size();

    // The embedded descriptor, decoded and validated (NET-TD-03).
    decoder_->Reset();
    FeedResult fr = decoder_->Feed(m.descriptor);
    if (fr.state == DecodeState::kNeedMore) decoder_->Finish();
    if (decoder_->state() != DecodeState::kDone) {
      const Rejection inner = decoder_->rejection();
      const Rejection outer{Rule::kNetTd03, base + inner.offset,
                            "the embedded descriptor is invalid"};
      wrapped_ = Wrap(outer, inner, base + inner.offset);
      return outer;
    }
    const TensorDescriptor& d = decoder_->descriptor();
    const net::TransportFields& t = m.transport;
    // NET-TD-08: TENSOR_DATA_END is the only synchronisation across machines
    // (§ Completion): every buffer must be SYNC_PRODUCER_SYNCED.
    if (options_.cross_machine) {
      for (uint32_t i = 0; i < d.buffer_count; ++i) {
        if (d.buffers[i].sync_mode != 0) {
          return {Rule::kNetTd08, base + d.offsets.handle(i) + 13,
                  "a buffer's sync_mode is not SYNC_PRODUCER_SYNCED on a "
                  "cross-machine transport"};
        }
      }
    }
    if (t.total_shards == 0 || t.shard_index >= t.total_shards) {
      return {Rule::kNetTd04, transport_at + 8,
              "shard_index is not below total_shards"};
    }
    if (t.total_shards > 1 && !d.has(flag::kHasShard)) {
      return {Rule::kNetTd05, transport_at + 12,
              "a sharded transfer whose descriptor has no shard section"};
    }
    // Limits from declared sizes, before a byte of data is read.
    uint64_t sum = 0;
    for (uint32_t i = 0; i < d.buffer_count; ++i) {
      if (d.buffers[i].byte_size > options_.limits.max_buffer_bytes) {
        return {Rule::kLimitBufferBytes, base + d.offsets.handle(i),
                "a buffer is larger than the buffer byte limit"};
      }
      sum += d.buffers[i].byte_size;  // ≤ 255 · 2^56: no overflow
    }
    if (t.total_data_bytes >
        SaturatingMul(options_.limits.max_buffer_bytes,
                      std::max<uint32_t>(d.buffer_count, 1))) {
      return {Rule::kLimitBufferBytes, transport_at,
              "total_data_bytes is larger than the buffer byte limit"};
    }
    if (t.total_data_bytes >
        options_.limits.max_total_bytes -
            std::min(options_.limits.max_total_bytes, session_bytes_)) {
      return {Rule::kLimitTotalBytes, transport_at,
              "the data would pass the total byte limit"};
    }
    const bool head = d.layout_tag == layout_tag::kComposite;
    if (head && t.total_data_bytes != 0) {
      return {Rule::kNetTd07, transport_at,
              "a composite head declares data bytes"};
    }
    // RESOLUTIONS.md 15: total_data_bytes = Σ byte_size. Fewer bytes could
    // never fill the buffers, so that is refused in permissive mode too.
    if (t.total_data_bytes != sum &&
        (Applies(Rule::kNetTd06, options_.parse.mode) ||
         t.total_data_bytes < sum)) {
      return {Rule::kNetTd06, transport_at,
              "total_data_bytes is not the sum of the buffers' byte_size"};
    }
    r = composites_.OnDescriptor(d, base);
    if (!r.ok()) {
      if (RuleId(r.rule).substr(0, 4) == "CMP-") {
        const Rejection outer{Rule::kNetCmp02, r.offset,
                              "a composite member check failed"};
        wrapped_ = Wrap(outer, r, r.offset);
        return outer;
      }
      return r;
    }
    HURRAY_RETURN_IF_REJECTED(CheckShard(d, t, base, transport_at));

    if (!key_reported_) {
      key_reported_ = true;
      if (sink_ != nullptr) {
        HURRAY_RETURN_IF_REJECTED(FromSink(
            sink_->OnTensorKey(options_.keys[outstanding_.front().key]), at));
      }
    }
    if (sink_ != nullptr) {
      HURRAY_RETURN_IF_REJECTED(FromSink(sink_->OnDescriptor(d), at));
    }
    open_ = true;
    head_ = head;
    tensor_stream_ = h.stream_id;
    total_ = t.total_data_bytes;
    received_ = 0;
    buffer_ = 0;
    in_buffer_ = 0;
    return kAccepted;
  }

  // § Parallel Transfers, § Shard Consistency.
  Rejection CheckShard(const TensorDescriptor& d, const net::TransportFields& t,
                       uint64_t base, uint64_t transport_at) {
    if (shards_ <= 1) {
      if (t.total_shards == 1) return kAccepted;
      if (t.total_shards > options_.limits.max_members) {
        return {Rule::kLimitMembers, transport_at + 12,
                "more shards than the member limit"};
      }
      // The first shard fixes what the others must share.
      shards_ = t.total_shards;
      shards_done_ = 0;
      shard_seen_.assign(shards_, false);
      shard_rank_ = d.rank;
      shard_type_ = d.type_tag;
      shard_layout_ = d.layout_tag;
      std::copy(d.shard.parent_shape, d.shard.parent_shape + d.rank,
                parent_shape_);
      boxes_.clear();
    } else if (t.total_shards != shards_) {
      return {Rule::kNetPar03, transport_at + 12,
              "shards of one tensor declare different total_shards"};
    }
    if (shard_seen_[t.shard_index]) {
      return {Rule::kNetPar03, transport_at + 8,
              "two shards with the same shard_index"};
    }
    if (d.rank != shard_rank_ || d.type_tag != shard_type_ ||
        d.layout_tag != shard_layout_ ||
        !std::equal(parent_shape_, parent_shape_ + d.rank,
                    d.shard.parent_shape)) {
      return {Rule::kNetPar01,
              base + (d.has(flag::kHasShard) ? d.offsets.shard : 0),
              "shards differ in parent_shape, element type or layout"};
    }
    shard_seen_[t.shard_index] = true;
    // The box [shard_offset, shard_offset + shape) inside parent_shape.
    boxes_.push_back(0);
    for (uint32_t k = 0; k < d.rank; ++k)
      boxes_.push_back(d.shard.shard_offset[k]);
    for (uint32_t k = 0; k < d.rank; ++k) {
      uint64_t hi;
      if (!wire::CheckedAdd(d.shard.shard_offset[k], d.shape[k], &hi) ||
          hi > parent_shape_[k]) {
        return {Rule::kNetPar02, base + d.offsets.shard,
                "a shard lies outside parent_shape"};
      }
      boxes_.push_back(hi);
    }
    return kAccepted;
  }

  // Every shard arrived: the boxes must tile parent_shape exactly.
  Rejection CloseShards(uint64_t at) {
    const uint32_t rank = shard_rank_;
    const size_t words = 2 * rank + 1;
    CompositeValidator::Count total, whole;
    whole.Set(1);
    for (uint32_t k = 0; k < rank; ++k) whole.Multiply(parent_shape_[k]);
    for (uint32_t i = 0; i < shards_; ++i) {
      CompositeValidator::Count v;
      v.Set(1);
      for (uint32_t k = 0; k < rank; ++k) {
        v.Multiply(boxes_[i * words + 1 + rank + k] -
                   boxes_[i * words + 1 + k]);
      }
      total.Add(v);
    }
    std::vector<uint32_t> order, active;
    order.reserve(shards_);
    active.reserve(shards_);
    uint32_t a = 0, b = 0;
    const OverlapResult o =
        FindOverlap(boxes_.data(), shards_, rank, parent_shape_,
                    options_.limits.max_overlap_work, &order, &active, &a, &b);
    if (o == OverlapResult::kFound) {
      return {Rule::kNetPar02, at, "two shards overlap"};
    }
    if (o == OverlapResult::kOverBudget) {
      return {Rule::kLimitMembers, at,
              "checking the shards for overlap needs more work than allowed"};
    }
    if (!(total == whole)) {
      return {Rule::kNetPar02, at, "the shards do not cover parent_shape"};
    }
    shards_ = 0;
    return kAccepted;
  }

  Rejection OnDataEndMessage(const MessageHeader& h, uint64_t at,
                             absl::Span<const uint8_t> payload) {
    const Rejection r = net::DecodeDataEnd(payload);
    if (!r.ok()) return {r.rule, at + 8, r.message};
    if (!open_ || h.stream_id != tensor_stream_) {
      return {Rule::kNetEnd03, at,
              "TENSOR_DATA_END with no open TENSOR_DESCRIPTOR on the stream"};
    }
    if (received_ != total_) {
      return {Rule::kNetEnd02, at,
              "TENSOR_DATA_END before total_data_bytes arrived"};
    }
    open_ = false;
    head_ = false;
    if (sink_ != nullptr) {
      HURRAY_RETURN_IF_REJECTED(FromSink(sink_->OnTensorEnd(), at));
    }
    ++tensors_completed_;
    if (shards_ > 1 && ++shards_done_ == shards_) {
      HURRAY_RETURN_IF_REJECTED(CloseShards(at));
    }
    // The response is complete when its composites closed and its shards
    // all arrived.
    if (composites_.open() == 0 && shards_ <= 1) {
      outstanding_.pop_front();
      key_reported_ = false;
      ++keys_done_;
      SendRequests();
      CheckDone();
    }
    return kAccepted;
  }

  NetClientOptions options_;
  TensorSink* sink_;
  net::MessageFramer framer_;
  std::unique_ptr<DescriptorDecoder> decoder_;
  CompositeBinder composites_;

  absl::Status status_;
  absl::Status wrapped_;  // the status for a wrapping rejection
  std::vector<uint8_t> out_;
  size_t out_pos_ = 0;

  bool hello_ = false;
  bool satisfied_ = false;
  uint32_t server_max_ = 0;
  size_t next_key_ = 0;
  uint32_t next_stream_ = 1;
  std::deque<Outstanding> outstanding_;
  size_t keys_done_ = 0;
  bool key_reported_ = false;
  uint64_t tensors_completed_ = 0;
  uint64_t session_bytes_ = 0;

  // The open tensor.
  bool open_ = false;
  bool head_ = false;
  uint32_t tensor_stream_ = 0;
  uint64_t total_ = 0;
  uint64_t received_ = 0;
  uint32_t buffer_ = 0;
  uint64_t in_buffer_ = 0;

  // Shards of the current response.
  uint32_t shards_ = 0;
  uint32_t shards_done_ = 0;
  std::vector<bool> shard_seen_;
  uint32_t shard_rank_ = 0;
  uint8_t shard_type_ = 0;
  uint8_t shard_layout_ = 0;
  uint64_t parent_shape_[kMaxRank] = {};
  std::vector<uint64_t> boxes_;
};

NetClientSession::NetClientSession(const NetClientOptions& options,
                                   TensorSink* sink)
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
    if (!IsValidUtf8(name)) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor list: a name is not UTF-8 at byte ", at));
    }
    names.emplace_back(reinterpret_cast<const char*>(name.data()), n);
    at += n;
  }
  return names;
}

}  // namespace hurray::stream
