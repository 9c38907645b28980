// NetServerSession: the server side of the Hurray network protocol over one
// connection, sans I/O, serving the tensors of a .hrry file opened with
// HrryFile (stream/container/hrry_mmap.h).
//
//   NetServerSession s(&file, options);
//   loop:
//     while (!s.Output().empty()) { writev(s.Output()); s.ConsumeOutput(n); }
//     if (s.Closed()) close;              // after ERROR for a violation
//     if (s.WantsInput()) { read chunk; s.Feed(chunk); }
//
// Input: the client's bytes, any chunk size. The first message must be
// CLIENT_HELLO (NET-06); framing rules NET-01..05 as framer.h; NET-07
// (strict) for a server-to-client type; NET-08 for a message on a stream
// after an ERROR was sent or received on it; NET-SEQ-01 for a second HELLO
// or RDMA messages (never negotiated); NET-MSG-01 for a malformed payload.
// A violation is answered with ERROR (0x07 MESSAGE_TOO_LARGE for NET-01,
// 0x06 INVALID_MESSAGE otherwise) and the session closes.
//
// Output: SERVER_HELLO; for each TENSOR_REQUEST, in order, the tensor as
// TENSOR_DESCRIPTOR (the file's descriptor bytes + total_data_bytes = Σ
// byte_size, shard 0 of 1), TENSOR_DATA frames of at most
// min(client max_message_size, 1 MiB) payload bytes covering all buffers
// concatenated in table order (RESOLUTIONS.md 15; frames straddle buffer
// boundaries), TENSOR_DATA_END; a composite head is followed by its members
// (pre-order). An unknown key gets ERROR UNKNOWN_TENSOR on its stream. The
// key `hurray:list` (kListKey, when no tensor has that name) gets a 1-D
// uint8 tensor listing the names (docs/network.md § Listing), the key
// `hurray:identity` (kIdentityKey, reserved: always this answer, never a
// tensor of the file) the options' identity bytes when set, else ERROR
// UNKNOWN_TENSOR (§ Identity). PING → PONG.
// TENSOR_PUT is refused with ERROR INVALID_MESSAGE on its stream; the data
// frames the client had already sent for it, up to its TENSOR_DATA_END, are
// skipped.
//
// Output() is a gather list: a small header buffer owned by the session and
// views into the file mapping (tensor bytes are never copied). It is
// produced lazily, one frame at a time: nothing is queued beyond the frame
// being written, and WantsInput() is false while a response is in progress,
// so a client that stops reading holds the server at one frame.
#ifndef HURRAY_STREAM_NET_SERVER_SESSION_H_
#define HURRAY_STREAM_NET_SERVER_SESSION_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "parser/options.h"
#include "stream/container/hrry_mmap.h"
#include "stream/net/message.h"

namespace hurray::stream::net {

struct NetServerOptions {
  Mode mode = Mode::kStrict;  // NET-02 and NET-07 are strict-only
  // Advertised in SERVER_HELLO; a larger client payload is NET-01. Client
  // messages are small (requests; TENSOR_PUT is refused), and each
  // connection may hold one payload this large: 1 MiB by default.
  uint32_t max_message_size = 1u << 20;
  // Upper bound of a TENSOR_DATA payload we send (the client's
  // max_message_size lowers it).
  uint32_t max_data_frame = 1u << 20;
  uint16_t agreed_private_types = 0;
  // Answered (as a 1-D uint8 tensor of these bytes) to a TENSOR_REQUEST for
  // kIdentityKey (even if a tensor of the file has that name); empty: that
  // key is unknown (docs/network.md § Identity). What a resumed client compares
  // with the identity it recorded (issue 13): ServedFileIdentity().
  std::string identity;
};

class NetServerSession {
 public:
  // `file` must outlive the session.
  NetServerSession(const container::HrryFile* file,
                   const NetServerOptions& options);
  ~NetServerSession();
  NetServerSession(const NetServerSession&) = delete;
  NetServerSession& operator=(const NetServerSession&) = delete;

  // Consumes all of `chunk` (queued requests are answered in order). A
  // violation returns its rejection status; the ERROR for it is in Output()
  // and Closed() turns true once it is written.
  [[nodiscard]] absl::Status Feed(absl::Span<const uint8_t> chunk);
  // The client closed its side: NET-05 inside a message (no ERROR is
  // queued: nobody would read it).
  [[nodiscard]] absl::Status Finish();

  // Bytes to send now, as a gather list; empty when there is nothing to send
  // (then see WantsInput / Closed). Views stay valid until ConsumeOutput.
  absl::Span<const absl::Span<const uint8_t>> Output();
  // `n` bytes of Output() were written.
  void ConsumeOutput(size_t n);
  // No response in progress and nothing to send: read more.
  bool WantsInput();
  // Everything to send was sent and the session ended (violation answered,
  // or Finish()).
  bool Closed();

  [[nodiscard]] absl::Status status() const;
  uint64_t position() const;
  // The CLIENT_HELLO arrived and was accepted.
  bool hello_received() const;
  // Part of a message arrived, not all of it; message_at() is its offset.
  bool in_message() const;
  uint64_t message_at() const;
  // Bytes held for the control payload being collected (deadlines and
  // budgets of stream/net/server.h).
  size_t buffered_bytes() const;
  uint64_t tensors_sent() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// The bytes of the `hurray:list` tensor for `file`: each index entry, in
// index order, as a u32 LE byte length and the UTF-8 name.
std::vector<uint8_t> TensorListBytes(const container::HrryFile& file);

}  // namespace hurray::stream::net

#endif  // HURRAY_STREAM_NET_SERVER_SESSION_H_
