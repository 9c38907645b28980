// How one storage element is packed and what its code means, for the storage
// types the quantization schemes allow (quantization/*.md § Valid Storage
// Types, element-types.md § Sub-Byte Integer Types, § 6-bit packing).
#ifndef HURRAY_DEQUANT_CODEC_H_
#define HURRAY_DEQUANT_CODEC_H_

#include <cstdint>

namespace hurray::dequant {

// Integer codecs dequantize affinely (float(q - zero_point) · scale); the
// others map a code to a float (NF4 table, minifloat value) times a scale.
enum class Codec : uint8_t {
  kInt8,
  kUInt8,
  kInt16,
  kUInt16,
  kInt32,
  kUInt32,
  kInt4,
  kUInt4,
  kInt2,
  kUInt2,
  kNf4,  // uint4 codes indexing kNf4Lut
  kFloat8E4M3,
  kFloat8E5M2,
  kFloat4E2M1,
  kFloat6E2M3,
  kFloat6E3M2,
};

inline constexpr int kCodecCount = static_cast<int>(Codec::kFloat6E3M2) + 1;

// Elements are packed LSB-first into groups of whole bytes: a group of
// `group_bytes` bytes holds `group_elements` elements (1/1 for 8-bit types,
// 2/1 and 4/1 for 16- and 32-bit ones, 1/2 for 4-bit, 1/4 for 2-bit, 3/4 for
// 6-bit). Element i of a buffer occupies bits [i·bits, (i+1)·bits) of the
// little-endian bit stream.
struct Packing {
  uint8_t bits;
  uint8_t group_bytes;
  uint8_t group_elements;
};

constexpr Packing PackingOf(Codec c) {
  switch (c) {
    case Codec::kInt16:
    case Codec::kUInt16:
      return {16, 2, 1};
    case Codec::kInt32:
    case Codec::kUInt32:
      return {32, 4, 1};
    case Codec::kInt4:
    case Codec::kUInt4:
    case Codec::kNf4:
    case Codec::kFloat4E2M1:
      return {4, 1, 2};
    case Codec::kInt2:
    case Codec::kUInt2:
      return {2, 1, 4};
    case Codec::kFloat6E2M3:
    case Codec::kFloat6E3M2:
      return {6, 3, 4};
    default:
      return {8, 1, 1};
  }
}

constexpr bool IsIntegerCodec(Codec c) {
  return static_cast<int>(c) <= static_cast<int>(Codec::kUInt2);
}

// Value range of an integer codec.
constexpr int64_t MinValue(Codec c) {
  switch (c) {
    case Codec::kInt8:
      return -128;
    case Codec::kInt16:
      return -32768;
    case Codec::kInt32:
      return INT32_MIN;
    case Codec::kInt4:
      return -8;
    case Codec::kInt2:
      return -2;
    default:
      return 0;
  }
}
constexpr int64_t MaxValue(Codec c) {
  switch (c) {
    case Codec::kInt8:
      return 127;
    case Codec::kUInt8:
      return 255;
    case Codec::kInt16:
      return 32767;
    case Codec::kUInt16:
      return 65535;
    case Codec::kInt32:
      return INT32_MAX;
    case Codec::kUInt32:
      return UINT32_MAX;
    case Codec::kInt4:
      return 7;
    case Codec::kUInt4:
      return 15;
    case Codec::kInt2:
      return 1;
    case Codec::kUInt2:
      return 3;
    default:
      return 0;
  }
}

// The raw bits of element e of a packed stream starting at `src` (a
// little-endian value for 16- and 32-bit codecs), not sign-extended.
inline uint32_t ReadRawCode(const uint8_t* src, uint64_t e, Codec c) {
  switch (PackingOf(c).bits) {
    case 2:
      return (src[e >> 2] >> ((e & 3) * 2)) & 0x3u;
    case 4:
      return (src[e >> 1] >> ((e & 1) * 4)) & 0xFu;
    case 6: {
      const uint8_t* g = src + (e >> 2) * 3;
      const uint32_t w = g[0] | g[1] << 8 | g[2] << 16;
      return (w >> ((e & 3) * 6)) & 0x3Fu;
    }
    case 16: {
      const uint8_t* p = src + 2 * e;
      return p[0] | p[1] << 8;
    }
    case 32: {
      const uint8_t* p = src + 4 * e;
      return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
             static_cast<uint32_t>(p[2]) << 16 |
             static_cast<uint32_t>(p[3]) << 24;
    }
    default:
      return src[e];
  }
}

}  // namespace hurray::dequant

#endif  // HURRAY_DEQUANT_CODEC_H_
