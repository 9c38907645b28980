#include "stream/net/testing/slow_crowd.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>

namespace hurray::stream::net::testing {
namespace {

int Connect(uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{};
  tv.tv_sec = 2;  // bounds a blocking connect too
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    return -1;
  }
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

}  // namespace

SlowCrowd::SlowCrowd(const CrowdOptions& options) : options_(options) {
  if (options_.trickle.empty()) options_.trickle = {0};
  clients_.resize(static_cast<size_t>(options_.slow + options_.idle));
  for (int i = 0; i < options_.slow; ++i) clients_[i].slow = true;
  thread_ = std::thread([this] { Loop(); });
}

SlowCrowd::~SlowCrowd() { Stop(); }

void SlowCrowd::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  for (Client& c : clients_) Drop(&c, false);
}

bool SlowCrowd::WaitConnected(int timeout_ms) {
  const auto until =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (connected_once_ < static_cast<int>(clients_.size())) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

void SlowCrowd::Drop(Client* c, bool by_server) {
  if (c->fd < 0) return;
  close(c->fd);
  c->fd = -1;
  c->next_byte = 0;
  --open_;
  if (by_server) ++closed_by_server_;
}

void SlowCrowd::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    lock.unlock();
    Tick();
    lock.lock();
    cv_.wait_for(lock, std::chrono::milliseconds(options_.interval_ms),
                 [this] { return stop_; });
  }
}

void SlowCrowd::Tick() {
  // Read (and drop) what the server sent; a close is noticed here.
  std::vector<pollfd> fds;
  std::vector<Client*> of;
  for (Client& c : clients_) {
    if (c.fd < 0) continue;
    fds.push_back({c.fd, POLLIN, 0});
    of.push_back(&c);
  }
  if (!fds.empty() && poll(fds.data(), fds.size(), 0) > 0) {
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      uint8_t sink[4096];
      const ssize_t n = recv(fds[i].fd, sink, sizeof(sink), MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        Drop(of[i], true);
      }
    }
  }
  for (Client& c : clients_) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;
    }
    if (c.fd < 0) {
      c.fd = Connect(options_.port);
      if (c.fd < 0) {
        ++connect_failures_;
        continue;
      }
      ++connects_;
      ++open_;
      if (!c.ever_connected) {
        c.ever_connected = true;
        ++connected_once_;
      }
    }
    if (!c.slow) continue;
    const uint8_t b = options_.trickle[c.next_byte % options_.trickle.size()];
    if (send(c.fd, &b, 1, MSG_NOSIGNAL | MSG_DONTWAIT) == 1) {
      ++c.next_byte;
    } else if (errno != EAGAIN && errno != EINTR) {
      Drop(&c, true);
    }
  }
}

}  // namespace hurray::stream::net::testing
