// Sans-I/O codec of the Hurray network protocol (interchange.md § Message
// Framing, § Message Types, § Session Establishment, § Layout Entry
// Encoding, § TENSOR_REQUEST Payload, § TENSOR_DESCRIPTOR Payload,
// § TENSOR_DATA Payload, § TENSOR_PUT Payload, § ERROR Payload).
//
// Every message is a 12-byte header (u32 message_type, u32 stream_id, u32
// payload_length, little-endian) followed by payload_length bytes.
//
// Encoders write into caller memory and return the bytes written (or an
// error when the output is too small); EncodedSize() says how much to give
// them. Decoders read a complete payload (the framer, framer.h, collects
// it, bounded by the configured maximum message size) and return views into
// it: nothing is copied and nothing is allocated from declared sizes (layout
// entry lists are walked in place through LayoutList). A malformed payload is
// a Rejection with a rule id and the offset of the offending field, counted
// from the payload's first byte (callers add the payload's position).
//
// Rule ids: the catalogued NET-* rules where one applies (NET-TD-01,
// NET-DAT-02, NET-END-01, ...); a control payload that does not parse
// (HELLO, TENSOR_REQUEST, TENSOR_PUT, ERROR: too short, trailing bytes,
// malformed UTF-8) is our own NET-MSG-01 (the catalog leaves those payload
// rules out of scope, REJECT-RULES.md §3.14).
#ifndef HURRAY_STREAM_NET_MESSAGE_H_
#define HURRAY_STREAM_NET_MESSAGE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "parser/rules.h"

namespace hurray::stream::net {

inline constexpr size_t kHeaderSize = 12;
inline constexpr uint32_t kProtocolVersion = 1;
// RESOLUTIONS.md 15: default receiver limit for one payload.
inline constexpr uint32_t kDefaultMaxMessageSize = 16u << 20;
// TENSOR_DATA: the u64 byte_offset_in_buffer before the data.
inline constexpr size_t kDataPrefixSize = 8;
// TENSOR_DESCRIPTOR: u64 total_data_bytes, u32 shard_index, u32 total_shards
// after the descriptor.
inline constexpr size_t kTransportFieldsSize = 16;

enum class MessageType : uint32_t {
  kClientHello = 0x01,
  kServerHello = 0x02,
  kTensorRequest = 0x03,
  kTensorDescriptor = 0x04,
  kTensorData = 0x05,
  kTensorDataEnd = 0x06,
  kTensorPut = 0x07,
  kTensorPutAck = 0x08,
  kError = 0x09,
  kPing = 0x0A,
  kPong = 0x0B,
  kRdmaRegister = 0x0C,
  kRdmaReady = 0x0D,
};
const char* MessageTypeName(uint32_t type);  // "TENSOR_DATA", "0xF3", ...

enum class ErrorCode : uint32_t {
  kProtocolVersionMismatch = 0x01,
  kUnknownTensor = 0x02,
  kLayoutUnavailable = 0x03,
  kTranscodeLimitExceeded = 0x04,
  kDeviceUnavailable = 0x05,
  kInvalidMessage = 0x06,
  kMessageTooLarge = 0x07,
  kShardMismatch = 0x08,
};
const char* ErrorCodeName(uint32_t code);  // "UNKNOWN_TENSOR", "0xF1", ...

// Capability flags (§ Capability Flags) and request flags (§ TENSOR_REQUEST).
inline constexpr uint64_t kCapTranscoding = 1u << 0;
inline constexpr uint64_t kCapParallelStreams = 1u << 1;
inline constexpr uint64_t kCapRdmaDataPlane = 1u << 2;
inline constexpr uint64_t kCapRdmaGpuDirect = 1u << 3;
inline constexpr uint32_t kRequestAllowTranscode = 1u << 0;
inline constexpr uint32_t kRequestParallelOk = 1u << 1;

struct MessageHeader {
  uint32_t type = 0;
  uint32_t stream_id = 0;
  uint32_t payload_length = 0;
};

void EncodeHeader(const MessageHeader& h, uint8_t out[kHeaderSize]);
MessageHeader DecodeHeader(const uint8_t in[kHeaderSize]);

// A list of layout entries (§ Layout Entry Encoding), walked in place.
struct LayoutEntry {
  uint8_t tag = 0;
  // Extension tags (0xF0–0xFE) only: the opaque metadata.
  absl::Span<const uint8_t> ext_metadata;
};
class LayoutList {
 public:
  LayoutList() = default;
  // `bytes`: the entries (after the u16 count), already checked by Parse.
  LayoutList(uint16_t count, absl::Span<const uint8_t> bytes)
      : count_(count), bytes_(bytes) {}
  uint16_t count() const { return count_; }
  absl::Span<const uint8_t> bytes() const { return bytes_; }
  // Calls f(const LayoutEntry&) for every entry in order.
  template <typename F>
  void ForEach(F f) const {
    size_t at = 0;
    for (uint16_t i = 0; i < count_; ++i) {
      LayoutEntry e;
      e.tag = bytes_[at++];
      if (e.tag >= 0xF0 && e.tag <= 0xFE) {
        const size_t n = bytes_[at] | (size_t{bytes_[at + 1]} << 8);
        e.ext_metadata = bytes_.subspan(at + 2, n);
        at += 2 + n;
      }
      f(e);
    }
  }

 private:
  uint16_t count_ = 0;
  absl::Span<const uint8_t> bytes_;
};

// CLIENT_HELLO and SERVER_HELLO share one payload shape.
struct Hello {
  uint32_t protocol_version = kProtocolVersion;
  uint32_t max_message_size = kDefaultMaxMessageSize;
  uint64_t capability_flags = 0;
  LayoutList layouts;
  absl::Span<const uint8_t> devices;         // device tags
  absl::Span<const uint8_t> memory_classes;  // empty: STANDARD only
};

struct TensorRequest {
  absl::string_view key;
  LayoutList preferred_layouts;
  uint8_t preferred_device = 0;
  uint32_t min_alignment = 64;
  uint32_t request_flags = 0;
};

// The transport fields after a TENSOR_DESCRIPTOR's descriptor.
struct TransportFields {
  uint64_t total_data_bytes = 0;
  uint32_t shard_index = 0;
  uint32_t total_shards = 1;
};

struct DescriptorMessage {
  absl::Span<const uint8_t> descriptor;  // descriptor_length bytes
  TransportFields transport;
};

struct DataMessage {
  uint64_t offset = 0;  // byte_offset_in_buffer (RESOLUTIONS.md 15)
  absl::Span<const uint8_t> data;
};

struct TensorPut {
  absl::string_view key;
  absl::Span<const uint8_t> descriptor;
  uint64_t total_data_bytes = 0;
};

struct ErrorMessage {
  uint32_t code = 0;
  absl::string_view message;
};

// Payload sizes, for sizing encoder output. Layout entries are given as
// their encoded bytes (EncodeLayoutEntry), `layout_count` of them.
size_t HelloSize(const Hello& h);
size_t RequestSize(const TensorRequest& r);
size_t PutSize(const TensorPut& p);
size_t ErrorSize(const ErrorMessage& e);

// Encoders: the payload only (the caller writes the header, e.g. with
// EncodeMessage). Fail (ResourceExhausted) when `out` is too small and
// InvalidArgument for counts that do not fit their fields.
[[nodiscard]] absl::StatusOr<size_t> EncodeHello(const Hello& h,
                                                 absl::Span<uint8_t> out);
[[nodiscard]] absl::StatusOr<size_t> EncodeRequest(const TensorRequest& r,
                                                   absl::Span<uint8_t> out);
[[nodiscard]] absl::StatusOr<size_t> EncodeTransportFields(
    const TransportFields& t, absl::Span<uint8_t> out);
[[nodiscard]] absl::StatusOr<size_t> EncodeDataPrefix(uint64_t offset,
                                                      absl::Span<uint8_t> out);
[[nodiscard]] absl::StatusOr<size_t> EncodePut(const TensorPut& p,
                                               absl::Span<uint8_t> out);
[[nodiscard]] absl::StatusOr<size_t> EncodeError(const ErrorMessage& e,
                                                 absl::Span<uint8_t> out);
// One layout entry: the tag, plus u16 length and metadata for 0xF0–0xFE.
[[nodiscard]] absl::StatusOr<size_t> EncodeLayoutEntry(const LayoutEntry& e,
                                                       absl::Span<uint8_t> out);

// Decoders over a complete payload; offsets in a Rejection count from the
// payload's first byte.
Rejection DecodeHello(absl::Span<const uint8_t> payload, Hello* out);
Rejection DecodeRequest(absl::Span<const uint8_t> payload, TensorRequest* out);
// NET-TD-01 (payload < 10, or < descriptor_length + 16) and, in strict mode,
// NET-TD-02 (payload ≠ descriptor_length + 16). The descriptor is not
// decoded here.
Rejection DecodeDescriptorMessage(absl::Span<const uint8_t> payload, Mode mode,
                                  DescriptorMessage* out);
Rejection DecodeData(absl::Span<const uint8_t> payload, DataMessage* out);
Rejection DecodeDataEnd(absl::Span<const uint8_t> payload);
Rejection DecodePut(absl::Span<const uint8_t> payload, TensorPut* out);
Rejection DecodeError(absl::Span<const uint8_t> payload, ErrorMessage* out);

// Whole messages (header + payload) appended to a byte vector: the sessions'
// control output and the tests use these. Sizes must fit a u32 payload.
void AppendMessage(std::vector<uint8_t>* out, MessageType type,
                   uint32_t stream_id, absl::Span<const uint8_t> payload);
void AppendHello(std::vector<uint8_t>* out, MessageType type,
                 uint32_t stream_id, const Hello& h);
void AppendRequest(std::vector<uint8_t>* out, uint32_t stream_id,
                   const TensorRequest& r);
void AppendDescriptor(std::vector<uint8_t>* out, uint32_t stream_id,
                      absl::Span<const uint8_t> descriptor,
                      const TransportFields& t);
void AppendData(std::vector<uint8_t>* out, uint32_t stream_id, uint64_t offset,
                absl::Span<const uint8_t> data);
void AppendPut(std::vector<uint8_t>* out, uint32_t stream_id,
               const TensorPut& p);
void AppendError(std::vector<uint8_t>* out, uint32_t stream_id,
                 const ErrorMessage& e);

// UTF-8 text of at most `max` bytes cut at a character boundary (ERROR
// messages built from statuses).
absl::string_view TruncateUtf8(absl::string_view s, size_t max);

}  // namespace hurray::stream::net

#endif  // HURRAY_STREAM_NET_MESSAGE_H_
