// URLs of HTTP(S) sources (issue 15): `http://HOST[:PORT]/PATH` and
// `https://...`, parsed strictly (RFC 3986 authority and path), and the
// target of a redirect's Location resolved against the URL that answered.
//
// Refused (InvalidArgument): another scheme, user information ("user@"),
// an empty host, a port outside 1..65535, whitespace or control bytes
// anywhere (they would end up in the request line), more than
// kMaxUrlBytes. A fragment ("#...") is dropped: it never goes on the wire.
#ifndef HURRAY_STREAM_HTTP_HTTP_URL_H_
#define HURRAY_STREAM_HTTP_HTTP_URL_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hurray::stream::http {

inline constexpr size_t kMaxUrlBytes = 8 << 10;

struct Url {
  bool tls = true;     // https
  std::string host;    // without the brackets of an IPv6 literal
  std::string port;    // decimal; 443 or 80 when the URL has none
  std::string target;  // path and query, starting with '/'
  bool host_is_ip = false;

  // "https://host:port/target" (brackets around IPv6 literals).
  std::string ToString() const;
  // The Host header's value: the port only when not the scheme's default.
  std::string HostHeader() const;
  // Same scheme, host and port.
  bool SameOrigin(const Url& o) const {
    return tls == o.tls && host == o.host && port == o.port;
  }
};

// True for text that names an HTTP(S) source (the scheme, any case).
bool IsHttpUrl(absl::string_view text);

[[nodiscard]] absl::StatusOr<Url> ParseUrl(absl::string_view text);

// The URL a redirect's `location` names, relative to `base`: absolute,
// scheme-relative ("//host/..."), absolute-path ("/...") or relative to
// base's directory.
[[nodiscard]] absl::StatusOr<Url> ResolveLocation(const Url& base,
                                                  absl::string_view location);

}  // namespace hurray::stream::http

#endif  // HURRAY_STREAM_HTTP_HTTP_URL_H_
