#include "tools/json_writer.h"

#include <cassert>
#include <cmath>
#include <cstddef>
#include <cstdio>

#include "absl/strings/str_cat.h"

namespace hurray::tools {
namespace {

constexpr char kHexDigits[] = "0123456789abcdef";

// Length of the well-formed UTF-8 sequence at the start of `s`, or, when it
// is ill-formed, minus the length of its maximal subpart (at least 1): the
// bytes to replace by one U+FFFD (Unicode § 3.9, Table 3-7).
ptrdiff_t Utf8SequenceLength(const unsigned char* s, size_t avail) {
  const unsigned char lead = s[0];
  size_t length;
  unsigned char second_lo = 0x80, second_hi = 0xBF;
  if (lead < 0x80) {
    return 1;
  } else if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) second_lo = 0xA0;  // no overlong forms
    if (lead == 0xED) second_hi = 0x9F;  // no surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) second_lo = 0x90;  // no overlong forms
    if (lead == 0xF4) second_hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return -1;  // continuation byte, C0, C1 or F5..FF
  }
  for (size_t k = 1; k < length; ++k) {
    const unsigned char lo = k == 1 ? second_lo : 0x80;
    const unsigned char hi = k == 1 ? second_hi : 0xBF;
    if (k >= avail || s[k] < lo || s[k] > hi) {
      return -static_cast<ptrdiff_t>(k);
    }
  }
  return static_cast<ptrdiff_t>(length);
}

}  // namespace

void AppendJsonString(absl::string_view value, std::string* out) {
  out->push_back('"');
  const auto* s = reinterpret_cast<const unsigned char*>(value.data());
  const size_t n = value.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char c = s[i];
    if (c >= 0x80) {
      const ptrdiff_t len = Utf8SequenceLength(s + i, n - i);
      if (len > 0) {
        out->append(value.data() + i, static_cast<size_t>(len));
        i += static_cast<size_t>(len);
      } else {
        out->append("\\ufffd");
        i += static_cast<size_t>(-len);
      }
      continue;
    }
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\b':
        out->append("\\b");
        break;
      case '\f':
        out->append("\\f");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      default:
        if (c < 0x20) {
          const char escape[] = {
              '\\', 'u', '0', '0', kHexDigits[c >> 4], kHexDigits[c & 0xF]};
          out->append(escape, sizeof(escape));
        } else {
          out->push_back(static_cast<char>(c));
        }
    }
    ++i;
  }
  out->push_back('"');
}

void AppendJsonDouble(double value, std::string* out) {
  if (!std::isfinite(value)) {
    out->append("null");
    return;
  }
  // "%.17g" of a finite double is at most 24 characters
  // ("-2.2250738585072014e-308").
  char buffer[32];
  const int n = std::snprintf(buffer, sizeof(buffer), "%.17g", value);
  assert(n > 0 && static_cast<size_t>(n) < sizeof(buffer));
  out->append(buffer, static_cast<size_t>(n));
}

void JsonWriter::BeforeValue() {
  if (stack_.empty()) {
    assert(!wrote_top_level_ && "only one top-level value per writer");
    wrote_top_level_ = true;
    return;
  }
  Frame& frame = stack_.back();
  if (frame.is_object) {
    assert(frame.expect_value && "a value inside an object needs a Key()");
    frame.expect_value = false;
    return;
  }
  if (!frame.empty) out_->push_back(',');
  frame.empty = false;
}

JsonWriter& JsonWriter::BeginObject() {
  BeforeValue();
  out_->push_back('{');
  stack_.push_back(Frame{/*is_object=*/true});
  return *this;
}

JsonWriter& JsonWriter::EndObject() {
  assert(!stack_.empty() && stack_.back().is_object);
  assert(!stack_.back().expect_value && "a Key() without a value");
  stack_.pop_back();
  out_->push_back('}');
  return *this;
}

JsonWriter& JsonWriter::BeginArray() {
  BeforeValue();
  out_->push_back('[');
  stack_.push_back(Frame{/*is_object=*/false});
  return *this;
}

JsonWriter& JsonWriter::EndArray() {
  assert(!stack_.empty() && !stack_.back().is_object);
  stack_.pop_back();
  out_->push_back(']');
  return *this;
}

JsonWriter& JsonWriter::Key(absl::string_view key) {
  assert(!stack_.empty() && stack_.back().is_object);
  Frame& frame = stack_.back();
  assert(!frame.expect_value && "two Key() calls in a row");
  if (!frame.empty) out_->push_back(',');
  frame.empty = false;
  frame.expect_value = true;
  AppendJsonString(key, out_);
  out_->push_back(':');
  return *this;
}

JsonWriter& JsonWriter::String(absl::string_view value) {
  BeforeValue();
  AppendJsonString(value, out_);
  return *this;
}

JsonWriter& JsonWriter::Uint(uint64_t value) {
  BeforeValue();
  absl::StrAppend(out_, value);
  return *this;
}

JsonWriter& JsonWriter::Int(int64_t value) {
  BeforeValue();
  absl::StrAppend(out_, value);
  return *this;
}

JsonWriter& JsonWriter::Double(double value) {
  BeforeValue();
  AppendJsonDouble(value, out_);
  return *this;
}

JsonWriter& JsonWriter::Bool(bool value) {
  BeforeValue();
  out_->append(value ? "true" : "false");
  return *this;
}

JsonWriter& JsonWriter::Null() {
  BeforeValue();
  out_->append("null");
  return *this;
}

}  // namespace hurray::tools
