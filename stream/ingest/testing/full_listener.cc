#include "stream/ingest/testing/full_listener.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

namespace hurray::stream::ingest::testing {

FullListener::FullListener() {
  listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listener_ < 0) return;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (::bind(listener_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      ::listen(listener_, 0) != 0 ||
      ::getsockname(listener_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    return;
  }
  port_ = ntohs(a.sin_port);
  for (int i = 0; i < 4; ++i) {
    const int f =
        ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (f < 0) continue;
    (void)::connect(f, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    fillers_.push_back(f);
  }
  // Let the handshakes of the fillers complete and fill the queue.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
}

FullListener::~FullListener() {
  for (int f : fillers_) ::close(f);
  if (listener_ >= 0) ::close(listener_);
}

}  // namespace hurray::stream::ingest::testing
