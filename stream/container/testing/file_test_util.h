// Test helpers for .hrry files: writing small valid files, taking one apart
// into editable pieces (region bytes, KV bytes, index entries) and putting it
// back together with consistent offsets, trailer and CRC, so a test can break
// exactly one field.
#ifndef HURRAY_STREAM_CONTAINER_TESTING_FILE_TEST_UTIL_H_
#define HURRAY_STREAM_CONTAINER_TESTING_FILE_TEST_UTIL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "parser/rules.h"
#include "parser/wire.h"
#include "stream/container/file_format.h"
#include "stream/container/hrry_writer.h"
#include "tests/vectors.h"

namespace hurray::stream::container::testing {

// Writes `tensors` (buffers from BuffersFor) with `options`; aborts the test
// binary on failure. `kv` adds entries when options.with_kv.
std::vector<uint8_t> WriteFile(
    const std::vector<vectors::Named>& tensors,
    const HrryWriterOptions& options = HrryWriterOptions(),
    void (*kv)(KvBuilder*) = nullptr);

// "a": float32 [3, 4], "b": int8 [5]; KV section with two entries when
// `with_kv`.
std::vector<uint8_t> SmallFile(bool with_kv = true);

struct EditableFile {
  struct Entry {
    std::string name;
    uint64_t descriptor_offset = 0;
    uint32_t descriptor_length = 0;
    uint64_t data_offset = 0;
    uint64_t data_length = 0;
    uint32_t flags = 0;
  };
  std::vector<uint8_t> region;  // bytes [0, region_limit)
  bool kv = false;
  std::vector<uint8_t> kv_bytes;
  std::vector<Entry> entries;
  std::vector<uint8_t> index_extra;  // after the last entry
  bool fix_crc = true;

  // Takes a valid file apart (as the writer lays it out).
  static EditableFile From(absl::Span<const uint8_t> file);

  // Inserts `n` zero bytes into the region at `at`, moving every index
  // offset at or past it.
  void InsertZeros(uint64_t at, uint64_t n);

  struct Built {
    std::vector<uint8_t> bytes;
    uint64_t kv_offset = 0;
    uint64_t index_offset = 0;
    uint64_t trailer = 0;
    std::vector<uint64_t> entry_at;  // each entry's name_length offset
    // Absolute offsets of entry i's fields.
    uint64_t name_at(size_t i) const { return entry_at[i] + 2; }
    uint64_t field_at(size_t i, const EditableFile& f, int field) const;
  };
  // Region, padding to 8, KV, padding to 8, index, trailer (CRC computed
  // when the header asks for it and fix_crc).
  Built Build() const;
};

// Entry fields for Built::field_at.
inline constexpr int kDescriptorOffsetField = 0, kDescriptorLengthField = 8,
                     kDataOffsetField = 12, kDataLengthField = 20,
                     kFlagsField = 28;

// Reads `file` with the forward reader (in one shot, in 7-byte and in 1-byte
// chunks) and with the random-access reader, and expects the same verdict
// from each: accepted when `rule` is kNone, else rejected by `rule` at
// `offset`. The random-access reader without verify_region gives the same
// verdict too, except that it accepts when `walk_only` (rules only the region
// walk can see).
void ExpectVerdict(absl::Span<const uint8_t> file, const FileOptions& options,
                   Rule rule, uint64_t offset = 0, bool walk_only = false);

inline void PatchU16(std::vector<uint8_t>* b, uint64_t at, uint16_t v) {
  wire::StoreU16(b->data() + at, v);
}
inline void PatchU32(std::vector<uint8_t>* b, uint64_t at, uint32_t v) {
  wire::StoreU32(b->data() + at, v);
}
inline void PatchU64(std::vector<uint8_t>* b, uint64_t at, uint64_t v) {
  wire::StoreU64(b->data() + at, v);
}

// Recomputes the trailer's index_crc32c after an edit of the index bytes.
void FixCrc(std::vector<uint8_t>* file);

}  // namespace hurray::stream::container::testing

#endif  // HURRAY_STREAM_CONTAINER_TESTING_FILE_TEST_UTIL_H_
