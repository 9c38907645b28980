// The dequantization rulings of shared/spec/RESOLUTIONS.md (1–7) and the
// spec's formulas on hand-computed values, for the scalar reference and for
// the SIMD Dequantizer alike.
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "dequant/dequantizer.h"
#include "dequant/scalar.h"
#include "dequant/testing/test_tensor.h"
#include "gtest/gtest.h"
#include "parser/element_type.h"

namespace hurray::dequant {
namespace {

using namespace type_tag;  // NOLINT
using testing::Bits;
using testing::MakeTensor;
using testing::SetCode;
using testing::SetScale16;
using testing::SetScaleByte;
using testing::SetScaleF32;
using testing::SetZeroPoint;
using testing::TensorSpec;
using testing::TestTensor;

using DequantFn = absl::Status (*)(const TensorDescriptor&,
                                   absl::Span<const uint8_t>,
                                   const ParameterBytes&, std::vector<float>*,
                                   const DequantOptions&, DequantWarnings*);

class RulingsTest : public ::testing::TestWithParam<DequantFn> {
 protected:
  std::vector<float> Run(const TestTensor& t, DequantWarnings* w = nullptr) {
    std::vector<float> out;
    const absl::Status s = GetParam()(*t.descriptor, t.data(), t.params(), &out,
                                      DequantOptions(), w);
    EXPECT_TRUE(s.ok()) << s;
    return out;
  }
  std::mt19937_64 rng_{7};
};

// RESOLUTIONS.md 1: q - zero_point exactly (64-bit), one rounding to
// float32, then one float32 product.
TEST_P(RulingsTest, AffineDifferenceIsExactIn64Bits) {
  TensorSpec spec;
  spec.scheme = Scheme::kPerChannelAffine;
  spec.storage_type = kInt32;
  spec.shape = {2};
  TestTensor t = MakeTensor(spec, rng_);
  SetCode(&t, 0, 0x7FFFFFFF);  // INT32_MAX
  SetZeroPoint(&t, 0, INT32_MIN);
  SetScaleF32(&t, 0, 1.0f);
  SetCode(&t, 1, 0x80000000u);  // INT32_MIN
  SetZeroPoint(&t, 1, INT32_MAX);
  SetScaleF32(&t, 1, 0.5f);
  const std::vector<float> out = Run(t);
  // 2^32 - 1 rounds to 2^32; an int32 difference would wrap to -1.
  EXPECT_EQ(out[0], 4294967296.0f);
  EXPECT_EQ(out[1], -2147483648.0f);  // (-2^32 + 1) → -2^32, times 0.5
}

TEST_P(RulingsTest, AffineRoundsTheDifferenceThenTheProduct) {
  TensorSpec spec;
  spec.scheme = Scheme::kPerChannelAffine;
  spec.storage_type = kUInt32;
  spec.shape = {1};
  TestTensor t = MakeTensor(spec, rng_);
  SetCode(&t, 0, 16777217);  // 2^24 + 1
  SetZeroPoint(&t, 0, 0);
  const float scale = 1.0f + std::ldexp(1.0f, -23);
  SetScaleF32(&t, 0, scale);
  // float(2^24 + 1) = 2^24, times (1 + 2^-23) = 2^24 + 2 exactly. A double
  // intermediate (or a fused product) would give 2^24 + 4.
  EXPECT_EQ(Run(t)[0], 16777218.0f);
  const double via_double = 16777217.0 * static_cast<double>(scale);
  EXPECT_EQ(static_cast<float>(via_double), 16777220.0f);
}

TEST_P(RulingsTest, PerTensorUsesInlineParameters) {
  TensorSpec spec;
  spec.scheme = Scheme::kPerTensorAffine;
  spec.storage_type = kInt8;
  spec.shape = {4};
  TestTensor t = MakeTensor(spec, rng_);
  t.descriptor->quantization = *PerTensorAffine::Create(0.25f, -3);
  SetCode(&t, 0, 0x80);  // -128
  SetCode(&t, 1, 0x7F);
  SetCode(&t, 2, 0xFD);  // -3
  SetCode(&t, 3, 0x00);
  const std::vector<float> out = Run(t);
  EXPECT_EQ(out, (std::vector<float>{-31.25f, 32.5f, 0.0f, 0.75f}));
}

// RESOLUTIONS.md 2: padding of a partial trailing block is skipped whatever
// it holds, and reported as a warning only.
TEST_P(RulingsTest, PaddingIsIgnoredAndReported) {
  TensorSpec spec;
  spec.scheme = Scheme::kPerBlockAffine;
  spec.storage_type = kUInt4;
  spec.shape = {2, 5};
  spec.axis = 1;
  spec.block_size = 4;  // stored grid [2, 8]; elements 5..7 of a row pad
  spec.symmetric = true;
  TestTensor t = MakeTensor(spec, rng_);
  for (uint64_t b = 0; b < 4; ++b) SetScaleF32(&t, b, 1.0f + b);
  for (uint64_t e = 0; e < 16; ++e) SetCode(&t, e, e % 8 < 5 ? e % 8 : 15);
  DequantWarnings w;
  const std::vector<float> out = Run(t, &w);
  EXPECT_EQ(out, (std::vector<float>{0, 1, 2, 3, 8, 0, 3, 6, 9, 16}));
  EXPECT_EQ(w.nonzero_padding, 6u);
  EXPECT_EQ(w.first_nonzero_padding, 5u);  // element index in the stored grid
}

// RESOLUTIONS.md 3: b = outer · ceil(S / K) + i_axis / K, outer over the
// other dimensions in row-major order.
TEST_P(RulingsTest, BlockIndexFollowsTheOuterPosition) {
  TensorSpec spec;
  spec.scheme = Scheme::kPerBlockAffine;
  spec.storage_type = kInt8;
  spec.shape = {3, 2, 3};
  spec.axis = 0;
  spec.block_size = 2;  // S = 3 → 2 blocks per axis, stored grid [4, 2, 3]
  spec.symmetric = true;
  TestTensor t = MakeTensor(spec, rng_);
  for (uint64_t b = 0; b < 12; ++b) SetScaleF32(&t, b, 1.0f + b);
  for (uint64_t e = 0; e < 24; ++e) SetCode(&t, e, 1);
  const std::vector<float> out = Run(t);
  ASSERT_EQ(out.size(), 18u);
  for (uint64_t i0 = 0; i0 < 3; ++i0) {
    for (uint64_t i1 = 0; i1 < 2; ++i1) {
      for (uint64_t i2 = 0; i2 < 3; ++i2) {
        const uint64_t outer = i1 * 3 + i2;
        const float want = 1.0f + static_cast<float>(outer * 2 + i0 / 2);
        EXPECT_EQ(out[(i0 * 2 + i1) * 3 + i2], want) << i0 << i1 << i2;
      }
    }
  }
}

// RESOLUTIONS.md 4: MXFP multiplies the exact minifloat by 2^(e-127); the
// only rounding is the float32 result, overflowing to infinity and keeping
// subnormals; NaN codes give NaN.
TEST_P(RulingsTest, MxfpScalingIsExactWithOneFinalRounding) {
  TensorSpec spec;
  spec.scheme = Scheme::kMxfp;
  spec.storage_type = kFloat8E4M3;
  spec.shape = {3, 32};
  spec.axis = 1;
  spec.block_size = 32;
  TestTensor t = MakeTensor(spec, rng_);
  SetScaleByte(&t, 0, 254);  // 2^127
  SetScaleByte(&t, 1, 1);    // 2^-126
  SetScaleByte(&t, 2, 127);  // 1
  SetCode(&t, 0, 0x7E);      // 448 · 2^127 → inf
  SetCode(&t, 1, 0xFE);      // -448 · 2^127 → -inf
  SetCode(&t, 2, 0x08);      // 2^-6 · 2^127
  SetCode(&t, 32, 0x01);     // 2^-9 · 2^-126 = 2^-135, subnormal
  SetCode(&t, 33, 0x80);     // -0
  SetCode(&t, 64, 0x7F);     // NaN
  SetCode(&t, 65, 0xFF);     // NaN
  const std::vector<float> out = Run(t);
  EXPECT_EQ(out[0], std::numeric_limits<float>::infinity());
  EXPECT_EQ(out[1], -std::numeric_limits<float>::infinity());
  EXPECT_EQ(out[2], std::ldexp(1.0f, 121));
  EXPECT_EQ(out[32], std::ldexp(1.0f, -135));
  EXPECT_NE(out[32], 0.0f);
  EXPECT_EQ(Bits(out[33]), 0x80000000u);
  EXPECT_TRUE(std::isnan(out[64]));
  EXPECT_TRUE(std::isnan(out[65]));
  EXPECT_TRUE(std::signbit(out[65]));
}

TEST_P(RulingsTest, MxfpSubByteFormatsUseOcpValues) {
  for (uint8_t type : {kFloat4E2M1, kFloat6E2M3, kFloat6E3M2}) {
    TensorSpec spec;
    spec.scheme = Scheme::kMxfp;
    spec.storage_type = type;
    spec.shape = {16};
    spec.block_size = 16;
    TestTensor t = MakeTensor(spec, rng_);
    SetScaleByte(&t, 0, 128);  // 2
    for (uint64_t e = 0; e < 16; ++e) SetCode(&t, e, 0);
    const uint32_t max_code = type == kFloat4E2M1 ? 0x7 : 0x1F;
    SetCode(&t, 0, max_code);
    SetCode(&t, 1, type == kFloat4E2M1 ? 0xF : 0x3F);
    const std::vector<float> out = Run(t);
    const float max = type == kFloat4E2M1   ? 6.0f
                      : type == kFloat6E2M3 ? 7.5f
                                            : 28.0f;
    EXPECT_EQ(out[0], 2 * max) << ElementTypeName(type);
    EXPECT_EQ(out[1], -2 * max) << ElementTypeName(type);
  }
}

// quantization/mxfp.md § Dequantization Formula: integer storage is
// s · int_value_of(q) (a per-block symmetric affine with a power-of-two
// scale), not OCP's fixed-point MXINT8 with its implicit 2^-6.
TEST_P(RulingsTest, MxfpIntegersUseTheirIntegerValue) {
  for (uint8_t type : {kInt8, kInt4}) {
    TensorSpec spec;
    spec.scheme = Scheme::kMxfp;
    spec.storage_type = type;
    spec.shape = {16};
    spec.block_size = 16;
    TestTensor t = MakeTensor(spec, rng_);
    SetScaleByte(&t, 0, 126);                    // 0.5
    SetCode(&t, 0, type == kInt8 ? 0x81 : 0x9);  // -127 / -7
    SetCode(&t, 1, type == kInt8 ? 0x40 : 0x7);  // 64 / 7
    const std::vector<float> out = Run(t);
    EXPECT_EQ(out[0], type == kInt8 ? -63.5f : -3.5f);
    EXPECT_EQ(out[1], type == kInt8 ? 32.0f : 3.5f);
  }
}

TEST_P(RulingsTest, Nf4UsesTheTableTimesAbsmax) {
  TensorSpec spec;
  spec.scheme = Scheme::kNf4;
  spec.storage_type = kUInt4;
  spec.shape = {16};
  spec.block_size = 16;
  TestTensor t = MakeTensor(spec, rng_);
  SetScaleF32(&t, 0, 2.0f);
  for (uint64_t e = 0; e < 16; ++e) SetCode(&t, e, static_cast<uint32_t>(e));
  const std::vector<float> out = Run(t);
  for (int c = 0; c < 16; ++c) EXPECT_EQ(out[c], kNf4Lut[c] * 2.0f) << c;
  EXPECT_EQ(out[6], -0.1821000725030899f);
}

// RESOLUTIONS.md 5: signed zero is significant.
TEST_P(RulingsTest, SignedZeroIsKept) {
  TensorSpec spec;
  spec.scheme = Scheme::kPerChannelAffine;
  spec.storage_type = kUInt8;
  spec.shape = {2};
  TestTensor t = MakeTensor(spec, rng_);
  SetCode(&t, 0, 9);
  SetZeroPoint(&t, 0, 9);
  SetScaleF32(&t, 0, -3.0f);  // (9 - 9) · -3 = -0
  SetCode(&t, 1, 9);
  SetZeroPoint(&t, 1, 9);
  SetScaleF32(&t, 1, 3.0f);
  const std::vector<float> out = Run(t);
  EXPECT_EQ(Bits(out[0]), 0x80000000u);
  EXPECT_EQ(Bits(out[1]), 0x00000000u);

  // NF4 absmax -0.0 counts as non-negative; 1.0 · -0.0 = -0.0.
  TensorSpec nf4;
  nf4.scheme = Scheme::kNf4;
  nf4.storage_type = kUInt4;
  nf4.shape = {8};
  nf4.block_size = 8;
  TestTensor n = MakeTensor(nf4, rng_);
  SetScaleF32(&n, 0, -0.0f);
  SetCode(&n, 0, 15);
  SetCode(&n, 1, 0);
  const std::vector<float> nout = Run(n);
  EXPECT_EQ(Bits(nout[0]), 0x80000000u);
  EXPECT_EQ(Bits(nout[1]), 0x00000000u);  // -1.0 · -0.0
}

// RESOLUTIONS.md 6: MXFP with an empty non-axis dimension has zero blocks.
TEST_P(RulingsTest, MxfpEmptyNonAxisDimension) {
  TensorSpec spec;
  spec.scheme = Scheme::kMxfp;
  spec.storage_type = kFloat8E5M2;
  spec.shape = {0, 32};
  spec.axis = 1;
  spec.block_size = 32;
  TestTensor t = MakeTensor(spec, rng_);
  EXPECT_TRUE(Run(t).empty());
}

// RESOLUTIONS.md 7: per-channel parameters are read and checked even when
// another dimension is 0.
TEST_P(RulingsTest, PerChannelParametersCheckedWithoutElements) {
  TensorSpec spec;
  spec.scheme = Scheme::kPerChannelAffine;
  spec.storage_type = kInt8;
  spec.shape = {0, 3};
  spec.axis = 1;
  TestTensor t = MakeTensor(spec, rng_);
  EXPECT_TRUE(Run(t).empty());
  SetScaleF32(&t, 2, 0.0f);
  std::vector<float> out;
  const absl::Status s = GetParam()(*t.descriptor, t.data(), t.params(), &out,
                                    DequantOptions(), nullptr);
  EXPECT_EQ(RuleIdOf(s), "QNT-PCA-10");
  EXPECT_EQ(OffsetOf(s), 2u);
}

TEST_P(RulingsTest, PerBlockHalfScalesWidenLosslessly) {
  TensorSpec spec;
  spec.scheme = Scheme::kPerBlockAffine;
  spec.storage_type = kInt8;
  spec.shape = {4};
  spec.block_size = 2;
  spec.scale_type = kFloat16;
  spec.symmetric = true;
  TestTensor t = MakeTensor(spec, rng_);
  SetScale16(&t, 0, 0x0001);  // 2^-24, an f16 subnormal
  SetScale16(&t, 1, 0xFBFF);  // -65504
  for (uint64_t e = 0; e < 4; ++e) SetCode(&t, e, 3);
  const std::vector<float> out = Run(t);
  EXPECT_EQ(out[0], 3 * std::ldexp(1.0f, -24));
  EXPECT_EQ(out[2], -196512.0f);

  spec.scale_type = kBFloat16;
  TestTensor b = MakeTensor(spec, rng_);
  SetScale16(&b, 0, 0x0001);                              // a float32 subnormal
  SetScale16(&b, 1, 0x3F80);                              // 1
  for (uint64_t e = 0; e < 4; ++e) SetCode(&b, e, 0xFF);  // -1
  const std::vector<float> bout = Run(b);
  EXPECT_EQ(Bits(bout[0]), 0x80010000u);
  EXPECT_EQ(bout[2], -1.0f);
}

TEST_P(RulingsTest, SubBytePackingIsLsbFirst) {
  // element-types.md examples: uint4 [5, 12, 3] = C5 03; uint2 [3, 1, 2] =
  // 0x27; 6-bit [1, 2, 4, 8] = 81 40 20.
  struct Case {
    uint8_t type;
    std::vector<uint8_t> bytes;
    std::vector<float> want;
  };
  const Case cases[] = {
      {kUInt4, {0xC5, 0x03}, {5, 12, 3}},
      {kUInt2, {0x27}, {3, 1, 2}},
      {kInt4, {0xC5, 0x03}, {5, -4, 3}},
      {kInt2, {0x27}, {-1, 1, -2}},
  };
  for (const Case& c : cases) {
    TensorSpec spec;
    spec.scheme = Scheme::kPerTensorAffine;
    spec.storage_type = c.type;
    spec.shape = {3};
    TestTensor t = MakeTensor(spec, rng_);
    t.descriptor->quantization = *PerTensorAffine::Create(1.0f, 0);
    t.buffers[0] = c.bytes;
    EXPECT_EQ(Run(t), c.want) << ElementTypeName(c.type);
  }
  TensorSpec spec;
  spec.scheme = Scheme::kMxfp;
  spec.storage_type = kFloat6E3M2;
  spec.shape = {16};
  spec.block_size = 16;
  TestTensor t = MakeTensor(spec, rng_);
  SetScaleByte(&t, 0, 127);
  t.buffers[0].assign(12, 0);
  t.buffers[0][0] = 0x81;
  t.buffers[0][1] = 0x40;
  t.buffers[0][2] = 0x20;
  const std::vector<float> out = Run(t);
  // e3m2 codes 1, 2, 4, 8: 1/16, 2/16, 0.25, 0.5.
  EXPECT_EQ(out[0], 0.0625f);
  EXPECT_EQ(out[1], 0.125f);
  EXPECT_EQ(out[2], 0.25f);
  EXPECT_EQ(out[3], 0.5f);
}

INSTANTIATE_TEST_SUITE_P(Implementations, RulingsTest,
                         ::testing::Values(&ReferenceDequantize,
                                           &DequantizeAll),
                         [](const ::testing::TestParamInfo<DequantFn>& info) {
                           return std::string(info.param == &ReferenceDequantize
                                                  ? "Reference"
                                                  : "Simd");
                         });

}  // namespace
}  // namespace hurray::dequant
