// The decoder's whole-descriptor fast paths (parser/fast_path.h, issue 18;
// parser/whole_decode.h, issue 47): taken for every accepted descriptor fed
// whole, never for split input, the accept-only validator exactly for the
// common shapes, and indistinguishable from the general path
// (ParseOptions::fast_path off) on every valid vector, every corpus file and
// every single-byte mutation of either, under default and tight limits. The
// random side of this is fuzz/fast_path_fuzz.cc.
#include "parser/fast_path.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
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

ParseOptions Options(bool fast, Mode mode = Mode::kStrict, bool tight = false) {
  ParseOptions o = vectors::AgreedOptions(mode);
  o.fast_path = fast;
  if (tight) {  // as fuzz/fast_path_fuzz.cc's tight limits
    Limits& l = o.limits;
    l.max_descriptor_bytes = 512;
    l.max_rank = 8;
    l.max_tiled_depth = 2;
    l.max_quantization_bytes = 32;
    l.max_extension_data_bytes = 16;
  }
  return o;
}

struct Both {
  std::unique_ptr<DescriptorDecoder> fast, general;
};

// Decodes `bytes` one-shot with the fast path on and off and expects the same
// outcome: state, bytes consumed, descriptor and offsets or rule and offset.
Both ExpectSame(const std::vector<uint8_t>& bytes, Mode mode,
                const std::string& what, bool tight = false) {
  Both b{std::make_unique<DescriptorDecoder>(Options(true, mode, tight)),
         std::make_unique<DescriptorDecoder>(Options(false, mode, tight))};
  const Rejection rf = DecodeWith(bytes, b.fast.get());
  const Rejection rg = DecodeWith(bytes, b.general.get());
  EXPECT_EQ(b.fast->state(), b.general->state()) << what;
  EXPECT_EQ(b.fast->consumed(), b.general->consumed()) << what;
  EXPECT_FALSE(b.general->fast_path_taken()) << what;
  if (rg.ok()) {
    EXPECT_TRUE(rf.ok()) << what;
    const TensorDescriptor& x = b.fast->descriptor();
    const TensorDescriptor& y = b.general->descriptor();
    EXPECT_TRUE(x == y && y == x) << what;
    EXPECT_EQ(x.offsets.layout, y.offsets.layout) << what;
    EXPECT_EQ(x.offsets.buffer_table, y.offsets.buffer_table) << what;
    EXPECT_EQ(x.offsets.quantization, y.offsets.quantization) << what;
    EXPECT_EQ(x.offsets.shard, y.offsets.shard) << what;
    EXPECT_EQ(x.offsets.statistics, y.offsets.statistics) << what;
    EXPECT_EQ(x.offsets.extension_type, y.offsets.extension_type) << what;
    EXPECT_EQ(x.offsets.composite_member, y.offsets.composite_member) << what;
    EXPECT_EQ(x.offsets.end, y.offsets.end) << what;
    EXPECT_EQ(x.descriptor_length, y.descriptor_length) << what;
    EXPECT_EQ(x.layout.extension_data_offset, y.layout.extension_data_offset)
        << what;
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

TEST(FastPathTest, TakenForEveryWholeDescriptor) {
  for (const vectors::Named& v : vectors::AllValid()) {
    const std::vector<uint8_t> bytes = vectors::Bytes(*v.descriptor);
    for (Mode mode : {Mode::kStrict, Mode::kPermissive}) {
      Both b = ExpectSame(bytes, mode, v.name);
      EXPECT_EQ(b.fast->state(), DecodeState::kDone) << v.name;
      EXPECT_TRUE(b.fast->fast_path_taken()) << v.name;
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

std::string Runfile(const std::string& path) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  return std::string(srcdir ? srcdir : ".") + "/hurray_cpp/" + path;
}

// Every file of the corpus directories the test depends on, sorted.
std::vector<std::filesystem::path> CorpusFiles() {
  std::vector<std::filesystem::path> files;
  for (const char* dir : {"corpus/descriptors", "corpus/golden/descriptors",
                          "corpus/descriptor_decode_fuzz"}) {
    for (const auto& e :
         std::filesystem::recursive_directory_iterator(Runfile(dir))) {
      if (e.is_regular_file()) files.push_back(e.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<uint8_t> ReadBytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), {});
}

// The corpus the bench cycles over (bench/corpus_decode_timing.cc), whole
// and with every single-byte mutation and truncation, in both modes and
// under tight limits (nesting depth, rank, section and extension sizes).
TEST(FastPathTest, CorpusAndItsMutationsGiveTheGeneralResult) {
  const std::vector<std::filesystem::path> files = CorpusFiles();
  ASSERT_GT(files.size(), 500u);
  int accepted = 0, taken = 0, cases = 0;
  for (const std::filesystem::path& path : files) {
    const std::vector<uint8_t> bytes = ReadBytes(path);
    if (bytes.size() < 4) continue;
    const std::string name = path.filename().string();
    for (bool tight : {false, true}) {
      for (Mode mode : {Mode::kStrict, Mode::kPermissive}) {
        Both b = ExpectSame(bytes, mode, name, tight);
        ++cases;
        if (b.general->state() != DecodeState::kDone) continue;
        if (tight || mode != Mode::kStrict) continue;
        ++accepted;
        taken += b.fast->fast_path_taken();
        EXPECT_TRUE(b.fast->fast_path_taken()) << name;
        for (const std::vector<uint8_t>& m :
             vectors::SingleByteMutations(bytes, 5)) {
          for (Mode mutated_mode : {Mode::kStrict, Mode::kPermissive}) {
            ExpectSame(m, mutated_mode, name + " (mutated)");
            ExpectSame(m, mutated_mode, name + " (mutated, tight)", true);
            cases += 2;
          }
        }
      }
    }
  }
  EXPECT_GT(accepted, 50);
  EXPECT_EQ(taken, accepted);  // every file is in one chunk
  EXPECT_GT(cases, 100000);
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
