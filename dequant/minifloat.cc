#include "dequant/minifloat.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <optional>

#include "parser/element_type.h"

namespace hurray::dequant {
namespace {

// The value of a finite code of a binary format with `m` mantissa bits and
// exponent bias `bias`: subnormal when the exponent field is 0
// (man · 2^(1 - bias - m)), normal otherwise ((2^m + man) · 2^(exp - bias -
// m)). Both are small integers times a power of two, so ldexp is exact.
float FiniteValue(bool negative, uint32_t exp, uint32_t man, int m, int bias) {
  const float magnitude =
      exp == 0 ? std::ldexp(static_cast<float>(man), 1 - bias - m)
               : std::ldexp(static_cast<float>((1u << m) | man),
                            static_cast<int>(exp) - bias - m);
  return negative ? -magnitude : magnitude;
}

// An IEEE-style infinity or NaN: NaNs get the quiet bit and keep the top
// bits of their payload, as a hardware binary16 → binary32 widening does.
float InfOrNan(bool negative, uint32_t man, int m) {
  uint32_t bits = (negative ? 0x80000000u : 0u) | 0x7F800000u;
  if (man != 0) bits |= 0x00400000u | (man << (23 - m));
  return std::bit_cast<float>(bits);
}

}  // namespace

float F16ToF32(uint16_t bits) {
  const bool negative = (bits & 0x8000u) != 0;
  const uint32_t exp = (bits >> 10) & 0x1Fu;
  const uint32_t man = bits & 0x3FFu;
  if (exp == 0x1F) return InfOrNan(negative, man, 10);
  return FiniteValue(negative, exp, man, 10, 15);
}

float Bf16ToF32(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

float Float8E4M3ToF32(uint8_t code) {
  const bool negative = (code & 0x80u) != 0;
  // OCP OFP8 E4M3: S.1111.111 is NaN; every other code is finite (max 448).
  if ((code & 0x7Fu) == 0x7Fu) {
    return std::bit_cast<float>((negative ? 0x80000000u : 0u) | kE4M3NanBits);
  }
  return FiniteValue(negative, (code >> 3) & 0xFu, code & 0x7u, 3, 7);
}

float Float8E5M2ToF32(uint8_t code) {
  const bool negative = (code & 0x80u) != 0;
  const uint32_t exp = (code >> 2) & 0x1Fu;
  const uint32_t man = code & 0x3u;
  if (exp == 0x1F) return InfOrNan(negative, man, 2);
  return FiniteValue(negative, exp, man, 2, 15);
}

float Float4E2M1ToF32(uint8_t code) {
  return FiniteValue((code & 0x8u) != 0, (code >> 1) & 0x3u, code & 0x1u, 1, 1);
}

float Float6E2M3ToF32(uint8_t code) {
  return FiniteValue((code & 0x20u) != 0, (code >> 3) & 0x3u, code & 0x7u, 3,
                     1);
}

float Float6E3M2ToF32(uint8_t code) {
  return FiniteValue((code & 0x20u) != 0, (code >> 2) & 0x7u, code & 0x3u, 2,
                     3);
}

std::optional<float> Float8E8M0ToF32(uint8_t code) {
  if (code == 0x00 || code == 0xFF) return std::nullopt;
  // 2^(code - 127) is a normal float32 for every code in [1, 254]: its bits
  // are the code in the exponent field and a zero mantissa.
  return std::bit_cast<float>(static_cast<uint32_t>(code) << 23);
}

MinifloatDecoder MinifloatDecoderFor(uint8_t type_tag) {
  switch (type_tag) {
    case type_tag::kFloat8E4M3:
      return &Float8E4M3ToF32;
    case type_tag::kFloat8E5M2:
      return &Float8E5M2ToF32;
    case type_tag::kFloat4E2M1:
      return &Float4E2M1ToF32;
    case type_tag::kFloat6E2M3:
      return &Float6E2M3ToF32;
    case type_tag::kFloat6E3M2:
      return &Float6E3M2ToF32;
    default:
      return nullptr;
  }
}

}  // namespace hurray::dequant
