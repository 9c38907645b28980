// The index section of a .hrry file (file-format.md § Index Encoding):
// parsing with the FILE-IDX rules that the index bytes alone decide
// (FILE-IDX-01..07), and lookup by name — binary search when SORTED_INDEX is
// set, a hash map otherwise. Names are views into the index bytes, which must
// outlive the FileIndex.
#ifndef HURRAY_STREAM_CONTAINER_FILE_INDEX_H_
#define HURRAY_STREAM_CONTAINER_FILE_INDEX_H_

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "parser/rules.h"

namespace hurray::stream::container {

inline constexpr uint64_t kMinIndexEntrySize = 35;  // 34 + a 1-byte name

struct IndexEntry {
  absl::string_view name;
  uint64_t descriptor_offset = 0;
  uint32_t descriptor_length = 0;
  uint64_t data_offset = 0;
  uint64_t data_length = 0;
  uint32_t flags = 0;
  // Absolute file offset of the entry's name_length field.
  uint64_t at = 0;

  // Absolute offsets of the fields after the name.
  uint64_t name_at() const { return at + 2; }
  uint64_t descriptor_offset_at() const { return name_at() + name.size(); }
  uint64_t descriptor_length_at() const { return descriptor_offset_at() + 8; }
  uint64_t data_offset_at() const { return descriptor_offset_at() + 12; }
  uint64_t data_length_at() const { return descriptor_offset_at() + 20; }
  uint64_t flags_at() const { return descriptor_offset_at() + 28; }
};

class FileIndex {
 public:
  // Parses `bytes`, found at absolute offset `base`. The entry count is
  // checked against the bytes before anything is allocated.
  Rejection Parse(absl::Span<const uint8_t> bytes, uint64_t base, bool sorted,
                  Mode mode);

  absl::Span<const IndexEntry> entries() const { return entries_; }
  size_t size() const { return entries_.size(); }
  bool sorted() const { return sorted_; }
  // nullptr when no entry has that name.
  const IndexEntry* Find(absl::string_view name) const;

 private:
  std::vector<IndexEntry> entries_;
  absl::flat_hash_map<absl::string_view, uint32_t> by_name_;  // unsorted
  bool sorted_ = false;
};

// Encodes an index section (entries in the given order).
std::vector<uint8_t> EncodeIndex(absl::Span<const IndexEntry> entries);

}  // namespace hurray::stream::container

#endif  // HURRAY_STREAM_CONTAINER_FILE_INDEX_H_
