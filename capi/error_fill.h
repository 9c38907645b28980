// Filling a caller's hurray_error (hurray.h), shared by the C ABI's entry
// points (hurray.cc, ingest.cc, convert.cc): bounded, NUL-terminated
// copies, and a Status's rule id, offset and offset unit where it has them
// (parser/rules.h). Each file maps status codes to hurray_status itself:
// the same code means different things to a decode, an ingest and a
// convert.
#ifndef HURRAY_CAPI_ERROR_FILL_H_
#define HURRAY_CAPI_ERROR_FILL_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "capi/hurray.h"
#include "parser/rules.h"

namespace hurray::capi {

// Bounded, always NUL-terminated copy.
template <size_t N>
void CopyString(absl::string_view s, char (&out)[N]) {
  const size_t n = s.size() < N - 1 ? s.size() : N - 1;
  if (n > 0) std::memcpy(out, s.data(), n);
  out[n] = '\0';
}

inline uint32_t UnitCode(OffsetUnit u) {
  switch (u) {
    case OffsetUnit::kByte:
      return HURRAY_OFFSET_BYTE;
    case OffsetUnit::kElement:
      return HURRAY_OFFSET_ELEMENT;
    case OffsetUnit::kBlock:
      return HURRAY_OFFSET_BLOCK;
    case OffsetUnit::kEntry:
      return HURRAY_OFFSET_ENTRY;
  }
  return HURRAY_OFFSET_BYTE;
}

inline void ClearError(hurray_error* e, hurray_status status) {
  if (e == nullptr) return;
  e->status = status;
  e->rule_id[0] = '\0';
  e->offset = 0;
  e->offset_unit = HURRAY_OFFSET_BYTE;
  e->message[0] = '\0';
}

inline hurray_status SetError(hurray_error* e, hurray_status status,
                              absl::string_view message) {
  ClearError(e, status);
  if (e != nullptr) CopyString(message, e->message);
  return status;
}

// `status` with `s`'s message, and its rule id, offset and unit when it
// carries a rule.
inline hurray_status SetErrorOf(hurray_error* e, hurray_status status,
                                const absl::Status& s) {
  SetError(e, status, s.message());
  if (e == nullptr) return status;
  if (std::optional<absl::string_view> rule = RuleIdOf(s)) {
    CopyString(*rule, e->rule_id);
    e->offset = OffsetOf(s).value_or(0);
    e->offset_unit = UnitCode(OffsetUnitOf(s));
  }
  return status;
}

// The guard every entry point runs its body in: no C++ exception crosses
// the C ABI.
template <typename F>
hurray_status Guarded(hurray_error* error, F&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return SetError(error, HURRAY_NO_MEMORY, "out of memory");
  } catch (...) {
    return SetError(error, HURRAY_INTERNAL, "unexpected C++ exception");
  }
}

}  // namespace hurray::capi

#endif  // HURRAY_CAPI_ERROR_FILL_H_
