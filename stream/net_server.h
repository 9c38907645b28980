// NetServer: serves a .hrry file over TCP with Boost.Asio, one
// NetServerSession per connection (stream/net_server_session.h).
//
//   NetServer server(&file, options);
//   absl::Status s = server.Listen();     // binds; port() is then known
//   server.Run();                         // until Stop() (any thread)
//
// Each connection runs its own session; a violation on one is answered with
// ERROR and closes that connection only. Writes go out one frame at a time
// (scatter-gather straight from the file mapping): a slow reader holds its
// connection at one frame, never an unbounded queue, and its requests are
// not read while a response is in progress. A connection with no progress
// (no byte read or written) for `idle_timeout_ms` is closed. Stop() closes
// the acceptor and every connection and makes Run() return; it is safe from
// any thread and from a signal-watching thread.
#ifndef HURRAY_STREAM_NET_SERVER_H_
#define HURRAY_STREAM_NET_SERVER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "stream/hrry_mmap.h"
#include "stream/net_server_session.h"

namespace hurray::stream {

struct NetServerConfig {
  std::string bind_address = "127.0.0.1";
  uint16_t port = 7420;  // 0: any free port (see port())
  NetServerOptions session;
  uint32_t idle_timeout_ms = 30000;
  uint32_t read_buffer_bytes = 64 << 10;
  // Connections served at once; further ones wait in the listen backlog.
  uint32_t max_connections = 1024;
  // Threads running the event loop.
  uint32_t threads = 1;
};

class NetServer {
 public:
  NetServer(const HrryFile* file, const NetServerConfig& config);
  ~NetServer();
  NetServer(const NetServer&) = delete;
  NetServer& operator=(const NetServer&) = delete;

  // Binds and listens.
  absl::Status Listen();
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
  uint64_t connections_rejected() const;  // closed after a violation

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hurray::stream

#endif  // HURRAY_STREAM_NET_SERVER_H_
