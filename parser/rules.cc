#include "parser/rules.h"

#include <array>
#include <string>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace hurray {
namespace {

constexpr RuleInfo kRules[] = {
#define X(name, id, ref, level, mode) \
  {Rule::name, id, ref, RuleLevel::level, RuleMode::mode},
#include "parser/rule_list.inc"
#undef X
};

constexpr RuleInfo kNoneInfo{Rule::kNone, "OK", "", RuleLevel::kDescriptor,
                             RuleMode::kAlways};

}  // namespace

absl::Span<const RuleInfo> AllRules() { return kRules; }

const RuleInfo& GetRuleInfo(Rule rule) {
  const size_t i = static_cast<size_t>(rule);
  if (i == 0 || i > std::size(kRules)) return kNoneInfo;
  return kRules[i - 1];
}

std::optional<Rule> RuleFromId(absl::string_view id) {
  for (const RuleInfo& info : kRules) {
    if (info.id == id) return info.rule;
  }
  return std::nullopt;
}

absl::string_view OffsetUnitName(OffsetUnit unit) {
  switch (unit) {
    case OffsetUnit::kElement:
      return "element";
    case OffsetUnit::kBlock:
      return "block";
    case OffsetUnit::kEntry:
      return "entry";
    case OffsetUnit::kByte:
      break;
  }
  return "byte";
}

absl::Status ToStatus(const Rejection& r) {
  if (r.ok()) return absl::OkStatus();
  const absl::string_view id = RuleId(r.rule);
  const absl::string_view unit = OffsetUnitName(r.unit);
  absl::Status status(
      absl::StatusCode::kInvalidArgument,
      absl::StrCat(id, " at ", unit, " ", r.offset, ": ", r.message));
  status.SetPayload(kRulePayloadUrl, absl::Cord(id));
  status.SetPayload(kOffsetPayloadUrl, absl::Cord(absl::StrCat(r.offset)));
  if (r.unit != OffsetUnit::kByte) {
    status.SetPayload(kOffsetUnitPayloadUrl, absl::Cord(unit));
  }
  return status;
}

OffsetUnit OffsetUnitOf(const absl::Status& status) {
  auto payload = status.GetPayload(kOffsetUnitPayloadUrl);
  if (!payload.has_value()) return OffsetUnit::kByte;
  for (OffsetUnit u :
       {OffsetUnit::kElement, OffsetUnit::kBlock, OffsetUnit::kEntry}) {
    if (OffsetUnitName(u) == std::string(*payload)) return u;
  }
  return OffsetUnit::kByte;
}

std::optional<absl::string_view> RuleIdOf(const absl::Status& status) {
  auto payload = status.GetPayload(kRulePayloadUrl);
  if (!payload.has_value()) return std::nullopt;
  std::optional<Rule> rule = RuleFromId(std::string(*payload));
  if (!rule.has_value()) return std::nullopt;
  return RuleId(*rule);
}

std::optional<uint64_t> OffsetOf(const absl::Status& status) {
  auto payload = status.GetPayload(kOffsetPayloadUrl);
  uint64_t offset = 0;
  if (!payload.has_value() || !absl::SimpleAtoi(std::string(*payload), &offset))
    return std::nullopt;
  return offset;
}

}  // namespace hurray
