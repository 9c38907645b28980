// Reader of a GGUF file's header (ggml's docs/gguf.md, versions 2 and 3,
// little-endian): magic "GGUF", version, tensor and KV counts, the metadata
// KV pairs, the tensor infos (name, n_dims, ne[], ggml type, offset), then
// the data at the next multiple of general.alignment (default 32).
//
// The header is hostile input. Refused, with a message naming the tensor or
// key and the byte offset: truncation anywhere, counts and lengths above
// the limits or past the file (keys, tensor names and values spend one
// metadata budget: LIMIT-BUFFER-BYTES past it), unknown value types, nested
// arrays, keys and tensor names that are empty, too long, non-UTF-8 or
// duplicated, n_dims outside 1..4, dimensions above 2^63-1 or whose product
// overflows, ne[0] not a multiple of the type's block, unknown ggml types,
// offsets that are not aligned, past the file or overlapping another tensor, a
// general.alignment that is not a uint32 power of two.
#ifndef HURRAY_STREAM_CONVERT_GGUF_H_
#define HURRAY_STREAM_CONVERT_GGUF_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "stream/convert/byte_source.h"

namespace hurray::stream::convert {

struct GgufLimits {
  uint64_t max_tensors = uint64_t{1} << 20;
  uint64_t max_kv = uint64_t{1} << 20;
  // Metadata read: the bytes of every key, string and tensor name, 8 per
  // key and per value, 34 per tensor (its .hrry index entry). Past it the
  // file is refused (LIMIT-BUFFER-BYTES) as it is read, before more is
  // allocated. Convert() also holds it to the .hrry reader's
  // max_metadata_bytes (ConvertOptions::reader).
  uint64_t max_metadata_bytes = uint64_t{32} << 20;
  uint32_t max_alignment = uint32_t{1} << 20;
};

// GGUF metadata value types (gguf.md § gguf_metadata_value_type).
namespace gguf_type {
inline constexpr uint32_t kUInt8 = 0, kInt8 = 1, kUInt16 = 2, kInt16 = 3,
                          kUInt32 = 4, kInt32 = 5, kFloat32 = 6, kBool = 7,
                          kString = 8, kArray = 9, kUInt64 = 10, kInt64 = 11,
                          kFloat64 = 12;
}

// The bytes of one scalar of metadata `type` in the file (a string: its
// 8-byte length, the least it takes); 0 for a type that is not a scalar.
uint64_t GgufScalarBytes(uint32_t type);

// One KV pair. A scalar is an array of one value with is_array false. Only
// the vector of the value's kind is filled: unsigned types in `uints`,
// signed in `ints`, floats (float32 widened exactly) in `floats`, bools in
// `bools` (0/1; other bytes are refused), strings back to back in
// `string_bytes`, each ending at its `string_ends` entry (8 bytes per string
// besides its bytes: a vocabulary of many short strings stays compact).
struct GgufKv {
  std::string key;
  uint64_t offset = 0;  // where the pair starts in the file
  uint32_t type = 0;    // of the scalar, or of the array's elements
  bool is_array = false;
  std::vector<uint64_t> uints;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  std::vector<uint8_t> bools;
  std::string string_bytes;
  std::vector<uint64_t> string_ends;
  size_t string_count() const { return string_ends.size(); }
  absl::string_view string(size_t i) const {
    const uint64_t begin = i == 0 ? 0 : string_ends[i - 1];
    return absl::string_view(string_bytes)
        .substr(begin, string_ends[i] - begin);
  }
};

// ggml tensor types (ggml.h enum ggml_type) with their block geometry.
struct GgmlTypeInfo {
  uint32_t id;
  const char* name;
  uint32_t block;      // elements per block
  uint32_t type_size;  // bytes per block
};
// nullptr for an id this reader does not know.
const GgmlTypeInfo* FindGgmlType(uint32_t id);
namespace ggml_type {
inline constexpr uint32_t kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ4_1 = 3, kQ5_0 = 6,
                          kQ5_1 = 7, kQ8_0 = 8, kQ8_1 = 9, kQ2_K = 10,
                          kQ3_K = 11, kQ4_K = 12, kQ5_K = 13, kQ6_K = 14,
                          kI8 = 24, kI16 = 25, kI32 = 26, kI64 = 27, kF64 = 28,
                          kBF16 = 30, kMxfp4 = 39;
}

struct GgufTensor {
  std::string name;
  std::vector<uint64_t> ne;  // ggml order: ne[0] innermost
  uint32_t type = 0;         // ggml type id
  uint64_t elements = 0;
  uint64_t begin = 0;  // absolute file offset of the data
  uint64_t byte_size = 0;
};

struct GgufFile {
  uint32_t version = 0;
  uint32_t alignment = 32;
  uint64_t data_start = 0;
  std::vector<GgufKv> kv;           // in file order
  std::vector<GgufTensor> tensors;  // in data-offset order
};

inline constexpr uint8_t kGgufMagic[4] = {'G', 'G', 'U', 'F'};
bool LooksLikeGguf(absl::Span<const uint8_t> prefix);

// With `on_kv`, each KV pair is handed to it as it is read (its refusal
// stops the read) and not kept in GgufFile::kv: the pairs are never all in
// memory at once, and refusing a duplicate key is then on_kv's job (the
// reader keeps no set of the keys).
using GgufKvCallback = std::function<absl::Status(GgufKv& kv)>;
[[nodiscard]] absl::StatusOr<GgufFile> ReadGgufHeader(
    const ByteSource& source, const GgufLimits& limits = GgufLimits(),
    const GgufKvCallback& on_kv = nullptr);

}  // namespace hurray::stream::convert

#endif  // HURRAY_STREAM_CONVERT_GGUF_H_
