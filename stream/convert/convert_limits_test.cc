// A converter never writes what our reader refuses (issue 46 item 4): GGUF
// keys and tensor names spend the metadata budget as they are read, the
// output's KV section and index stay within the .hrry reader's
// max_metadata_bytes and its buffers within max_buffer_bytes, and what
// would pass them is refused (LIMIT-BUFFER-BYTES) before a byte is written.
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "parser/rules.h"
#include "stream/container/hrry_file.h"
#include "stream/convert/byte_source.h"
#include "stream/convert/convert.h"
#include "stream/convert/gguf.h"
#include "stream/convert/testing/source_builders.h"

namespace hurray::stream::convert {
namespace {

using testing::GgufBuilder;

constexpr absl::string_view kLimitRule = "LIMIT-BUFFER-BYTES";

// Converts into memory; *written counts the bytes the sink was given.
absl::StatusOr<std::vector<uint8_t>> ConvertBytes(
    const std::vector<uint8_t>& input, const ConvertOptions& options,
    uint64_t* written) {
  MemorySource src(input);
  std::vector<uint8_t> out;
  absl::StatusOr<ConvertReport> r =
      Convert(src, options, [&out](absl::Span<const uint8_t> b) {
        out.insert(out.end(), b.begin(), b.end());
        return absl::OkStatus();
      });
  *written = out.size();
  if (!r.ok()) return r.status();
  return out;
}

std::string Long(char c, size_t n, int i) {
  return absl::StrCat(i, std::string(n, c));
}

// 20 keys of about 1,000 bytes, or 20 empty tensors with such names.
std::vector<uint8_t> LongKeys() {
  GgufBuilder b;
  for (int i = 0; i < 20; ++i) b.KvU32(Long('k', 1000, i), i);
  return b.Build();
}
std::vector<uint8_t> LongNames() {
  GgufBuilder b;
  for (int i = 0; i < 20; ++i) b.Tensor(Long('n', 1000, i), {0}, 0, {});
  return b.Build();
}

TEST(ConvertLimits, GgufKeysAndTensorNamesSpendTheMetadataBudget) {
  GgufLimits limits;
  limits.max_metadata_bytes = 10000;
  for (const std::vector<uint8_t>& file : {LongKeys(), LongNames()}) {
    MemorySource src(file);
    const absl::Status s = ReadGgufHeader(src, limits).status();
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(RuleIdOf(s), kLimitRule) << s;
    // The tenth key or name passes 10,000 bytes: refused where it starts.
    const uint64_t at = OffsetOf(s).value_or(0);
    EXPECT_GT(at, 9 * 1000u);
    EXPECT_LT(at, 11 * 1040u);
    limits.max_metadata_bytes = 30000;
    EXPECT_TRUE(ReadGgufHeader(src, limits).ok());
    limits.max_metadata_bytes = 10000;
  }
}

TEST(ConvertLimits, GgufOverTheBudgetIsRefusedBeforeWriting) {
  for (const std::vector<uint8_t>& file : {LongKeys(), LongNames()}) {
    ConvertOptions options;
    options.gguf.max_metadata_bytes = 10000;
    uint64_t written = 0;
    const absl::Status s = ConvertBytes(file, options, &written).status();
    EXPECT_EQ(RuleIdOf(s), kLimitRule) << s;
    EXPECT_EQ(written, 0u);
  }
}

// Metadata, --kv entries and tensor names against every reader limit from
// too small to enough: a success always reads back in the strict forward
// reader (what `hurray ingest` runs) with that limit; a refusal names the
// rule and writes nothing.
TEST(ConvertLimits, OutputAlwaysPassesTheReaderItIsFor) {
  std::vector<testing::StTensor> tensors;
  for (int i = 0; i < 12; ++i) {
    tensors.push_back({Long('t', 37 * i, i), "U8", {1}, {uint8_t(i)}});
  }
  std::vector<std::pair<std::string, std::string>> metadata;
  for (int i = 0; i < 12; ++i) {
    metadata.emplace_back(Long('m', 29 * i, i), std::string(11 * i, 'v'));
  }
  const std::vector<uint8_t> st = testing::BuildSafetensors(tensors, metadata);
  GgufBuilder g;
  for (int i = 0; i < 12; ++i) g.KvString(Long('k', 31 * i, i), "value");
  for (int i = 0; i < 12; ++i) g.Tensor(Long('n', 41 * i, i), {0}, 0, {});
  const std::vector<uint8_t> gguf = g.Build();
  for (const std::vector<uint8_t>* file : {&st, &gguf}) {
    int accepted = 0, refused = 0;
    for (uint64_t limit = 64; limit < 8192; limit += 24) {
      ConvertOptions options;
      options.kv = {{"added", "by --kv"}};
      options.reader.max_metadata_bytes = limit;
      uint64_t written = 0;
      absl::StatusOr<std::vector<uint8_t>> out =
          ConvertBytes(*file, options, &written);
      if (!out.ok()) {
        ++refused;
        EXPECT_EQ(RuleIdOf(out.status()), kLimitRule) << out.status();
        EXPECT_EQ(written, 0u);
        continue;
      }
      ++accepted;
      stream::container::FileOptions reader;
      reader.max_metadata_bytes = limit;
      const Rejection r = stream::container::ReadHrry(*out, reader, nullptr);
      EXPECT_TRUE(r.ok()) << "limit " << limit << ": " << RuleId(r.rule)
                          << " at " << r.offset << ": " << r.message;
    }
    EXPECT_GT(accepted, 0);
    EXPECT_GT(refused, 0);
  }
}

TEST(ConvertLimits, BufferAboveTheReadersLimitIsRefusedBeforeWriting) {
  const std::vector<uint8_t> st = testing::BuildSafetensors(
      {{"small", "U8", {4}, {1, 2, 3, 4}},
       {"big", "U8", {17}, std::vector<uint8_t>(17, 5)}});
  ConvertOptions options;
  options.reader.limits.max_buffer_bytes = 16;
  uint64_t written = 0;
  const absl::Status s = ConvertBytes(st, options, &written).status();
  EXPECT_EQ(RuleIdOf(s), kLimitRule) << s;
  EXPECT_NE(s.message().find("'big'"), absl::string_view::npos) << s;
  EXPECT_EQ(written, 0u);
  options.reader.limits.max_buffer_bytes = 17;
  EXPECT_TRUE(ConvertBytes(st, options, &written).ok());
}

// With on_tensor the report keeps no line per tensor (memory), and each
// tensor is given once, in output order.
TEST(ConvertLimits, OnTensorTakesEachTensorInsteadOfTheReport) {
  std::vector<testing::StTensor> tensors;
  for (int i = 0; i < 5; ++i) {
    tensors.push_back({absl::StrCat("t", i), "U8", {1}, {uint8_t(i)}});
  }
  const std::vector<uint8_t> st = testing::BuildSafetensors(tensors);
  MemorySource src(st);
  ConvertOptions options;
  std::vector<std::string> seen;
  options.on_tensor = [&seen](const ConvertedTensor& t) {
    seen.push_back(t.name);
  };
  absl::StatusOr<ConvertReport> r = Convert(
      src, options, [](absl::Span<const uint8_t>) { return absl::OkStatus(); });
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->tensors.empty());
  EXPECT_EQ(r->tensor_count, 5u);
  EXPECT_EQ(seen, (std::vector<std::string>{"t0", "t1", "t2", "t3", "t4"}));
}

// A tokenizer-like array of many strings passes through whole.
TEST(ConvertLimits, StringArraysKeepEveryString) {
  std::vector<std::string> tokens;
  for (int i = 0; i < 3000; ++i)
    tokens.push_back(i % 7 == 0 ? "" : Long('x', i % 5, i));
  GgufBuilder g;
  g.KvStringArray("tokenizer.ggml.tokens", tokens);
  const std::vector<uint8_t> file = g.Build();
  MemorySource src(file);
  int seen = 0;
  absl::StatusOr<GgufFile> f =
      ReadGgufHeader(src, GgufLimits(), [&](GgufKv& kv) {
        EXPECT_EQ(kv.string_count(), tokens.size());
        for (size_t i = 0; i < kv.string_count(); ++i) {
          EXPECT_EQ(kv.string(i), tokens[i]) << i;
        }
        ++seen;
        return absl::OkStatus();
      });
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(seen, 1);
  EXPECT_TRUE(f->kv.empty());
}

}  // namespace
}  // namespace hurray::stream::convert
