// Reject rules: stable ids, the table that describes them, and the compact
// Rejection record every layer reports through.
//
// A Rejection is a plain value (rule, byte offset, static message) so the
// decoder can report one without allocating; it becomes an absl::Status only
// at the API edge, with the rule id and offset in the message and as payloads.
#ifndef HURRAY_PARSER_RULES_H_
#define HURRAY_PARSER_RULES_H_

#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace hurray {

enum class Rule : uint16_t {
  kNone = 0,
#define X(name, id, ref, level, mode) name,
#include "parser/rule_list.inc"
#undef X
};

enum class RuleLevel : uint8_t { kDescriptor, kData, kContainer };
enum class RuleMode : uint8_t { kAlways, kStrictOnly };

struct RuleInfo {
  Rule rule;
  absl::string_view id;        // e.g. "QNT-PCA-03"
  absl::string_view spec_ref;  // spec file and section
  RuleLevel level;
  RuleMode mode;
};

// Every rule this library enforces, in catalog order.
absl::Span<const RuleInfo> AllRules();
const RuleInfo& GetRuleInfo(Rule rule);
inline absl::string_view RuleId(Rule rule) { return GetRuleInfo(rule).id; }
std::optional<Rule> RuleFromId(absl::string_view id);

// Strict mode applies every rule; permissive mode relaxes kStrictOnly rules
// (REJECT-RULES.md §1).
enum class Mode : uint8_t { kStrict, kPermissive };

inline bool Applies(Rule rule, Mode mode) {
  return mode == Mode::kStrict || GetRuleInfo(rule).mode == RuleMode::kAlways;
}

// What a rejection's offset counts. Structural rules give byte offsets;
// data-level rules found while dequantizing give the index of the element,
// block or parameter entry at fault (a scale buffer's i-th entry, say).
enum class OffsetUnit : uint8_t { kByte, kElement, kBlock, kEntry };
absl::string_view OffsetUnitName(OffsetUnit unit);  // "byte", "element", ...

// Where an incremental reader stands after a step: it wants more input, it
// finished, or it rejected its input (see rejection()). The one result type
// of every incremental reader: the descriptor decoder (DecodeState), the
// tensor walker (WalkState), the bare stream reader (StreamState) and the
// .hrry forward reader (FileState) name it for their callers.
// [[nodiscard]]: a step's outcome is read where the step is taken (not
// re-read from state() afterwards); where it is sticky and reported later,
// the caller says so with (void).
enum class [[nodiscard]] Progress : uint8_t{kNeedMore, kDone, kRejected};

// One rejection: which rule, where (by default a byte offset from the start
// of the descriptor, or of the structure the caller names), and a static
// message.
// [[nodiscard]]: a dropped rejection is an accepted input. Where a result
// is sticky (kept by the object and reported later), the caller says so
// with (void).
struct [[nodiscard]] Rejection {
  Rule rule = Rule::kNone;
  uint64_t offset = 0;
  const char* message = "";
  OffsetUnit unit = OffsetUnit::kByte;

  bool ok() const { return rule == Rule::kNone; }
  friend bool operator==(const Rejection& a, const Rejection& b) {
    return a.rule == b.rule && a.offset == b.offset;
  }
};

inline constexpr Rejection kAccepted{};

// Returns the rejection from the enclosing function when `expr` rejects.
#define HURRAY_RETURN_IF_REJECTED(expr)           \
  do {                                            \
    const ::hurray::Rejection hurray_r_ = (expr); \
    if (!hurray_r_.ok()) return hurray_r_;        \
  } while (0)

// Returns the status from the enclosing function when `expr` is not OK.
#define HURRAY_RETURN_IF_ERROR(expr)       \
  do {                                     \
    ::absl::Status hurray_s_ = (expr);     \
    if (!hurray_s_.ok()) return hurray_s_; \
  } while (0)

// Builds the absl::Status for a rejection: InvalidArgument with message
// "<RULE-ID> at <unit> <offset>: <message>" ("QNT-HDR-02 at byte 64: ...",
// "QNT-MX-07 at block 3: ...") and payloads carrying the rule id, the offset
// and, when it is not a byte offset, its unit. OK for an accepted Rejection.
[[nodiscard]] absl::Status ToStatus(const Rejection& r);

// Reads back what ToStatus stored. Empty for OK or foreign statuses.
std::optional<absl::string_view> RuleIdOf(const absl::Status& status);
std::optional<uint64_t> OffsetOf(const absl::Status& status);
// kByte unless the status says otherwise.
OffsetUnit OffsetUnitOf(const absl::Status& status);

inline constexpr absl::string_view kRulePayloadUrl = "hurray.dev/rule";
inline constexpr absl::string_view kOffsetPayloadUrl = "hurray.dev/offset";
inline constexpr absl::string_view kOffsetUnitPayloadUrl =
    "hurray.dev/offset-unit";

}  // namespace hurray

#endif  // HURRAY_PARSER_RULES_H_
