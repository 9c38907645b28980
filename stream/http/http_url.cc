#include "stream/http/http_url.h"

#include <cstdint>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "boost/asio/ip/address.hpp"

namespace hurray::stream::http {
namespace {

absl::Status Bad(absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("bad URL: ", why));
}

// Bytes that never appear in a URL we send: controls, space, DEL, and
// anything outside ASCII (a URL must arrive percent-encoded).
bool HasForbiddenByte(absl::string_view s) {
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c <= 0x20 || c >= 0x7f) return true;
  }
  return false;
}

bool IsHostChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '-' ||
         c == '.' || c == '_';
}

}  // namespace

bool IsHttpUrl(absl::string_view text) {
  return absl::StartsWithIgnoreCase(text, "http://") ||
         absl::StartsWithIgnoreCase(text, "https://");
}

std::string Url::ToString() const {
  return absl::StrCat(
      tls ? "https://" : "http://", absl::StrContains(host, ':') ? "[" : "",
      host, absl::StrContains(host, ':') ? "]" : "", ":", port, target);
}

std::string Url::HostHeader() const {
  const bool v6 = absl::StrContains(host, ':');
  std::string h = v6 ? absl::StrCat("[", host, "]") : host;
  if (port != (tls ? "443" : "80")) absl::StrAppend(&h, ":", port);
  return h;
}

absl::StatusOr<Url> ParseUrl(absl::string_view text) {
  if (text.size() > kMaxUrlBytes) return Bad("too long");
  if (HasForbiddenByte(text)) {
    return Bad("whitespace, control or non-ASCII bytes (percent-encode them)");
  }
  Url url;
  if (absl::StartsWithIgnoreCase(text, "https://")) {
    url.tls = true;
    text.remove_prefix(8);
  } else if (absl::StartsWithIgnoreCase(text, "http://")) {
    url.tls = false;
    text.remove_prefix(7);
  } else {
    return Bad("the scheme is not http:// or https://");
  }
  const size_t hash = text.find('#');
  if (hash != absl::string_view::npos) text = text.substr(0, hash);
  const size_t end = text.find_first_of("/?");
  absl::string_view authority = text.substr(0, end);
  absl::string_view rest =
      end == absl::string_view::npos ? absl::string_view() : text.substr(end);
  if (absl::StrContains(authority, '@')) {
    return Bad("user information in the URL is not supported (use --header)");
  }
  absl::string_view port;
  if (!authority.empty() && authority[0] == '[') {
    const size_t close = authority.find(']');
    if (close == absl::string_view::npos) return Bad("unclosed '['");
    url.host = std::string(authority.substr(1, close - 1));
    absl::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') return Bad("bytes after ']'");
      port = after.substr(1);
    }
    boost::system::error_code ec;
    const auto a = boost::asio::ip::make_address_v6(url.host, ec);
    if (ec) return Bad("not an IPv6 address in '[...]'");
    (void)a;
    url.host_is_ip = true;
  } else {
    const size_t colon = authority.find(':');
    url.host = std::string(authority.substr(0, colon));
    if (colon != absl::string_view::npos) port = authority.substr(colon + 1);
    for (char c : url.host) {
      if (!IsHostChar(c)) return Bad("a byte in the host name");
    }
    url.host = absl::AsciiStrToLower(url.host);
    boost::system::error_code ec;
    boost::asio::ip::make_address_v4(url.host, ec);
    url.host_is_ip = !ec;
  }
  if (url.host.empty()) return Bad("no host");
  if (url.host.size() > 253) return Bad("the host name is too long");
  if (port.empty()) {
    url.port = url.tls ? "443" : "80";
  } else {
    uint32_t p = 0;
    if (port.size() > 5 || !absl::SimpleAtoi(port, &p) || p == 0 || p > 65535 ||
        !absl::ascii_isdigit(static_cast<unsigned char>(port[0]))) {
      return Bad("the port is not a number from 1 to 65535");
    }
    url.port = absl::StrCat(p);
  }
  url.target = rest.empty() || rest[0] != '/' ? absl::StrCat("/", rest)
                                              : std::string(rest);
  return url;
}

absl::StatusOr<Url> ResolveLocation(const Url& base,
                                    absl::string_view location) {
  if (location.empty()) return Bad("an empty Location");
  if (location.size() > kMaxUrlBytes) return Bad("the Location is too long");
  if (IsHttpUrl(location)) return ParseUrl(location);
  if (absl::StartsWith(location, "//")) {
    return ParseUrl(absl::StrCat(base.tls ? "https:" : "http:", location));
  }
  // Another scheme ("ftp:", "file:"): a ':' before any '/', '?' or '#'.
  const size_t colon = location.find(':');
  if (colon != absl::string_view::npos &&
      colon < location.find_first_of("/?#")) {
    return Bad(absl::StrCat("a redirect to another scheme"));
  }
  std::string origin = base.ToString();
  origin.resize(origin.size() - base.target.size());
  if (location[0] == '/') return ParseUrl(absl::StrCat(origin, location));
  absl::string_view dir = base.target;
  const size_t q = dir.find('?');
  if (q != absl::string_view::npos) dir = dir.substr(0, q);
  if (location[0] == '?') {
    return ParseUrl(absl::StrCat(origin, dir, location));
  }
  dir = dir.substr(0, dir.rfind('/') + 1);
  return ParseUrl(absl::StrCat(origin, dir, location));
}

}  // namespace hurray::stream::http
