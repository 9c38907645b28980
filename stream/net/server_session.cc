#include "stream/net/server_session.h"

#include <algorithm>
#include <deque>
#include <string>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "parser/descriptor.h"
#include "parser/encoder.h"
#include "parser/wire.h"
#include "stream/net/client_session.h"
#include "stream/net/framer.h"

namespace hurray::stream::net {
namespace {

using net::MessageHeader;
using net::MessageType;

constexpr size_t kMaxErrorText = 1024;
// Stream ids remembered as closed (NET-08) before the connection is refused.
constexpr size_t kMaxClosedStreams = 1u << 16;
// The smallest max_message_size a client may advertise: a TENSOR_DATA frame
// needs its 8-byte offset and at least one data byte.
constexpr uint32_t kMinClientMessageSize = 64;

}  // namespace

std::vector<uint8_t> TensorListBytes(const container::HrryFile& file) {
  std::vector<uint8_t> out;
  for (const container::IndexEntry& e : file.index().entries()) {
    uint8_t n[4];
    wire::StoreU32(n, static_cast<uint32_t>(e.name.size()));
    out.insert(out.end(), n, n + 4);
    out.insert(out.end(), e.name.begin(), e.name.end());
  }
  return out;
}

class NetServerSession::Impl : public net::FrameHandler {
 public:
  Impl(const container::HrryFile* file, const NetServerOptions& options)
      : file_(file),
        options_(options),
        framer_(net::FramerOptions{options.max_message_size, options.mode,
                                   options.agreed_private_types},
                this),
        scratch_(std::make_unique<TensorDescriptor>()) {
    // The layouts we can produce: those of the file's tensors (we never
    // transcode), plus row-major for the listing tensor.
    layouts_.push_back(layout_tag::kRowMajor);
    for (const container::IndexEntry& e : file_->index().entries()) {
      if (!file_->ReadDescriptor(e, scratch_.get()).ok()) continue;
      const uint8_t tag = scratch_->layout_tag;
      if (tag >= 0xF0 && tag <= 0xFE) continue;  // needs metadata: skip
      if (std::find(layouts_.begin(), layouts_.end(), tag) == layouts_.end()) {
        layouts_.push_back(tag);
      }
    }
  }

  // --- Input -----------------------------------------------------------------

  absl::Status Feed(absl::Span<const uint8_t> chunk) {
    if (!status_.ok() || closing_ || finished_) return status_;
    const Rejection r = framer_.Feed(chunk);
    if (!r.ok()) Fail(r);
    return status_;
  }

  absl::Status Finish() {
    if (!status_.ok() || closing_ || finished_) return status_;
    finished_ = true;
    const Rejection r = framer_.Finish();
    if (!r.ok()) {
      status_ = ToStatus(r);
      closing_ = true;  // nobody to send an ERROR to
      DropWork();
    }
    return status_;
  }

  // --- Output ----------------------------------------------------------------

  absl::Span<const absl::Span<const uint8_t>> Output() {
    if (part_ == parts_.size()) Generate();
    return absl::MakeConstSpan(parts_).subspan(part_);
  }

  void ConsumeOutput(size_t n) {
    while (n > 0 && part_ < parts_.size()) {
      absl::Span<const uint8_t>& p = parts_[part_];
      const size_t k = std::min(n, p.size());
      p.remove_prefix(k);
      n -= k;
      if (p.empty()) ++part_;
    }
    if (part_ == parts_.size()) {
      parts_.clear();
      part_ = 0;
      ctrl_.clear();
    }
  }

  bool WantsInput() {
    return !closing_ && !finished_ && Output().empty() && !job_active_ &&
           requests_.empty();
  }

  bool Closed() {
    return (closing_ || finished_) && Output().empty() && !job_active_ &&
           requests_.empty();
  }

  const absl::Status& status() const { return status_; }
  uint64_t position() const { return framer_.position(); }
  uint64_t tensors_sent() const { return tensors_sent_; }
  bool hello_received() const { return hello_; }
  bool in_message() const { return !framer_.between_messages(); }
  uint64_t message_at() const { return framer_.message_at(); }
  size_t buffered_bytes() const { return framer_.buffered_bytes(); }

  // --- FrameHandler ----------------------------------------------------------

  Rejection OnMessage(const MessageHeader& h, uint64_t at,
                      absl::Span<const uint8_t> payload) override {
    if (!hello_) return FirstMessage(h, at, payload);
    if (Is(h, MessageType::kTensorDataEnd) &&
        refused_puts_.contains(h.stream_id)) {
      refused_puts_.erase(h.stream_id);  // the refused PUT's data is over
      return kAccepted;
    }
    if (closed_.contains(h.stream_id)) {
      return {Rule::kNet08, at, "a message on a stream after an ERROR"};
    }
    switch (static_cast<MessageType>(h.type)) {
      case MessageType::kTensorRequest:
        return OnRequest(h, at, payload);
      case MessageType::kTensorPut: {
        net::TensorPut put;
        const Rejection r = net::DecodePut(payload, &put);
        if (!r.ok())
          return {r.rule, at + net::kHeaderSize + r.offset, r.message};
        // interchange.md § TENSOR_PUT: a server may refuse a PUT for any
        // reason, with ERROR, and close the stream.
        SendError(h.stream_id, net::ErrorCode::kInvalidMessage,
                  "TENSOR_PUT is not accepted by this server");
        refused_puts_.insert(h.stream_id);
        return kAccepted;
      }
      case MessageType::kTensorDataEnd: {
        const Rejection r = net::DecodeDataEnd(payload);
        if (!r.ok()) return {r.rule, at + 8, r.message};
        return {Rule::kNetEnd03, at,
                "TENSOR_DATA_END with no open TENSOR_PUT on the stream"};
      }
      case MessageType::kError: {
        net::ErrorMessage e;
        const Rejection r = net::DecodeError(payload, &e);
        if (!r.ok())
          return {r.rule, at + net::kHeaderSize + r.offset, r.message};
        // The client closes the stream (§ Error Handling): stop serving it.
        HURRAY_RETURN_IF_REJECTED(Close(h.stream_id, at));
        if (job_active_ && job_stream_ == h.stream_id) EndJob();
        requests_.erase(std::remove_if(requests_.begin(), requests_.end(),
                                       [&](const Request& q) {
                                         return q.stream == h.stream_id;
                                       }),
                        requests_.end());
        return kAccepted;
      }
      case MessageType::kPing:
        net::AppendMessage(&pending_, MessageType::kPong, h.stream_id, payload);
        return kAccepted;
      case MessageType::kPong:
        return kAccepted;
      case MessageType::kClientHello:
        return {Rule::kNetSeq01, at, "a second CLIENT_HELLO"};
      case MessageType::kServerHello:
      case MessageType::kTensorDescriptor:
      case MessageType::kTensorPutAck:
        if (Applies(Rule::kNet07, options_.mode)) {
          return {Rule::kNet07, at,
                  "a server-to-client message arrived from the client"};
        }
        return kAccepted;
      case MessageType::kRdmaRegister:
      case MessageType::kRdmaReady:
        return {Rule::kNetSeq01, at,
                "an RDMA message, but no RDMA data plane was negotiated"};
      default:
        return kAccepted;  // an agreed private type
    }
  }

  Rejection OnDataBegin(const MessageHeader& h, uint64_t at,
                        uint64_t /*offset*/) override {
    if (!hello_) {
      return {Rule::kNet06, at, "the first message is not CLIENT_HELLO"};
    }
    if (refused_puts_.contains(h.stream_id)) {
      return kAccepted;  // data of a refused PUT, already in flight
    }
    if (closed_.contains(h.stream_id)) {
      return {Rule::kNet08, at, "a message on a stream after an ERROR"};
    }
    return {Rule::kNetDat01, at,
            "TENSOR_DATA on a stream with no open TENSOR_PUT"};
  }
  Rejection OnDataPiece(uint64_t, absl::Span<const uint8_t>) override {
    return kAccepted;
  }
  Rejection OnDataEnd() override { return kAccepted; }

 private:
  struct Request {
    uint32_t stream;
    std::string key;
  };
  enum class Step : uint8_t { kDescriptor, kData, kEnd };

  static bool Is(const MessageHeader& h, MessageType t) {
    return h.type == static_cast<uint32_t>(t);
  }

  void Fail(const Rejection& r) {
    if (!status_.ok()) return;
    status_ = ToStatus(r);
    const net::ErrorCode code =
        r.rule == Rule::kNet01 ? net::ErrorCode::kMessageTooLarge
        : version_mismatch_    ? net::ErrorCode::kProtocolVersionMismatch
                               : net::ErrorCode::kInvalidMessage;
    const uint32_t stream = framer_.header().stream_id;
    SendError(stream == 0 ? 1 : stream, code, status_.message());
    closing_ = true;
    DropWork();
  }

  void DropWork() {
    requests_.clear();
    if (job_active_) EndJob();
  }

  void SendError(uint32_t stream, net::ErrorCode code, absl::string_view text) {
    net::AppendError(
        &pending_, stream,
        {static_cast<uint32_t>(code), net::TruncateUtf8(text, kMaxErrorText)});
    if (closed_.size() < kMaxClosedStreams) closed_.insert(stream);
  }

  Rejection Close(uint32_t stream, uint64_t at) {
    if (closed_.size() >= kMaxClosedStreams) {
      return {Rule::kNet08, at, "too many closed streams on one connection"};
    }
    closed_.insert(stream);
    return kAccepted;
  }

  Rejection FirstMessage(const MessageHeader& h, uint64_t at,
                         absl::Span<const uint8_t> payload) {
    if (!Is(h, MessageType::kClientHello)) {
      return {Rule::kNet06, at, "the first message is not CLIENT_HELLO"};
    }
    net::Hello hello;
    const Rejection r = net::DecodeHello(payload, &hello);
    if (!r.ok()) return {r.rule, at + net::kHeaderSize + r.offset, r.message};
    if (hello.protocol_version == 0) {
      version_mismatch_ = true;
      return {Rule::kNetMsg01, at + net::kHeaderSize,
              "CLIENT_HELLO protocol_version 0 is not a version"};
    }
    if (hello.max_message_size < kMinClientMessageSize) {
      return {Rule::kNetMsg01, at + net::kHeaderSize + 4,
              "the client's max_message_size is too small to carry data"};
    }
    hello_ = true;
    client_max_ = hello.max_message_size;
    net::Hello ours;
    ours.protocol_version = net::kProtocolVersion;  // <= the client's
    ours.max_message_size = options_.max_message_size;
    ours.layouts =
        net::LayoutList(static_cast<uint16_t>(layouts_.size()), layouts_);
    static constexpr uint8_t kCpu[] = {device_tag::kCpu};
    static constexpr uint8_t kStandard[] = {memory_class::kStandard};
    ours.devices = kCpu;
    ours.memory_classes = kStandard;
    net::AppendHello(&pending_, MessageType::kServerHello, h.stream_id, ours);
    return kAccepted;
  }

  Rejection OnRequest(const MessageHeader& h, uint64_t at,
                      absl::Span<const uint8_t> payload) {
    net::TensorRequest req;
    const Rejection r = net::DecodeRequest(payload, &req);
    if (!r.ok()) return {r.rule, at + net::kHeaderSize + r.offset, r.message};
    // Half-duplex per stream (§ Overview): one request at a time.
    bool busy = job_active_ && job_stream_ == h.stream_id;
    for (const Request& q : requests_) busy = busy || q.stream == h.stream_id;
    if (busy) {
      return {Rule::kNetSeq01, at + 4,
              "a TENSOR_REQUEST on a stream whose response is not over"};
    }
    requests_.push_back({h.stream_id, std::string(req.key)});
    return kAccepted;
  }

  // --- Producing responses ---------------------------------------------------

  // Fills parts_ with the next bytes to send: control bytes first, then one
  // frame of the response in progress.
  void Generate() {
    parts_.clear();
    part_ = 0;
    ctrl_.clear();
    ctrl_.swap(pending_);
    if (!closing_) {
      while (!job_active_ && !requests_.empty()) StartJob();
      if (job_active_) NextFrame();
    }
    // ctrl_ is complete now: views into it stay valid until consumed.
    if (!ctrl_.empty())
      parts_.insert(parts_.begin(), absl::MakeConstSpan(ctrl_));
  }

  void StartJob() {
    Request q = std::move(requests_.front());
    requests_.pop_front();
    tensors_.clear();
    synthetic_ = nullptr;
    // kIdentityKey is reserved (a tensor of the file with that name would
    // let two files pass for one); kListKey yields to a tensor of its name.
    const container::IndexEntry* e =
        q.key == kIdentityKey ? nullptr : file_->Find(q.key);
    if (e != nullptr) {
      if (!Flatten(e)) {
        SendErrorNow(q.stream, net::ErrorCode::kInvalidMessage,
                     "the tensor's composite members cannot be served");
        return;
      }
    } else if (q.key == kListKey) {
      if (list_.descriptor.empty())
        list_ = MakeBytesTensor(TensorListBytes(*file_));
      synthetic_ = &list_;
    } else if (q.key == kIdentityKey && !options_.identity.empty()) {
      if (identity_.descriptor.empty()) {
        identity_ = MakeBytesTensor(std::vector<uint8_t>(
            options_.identity.begin(), options_.identity.end()));
      }
      synthetic_ = &identity_;
    } else {
      SendErrorNow(q.stream, net::ErrorCode::kUnknownTensor,
                   absl::StrCat("no tensor named '",
                                net::TruncateUtf8(q.key, 256), "'"));
      return;
    }
    job_active_ = true;
    job_stream_ = q.stream;
    next_tensor_ = 0;
    step_ = Step::kDescriptor;
  }

  void SendErrorNow(uint32_t stream, net::ErrorCode code,
                    absl::string_view text) {
    net::AppendError(
        &ctrl_, stream,
        {static_cast<uint32_t>(code), net::TruncateUtf8(text, kMaxErrorText)});
    if (closed_.size() < kMaxClosedStreams) closed_.insert(stream);
  }

  // The tensor, then (for a head) its members, pre-order
  // (interchange.md § Composite Tensor Streaming).
  bool Flatten(const container::IndexEntry* e) {
    if (tensors_.size() > file_->index().entries().size()) return false;
    tensors_.push_back(e);
    if (!file_->ReadDescriptor(*e, scratch_.get()).ok()) return false;
    if (scratch_->layout_tag != layout_tag::kComposite) return true;
    const auto members = file_->Members(*e);
    if (!members.ok()) return false;
    for (const container::IndexEntry* m : *members) {
      if (!Flatten(m)) return false;
    }
    return true;
  }

  // A tensor of ours that is not in the file (the listing, the identity):
  // 1-D uint8, row-major, one buffer holding `bytes`.
  struct BytesTensor {
    std::vector<uint8_t> bytes;
    std::vector<uint8_t> descriptor;  // empty if it could not be encoded
  };
  BytesTensor MakeBytesTensor(std::vector<uint8_t> bytes) {
    BytesTensor t;
    t.bytes = std::move(bytes);
    TensorDescriptor& d = *scratch_;
    ResetDescriptor(&d);
    d.type_tag = 0x11;  // uint8
    d.layout_tag = layout_tag::kRowMajor;
    d.rank = 1;
    d.shape[0] = t.bytes.size();
    d.buffer_count = 1;
    d.buffers[0] = BufferHandle();
    d.buffers[0].byte_size = t.bytes.size();
    auto encoded = Encode(d);
    if (encoded.ok()) t.descriptor = *std::move(encoded);
    return t;
  }

  void EndJob() {
    job_active_ = false;
    tensors_.clear();
  }

  // Loads the next tensor of the job: descriptor bytes and buffer views.
  bool LoadTensor() {
    buffers_.clear();
    if (synthetic_ != nullptr) {
      descriptor_ = synthetic_->descriptor;
      buffers_.push_back(synthetic_->bytes);
      return !descriptor_.empty();
    }
    const container::IndexEntry& e = *tensors_[next_tensor_];
    if (!file_->ReadDescriptor(e, scratch_.get()).ok()) return false;
    descriptor_ =
        file_->bytes().subspan(e.descriptor_offset, e.descriptor_length);
    for (uint32_t i = 0; i < scratch_->buffer_count; ++i) {
      // NET-TD-08: only SYNC_PRODUCER_SYNCED may cross machines.
      if (scratch_->buffers[i].sync_mode != 0) return false;
      const auto b = file_->Buffer(e, *scratch_, i);
      if (!b.ok()) return false;
      buffers_.push_back(*b);
    }
    return true;
  }

  // Appends the next message of the response to ctrl_ (and parts_).
  void NextFrame() {
    const size_t count = synthetic_ != nullptr ? 1 : tensors_.size();
    switch (step_) {
      case Step::kDescriptor: {
        if (!LoadTensor()) {
          SendErrorNow(job_stream_, net::ErrorCode::kDeviceUnavailable,
                       "the tensor cannot be served over a network transport");
          return EndJob();
        }
        if (descriptor_.size() + net::kTransportFieldsSize > client_max_) {
          SendErrorNow(job_stream_, net::ErrorCode::kMessageTooLarge,
                       "the descriptor does not fit the client's "
                       "max_message_size");
          return EndJob();
        }
        net::TransportFields t;
        total_ = 0;
        for (const auto& b : buffers_) total_ += b.size();
        t.total_data_bytes = total_;
        net::AppendDescriptor(&ctrl_, job_stream_, descriptor_, t);
        sent_ = 0;
        buffer_ = 0;
        in_buffer_ = 0;
        step_ = total_ == 0 ? Step::kEnd : Step::kData;
        return;
      }
      case Step::kData: {
        const uint64_t frame =
            std::min<uint64_t>(std::min(client_max_, options_.max_data_frame),
                               uint64_t{1} << 31) -
            net::kDataPrefixSize;
        const uint64_t n = std::min<uint64_t>(frame, total_ - sent_);
        uint8_t h[net::kHeaderSize + net::kDataPrefixSize];
        net::EncodeHeader(
            {static_cast<uint32_t>(MessageType::kTensorData), job_stream_,
             static_cast<uint32_t>(n + net::kDataPrefixSize)},
            h);
        wire::StoreU64(h + net::kHeaderSize, sent_);
        ctrl_.insert(ctrl_.end(), h, h + sizeof(h));
        // Views into the mapping, across buffer boundaries
        // (RESOLUTIONS.md 15).
        uint64_t left = n;
        while (left > 0) {
          const absl::Span<const uint8_t> b = buffers_[buffer_];
          if (in_buffer_ == b.size()) {
            ++buffer_;
            in_buffer_ = 0;
            continue;
          }
          const size_t k = static_cast<size_t>(
              std::min<uint64_t>(left, b.size() - in_buffer_));
          parts_.push_back(b.subspan(static_cast<size_t>(in_buffer_), k));
          in_buffer_ += k;
          left -= k;
        }
        sent_ += n;
        if (sent_ == total_) step_ = Step::kEnd;
        return;
      }
      case Step::kEnd:
        net::AppendMessage(&ctrl_, MessageType::kTensorDataEnd, job_stream_,
                           {});
        ++tensors_sent_;
        if (++next_tensor_ == count) return EndJob();
        step_ = Step::kDescriptor;
        return;
    }
  }

  const container::HrryFile* file_;
  NetServerOptions options_;
  net::MessageFramer framer_;
  std::unique_ptr<TensorDescriptor> scratch_;
  std::vector<uint8_t> layouts_;

  absl::Status status_;
  bool hello_ = false;
  bool version_mismatch_ = false;
  bool closing_ = false;
  bool finished_ = false;
  uint32_t client_max_ = net::kDefaultMaxMessageSize;
  absl::flat_hash_set<uint32_t> closed_;
  absl::flat_hash_set<uint32_t> refused_puts_;
  std::deque<Request> requests_;

  // Output: control bytes queued by Feed, the bytes being sent (ctrl_) and
  // the gather list over ctrl_ and the mapping.
  std::vector<uint8_t> pending_;
  std::vector<uint8_t> ctrl_;
  std::vector<absl::Span<const uint8_t>> parts_;
  size_t part_ = 0;

  // The response in progress.
  bool job_active_ = false;
  uint32_t job_stream_ = 0;
  const BytesTensor* synthetic_ = nullptr;  // the job serves this one
  std::vector<const container::IndexEntry*> tensors_;
  size_t next_tensor_ = 0;
  Step step_ = Step::kDescriptor;
  absl::Span<const uint8_t> descriptor_;
  std::vector<absl::Span<const uint8_t>> buffers_;
  uint64_t total_ = 0;
  uint64_t sent_ = 0;
  size_t buffer_ = 0;
  uint64_t in_buffer_ = 0;
  uint64_t tensors_sent_ = 0;
  BytesTensor list_;      // built on the first request
  BytesTensor identity_;  // idem
};

NetServerSession::NetServerSession(const container::HrryFile* file,
                                   const NetServerOptions& options)
    : impl_(std::make_unique<Impl>(file, options)) {}
NetServerSession::~NetServerSession() = default;
absl::Status NetServerSession::Feed(absl::Span<const uint8_t> chunk) {
  return impl_->Feed(chunk);
}
absl::Status NetServerSession::Finish() { return impl_->Finish(); }
absl::Span<const absl::Span<const uint8_t>> NetServerSession::Output() {
  return impl_->Output();
}
void NetServerSession::ConsumeOutput(size_t n) { impl_->ConsumeOutput(n); }
bool NetServerSession::WantsInput() { return impl_->WantsInput(); }
bool NetServerSession::Closed() { return impl_->Closed(); }
absl::Status NetServerSession::status() const { return impl_->status(); }
uint64_t NetServerSession::position() const { return impl_->position(); }
uint64_t NetServerSession::tensors_sent() const {
  return impl_->tensors_sent();
}
bool NetServerSession::hello_received() const {
  return impl_->hello_received();
}
bool NetServerSession::in_message() const { return impl_->in_message(); }
uint64_t NetServerSession::message_at() const { return impl_->message_at(); }
size_t NetServerSession::buffered_bytes() const {
  return impl_->buffered_bytes();
}

}  // namespace hurray::stream::net
