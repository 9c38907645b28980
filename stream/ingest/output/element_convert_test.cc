#include "stream/ingest/output/element_convert.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "gtest/gtest.h"
#include "parser/element_type.h"
#include "parser/wire.h"

namespace hurray::stream::ingest {
namespace {

std::vector<float> AsFloats(const std::vector<uint8_t>& b) {
  std::vector<float> f(b.size() / 4);
  for (size_t i = 0; i < f.size(); ++i) f[i] = wire::LoadF32(&b[4 * i]);
  return f;
}

TEST(ElementConvert, HalfAndBfloatRoundToNearestEven) {
  EXPECT_EQ(DoubleToF16Bits(1.0), 0x3C00);
  EXPECT_EQ(DoubleToF16Bits(-2.0), 0xC000);
  EXPECT_EQ(DoubleToF16Bits(65504.0), 0x7BFF);
  EXPECT_EQ(DoubleToF16Bits(65520.0), 0x7C00);  // ties to even: overflow
  EXPECT_EQ(DoubleToF16Bits(1.0 + 1.0 / 2048), 0x3C00);      // tie, even
  EXPECT_EQ(DoubleToF16Bits(1.0 + 3.0 / 2048), 0x3C02);      // tie, up
  EXPECT_EQ(DoubleToF16Bits(std::ldexp(1.0, -24)), 0x0001);  // subnormal
  EXPECT_EQ(DoubleToF16Bits(std::ldexp(1.0, -25)), 0x0000);  // tie to 0
  EXPECT_EQ(DoubleToF16Bits(std::ldexp(1.5, -25)), 0x0001);
  EXPECT_EQ(DoubleToF16Bits(-0.0), 0x8000);
  EXPECT_EQ(DoubleToF16Bits(INFINITY), 0x7C00);
  EXPECT_EQ(DoubleToF16Bits(NAN) & 0x7E00, 0x7E00);
  EXPECT_EQ(DoubleToBf16Bits(1.0), 0x3F80);
  EXPECT_EQ(DoubleToBf16Bits(1.0 + 1.0 / 256), 0x3F80);  // tie, even
  EXPECT_EQ(DoubleToBf16Bits(1.0 + 3.0 / 256), 0x3F82);
  EXPECT_EQ(DoubleToBf16Bits(3.0e38), 0x7F62);
  EXPECT_EQ(DoubleToBf16Bits(1e39), 0x7F80);
}

// The bulk float32 path agrees with the double path on every upper half of
// the bits (every sign, exponent and leading mantissa) with low halves at and
// around the rounding ties of both formats, and on a random sample.
TEST(ElementConvert, Float32BitsToHalfAndBfloatAsFromDouble) {
  auto check = [](uint32_t b) {
    float f;
    std::memcpy(&f, &b, 4);
    ASSERT_EQ(F32BitsToF16Bits(b), DoubleToF16Bits(f)) << std::hex << b;
    ASSERT_EQ(F32BitsToBf16Bits(b), DoubleToBf16Bits(f)) << std::hex << b;
  };
  const uint32_t lows[] = {0,      1,      0xFFF,  0x1000, 0x1001, 0x2FFF,
                           0x3000, 0x7FFF, 0x8000, 0x8001, 0xFFFF};
  for (uint32_t hi = 0; hi < 0x10000; ++hi) {
    for (uint32_t lo : lows) check(hi << 16 | lo);
  }
  uint64_t x = 88172645463325252ull;  // xorshift
  for (int i = 0; i < 1000000; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    check(static_cast<uint32_t>(x));
  }
}

TEST(ElementConvert, Float32ToHalfInBulkAcrossPieces) {
  const float in[] = {1.0f, -2.5f, 65504.0f, 1e-7f, NAN, -INFINITY, 0.1f};
  std::vector<uint8_t> bytes(sizeof(in));
  for (size_t i = 0; i < 7; ++i) wire::StoreF32(&bytes[4 * i], in[i]);
  for (uint8_t tag : {type_tag::kFloat16, type_tag::kBFloat16}) {
    OutputType t;
    t.tag = tag;
    ElementConverter c(type_tag::kFloat32, t, 7);
    std::vector<uint8_t> out;
    c.Feed(absl::MakeConstSpan(bytes).first(6), &out);  // 1.5 elements
    c.Feed(absl::MakeConstSpan(bytes).subspan(6), &out);
    ASSERT_EQ(out.size(), 14u);
    EXPECT_EQ(c.done(), 7u);
    for (size_t i = 0; i < 7; ++i) {
      EXPECT_EQ(wire::LoadU16(&out[2 * i]), tag == type_tag::kFloat16
                                                ? DoubleToF16Bits(in[i])
                                                : DoubleToBf16Bits(in[i]))
          << i;
    }
  }
}

// Discard counts what Feed would have converted, across pieces cut
// anywhere (sub-byte groups, 6-bit groups of 3 bytes, wide types), and
// stops at the element count.
TEST(ElementConvert, DiscardCountsAsFeedDoes) {
  struct Case {
    uint8_t type;
    uint64_t in_97_bytes;  // elements 97 bytes hold
  };
  const Case cases[] = {{type_tag::kFloat32, 24},
                        {type_tag::kInt4, 194},
                        {type_tag::kFloat6E3M2, 128},
                        {type_tag::kInt16, 48},
                        {type_tag::kBool, 776}};
  for (const auto [type, in_97_bytes] : cases) {
    for (uint64_t count : {uint64_t{0}, uint64_t{1}, uint64_t{37}}) {
      const std::vector<uint8_t> bytes(97, 0x11);
      OutputType t;
      t.tag = type_tag::kFloat32;
      ElementConverter fed(type, t, count), discarded(type, t, count);
      std::vector<uint8_t> out;
      for (size_t at = 0; at < bytes.size(); at += 5) {
        const auto piece = absl::MakeConstSpan(bytes).subspan(at, 5);
        fed.Feed(piece, &out);
        discarded.Discard(piece);
        ASSERT_EQ(discarded.done(), fed.done())
            << int{type} << " " << count << " " << at;
      }
      EXPECT_EQ(discarded.done(), std::min(count, in_97_bytes));
    }
  }
}

TEST(ElementConvert, Float128) {
  uint8_t q[16] = {};
  // 1.5: exponent 16383, fraction top bit set.
  q[15] = 0x3F;
  q[14] = 0xFF;
  q[13] = 0x80;
  EXPECT_EQ(Float128ToDouble(q), 1.5);
  q[15] |= 0x80;
  EXPECT_EQ(Float128ToDouble(q), -1.5);
}

TEST(ElementConvert, ChoosesTheTypeTheFormatHas) {
  using F = OutputFormat;
  using D = OutputDtype;
  auto tag = [](uint8_t src, bool q, F f, D d) {
    return ChooseOutput(src, q, f, d)->tag;
  };
  EXPECT_EQ(tag(type_tag::kFloat16, false, F::kNpy, D::kAuto),
            type_tag::kFloat16);
  EXPECT_EQ(tag(type_tag::kBFloat16, false, F::kNpy, D::kAuto),
            type_tag::kFloat32);
  EXPECT_EQ(tag(type_tag::kBFloat16, false, F::kSafetensors, D::kAuto),
            type_tag::kBFloat16);
  EXPECT_EQ(tag(type_tag::kInt32, false, F::kNpy, D::kAuto), type_tag::kInt32);
  EXPECT_EQ(tag(type_tag::kInt4, false, F::kNpy, D::kAuto), type_tag::kFloat32);
  EXPECT_EQ(tag(type_tag::kInt8, true, F::kNpy, D::kAuto), type_tag::kFloat32);
  EXPECT_EQ(tag(type_tag::kInt8, true, F::kNpy, D::kFloat16),
            type_tag::kFloat16);
  EXPECT_EQ(tag(type_tag::kInt32, false, F::kF32, D::kAuto),
            type_tag::kFloat32);
  EXPECT_EQ(tag(type_tag::kFloat8E4M3, false, F::kSafetensors, D::kAuto),
            type_tag::kFloat8E4M3);
  EXPECT_EQ(tag(type_tag::kFloat128, false, F::kNpy, D::kAuto),
            type_tag::kFloat64);
  const OutputType c =
      *ChooseOutput(type_tag::kComplex64, false, F::kNpy, D::kAuto);
  EXPECT_EQ(c.npy_descr(), "<c8");
  EXPECT_FALSE(c.pairs);
  EXPECT_TRUE(
      ChooseOutput(type_tag::kComplex64, false, F::kF32, D::kAuto)->pairs);
  EXPECT_FALSE(ChooseOutput(0xF3, false, F::kNpy, D::kAuto).ok());
  EXPECT_FALSE(CheckFormatAndDtype(F::kNpy, D::kBFloat16).ok());
  EXPECT_FALSE(CheckFormatAndDtype(F::kF32, D::kFloat16).ok());
  EXPECT_TRUE(CheckFormatAndDtype(F::kSafetensors, D::kBFloat16).ok());
}

TEST(ElementConvert, SubByteIntegersAcrossPieces) {
  OutputType f32{type_tag::kFloat32, false};
  // int4: 0x7, 0x8 (-8), 0xF (-1), 0x1, 0x2 (5 elements: 3 bytes).
  ElementConverter c(type_tag::kInt4, f32, 5);
  std::vector<uint8_t> out;
  const uint8_t bytes[] = {0x87, 0x1F, 0xE2};
  c.Feed(absl::MakeConstSpan(bytes, 1), &out);
  c.Feed(absl::MakeConstSpan(bytes + 1, 2), &out);
  EXPECT_EQ(AsFloats(out), (std::vector<float>{7, -8, -1, 1, 2}));
  EXPECT_EQ(c.done(), 5u);
}

TEST(ElementConvert, BoolAndFloat6) {
  ElementConverter b(type_tag::kBool, OutputType{type_tag::kBool, false}, 10);
  std::vector<uint8_t> out;
  const uint8_t bits[] = {0b10100101, 0b10};
  b.Feed(bits, &out);
  EXPECT_EQ(out, (std::vector<uint8_t>{1, 0, 1, 0, 0, 1, 0, 1, 0, 1}));
  // float6 e2m3, 4 codes in 3 bytes: 0x08 (1.0), 0x10 (2.0), 0x28 (-1.0),
  // 0x00.
  const uint32_t word = 0x08 | 0x10 << 6 | 0x28 << 12;
  const uint8_t f6[] = {static_cast<uint8_t>(word),
                        static_cast<uint8_t>(word >> 8),
                        static_cast<uint8_t>(word >> 16)};
  ElementConverter c(type_tag::kFloat6E2M3,
                     OutputType{type_tag::kFloat32, false}, 4);
  out.clear();
  c.Feed(absl::MakeConstSpan(f6, 2), &out);
  EXPECT_TRUE(out.empty());
  c.Feed(absl::MakeConstSpan(f6 + 2, 1), &out);
  EXPECT_EQ(AsFloats(out), (std::vector<float>{1, 2, -1, 0}));
}

TEST(ElementConvert, CopiesSameTypeAndSplitsComplex) {
  std::vector<uint8_t> in(12);
  for (int i = 0; i < 3; ++i) wire::StoreF32(&in[4 * i], 1.5f * i);
  ElementConverter same(type_tag::kFloat32,
                        OutputType{type_tag::kFloat32, false}, 3);
  std::vector<uint8_t> out;
  same.Feed(absl::MakeConstSpan(in).subspan(0, 5), &out);
  same.Feed(absl::MakeConstSpan(in).subspan(5), &out);
  EXPECT_EQ(out, in);
  // complex64 (re, im) pairs as float16.
  ElementConverter pairs(type_tag::kComplex64,
                         OutputType{type_tag::kFloat16, true}, 1);
  out.clear();
  pairs.Feed(absl::MakeConstSpan(in).subspan(4, 8), &out);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(wire::LoadU16(&out[0]), DoubleToF16Bits(1.5));
  EXPECT_EQ(wire::LoadU16(&out[2]), DoubleToF16Bits(3.0));
}

}  // namespace
}  // namespace hurray::stream::ingest
