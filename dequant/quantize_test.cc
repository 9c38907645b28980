// The quantizers of dequant/quantize.h: parameter choice, rounding to the
// nearest code, ties, saturation and the zero-range corner.
#include "dequant/quantize.h"

#include <cmath>

#include "dequant/minifloat.h"
#include "gtest/gtest.h"
#include "parser/element_type.h"
#include "parser/quantization.h"

namespace hurray::dequant {
namespace {

TEST(Affine, SymmetricCoversTheRangeWithinHalfAStep) {
  const AffineParams p = ChooseAffine(-2.0f, 1.0f, -127, 127, true);
  EXPECT_EQ(p.zero_point, 0);
  EXPECT_FLOAT_EQ(p.scale, 2.0f / 127);
  for (float x = -2.0f; x <= 1.0f; x += 0.01f) {
    const int64_t q = QuantizeAffine(x, p, -127, 127);
    EXPECT_LE(std::fabs(DequantizeAffine(q, p) - x), p.scale / 2 * 1.0001f)
        << x;
  }
  EXPECT_EQ(QuantizeAffine(5.0f, p, -127, 127), 127);  // clamped
}

TEST(Affine, AsymmetricHasAnExactZero) {
  const AffineParams p = ChooseAffine(0.5f, 3.0f, 0, 15, false);
  EXPECT_GE(p.zero_point, 0);
  EXPECT_LE(p.zero_point, 15);
  EXPECT_EQ(DequantizeAffine(QuantizeAffine(0.0f, p, 0, 15), p), 0.0f);
  for (float x = 0.5f; x <= 3.0f; x += 0.01f) {
    const int64_t q = QuantizeAffine(x, p, 0, 15);
    EXPECT_LE(std::fabs(DequantizeAffine(q, p) - x), p.scale / 2 * 1.0001f);
  }
}

TEST(Affine, ZeroRangeGetsALegalScale) {
  for (bool sym : {true, false}) {
    const AffineParams p = ChooseAffine(0, 0, -8, 7, sym);
    EXPECT_EQ(p.scale, 1.0f);
    EXPECT_EQ(DequantizeAffine(QuantizeAffine(0, p, -8, 7), p), 0.0f);
  }
}

TEST(Nf4, NearestLevel) {
  for (uint8_t c = 0; c < 16; ++c) EXPECT_EQ(QuantizeNf4(kNf4Lut[c]), c);
  EXPECT_EQ(QuantizeNf4(0.01f), 7);
  EXPECT_EQ(QuantizeNf4(0.95f), 15);
  EXPECT_EQ(QuantizeNf4(-2.0f), 0);
}

TEST(Minifloat, EveryFiniteCodeIsAFixedPointAndTiesGoToTheSmaller) {
  for (uint8_t tag :
       {type_tag::kFloat4E2M1, type_tag::kFloat8E4M3, type_tag::kFloat8E5M2}) {
    MinifloatQuantizer q;
    ASSERT_TRUE(q.Init(tag));
    const int codes = tag == type_tag::kFloat4E2M1 ? 16 : 256;
    for (int c = 0; c < codes; ++c) {
      const float v = q.Value(static_cast<uint8_t>(c));
      if (!std::isfinite(v)) continue;
      EXPECT_EQ(q.Value(q.Quantize(v)), v) << int(tag) << " " << c;
    }
  }
  MinifloatQuantizer e2m1;
  ASSERT_TRUE(e2m1.Init(type_tag::kFloat4E2M1));
  EXPECT_EQ(e2m1.emax(), 2);
  EXPECT_EQ(e2m1.Value(e2m1.Quantize(2.5f)), 2.0f);  // tie → smaller
  EXPECT_EQ(e2m1.Value(e2m1.Quantize(-5.0f)), -4.0f);
  EXPECT_EQ(e2m1.Value(e2m1.Quantize(100.0f)), 6.0f);  // saturates
  EXPECT_EQ(e2m1.Value(e2m1.Quantize(0.2f)), 0.0f);
  MinifloatQuantizer e4m3;
  ASSERT_TRUE(e4m3.Init(type_tag::kFloat8E4M3));
  EXPECT_EQ(e4m3.emax(), 8);
  EXPECT_EQ(e4m3.Value(e4m3.Quantize(1e6f)), 448.0f);
}

TEST(Mxfp, SharedExponent) {
  EXPECT_EQ(MxfpScaleByte(6.0f, 2), 127);  // 6 = 1.5 · 2^2
  EXPECT_EQ(MxfpScaleByte(7.9f, 2), 127);
  EXPECT_EQ(MxfpScaleByte(8.0f, 2), 128);
  EXPECT_EQ(MxfpScaleByte(0.0f, 2), 127);
  EXPECT_EQ(MxfpScaleByte(1e-45f, 8), 1);  // clamped
  EXPECT_EQ(MxfpScale(128), 2.0f);
}

}  // namespace
}  // namespace hurray::dequant
