#include "stream/http/http_fields.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace hurray::stream::http {
namespace {

bool IsTokenChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) ||
         absl::string_view("!#$%&'*+-.^_`|~").find(c) !=
             absl::string_view::npos;
}

absl::Status Error(absl::string_view why) {
  return absl::UnavailableError(why);
}

}  // namespace

std::string PrintableAscii(absl::string_view s, size_t max) {
  std::string out;
  for (char ch : s.substr(0, max)) {
    const auto c = static_cast<unsigned char>(ch);
    out += c >= 0x20 && c < 0x7f ? ch : '?';
  }
  if (s.size() > max) out += "...";
  return out;
}

bool IsCredentialField(absl::string_view name) {
  for (absl::string_view credential :
       {"authorization", "cookie", "proxy-authorization"}) {
    if (absl::EqualsIgnoreCase(name, credential)) return true;
  }
  return false;
}

absl::StatusOr<std::pair<std::string, std::string>> ParseHeaderFlag(
    absl::string_view text) {
  const size_t colon = text.find(':');
  if (colon == absl::string_view::npos || colon == 0) {
    return absl::InvalidArgumentError("--header needs 'Name: value'");
  }
  const absl::string_view name = text.substr(0, colon);
  const absl::string_view value =
      absl::StripAsciiWhitespace(text.substr(colon + 1));
  for (char c : name) {
    if (!IsTokenChar(c)) {
      return absl::InvalidArgumentError(
          "--header: the name is not an HTTP token");
    }
  }
  for (char ch : value) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c < 0x20 && c != '\t') || c == 0x7f) {
      return absl::InvalidArgumentError("--header: control bytes in the value");
    }
  }
  if (text.size() > 8192) {
    return absl::InvalidArgumentError("--header: too long");
  }
  for (absl::string_view managed :
       {"host", "content-length", "transfer-encoding", "connection", "range",
        "if-range", "accept-encoding", "te", "upgrade"}) {
    if (absl::EqualsIgnoreCase(name, managed)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--header: ", name, " is set by hurray itself"));
    }
  }
  return std::make_pair(std::string(name), std::string(value));
}

bool ParseContentRange(absl::string_view v, uint64_t* first, uint64_t* last,
                       std::optional<uint64_t>* size) {
  v = absl::StripAsciiWhitespace(v);
  if (!absl::ConsumePrefix(&v, "bytes ")) return false;
  const size_t dash = v.find('-'), slash = v.find('/');
  if (dash == absl::string_view::npos || slash == absl::string_view::npos ||
      dash > slash) {
    return false;
  }
  if (!absl::SimpleAtoi(v.substr(0, dash), first) ||
      !absl::SimpleAtoi(v.substr(dash + 1, slash - dash - 1), last) ||
      *last < *first) {
    return false;
  }
  const absl::string_view total = v.substr(slash + 1);
  if (total == "*") {
    size->reset();
    return true;
  }
  uint64_t t = 0;
  if (!absl::SimpleAtoi(total, &t) || t <= *last) return false;
  *size = t;
  return true;
}

absl::Status InterpretResponse(absl::Span<const HeaderField> fields,
                               const std::optional<HttpRange>& range,
                               HttpResponseInfo* info) {
  const bool partial = info->status == 206;
  if (info->status != 200 && !(partial && range.has_value())) {
    return Error(absl::StrCat("HTTP ", info->status));
  }
  const HeaderField* content_range = nullptr;
  for (const HeaderField& f : fields) {
    const absl::string_view name = f.name;
    const absl::string_view value = absl::StripAsciiWhitespace(f.value);
    if (absl::EqualsIgnoreCase(name, "content-encoding") &&
        !absl::EqualsIgnoreCase(value, "identity")) {
      return Error(absl::StrCat("the server sent a '",
                                PrintableAscii(value, 40),
                                "' Content-Encoding; only identity is "
                                "accepted"));
    }
    if (absl::EqualsIgnoreCase(name, "transfer-encoding") &&
        !absl::EqualsIgnoreCase(value, "chunked")) {
      return Error(absl::StrCat("the server sent a '",
                                PrintableAscii(value, 40),
                                "' Transfer-Encoding; only chunked is "
                                "accepted"));
    }
    if (absl::EqualsIgnoreCase(name, "accept-ranges")) {
      for (absl::string_view unit : absl::StrSplit(value, ',')) {
        if (absl::EqualsIgnoreCase(absl::StripAsciiWhitespace(unit), "bytes")) {
          info->accept_ranges = true;
        }
      }
    }
    if (absl::EqualsIgnoreCase(name, "etag")) {
      info->etag = std::string(value.substr(0, 1024));
    }
    if (absl::EqualsIgnoreCase(name, "last-modified")) {
      info->last_modified = std::string(value.substr(0, 200));
    }
    if (absl::EqualsIgnoreCase(name, "content-range") &&
        content_range == nullptr) {
      content_range = &f;
    }
  }
  if (!partial) {
    if (info->content_length.has_value()) {
      info->object_size = info->content_length;
    }
    return absl::OkStatus();
  }
  uint64_t first = 0, last = 0;
  std::optional<uint64_t> size;
  if (content_range == nullptr ||
      !ParseContentRange(content_range->value, &first, &last, &size)) {
    return Error("HTTP 206 without a valid Content-Range");
  }
  // RFC 9110 14.1.2: a last byte past the object's end stands for its
  // end, the one Content-Range it then allows.
  const bool clipped = range->last.has_value() && size.has_value() &&
                       *range->last >= *size && last + 1 == *size;
  const bool wrong =
      first != range->first ||
      (range->last.has_value() && last != *range->last && !clipped) ||
      (!range->last.has_value() && size.has_value() && last + 1 != *size) ||
      (info->content_length.has_value() &&
       *info->content_length != last - first + 1);
  if (wrong) {
    return Error(absl::StrCat("HTTP 206 with Content-Range '",
                              PrintableAscii(content_range->value, 80),
                              "' for the range from byte ", range->first));
  }
  info->range_first = first;
  info->range_last = last;
  info->object_size = size;
  info->accept_ranges = true;
  return absl::OkStatus();
}

}  // namespace hurray::stream::http
