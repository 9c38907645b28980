#include "parser/element_type.h"

#include <array>

#include "parser/wire.h"

namespace hurray {
namespace {

using namespace type_tag;  // NOLINT: table below reads better with the names.

constexpr ElementTypeInfo kTypes[] = {
    {kFloat16, "float16", 16, 1, true, true},
    {kBFloat16, "bfloat16", 16, 1, true, true},
    {kFloat32, "float32", 32, 1, true, true},
    {kFloat64, "float64", 64, 1, true, true},
    {kInt8, "int8", 8, 1, false, true},
    {kUInt8, "uint8", 8, 1, false, false},
    {kInt16, "int16", 16, 1, false, true},
    {kUInt16, "uint16", 16, 1, false, false},
    {kInt32, "int32", 32, 1, false, true},
    {kUInt32, "uint32", 32, 1, false, false},
    {kInt64, "int64", 64, 1, false, true},
    {kUInt64, "uint64", 64, 1, false, false},
    {kBool, "bool", 1, 1, false, false},
    {kFloat8E4M3, "float8_e4m3", 8, 2, true, true},
    {kFloat8E5M2, "float8_e5m2", 8, 2, true, true},
    {kFloat8E8M0, "float8_e8m0", 8, 2, true, false},
    {kFloat4E2M1, "float4_e2m1", 4, 2, true, true},
    {kFloat6E2M3, "float6_e2m3", 6, 2, true, true},
    {kFloat6E3M2, "float6_e3m2", 6, 2, true, true},
    {kFloat128, "float128", 128, 2, true, true},
    {kInt4, "int4", 4, 2, false, true},
    {kUInt4, "uint4", 4, 2, false, false},
    {kInt2, "int2", 2, 2, false, true},
    {kUInt2, "uint2", 2, 2, false, false},
    {kComplex64, "complex64", 64, 2, true, true},
    {kComplex128, "complex128", 128, 2, true, true},
};

// Direct-indexed lookup built once at compile time.
constexpr std::array<int8_t, 256> BuildIndex() {
  std::array<int8_t, 256> index{};
  for (auto& v : index) v = -1;
  for (size_t i = 0; i < std::size(kTypes); ++i) {
    index[kTypes[i].tag] = static_cast<int8_t>(i);
  }
  return index;
}
constexpr std::array<int8_t, 256> kIndex = BuildIndex();

constexpr std::array<uint16_t, 256> BuildBits() {
  std::array<uint16_t, 256> bits{};
  for (const ElementTypeInfo& t : kTypes) bits[t.tag] = t.bits;
  return bits;
}

constexpr absl::string_view kHexNames[] = {
#define H(n) "ext:0x" #n
    H(F0), H(F1), H(F2), H(F3), H(F4), H(F5), H(F6), H(F7),
    H(F8), H(F9), H(FA), H(FB), H(FC), H(FD), H(FE),
#undef H
};

}  // namespace

namespace element_type_internal {
constexpr std::array<uint16_t, 256> kBitsByTag = BuildBits();
}  // namespace element_type_internal

TypeTagClass ClassifyTypeTag(uint8_t tag) {
  if (kIndex[tag] >= 0) return TypeTagClass::kAssigned;
  if (tag == 0x00 || tag == 0xFF) return TypeTagClass::kInvalid;
  if (tag >= 0x80 && tag <= 0xEF) return TypeTagClass::kReservedSpec;
  if (tag == 0x47) return TypeTagClass::kNeverValid;
  if (tag >= 0xF0) return TypeTagClass::kPrivate;
  return TypeTagClass::kUnassigned;
}

const ElementTypeInfo* FindElementType(uint8_t tag) {
  const int8_t i = kIndex[tag];
  return i < 0 ? nullptr : &kTypes[i];
}

absl::string_view ElementTypeName(uint8_t tag) {
  if (const ElementTypeInfo* info = FindElementType(tag)) return info->name;
  if (tag >= 0xF0 && tag <= 0xFE) return kHexNames[tag - 0xF0];
  return "unknown";
}

bool StorageBytes(uint8_t tag, uint64_t count, uint64_t* bytes) {
  const ElementTypeInfo* info = FindElementType(tag);
  return info != nullptr && StorageBytesOfBits(info->bits, count, bytes);
}

bool ExtensionStorageBytes(uint32_t bit_width, uint8_t packing_factor,
                           uint64_t count, uint64_t* bytes) {
  if (bit_width == 0) return false;
  if (bit_width < 8) {
    if (packing_factor == 0) return false;
    *bytes = count / packing_factor + (count % packing_factor != 0);
    return true;
  }
  if (bit_width % 8 != 0) return false;
  return wire::CheckedMul(count, bit_width / 8, bytes);
}

bool IntegerStorageRange(uint8_t tag, int64_t* min, int64_t* max) {
  switch (tag) {
    case kInt8:
      *min = -128;
      *max = 127;
      return true;
    case kUInt8:
      *min = 0;
      *max = 255;
      return true;
    case kInt16:
      *min = -32768;
      *max = 32767;
      return true;
    case kUInt16:
      *min = 0;
      *max = 65535;
      return true;
    case kInt32:
      *min = INT32_MIN;
      *max = INT32_MAX;
      return true;
    case kUInt32:
      *min = 0;
      *max = INT32_MAX;
      return true;
    case kInt4:
      *min = -8;
      *max = 7;
      return true;
    case kUInt4:
      *min = 0;
      *max = 15;
      return true;
    case kInt2:
      *min = -2;
      *max = 1;
      return true;
    case kUInt2:
      *min = 0;
      *max = 3;
      return true;
    default:
      return false;
  }
}

}  // namespace hurray
