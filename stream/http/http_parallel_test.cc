// One object over N range requests at once (issue 47 item 2): the bytes in
// order whatever N and the range size, every range validated (a changed
// object, a wrong Content-Range, a short range and a 200 are errors that
// name the range), the window's bound. Against a threaded loopback server
// that answers range requests on kept-alive connections.
#include "stream/http/http_parallel.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "stream/http/http_ranges.h"
#include "stream/http/http_url.h"
#include "stream/http/testing/http_test_server.h"

namespace hurray::stream::http {
namespace {

constexpr uint64_t kRange = 16 << 10;

std::string Object(size_t size) {
  std::string o(size, '\0');
  for (size_t i = 0; i < size; ++i) o[i] = static_cast<char>(i * 13 + i / 7);
  return o;
}

void SendAll(int fd, absl::string_view s) {
  while (!s.empty()) {
    const ssize_t n = ::send(fd, s.data(), s.size(), MSG_NOSIGNAL);
    if (n <= 0) return;
    s.remove_prefix(static_cast<size_t>(n));
  }
}

// A range server on 127.0.0.1: a thread per connection, each answering
// requests until the client closes. Misbehaviours by the first byte of
// the range asked for.
class RangeServer {
 public:
  struct Knobs {
    bool ranges = true;                  // false: 200 and the whole object
    uint64_t change_after = 0;           // >0: a new ETag after this many
    uint64_t bad_range_at = UINT64_MAX;  // a wrong Content-Range
    uint64_t short_at = UINT64_MAX;      // half the body, then close
    int close_every = 0;                 // >0: close after this many answers
    int stall_from = 0;  // >0: connections from this one on (1-based) are
                         // never answered
  };

  RangeServer(std::string object, Knobs knobs)
      : object_(std::move(object)), knobs_(knobs) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    ::listen(listen_fd_, 64);
    socklen_t len = sizeof(a);
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    accept_ = std::thread([this] { Accept(); });
  }

  ~RangeServer() {
    stop_ = true;
    accept_.join();
    std::lock_guard<std::mutex> lock(mu_);
    for (std::thread& t : conns_) t.join();
    ::close(listen_fd_);
  }

  std::string Url() const {
    return absl::StrCat("http://127.0.0.1:", port_, "/o");
  }
  int connections() const { return connections_; }
  uint64_t requests() const { return requests_; }

 private:
  void Accept() {
    while (!stop_) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) != 1) continue;
      const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      const int number = ++connections_;
      std::lock_guard<std::mutex> lock(mu_);
      conns_.emplace_back([this, fd, number] {
        if (knobs_.stall_from > 0 && number >= knobs_.stall_from) {
          Stall(fd);
        } else {
          Serve(fd);
        }
        ::close(fd);
      });
    }
  }

  static std::string Field(const std::string& head, absl::string_view name) {
    const size_t at = head.find(absl::StrCat("\r\n", name, ": "));
    if (at == std::string::npos) return "";
    const size_t from = at + name.size() + 4;
    return head.substr(from, head.find("\r\n", from) - from);
  }

  // Reads what comes and answers nothing, until the client closes or the
  // server stops.
  void Stall(int fd) {
    char sink[4096];
    while (!stop_) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 50) != 1) continue;
      if (::recv(fd, sink, sizeof(sink), 0) <= 0) return;
    }
  }

  void Serve(int fd) {
    for (int answered = 0;; ++answered) {
      if (knobs_.close_every > 0 && answered == knobs_.close_every) return;
      const std::string head = testing::ReadRequestHead(fd);
      if (head.empty()) return;
      const uint64_t n = ++requests_;
      const std::string etag =
          knobs_.change_after > 0 && n > knobs_.change_after ? "\"v2\""
                                                             : "\"v1\"";
      const std::string range = Field(head, "Range");
      const std::string if_range = Field(head, "If-Range");
      uint64_t first = 0, last = object_.size() - 1;
      bool ranged = knobs_.ranges && absl::StartsWith(range, "bytes=") &&
                    (if_range.empty() || if_range == etag);
      if (ranged) {
        const size_t dash = range.find('-');
        ranged = absl::SimpleAtoi(range.substr(6, dash - 6), &first);
        uint64_t l = 0;
        if (absl::SimpleAtoi(range.substr(dash + 1), &l)) {
          last = std::min<uint64_t>(l, object_.size() - 1);
        }
      }
      if (!ranged) {
        SendAll(fd, absl::StrCat(
                        "HTTP/1.1 200 OK\r\nContent-Length: ", object_.size(),
                        "\r\nETag: ", etag, "\r\n\r\n", object_));
        continue;
      }
      const uint64_t said_first = first == knobs_.bad_range_at ? 0 : first;
      std::string body = object_.substr(first, last - first + 1);
      SendAll(fd, absl::StrCat("HTTP/1.1 206 Partial Content\r\n",
                               "Content-Range: bytes ", said_first, "-",
                               said_first + last - first, "/", object_.size(),
                               "\r\nContent-Length: ", body.size(),
                               "\r\nETag: ", etag, "\r\n\r\n"));
      if (first == knobs_.short_at) {
        SendAll(fd, body.substr(0, body.size() / 2));
        return;
      }
      SendAll(fd, body);
    }
  }

  const std::string object_;
  const Knobs knobs_;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  std::atomic<uint64_t> requests_{0};
  std::mutex mu_;
  std::vector<std::thread> conns_;
  std::thread accept_;
};

struct Got {
  absl::Status status;
  std::string bytes;
  int connections = 0;
  uint64_t window = 0;
};

// Opens `server`'s object over `n` connections from byte `first` and
// reads it to the end or the first error, `step` bytes at a time.
Got Fetch(const RangeServer& server, int n, size_t step, uint64_t first = 0) {
  Got g;
  absl::StatusOr<Url> u = ParseUrl(server.Url());
  EXPECT_TRUE(u.ok());
  HttpOptions o;
  o.connect_timeout_seconds = 5;
  o.idle_timeout_seconds = 5;
  ParallelOptions p;
  p.connections = n;
  p.range_bytes = kRange;
  absl::StatusOr<std::unique_ptr<ParallelHttpBody>> body =
      ParallelHttpBody::Open(*u, o, p, first);
  if (!body.ok()) {
    g.status = body.status();
    return g;
  }
  std::vector<uint8_t> buf(step);
  for (;;) {
    absl::StatusOr<size_t> r = (*body)->Read(absl::MakeSpan(buf));
    if (!r.ok()) {
      g.status = r.status();
      break;
    }
    if (*r == 0) break;
    g.bytes.append(reinterpret_cast<const char*>(buf.data()), *r);
  }
  g.connections = (*body)->connections();
  g.window = (*body)->window_bytes();
  return g;
}

TEST(ParallelHttpBody, TheSameBytesWhateverTheConnections) {
  const std::string object = Object(300 * 1024 + 77);  // 19 ranges
  RangeServer server(object, {});
  for (int n : {1, 2, 3, 8}) {
    for (size_t step : {size_t{1000}, size_t{1} << 20}) {
      const Got g = Fetch(server, n, step);
      ASSERT_TRUE(g.status.ok()) << n << ": " << g.status;
      EXPECT_TRUE(g.bytes == object) << n << " connections, step " << step;
      EXPECT_LE(g.connections, n);
      // The window: 2 x N ranges at most.
      EXPECT_LE(g.window, 2 * static_cast<uint64_t>(n) * kRange);
    }
  }
}

TEST(ParallelHttpBody, FromAnOffsetAndOverConnectionsThatClose) {
  const std::string object = Object(200 * 1024);
  RangeServer::Knobs k;
  k.close_every = 2;  // each connection answers two requests
  RangeServer server(object, k);
  const Got g = Fetch(server, 4, 4096, 5000);
  ASSERT_TRUE(g.status.ok()) << g.status;
  EXPECT_TRUE(g.bytes == object.substr(5000));
}

TEST(ParallelHttpBody, AnObjectThatChangesIsAnErrorNeverMixedBytes) {
  const std::string object = Object(300 * 1024);
  RangeServer::Knobs k;
  k.change_after = 5;
  RangeServer server(object, k);
  const Got g = Fetch(server, 4, 1 << 20);
  EXPECT_EQ(g.status.code(), absl::StatusCode::kFailedPrecondition) << g.status;
  EXPECT_TRUE(absl::StrContains(g.status.message(), "changed on the server"))
      << g.status;
  EXPECT_TRUE(absl::StartsWith(g.status.message(), "range bytes=")) << g.status;
  // What came before the error is the object's own prefix.
  EXPECT_TRUE(object.compare(0, g.bytes.size(), g.bytes) == 0);
  EXPECT_LT(g.bytes.size(), object.size());
}

TEST(ParallelHttpBody, AWrongContentRangeIsAnErrorNamingTheRange) {
  const std::string object = Object(300 * 1024);
  RangeServer::Knobs k;
  k.bad_range_at = 5 * kRange;
  RangeServer server(object, k);
  const Got g = Fetch(server, 3, 1 << 20);
  EXPECT_FALSE(g.status.ok());
  EXPECT_TRUE(absl::StrContains(
      g.status.message(),
      absl::StrCat("range bytes=", 5 * kRange, "-", 6 * kRange - 1)))
      << g.status;
  EXPECT_TRUE(absl::StrContains(g.status.message(), "Content-Range"))
      << g.status;
  EXPECT_TRUE(g.bytes == object.substr(0, 5 * kRange));
}

TEST(ParallelHttpBody, AShortRangeIsAnError) {
  const std::string object = Object(300 * 1024);
  RangeServer::Knobs k;
  k.short_at = 3 * kRange;
  RangeServer server(object, k);
  const Got g = Fetch(server, 2, 1 << 20);
  EXPECT_FALSE(g.status.ok());
  EXPECT_TRUE(absl::StrContains(g.status.message(), "truncated")) << g.status;
  EXPECT_TRUE(object.compare(0, g.bytes.size(), g.bytes) == 0);
  EXPECT_GE(g.bytes.size(), 3 * kRange);
  EXPECT_LT(g.bytes.size(), 4 * kRange);
}

TEST(ParallelHttpBody, AShortRangeReadStraightFromItsSocketIsAnError) {
  // Range 0 is the one Read is in from the start: its worker hands the
  // connection over and Read takes its bytes from the socket itself.
  const std::string object = Object(300 * 1024);
  RangeServer::Knobs k;
  k.short_at = 0;
  RangeServer server(object, k);
  for (size_t step : {size_t{1000}, size_t{1} << 20}) {
    const Got g = Fetch(server, 3, step);
    EXPECT_FALSE(g.status.ok());
    EXPECT_TRUE(absl::StartsWith(
        g.status.message(),
        absl::StrCat("range bytes=0-", kRange - 1, ": truncated")))
        << g.status;
    EXPECT_TRUE(absl::StrContains(g.status.message(),
                                  absl::StrCat(kRange / 2, " of ", kRange)))
        << g.status;
    EXPECT_TRUE(g.bytes == object.substr(0, kRange / 2));
  }
}

TEST(ParallelHttpBody, ARangeOfAKnownObject) {
  // OpenKnown (HttpRangeSource's long reads): bytes [first, end) only.
  const std::string object = Object(300 * 1024);
  RangeServer server(object, {});
  absl::StatusOr<Url> u = ParseUrl(server.Url());
  ASSERT_TRUE(u.ok());
  HttpOptions o;
  o.idle_timeout_seconds = 5;
  ParallelOptions p;
  p.connections = 3;
  p.range_bytes = kRange;
  absl::StatusOr<std::unique_ptr<ParallelHttpBody>> body =
      ParallelHttpBody::OpenKnown(*u, o, p, 1000, 200000, object.size(),
                                  "\"v1\"", "\"v1\"");
  ASSERT_TRUE(body.ok()) << body.status();
  std::string got;
  std::vector<uint8_t> buf(7000);
  for (;;) {
    absl::StatusOr<size_t> n = (*body)->Read(absl::MakeSpan(buf));
    ASSERT_TRUE(n.ok()) << n.status();
    if (*n == 0) break;
    got.append(reinterpret_cast<const char*>(buf.data()), *n);
  }
  EXPECT_TRUE(got == object.substr(1000, 199000));
  EXPECT_LE((*body)->connections(), 3);
  // Another object behind the same URL (another size): refused.
  absl::StatusOr<std::unique_ptr<ParallelHttpBody>> other =
      ParallelHttpBody::OpenKnown(*u, o, p, 0, 100000, object.size() + 1,
                                  "\"v1\"", "\"v1\"");
  ASSERT_TRUE(other.ok());
  absl::StatusOr<size_t> n = (*other)->Read(absl::MakeSpan(buf));
  EXPECT_EQ(n.status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(ParallelHttpBody, DroppedOrInterruptedMidWayItStops) {
  // The loader stops reading (a rejection, a cancel): dropping the body,
  // or Interrupt from another thread, ends every worker (no hang).
  const std::string object = Object(600 * 1024);
  RangeServer::Knobs k;
  k.close_every = 1;  // every range on a new connection: Next reconnects
  RangeServer server(object, k);
  absl::StatusOr<Url> u = ParseUrl(server.Url());
  ASSERT_TRUE(u.ok());
  HttpOptions o;
  o.idle_timeout_seconds = 30;
  ParallelOptions p;
  p.connections = 4;
  p.range_bytes = kRange;
  for (int i = 0; i < 20; ++i) {
    absl::StatusOr<std::unique_ptr<ParallelHttpBody>> body =
        ParallelHttpBody::Open(*u, o, p);
    ASSERT_TRUE(body.ok()) << body.status();
    std::vector<uint8_t> buf(1000 + i * 3000);
    ASSERT_TRUE((*body)->Read(absl::MakeSpan(buf)).ok());
    if (i % 2 == 1) {
      std::thread t([&] { (*body)->Interrupt(); });
      t.join();
      EXPECT_FALSE((*body)->Read(absl::MakeSpan(buf)).ok());
    }
  }  // each destroyed here, its workers joined
}

TEST(ParallelHttpBody, ACancelEndsConnectionsWaitingForTheirHeader) {
  // Workers 2-4 connect to a server that never answers them: a cancel (or
  // dropping the body) ends their wait at once, not at the 60 s timeouts.
  const std::string object = Object(600 * 1024);
  RangeServer::Knobs k;
  k.stall_from = 2;
  RangeServer server(object, k);
  absl::StatusOr<Url> u = ParseUrl(server.Url());
  ASSERT_TRUE(u.ok());
  HttpOptions o;
  o.connect_timeout_seconds = 60;
  o.idle_timeout_seconds = 60;
  ParallelOptions p;
  p.connections = 4;
  p.range_bytes = kRange;
  const auto start = std::chrono::steady_clock::now();
  {
    absl::StatusOr<std::unique_ptr<ParallelHttpBody>> body =
        ParallelHttpBody::Open(*u, o, p);
    ASSERT_TRUE(body.ok()) << body.status();
    std::thread t([&] {
      // Every worker has taken a range: those of the three stalled ones
      // never come, and Read waits at the first of them.
      for (int i = 0; i < 4000 && server.connections() < 4; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      (*body)->Interrupt();
    });
    std::vector<uint8_t> buf(kRange);
    uint64_t got = 0;
    absl::StatusOr<size_t> n;
    do {
      n = (*body)->Read(absl::MakeSpan(buf));
      if (n.ok()) got += *n;
    } while (n.ok() && *n > 0);
    t.join();
    EXPECT_EQ(n.status().code(), absl::StatusCode::kUnavailable) << n.status();
    EXPECT_LT(got, object.size());
  }  // destroyed: every worker joined
  // A liveness bound, far from the 60 s the workers would otherwise wait.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
}

// Reads [offset, offset + length) of `server`'s object through `src`.
std::string ReadRange(HttpRangeSource& src, uint64_t offset, uint64_t length) {
  std::string got;
  absl::Status s =
      src.Read(offset, length, [&](absl::Span<const uint8_t> piece) {
        got.append(reinterpret_cast<const char*>(piece.data()), piece.size());
        return absl::OkStatus();
      });
  EXPECT_TRUE(s.ok()) << s;
  return got;
}

TEST(HttpRangeSource, LongReadsKeepTheirConnectionsForTheNext) {
  // --tensors with --connections: each long read goes over the connections
  // of the one before (HttpBody::Next), not over new ones.
  const std::string object = Object(8 << 20);
  RangeServer server(object, {});
  absl::StatusOr<Url> u = ParseUrl(server.Url());
  ASSERT_TRUE(u.ok());
  HttpOptions o;
  o.idle_timeout_seconds = 10;
  absl::StatusOr<HttpRangeSource::Opened> opened =
      HttpRangeSource::Open(*u, o, /*connections=*/4);
  ASSERT_TRUE(opened.ok()) << opened.status();
  ASSERT_NE(opened->ranges, nullptr);
  HttpRangeSource& src = *opened->ranges;
  // Six reads of 2 to 4 ranges of 1 MiB, each over up to 4 workers. Kept,
  // the connections never number more than Open's and 4: one read's
  // connection each would make at least 7.
  for (int i = 0; i < 6; ++i) {
    const uint64_t at = (i % 3) * (1 << 20) + i * 100;
    const uint64_t length = (2 << 20) + (i % 3) * (1 << 20) - i;
    EXPECT_TRUE(ReadRange(src, at, length) == object.substr(at, length));
  }
  EXPECT_LE(src.connections(), 5);
  EXPECT_EQ(server.connections(), src.connections());
}

TEST(HttpRangeSource, KeptConnectionsThatTheServerClosedAreMadeAgain) {
  const std::string object = Object(6 << 20);
  RangeServer::Knobs k;
  k.close_every = 1;
  RangeServer server(object, k);
  absl::StatusOr<Url> u = ParseUrl(server.Url());
  ASSERT_TRUE(u.ok());
  HttpOptions o;
  o.idle_timeout_seconds = 10;
  absl::StatusOr<HttpRangeSource::Opened> opened =
      HttpRangeSource::Open(*u, o, /*connections=*/3);
  ASSERT_TRUE(opened.ok()) << opened.status();
  ASSERT_NE(opened->ranges, nullptr);
  for (int i = 0; i < 3; ++i) {
    const uint64_t at = 1000 + i * 7;
    EXPECT_TRUE(ReadRange(*opened->ranges, at, (2 << 20) + i) ==
                object.substr(at, (2 << 20) + i));
  }
}

TEST(HttpRangeSource, ALongReadsTotalTimeoutCountsFromOpen) {
  const std::string object = Object(4 << 20);
  RangeServer server(object, {});
  absl::StatusOr<Url> u = ParseUrl(server.Url());
  ASSERT_TRUE(u.ok());
  HttpOptions o;
  o.idle_timeout_seconds = 10;
  o.total_timeout_seconds = 0.3;
  absl::StatusOr<HttpRangeSource::Opened> opened =
      HttpRangeSource::Open(*u, o, /*connections=*/2);
  ASSERT_TRUE(opened.ok()) << opened.status();
  ASSERT_NE(opened->ranges, nullptr);
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  absl::Status s = opened->ranges->Read(
      0, 3 << 20, [](absl::Span<const uint8_t>) { return absl::OkStatus(); });
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "total timeout")) << s;
}

TEST(ParallelHttpBody, AServerWithoutRangesIsReadWhole) {
  const std::string object = Object(100 * 1024);
  RangeServer::Knobs k;
  k.ranges = false;
  RangeServer server(object, k);
  const Got g = Fetch(server, 8, 1 << 20);
  ASSERT_TRUE(g.status.ok()) << g.status;
  EXPECT_TRUE(g.bytes == object);
  EXPECT_EQ(g.connections, 1);
  EXPECT_EQ(g.window, 0u);
}

}  // namespace
}  // namespace hurray::stream::http
