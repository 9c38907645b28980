// Element data checks (parser/element_checks.h): one test per rule
// TYPE-PACK-01…05 (REJECT-RULES.md §3.3). Each starts from a valid
// descriptor of tests/vectors.h and valid element bytes, breaks exactly one
// field (one unused slot, one element) and expects the rule id and the
// element offset; then the same verdict for every split of the bytes into
// two pieces and for 1-byte pieces, and the mode each rule has.
#include "parser/element_checks.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "parser/descriptor.h"
#include "parser/element_type.h"
#include "parser/quantization.h"
#include "parser/rules.h"
#include "parser/validator.h"
#include "tests/vectors.h"

namespace hurray {
namespace {

using Bytes = std::vector<uint8_t>;
using Desc = std::unique_ptr<TensorDescriptor>;
using namespace type_tag;  // NOLINT

std::string Describe(const Rejection& r) {
  if (r.ok()) return "OK";
  return absl::StrCat(RuleId(r.rule), " at ", OffsetUnitName(r.unit), " ",
                      r.offset);
}

std::string Rejects(absl::string_view id, uint64_t element) {
  return absl::StrCat(id, " at element ", element);
}

// The verdict for `data` fed whole, split at every point, and byte by byte;
// fails the test when they differ.
std::string Verdict(const TensorDescriptor& d, const Bytes& data, Mode mode) {
  const std::string whole = Describe(CheckElementData(d, data, mode));
  for (size_t cut = 0; cut <= data.size(); ++cut) {
    ElementDataChecker c(d, mode);
    const absl::Span<const uint8_t> all(data);
    (void)c.Feed(0, 0, all.first(cut));  // sticky: the last Feed tells
    (void)c.Feed(1, 0, all);             // another buffer: ignored
    EXPECT_EQ(Describe(c.Feed(0, cut, all.subspan(cut))), whole)
        << "cut at " << cut;
  }
  ElementDataChecker bytewise(d, mode);
  for (size_t i = 0; i < data.size(); ++i) {
    (void)bytewise.Feed(0, i, absl::Span<const uint8_t>(data).subspan(i, 1));
  }
  EXPECT_EQ(Describe(bytewise.rejection()), whole) << "1-byte pieces";
  return whole;
}

// `valid` passes in both modes; `broken` is rejected as `want` in strict
// mode and, for a strict-only rule, accepted in permissive mode.
void Check(const TensorDescriptor& d, const Bytes& valid, const Bytes& broken,
           absl::string_view id, uint64_t element) {
  ASSERT_TRUE(Validate(d).ok()) << Validate(d);
  ASSERT_EQ(valid.size(), d.buffers[0].byte_size);
  ASSERT_EQ(broken.size(), valid.size());
  ASSERT_NE(broken, valid) << "the case broke nothing";
  EXPECT_EQ(Verdict(d, valid, Mode::kStrict), "OK");
  EXPECT_EQ(Verdict(d, valid, Mode::kPermissive), "OK");
  EXPECT_EQ(Verdict(d, broken, Mode::kStrict), Rejects(id, element));
  const RuleInfo& info = GetRuleInfo(*RuleFromId(id));
  EXPECT_EQ(Verdict(d, broken, Mode::kPermissive),
            info.mode == RuleMode::kAlways ? Rejects(id, element) : "OK");
  // The status carries the rule id and the element offset.
  const absl::Status s = ToStatus(CheckElementData(d, broken));
  EXPECT_EQ(RuleIdOf(s), std::optional<absl::string_view>(id));
  EXPECT_EQ(OffsetOf(s), std::optional<uint64_t>(element));
  EXPECT_EQ(OffsetUnitOf(s), OffsetUnit::kElement);
}

// element-types.md § Boolean Type: [5] = {1, 0, 1, 1, 0} is 0x0D; bits 5–7
// are padding.
TEST(ElementChecksTest, TypePack01BoolPaddingBits) {
  const Desc d = vectors::Dense(kBool, {5});
  Check(*d, {0x0D}, {0x2D}, "TYPE-PACK-01", 5);
  Check(*d, {0x0D}, {0x8D}, "TYPE-PACK-01", 7);
  // 9 elements: the second byte holds element 8 and 7 unused bits.
  const Desc nine = vectors::Dense(kBool, {3, 3});
  Check(*nine, {0xFF, 0x01}, {0xFF, 0x03}, "TYPE-PACK-01", 9);
  // Column-major stores the same count of elements: same final byte.
  const Desc col = vectors::Dense(kBool, {3, 3}, layout_tag::kColumnMajor);
  Check(*col, {0xA5, 0x00}, {0xA5, 0x40}, "TYPE-PACK-01", 14);
}

// § 4-bit packing, § Sub-Byte Floating-Point Types: odd count, the high
// nibble of the last byte is padding.
TEST(ElementChecksTest, TypePack02HighNibbleOfLastByte) {
  for (uint8_t type : {kInt4, kUInt4, kFloat4E2M1}) {
    SCOPED_TRACE(ElementTypeName(type));
    const Desc d = vectors::Dense(type, {3});
    Check(*d, {0x21, 0x0F}, {0x21, 0x1F}, "TYPE-PACK-02", 3);
  }
  // A quantized int4 tensor (per-channel, 3 x 5 = 15 elements).
  const Desc q = vectors::PerChannelSymInt4();
  q->shape[0] = 3;
  q->buffers[0].byte_size = 8;
  Bytes valid(8, 0x77);
  valid[7] = 0x07;
  Bytes broken = valid;
  broken[7] = 0x87;
  Check(*q, valid, broken, "TYPE-PACK-02", 15);
}

// § 2-bit packing: the unused bit pairs of the last byte.
TEST(ElementChecksTest, TypePack03UnusedBitPairs) {
  const Desc d = vectors::Dense(kUInt2, {5});  // byte 1 holds element 4
  Check(*d, {0xE4, 0x03}, {0xE4, 0x13}, "TYPE-PACK-03", 6);
  const Desc i2 = vectors::Dense(kInt2, {2});
  Check(*i2, {0x0E}, {0x4E}, "TYPE-PACK-03", 3);
}

// § 6-bit packing: 5 elements fill one 3-byte group and one element of the
// second; bits 6–23 of that group (slots 5, 6, 7) are padding. Slot 5
// straddles bytes 3 and 4.
TEST(ElementChecksTest, TypePack04UnusedBitsOfLastGroup) {
  for (uint8_t type : {kFloat6E2M3, kFloat6E3M2}) {
    SCOPED_TRACE(ElementTypeName(type));
    const Desc d = vectors::Dense(type, {5});
    const Bytes valid = {0x41, 0x10, 0x04, 0x3F, 0x00, 0x00};
    Bytes slot5 = valid;
    slot5[3] = 0xBF;  // bit 7 of the group
    Check(*d, valid, slot5, "TYPE-PACK-04", 5);
    Bytes slot5_high = valid;
    slot5_high[4] = 0x08;  // bit 11 of the group, still slot 5
    Check(*d, valid, slot5_high, "TYPE-PACK-04", 5);
    Bytes slot7 = valid;
    slot7[5] = 0x80;  // bit 23
    Check(*d, valid, slot7, "TYPE-PACK-04", 7);
  }
}

// § Float8 Variants: 0x00 and 0xFF are reserved in a float8_e8m0 tensor;
// always, not only in strict mode.
TEST(ElementChecksTest, TypePack05ReservedE8m0Element) {
  const Desc d = vectors::Dense(kFloat8E8M0, {2, 3});
  const Bytes valid = {0x7F, 0x01, 0xFE, 0x80, 0x7F, 0x7E};
  for (uint8_t bad : {0x00, 0xFF}) {
    Bytes broken = valid;
    broken[4] = bad;
    Check(*d, valid, broken, "TYPE-PACK-05", 4);
  }
  // The first reserved element is reported.
  Bytes two = valid;
  two[5] = 0x00;
  two[2] = 0xFF;
  EXPECT_EQ(Verdict(*d, two, Mode::kStrict), Rejects("TYPE-PACK-05", 2));
}

// Elements start at byte_offset: bytes before it are not elements.
TEST(ElementChecksTest, ElementsStartAtByteOffset) {
  const Desc d = vectors::Dense(kFloat8E8M0, {3});
  d->byte_offset = 4;
  d->buffers[0].byte_size = 7;
  ASSERT_TRUE(Validate(*d).ok()) << Validate(*d);
  EXPECT_EQ(Verdict(*d, {0, 0xFF, 0, 0, 0x10, 0x20, 0x30}, Mode::kStrict),
            "OK");
  EXPECT_EQ(Verdict(*d, {0, 0, 0, 0, 0x10, 0xFF, 0x30}, Mode::kStrict),
            Rejects("TYPE-PACK-05", 1));
  const Desc b = vectors::Dense(kBool, {4});
  b->byte_offset = 2;
  b->buffers[0].byte_size = 3;
  ASSERT_TRUE(Validate(*b).ok()) << Validate(*b);
  EXPECT_EQ(Verdict(*b, {0xFF, 0xFF, 0x0F}, Mode::kStrict), "OK");
  EXPECT_EQ(Verdict(*b, {0x00, 0x00, 0x1F}, Mode::kStrict),
            Rejects("TYPE-PACK-01", 4));
}

// What the checker does not look at: whole groups (no unused slot), other
// types, layouts without a packed grid's final byte, dynamic shapes.
TEST(ElementChecksTest, InactiveWhereNoRuleApplies) {
  EXPECT_FALSE(ElementDataChecker(*vectors::Dense(kBool, {16})).active());
  EXPECT_FALSE(ElementDataChecker(*vectors::Dense(kUInt4, {4})).active());
  EXPECT_FALSE(ElementDataChecker(*vectors::Dense(kFloat6E2M3, {8})).active());
  EXPECT_FALSE(ElementDataChecker(*vectors::Dense(kFloat32, {3})).active());
  EXPECT_FALSE(ElementDataChecker(*vectors::Dense(kBool, {0})).active());
  EXPECT_FALSE(
      ElementDataChecker(*vectors::Dense(kBool, {kDynamicDim})).active());
  EXPECT_FALSE(ElementDataChecker(*vectors::Hilbert()).active());  // uint4
  EXPECT_FALSE(ElementDataChecker(*vectors::WithExtensionType()).active());
  // Strict-only rules are off in permissive mode; TYPE-PACK-05 is not.
  EXPECT_FALSE(
      ElementDataChecker(*vectors::Dense(kBool, {5}), Mode::kPermissive)
          .active());
  EXPECT_TRUE(
      ElementDataChecker(*vectors::Dense(kFloat8E8M0, {5}), Mode::kPermissive)
          .active());
  EXPECT_EQ(ElementDataChecker(*vectors::Dense(kInt2, {3})).rule(),
            Rule::kTypePack03);
}

// Per-block affine and NF4 store the quantization axis rounded up to whole
// blocks: the padded grid has no unused slot even when the logical count is
// odd (per-block-affine.md § Padding).
TEST(ElementChecksTest, PaddedQuantizationGridIsTheStoredGrid) {
  const Desc d = vectors::PerBlockAsymUInt4();  // uint4 [8, 100], K = 32
  d->shape[0] = 1;
  d->shape[1] = 33;  // 2 blocks: 64 stored elements, 32 bytes
  d->buffers[0].byte_size = 32;
  d->buffers[1].byte_size = 2 * 2;
  d->buffers[2].byte_size = 2 * 4;
  ASSERT_TRUE(Validate(*d).ok()) << Validate(*d);
  EXPECT_FALSE(ElementDataChecker(*d).active());
}

// A rejection sticks.
TEST(ElementChecksTest, RejectionIsSticky) {
  const Desc d = vectors::Dense(kFloat8E8M0, {4});
  ElementDataChecker c(*d);
  const Bytes bad = {0x01, 0x00};
  EXPECT_EQ(Describe(c.Feed(0, 0, bad)), Rejects("TYPE-PACK-05", 1));
  const Bytes good = {0x01, 0x01};
  EXPECT_EQ(Describe(c.Feed(0, 2, good)), Rejects("TYPE-PACK-05", 1));
  EXPECT_EQ(Describe(c.rejection()), Rejects("TYPE-PACK-05", 1));
}

}  // namespace
}  // namespace hurray
