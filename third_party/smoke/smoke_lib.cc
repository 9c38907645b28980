#include "third_party/smoke/smoke_lib.h"

#include <cstddef>

#include "absl/base/internal/endian.h"
#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"

namespace hurray::smoke {

absl::StatusOr<uint32_t> ParseUint32(absl::string_view text) {
  uint32_t value = 0;
  if (!absl::SimpleAtoi(text, &value)) {
    absl::Status status = absl::InvalidArgumentError(
        absl::StrFormat("not a uint32: \"%s\" (%d bytes)", text, text.size()));
    status.SetPayload(kPayloadUrl, absl::Cord(text));
    return status;
  }
  return value;
}

uint64_t SumLe16(absl::Span<const uint8_t> bytes) {
  uint64_t sum = 0;
  for (std::size_t i = 0; i + 1 < bytes.size(); i += 2) {
    sum += absl::little_endian::Load16(bytes.data() + i);
  }
  return sum;
}

}  // namespace hurray::smoke
