// Reader of a safetensors header (https://github.com/huggingface/safetensors,
// "Format"): an 8-byte little-endian header length N, N bytes of JSON, then
// the data. The JSON maps each tensor name to {"dtype", "shape",
// "data_offsets": [begin, end]} (offsets relative to byte 8 + N) and may hold
// "__metadata__": {string: string}.
//
// The header is hostile input. Refused, each with a message naming the
// tensor (or the field): N past the file or above the limit, JSON that does
// not parse (byte offset given), non-UTF-8 text, duplicate keys, nesting
// deeper than the format needs, unknown fields, unknown dtypes, shapes
// that are not arrays of integers in 0..2^63-1 or whose byte size
// overflows, offsets that are not integers, run backwards, past the data,
// disagree with the shape's byte size or overlap another tensor.
// Holes between tensors are allowed (never read).
#ifndef HURRAY_STREAM_CONVERT_SAFETENSORS_H_
#define HURRAY_STREAM_CONVERT_SAFETENSORS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "stream/convert/byte_source.h"

namespace hurray::stream::convert {

struct SafetensorsLimits {
  // The JSON header is held in memory and parsed whole; this bounds it.
  uint64_t max_header_bytes = uint64_t{8} << 20;
};

struct SafetensorsTensor {
  std::string name;
  std::string dtype;     // as written ("F32", ...)
  uint8_t type_tag = 0;  // the Hurray element type
  std::vector<uint64_t> shape;
  uint64_t elements = 0;
  uint64_t begin = 0;  // absolute file offsets of the data
  uint64_t end = 0;
};

struct SafetensorsFile {
  uint64_t data_start = 0;                 // 8 + N
  std::vector<SafetensorsTensor> tensors;  // in data-offset order
  std::vector<std::pair<std::string, std::string>> metadata;  // as written
};

// True when `prefix` (the first bytes of a file) looks like safetensors: at
// least 9 bytes, and byte 8 is '{'.
bool LooksLikeSafetensors(absl::Span<const uint8_t> prefix);

[[nodiscard]] absl::StatusOr<SafetensorsFile> ReadSafetensorsHeader(
    const ByteSource& source,
    const SafetensorsLimits& limits = SafetensorsLimits());

// The Hurray element type of a safetensors dtype and the bytes per element
// in safetensors; false for a dtype this converter does not take.
bool SafetensorsDtype(const std::string& dtype, uint8_t* type_tag,
                      uint32_t* source_bytes);

}  // namespace hurray::stream::convert

#endif  // HURRAY_STREAM_CONVERT_SAFETENSORS_H_
