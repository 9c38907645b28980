// KvBuilder: encodes a KV metadata section (file-format.md § KV Section
// Encoding, § KV Value Types) with values of every type, refusing what a
// reader would reject: empty, overlong or non-UTF-8 keys, duplicate keys,
// non-UTF-8 strings, lengths and counts past their fields.
#ifndef HURRAY_STREAM_CONTAINER_KV_BUILDER_H_
#define HURRAY_STREAM_CONTAINER_KV_BUILDER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "stream/container/file_kv.h"

namespace hurray::stream::container {

class KvBuilder {
 public:
  [[nodiscard]] absl::Status AddString(absl::string_view key,
                                       absl::string_view value);
  [[nodiscard]] absl::Status AddInt64(absl::string_view key, int64_t value);
  [[nodiscard]] absl::Status AddUInt64(absl::string_view key, uint64_t value);
  [[nodiscard]] absl::Status AddFloat64(absl::string_view key, double value);
  [[nodiscard]] absl::Status AddBool(absl::string_view key, bool value);
  [[nodiscard]] absl::Status AddBytes(absl::string_view key,
                                      absl::Span<const uint8_t> value);
  [[nodiscard]] absl::Status AddStringArray(
      absl::string_view key, absl::Span<const absl::string_view> values);
  [[nodiscard]] absl::Status AddInt64Array(absl::string_view key,
                                           absl::Span<const int64_t> values);
  [[nodiscard]] absl::Status AddUInt64Array(absl::string_view key,
                                            absl::Span<const uint64_t> values);
  [[nodiscard]] absl::Status AddFloat64Array(absl::string_view key,
                                             absl::Span<const double> values);
  [[nodiscard]] absl::Status AddBoolArray(absl::string_view key,
                                          absl::Span<const bool> values);
  [[nodiscard]] absl::Status AddBytesArray(
      absl::string_view key,
      absl::Span<const absl::Span<const uint8_t>> values);

  uint32_t count() const { return count_; }
  bool empty() const { return count_ == 0; }
  // Bytes Build() returns: what the section will take in a file.
  uint64_t encoded_size() const { return 4 + uint64_t{entries_.size()}; }
  // kv_count then the entries, in the order they were added.
  std::vector<uint8_t> Build() const;

 private:
  // Checks the key; on success writes it and the value tag.
  [[nodiscard]] absl::Status Begin(absl::string_view key, KvType type);
  void Put(absl::Span<const uint8_t> bytes);
  void PutU32(uint32_t v);
  void PutU64(uint64_t v);
  void PutBlob(absl::Span<const uint8_t> bytes);  // u32 length + bytes
  void PutArrayHeader(KvType element, size_t count);

  std::vector<uint8_t> entries_;
  uint32_t count_ = 0;
  absl::flat_hash_set<std::string> keys_;
};

}  // namespace hurray::stream::container

#endif  // HURRAY_STREAM_CONTAINER_KV_BUILDER_H_
