#include "stream/net/framer.h"

#include <algorithm>
#include <cstring>

#include "parser/wire.h"

namespace hurray::stream::net {

bool KnownMessageType(uint32_t type, uint16_t agreed_private_types) {
  if (type >= 0x01 && type <= 0x0D) return true;
  if (type >= 0xF0 && type <= 0xFE) {
    return ((agreed_private_types >> (type - 0xF0)) & 1) != 0;
  }
  return false;
}

MessageFramer::MessageFramer(const FramerOptions& options,
                             FrameHandler* handler)
    : options_(options), handler_(handler) {}

Rejection MessageFramer::Stop(Rejection r) {
  if (!r.ok() && rejection_.ok()) {
    rejection_ = r;
    phase_ = Phase::kStopped;
  }
  return rejection_;
}

Rejection MessageFramer::HeaderDone() {
  header_ = DecodeHeader(staged_);
  got_ = 0;
  const uint64_t at = message_at_;
  // interchange.md § Message Types: 0xFF is reserved (NET-04); anything else
  // not in the table, or a private type not agreed, is unrecognised (NET-03).
  if (header_.type == 0xFF) {
    return Stop(
        {Rule::kNet04, at, "message_type 0xFF is reserved and never valid"});
  }
  if (!KnownMessageType(header_.type, options_.agreed_private_types)) {
    return Stop({Rule::kNet03, at, "message_type is not recognised"});
  }
  if (header_.stream_id == 0 && Applies(Rule::kNet02, options_.mode)) {
    return Stop({Rule::kNet02, at + 4, "stream_id 0 is reserved"});
  }
  if (header_.payload_length > options_.max_payload) {
    return Stop({Rule::kNet01, at + 8,
                 "payload_length exceeds the maximum message size"});
  }
  remaining_ = header_.payload_length;
  if (header_.type == static_cast<uint32_t>(MessageType::kTensorData)) {
    if (header_.payload_length < kDataPrefixSize) {
      return Stop({Rule::kNetDat02, at + 8,
                   "a TENSOR_DATA payload is shorter than 8 bytes"});
    }
    phase_ = Phase::kDataOffset;
    return kAccepted;
  }
  payload_.clear();
  phase_ = Phase::kPayload;
  if (remaining_ == 0) {
    phase_ = Phase::kHeader;
    return Stop(handler_->OnMessage(header_, at, {}));
  }
  return kAccepted;
}

Rejection MessageFramer::Feed(absl::Span<const uint8_t> chunk) {
  size_t used = 0;
  while (used < chunk.size() && phase_ != Phase::kStopped) {
    const absl::Span<const uint8_t> in = chunk.subspan(used);
    switch (phase_) {
      case Phase::kHeader: {
        if (got_ == 0) message_at_ = pos_;
        const size_t n = std::min<size_t>(kHeaderSize - got_, in.size());
        std::memcpy(staged_ + got_, in.data(), n);
        got_ += static_cast<uint32_t>(n);
        pos_ += n;
        used += n;
        // Stop and HeaderDone keep a rejection in rejection_, which Feed
        // returns: their results need no check where nothing follows.
        if (got_ == kHeaderSize) (void)HeaderDone();
        break;
      }
      case Phase::kPayload: {
        const size_t n = std::min<size_t>(remaining_, in.size());
        // Grows with the bytes that arrived, never with payload_length.
        payload_.insert(payload_.end(), in.begin(), in.begin() + n);
        remaining_ -= static_cast<uint32_t>(n);
        pos_ += n;
        used += n;
        if (remaining_ == 0) {
          phase_ = Phase::kHeader;
          (void)Stop(handler_->OnMessage(header_, message_at_, payload_));
          // Keep a small buffer for the next message; give back a big one.
          if (payload_.capacity() > (64u << 10)) {
            std::vector<uint8_t>().swap(payload_);
          }
        }
        break;
      }
      case Phase::kDataOffset: {
        const size_t n = std::min<size_t>(kDataPrefixSize - got_, in.size());
        std::memcpy(staged_ + got_, in.data(), n);
        got_ += static_cast<uint32_t>(n);
        remaining_ -= static_cast<uint32_t>(n);
        pos_ += n;
        used += n;
        if (got_ == kDataPrefixSize) {
          got_ = 0;
          phase_ = Phase::kData;
          if (Stop(handler_->OnDataBegin(header_, message_at_,
                                         wire::LoadU64(staged_)))
                  .ok() &&
              remaining_ == 0) {
            phase_ = Phase::kHeader;
            (void)Stop(handler_->OnDataEnd());
          }
        }
        break;
      }
      case Phase::kData: {
        const size_t n = std::min<size_t>(remaining_, in.size());
        const uint64_t at = pos_;
        remaining_ -= static_cast<uint32_t>(n);
        pos_ += n;
        used += n;
        if (!Stop(handler_->OnDataPiece(at, in.first(n))).ok()) break;
        if (remaining_ == 0) {
          phase_ = Phase::kHeader;
          (void)Stop(handler_->OnDataEnd());
        }
        break;
      }
      case Phase::kStopped:
        break;
    }
  }
  return rejection_;
}

Rejection MessageFramer::Finish() {
  if (phase_ == Phase::kStopped) return rejection_;
  if (between_messages()) return kAccepted;
  // interchange.md § Message Framing: exactly payload_length bytes must be
  // read; the connection ended first.
  return Stop({Rule::kNet05, pos_,
               phase_ == Phase::kHeader
                   ? "the connection ended inside a message header"
                   : "the connection ended inside a message payload"});
}

}  // namespace hurray::stream::net
