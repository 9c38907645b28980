#include "stream/http/testing/http_test_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace hurray::stream::http::testing {
namespace {

bool PollIn(int fd, int ms) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, ms) == 1;
}

}  // namespace

std::string ReadRequestHead(int fd) {
  std::string head;
  char c;
  while (head.find("\r\n\r\n") == std::string::npos) {
    if (!PollIn(fd, 5000) || ::read(fd, &c, 1) != 1) return "";
    head.push_back(c);
  }
  return head;
}

HttpTestServer::HttpTestServer(std::vector<Script> scripts)
    : scripts_(std::move(scripts)) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  ::listen(listen_fd_, 8);
  socklen_t len = sizeof(a);
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
  port_ = ntohs(a.sin_port);
  thread_ = std::thread([this] { Serve(); });
}

HttpTestServer::~HttpTestServer() {
  thread_.join();
  ::close(listen_fd_);
}

std::string HttpTestServer::Url(absl::string_view path) const {
  return absl::StrCat("http://127.0.0.1:", port_, path);
}

std::vector<std::string> HttpTestServer::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

void HttpTestServer::Serve() {
  for (Script& script : scripts_) {
    if (!PollIn(listen_fd_, 5000)) return;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) return;
    std::string head;
    char c;
    while (head.find("\r\n\r\n") == std::string::npos && PollIn(fd, 5000) &&
           ::read(fd, &c, 1) == 1) {
      head.push_back(c);
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      requests_.push_back(head);
    }
    script(fd);
    ::close(fd);
  }
}

HttpTestServer::Script HttpTestServer::Respond(std::string response) {
  return [response = std::move(response)](int fd) { SendAll(fd, response); };
}

void SendAll(int fd, absl::string_view s) {
  while (!s.empty()) {
    const ssize_t n = ::send(fd, s.data(), s.size(), MSG_NOSIGNAL);
    if (n <= 0) return;
    s.remove_prefix(static_cast<size_t>(n));
  }
}

std::string OkResponse(absl::string_view body) {
  return absl::StrCat("HTTP/1.1 200 OK\r\nContent-Length: ", body.size(),
                      "\r\nConnection: close\r\n\r\n", body);
}

bool HasField(absl::string_view request, absl::string_view name) {
  for (absl::string_view line : absl::StrSplit(request, "\r\n")) {
    const size_t colon = line.find(':');
    if (colon != absl::string_view::npos &&
        absl::EqualsIgnoreCase(line.substr(0, colon), name)) {
      return true;
    }
  }
  return false;
}

}  // namespace hurray::stream::http::testing
