// The element type table (element-types.md § Type Properties Summary) and
// storage sizes for N elements of a type, overflow-checked.
#ifndef HURRAY_PARSER_ELEMENT_TYPE_H_
#define HURRAY_PARSER_ELEMENT_TYPE_H_

#include <array>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "parser/wire.h"

namespace hurray {

// Named tags, for readability at call sites.
namespace type_tag {
inline constexpr uint8_t kFloat16 = 0x01, kBFloat16 = 0x02, kFloat32 = 0x03,
                         kFloat64 = 0x04;
inline constexpr uint8_t kInt8 = 0x10, kUInt8 = 0x11, kInt16 = 0x12,
                         kUInt16 = 0x13, kInt32 = 0x14, kUInt32 = 0x15,
                         kInt64 = 0x16, kUInt64 = 0x17, kBool = 0x20;
inline constexpr uint8_t kFloat8E4M3 = 0x40, kFloat8E5M2 = 0x41,
                         kFloat8E8M0 = 0x42, kFloat4E2M1 = 0x43,
                         kFloat6E2M3 = 0x44, kFloat6E3M2 = 0x45,
                         kFloat128 = 0x46, kInt4 = 0x48, kUInt4 = 0x49,
                         kInt2 = 0x4A, kUInt2 = 0x4B, kComplex64 = 0x50,
                         kComplex128 = 0x51;
}  // namespace type_tag

enum class TypeTagClass : uint8_t {
  kAssigned,      // a type of the table below
  kInvalid,       // 0x00, 0xFF (TYPE-01)
  kReservedSpec,  // 0x80–0xEF (TYPE-02)
  kNeverValid,    // 0x47 (TYPE-03)
  kUnassigned,    // public, not assigned (TYPE-04)
  kPrivate,       // 0xF0–0xFE, described by the extension type section
};

struct ElementTypeInfo {
  uint8_t tag;
  absl::string_view name;
  uint16_t bits;  // 6 for the float6 types (packed 4 per 3 bytes)
  uint8_t tier;
  bool is_float;
  bool is_signed;
};

TypeTagClass ClassifyTypeTag(uint8_t tag);

// nullptr unless ClassifyTypeTag(tag) == kAssigned.
const ElementTypeInfo* FindElementType(uint8_t tag);

namespace element_type_internal {
// FindElementType(tag)->bits by tag, 0 for tags that are not assigned.
extern const std::array<uint16_t, 256> kBitsByTag;
}  // namespace element_type_internal

// FindElementType(tag)->bits, or 0 when the tag is not assigned; a table
// load, for the validator's size checks.
inline uint32_t AssignedTypeBits(uint8_t tag) {
  return element_type_internal::kBitsByTag[tag];
}

// "float32", "int4", ..., "ext:0xF3" for private tags, "unknown" otherwise.
absl::string_view ElementTypeName(uint8_t tag);

// Bytes needed to store `count` elements of an assigned type, following the
// packing rules of element-types.md (sub-byte LSB-first; 6-bit types use
// ceil(N/4)·3, REJECT-RULES.md §4 item 11). Returns false on overflow or for a
// tag that is not assigned.
bool StorageBytes(uint8_t tag, uint64_t count, uint64_t* bytes);

// The same for an element width of `bits` (1, 2, 4, 6 or a multiple of 8),
// for callers that already hold the type's ElementTypeInfo.
inline bool StorageBytesOfBits(uint32_t bits, uint64_t count, uint64_t* bytes) {
  switch (bits) {
    case 1:
      *bytes = count / 8 + (count % 8 != 0);
      return true;
    case 2:
      *bytes = count / 4 + (count % 4 != 0);
      return true;
    case 4:
      *bytes = count / 2 + (count % 2 != 0);
      return true;
    case 6:  // 4 elements in 3 bytes.
      return wire::CheckedMul(count / 4 + (count % 4 != 0), 3, bytes);
    default:
      return wire::CheckedMul(count, bits / 8, bytes);
  }
}

// Same for an extension type (metadata.md § Extension Type Section):
// ceil(N / packing_factor) below 8 bits, N·bit_width/8 otherwise.
bool ExtensionStorageBytes(uint32_t bit_width, uint8_t packing_factor,
                           uint64_t count, uint64_t* bytes);

// The value range of an integer storage type used by the affine schemes,
// as int64. uint32 is limited to 0…2^31−1 because zero points are int32
// (quantization/per-tensor-affine.md § Validity Constraints).
bool IntegerStorageRange(uint8_t tag, int64_t* min, int64_t* max);

}  // namespace hurray

#endif  // HURRAY_PARSER_ELEMENT_TYPE_H_
