// CRC-32C (Castagnoli) of the .hrry index section (file-format.md § Trailer,
// index_crc32c; FILE-TRL-03), computed by Boost.CRC.
#ifndef HURRAY_STREAM_CRC32C_H_
#define HURRAY_STREAM_CRC32C_H_

#include <cstdint>

#include "absl/types/span.h"

namespace hurray::stream {

uint32_t Crc32c(absl::Span<const uint8_t> bytes);

}  // namespace hurray::stream

#endif  // HURRAY_STREAM_CRC32C_H_
