// The fixed parts of a .hrry file (file-format.md § File Header, § Trailer,
// REJECT-RULES.md §2.8) and the reader options. Parsing checks the FILE-HDR
// and FILE-TRL rules that need nothing but those bytes and the file size, in
// field order, so the first offending field is the one reported; offsets
// are absolute file offsets.
#ifndef HURRAY_STREAM_CONTAINER_FILE_FORMAT_H_
#define HURRAY_STREAM_CONTAINER_FILE_FORMAT_H_

#include <array>
#include <cstdint>

#include "absl/types/span.h"
#include "parser/options.h"
#include "parser/rules.h"
#include "stream/container/limits.h"

namespace hurray::stream::container {

inline constexpr uint64_t kFileHeaderSize = 64;
inline constexpr uint64_t kTrailerSize = 40;
inline constexpr uint64_t kMinFileSize = kFileHeaderSize + kTrailerSize;
inline constexpr uint64_t kUnknownTensorCount = ~uint64_t{0};
inline constexpr uint32_t kMinDataAlignment = 4096;
inline constexpr uint32_t kMaxDataAlignment = 2097152;
inline constexpr uint8_t kContainerMajor = 1;
inline constexpr uint8_t kContainerMinor = 0;
inline constexpr std::array<uint8_t, 8> kFileMagic = {'H', 'R', 'R', 'Y',
                                                      'F', 'I', 'L', 'E'};
inline constexpr std::array<uint8_t, 4> kTrailerMagic = {'H', 'R', 'R', 'Y'};

namespace file_flag {
inline constexpr uint32_t kHasKvMetadata = 1u << 0;
inline constexpr uint32_t kSortedIndex = 1u << 1;
inline constexpr uint32_t kHasIndexCrc32c = 1u << 2;
inline constexpr uint32_t kReservedMask = ~0x7u;
}  // namespace file_flag

// Field offsets inside the header and the trailer.
namespace header_at {
inline constexpr uint64_t kMagic = 0, kMajor = 8, kMinor = 9, kReserved = 10,
                          kFlags = 12, kAlignment = 16, kFirstDescriptor = 20,
                          kTensorCountHint = 28, kReservedHeader = 36;
}
namespace trailer_at {
inline constexpr uint64_t kIndexOffset = 0, kIndexLength = 8, kKvOffset = 16,
                          kKvLength = 24, kIndexCrc = 28, kReserved = 32,
                          kMagic = 36;
}

struct FileHeader {
  uint8_t version_major = kContainerMajor;
  uint8_t version_minor = kContainerMinor;
  uint32_t flags = 0;
  uint32_t data_buffer_alignment = kMinDataAlignment;
  uint64_t first_descriptor_offset = kFileHeaderSize;
  uint64_t tensor_count_hint = kUnknownTensorCount;
  bool has(uint32_t f) const { return (flags & f) != 0; }
};

struct FileTrailer {
  uint64_t index_offset = 0;
  uint64_t index_length = 0;
  uint64_t kv_offset = 0;
  uint32_t kv_length = 0;
  uint32_t index_crc32c = 0;
};

struct FileOptions {
  // Descriptor rules and mode; the mode also governs the strict-only
  // container rules.
  ParseOptions parse;
  ContainerLimits limits;
  // LIMIT-BUFFER-BYTES for the bytes after the tensor region (KV, index,
  // trailer) that the forward reader keeps until the trailer is known.
  uint64_t max_metadata_bytes = uint64_t{64} << 20;
  // FILE-TRL-09 (strict-only): KV fields set while HAS_KV_METADATA is clear.
  // Off by default: the reference writer and the golden file do this
  // (RESOLUTIONS.md 13, REJECT-RULES.md §4 item 3).
  bool reject_kv_without_flag = false;
  // FILE-REG-04 (strict-only): padding after a composite head. Off by
  // default: the reference writer pads (REJECT-RULES.md §4 item 4).
  bool reject_padding_after_head = false;
  // Random-access reader: walk the tensor region at open (padding, FILE-REG,
  // FILE-IDX-15, torn composites). Off: check each indexed tensor only.
  bool verify_region = true;
};

// The whole geometry once header, trailer and size are known.
struct FileGeometry {
  FileHeader header;
  FileTrailer trailer;
  uint64_t file_size = 0;
  bool kv_present = false;
  // The first byte after the tensor region: the KV section when present,
  // else the index (file-format.md § File Layout).
  uint64_t region_limit = 0;
};

// FILE-HDR-02..09 over the first 64 bytes (FILE-HDR-01, the size, and
// FILE-HDR-10, the padding after the header, are the caller's).
Rejection ParseFileHeader(absl::Span<const uint8_t> bytes, FileHeader* out);

// FILE-TRL-01, 02, 04..11 over the last 40 bytes of a file of `file_size`
// bytes (FILE-TRL-03 needs the index: CheckIndexCrc). Fills `out`.
Rejection ParseTrailer(absl::Span<const uint8_t> bytes, uint64_t file_size,
                       const FileHeader& header, const FileOptions& options,
                       FileGeometry* out);

// FILE-TRL-03: the CRC-32C of the index bytes, when HAS_INDEX_CRC32C is set.
Rejection CheckIndexCrc(absl::Span<const uint8_t> index, const FileGeometry& g);

void EncodeFileHeader(const FileHeader& h, uint8_t out[kFileHeaderSize]);
void EncodeTrailer(const FileTrailer& t, uint8_t out[kTrailerSize]);

}  // namespace hurray::stream::container

#endif  // HURRAY_STREAM_CONTAINER_FILE_FORMAT_H_
