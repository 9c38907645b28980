// A loopback TCP listener whose accept queue is full: the kernel drops new
// SYNs, so a connect to it waits until the client's own connect timeout
// (tests of the connect deadlines: stream/ingest/loader_test,
// tools/ingest_command).
#ifndef HURRAY_STREAM_INGEST_TESTING_FULL_LISTENER_H_
#define HURRAY_STREAM_INGEST_TESTING_FULL_LISTENER_H_

#include <cstdint>
#include <vector>

namespace hurray::stream::ingest::testing {

class FullListener {
 public:
  // Listens on 127.0.0.1 (an ephemeral port, backlog 0) and fills the
  // queue with connections it never accepts. ok() is false when a socket
  // call failed.
  FullListener();
  ~FullListener();
  FullListener(const FullListener&) = delete;
  FullListener& operator=(const FullListener&) = delete;

  bool ok() const { return listener_ >= 0 && port_ != 0; }
  uint16_t port() const { return port_; }

 private:
  int listener_ = -1;
  uint16_t port_ = 0;
  std::vector<int> fillers_;
};

}  // namespace hurray::stream::ingest::testing

#endif  // HURRAY_STREAM_INGEST_TESTING_FULL_LISTENER_H_
