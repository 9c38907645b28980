#include "stream/container/file_format.h"

#include <cstring>

#include "parser/wire.h"
#include "stream/container/crc32c.h"

namespace hurray::stream::container {
namespace {

using wire::LoadU32;
using wire::LoadU64;

// Offset of the first non-zero byte of bytes[from, to), or `to`.
uint64_t FirstNonZero(absl::Span<const uint8_t> bytes, uint64_t from,
                      uint64_t to) {
  for (uint64_t i = from; i < to; ++i) {
    if (bytes[i] != 0) return i;
  }
  return to;
}

bool Overlap(uint64_t a, uint64_t a_len, uint64_t b, uint64_t b_len) {
  // Both ranges are known to fit in the file (no overflow).
  return a_len > 0 && b_len > 0 && a < b + b_len && b < a + a_len;
}

}  // namespace

Rejection ParseFileHeader(absl::Span<const uint8_t> b, FileHeader* out) {
  namespace at = header_at;
  if (std::memcmp(b.data(), kFileMagic.data(), kFileMagic.size()) != 0) {
    return {Rule::kFileHdr02, at::kMagic, "the file magic is not HRRYFILE"};
  }
  out->version_major = b[at::kMajor];
  out->version_minor = b[at::kMinor];
  // versioning.md § Compatibility Matrix: no 0.x containers.
  if (out->version_major == 0) {
    return {Rule::kFileHdr04, at::kMajor, "container_version_major is 0"};
  }
  if (out->version_major > kContainerMajor) {
    return {Rule::kFileHdr03, at::kMajor,
            "container_version_major is newer than this reader"};
  }
  if (uint64_t nz = FirstNonZero(b, at::kReserved, at::kFlags);
      nz != at::kFlags) {
    return {Rule::kFileHdr05, nz, "header bytes 10-11 are not zero"};
  }
  out->flags = LoadU32(&b[at::kFlags]);
  if (out->flags & file_flag::kReservedMask) {
    return {Rule::kFileHdr06, at::kFlags, "reserved file_flags bits are set"};
  }
  out->data_buffer_alignment = LoadU32(&b[at::kAlignment]);
  const uint32_t a = out->data_buffer_alignment;
  if (!wire::IsPowerOfTwo(a) || a < kMinDataAlignment ||
      a > kMaxDataAlignment) {
    return {Rule::kFileHdr07, at::kAlignment,
            "data_buffer_alignment is not a power of two in 4096..2097152"};
  }
  out->first_descriptor_offset = LoadU64(&b[at::kFirstDescriptor]);
  if (out->first_descriptor_offset < kFileHeaderSize ||
      out->first_descriptor_offset % 8 != 0) {
    return {Rule::kFileHdr08, at::kFirstDescriptor,
            "first_descriptor_offset is below 64 or not a multiple of 8"};
  }
  out->tensor_count_hint = LoadU64(&b[at::kTensorCountHint]);
  if (uint64_t nz = FirstNonZero(b, at::kReservedHeader, kFileHeaderSize);
      nz != kFileHeaderSize) {
    return {Rule::kFileHdr09, nz, "header bytes 36-63 are not zero"};
  }
  return kAccepted;
}

Rejection ParseTrailer(absl::Span<const uint8_t> b, uint64_t file_size,
                       const FileHeader& header, const FileOptions& options,
                       FileGeometry* g) {
  namespace at = trailer_at;
  const uint64_t base = file_size - kTrailerSize;
  const Mode mode = options.parse.mode;
  g->header = header;
  g->file_size = file_size;
  // file-format.md § Trailer: the magic is verified before any other field.
  if (std::memcmp(&b[at::kMagic], kTrailerMagic.data(), 4) != 0) {
    return {Rule::kFileTrl01, base + at::kMagic, "trailer magic is not HRRY"};
  }
  if (uint64_t nz = FirstNonZero(b, at::kReserved, at::kMagic);
      nz != at::kMagic) {
    return {Rule::kFileTrl02, base + nz, "trailer reserved bytes not zero"};
  }
  FileTrailer& t = g->trailer;
  t.index_offset = LoadU64(&b[at::kIndexOffset]);
  t.index_length = LoadU64(&b[at::kIndexLength]);
  t.kv_offset = LoadU64(&b[at::kKvOffset]);
  t.kv_length = LoadU32(&b[at::kKvLength]);
  t.index_crc32c = LoadU32(&b[at::kIndexCrc]);
  // REJECT-RULES.md §4 item 16: the flag decides; a CRC without it is bad.
  if (!header.has(file_flag::kHasIndexCrc32c) && t.index_crc32c != 0) {
    return {Rule::kFileTrl04, base + at::kIndexCrc,
            "index_crc32c is set but HAS_INDEX_CRC32C is clear"};
  }
  uint64_t index_end;
  if (!wire::CheckedAdd(t.index_offset, t.index_length, &index_end) ||
      index_end > base) {
    return {Rule::kFileTrl05, base + at::kIndexOffset,
            "the index extends into the trailer"};
  }
  if (t.index_offset % 8 != 0) {
    return {Rule::kFileTrl06, base + at::kIndexOffset,
            "index_offset is not a multiple of 8"};
  }
  if (t.index_offset < header.first_descriptor_offset) {
    return {Rule::kFileTrl07, base + at::kIndexOffset,
            "the index starts before the first descriptor"};
  }
  // KV presence (RESOLUTIONS.md 13): a set flag needs both fields; a clear
  // flag with both fields set is accepted unless FILE-TRL-09 is asked for.
  const bool flag = header.has(file_flag::kHasKvMetadata);
  if (flag && (t.kv_offset == 0 || t.kv_length == 0)) {
    return {Rule::kFileTrl08, base + at::kKvOffset,
            "HAS_KV_METADATA is set but the trailer has no KV section"};
  }
  if ((t.kv_offset == 0) != (t.kv_length == 0)) {
    return {Rule::kFileTrl10, base + at::kKvOffset,
            "exactly one of kv_offset and kv_length is zero"};
  }
  g->kv_present = t.kv_offset != 0;
  if (!flag && g->kv_present && options.reject_kv_without_flag &&
      Applies(Rule::kFileTrl09, mode)) {
    return {Rule::kFileTrl09, base + at::kKvOffset,
            "a KV section while HAS_KV_METADATA is clear"};
  }
  g->region_limit = t.index_offset;
  if (g->kv_present) {
    if (Overlap(t.index_offset, t.index_length, t.kv_offset, t.kv_length)) {
      return {Rule::kFileTrl07, base + at::kIndexOffset,
              "the index overlaps the KV section"};
    }
    // The KV section sits between the first descriptor and the index.
    if (t.kv_offset % 8 != 0 || t.kv_offset < header.first_descriptor_offset ||
        t.kv_offset > t.index_offset ||
        t.kv_length > t.index_offset - t.kv_offset) {
      return {Rule::kFileTrl11, base + at::kKvOffset,
              "the KV section is misaligned or not before the index"};
    }
    g->region_limit = t.kv_offset;
  }
  return kAccepted;
}

Rejection CheckIndexCrc(absl::Span<const uint8_t> index,
                        const FileGeometry& g) {
  if (g.header.has(file_flag::kHasIndexCrc32c) &&
      Crc32c(index) != g.trailer.index_crc32c) {
    return {Rule::kFileTrl03,
            g.file_size - kTrailerSize + trailer_at::kIndexCrc,
            "index_crc32c does not match the index"};
  }
  return kAccepted;
}

void EncodeFileHeader(const FileHeader& h, uint8_t out[kFileHeaderSize]) {
  std::memset(out, 0, kFileHeaderSize);
  std::memcpy(out, kFileMagic.data(), kFileMagic.size());
  out[header_at::kMajor] = h.version_major;
  out[header_at::kMinor] = h.version_minor;
  wire::StoreU32(out + header_at::kFlags, h.flags);
  wire::StoreU32(out + header_at::kAlignment, h.data_buffer_alignment);
  wire::StoreU64(out + header_at::kFirstDescriptor, h.first_descriptor_offset);
  wire::StoreU64(out + header_at::kTensorCountHint, h.tensor_count_hint);
}

void EncodeTrailer(const FileTrailer& t, uint8_t out[kTrailerSize]) {
  std::memset(out, 0, kTrailerSize);
  wire::StoreU64(out + trailer_at::kIndexOffset, t.index_offset);
  wire::StoreU64(out + trailer_at::kIndexLength, t.index_length);
  wire::StoreU64(out + trailer_at::kKvOffset, t.kv_offset);
  wire::StoreU32(out + trailer_at::kKvLength, t.kv_length);
  wire::StoreU32(out + trailer_at::kIndexCrc, t.index_crc32c);
  std::memcpy(out + trailer_at::kMagic, kTrailerMagic.data(), 4);
}

}  // namespace hurray::stream::container
