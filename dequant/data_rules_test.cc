// One test per data-level rule the dequantizer enforces (REJECT-RULES.md
// §3.3, §3.12), in strict and permissive mode, for the streaming Dequantizer
// and the scalar reference. Offsets are indices into the named buffer.
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "dequant/dequantizer.h"
#include "dequant/scalar.h"
#include "dequant/testing/test_tensor.h"
#include "gtest/gtest.h"
#include "parser/element_checks.h"
#include "parser/element_type.h"
#include "parser/rules.h"

namespace hurray::dequant {
namespace {

using namespace type_tag;  // NOLINT
using testing::MakeTensor;
using testing::SetCode;
using testing::SetScale16;
using testing::SetScaleByte;
using testing::SetScaleF32;
using testing::SetZeroPoint;
using testing::TensorSpec;
using testing::TestTensor;

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

DequantOptions Options(Mode mode) {
  DequantOptions o;
  o.mode = mode;
  return o;
}

// Runs both implementations; expects the same status from each and returns
// it.
absl::Status Both(const TestTensor& t, Mode mode) {
  std::vector<float> a, b;
  const absl::Status simd =
      DequantizeAll(*t.descriptor, t.data(), t.params(), &a, Options(mode));
  const absl::Status ref = ReferenceDequantize(*t.descriptor, t.data(),
                                               t.params(), &b, Options(mode));
  EXPECT_EQ(simd.code(), ref.code()) << simd << " vs " << ref;
  EXPECT_EQ(RuleIdOf(simd), RuleIdOf(ref));
  EXPECT_EQ(OffsetOf(simd), OffsetOf(ref));
  return simd;
}

// Data-level offsets count parameter entries, blocks or elements, never
// bytes; the status says which (and its message reads "at block 5").
OffsetUnit UnitOfRule(absl::string_view rule) {
  if (rule == "QNT-PCA-10" || rule == "QNT-PCA-11") return OffsetUnit::kEntry;
  if (absl::StartsWith(rule, "TYPE-PACK")) return OffsetUnit::kElement;
  return OffsetUnit::kBlock;
}

void ExpectRule(const absl::Status& s, absl::string_view rule,
                uint64_t offset) {
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_EQ(RuleIdOf(s), std::optional<absl::string_view>(rule)) << s;
  EXPECT_EQ(OffsetOf(s), std::optional<uint64_t>(offset)) << s;
  const OffsetUnit unit = UnitOfRule(rule);
  EXPECT_EQ(OffsetUnitOf(s), unit) << s;
  EXPECT_TRUE(absl::StartsWith(
      s.message(),
      absl::StrCat(rule, " at ", OffsetUnitName(unit), " ", offset, ": ")))
      << s;
}

class DataRulesTest : public ::testing::Test {
 protected:
  TestTensor PerChannel(uint8_t type) {
    TensorSpec spec;
    spec.scheme = Scheme::kPerChannelAffine;
    spec.storage_type = type;
    spec.shape = {4, 6};
    spec.axis = 1;
    return MakeTensor(spec, rng_);
  }
  TestTensor PerBlock(uint8_t type, uint8_t scale_type) {
    TensorSpec spec;
    spec.scheme = Scheme::kPerBlockAffine;
    spec.storage_type = type;
    spec.shape = {4, 6};
    spec.axis = 1;
    spec.block_size = 4;  // 2 blocks per row, 8 blocks
    spec.scale_type = scale_type;
    return MakeTensor(spec, rng_);
  }
  std::mt19937_64 rng_{11};
};

TEST_F(DataRulesTest, QntPca10ScaleZeroNanOrInfinite) {
  for (float bad : {0.0f, -0.0f, kNan, kInf, -kInf}) {
    for (Mode mode : {Mode::kStrict, Mode::kPermissive}) {  // always
      TestTensor t = PerChannel(kInt8);
      SetScaleF32(&t, 4, bad);
      ExpectRule(Both(t, mode), "QNT-PCA-10", 4);
    }
  }
  TestTensor t = PerChannel(kInt8);
  SetScaleF32(&t, 0, -std::numeric_limits<float>::denorm_min());
  EXPECT_TRUE(Both(t, Mode::kStrict).ok());  // negative and subnormal: fine
}

TEST_F(DataRulesTest, QntPca11ZeroPointOutsideStorageRange) {
  struct Case {
    uint8_t type;
    int32_t bad;
    int32_t edge;  // in range
  };
  const Case cases[] = {{kInt4, 8, -8},          {kInt4, -9, 7},
                        {kUInt4, 16, 15},        {kUInt8, -1, 0},
                        {kUInt8, 256, 255},      {kInt2, 2, -2},
                        {kUInt2, 4, 3},          {kInt16, 32768, -32768},
                        {kUInt16, 65536, 65535}, {kUInt32, -1, INT32_MAX}};
  for (const Case& c : cases) {
    for (Mode mode : {Mode::kStrict, Mode::kPermissive}) {  // always
      TestTensor t = PerChannel(c.type);
      SetZeroPoint(&t, 5, c.bad);
      ExpectRule(Both(t, mode), "QNT-PCA-11", 5);
      SetZeroPoint(&t, 5, c.edge);
      EXPECT_TRUE(Both(t, mode).ok()) << ElementTypeName(c.type);
    }
  }
}

TEST_F(DataRulesTest, QntPba12ScaleZeroNanOrInfiniteAfterWidening) {
  for (uint16_t bad : {0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0x7C01}) {
    TestTensor t = PerBlock(kInt4, kFloat16);
    SetScale16(&t, 6, bad);
    ExpectRule(Both(t, Mode::kPermissive), "QNT-PBA-12", 6);
  }
  for (uint16_t bad : {0x0000, 0x8000, 0x7F80, 0xFF80, 0x7FC0, 0x7F81}) {
    TestTensor t = PerBlock(kUInt2, kBFloat16);
    SetScale16(&t, 7, bad);
    ExpectRule(Both(t, Mode::kStrict), "QNT-PBA-12", 7);
  }
  TestTensor t = PerBlock(kInt8, kFloat32);
  SetScaleF32(&t, 0, kNan);
  ExpectRule(Both(t, Mode::kStrict), "QNT-PBA-12", 0);
  SetScaleF32(&t, 0, std::numeric_limits<float>::denorm_min());
  EXPECT_TRUE(Both(t, Mode::kStrict).ok());
}

// Strict only (REJECT-RULES.md §4 item 28): permissive mode dequantizes with
// the zero point as stored, through the exact 64-bit path.
TEST_F(DataRulesTest, QntPba13ZeroPointOutsideRangeStrictOnly) {
  TestTensor t = PerBlock(kUInt4, kFloat32);
  SetZeroPoint(&t, 3, INT32_MIN);
  ExpectRule(Both(t, Mode::kStrict), "QNT-PBA-13", 3);
  ASSERT_TRUE(Both(t, Mode::kPermissive).ok());
  std::vector<float> a, b;
  ASSERT_TRUE(DequantizeAll(*t.descriptor, t.data(), t.params(), &a,
                            Options(Mode::kPermissive))
                  .ok());
  ASSERT_TRUE(ReferenceDequantize(*t.descriptor, t.data(), t.params(), &b,
                                  Options(Mode::kPermissive))
                  .ok());
  EXPECT_EQ(testing::FirstBitDifference(a, b), -1);
}

TEST_F(DataRulesTest, QntNf407AbsmaxNegativeNanOrInfinite) {
  TensorSpec spec;
  spec.scheme = Scheme::kNf4;
  spec.storage_type = kUInt4;
  spec.shape = {3, 20};
  spec.axis = 1;
  spec.block_size = 8;  // 3 blocks per row, 9 blocks
  for (float bad :
       {-1.0f, -std::numeric_limits<float>::denorm_min(), kNan, kInf, -kInf}) {
    for (Mode mode : {Mode::kStrict, Mode::kPermissive}) {
      TestTensor t = MakeTensor(spec, rng_);
      SetScaleF32(&t, 8, bad);
      ExpectRule(Both(t, mode), "QNT-NF4-07", 8);
    }
  }
  for (float good : {0.0f, -0.0f}) {  // zero allowed; -0.0 >= 0
    TestTensor t = MakeTensor(spec, rng_);
    SetScaleF32(&t, 8, good);
    EXPECT_TRUE(Both(t, Mode::kStrict).ok());
  }
}

TEST_F(DataRulesTest, QntMx07ScaleByteReserved) {
  TensorSpec spec;
  spec.scheme = Scheme::kMxfp;
  spec.storage_type = kFloat8E4M3;
  spec.shape = {2, 64};
  spec.axis = 1;
  spec.block_size = 16;  // 8 blocks
  for (uint8_t bad : {0x00, 0xFF}) {
    for (Mode mode : {Mode::kStrict, Mode::kPermissive}) {
      TestTensor t = MakeTensor(spec, rng_);
      SetScaleByte(&t, 5, bad);
      ExpectRule(Both(t, mode), "QNT-MX-07", 5);
    }
  }
  TestTensor t = MakeTensor(spec, rng_);
  SetScaleByte(&t, 5, 0x01);
  SetScaleByte(&t, 6, 0xFE);
  EXPECT_TRUE(Both(t, Mode::kStrict).ok());
}

TEST_F(DataRulesTest, FirstBadScaleIsReported) {
  TestTensor t = PerChannel(kInt8);
  SetScaleF32(&t, 3, 0.0f);
  SetScaleF32(&t, 1, kNan);
  SetZeroPoint(&t, 0, 1000);  // zero points are checked after every scale
  ExpectRule(Both(t, Mode::kStrict), "QNT-PCA-10", 1);
}

// Unused bits after the last element (element-types.md § 4-bit / 2-bit
// packing), strict only; the offset is the unused slot's element index.
TEST_F(DataRulesTest, TypePack02And03UnusedBitsNotZero) {
  struct Case {
    uint8_t type;
    uint64_t count;
    uint64_t slot;
    const char* rule;
  };
  const Case cases[] = {{kUInt4, 3, 3, "TYPE-PACK-02"},
                        {kInt4, 5, 5, "TYPE-PACK-02"},
                        {kUInt2, 5, 6, "TYPE-PACK-03"},
                        {kInt2, 1, 3, "TYPE-PACK-03"}};
  for (const Case& c : cases) {
    TensorSpec spec;
    spec.scheme = Scheme::kPerTensorAffine;
    spec.storage_type = c.type;
    spec.shape = {c.count};
    TestTensor t = MakeTensor(spec, rng_);
    EXPECT_TRUE(Both(t, Mode::kStrict).ok());
    EXPECT_TRUE(CheckElementData(*t.descriptor, t.data()).ok());
    SetCode(&t, c.slot, 1);
    ExpectRule(Both(t, Mode::kStrict), c.rule, c.slot);
    EXPECT_TRUE(Both(t, Mode::kPermissive).ok());
    // The element check a validate-only reader runs (parser/element_checks.h)
    // gives the dequantizer's rule and offset.
    ExpectRule(ToStatus(CheckElementData(*t.descriptor, t.data())), c.rule,
               c.slot);
  }
}

TEST_F(DataRulesTest, TypePackRejectionStopsTheStream) {
  TensorSpec spec;
  spec.scheme = Scheme::kPerChannelAffine;
  spec.storage_type = kUInt4;
  spec.shape = {7};
  TestTensor t = MakeTensor(spec, rng_);
  SetCode(&t, 7, 0xF);
  absl::StatusOr<Dequantizer> dq =
      Dequantizer::Create(*t.descriptor, t.params());
  ASSERT_TRUE(dq.ok());
  std::vector<float> out(8);
  size_t written = 0;
  // Bytes 0..2 hold elements 0..5; byte 3 holds element 6 and the unused slot.
  ASSERT_TRUE(
      dq->Consume(t.data().subspan(0, 3), absl::MakeSpan(out), &written).ok());
  EXPECT_EQ(written, 6u);
  const absl::Status s =
      dq->Consume(t.data().subspan(3), absl::MakeSpan(out), &written);
  ExpectRule(s, "TYPE-PACK-02", 7);
  EXPECT_EQ(written, 0u);
  ExpectRule(dq->Finish(), "TYPE-PACK-02", 7);
  ExpectRule(dq->Consume({}, absl::MakeSpan(out), &written), "TYPE-PACK-02", 7);
}

}  // namespace
}  // namespace hurray::dequant
