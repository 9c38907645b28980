// The pure parsing of the HTTP(S) source (issue 15), apart from the
// connection so that it can be tested and fuzzed without one
// (fuzz/http_fields_fuzz.cc): the --header flag, Content-Range, and what
// the response's header fields mean once Boost.Beast has parsed them
// (InterpretResponse: encodings refused, Accept-Ranges, validators, and a
// 206's Content-Range checked against the range asked for).
#ifndef HURRAY_STREAM_HTTP_HTTP_FIELDS_H_
#define HURRAY_STREAM_HTTP_HTTP_FIELDS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "stream/http/http_url.h"

namespace hurray::stream::http {

// Parses "Name: value" (--header). Refuses names that are not HTTP tokens,
// control bytes in the value, and the headers this client manages itself
// (Host, Content-Length, Transfer-Encoding, Connection, Range, If-Range,
// Accept-Encoding, TE, Upgrade).
[[nodiscard]] absl::StatusOr<std::pair<std::string, std::string>>
ParseHeaderFlag(absl::string_view text);

// True for the request fields that carry credentials (Authorization,
// Cookie, Proxy-Authorization; any case): they go only to the origin
// (scheme, host, port) they were given for, never across a redirect that
// leaves it (as curl since CVE-2022-27776).
bool IsCredentialField(absl::string_view name);

// A range request: bytes from `first` to `last` (inclusive) or to the end;
// with `if_range` (an ETag or an HTTP date) the server sends 200 and the
// whole object when it changed.
struct HttpRange {
  uint64_t first = 0;
  std::optional<uint64_t> last;  // inclusive; none: to the end
  std::string if_range;
};

struct HttpResponseInfo {
  int status = 0;
  Url url;  // after redirects
  int redirects = 0;
  std::optional<uint64_t> content_length;
  bool chunked = false;
  // 206: where the body starts and ends (inclusive) and the object's size
  // (when given).
  uint64_t range_first = 0;
  uint64_t range_last = 0;
  std::optional<uint64_t> object_size;
  bool accept_ranges = false;  // "Accept-Ranges: bytes"
  std::string etag;            // as sent (quotes, W/), at most 1024 bytes
  std::string last_modified;   // at most 200 bytes
};

// "bytes FIRST-LAST/SIZE" (SIZE may be "*": `size` empty). False when
// malformed, when LAST < FIRST, or when SIZE does not pass LAST.
bool ParseContentRange(absl::string_view value, uint64_t* first, uint64_t* last,
                       std::optional<uint64_t>* size);

// One header field of a response, as Beast parsed it.
struct HeaderField {
  absl::string_view name;
  absl::string_view value;
};

// Fills `info` (status, content_length and chunked given) from the fields
// of a 200, or a 206 answering `range`: a Content-Encoding other than
// identity and a Transfer-Encoding other than chunked are refused (we ask
// for identity and decode nothing); a 206 needs a Content-Range that is
// exactly the range asked for (and agrees with Content-Length), or ends at
// the object's last byte when the range asked for goes past it. Errors are
// Unavailable with a message that quotes the server only through
// printable ASCII.
[[nodiscard]] absl::Status InterpretResponse(
    absl::Span<const HeaderField> fields, const std::optional<HttpRange>& range,
    HttpResponseInfo* info);

// `s` cut to `max` bytes with anything but printable ASCII as '?'.
std::string PrintableAscii(absl::string_view s, size_t max = 120);

}  // namespace hurray::stream::http

#endif  // HURRAY_STREAM_HTTP_HTTP_FIELDS_H_
