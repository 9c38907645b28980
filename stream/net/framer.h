// MessageFramer: cuts a received byte stream into protocol messages
// (interchange.md § Message Framing), fed in chunks of any size.
//
// The 12-byte header is gathered across chunks. A TENSOR_DATA payload is
// never collected: once its 8-byte offset has arrived, its data goes to the
// handler as views into the chunks being fed (no copy, nothing allocated from
// payload_length). Every other payload is collected whole, in a buffer that
// grows with the bytes that actually arrived and is bounded by
// max_payload, then handed over at once.
//
// Framing rules, with absolute offsets (from the connection's first received
// byte) of the header field at fault:
//   NET-01  payload_length > max_payload (the caller answers ERROR 0x07)
//   NET-02  stream_id = 0 (strict only)
//   NET-03  unknown message_type (0, 0x0E–0xEF, > 0xFF, unagreed 0xF0–0xFE)
//   NET-04  message_type = 0xFF
//   NET-05  Finish() inside a header or a payload
//   NET-DAT-02  a TENSOR_DATA payload shorter than 8 bytes
// A handler rejection stops the framer the same way.
#ifndef HURRAY_STREAM_NET_FRAMER_H_
#define HURRAY_STREAM_NET_FRAMER_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "parser/rules.h"
#include "stream/net/message.h"

namespace hurray::stream::net {

struct FramerOptions {
  uint32_t max_payload = kDefaultMaxMessageSize;  // NET-01
  Mode mode = Mode::kStrict;                      // NET-02 is strict-only
  uint16_t agreed_private_types = 0;              // bit i: type 0xF0 + i
};

class FrameHandler {
 public:
  virtual ~FrameHandler() = default;
  // A whole message other than TENSOR_DATA. `at`: absolute offset of its
  // header; the payload starts at at + 12 and is valid during the call.
  virtual Rejection OnMessage(const MessageHeader& h, uint64_t at,
                              absl::Span<const uint8_t> payload) = 0;
  // TENSOR_DATA, once its offset field arrived: the data length is
  // h.payload_length - 8.
  virtual Rejection OnDataBegin(const MessageHeader& h, uint64_t at,
                                uint64_t offset) = 0;
  // Consecutive runs of its data (absolute offset of the first byte).
  virtual Rejection OnDataPiece(uint64_t at,
                                absl::Span<const uint8_t> piece) = 0;
  virtual Rejection OnDataEnd() = 0;
};

// True for the message types of interchange.md § Message Types and the
// agreed private ones.
bool KnownMessageType(uint32_t type, uint16_t agreed_private_types);

class MessageFramer {
 public:
  MessageFramer(const FramerOptions& options, FrameHandler* handler);

  // Consumes `chunk` whole unless the input is rejected; once rejected,
  // returns the same rejection.
  Rejection Feed(absl::Span<const uint8_t> chunk);
  // The input ended: NET-05 unless between messages.
  Rejection Finish();

  uint64_t position() const { return pos_; }
  bool between_messages() const {
    return phase_ == Phase::kHeader && got_ == 0;
  }
  // Offset of the message in progress (or of the last one) from the first
  // byte fed.
  uint64_t message_at() const { return message_at_; }
  // Bytes held for a control payload being collected (its capacity).
  size_t buffered_bytes() const { return payload_.capacity(); }
  // The header of the message in progress, or of the last one.
  const MessageHeader& header() const { return header_; }
  const Rejection& rejection() const { return rejection_; }

 private:
  enum class Phase : uint8_t {
    kHeader,
    kPayload,
    kDataOffset,
    kData,
    kStopped
  };

  Rejection Stop(Rejection r);
  Rejection HeaderDone();

  FramerOptions options_;
  FrameHandler* handler_;
  Phase phase_ = Phase::kHeader;
  Rejection rejection_;
  uint64_t pos_ = 0;
  uint64_t message_at_ = 0;
  MessageHeader header_;
  uint8_t staged_[kHeaderSize] = {};
  uint32_t got_ = 0;        // header or offset bytes staged
  uint32_t remaining_ = 0;  // payload bytes still to come
  std::vector<uint8_t> payload_;
};

}  // namespace hurray::stream::net

#endif  // HURRAY_STREAM_NET_FRAMER_H_
