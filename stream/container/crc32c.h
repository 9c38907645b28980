// CRC-32C (Castagnoli) of the .hrry index section (file-format.md § Trailer,
// index_crc32c; FILE-TRL-03), computed by Boost.CRC, and the incremental
// form the resume state uses for bytes as they pass
// (stream/resume/ingest_state.h).
#ifndef HURRAY_STREAM_CONTAINER_CRC32C_H_
#define HURRAY_STREAM_CONTAINER_CRC32C_H_

#include <cstdint>

#include "absl/types/span.h"

namespace hurray::stream::container {

uint32_t Crc32c(absl::Span<const uint8_t> bytes);

// The CRC-32C of A followed by `bytes`, given `crc` = the CRC-32C of A:
// Crc32cExtend(Crc32c(a), b) == Crc32c(a + b), Crc32cExtend(0, b) ==
// Crc32c(b). Uses the SSE4.2 crc32 instruction when the CPU has it (every
// data byte of a resumable ingest passes here), else a table.
uint32_t Crc32cExtend(uint32_t crc, absl::Span<const uint8_t> bytes);
// The table path of Crc32cExtend, whatever the CPU (so tests reach it).
uint32_t Crc32cExtendPortable(uint32_t crc, absl::Span<const uint8_t> bytes);

}  // namespace hurray::stream::container

#endif  // HURRAY_STREAM_CONTAINER_CRC32C_H_
