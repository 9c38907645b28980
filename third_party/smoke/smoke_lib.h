#ifndef HURRAY_THIRD_PARTY_SMOKE_SMOKE_LIB_H_
#define HURRAY_THIRD_PARTY_SMOKE_SMOKE_LIB_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace hurray::smoke {

// Parses a decimal uint32 ("123"). Error payloads carry the offending input.
[[nodiscard]] absl::StatusOr<uint32_t> ParseUint32(absl::string_view text);

// Sum of the little-endian uint16 values in `bytes` (odd trailing byte is
// ignored).
uint64_t SumLe16(absl::Span<const uint8_t> bytes);

inline constexpr absl::string_view kPayloadUrl = "type.hurray/smoke.input";

}  // namespace hurray::smoke

#endif  // HURRAY_THIRD_PARTY_SMOKE_SMOKE_LIB_H_
