// Fuzz target: the parsing of HTTP(S) sources (issue 15), everything that
// reads what a user or a server wrote before any byte of the object:
// URLs (stream/http/http_url.h ParseUrl), redirect targets
// (ResolveLocation), --header flags, Content-Range values and a response
// header as Boost.Beast parses it then InterpretResponse judges it
// (stream/http/http_fields.h).
//
// Input: one mode byte, then the mode's text.
//   0  a URL. Accepted: printed (ToString) it parses back to the same URL;
//      no byte that could split a request line or header (controls, space,
//      non-ASCII) in the target or the Host header.
//   1  "BASE\nLOCATION". A resolved target is a URL ParseUrl accepts as it
//      prints; a https base never yields http without saying so (http only
//      when LOCATION names it).
//   2  a --header flag. Accepted: a token name, no control byte but TAB in
//      the value, never a header hurray sets itself.
//   3  a Content-Range value. Accepted: FIRST <= LAST < SIZE.
//   4  8 bytes (the range asked for: FIRST, bit 63 of which says "to the
//      end"), then a response head for Beast (64 KiB header limit). Accepted
//      206: the Content-Range starts at FIRST, the body length agrees.
#include <boost/asio/buffer.hpp>
#include <boost/beast/http.hpp>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "fuzz/fuzz_util.h"
#include "stream/http/http_fields.h"
#include "stream/http/http_url.h"

namespace hurray::fuzz {
namespace {

namespace http = boost::beast::http;
using stream::http::Url;

bool Clean(absl::string_view s) {
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c <= 0x20 || c >= 0x7f) return false;
  }
  return true;
}

void CheckUrl(const Url& u) {
  HURRAY_FUZZ_CHECK(!u.host.empty());
  HURRAY_FUZZ_CHECK(!u.target.empty() && u.target[0] == '/');
  HURRAY_FUZZ_CHECK(Clean(u.target) && Clean(u.HostHeader()));
  HURRAY_FUZZ_CHECK(u.target.find('#') == std::string::npos);
  const absl::StatusOr<Url> again = stream::http::ParseUrl(u.ToString());
  HURRAY_FUZZ_CHECK(again.ok());
  HURRAY_FUZZ_CHECK(again->tls == u.tls && again->host == u.host &&
                    again->port == u.port && again->target == u.target &&
                    again->host_is_ip == u.host_is_ip);
}

void Location(absl::string_view text) {
  const size_t nl = text.find('\n');
  if (nl == absl::string_view::npos) return;
  const absl::StatusOr<Url> base = stream::http::ParseUrl(text.substr(0, nl));
  if (!base.ok()) return;
  const absl::string_view location = text.substr(nl + 1);
  const absl::StatusOr<Url> next =
      stream::http::ResolveLocation(*base, location);
  if (!next.ok()) return;
  CheckUrl(*next);
  if (base->tls && !next->tls) {
    HURRAY_FUZZ_CHECK(absl::StartsWithIgnoreCase(location, "http:"));
  }
}

void HeaderFlag(absl::string_view text) {
  const auto h = stream::http::ParseHeaderFlag(text);
  if (!h.ok()) return;
  HURRAY_FUZZ_CHECK(!h->first.empty());
  for (char ch : h->second) {
    const auto c = static_cast<unsigned char>(ch);
    HURRAY_FUZZ_CHECK(c >= 0x20 || c == '\t');
    HURRAY_FUZZ_CHECK(c != 0x7f);
  }
  for (absl::string_view managed :
       {"host", "range", "if-range", "content-length", "transfer-encoding"}) {
    HURRAY_FUZZ_CHECK(!absl::EqualsIgnoreCase(h->first, managed));
  }
}

void ContentRange(absl::string_view text) {
  uint64_t first = 0, last = 0;
  std::optional<uint64_t> size;
  if (!stream::http::ParseContentRange(text, &first, &last, &size)) return;
  HURRAY_FUZZ_CHECK(first <= last);
  HURRAY_FUZZ_CHECK(!size.has_value() || *size > last);
}

void Response(const uint8_t* data, size_t size) {
  if (size < 8) return;
  uint64_t word;
  std::memcpy(&word, data, 8);
  stream::http::HttpRange range;
  range.first = word & ((uint64_t{1} << 40) - 1);
  if ((word >> 63) == 0) range.last = range.first + ((word >> 40) & 0xffff);
  http::response_parser<http::empty_body> parser;
  parser.header_limit(64 << 10);
  parser.skip(true);  // the head only, as HttpBody reads it first
  boost::system::error_code ec;
  parser.put(boost::asio::buffer(data + 8, size - 8), ec);
  if (ec || !parser.is_header_done()) return;
  const auto& msg = parser.get();
  std::vector<stream::http::HeaderField> fields;
  for (const auto& f : msg) {
    fields.push_back(
        {absl::string_view(f.name_string().data(), f.name_string().size()),
         absl::string_view(f.value().data(), f.value().size())});
  }
  stream::http::HttpResponseInfo info;
  info.status = static_cast<int>(msg.result_int());
  if (const auto cl = parser.content_length(); cl.has_value()) {
    info.content_length = *cl;
  }
  info.chunked = parser.chunked();
  const absl::Status s = stream::http::InterpretResponse(fields, range, &info);
  if (!s.ok()) {
    HURRAY_FUZZ_CHECK(s.code() == absl::StatusCode::kUnavailable);
    for (char c : s.message()) HURRAY_FUZZ_CHECK(c >= 0x20 && c < 0x7f);
    return;
  }
  HURRAY_FUZZ_CHECK(info.status == 200 || info.status == 206);
  HURRAY_FUZZ_CHECK(info.etag.size() <= 1024);
  HURRAY_FUZZ_CHECK(info.last_modified.size() <= 200);
  if (info.status == 206) {
    HURRAY_FUZZ_CHECK(info.range_first == range.first);
    HURRAY_FUZZ_CHECK(info.accept_ranges);
    // The range asked for, or (RFC 9110 14.1.2) its part up to the object's
    // last byte when it asked past the end.
    if (range.last.has_value()) {
      const bool exact = info.range_last == *range.last;
      const bool clipped = info.object_size.has_value() &&
                           *range.last >= *info.object_size &&
                           info.range_last + 1 == *info.object_size;
      HURRAY_FUZZ_CHECK(exact || clipped);
    }
    if (info.content_length.has_value()) {
      HURRAY_FUZZ_CHECK(*info.content_length ==
                        info.range_last - range.first + 1);
    }
  }
}

}  // namespace
}  // namespace hurray::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hurray::fuzz;
  if (size < 1 || size > (256 << 10)) return 0;
  const absl::string_view text(reinterpret_cast<const char*>(data + 1),
                               size - 1);
  switch (data[0] % 5) {
    case 0: {
      const auto u = hurray::stream::http::ParseUrl(text);
      if (u.ok()) {
        CheckUrl(*u);
        HURRAY_FUZZ_CHECK(hurray::stream::http::IsHttpUrl(text));
      }
      break;
    }
    case 1:
      Location(text);
      break;
    case 2:
      HeaderFlag(text);
      break;
    case 3:
      ContentRange(text);
      break;
    case 4:
      Response(data + 1, size - 1);
      break;
  }
  return 0;
}
