// QNN per-axis import (seed 004): values, storage choice, zero-point
// convention and the exclude-zero mapping, checked by dequantizing the
// imported tensor with the Hurray formula x = scale · (q − zero_point).
#include "dequant/qnn_import.h"

#include <cstdint>
#include <limits>
#include <vector>

#include "gtest/gtest.h"
#include "parser/element_type.h"
#include "parser/quantization.h"
#include "parser/validator.h"
#include "parser/wire.h"

namespace hurray::qnn {
namespace {

// Storage value i of a packed buffer (test-side, written independently of
// the importer: sub-byte values LSB-first, then sign extension).
int64_t StoredValue(const ImportedTensor& t, uint64_t i) {
  const ElementTypeInfo& info = *FindElementType(t.descriptor->type_tag);
  uint64_t raw = 0;
  if (info.bits < 8) {
    const uint64_t bit = i * info.bits;
    raw = (t.data[bit / 8] >> (bit % 8)) & ((1u << info.bits) - 1);
  } else {
    for (uint32_t b = 0; b < info.bits / 8; ++b) {
      raw |= uint64_t{t.data[i * (info.bits / 8) + b]} << (8 * b);
    }
  }
  if (info.is_signed && (raw >> (info.bits - 1)) & 1) {
    raw |= ~((uint64_t{1} << info.bits) - 1);
  }
  return static_cast<int64_t>(raw);
}

// Hurray's per-channel dequantization of element i in channel c.
float Dequantize(const ImportedTensor& t, uint64_t i, uint64_t c) {
  const float scale = wire::LoadF32(t.scales.data() + 4 * c);
  const int64_t zp =
      t.zero_points.empty() ? 0 : wire::LoadI32(t.zero_points.data() + 4 * c);
  return static_cast<float>(StoredValue(t, i) - zp) * scale;
}

void ExpectValid(const ImportedTensor& t) {
  EXPECT_TRUE(Validate(*t.descriptor).ok()) << Validate(*t.descriptor);
  EXPECT_EQ(t.descriptor->buffers[0].byte_size, t.data.size());
}

TEST(QnnImportTest, FourBitValuesInEightBitContainers) {
  // The seed: −3 as 0b11111101 or 0b00001101 in a signed 8-bit container
  // with bitwidth 4 — the high bits are ignored, both mean −3.
  PerAxisEncoding e;
  e.bitwidth = 4;
  e.axis = 0;
  e.scales = {0.5f};
  const std::vector<uint64_t> shape = {1, 3};
  const std::vector<uint8_t> values = {0xFD, 0x0D, 0x07};
  absl::StatusOr<ImportedTensor> t = ImportPerAxis(e, shape, {8, true}, values);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->descriptor->type_tag, type_tag::kInt4);  // narrowest
  EXPECT_EQ(StoredValue(*t, 0), -3);
  EXPECT_EQ(StoredValue(*t, 1), -3);
  EXPECT_EQ(StoredValue(*t, 2), 7);
  EXPECT_EQ(t->data, (std::vector<uint8_t>{0xDD, 0x07}));  // zero padding
  EXPECT_TRUE(t->descriptor->quantization.symmetric());
  EXPECT_TRUE(t->zero_points.empty());
  EXPECT_EQ(Dequantize(*t, 0, 0), -1.5f);
  ExpectValid(*t);
}

TEST(QnnImportTest, OffsetBecomesNegatedZeroPoint) {
  // QNN: x = scale · (q + offset); Hurray: x = scale · (q − zero_point).
  PerAxisEncoding e;
  e.bitwidth = 8;
  e.axis = 1;
  e.scales = {0.25f, 2.0f};
  e.offsets = {-128, -3};
  const std::vector<uint64_t> shape = {2, 2};
  const std::vector<uint8_t> values = {0, 200, 128, 3};
  absl::StatusOr<ImportedTensor> t =
      ImportPerAxis(e, shape, {8, false}, values);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->descriptor->type_tag, type_tag::kUInt8);
  EXPECT_FALSE(t->descriptor->quantization.symmetric());
  for (uint64_t i = 0; i < 4; ++i) {
    const uint64_t c = i % 2;
    const float qnn =
        e.scales[c] * static_cast<float>(values[i] + e.offsets[c]);
    EXPECT_EQ(Dequantize(*t, i, c), qnn) << i;
  }
  ExpectValid(*t);
}

TEST(QnnImportTest, ExcludeZeroMappingBecomesOddCodesWithHalfScale) {
  // bitwidth 2, signed {−2, −1, 0, 1} ↦ {−1.5, −0.5, 0.5, 1.5} · scale.
  PerAxisEncoding e;
  e.bitwidth = 2;
  e.axis = 0;
  e.mapping = Mapping::kLinearSymmetricExcludeZero;
  e.scales = {0.5f};
  const std::vector<uint64_t> shape = {1, 4};
  const std::vector<uint8_t> values = {0xFE, 0xFF, 0x00, 0x01};
  absl::StatusOr<ImportedTensor> t = ImportPerAxis(e, shape, {8, true}, values);
  ASSERT_TRUE(t.ok()) << t.status();
  // Codes 2q + 1 ∈ {−3, −1, 1, 3} need 3 bits: int4 storage.
  EXPECT_EQ(t->descriptor->type_tag, type_tag::kInt4);
  const float want[] = {-1.5f * 0.5f, -0.5f * 0.5f, 0.5f * 0.5f, 1.5f * 0.5f};
  for (uint64_t i = 0; i < 4; ++i) {
    EXPECT_EQ(Dequantize(*t, i, 0), want[i]) << i;
  }
  ExpectValid(*t);
}

TEST(QnnImportTest, WideContainersKeepTheirWidth) {
  PerAxisEncoding e;
  e.bitwidth = 12;
  e.axis = 0;
  e.scales = {1.0f, 1.0f};
  e.offsets = {0, -2048};
  const std::vector<uint64_t> shape = {2};
  const std::vector<uint8_t> values = {0xFF, 0xFF, 0x00, 0x08};  // 4095, 2048
  absl::StatusOr<ImportedTensor> t =
      ImportPerAxis(e, shape, {16, false}, values);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->descriptor->type_tag, type_tag::kUInt16);
  EXPECT_EQ(StoredValue(*t, 0), 4095);
  EXPECT_EQ(Dequantize(*t, 1, 1), 0.0f);
  ExpectValid(*t);
}

TEST(QnnImportTest, RejectsWhatCannotBeRepresented) {
  const std::vector<uint64_t> shape = {1, 2};
  const std::vector<uint8_t> values = {1, 2};
  auto import = [&](PerAxisEncoding e, Container c = {8, false}) {
    return ImportPerAxis(e, shape, c, values).status();
  };
  PerAxisEncoding ok;
  ok.bitwidth = 8;
  ok.scales = {1.0f};
  ASSERT_TRUE(import(ok).ok());

  PerAxisEncoding e = ok;
  e.scales = {0.0f};
  EXPECT_FALSE(import(e).ok()) << "zero scale";
  e.scales = {-1.0f};
  EXPECT_FALSE(import(e).ok()) << "negative scale";
  e.scales = {std::numeric_limits<float>::infinity()};
  EXPECT_FALSE(import(e).ok()) << "infinite scale";
  e = ok;
  e.offsets = {5};  // zero point −5 is outside uint8
  EXPECT_FALSE(import(e).ok());
  e.offsets = {-256};  // zero point 256 is outside uint8
  EXPECT_FALSE(import(e).ok());
  e = ok;
  e.bitwidth = 0;
  EXPECT_FALSE(import(e).ok());
  e.bitwidth = 9;  // wider than the container
  EXPECT_FALSE(import(e).ok());
  e = ok;
  e.axis = 2;
  EXPECT_FALSE(import(e).ok());
  e.axis = -1;
  EXPECT_FALSE(import(e).ok());
  e = ok;
  e.scales = {1.0f, 1.0f};  // shape[0] is 1
  EXPECT_FALSE(import(e).ok());
  e = ok;
  e.mapping = Mapping::kLinearSymmetricExcludeZero;
  EXPECT_FALSE(import(e).ok()) << "exclude-zero needs signed values";
  e.bitwidth = 2;
  e.offsets = {1};
  EXPECT_FALSE(import(e, {8, true}).ok()) << "exclude-zero with offsets";
  EXPECT_FALSE(
      ImportPerAxis(ok, shape, {8, false}, std::vector<uint8_t>{1}).ok())
      << "value count";
}

// Exclude-zero codes 2q + 1 take one bit more than q: a 32-bit QNN value has
// no Hurray storage type (found by qnn_import_fuzz: the code wrapped around).
TEST(QnnImportTest, ExcludeZeroNeedsOneBitMoreThanTheWidestStorage) {
  const std::vector<uint64_t> shape = {1, 2};
  const std::vector<uint8_t> values = {0x55, 0xA5, 0xA5, 0xA5,  // -1515870811
                                       1,    0,    0,    0};
  PerAxisEncoding e;
  e.mapping = Mapping::kLinearSymmetricExcludeZero;
  e.scales = {1.0f};
  e.bitwidth = 32;
  const absl::Status s = ImportPerAxis(e, shape, {32, true}, values).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  e.bitwidth = 31;  // 32-bit codes fit int32
  EXPECT_TRUE(ImportPerAxis(e, shape, {32, true}, values).ok());
}

}  // namespace
}  // namespace hurray::qnn
