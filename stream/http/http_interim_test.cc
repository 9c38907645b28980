// Interim (1xx) responses before the final one (issue 46 item 2, RFC 9110
// 15.2): 100 Continue, 102 Processing and 103 Early Hints are skipped, in
// the same segment as the final response or apart from it; 101 Switching
// Protocols is refused (we never ask for an upgrade); at most
// kMaxInterimResponses are skipped per request.
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "stream/http/http_body.h"
#include "stream/http/http_url.h"
#include "stream/http/testing/http_test_server.h"

namespace hurray::stream::http {
namespace {

using testing::HttpTestServer;
using testing::OkResponse;

absl::StatusOr<std::unique_ptr<HttpBody>> Open(const std::string& url) {
  absl::StatusOr<Url> u = ParseUrl(url);
  if (!u.ok()) return u.status();
  HttpOptions o;
  o.connect_timeout_seconds = 5;
  o.idle_timeout_seconds = 5;
  return HttpBody::Open(*u, o);
}

// The whole body, or the error.
absl::StatusOr<std::string> Get(const std::string& url) {
  absl::StatusOr<std::unique_ptr<HttpBody>> b = Open(url);
  if (!b.ok()) return b.status();
  std::string out;
  uint8_t buf[256];
  while (true) {
    absl::StatusOr<size_t> n = (*b)->Read(absl::MakeSpan(buf));
    if (!n.ok()) return n.status();
    if (*n == 0) return out;
    out.append(reinterpret_cast<const char*>(buf), *n);
  }
}

TEST(HttpInterim, A100ContinueIsSkipped) {
  HttpTestServer server({HttpTestServer::Respond(
      "HTTP/1.1 100 Continue\r\n\r\n" + OkResponse("final body"))});
  absl::StatusOr<std::string> got = Get(server.Url("/x"));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, "final body");
}

TEST(HttpInterim, EarlyHintsApartFromTheFinalResponseAreSkipped) {
  HttpTestServer server({[](int fd) {
    testing::SendAll(fd,
                     "HTTP/1.1 103 Early Hints\r\n"
                     "Link: </style.css>; rel=preload; as=style\r\n\r\n");
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    testing::SendAll(fd, OkResponse("after hints"));
  }});
  absl::StatusOr<std::string> got = Get(server.Url("/x"));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, "after hints");
}

TEST(HttpInterim, SeveralBeforeAChunkedBody) {
  HttpTestServer server({HttpTestServer::Respond(
      "HTTP/1.1 102 Processing\r\n\r\n"
      "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
      "HTTP/1.1 199 Whatever\r\n\r\n"
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
      "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n")});
  absl::StatusOr<std::string> got = Get(server.Url("/x"));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, "abcde");
}

TEST(HttpInterim, BeforeARedirect) {
  std::string location;
  HttpTestServer server(
      {[&location](int fd) {
         testing::SendAll(
             fd, absl::StrCat("HTTP/1.1 100 Continue\r\n\r\n"
                              "HTTP/1.1 302 Found\r\nLocation: ",
                              location, "\r\nContent-Length: 0\r\n\r\n"));
       },
       HttpTestServer::Respond("HTTP/1.1 103 Early Hints\r\n\r\n" +
                               OkResponse("moved"))});
  location = server.Url("/y");
  absl::StatusOr<std::string> got = Get(server.Url("/x"));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, "moved");
}

TEST(HttpInterim, SwitchingProtocolsIsRefused) {
  // After an interim response that is skipped: the refusal names the 101.
  HttpTestServer server({HttpTestServer::Respond(
      "HTTP/1.1 103 Early Hints\r\n\r\n"
      "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
      "Connection: Upgrade\r\n\r\n" +
      OkResponse("never read"))});
  absl::StatusOr<std::unique_ptr<HttpBody>> b = Open(server.Url("/x"));
  ASSERT_FALSE(b.ok());
  EXPECT_TRUE(absl::StrContains(b.status().message(), "HTTP 101"))
      << b.status();
}

std::string Interims(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += "HTTP/1.1 100 Continue\r\n\r\n";
  return s;
}

TEST(HttpInterim, AsManyAsTheLimitAreSkipped) {
  HttpTestServer server({HttpTestServer::Respond(
      Interims(kMaxInterimResponses) + OkResponse("at the limit"))});
  absl::StatusOr<std::string> got = Get(server.Url("/x"));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, "at the limit");
}

TEST(HttpInterim, OneMoreThanTheLimitIsRefused) {
  HttpTestServer server({HttpTestServer::Respond(
      Interims(kMaxInterimResponses + 1) + OkResponse("too late"))});
  absl::StatusOr<std::unique_ptr<HttpBody>> b = Open(server.Url("/x"));
  ASSERT_FALSE(b.ok());
  EXPECT_TRUE(absl::StrContains(
      b.status().message(),
      absl::StrCat("more than ", kMaxInterimResponses, " interim (1xx)")))
      << b.status();
}

}  // namespace
}  // namespace hurray::stream::http
