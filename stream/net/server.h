// NetServer: serves a .hrry file over TCP with Boost.Asio, one
// NetServerSession per connection (stream/net/server_session.h).
//
//   NetServer server(&file, options);
//   absl::Status s = server.Listen();     // binds; port() is then known
//   server.Run();                         // until Stop() (any thread)
//
// Each connection runs its own session; a violation on one is answered with
// ERROR and closes that connection only. Writes go out one frame at a time
// (scatter-gather straight from the file mapping): a slow reader holds its
// connection at one frame, never an unbounded queue, and its requests are
// not read while a response is in progress.
//
// Slow and greedy clients (every wait has a deadline, every resource a cap):
// - Idle: a connection with no progress (no byte read or written) for
//   `idle_timeout_ms` is closed.
// - HELLO: the CLIENT_HELLO must have arrived whole `hello_timeout_ms` after
//   the accept; a message must arrive whole (header and payload)
//   `message_timeout_ms` after its first byte. Only the time the server
//   waits to read counts (not the time it spends answering). So a client
//   trickling one byte at a time, which keeps the idle timer alive, is
//   closed anyway. These closes send a best-effort ERROR 0x06.
// - Connections: at most `max_connections` (default: sized to the
//   descriptor limit, DefaultMaxConnections), at most
//   `max_connections_per_peer` from one address. A connection arriving at a
//   cap displaces a waiting one (stream/net/admission.h: silent HELLO-less
//   ones first, oldest first; a connection being answered is never
//   displaced) or, when there is none, is refused: ERROR 0x06 "server
//   full", then close.
// - Memory: control payloads are collected whole (up to max_message_size);
//   beyond `control_allowance_bytes` per connection they draw on one budget
//   of `control_budget_bytes` shared by every connection. A connection that
//   would exceed it is closed with ERROR 0x07. Reads go into one buffer per
//   event-loop thread, not one per connection.
//
// Stop() closes the acceptor and every connection and makes Run() return;
// it is safe from any thread and from a signal-watching thread.
#ifndef HURRAY_STREAM_NET_SERVER_H_
#define HURRAY_STREAM_NET_SERVER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "stream/container/hrry_mmap.h"
#include "stream/net/server_session.h"

namespace hurray::stream::net {

struct NetServerConfig {
  std::string bind_address = "127.0.0.1";
  uint16_t port = 7420;  // 0: any free port (see port())
  NetServerOptions session;
  uint32_t idle_timeout_ms = 30000;
  uint32_t hello_timeout_ms = 5000;
  uint32_t message_timeout_ms = 5000;
  uint32_t read_buffer_bytes = 64 << 10;
  // 0: DefaultMaxConnections().
  uint32_t max_connections = 0;
  // Capped at max_connections.
  uint32_t max_connections_per_peer = 256;
  uint64_t control_allowance_bytes = 16 << 10;
  uint64_t control_budget_bytes = uint64_t{64} << 20;
  // Threads running the event loop.
  uint32_t threads = 1;
};

// The soft RLIMIT_NOFILE minus a reserve for the listener, the file and the
// process's other descriptors (at least 1, at most 65536).
uint32_t DefaultMaxConnections();

// What `hurray serve` answers for kIdentityKey (docs/network.md
// § Identity): "hrry dev=D ino=I size=S mtime_ns=M index_crc32c=XXXXXXXX".
// StatIdentity is the stat(2) part for `path`; the caller takes it before
// and after HrryFile::Open and refuses to serve if they differ (the file was
// replaced while it was opened). ServedFileIdentity appends the file's index
// CRC-32C (its trailer, file-format.md).
[[nodiscard]] absl::StatusOr<std::string> StatIdentity(const std::string& path);
std::string ServedFileIdentity(absl::string_view stat_identity,
                               const container::HrryFile& file);

class NetServer {
 public:
  NetServer(const container::HrryFile* file, const NetServerConfig& config);
  ~NetServer();
  NetServer(const NetServer&) = delete;
  NetServer& operator=(const NetServer&) = delete;

  // Binds and listens.
  [[nodiscard]] absl::Status Listen();
  // The bound port (after Listen).
  uint16_t port() const;
  // Serves until Stop(); returns when every connection is closed.
  void Run();
  // Thread-safe.
  void Stop();
  // Also stops on SIGINT / SIGTERM (call before Run).
  void StopOnSignals();

  // Counters (approximate while running).
  uint64_t connections_accepted() const;
  uint64_t connections_rejected() const;   // closed after a violation
  uint64_t connections_refused() const;    // at a cap, nothing to displace
  uint64_t connections_displaced() const;  // made room for a newer one
  uint64_t connections_timed_out() const;  // HELLO or message deadline
  uint64_t connections_over_budget() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hurray::stream::net

#endif  // HURRAY_STREAM_NET_SERVER_H_
