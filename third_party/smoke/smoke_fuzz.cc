// Smoke fuzz target: exercises smoke_lib on arbitrary bytes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "third_party/smoke/smoke_lib.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<uint32_t> v = hurray::smoke::ParseUint32(text);
  if (!v.ok() && !v.status().GetPayload(hurray::smoke::kPayloadUrl)) {
    std::abort();  // Every error must carry the payload.
  }
  (void)hurray::smoke::SumLe16(absl::MakeConstSpan(data, size));
  return 0;
}
