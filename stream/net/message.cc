#include "stream/net/message.h"

#include <cstring>

#include "absl/status/status.h"
#include "parser/wire.h"
#include "stream/container/utf8.h"

namespace hurray::stream::net {
namespace {

bool IsExtensionLayout(uint8_t tag) { return tag >= 0xF0 && tag <= 0xFE; }

Rejection Malformed(uint64_t offset, const char* message) {
  return Rejection{Rule::kNetMsg01, offset, message};
}

// A bounded reader over a payload; every Take checks the remaining length.
class Reader {
 public:
  explicit Reader(absl::Span<const uint8_t> in) : in_(in) {}
  size_t at() const { return at_; }
  size_t left() const { return in_.size() - at_; }
  bool U8(uint8_t* v) {
    if (left() < 1) return false;
    *v = in_[at_++];
    return true;
  }
  bool U16(uint16_t* v) {
    if (left() < 2) return false;
    *v = wire::LoadU16(in_.data() + at_);
    at_ += 2;
    return true;
  }
  bool U32(uint32_t* v) {
    if (left() < 4) return false;
    *v = wire::LoadU32(in_.data() + at_);
    at_ += 4;
    return true;
  }
  bool U64(uint64_t* v) {
    if (left() < 8) return false;
    *v = wire::LoadU64(in_.data() + at_);
    at_ += 8;
    return true;
  }
  bool Bytes(size_t n, absl::Span<const uint8_t>* out) {
    if (left() < n) return false;
    *out = in_.subspan(at_, n);
    at_ += n;
    return true;
  }

 private:
  absl::Span<const uint8_t> in_;
  size_t at_ = 0;
};

// u32 length + UTF-8 bytes.
Rejection ReadString(Reader* r, absl::string_view* out, const char* what) {
  const size_t at = r->at();
  uint32_t n;
  absl::Span<const uint8_t> bytes;
  if (!r->U32(&n)) return Malformed(at, what);
  if (!r->Bytes(n, &bytes)) return Malformed(at, what);
  if (!container::IsValidUtf8(bytes)) {
    return Malformed(at + 4, "a string is not valid UTF-8");
  }
  *out = absl::string_view(reinterpret_cast<const char*>(bytes.data()),
                           bytes.size());
  return kAccepted;
}

// u16 count + layout entries (§ Layout Entry Encoding), as a view into
// `payload`. Extension entries are stepped over by their length.
Rejection ReadLayoutList(absl::Span<const uint8_t> payload, Reader* r,
                         LayoutList* out) {
  const size_t at = r->at();
  uint16_t count;
  if (!r->U16(&count)) return Malformed(at, "the layout count is missing");
  const size_t start = r->at();
  for (uint16_t i = 0; i < count; ++i) {
    const size_t entry = r->at();
    uint8_t tag;
    if (!r->U8(&tag)) return Malformed(entry, "a layout entry is missing");
    if (IsExtensionLayout(tag)) {
      uint16_t n;
      absl::Span<const uint8_t> meta;
      if (!r->U16(&n) || !r->Bytes(n, &meta)) {
        return Malformed(entry + 1, "an extension layout entry is truncated");
      }
    }
  }
  *out = LayoutList(count, payload.subspan(start, r->at() - start));
  return kAccepted;
}

// u16 count + bytes.
Rejection ReadTagList(Reader* r, absl::Span<const uint8_t>* out,
                      const char* what) {
  const size_t at = r->at();
  uint16_t n;
  if (!r->U16(&n) || !r->Bytes(n, out)) return Malformed(at, what);
  return kAccepted;
}

Rejection NoTrailing(const Reader& r) {
  if (r.left() != 0) {
    return Malformed(r.at(), "bytes follow the last field of the payload");
  }
  return kAccepted;
}

size_t LayoutListSize(const LayoutList& l) { return 2 + l.bytes().size(); }

absl::Status TooSmall() {
  return absl::ResourceExhaustedError("output buffer too small");
}

class Writer {
 public:
  explicit Writer(absl::Span<uint8_t> out) : out_(out) {}
  void U8(uint8_t v) { out_[at_++] = v; }
  void U16(uint16_t v) {
    wire::StoreU16(out_.data() + at_, v);
    at_ += 2;
  }
  void U32(uint32_t v) {
    wire::StoreU32(out_.data() + at_, v);
    at_ += 4;
  }
  void U64(uint64_t v) {
    wire::StoreU64(out_.data() + at_, v);
    at_ += 8;
  }
  void Bytes(absl::Span<const uint8_t> b) {
    if (!b.empty()) std::memcpy(out_.data() + at_, b.data(), b.size());
    at_ += b.size();
  }
  void Str(absl::string_view s) {
    U32(static_cast<uint32_t>(s.size()));
    Bytes(absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(s.data()),
                              s.size()));
  }
  size_t at() const { return at_; }

 private:
  absl::Span<uint8_t> out_;
  size_t at_ = 0;
};

}  // namespace

const char* MessageTypeName(uint32_t type) {
  switch (type) {
    case 0x01:
      return "CLIENT_HELLO";
    case 0x02:
      return "SERVER_HELLO";
    case 0x03:
      return "TENSOR_REQUEST";
    case 0x04:
      return "TENSOR_DESCRIPTOR";
    case 0x05:
      return "TENSOR_DATA";
    case 0x06:
      return "TENSOR_DATA_END";
    case 0x07:
      return "TENSOR_PUT";
    case 0x08:
      return "TENSOR_PUT_ACK";
    case 0x09:
      return "ERROR";
    case 0x0A:
      return "PING";
    case 0x0B:
      return "PONG";
    case 0x0C:
      return "RDMA_REGISTER";
    case 0x0D:
      return "RDMA_READY";
    default:
      return "unknown";
  }
}

const char* ErrorCodeName(uint32_t code) {
  switch (code) {
    case 0x01:
      return "PROTOCOL_VERSION_MISMATCH";
    case 0x02:
      return "UNKNOWN_TENSOR";
    case 0x03:
      return "LAYOUT_UNAVAILABLE";
    case 0x04:
      return "TRANSCODE_LIMIT_EXCEEDED";
    case 0x05:
      return "DEVICE_UNAVAILABLE";
    case 0x06:
      return "INVALID_MESSAGE";
    case 0x07:
      return "MESSAGE_TOO_LARGE";
    case 0x08:
      return "SHARD_MISMATCH";
    default:
      return "implementation-defined";
  }
}

void EncodeHeader(const MessageHeader& h, uint8_t out[kHeaderSize]) {
  wire::StoreU32(out, h.type);
  wire::StoreU32(out + 4, h.stream_id);
  wire::StoreU32(out + 8, h.payload_length);
}

MessageHeader DecodeHeader(const uint8_t in[kHeaderSize]) {
  return {wire::LoadU32(in), wire::LoadU32(in + 4), wire::LoadU32(in + 8)};
}

size_t HelloSize(const Hello& h) {
  return 16 + LayoutListSize(h.layouts) + 2 + h.devices.size() + 2 +
         h.memory_classes.size();
}
size_t RequestSize(const TensorRequest& r) {
  return 4 + r.key.size() + LayoutListSize(r.preferred_layouts) + 1 + 4 + 4;
}
size_t PutSize(const TensorPut& p) {
  return 4 + p.key.size() + 4 + p.descriptor.size() + 8;
}
size_t ErrorSize(const ErrorMessage& e) { return 8 + e.message.size(); }

absl::StatusOr<size_t> EncodeHello(const Hello& h, absl::Span<uint8_t> out) {
  if (h.devices.size() > 0xFFFF || h.memory_classes.size() > 0xFFFF) {
    return absl::InvalidArgumentError("too many devices or memory classes");
  }
  if (out.size() < HelloSize(h)) return TooSmall();
  Writer w(out);
  w.U32(h.protocol_version);
  w.U32(h.max_message_size);
  w.U64(h.capability_flags);
  w.U16(h.layouts.count());
  w.Bytes(h.layouts.bytes());
  w.U16(static_cast<uint16_t>(h.devices.size()));
  w.Bytes(h.devices);
  w.U16(static_cast<uint16_t>(h.memory_classes.size()));
  w.Bytes(h.memory_classes);
  return w.at();
}

absl::StatusOr<size_t> EncodeRequest(const TensorRequest& r,
                                     absl::Span<uint8_t> out) {
  if (r.key.size() > 0xFFFFFFFFu) return absl::InvalidArgumentError("key");
  if (out.size() < RequestSize(r)) return TooSmall();
  Writer w(out);
  w.Str(r.key);
  w.U16(r.preferred_layouts.count());
  w.Bytes(r.preferred_layouts.bytes());
  w.U8(r.preferred_device);
  w.U32(r.min_alignment);
  w.U32(r.request_flags);
  return w.at();
}

absl::StatusOr<size_t> EncodeTransportFields(const TransportFields& t,
                                             absl::Span<uint8_t> out) {
  if (out.size() < kTransportFieldsSize) return TooSmall();
  Writer w(out);
  w.U64(t.total_data_bytes);
  w.U32(t.shard_index);
  w.U32(t.total_shards);
  return w.at();
}

absl::StatusOr<size_t> EncodeDataPrefix(uint64_t offset,
                                        absl::Span<uint8_t> out) {
  if (out.size() < kDataPrefixSize) return TooSmall();
  wire::StoreU64(out.data(), offset);
  return kDataPrefixSize;
}

absl::StatusOr<size_t> EncodePut(const TensorPut& p, absl::Span<uint8_t> out) {
  if (out.size() < PutSize(p)) return TooSmall();
  Writer w(out);
  w.Str(p.key);
  w.U32(static_cast<uint32_t>(p.descriptor.size()));
  w.Bytes(p.descriptor);
  w.U64(p.total_data_bytes);
  return w.at();
}

absl::StatusOr<size_t> EncodeError(const ErrorMessage& e,
                                   absl::Span<uint8_t> out) {
  if (out.size() < ErrorSize(e)) return TooSmall();
  Writer w(out);
  w.U32(e.code);
  w.Str(e.message);
  return w.at();
}

absl::StatusOr<size_t> EncodeLayoutEntry(const LayoutEntry& e,
                                         absl::Span<uint8_t> out) {
  const bool ext = IsExtensionLayout(e.tag);
  if (!ext && !e.ext_metadata.empty()) {
    return absl::InvalidArgumentError("metadata on a non-extension layout");
  }
  if (e.ext_metadata.size() > 0xFFFF) {
    return absl::InvalidArgumentError("extension metadata too long");
  }
  const size_t n = ext ? 3 + e.ext_metadata.size() : 1;
  if (out.size() < n) return TooSmall();
  Writer w(out);
  w.U8(e.tag);
  if (ext) {
    w.U16(static_cast<uint16_t>(e.ext_metadata.size()));
    w.Bytes(e.ext_metadata);
  }
  return w.at();
}

Rejection DecodeHello(absl::Span<const uint8_t> payload, Hello* out) {
  Reader r(payload);
  if (!r.U32(&out->protocol_version) || !r.U32(&out->max_message_size) ||
      !r.U64(&out->capability_flags)) {
    return Malformed(0, "a HELLO payload is shorter than its fixed fields");
  }
  HURRAY_RETURN_IF_REJECTED(ReadLayoutList(payload, &r, &out->layouts));
  HURRAY_RETURN_IF_REJECTED(
      ReadTagList(&r, &out->devices, "the device list is truncated"));
  // supported_memory_classes "if absent or empty": a HELLO may end before
  // its count.
  out->memory_classes = {};
  if (r.left() > 0) {
    HURRAY_RETURN_IF_REJECTED(ReadTagList(
        &r, &out->memory_classes, "the memory class list is truncated"));
  }
  return NoTrailing(r);
}

Rejection DecodeRequest(absl::Span<const uint8_t> payload, TensorRequest* out) {
  Reader r(payload);
  HURRAY_RETURN_IF_REJECTED(
      ReadString(&r, &out->key, "the tensor key is truncated"));
  HURRAY_RETURN_IF_REJECTED(
      ReadLayoutList(payload, &r, &out->preferred_layouts));
  const size_t at = r.at();
  if (!r.U8(&out->preferred_device) || !r.U32(&out->min_alignment) ||
      !r.U32(&out->request_flags)) {
    return Malformed(at, "a TENSOR_REQUEST ends before its last fields");
  }
  return NoTrailing(r);
}

Rejection DecodeDescriptorMessage(absl::Span<const uint8_t> payload, Mode mode,
                                  DescriptorMessage* out) {
  // The descriptor's own length field is at bytes 6..9 (metadata.md § Fixed
  // Header): 10 bytes are needed to find it.
  if (payload.size() < 10) {
    return {Rule::kNetTd01, 0,
            "a TENSOR_DESCRIPTOR payload is shorter than 10 bytes"};
  }
  const uint64_t length = wire::LoadU32(payload.data() + 6);
  const uint64_t needed = length + kTransportFieldsSize;
  if (payload.size() < needed) {
    return {Rule::kNetTd01, 6,
            "the payload is shorter than descriptor_length + 16"};
  }
  if (payload.size() != needed && Applies(Rule::kNetTd02, mode)) {
    return {Rule::kNetTd02, 6,
            "the payload length is not descriptor_length + 16"};
  }
  out->descriptor = payload.first(static_cast<size_t>(length));
  const uint8_t* t = payload.data() + length;
  out->transport.total_data_bytes = wire::LoadU64(t);
  out->transport.shard_index = wire::LoadU32(t + 8);
  out->transport.total_shards = wire::LoadU32(t + 12);
  return kAccepted;
}

Rejection DecodeData(absl::Span<const uint8_t> payload, DataMessage* out) {
  if (payload.size() < kDataPrefixSize) {
    return {Rule::kNetDat02, 0,
            "a TENSOR_DATA payload is shorter than 8 bytes"};
  }
  out->offset = wire::LoadU64(payload.data());
  out->data = payload.subspan(kDataPrefixSize);
  return kAccepted;
}

Rejection DecodeDataEnd(absl::Span<const uint8_t> payload) {
  if (!payload.empty()) {
    return {Rule::kNetEnd01, 0, "a TENSOR_DATA_END payload is not empty"};
  }
  return kAccepted;
}

Rejection DecodePut(absl::Span<const uint8_t> payload, TensorPut* out) {
  Reader r(payload);
  HURRAY_RETURN_IF_REJECTED(
      ReadString(&r, &out->key, "the tensor key is truncated"));
  const size_t at = r.at();
  uint32_t n;
  if (!r.U32(&n) || !r.Bytes(n, &out->descriptor)) {
    return Malformed(at, "the descriptor of a TENSOR_PUT is truncated");
  }
  const size_t tail = r.at();
  if (!r.U64(&out->total_data_bytes)) {
    return Malformed(tail, "a TENSOR_PUT ends before total_data_bytes");
  }
  return NoTrailing(r);
}

Rejection DecodeError(absl::Span<const uint8_t> payload, ErrorMessage* out) {
  Reader r(payload);
  if (!r.U32(&out->code)) {
    return Malformed(0, "an ERROR payload is shorter than its code");
  }
  HURRAY_RETURN_IF_REJECTED(
      ReadString(&r, &out->message, "the ERROR message is truncated"));
  return NoTrailing(r);
}

void AppendMessage(std::vector<uint8_t>* out, MessageType type,
                   uint32_t stream_id, absl::Span<const uint8_t> payload) {
  uint8_t h[kHeaderSize];
  EncodeHeader({static_cast<uint32_t>(type), stream_id,
                static_cast<uint32_t>(payload.size())},
               h);
  out->insert(out->end(), h, h + kHeaderSize);
  out->insert(out->end(), payload.begin(), payload.end());
}

namespace {
// Appends a header for `size` payload bytes and returns the payload's span.
absl::Span<uint8_t> Grow(std::vector<uint8_t>* out, MessageType type,
                         uint32_t stream_id, size_t size) {
  const size_t at = out->size();
  out->resize(at + kHeaderSize + size);
  EncodeHeader(
      {static_cast<uint32_t>(type), stream_id, static_cast<uint32_t>(size)},
      out->data() + at);
  return absl::MakeSpan(out->data() + at + kHeaderSize, size);
}
}  // namespace

void AppendHello(std::vector<uint8_t>* out, MessageType type,
                 uint32_t stream_id, const Hello& h) {
  (void)EncodeHello(h, Grow(out, type, stream_id, HelloSize(h)));
}

void AppendRequest(std::vector<uint8_t>* out, uint32_t stream_id,
                   const TensorRequest& r) {
  (void)EncodeRequest(
      r, Grow(out, MessageType::kTensorRequest, stream_id, RequestSize(r)));
}

void AppendDescriptor(std::vector<uint8_t>* out, uint32_t stream_id,
                      absl::Span<const uint8_t> descriptor,
                      const TransportFields& t) {
  const absl::Span<uint8_t> p =
      Grow(out, MessageType::kTensorDescriptor, stream_id,
           descriptor.size() + kTransportFieldsSize);
  if (!descriptor.empty()) {
    std::memcpy(p.data(), descriptor.data(), descriptor.size());
  }
  (void)EncodeTransportFields(t, p.subspan(descriptor.size()));
}

void AppendData(std::vector<uint8_t>* out, uint32_t stream_id, uint64_t offset,
                absl::Span<const uint8_t> data) {
  const absl::Span<uint8_t> p = Grow(out, MessageType::kTensorData, stream_id,
                                     kDataPrefixSize + data.size());
  wire::StoreU64(p.data(), offset);
  if (!data.empty()) {
    std::memcpy(p.data() + kDataPrefixSize, data.data(), data.size());
  }
}

void AppendPut(std::vector<uint8_t>* out, uint32_t stream_id,
               const TensorPut& p) {
  (void)EncodePut(p, Grow(out, MessageType::kTensorPut, stream_id, PutSize(p)));
}

void AppendError(std::vector<uint8_t>* out, uint32_t stream_id,
                 const ErrorMessage& e) {
  (void)EncodeError(e, Grow(out, MessageType::kError, stream_id, ErrorSize(e)));
}

absl::string_view TruncateUtf8(absl::string_view s, size_t max) {
  if (s.size() <= max) return s;
  size_t n = max;
  // Back up over continuation bytes (10xxxxxx) so no character is cut.
  while (n > 0 && (static_cast<uint8_t>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n);
}

}  // namespace hurray::stream::net
