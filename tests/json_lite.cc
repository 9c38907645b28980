#include "tests/json_lite.h"

#include <cctype>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace hurray::json {
namespace {

class Parser {
 public:
  explicit Parser(absl::string_view s) : s_(s) {}

  absl::StatusOr<Value> Document() {
    Value v;
    if (!ParseValue(&v, 0)) return Error();
    SkipSpace();
    if (i_ != s_.size()) return Error();
    return v;
  }

 private:
  absl::Status Error() const {
    return absl::InvalidArgumentError(absl::StrCat("bad JSON at ", i_));
  }
  void SkipSpace() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) {
      ++i_;
    }
  }
  bool Eat(char c) {
    SkipSpace();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  bool Word(absl::string_view w) {
    if (s_.substr(i_, w.size()) != w) return false;
    i_ += w.size();
    return true;
  }
  bool ParseString(std::string* out) {
    if (!Eat('"')) return false;
    while (i_ < s_.size() && s_[i_] != '"') {
      char c = s_[i_++];
      if (c == '\\') {
        if (i_ >= s_.size()) return false;
        const char e = s_[i_++];
        switch (e) {
          case 'n':
            c = '\n';
            break;
          case 't':
            c = '\t';
            break;
          case 'r':
            c = '\r';
            break;
          case 'b':
            c = '\b';
            break;
          case 'f':
            c = '\f';
            break;
          case 'u': {
            uint32_t cp = 0;
            if (i_ + 4 > s_.size()) return false;
            for (int k = 0; k < 4; ++k) {
              const char h = s_[i_++];
              cp = cp * 16 + (std::isdigit(static_cast<unsigned char>(h))
                                  ? h - '0'
                                  : (std::tolower(h) - 'a' + 10));
            }
            if (cp < 0x80) {
              out->push_back(static_cast<char>(cp));
            } else if (cp < 0x800) {
              out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
              out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
            } else {
              out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
              out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
              out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
            }
            continue;
          }
          default:
            c = e;
            break;
        }
      }
      out->push_back(c);
    }
    return i_++ < s_.size();
  }
  bool ParseValue(Value* v, int depth) {
    if (depth > 64) return false;
    SkipSpace();
    if (i_ >= s_.size()) return false;
    const char c = s_[i_];
    if (c == '{') {
      ++i_;
      v->kind = Value::Kind::kObject;
      if (Eat('}')) return true;
      do {
        std::string key;
        Value member;
        if (!ParseString(&key) || !Eat(':') || !ParseValue(&member, depth + 1))
          return false;
        v->object.push_back(Member{std::move(key), std::move(member)});
      } while (Eat(','));
      return Eat('}');
    }
    if (c == '[') {
      ++i_;
      v->kind = Value::Kind::kArray;
      if (Eat(']')) return true;
      do {
        Value item;
        if (!ParseValue(&item, depth + 1)) return false;
        v->array.push_back(std::move(item));
      } while (Eat(','));
      return Eat(']');
    }
    if (c == '"') {
      v->kind = Value::Kind::kString;
      return ParseString(&v->text);
    }
    if (Word("null")) return true;
    if (Word("true") || Word("false")) {
      v->kind = Value::Kind::kBool;
      v->boolean = s_[i_ - 1] == 'e' && s_[i_ - 2] == 'u';
      return true;
    }
    const size_t start = i_;
    while (i_ < s_.size() &&
           (std::isdigit(static_cast<unsigned char>(s_[i_])) ||
            std::strchr("+-.eE", s_[i_]))) {
      ++i_;
    }
    if (i_ == start) return false;
    v->kind = Value::Kind::kNumber;
    v->text = std::string(s_.substr(start, i_ - start));
    return true;
  }

  absl::string_view s_;
  size_t i_ = 0;
};

const Value kNull;

}  // namespace

const Value* Value::Find(absl::string_view key) const {
  for (const auto& [k, v] : object) {
    if (k == key) return &v;
  }
  return nullptr;
}

const Value& Value::operator[](absl::string_view key) const {
  const Value* v = Find(key);
  return v ? *v : kNull;
}

uint64_t Value::AsU64() const {
  uint64_t out = 0;
  if (kind != Kind::kNumber || !absl::SimpleAtoi(text, &out)) return 0;
  return out;
}

absl::StatusOr<Value> Parse(absl::string_view text) {
  return Parser(text).Document();
}

}  // namespace hurray::json
