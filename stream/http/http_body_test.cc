// HttpBody's deadlines against a scripted plain-HTTP server on loopback:
// the idle timeout counts the server's silence while a Read waits, not the
// time the caller spends between Reads (the body watchdog, issue 15); a
// server that stops sending is cut at the idle timeout; a body of known
// length ends at its Content-Length; a 206 read through the parser (chunked)
// has exactly its Content-Range's length (found by //fuzz:http_client_fuzz,
// issue 46).
#include "stream/http/http_body.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "stream/http/http_url.h"

namespace hurray::stream::http {
namespace {

using Clock = std::chrono::steady_clock;

// One connection on 127.0.0.1: reads the request head, then runs `script`
// with the connected socket.
class ScriptedServer {
 public:
  explicit ScriptedServer(std::function<void(int)> script)
      : script_(std::move(script)) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)),
              0);
    EXPECT_EQ(::listen(listen_fd_, 1), 0);
    socklen_t len = sizeof(a);
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~ScriptedServer() {
    thread_.join();
    ::close(listen_fd_);
  }
  std::string url() const {
    return absl::StrCat("http://127.0.0.1:", port_, "/x");
  }

 private:
  void Serve() {
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) return;
    std::string head;
    char c;
    while (head.find("\r\n\r\n") == std::string::npos &&
           ::read(fd, &c, 1) == 1) {
      head.push_back(c);
    }
    script_(fd);
    ::close(fd);
  }

  std::function<void(int)> script_;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::thread thread_;
};

void Send(int fd, const std::string& s) {
  size_t at = 0;
  while (at < s.size()) {
    const ssize_t n = ::send(fd, s.data() + at, s.size() - at, MSG_NOSIGNAL);
    if (n <= 0) return;
    at += static_cast<size_t>(n);
  }
}

std::string Head(size_t length) {
  return absl::StrCat("HTTP/1.1 200 OK\r\nContent-Length: ", length,
                      "\r\nConnection: close\r\n\r\n");
}

absl::StatusOr<std::unique_ptr<HttpBody>> Open(const std::string& url,
                                               double idle_seconds) {
  absl::StatusOr<Url> u = ParseUrl(url);
  if (!u.ok()) return u.status();
  HttpOptions o;
  o.idle_timeout_seconds = idle_seconds;
  o.connect_timeout_seconds = 5;
  return HttpBody::Open(*u, o);
}

TEST(HttpBodyDeadlines, TheCallersPauseIsNotTheServersSilence) {
  // The server sends 1000 bytes, then the rest 3 s later. The caller reads
  // the first bytes, is busy for 2.5 s (more than twice the idle timeout),
  // then waits 0.5 s for the rest: within the idle timeout of that Read.
  const std::string body(64 << 10, 'b');
  ScriptedServer server([&](int fd) {
    Send(fd, Head(body.size()) + body.substr(0, 1000));
    std::this_thread::sleep_for(std::chrono::milliseconds(3000));
    Send(fd, body.substr(1000));
  });
  absl::StatusOr<std::unique_ptr<HttpBody>> b = Open(server.url(), 1.0);
  ASSERT_TRUE(b.ok()) << b.status();
  std::vector<uint8_t> buf(body.size());
  absl::StatusOr<size_t> n = (*b)->Read(absl::MakeSpan(buf));
  ASSERT_TRUE(n.ok()) << n.status();
  uint64_t total = *n;
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  while (true) {
    n = (*b)->Read(absl::MakeSpan(buf));
    ASSERT_TRUE(n.ok()) << n.status();
    if (*n == 0) break;
    total += *n;
  }
  EXPECT_EQ(total, body.size());
}

TEST(HttpBodyDeadlines, AServerThatStopsIsCutAtTheIdleTimeout) {
  ScriptedServer server([](int fd) {
    Send(fd, Head(100000) + std::string(1000, 'a'));
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  });
  absl::StatusOr<std::unique_ptr<HttpBody>> b = Open(server.url(), 0.4);
  ASSERT_TRUE(b.ok()) << b.status();
  std::vector<uint8_t> buf(100000);
  uint64_t total = 0;
  const Clock::time_point start = Clock::now();
  absl::Status error;
  while (error.ok()) {
    absl::StatusOr<size_t> n = (*b)->Read(absl::MakeSpan(buf));
    if (!n.ok()) {
      error = n.status();
    } else {
      ASSERT_GT(*n, 0u) << "a short body must not end quietly";
      total += *n;
    }
  }
  const double waited =
      std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_EQ(total, 1000u);
  EXPECT_NE(error.message().find("idle timeout"), std::string::npos) << error;
  EXPECT_GE(waited, 0.35);
  EXPECT_LT(waited, 2.0);
}

TEST(HttpBodyDeadlines, AKnownLengthEndsThereWhileTheConnectionStaysOpen) {
  ScriptedServer server([](int fd) {
    Send(fd, Head(10) + "0123456789" + std::string(500, 'x'));
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  });
  absl::StatusOr<std::unique_ptr<HttpBody>> b = Open(server.url(), 1.0);
  ASSERT_TRUE(b.ok()) << b.status();
  std::vector<uint8_t> buf(4096);
  std::string got;
  const Clock::time_point start = Clock::now();
  while (true) {
    absl::StatusOr<size_t> n = (*b)->Read(absl::MakeSpan(buf));
    ASSERT_TRUE(n.ok()) << n.status();
    if (*n == 0) break;
    got.append(reinterpret_cast<const char*>(buf.data()), *n);
  }
  EXPECT_EQ(got, "0123456789");
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 0.9);
}

// Bytes 0-3 of a 10-byte object, answered chunked with `chunks`.
std::string Chunked206(const std::string& chunks) {
  return "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-3/10\r\n"
         "Transfer-Encoding: chunked\r\n\r\n" +
         chunks;
}

// The body of a request for bytes 0-3 and the error that ended it.
std::pair<std::string, absl::Status> ReadRange(const std::string& url) {
  absl::StatusOr<Url> u = ParseUrl(url);
  EXPECT_TRUE(u.ok());
  HttpOptions o;
  o.idle_timeout_seconds = 5;
  o.connect_timeout_seconds = 5;
  absl::StatusOr<std::unique_ptr<HttpBody>> b =
      HttpBody::Open(*u, o, HttpRange{0, 3, ""});
  if (!b.ok()) return {"", b.status()};
  std::string got;
  std::vector<uint8_t> buf(64);
  while (true) {
    absl::StatusOr<size_t> n = (*b)->Read(absl::MakeSpan(buf));
    if (!n.ok()) return {got, n.status()};
    if (*n == 0) break;
    got.append(reinterpret_cast<const char*>(buf.data()), *n);
  }
  EXPECT_EQ((*b)->received(), got.size());
  return {got, absl::OkStatus()};
}

TEST(HttpBodyRanges, AChunked206OfTheRangesLengthIsRead) {
  ScriptedServer server(
      [](int fd) { Send(fd, Chunked206("2\r\nab\r\n2\r\ncd\r\n0\r\n\r\n")); });
  const auto [got, error] = ReadRange(server.url());
  EXPECT_TRUE(error.ok()) << error;
  EXPECT_EQ(got, "abcd");
}

TEST(HttpBodyRanges, AChunked206LongerThanItsContentRangeIsRefused) {
  ScriptedServer server(
      [](int fd) { Send(fd, Chunked206("6\r\nabcdef\r\n0\r\n\r\n")); });
  const auto [got, error] = ReadRange(server.url());
  EXPECT_EQ(got, "abcd");  // the range's bytes, then the error
  EXPECT_TRUE(absl::StrContains(error.message(), "goes on past")) << error;
}

TEST(HttpBodyRanges, AChunked206ShorterThanItsContentRangeIsRefused) {
  ScriptedServer server(
      [](int fd) { Send(fd, Chunked206("2\r\nab\r\n0\r\n\r\n")); });
  const auto [got, error] = ReadRange(server.url());
  EXPECT_EQ(got, "ab");
  EXPECT_TRUE(absl::StrContains(error.message(), "ended after 2 of the 4"))
      << error;
}

TEST(HttpBodyRanges, A206ToTheEndOfTheConnectionHasTheRangesLength) {
  // No Content-Length, not chunked: the body runs to the connection's end.
  ScriptedServer server([](int fd) {
    Send(fd,
         "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-3/10\r\n"
         "\r\nabcdefgh");
  });
  const auto [got, error] = ReadRange(server.url());
  EXPECT_EQ(got, "abcd");
  EXPECT_TRUE(absl::StrContains(error.message(), "goes on past")) << error;
}

}  // namespace
}  // namespace hurray::stream::http
