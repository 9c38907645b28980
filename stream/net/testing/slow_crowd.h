// SlowCrowd: hostile clients for server tests and benchmarks, on 127.0.0.1.
//
// `slow` clients send one byte of `trickle` (cycled) per `interval_ms`, the
// slow-loris pattern that keeps an idle timer alive forever; `idle` clients
// connect and send nothing. A client the server closes connects again at the
// next tick, so the pressure lasts until Stop(). One thread, poll() over the
// sockets; everything it opens is closed by Stop() or the destructor.
#ifndef HURRAY_STREAM_NET_TESTING_SLOW_CROWD_H_
#define HURRAY_STREAM_NET_TESTING_SLOW_CROWD_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace hurray::stream::net::testing {

struct CrowdOptions {
  uint16_t port = 0;
  int slow = 0;
  int idle = 0;
  int interval_ms = 100;
  std::vector<uint8_t> trickle = {0};
};

class SlowCrowd {
 public:
  explicit SlowCrowd(const CrowdOptions& options);
  ~SlowCrowd();
  SlowCrowd(const SlowCrowd&) = delete;
  SlowCrowd& operator=(const SlowCrowd&) = delete;

  // Every client connected at least once (false after `timeout_ms`).
  bool WaitConnected(int timeout_ms);
  void Stop();

  uint64_t connects() const { return connects_; }
  uint64_t closed_by_server() const { return closed_by_server_; }
  uint64_t connect_failures() const { return connect_failures_; }
  int open() const { return open_; }

 private:
  struct Client {
    int fd = -1;
    bool slow = false;
    bool ever_connected = false;
    size_t next_byte = 0;
  };
  void Loop();
  void Tick();
  void Drop(Client* c, bool by_server);

  CrowdOptions options_;
  std::vector<Client> clients_;
  std::atomic<uint64_t> connects_{0};
  std::atomic<uint64_t> closed_by_server_{0};
  std::atomic<uint64_t> connect_failures_{0};
  std::atomic<int> open_{0};
  std::atomic<int> connected_once_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace hurray::stream::net::testing

#endif  // HURRAY_STREAM_NET_TESTING_SLOW_CROWD_H_
