// The KV metadata section of a .hrry file (file-format.md § KV Metadata
// Section, § KV Value Types): parsing with FILE-KV-01..11, typed values as
// views into the section bytes (which must outlive the KvSection), and lookup
// by key.
#ifndef HURRAY_STREAM_CONTAINER_FILE_KV_H_
#define HURRAY_STREAM_CONTAINER_FILE_KV_H_

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "parser/rules.h"

namespace hurray::stream::container {

enum class KvType : uint8_t {
  kString = 0x01,
  kInt64 = 0x02,
  kUInt64 = 0x03,
  kFloat64 = 0x04,
  kBool = 0x05,
  kBytes = 0x06,
  kArray = 0x07,
};

struct KvValue {
  KvType type = KvType::kBool;
  int64_t i64 = 0;
  uint64_t u64 = 0;
  double f64 = 0;
  bool boolean = false;
  // kString, kBytes: the payload. kArray: the element payloads.
  absl::Span<const uint8_t> bytes;
  // kArray only.
  KvType element_type = KvType::kBool;
  uint32_t count = 0;

  absl::string_view str() const {
    return absl::string_view(reinterpret_cast<const char*>(bytes.data()),
                             bytes.size());
  }
  // The elements of an array (already validated by the parser).
  std::vector<KvValue> Elements() const;
};

struct KvEntry {
  absl::string_view key;
  KvValue value;
  uint64_t at = 0;  // absolute offset of key_length
};

class KvSection {
 public:
  // Parses `bytes`, found at absolute offset `base`.
  Rejection Parse(absl::Span<const uint8_t> bytes, uint64_t base, Mode mode);

  absl::Span<const KvEntry> entries() const { return entries_; }
  // nullptr when the key is absent.
  const KvEntry* Find(absl::string_view key) const;

 private:
  std::vector<KvEntry> entries_;
  absl::flat_hash_map<absl::string_view, uint32_t> by_key_;
};

}  // namespace hurray::stream::container

#endif  // HURRAY_STREAM_CONTAINER_FILE_KV_H_
