// Exact decoding of the narrow float formats Hurray stores (element-types.md
// § Float8 Variants, § Sub-Byte Floating-Point Types) and of the f16/bf16
// scales of per-block affine, to float32.
//
// Every finite value of these formats is exactly representable in float32, so
// each decoder is exact. NaN conventions (RESOLUTIONS.md 4):
//   * float8_e4m3 (OCP OFP8): 0x7F / 0xFF are NaN; decoded as a quiet NaN
//     with the code's sign and no payload (0x7FC00000 | sign). No infinities.
//   * float8_e5m2 and float16 (IEEE style): NaNs are widened like a binary16
//     to binary32 conversion (F16C): quiet bit set, payload kept in the top
//     mantissa bits. Infinities map to infinities.
//   * bfloat16: the 16 bits become the top half of a float32, unchanged.
//   * float4_e2m1, float6_e2m3 (max 7.5), float6_e3m2 (bias 3): no NaN, no
//     infinity.
//   * float8_e8m0: 2^(e - 127) for e in [1, 254]; 0x00 and 0xFF are never
//     valid (QNT-MX-07, TYPE-PACK-05), so they have no value here.
#ifndef HURRAY_DEQUANT_MINIFLOAT_H_
#define HURRAY_DEQUANT_MINIFLOAT_H_

#include <cstdint>
#include <optional>

namespace hurray::dequant {

float F16ToF32(uint16_t bits);
float Bf16ToF32(uint16_t bits);

float Float8E4M3ToF32(uint8_t code);
float Float8E5M2ToF32(uint8_t code);
// Sub-byte codes: only the low 4 (e2m1) or 6 (e2m3, e3m2) bits are read.
float Float4E2M1ToF32(uint8_t code);
float Float6E2M3ToF32(uint8_t code);
float Float6E3M2ToF32(uint8_t code);

// 2^(code - 127), or nullopt for the reserved codes 0x00 and 0xFF.
std::optional<float> Float8E8M0ToF32(uint8_t code);

// The decoder of a minifloat storage type tag (0x40, 0x41, 0x43, 0x44, 0x45);
// nullptr for any other tag.
using MinifloatDecoder = float (*)(uint8_t code);
MinifloatDecoder MinifloatDecoderFor(uint8_t type_tag);

// The float32 bits of the quiet NaN float8_e4m3 codes decode to.
inline constexpr uint32_t kE4M3NanBits = 0x7FC00000u;

}  // namespace hurray::dequant

#endif  // HURRAY_DEQUANT_MINIFLOAT_H_
