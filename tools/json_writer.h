// JsonWriter: a small streaming JSON writer (no DOM) for the hurray tool.
//
// Values are appended to a caller-owned std::string as they are written;
// the writer only tracks which containers are open so that it can place
// commas and check (with assert) that keys and values alternate inside
// objects. Output is compact: no whitespace, ready for JSON Lines.
//
//   std::string line;
//   JsonWriter w(&line);
//   w.BeginObject();
//   w.Key("rank").Uint(2);
//   w.Key("shape").BeginArray().Uint(3).Uint(4).EndArray();
//   w.EndObject();  // line == R"({"rank":2,"shape":[3,4]})"
//
// Number and string formats:
//  * Unsigned and signed integers are printed exactly (all 64 bits).
//  * Doubles are printed with "%.17g", which round-trips every finite
//    double; NaN and ±infinity have no JSON form and are printed as null.
//  * Strings are escaped per RFC 8259: '"', '\\' and every control
//    character below U+0020 (\b \t \n \f \r in short form, the others as
//    \u00XX). Valid UTF-8 is copied through unchanged; each ill-formed
//    UTF-8 sequence (maximal subpart, Unicode § 3.9) is replaced by
//    \ufffd so that the output is always valid UTF-8.
#ifndef HURRAY_TOOLS_JSON_WRITER_H_
#define HURRAY_TOOLS_JSON_WRITER_H_

#include <cstdint>
#include <string>

#include "absl/container/inlined_vector.h"
#include "absl/strings/string_view.h"

namespace hurray::tools {

class JsonWriter {
 public:
  // Appends to `*out`, which must outlive the writer.
  explicit JsonWriter(std::string* out) : out_(out) {}
  JsonWriter(const JsonWriter&) = delete;
  JsonWriter& operator=(const JsonWriter&) = delete;

  JsonWriter& BeginObject();
  JsonWriter& EndObject();
  JsonWriter& BeginArray();
  JsonWriter& EndArray();

  // Inside an object: the key of the next value.
  JsonWriter& Key(absl::string_view key);

  JsonWriter& String(absl::string_view value);
  JsonWriter& Uint(uint64_t value);
  JsonWriter& Int(int64_t value);
  JsonWriter& Double(double value);  // null for NaN and ±infinity
  JsonWriter& Bool(bool value);
  JsonWriter& Null();

  // True once one top-level value has been written and every container is
  // closed.
  bool complete() const { return stack_.empty() && wrote_top_level_; }

 private:
  struct Frame {
    bool is_object;
    bool empty = true;          // no member/element written yet
    bool expect_value = false;  // object: a key was written, value pending
  };

  // Writes the separator a value needs and updates the container state.
  void BeforeValue();

  std::string* out_;
  absl::InlinedVector<Frame, 8> stack_;
  bool wrote_top_level_ = false;
};

// The building blocks, usable on their own.
// Appends `value` as a quoted, escaped JSON string.
void AppendJsonString(absl::string_view value, std::string* out);
// Appends `value` with "%.17g", or null when it is not finite.
void AppendJsonDouble(double value, std::string* out);

}  // namespace hurray::tools

#endif  // HURRAY_TOOLS_JSON_WRITER_H_
