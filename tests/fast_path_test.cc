// The decoder's whole-descriptor fast path (parser/fast_path.h, issue 18):
// taken for the common shapes, never for split input or other shapes, and
// indistinguishable from the general path (ParseOptions::fast_path off) on
// every valid vector and every single-byte mutation of one. The random side
// of this is fuzz/fast_path_fuzz.cc.
#include "parser/fast_path.h"

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "parser/decoder.h"
#include "parser/element_type.h"
#include "parser/validator.h"
#include "tests/mutations.h"
#include "tests/vectors.h"

namespace hurray {
namespace {

ParseOptions Options(bool fast, Mode mode = Mode::kStrict) {
  ParseOptions o = vectors::AgreedOptions(mode);
  o.fast_path = fast;
  return o;
}

struct Both {
  std::unique_ptr<DescriptorDecoder> fast, general;
};

// Decodes `bytes` one-shot with the fast path on and off and expects the same
// outcome: state, bytes consumed, descriptor and offsets or rule and offset.
Both ExpectSame(const std::vector<uint8_t>& bytes, Mode mode,
                const std::string& what) {
  Both b{std::make_unique<DescriptorDecoder>(Options(true, mode)),
         std::make_unique<DescriptorDecoder>(Options(false, mode))};
  const Rejection rf = DecodeWith(bytes, b.fast.get());
  const Rejection rg = DecodeWith(bytes, b.general.get());
  EXPECT_EQ(b.fast->state(), b.general->state()) << what;
  EXPECT_EQ(b.fast->consumed(), b.general->consumed()) << what;
  EXPECT_FALSE(b.general->fast_path_taken()) << what;
  if (rg.ok()) {
    EXPECT_TRUE(rf.ok()) << what;
    const TensorDescriptor& x = b.fast->descriptor();
    const TensorDescriptor& y = b.general->descriptor();
    EXPECT_TRUE(x == y) << what;
    EXPECT_EQ(x.offsets.layout, y.offsets.layout) << what;
    EXPECT_EQ(x.offsets.buffer_table, y.offsets.buffer_table) << what;
    EXPECT_EQ(x.offsets.quantization, y.offsets.quantization) << what;
    EXPECT_EQ(x.offsets.end, y.offsets.end) << what;
    EXPECT_EQ(x.descriptor_length, y.descriptor_length) << what;
  } else {
    EXPECT_EQ(RuleId(rf.rule), RuleId(rg.rule)) << what;
    EXPECT_EQ(rf.offset, rg.offset) << what;
    EXPECT_FALSE(b.fast->fast_path_taken()) << what;
  }
  return b;
}

// The vectors of the fast shapes: row- or column-major, rank ≤ 8, every
// dimension static, no section but quantization.
const std::set<std::string> kFastShapes = {"dense_f32_3x4",
                                           "dense_scalar_f64",
                                           "dense_empty_f32_0x4",
                                           "column_major_bf16_5x3",
                                           "dense_bool_13",
                                           "dense_fp6_e2m3_7",
                                           "dense_int2_3x3",
                                           "dense_complex128_2",
                                           "per_tensor_int8",
                                           "per_channel_asym_int8",
                                           "per_channel_sym_int4",
                                           "per_channel_shared_uint8",
                                           "per_block_asym_uint4",
                                           "per_block_sym_int8_bf16",
                                           "nf4_uint4",
                                           "mxfp_e4m3",
                                           "mxfp_fp4"};

TEST(FastPathTest, TakenExactlyForTheCommonShapes) {
  for (const vectors::Named& v : vectors::AllValid()) {
    const std::vector<uint8_t> bytes = vectors::Bytes(*v.descriptor);
    for (Mode mode : {Mode::kStrict, Mode::kPermissive}) {
      Both b = ExpectSame(bytes, mode, v.name);
      EXPECT_EQ(b.fast->state(), DecodeState::kDone) << v.name;
      EXPECT_EQ(b.fast->fast_path_taken(), kFastShapes.count(v.name) == 1)
          << v.name;
      // The accept-only validator agrees on every valid vector it knows.
      EXPECT_EQ(FastAccepts(b.general->descriptor(), Options(true, mode)),
                kFastShapes.count(v.name) == 1)
          << v.name;
    }
  }
}

TEST(FastPathTest, SplitInputTakesTheStateMachine) {
  const std::vector<uint8_t> bytes =
      vectors::Bytes(*vectors::PerBlockAsymUInt4());
  for (size_t split = 1; split < bytes.size(); ++split) {
    DescriptorDecoder d(Options(true));
    FeedResult r = d.Feed(absl::MakeConstSpan(bytes.data(), split));
    ASSERT_EQ(r.state, DecodeState::kNeedMore);
    r = d.Feed(absl::MakeConstSpan(bytes).subspan(split));
    ASSERT_EQ(r.state, DecodeState::kDone) << split;
    EXPECT_FALSE(d.fast_path_taken()) << split;
  }
  // A chunk that holds a whole descriptor and more: fast, and nothing past
  // the descriptor is consumed.
  std::vector<uint8_t> two = bytes;
  two.insert(two.end(), bytes.begin(), bytes.end());
  DescriptorDecoder d(Options(true));
  const FeedResult r = d.Feed(two);
  EXPECT_EQ(r.state, DecodeState::kDone);
  EXPECT_EQ(r.consumed, bytes.size());
  EXPECT_TRUE(d.fast_path_taken());
  d.Reset();
  EXPECT_FALSE(d.fast_path_taken());
}

TEST(FastPathTest, MutationsGiveTheGeneralResult) {
  int fast_rejections = 0;
  for (const vectors::Named& v : vectors::AllValid()) {
    if (kFastShapes.count(v.name) == 0) continue;
    const std::vector<uint8_t> valid = vectors::Bytes(*v.descriptor);
    for (const std::vector<uint8_t>& m :
         vectors::SingleByteMutations(valid, 3)) {
      for (Mode mode : {Mode::kStrict, Mode::kPermissive}) {
        Both b = ExpectSame(m, mode, v.name);
        if (b.general->state() == DecodeState::kRejected) ++fast_rejections;
        // FastAccepts is a sufficient condition for the validator.
        if (b.general->state() != DecodeState::kRejected) continue;
        ParseOptions raw = Options(false, mode);
        raw.validate = false;
        DescriptorDecoder framing(raw);
        if (!DecodeWith(m, &framing).ok()) continue;
        EXPECT_FALSE(FastAccepts(framing.descriptor(), Options(true, mode)))
            << v.name << ": " << RuleId(b.general->rejection().rule);
      }
    }
  }
  EXPECT_GT(fast_rejections, 1000);  // the mutations reach many rules
}

TEST(FastPathTest, LimitsAndDisabledLayoutsFallBack) {
  const std::vector<uint8_t> bytes = vectors::Bytes(
      *vectors::Dense(type_tag::kFloat32, {3, 4}, layout_tag::kColumnMajor));
  ParseOptions o = Options(true);
  o.disabled_layouts.set(layout_tag::kColumnMajor);
  DescriptorDecoder d(o);
  EXPECT_EQ(DecodeWith(bytes, &d).rule, Rule::kLayTag03);
  ParseOptions small = Options(true);
  small.limits.max_rank = 1;
  DescriptorDecoder e(small);
  EXPECT_EQ(DecodeWith(bytes, &e).rule, Rule::kLimitRank);
  small.limits.max_rank = 8;
  small.limits.max_descriptor_bytes = 40;
  DescriptorDecoder f(small);
  EXPECT_EQ(DecodeWith(bytes, &f).rule, Rule::kLimitDescBytes);
}

}  // namespace
}  // namespace hurray
