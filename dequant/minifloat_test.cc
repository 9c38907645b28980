// Every code of every narrow float format, against values computed here from
// the sign / exponent / mantissa fields in double precision (element-types.md,
// OCP MX v1.0 bit fields per RESOLUTIONS.md 4).
#include "dequant/minifloat.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>

#include "gtest/gtest.h"
#include "parser/element_type.h"

namespace hurray::dequant {
namespace {

uint32_t Bits(float f) {
  uint32_t b = 0;
  std::memcpy(&b, &f, 4);
  return b;
}

struct Format {
  const char* name;
  int exp_bits;
  int man_bits;
  int bias;
};

// The value of a finite code: (-1)^s · 2^(1-bias) · m/2^M when the exponent
// field is 0, (-1)^s · 2^(e-bias) · (1 + m/2^M) otherwise.
double Expected(const Format& f, uint32_t code) {
  const uint32_t m = code & ((1u << f.man_bits) - 1);
  const uint32_t e = (code >> f.man_bits) & ((1u << f.exp_bits) - 1);
  const bool negative = (code >> (f.man_bits + f.exp_bits)) & 1u;
  const double frac = static_cast<double>(m) / std::pow(2.0, f.man_bits);
  const double v =
      e == 0 ? std::pow(2.0, 1 - f.bias) * frac
             : std::pow(2.0, static_cast<int>(e) - f.bias) * (1.0 + frac);
  return negative ? -v : v;
}

// Compares bit patterns, so that -0.0 and +0.0 differ.
void ExpectFinite(const Format& f, uint32_t code, float actual) {
  const double want = Expected(f, code);
  ASSERT_EQ(static_cast<double>(static_cast<float>(want)), want)
      << "not exact in float32";
  EXPECT_EQ(Bits(actual), Bits(static_cast<float>(want)))
      << f.name << " code 0x" << std::hex << code << ": got " << actual
      << ", want " << want;
}

TEST(MinifloatTest, Float8E4M3EveryCode) {
  const Format f{"e4m3", 4, 3, 7};
  for (uint32_t c = 0; c < 256; ++c) {
    const float v = Float8E4M3ToF32(static_cast<uint8_t>(c));
    if ((c & 0x7F) == 0x7F) {  // OCP: S.1111.111 is NaN, no infinities
      EXPECT_TRUE(std::isnan(v));
      EXPECT_EQ(Bits(v), (c & 0x80 ? 0x80000000u : 0u) | 0x7FC00000u);
    } else {
      ExpectFinite(f, c, v);
    }
  }
  EXPECT_EQ(Float8E4M3ToF32(0x7E), 448.0f);
  EXPECT_EQ(Float8E4M3ToF32(0xFE), -448.0f);
  EXPECT_EQ(Float8E4M3ToF32(0x01), std::ldexp(1.0f, -9));
  EXPECT_EQ(Float8E4M3ToF32(0x78), 256.0f);  // would be inf in IEEE style
}

TEST(MinifloatTest, Float8E5M2EveryCode) {
  const Format f{"e5m2", 5, 2, 15};
  for (uint32_t c = 0; c < 256; ++c) {
    const float v = Float8E5M2ToF32(static_cast<uint8_t>(c));
    const uint32_t sign = c & 0x80 ? 0x80000000u : 0u;
    if ((c & 0x7C) == 0x7C) {
      const uint32_t m = c & 3;
      if (m == 0) {
        EXPECT_TRUE(std::isinf(v)) << c;
        EXPECT_EQ(std::signbit(v), sign != 0);
      } else {  // quiet NaN, payload in the top mantissa bits
        EXPECT_TRUE(std::isnan(v));
        EXPECT_EQ(Bits(v), sign | 0x7FC00000u | (m << 21)) << c;
      }
    } else {
      ExpectFinite(f, c, v);
    }
  }
  EXPECT_EQ(Float8E5M2ToF32(0x7B), 57344.0f);
  EXPECT_EQ(Float8E5M2ToF32(0x01), std::ldexp(1.0f, -16));
}

TEST(MinifloatTest, Float4E2M1EveryCode) {
  const Format f{"e2m1", 2, 1, 1};
  for (uint32_t c = 0; c < 16; ++c) {
    ExpectFinite(f, c, Float4E2M1ToF32(static_cast<uint8_t>(c)));
    // High bits of the byte are not part of the code.
    EXPECT_EQ(Bits(Float4E2M1ToF32(static_cast<uint8_t>(c | 0xF0))),
              Bits(Float4E2M1ToF32(static_cast<uint8_t>(c))));
  }
  // RESOLUTIONS.md 4: 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives.
  const float want[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
  for (int c = 0; c < 8; ++c) {
    EXPECT_EQ(Float4E2M1ToF32(static_cast<uint8_t>(c)), want[c]);
    EXPECT_EQ(Bits(Float4E2M1ToF32(static_cast<uint8_t>(c | 8))),
              Bits(-want[c]));
  }
}

TEST(MinifloatTest, Float6E2M3EveryCode) {
  const Format f{"e2m3", 2, 3, 1};
  for (uint32_t c = 0; c < 64; ++c) {
    ExpectFinite(f, c, Float6E2M3ToF32(static_cast<uint8_t>(c)));
  }
  // RESOLUTIONS.md 4: the maximum is 7.5 (the spec's 3.75 is a slip).
  EXPECT_EQ(Float6E2M3ToF32(0x1F), 7.5f);
  EXPECT_EQ(Float6E2M3ToF32(0x3F), -7.5f);
  EXPECT_EQ(Float6E2M3ToF32(0x01), 0.125f);
}

TEST(MinifloatTest, Float6E3M2EveryCode) {
  const Format f{"e3m2", 3, 2, 3};
  for (uint32_t c = 0; c < 64; ++c) {
    ExpectFinite(f, c, Float6E3M2ToF32(static_cast<uint8_t>(c)));
  }
  EXPECT_EQ(Float6E3M2ToF32(0x1F), 28.0f);    // bias 3
  EXPECT_EQ(Float6E3M2ToF32(0x01), 0.0625f);  // smallest subnormal
  EXPECT_EQ(Float6E3M2ToF32(0x04), 0.25f);    // smallest normal
}

TEST(MinifloatTest, Float8E8M0EveryCode) {
  EXPECT_FALSE(Float8E8M0ToF32(0x00).has_value());  // QNT-MX-07
  EXPECT_FALSE(Float8E8M0ToF32(0xFF).has_value());
  for (uint32_t c = 1; c < 255; ++c) {
    const std::optional<float> v = Float8E8M0ToF32(static_cast<uint8_t>(c));
    ASSERT_TRUE(v.has_value());
    EXPECT_EQ(static_cast<double>(*v), std::pow(2.0, static_cast<int>(c) - 127))
        << c;
  }
  EXPECT_EQ(*Float8E8M0ToF32(127), 1.0f);
  EXPECT_EQ(*Float8E8M0ToF32(1), std::ldexp(1.0f, -126));
  EXPECT_EQ(*Float8E8M0ToF32(254), std::ldexp(1.0f, 127));
}

TEST(MinifloatTest, F16EveryCode) {
  const Format f{"f16", 5, 10, 15};
  for (uint32_t c = 0; c < 65536; ++c) {
    const float v = F16ToF32(static_cast<uint16_t>(c));
    const uint32_t sign = c & 0x8000 ? 0x80000000u : 0u;
    if ((c & 0x7C00) == 0x7C00) {
      const uint32_t m = c & 0x3FF;
      if (m == 0) {
        EXPECT_EQ(Bits(v), sign | 0x7F800000u) << c;
      } else {  // quiet bit set, payload kept (as F16C does)
        EXPECT_EQ(Bits(v), sign | 0x7FC00000u | (m << 13)) << c;
      }
    } else {
      ExpectFinite(f, c, v);
    }
  }
  EXPECT_EQ(F16ToF32(0x0001), std::ldexp(1.0f, -24));  // subnormal
  EXPECT_EQ(F16ToF32(0x7BFF), 65504.0f);
  EXPECT_EQ(F16ToF32(0x3C00), 1.0f);
}

TEST(MinifloatTest, Bf16EveryCode) {
  const Format f{"bf16", 8, 7, 127};
  for (uint32_t c = 0; c < 65536; ++c) {
    const float v = Bf16ToF32(static_cast<uint16_t>(c));
    if ((c & 0x7F80) == 0x7F80) {  // infinities and NaNs keep every bit
      EXPECT_EQ(Bits(v), c << 16);
    } else {
      ExpectFinite(f, c, v);
    }
  }
}

TEST(MinifloatTest, DecoderForTypeTags) {
  using namespace type_tag;  // NOLINT
  EXPECT_EQ(MinifloatDecoderFor(kFloat8E4M3), &Float8E4M3ToF32);
  EXPECT_EQ(MinifloatDecoderFor(kFloat8E5M2), &Float8E5M2ToF32);
  EXPECT_EQ(MinifloatDecoderFor(kFloat4E2M1), &Float4E2M1ToF32);
  EXPECT_EQ(MinifloatDecoderFor(kFloat6E2M3), &Float6E2M3ToF32);
  EXPECT_EQ(MinifloatDecoderFor(kFloat6E3M2), &Float6E3M2ToF32);
  EXPECT_EQ(MinifloatDecoderFor(kInt8), nullptr);
  EXPECT_EQ(MinifloatDecoderFor(kFloat8E8M0), nullptr);
}

}  // namespace
}  // namespace hurray::dequant
