// A small JSON reader for test fixtures (the golden manifest, CLI output).
// Numbers keep their text so u64 values compare exactly.
#ifndef HURRAY_TESTS_JSON_LITE_H_
#define HURRAY_TESTS_JSON_LITE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hurray::json {

struct Member;

struct Value {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  bool boolean = false;
  std::string text;  // number text or string contents
  std::vector<Value> array;
  // In document order. (Not std::pair: pair may not hold the incomplete
  // Value, which clang's standard library checks.)
  std::vector<Member> object;

  const Value* Find(absl::string_view key) const;
  const Value& operator[](absl::string_view key) const;  // null if absent
  bool is_null() const { return kind == Kind::kNull; }
  uint64_t AsU64() const;  // 0 unless a non-negative integer
};

struct Member {
  std::string first;  // the key
  Value second;
};

[[nodiscard]] absl::StatusOr<Value> Parse(absl::string_view text);

}  // namespace hurray::json

#endif  // HURRAY_TESTS_JSON_LITE_H_
