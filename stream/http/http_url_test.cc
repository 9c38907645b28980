#include "stream/http/http_url.h"

#include "gtest/gtest.h"

namespace hurray::stream::http {
namespace {

TEST(HttpUrlTest, ParsesSchemesHostsPortsAndTargets) {
  absl::StatusOr<Url> u =
      ParseUrl("https://Example.COM/models/a.hrry?x=1#frag");
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_TRUE(u->tls);
  EXPECT_EQ(u->host, "example.com");
  EXPECT_EQ(u->port, "443");
  EXPECT_EQ(u->target, "/models/a.hrry?x=1");
  EXPECT_FALSE(u->host_is_ip);
  EXPECT_EQ(u->HostHeader(), "example.com");

  u = ParseUrl("http://127.0.0.1:8080");
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_FALSE(u->tls);
  EXPECT_EQ(u->port, "8080");
  EXPECT_EQ(u->target, "/");
  EXPECT_TRUE(u->host_is_ip);
  EXPECT_EQ(u->HostHeader(), "127.0.0.1:8080");

  u = ParseUrl("https://[::1]:8443/m");
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(u->host, "::1");
  EXPECT_TRUE(u->host_is_ip);
  EXPECT_EQ(u->HostHeader(), "[::1]:8443");
  EXPECT_EQ(u->ToString(), "https://[::1]:8443/m");
}

TEST(HttpUrlTest, RefusesWhatCannotGoOnTheWire) {
  for (const char* bad :
       {"ftp://h/x", "https://", "https:///x", "https://u:p@h/x",
        "https://h:0/x", "https://h:65536/x", "https://h:-1/x", "https://h:8a/",
        "https://h/a b", "https://h/a\r\nX: y", "https://[zz]/",
        "https://[::1/", "https://h\x01/", "https://h/\xc3\xa9"}) {
    EXPECT_FALSE(ParseUrl(bad).ok()) << bad;
  }
  EXPECT_FALSE(
      ParseUrl(std::string(kMaxUrlBytes, 'a').insert(0, "https://h/")).ok());
}

TEST(HttpUrlTest, ResolvesRedirectLocations) {
  const Url base = *ParseUrl("https://h:8443/dir/file.hrry?q=1");
  EXPECT_EQ(ResolveLocation(base, "https://other/x")->ToString(),
            "https://other:443/x");
  EXPECT_EQ(ResolveLocation(base, "//other:1/x")->ToString(),
            "https://other:1/x");
  EXPECT_EQ(ResolveLocation(base, "/y")->ToString(), "https://h:8443/y");
  EXPECT_EQ(ResolveLocation(base, "z.hrry")->ToString(),
            "https://h:8443/dir/z.hrry");
  EXPECT_EQ(ResolveLocation(base, "?r=2")->ToString(),
            "https://h:8443/dir/file.hrry?r=2");
  EXPECT_FALSE(ResolveLocation(base, "http://h/x")->tls);
  EXPECT_FALSE(ResolveLocation(base, "file:///etc/passwd").ok());
  EXPECT_FALSE(ResolveLocation(base, "").ok());
}

}  // namespace
}  // namespace hurray::stream::http
