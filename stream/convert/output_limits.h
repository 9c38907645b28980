// What `hurray ingest` would refuse in a converter's output, decided before
// a byte of it is written (a converter never writes what our reader
// refuses). The forward reader (stream/container/hrry_file.h) holds the
// bytes after the tensor region, the KV section, the index and the
// trailer, up to FileOptions::max_metadata_bytes, and refuses a file whose
// tail passes it; it refuses a buffer above ContainerLimits::
// max_buffer_bytes. Both are LIMIT-BUFFER-BYTES (REJECT-RULES.md §5).
#ifndef HURRAY_STREAM_CONVERT_OUTPUT_LIMITS_H_
#define HURRAY_STREAM_CONVERT_OUTPUT_LIMITS_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace hurray::stream::convert {

// Index bytes: the entry count, then per tensor a u16 name length, the
// name and 32 bytes of offsets and flags (file-format.md § Index Encoding).
inline constexpr uint64_t kIndexHeaderBytes = 8;
inline uint64_t IndexEntryBytes(uint64_t name_size) {
  return 2 + name_size + 32;
}

// The tail the reader holds: the zero padding that may end the region (up
// to 7 bytes), the KV section (`kv_section_bytes`, 0 when there is none)
// and its padding to 8, the index, the 40-byte trailer.
uint64_t TailBytes(uint64_t kv_section_bytes, uint64_t index_bytes);

// LIMIT-BUFFER-BYTES, at `source_offset` (the input's byte where `what`
// starts), when `tail_bytes` pass `max_metadata_bytes`.
[[nodiscard]] absl::Status CheckTail(uint64_t tail_bytes,
                                     uint64_t max_metadata_bytes,
                                     uint64_t source_offset,
                                     absl::string_view what);

// At most `max` bytes of a name from the input, cut at a UTF-8 boundary,
// with "..." when cut: for messages (a key may hold 64 KiB).
std::string ShortName(absl::string_view name, size_t max = 64);

}  // namespace hurray::stream::convert

#endif  // HURRAY_STREAM_CONVERT_OUTPUT_LIMITS_H_
