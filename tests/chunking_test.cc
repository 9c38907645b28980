// Chunk independence: whatever the chunking, the push decoder produces
// exactly the one-shot result (same state, same fields, or the same rule and
// byte offset), and consumes the same number of bytes.
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "parser/decoder.h"
#include "parser/element_type.h"
#include "parser/wire.h"
#include "tests/mutations.h"
#include "tests/vectors.h"

namespace hurray {
namespace {

struct Outcome {
  DecodeState state;
  Rejection rejection;
  uint64_t consumed;
};

// Feeds `bytes` cut at the given chunk lengths (the last chunk takes the
// rest), stopping at the first non-need-more state, then Finish().
Outcome FeedInChunks(DescriptorDecoder& dec, const std::vector<uint8_t>& bytes,
                     const std::vector<size_t>& cuts) {
  dec.Reset();
  size_t at = 0;
  size_t total = 0;
  for (size_t c = 0; c <= cuts.size() && at <= bytes.size(); ++c) {
    const size_t len = c < cuts.size() ? std::min(cuts[c], bytes.size() - at)
                                       : bytes.size() - at;
    const FeedResult r = dec.Feed(absl::MakeConstSpan(bytes.data() + at, len));
    EXPECT_LE(r.consumed, len);
    total += r.consumed;
    if (r.state != DecodeState::kNeedMore) break;
    EXPECT_EQ(r.consumed, len) << "need-more must consume the whole chunk";
    at += len;
    if (at == bytes.size()) break;
  }
  const DecodeState end = dec.Finish();
  return {end, dec.rejection(), total};
}

class ChunkingTest : public ::testing::Test {
 protected:
  void ExpectSameAsOneShot(const std::vector<uint8_t>& bytes,
                           const ParseOptions& options,
                           const std::string& what) {
    one_ = std::make_unique<DescriptorDecoder>(options);
    chunked_ = std::make_unique<DescriptorDecoder>(options);
    DescriptorDecoder& one = *one_;
    DescriptorDecoder& dec = *chunked_;
    const Outcome expected = FeedInChunks(one, bytes, {});
    auto check = [&](const Outcome& got, const std::string& how) {
      ASSERT_EQ(got.state, expected.state) << what << " " << how;
      ASSERT_EQ(got.consumed, expected.consumed) << what << " " << how;
      if (expected.state == DecodeState::kDone) {
        ASSERT_TRUE(dec.descriptor() == one.descriptor()) << what << " " << how;
      } else {
        ASSERT_EQ(RuleId(got.rejection.rule), RuleId(expected.rejection.rule))
            << what << " " << how;
        ASSERT_EQ(got.rejection.offset, expected.rejection.offset)
            << what << " " << how;
      }
    };
    for (size_t split = 0; split <= bytes.size(); ++split) {
      check(FeedInChunks(dec, bytes, {split}),
            "split at " + std::to_string(split));
    }
    check(FeedInChunks(dec, bytes, std::vector<size_t>(bytes.size(), 1)),
          "byte by byte");
    std::mt19937 rng(static_cast<uint32_t>(bytes.size()));
    for (int trial = 0; trial < 8; ++trial) {
      std::vector<size_t> cuts;
      for (size_t n = 0; n < bytes.size(); n += cuts.back()) {
        cuts.push_back(1 + rng() % 13);
      }
      check(FeedInChunks(dec, bytes, cuts), "random cuts");
    }
  }

  std::unique_ptr<DescriptorDecoder> one_;
  std::unique_ptr<DescriptorDecoder> chunked_;
};

TEST_F(ChunkingTest, EveryValidVectorEverySplit) {
  for (const auto& v : vectors::AllValid()) {
    const std::vector<uint8_t> bytes = vectors::Bytes(*v.descriptor);
    for (Mode mode : {Mode::kStrict, Mode::kPermissive}) {
      ExpectSameAsOneShot(bytes, vectors::AgreedOptions(mode), v.name);
    }
  }
}

TEST_F(ChunkingTest, EveryMutationOfEveryVector) {
  size_t rejected = 0, total = 0;
  for (const auto& v : vectors::AllValid()) {
    const std::vector<uint8_t> bytes = vectors::Bytes(*v.descriptor);
    for (const auto& m : vectors::SingleByteMutations(bytes, 5)) {
      for (Mode mode : {Mode::kStrict, Mode::kPermissive}) {
        ExpectSameAsOneShot(m, vectors::AgreedOptions(mode), v.name);
        rejected += one_->state() == DecodeState::kRejected;
        ++total;
      }
    }
  }
  // The mutations must actually exercise rejections, not only acceptances.
  EXPECT_GT(rejected, total / 2);
}

// Shape entries and buffer handles are read in runs of up to 72 bytes (one
// field group). With descriptor_length cut anywhere inside a run longer than
// one group, the element that crosses the end is the one reported, whatever
// the chunking. Framing only: validation is off, as six buffers for a dense
// tensor are not valid.
TEST_F(ChunkingTest, ArraysLongerThanOneGroup) {
  std::unique_ptr<TensorDescriptor> d = vectors::Dense(
      type_tag::kFloat32, std::vector<uint64_t>(12, 1), layout_tag::kStrided);
  std::fill(std::begin(d->layout.strides), std::end(d->layout.strides), 0);
  d->buffer_count = 6;
  for (uint32_t i = 1; i < 6; ++i) d->buffers[i] = d->buffers[0];
  const std::vector<uint8_t> valid = vectors::Bytes(*d);
  constexpr uint32_t kShapeAt = kFixedHeaderSize;  // 12 entries of 8 bytes
  constexpr uint32_t kStridesAt = kShapeAt + 12 * 8 + 8;    // after byte_offset
  constexpr uint32_t kHandlesAt = kStridesAt + 12 * 8 + 1;  // after the count
  ASSERT_EQ(valid.size(), kHandlesAt + 6 * kBufferHandleSize);
  ParseOptions options;
  options.validate = false;
  for (uint32_t length = kFixedHeaderSize; length <= valid.size(); ++length) {
    std::vector<uint8_t> bytes(valid.begin(), valid.begin() + length);
    wire::StoreU32(bytes.data() + 6, length);
    ExpectSameAsOneShot(bytes, options, "length " + std::to_string(length));
    const std::string where = "descriptor_length " + std::to_string(length);
    if (length == valid.size()) {
      EXPECT_EQ(one_->state(), DecodeState::kDone) << where;
      continue;
    }
    ASSERT_EQ(one_->state(), DecodeState::kRejected) << where;
    EXPECT_EQ(RuleId(one_->rejection().rule), "DESC-HDR-06") << where;
    uint64_t crossing;  // offset of the field that crosses the end
    if (length < kStridesAt - 8) {
      crossing = kShapeAt + (length - kShapeAt) / 8 * 8;
    } else if (length < kStridesAt) {
      crossing = kStridesAt - 8;  // byte_offset
    } else if (length < kHandlesAt - 1) {
      crossing = kStridesAt + (length - kStridesAt) / 8 * 8;
    } else if (length < kHandlesAt) {
      crossing = kHandlesAt - 1;  // buffer_count
    } else {
      crossing = kHandlesAt +
                 (length - kHandlesAt) / kBufferHandleSize * kBufferHandleSize;
    }
    EXPECT_EQ(one_->rejection().offset, crossing) << where;
  }
}

// Bytes after the descriptor are never consumed: a stream continues there.
TEST_F(ChunkingTest, StopsAtDescriptorEnd) {
  const std::vector<uint8_t> one = vectors::Bytes(*vectors::Nf4UInt4());
  std::vector<uint8_t> two = one;
  two.insert(two.end(), one.begin(), one.end());
  DescriptorDecoder dec;
  FeedResult r = dec.Feed(two);
  EXPECT_EQ(r.state, DecodeState::kDone);
  EXPECT_EQ(r.consumed, one.size());
  EXPECT_EQ(dec.Feed(two).consumed, 0u);  // done: nothing more until Reset
  dec.Reset();
  r = dec.Feed(absl::MakeConstSpan(two).subspan(one.size()));
  EXPECT_EQ(r.state, DecodeState::kDone);
  EXPECT_EQ(r.consumed, one.size());
}

std::vector<std::string> CorpusFiles() {
  std::vector<std::string> files;
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const std::string root =
      std::string(srcdir ? srcdir : ".") + "/hurray_cpp/corpus";
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(root, ec);
       !ec && it != std::filesystem::recursive_directory_iterator();
       it.increment(ec)) {
    if (it->is_regular_file() && it->path().extension() == ".bin") {
      files.push_back(it->path().string());
    }
  }
  return files;
}

TEST_F(ChunkingTest, EveryCorpusFile) {
  const std::vector<std::string> files = CorpusFiles();
  ASSERT_FALSE(files.empty()) << "corpus not found in runfiles";
  for (const std::string& path : files) {
    std::ifstream in(path, std::ios::binary);
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
    for (Mode mode : {Mode::kStrict, Mode::kPermissive}) {
      ExpectSameAsOneShot(bytes, vectors::AgreedOptions(mode), path);
    }
  }
}

}  // namespace
}  // namespace hurray
