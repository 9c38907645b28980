// Decoder API behaviour: round trips, state machine, status format, sizes.
#include "parser/decoder.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "parser/encoder.h"
#include "parser/quantization.h"
#include "tests/vectors.h"

namespace hurray {
namespace {

TEST(DecoderTest, EveryVectorRoundTrips) {
  for (const auto& v : vectors::AllValid()) {
    const std::vector<uint8_t> bytes = vectors::Bytes(*v.descriptor);
    absl::StatusOr<TensorDescriptor> d =
        Decode(bytes, vectors::AgreedOptions());
    ASSERT_TRUE(d.ok()) << v.name << ": " << d.status();
    EXPECT_TRUE(*d == *v.descriptor) << v.name;
    EXPECT_EQ(d->descriptor_length, bytes.size()) << v.name;
    absl::StatusOr<std::vector<uint8_t>> again = Encode(*d);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(*again, bytes) << v.name;
  }
}

TEST(DecoderTest, OffsetsMatchTheEncoder) {
  const auto d = vectors::Everything();
  const std::vector<uint8_t> bytes = vectors::Bytes(*d);
  absl::StatusOr<TensorDescriptor> got = Decode(bytes);
  ASSERT_TRUE(got.ok()) << got.status();
  absl::StatusOr<PartOffsets> want = ComputeOffsets(*d);
  ASSERT_TRUE(want.ok());
  EXPECT_EQ(got->offsets.layout, want->layout);
  EXPECT_EQ(got->offsets.buffer_table, want->buffer_table);
  EXPECT_EQ(got->offsets.quantization, want->quantization);
  EXPECT_EQ(got->offsets.shard, want->shard);
  EXPECT_EQ(got->offsets.statistics, want->statistics);
  EXPECT_EQ(got->offsets.composite_member, want->composite_member);
  EXPECT_EQ(got->offsets.end, want->end);
}

TEST(DecoderTest, EmptyInputIsTruncation) {
  DescriptorDecoder dec;
  EXPECT_FALSE(dec.in_progress());
  EXPECT_EQ(dec.Finish(), DecodeState::kRejected);
  EXPECT_EQ(RuleId(dec.rejection().rule), "DESC-HDR-01");
  EXPECT_EQ(dec.rejection().offset, 0u);
}

// An empty vector has a null data(): nothing may be copied from it.
TEST(DecoderTest, EmptySpanWithNullData) {
  const std::vector<uint8_t> empty;
  absl::StatusOr<TensorDescriptor> d = Decode(empty);
  EXPECT_EQ(RuleIdOf(d.status()), "DESC-HDR-01");
  DescriptorDecoder dec;
  const std::vector<uint8_t> bytes = vectors::Bytes(*vectors::PerTensorInt8());
  EXPECT_EQ(dec.Feed(absl::MakeConstSpan(bytes).first(7)).consumed, 7u);
  const FeedResult r = dec.Feed(absl::Span<const uint8_t>());
  EXPECT_EQ(r.consumed, 0u);
  EXPECT_EQ(r.state, DecodeState::kNeedMore);
  EXPECT_EQ(dec.Feed(absl::MakeConstSpan(bytes).subspan(7)).state,
            DecodeState::kDone);
}

TEST(DecoderTest, StateMachine) {
  const std::vector<uint8_t> bytes = vectors::Bytes(*vectors::PerTensorInt8());
  DescriptorDecoder dec;
  FeedResult r = dec.Feed(absl::MakeConstSpan(bytes).first(3));
  EXPECT_EQ(r.state, DecodeState::kNeedMore);
  EXPECT_EQ(r.consumed, 3u);
  EXPECT_TRUE(dec.in_progress());
  EXPECT_EQ(dec.consumed(), 3u);
  r = dec.Feed(absl::MakeConstSpan(bytes).subspan(3));
  EXPECT_EQ(r.state, DecodeState::kDone);
  EXPECT_EQ(r.consumed, bytes.size() - 3);
  EXPECT_EQ(dec.Finish(), DecodeState::kDone);  // idempotent once done
  EXPECT_TRUE(dec.status().ok());
  dec.Reset();
  EXPECT_FALSE(dec.in_progress());
  EXPECT_EQ(dec.state(), DecodeState::kNeedMore);
}

// The fixed header is two field groups: the magic, then the other 16 bytes.
// Input that is not Hurray is refused after 4 bytes; a bad version or length
// is found once the header is complete, and input that ends first is
// truncation, whatever the chunking (decoder.h).
TEST(DecoderTest, FixedHeaderIsTwoFieldGroups) {
  const std::vector<uint8_t> valid = vectors::Bytes(*vectors::PerTensorInt8());
  std::vector<uint8_t> garbage = valid;
  garbage[0] = 'X';
  DescriptorDecoder dec;
  FeedResult r = dec.Feed(absl::MakeConstSpan(garbage).first(4));
  EXPECT_EQ(r.state, DecodeState::kRejected);
  EXPECT_EQ(r.consumed, 4u);
  EXPECT_EQ(RuleId(dec.rejection().rule), "DESC-HDR-02");

  std::vector<uint8_t> newer = valid;
  newer[4] = 2;  // version_major
  for (size_t given : {6, 10, 19, 20}) {
    for (size_t chunk : {size_t{1}, given}) {
      dec.Reset();
      for (size_t at = 0; at < given && dec.state() == DecodeState::kNeedMore;
           at += chunk) {
        r = dec.Feed(absl::MakeConstSpan(newer).subspan(at, chunk));
      }
      (void)dec.Finish();  // the verdict: dec.rejection() below
      const std::string how = std::to_string(given) + " bytes in chunks of " +
                              std::to_string(chunk);
      if (given < kFixedHeaderSize) {
        EXPECT_EQ(RuleId(dec.rejection().rule), "DESC-HDR-01") << how;
        EXPECT_EQ(dec.rejection().offset, given) << how;
      } else {
        EXPECT_EQ(RuleId(dec.rejection().rule), "DESC-HDR-03") << how;
        EXPECT_EQ(dec.rejection().offset, 4u) << how;
        EXPECT_EQ(dec.consumed(), kFixedHeaderSize) << how;
      }
    }
  }
}

// Rejected or done is final until Reset(), even when the input stopped in
// the middle of a field group the decoder was gathering.
TEST(DecoderTest, StoppedDecoderConsumesNothing) {
  const std::vector<uint8_t> bytes = vectors::Bytes(*vectors::PerTensorInt8());
  for (size_t given = 0; given <= bytes.size(); ++given) {
    for (size_t chunk : {size_t{1}, size_t{3}, bytes.size()}) {
      DescriptorDecoder dec;
      for (size_t at = 0; at < given && dec.state() == DecodeState::kNeedMore;
           at += chunk) {
        (void)dec.Feed(absl::MakeConstSpan(bytes).subspan(
            at, std::min(chunk, given - at)));
      }
      const DecodeState end = dec.Finish();
      const std::string how = std::to_string(given) + " bytes in chunks of " +
                              std::to_string(chunk);
      EXPECT_EQ(end, given == bytes.size() ? DecodeState::kDone
                                           : DecodeState::kRejected)
          << how;
      const uint64_t consumed = dec.consumed();
      for (size_t size : {size_t{1}, size_t{2}, bytes.size()}) {
        const FeedResult r = dec.Feed(absl::MakeConstSpan(bytes).first(size));
        EXPECT_EQ(r.consumed, 0u) << how << ", then " << size;
        EXPECT_EQ(r.state, end) << how << ", then " << size;
      }
      EXPECT_EQ(dec.consumed(), consumed) << how;
    }
  }
}

TEST(DecoderTest, RejectionStatusCarriesRuleAndOffset) {
  std::vector<uint8_t> bytes = vectors::Bytes(*vectors::PerTensorInt8());
  bytes[1] = 'X';  // magic
  absl::StatusOr<TensorDescriptor> d = Decode(bytes);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RuleIdOf(d.status()), "DESC-HDR-02");
  EXPECT_EQ(OffsetOf(d.status()), 0u);
  EXPECT_EQ(d.status().message().substr(0, 22), "DESC-HDR-02 at byte 0:");
  EXPECT_FALSE(RuleIdOf(absl::OkStatus()).has_value());
  EXPECT_FALSE(OffsetOf(absl::InternalError("x")).has_value());
  EXPECT_EQ(OffsetUnitOf(d.status()), OffsetUnit::kByte);
  EXPECT_EQ(OffsetUnitOf(absl::InternalError("x")), OffsetUnit::kByte);
}

// Data-level rejections count blocks, elements or parameter entries: the
// message and a payload say so; byte offsets carry no unit payload.
TEST(DecoderTest, RejectionOffsetUnits) {
  const absl::Status block =
      ToStatus(Rejection{Rule::kQntMx07, 3, "bad scale", OffsetUnit::kBlock});
  EXPECT_EQ(block.message(), "QNT-MX-07 at block 3: bad scale");
  EXPECT_EQ(OffsetOf(block), 3u);
  EXPECT_EQ(OffsetUnitOf(block), OffsetUnit::kBlock);
  const absl::Status entry =
      ToStatus(Rejection{Rule::kQntPca10, 2, "bad scale", OffsetUnit::kEntry});
  EXPECT_EQ(entry.message(), "QNT-PCA-10 at entry 2: bad scale");
  EXPECT_EQ(OffsetUnitOf(entry), OffsetUnit::kEntry);
  const absl::Status element = ToStatus(
      Rejection{Rule::kTypePack02, 9, "padding", OffsetUnit::kElement});
  EXPECT_EQ(element.message(), "TYPE-PACK-02 at element 9: padding");
  EXPECT_EQ(OffsetUnitOf(element), OffsetUnit::kElement);
  const absl::Status byte = ToStatus(Rejection{Rule::kDescHdr02, 0, "magic"});
  EXPECT_FALSE(byte.GetPayload(kOffsetUnitPayloadUrl).has_value());
  EXPECT_EQ(OffsetUnitName(OffsetUnit::kByte), "byte");
}

TEST(DecoderTest, RuleTableIsConsistent) {
  for (const RuleInfo& info : AllRules()) {
    EXPECT_EQ(&GetRuleInfo(info.rule), &info);
    EXPECT_EQ(RuleFromId(info.id), info.rule) << info.id;
    EXPECT_FALSE(info.spec_ref.empty()) << info.id;
  }
  EXPECT_FALSE(RuleFromId("NOPE-01").has_value());
}

// Pins the documented footprint (descriptor.h, decoder.h); a change here is
// a change of the API's memory promise, so update the docs with it.
TEST(DecoderTest, Footprint) {
  EXPECT_LE(sizeof(TensorDescriptor), 20u * 1024);
  EXPECT_LE(sizeof(DescriptorDecoder), sizeof(TensorDescriptor) + 512);
  std::printf(
      "sizeof(TensorDescriptor) = %zu, sizeof(DescriptorDecoder) = %zu\n",
      sizeof(TensorDescriptor), sizeof(DescriptorDecoder));
}

TEST(QuantizationTest, Nf4TableIsBitExact) {
  // quantization/nf4.md, as decimal float32 values.
  const char* const kSpec[16] = {"-1.0",
                                 "-0.6961928009986877",
                                 "-0.5250730514526367",
                                 "-0.39491748809814453",
                                 "-0.28444138169288635",
                                 "-0.18477343022823334",
                                 "-0.09105003625154495",
                                 "0.0",
                                 "0.07958029955625534",
                                 "0.16093020141124725",
                                 "0.24611230194568634",
                                 "0.33791524171829224",
                                 "0.44070982933044434",
                                 "0.5626170039176941",
                                 "0.7229568362236023",
                                 "1.0"};
  for (int i = 0; i < 16; ++i) {
    const float want = std::strtof(kSpec[i], nullptr);
    uint32_t a, b;
    std::memcpy(&a, &kNf4Lut[i], 4);
    std::memcpy(&b, &want, 4);
    EXPECT_EQ(a, b) << "code " << i;
  }
  EXPECT_EQ(kMxfpCanonicalBlockSize, 32u);
  EXPECT_EQ(kMinBufferAlignment, 64u);
}

// The decoder gathers a scheme's fixed part in kMaxSchemeFixedSize bytes.
TEST(QuantizationTest, MaxSchemeFixedSizeBoundsEveryScheme) {
  uint32_t largest = 0;
  for (int tag = 0; tag < 256; ++tag) {
    largest = std::max(largest, SchemeFixedSize(static_cast<uint8_t>(tag)));
  }
  EXPECT_EQ(largest, kMaxSchemeFixedSize);
}

TEST(QuantizationTest, EncodeDecodeEveryScheme) {
  const QuantizationDescriptor all[] = {
      *PerTensorAffine::Create(0.015625f, 128),
      *PerChannelAffine::Symmetric(0, 1),
      *PerChannelAffine::Asymmetric(1, 2, 3),
      *PerBlockAffine::Symmetric(0, 64, 1, 0x03),
      *PerBlockAffine::Asymmetric(1, 32, 2, 3, 0x01),
      *Nf4::Create(0, 64, 1),
      *Mxfp::Create(0, kMxfpCanonicalBlockSize, 1),
  };
  const size_t sizes[] = {16, 20, 20, 24, 24, 16, 16};
  for (size_t i = 0; i < std::size(all); ++i) {
    const QuantizationDescriptor& q = all[i];
    EXPECT_EQ(q.encoded_len(), sizes[i]);
    std::vector<uint8_t> bytes = q.EncodeToVector();
    ASSERT_EQ(bytes.size(), sizes[i]);
    bytes.push_back(0xAB);  // trailing bytes are ignored
    absl::StatusOr<DecodedQuantization> d = DecodeQuantization(bytes);
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_EQ(d->consumed, sizes[i]);
    EXPECT_TRUE(d->descriptor == q);
    uint8_t small[8];
    EXPECT_FALSE(q.EncodeInto(absl::MakeSpan(small)).ok());
  }
}

TEST(QuantizationTest, SeedWorkedExamplePerChannel) {
  // The 20 bytes of the per-channel worked example (seed 000).
  const uint8_t wire[] = {0x02, 0x01, 0x00, 0x00, 0, 0, 0, 0, 1, 0,
                          0,    0,    2,    0,    0, 0, 3, 0, 0, 0};
  absl::StatusOr<DecodedQuantization> d = DecodeQuantization(wire);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_TRUE(d->descriptor ==
              QuantizationDescriptor(*PerChannelAffine::Asymmetric(0, 1, 2)));
}

}  // namespace
}  // namespace hurray
