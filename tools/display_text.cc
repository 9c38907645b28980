#include "tools/display_text.h"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"

namespace hurray::tools {
namespace {

// The UTF-8 character at the start of `s`: its length and code point, or
// length 0 when `s` does not start with a valid one (RFC 3629).
struct Char {
  size_t length = 0;
  uint32_t code = 0;
};

Char NextChar(absl::string_view s) {
  const auto byte = [&s](size_t i) { return static_cast<uint8_t>(s[i]); };
  const uint8_t b = byte(0);
  if (b < 0x80) return {1, b};
  size_t n;
  uint32_t code, min;
  if (b >= 0xC2 && b <= 0xDF) {
    n = 2, code = b & 0x1F, min = 0x80;
  } else if (b >= 0xE0 && b <= 0xEF) {
    n = 3, code = b & 0x0F, min = 0x800;
  } else if (b >= 0xF0 && b <= 0xF4) {
    n = 4, code = b & 0x07, min = 0x10000;
  } else {
    return {};
  }
  if (s.size() < n) return {};
  for (size_t i = 1; i < n; ++i) {
    if ((byte(i) & 0xC0) != 0x80) return {};
    code = (code << 6) | (byte(i) & 0x3F);
  }
  if (code < min || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) {
    return {};
  }
  return {n, code};
}

bool EscapedCodePoint(uint32_t c) {
  return (c >= 0x80 && c <= 0x9F) || c == 0x061C || c == 0x200E ||
         c == 0x200F || (c >= 0x2028 && c <= 0x202E) ||
         (c >= 0x2066 && c <= 0x2069);
}

}  // namespace

std::string TerminalSafe(absl::string_view text, size_t max_columns) {
  static constexpr absl::string_view kCut = "...";
  std::string out;
  size_t columns = 0;
  // With a cap: each piece's end in `out` and the columns up to it.
  std::vector<std::pair<size_t, size_t>> ends;
  for (size_t i = 0; i < text.size();) {
    std::string piece;  // one character, as printed
    size_t piece_columns;
    const Char ch = NextChar(text.substr(i));
    if (ch.length == 0) {
      piece = absl::StrFormat("\\x%02x", static_cast<uint8_t>(text[i]));
      piece_columns = piece.size();
      i += 1;
    } else {
      const uint32_t c = ch.code;
      if (c == '\\') {
        piece = "\\\\";
      } else if (c == '\n') {
        piece = "\\n";
      } else if (c == '\r') {
        piece = "\\r";
      } else if (c == '\t') {
        piece = "\\t";
      } else if (c < 0x20 || c == 0x7F) {
        piece = absl::StrFormat("\\x%02x", c);
      } else if (EscapedCodePoint(c)) {
        piece = absl::StrFormat("\\u%04x", c);
      } else {
        piece = std::string(text.substr(i, ch.length));
      }
      piece_columns = ch.length == piece.size() ? 1 : piece.size();
      i += ch.length;
    }
    if (max_columns > 0 && columns + piece_columns > max_columns) {
      // Drop whole pieces until the marker fits, then stop.
      while (!ends.empty() && ends.back().second + kCut.size() > max_columns) {
        ends.pop_back();
      }
      out.resize(ends.empty() ? 0 : ends.back().first);
      out.append(kCut.data(), std::min(kCut.size(), max_columns));
      return out;
    }
    out += piece;
    columns += piece_columns;
    if (max_columns > 0) ends.emplace_back(out.size(), columns);
  }
  return out;
}

size_t DisplayWidth(absl::string_view text) {
  size_t n = 0;
  for (const char c : text) n += (static_cast<uint8_t>(c) & 0xC0) != 0x80;
  return n;
}

std::string PadRight(absl::string_view text, size_t width) {
  std::string out(text);
  const size_t w = DisplayWidth(text);
  if (w < width) out.append(width - w, ' ');
  return out;
}

}  // namespace hurray::tools
