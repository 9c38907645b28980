// Credentials stay with their origin (issue 46 item 1): every credential
// header the caller gave (Authorization, Cookie, Proxy-Authorization, any
// case) is dropped when a redirect leaves the first URL's origin (scheme,
// host, port), as curl does since CVE-2022-27776; other headers follow.
// Against loopback servers that record the requests they receive.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "stream/http/http_body.h"
#include "stream/http/http_fields.h"
#include "stream/http/http_url.h"
#include "stream/http/testing/http_test_server.h"

namespace hurray::stream::http {
namespace {

using testing::HasField;
using testing::HttpTestServer;
using testing::OkResponse;

std::string Redirect(absl::string_view location) {
  return absl::StrCat("HTTP/1.1 302 Found\r\nLocation: ", location,
                      "\r\nContent-Length: 0\r\n\r\n");
}

HttpOptions WithCredentials() {
  HttpOptions o;
  o.connect_timeout_seconds = 5;
  o.idle_timeout_seconds = 5;
  o.headers = {{"Authorization", "Bearer s3cret"},
               {"COOKIE", "sid=s3cret"},
               {"proxy-authorization", "Basic s3cret"},
               {"X-Trace", "t1"}};
  return o;
}

// Opens `url` and reads the whole body.
std::string Fetch(const std::string& url, const HttpOptions& o) {
  absl::StatusOr<Url> u = ParseUrl(url);
  EXPECT_TRUE(u.ok()) << u.status();
  if (!u.ok()) return "";
  absl::StatusOr<std::unique_ptr<HttpBody>> b = HttpBody::Open(*u, o);
  EXPECT_TRUE(b.ok()) << b.status();
  if (!b.ok()) return "";
  std::string got(64, '\0');
  absl::StatusOr<size_t> n =
      (*b)->Read(absl::MakeSpan(reinterpret_cast<uint8_t*>(got.data()), 64));
  EXPECT_TRUE(n.ok()) << n.status();
  got.resize(n.ok() ? *n : 0);
  return got;
}

void ExpectAllCredentials(const std::string& request) {
  EXPECT_TRUE(HasField(request, "authorization")) << request;
  EXPECT_TRUE(HasField(request, "cookie")) << request;
  EXPECT_TRUE(HasField(request, "proxy-authorization")) << request;
  EXPECT_TRUE(HasField(request, "x-trace")) << request;
}

void ExpectNoCredentials(const std::string& request) {
  EXPECT_FALSE(absl::StrContains(request, "s3cret")) << request;
  EXPECT_FALSE(HasField(request, "authorization")) << request;
  EXPECT_FALSE(HasField(request, "cookie")) << request;
  EXPECT_FALSE(HasField(request, "proxy-authorization")) << request;
  EXPECT_TRUE(HasField(request, "x-trace")) << request;  // not a credential
}

TEST(HttpCredentials, DroppedWhenARedirectGoesToAnotherPort) {
  HttpTestServer other({HttpTestServer::Respond(OkResponse("moved"))});
  HttpTestServer first({HttpTestServer::Respond(Redirect(other.Url("/b")))});
  EXPECT_EQ(Fetch(first.Url("/a"), WithCredentials()), "moved");
  ASSERT_EQ(first.requests().size(), 1u);
  ASSERT_EQ(other.requests().size(), 1u);
  ExpectAllCredentials(first.requests()[0]);
  ExpectNoCredentials(other.requests()[0]);
}

TEST(HttpCredentials, DroppedWhenARedirectGoesToAnotherHost) {
  // Every connection goes to the one server (connect_to); the redirect
  // names another host on the same port.
  std::string location;
  HttpTestServer server(
      {[&location](int fd) { testing::SendAll(fd, Redirect(location)); },
       HttpTestServer::Respond(OkResponse("moved"))});
  location = absl::StrCat("http://elsewhere.test:", server.port(), "/b");
  HttpOptions o = WithCredentials();
  o.connect_to_host = "127.0.0.1";
  o.connect_to_port = absl::StrCat(server.port());
  EXPECT_EQ(Fetch(absl::StrCat("http://origin.test:", server.port(), "/a"), o),
            "moved");
  ASSERT_EQ(server.requests().size(), 2u);
  ExpectAllCredentials(server.requests()[0]);
  ExpectNoCredentials(server.requests()[1]);
}

TEST(HttpCredentials, KeptWhenARedirectStaysOnTheOrigin) {
  HttpTestServer server({HttpTestServer::Respond(Redirect("/b")),
                         HttpTestServer::Respond(OkResponse("same"))});
  EXPECT_EQ(Fetch(server.Url("/a"), WithCredentials()), "same");
  ASSERT_EQ(server.requests().size(), 2u);
  ExpectAllCredentials(server.requests()[0]);
  ExpectAllCredentials(server.requests()[1]);
}

TEST(HttpCredentials, BackOnTheFirstOriginTheyAreSentAgain) {
  // first -> other port -> first: only the request to the other port goes
  // without them (they were given for the first origin).
  std::string to_other, to_first;
  HttpTestServer first(
      {[&to_other](int fd) { testing::SendAll(fd, Redirect(to_other)); },
       HttpTestServer::Respond(OkResponse("home"))});
  HttpTestServer other(
      {[&to_first](int fd) { testing::SendAll(fd, Redirect(to_first)); }});
  to_other = other.Url("/b");
  to_first = first.Url("/c");
  EXPECT_EQ(Fetch(first.Url("/a"), WithCredentials()), "home");
  ASSERT_EQ(first.requests().size(), 2u);
  ASSERT_EQ(other.requests().size(), 1u);
  ExpectAllCredentials(first.requests()[0]);
  ExpectNoCredentials(other.requests()[0]);
  ExpectAllCredentials(first.requests()[1]);
}

TEST(HttpCredentials, WhichFieldsAreCredentials) {
  for (const char* name : {"Authorization", "authorization", "Cookie", "COOKIE",
                           "Proxy-Authorization", "proxy-AUTHORIZATION"}) {
    EXPECT_TRUE(IsCredentialField(name)) << name;
  }
  for (const char* name :
       {"X-Trace", "Accept", "Cookie2x", "Authorization-Extra", ""}) {
    EXPECT_FALSE(IsCredentialField(name)) << name;
  }
}

}  // namespace
}  // namespace hurray::stream::http
