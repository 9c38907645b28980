// Persistent connections (issue 47 item 2): the byte ranges of an object
// go over one kept-alive connection; a server's `Connection: close`, a
// connection closed between two requests, and a body left half read each
// cost a new connection, never a wrong byte. Against scripted loopback
// servers that answer range requests from a fixed object.
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "stream/http/http_body.h"
#include "stream/http/http_ranges.h"
#include "stream/http/http_url.h"
#include "stream/http/testing/http_test_server.h"

namespace hurray::stream::http {
namespace {

using testing::HttpTestServer;

// The object every server here serves: 1 MiB (more than one read of the
// range source's 256 KiB buffer), byte i is i * 7 + 3.
std::string Object() {
  std::string o(1 << 20, '\0');
  for (size_t i = 0; i < o.size(); ++i) o[i] = static_cast<char>(i * 7 + 3);
  return o;
}

// The 206 answering `head`'s `Range: bytes=A-B` (`extra`: more fields).
std::string RangeResponse(const std::string& head, const std::string& extra) {
  const size_t at = head.find("Range: bytes=");
  if (at == std::string::npos) return "HTTP/1.1 400 Bad\r\n\r\n";
  const size_t dash = head.find('-', at);
  const size_t end = head.find("\r\n", at);
  uint64_t first = 0, last = 0;
  if (!absl::SimpleAtoi(head.substr(at + 13, dash - at - 13), &first) ||
      !absl::SimpleAtoi(head.substr(dash + 1, end - dash - 1), &last)) {
    return "HTTP/1.1 400 Bad\r\n\r\n";
  }
  const std::string object = Object();
  return absl::StrCat("HTTP/1.1 206 Partial Content\r\nContent-Range: bytes ",
                      first, "-", last, "/", object.size(),
                      "\r\nContent-Length: ", last - first + 1,
                      "\r\nETag: \"v1\"\r\n", extra, "\r\n",
                      object.substr(first, last - first + 1));
}

// The server a script belongs to (set once it is made, before any
// request): a script reads the head the server recorded for it.
std::atomic<HttpTestServer*> current_server{nullptr};

// A connection that answers `answers` range requests, the first of which
// the server already read (and recorded); `extra` goes into every
// response. Requests seen after the first are appended to *heads.
HttpTestServer::Script Ranges(int answers, std::string extra = "",
                              std::vector<std::string>* heads = nullptr) {
  return [answers, extra, heads](int fd) {
    std::string head = current_server.load()->requests().back();
    for (int i = 0; i < answers; ++i) {
      if (i > 0) {
        head = testing::ReadRequestHead(fd);
        if (head.empty()) return;
        if (heads != nullptr) heads->push_back(head);
      }
      testing::SendAll(fd, RangeResponse(head, extra));
    }
  };
}

HttpOptions Options() {
  HttpOptions o;
  o.connect_timeout_seconds = 5;
  o.idle_timeout_seconds = 5;
  return o;
}

// Reads [offset, offset + length) through `src`.
absl::StatusOr<std::string> ReadRange(HttpRangeSource* src, uint64_t offset,
                                      uint64_t length) {
  std::string out;
  absl::Status s = src->Read(offset, length, [&](absl::Span<const uint8_t> p) {
    out.append(reinterpret_cast<const char*>(p.data()), p.size());
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return out;
}

std::unique_ptr<HttpRangeSource> OpenRanges(HttpTestServer& server) {
  current_server = &server;
  absl::StatusOr<Url> u = ParseUrl(server.Url("/o"));
  EXPECT_TRUE(u.ok());
  if (!u.ok()) return nullptr;
  absl::StatusOr<HttpRangeSource::Opened> o =
      HttpRangeSource::Open(*u, Options());
  EXPECT_TRUE(o.ok()) << o.status();
  if (!o.ok()) return nullptr;
  EXPECT_NE(o->ranges, nullptr);
  return std::move(o->ranges);
}

TEST(HttpKeepAlive, RangesShareOneConnection) {
  std::vector<std::string> heads;
  HttpTestServer server({Ranges(4, "", &heads)});
  std::unique_ptr<HttpRangeSource> src = OpenRanges(server);
  ASSERT_NE(src, nullptr);
  const std::string object = Object();
  for (uint64_t at : {100, 1000, 3000}) {
    absl::StatusOr<std::string> got = ReadRange(src.get(), at, 500);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, object.substr(at, 500));
  }
  EXPECT_EQ(src->connections(), 1);
  EXPECT_EQ(src->requests(), 4u);
  ASSERT_EQ(server.requests().size(), 1u);
  EXPECT_FALSE(absl::StrContains(server.requests()[0], "close"));
  ASSERT_EQ(heads.size(), 3u);
  for (const std::string& h : heads) {
    EXPECT_TRUE(absl::StrContains(h, "If-Range: \"v1\"")) << h;
    EXPECT_FALSE(absl::StrContains(h, "close")) << h;
  }
}

TEST(HttpKeepAlive, TheServersConnectionCloseIsHonoured) {
  // Each connection says it closes (and would still answer a second
  // request): every range goes on a new connection, never on the closing
  // one.
  HttpTestServer server({Ranges(2, "Connection: close\r\n"),
                         Ranges(2, "Connection: close\r\n"),
                         Ranges(2, "Connection: close\r\n")});
  std::unique_ptr<HttpRangeSource> src = OpenRanges(server);
  ASSERT_NE(src, nullptr);
  const std::string object = Object();
  for (uint64_t at : {200, 2000}) {
    absl::StatusOr<std::string> got = ReadRange(src.get(), at, 300);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, object.substr(at, 300));
  }
  EXPECT_EQ(src->connections(), 3);
}

TEST(HttpKeepAlive, AConnectionClosedBetweenRequestsIsMadeAgainOnce) {
  // The first connection answers Open's request and the next one, then
  // closes without a word (a server's keep-alive timeout): the third
  // request goes once more, on a new connection.
  HttpTestServer server({Ranges(2), Ranges(2)});
  std::unique_ptr<HttpRangeSource> src = OpenRanges(server);
  ASSERT_NE(src, nullptr);
  const std::string object = Object();
  for (uint64_t at : {64, 1064, 2064}) {
    absl::StatusOr<std::string> got = ReadRange(src.get(), at, 1000);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, object.substr(at, 1000));
  }
  EXPECT_EQ(src->connections(), 2);
}

TEST(HttpKeepAlive, ARequestIsMadeAgainAtMostOnce) {
  // Every connection closes right after Open's answer: the second range
  // is tried on the kept-alive connection, then once on a new one, which
  // closes too; that is an error, not a third try.
  HttpTestServer server({Ranges(1), [](int) {}});
  std::unique_ptr<HttpRangeSource> src = OpenRanges(server);
  ASSERT_NE(src, nullptr);
  absl::StatusOr<std::string> got = ReadRange(src.get(), 100, 100);
  EXPECT_FALSE(got.ok());
  EXPECT_EQ(src->connections(), 2);
}

TEST(HttpKeepAlive, ABodyLeftHalfReadIsNotReused) {
  // The consumer stops inside a range: the next range goes on a new
  // connection (the rest of that body is never read as a response; the
  // first connection would take a third request).
  HttpTestServer server({Ranges(3), Ranges(1)});
  std::unique_ptr<HttpRangeSource> src = OpenRanges(server);
  ASSERT_NE(src, nullptr);
  absl::Status stop = src->Read(64, 900000, [](absl::Span<const uint8_t>) {
    return absl::CancelledError("enough");
  });
  EXPECT_EQ(stop.code(), absl::StatusCode::kCancelled);
  absl::StatusOr<std::string> got = ReadRange(src.get(), 3500, 500);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, Object().substr(3500, 500));
  EXPECT_EQ(src->connections(), 2);
}

TEST(HttpKeepAlive, OneWholeBodyGetStillSaysClose) {
  HttpTestServer server(
      {HttpTestServer::Respond(testing::OkResponse("whole body"))});
  absl::StatusOr<Url> u = ParseUrl(server.Url("/w"));
  ASSERT_TRUE(u.ok());
  absl::StatusOr<std::unique_ptr<HttpBody>> b = HttpBody::Open(*u, Options());
  ASSERT_TRUE(b.ok()) << b.status();
  ASSERT_EQ(server.requests().size(), 1u);
  EXPECT_TRUE(absl::StrContains(server.requests()[0], "Connection: close"));
}

}  // namespace
}  // namespace hurray::stream::http
