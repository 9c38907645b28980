#include "stream/convert/output_limits.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "parser/rules.h"
#include "stream/container/file_format.h"

namespace hurray::stream::convert {

uint64_t TailBytes(uint64_t kv_section_bytes, uint64_t index_bytes) {
  const uint64_t kv =
      kv_section_bytes == 0 ? 0 : (kv_section_bytes + 7) / 8 * 8;
  return 7 + kv + index_bytes + stream::container::kTrailerSize;
}

absl::Status CheckTail(uint64_t tail_bytes, uint64_t max_metadata_bytes,
                       uint64_t source_offset, absl::string_view what) {
  if (tail_bytes <= max_metadata_bytes) return absl::OkStatus();
  const std::string message = absl::StrCat(
      what,
      ": the output's KV section and index would pass the .hrry "
      "reader's metadata limit of ",
      max_metadata_bytes, " bytes (every key, tensor name and value counts)");
  return ToStatus(
      Rejection{Rule::kLimitBufferBytes, source_offset, message.c_str()});
}

std::string ShortName(absl::string_view name, size_t max) {
  if (name.size() <= max) return std::string(name);
  size_t n = max;
  // Back off continuation bytes (10xxxxxx) to a character's start.
  while (n > 0 && (static_cast<uint8_t>(name[n]) & 0xC0) == 0x80) --n;
  return absl::StrCat(name.substr(0, n), "...");
}

}  // namespace hurray::stream::convert
