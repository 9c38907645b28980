// Sharded safetensors (issue 48): an index and its shards converted as one
// file, every tensor's bytes kept, shards in file-name order, metadata
// merged, and hostile indexes and shard sets refused naming the tensor or
// shard.
#include "stream/convert/shards.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "parser/descriptor.h"
#include "stream/container/hrry_mmap.h"
#include "stream/convert/convert.h"
#include "stream/convert/testing/source_builders.h"

namespace hurray::stream::convert {
namespace {

using testing::BuildSafetensors;
using ::testing::HasSubstr;
using testing::StTensor;

using Files = std::map<std::string, std::vector<uint8_t>>;

ShardOpener OpenerOf(const Files* files) {
  return [files](const std::string& name)
             -> absl::StatusOr<std::unique_ptr<ByteSource>> {
    auto it = files->find(name);
    if (it == files->end())
      return absl::NotFoundError(absl::StrCat(name, ": no such file"));
    return std::unique_ptr<ByteSource>(new MemorySource(it->second));
  };
}

std::vector<uint8_t> Bytes(const std::string& s) {
  return std::vector<uint8_t>(s.begin(), s.end());
}

absl::StatusOr<ShardedModel> Open(const std::string& index, const Files* files,
                                  const ShardLimits& limits = {}) {
  static std::vector<std::vector<uint8_t>> keep;  // the index outlives Open
  keep.push_back(Bytes(index));
  MemorySource src(keep.back());
  return OpenShards(src, kShardIndexName, OpenerOf(files), limits);
}

StTensor T(const std::string& name, size_t n, uint8_t seed) {
  std::vector<uint8_t> d(n * 4);
  for (size_t i = 0; i < d.size(); ++i) d[i] = static_cast<uint8_t>(seed + i);
  return StTensor{name, "F32", {n}, d};
}

constexpr char kA[] = "model-00001-of-00002.safetensors";
constexpr char kB[] = "model-00002-of-00002.safetensors";

// Two shards; the index lists the second shard's tensor first.
Files TwoShards() {
  Files f;
  f[kA] = BuildSafetensors({T("a.0", 8, 1), T("a.1", 3, 2)},
                           {{"format", "pt"}, {"note", "first"}});
  f[kB] = BuildSafetensors({T("b.0", 5, 3)},
                           {{"format", "pt"}, {"note", "second"}});
  return f;
}
std::string TwoShardIndex(const std::string& total = "64") {
  return absl::StrCat(R"({"metadata": {"total_size": )", total,
                      R"(}, "weight_map": {"b.0": ")", kB, R"(", "a.1": ")", kA,
                      R"(", "a.0": ")", kA, R"("}})");
}

TEST(Shards, ConvertAsOneFileKeepingEveryTensorAndMergingMetadata) {
  const Files files = TwoShards();
  absl::StatusOr<ShardedModel> m = Open(TwoShardIndex(), &files);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->shard_count, 2u);
  EXPECT_TRUE(m->warnings.empty());
  std::vector<uint8_t> out;
  ConvertOptions o;
  absl::StatusOr<ConvertReport> r =
      Convert(*m->source, o, [&out](absl::Span<const uint8_t> b) {
        out.insert(out.end(), b.begin(), b.end());
        return absl::OkStatus();
      });
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->tensors.size(), 3u);
  // Shards in file-name order, tensors in data-offset order.
  EXPECT_EQ(r->tensors[0].name, "a.0");
  EXPECT_EQ(r->tensors[1].name, "a.1");
  EXPECT_EQ(r->tensors[2].name, "b.0");
  absl::StatusOr<std::unique_ptr<stream::container::HrryFile>> f =
      stream::container::HrryFile::CopyOf(out);
  ASSERT_TRUE(f.ok()) << f.status();
  for (const auto& [name, n, seed] :
       std::vector<std::tuple<std::string, size_t, uint8_t>>{
           {"a.0", 8, 1}, {"a.1", 3, 2}, {"b.0", 5, 3}}) {
    const stream::container::IndexEntry* e = (*f)->Find(name);
    ASSERT_NE(e, nullptr) << name;
    auto d = std::make_unique<TensorDescriptor>();
    ASSERT_TRUE((*f)->ReadDescriptor(*e, d.get()).ok());
    absl::StatusOr<absl::Span<const uint8_t>> b = (*f)->Buffer(*e, *d, 0);
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_EQ(std::vector<uint8_t>(b->begin(), b->end()), T(name, n, seed).data)
        << name;
  }
  const stream::container::KvSection* kv = &(*f)->kv();
  ASSERT_NE(kv->Find("format"), nullptr);
  EXPECT_EQ(kv->Find("format")->value.str(), "pt");
  EXPECT_EQ(kv->Find("note"), nullptr);
  ASSERT_NE(kv->Find(absl::StrCat(kA, ":note")), nullptr);
  EXPECT_EQ(kv->Find(absl::StrCat(kA, ":note"))->value.str(), "first");
  EXPECT_EQ(kv->Find(absl::StrCat(kB, ":note"))->value.str(), "second");
  ASSERT_NE(kv->Find("total_size"), nullptr);
  EXPECT_EQ(kv->Find("total_size")->value.str(), "64");
}

TEST(Shards, TotalSizeDisagreeingIsReportedNotRefused) {
  const Files files = TwoShards();
  absl::StatusOr<ShardedModel> m = Open(TwoShardIndex("1000"), &files);
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->warnings.size(), 1u);
  EXPECT_THAT(m->warnings[0], HasSubstr("total_size is 1000"));
  EXPECT_THAT(m->warnings[0], HasSubstr("hold 64 bytes"));
}

TEST(Shards, RefusesHostileIndexesAndShardSets) {
  const Files files = TwoShards();
  struct Case {
    std::string index;
    std::string want;
  };
  const std::string a = kA, b = kB;
  const std::vector<Case> cases = {
      // A tensor in two shards (the index says a.0 is in A; B holds it too).
      {"", ""},
      {R"({"weight_map": {"a.0": "model-00003-of-00002.safetensors", "a.1": ")" +
           a + R"(", "b.0": ")" + b + R"("}})",
       "'a.0' is in shard '" + a + "' but the index names shard"},
      {R"({"weight_map": {"a.0": "../)" + a + R"("}})",
       "is not a plain file name"},
      {R"({"weight_map": {"a.0": "sub/x"}})", "is not a plain file name"},
      {R"({"weight_map": {"a.0": ".."}})", "is not a plain file name"},
      {R"({"weight_map": {"a.0": ")" + a + R"(", "a.1": ")" + a +
           R"(", "b.0": ")" + b + R"(", "c": ")" + b + R"("}})",
       "tensor 'c' of the index is missing from shard '" + b + "'"},
      {R"({"weight_map": {"a.0": ")" + a + R"(", "b.0": ")" + b + R"("}})",
       "shard '" + a + "': tensor 'a.1' is not in the index's weight_map"},
      {R"({"weight_map": {"x": "missing.safetensors"}})",
       "shard 'missing.safetensors': missing.safetensors: no such file"},
      {R"({"weight_map": {}})", "no weight_map, or an empty one"},
      {R"({"metadata": {}})", "no weight_map"},
      {R"({"weight_map": {"a.0": 3}})", "is not a shard file name"},
      {R"({"weight_map": {"a.0": ")" + a + R"(", "a.0": ")" + a + R"("}})",
       "duplicate weight_map entry 'a.0'"},
      {R"({"weight_map": {"a.0": {"x": 1}}})", "nested deeper"},
      {R"({"metadata": {"k": [1]}, "weight_map": {"a.0": "x"}})",
       "nested deeper"},
      {R"([1])", "nested deeper"},
      {R"({"weight_map": )", "byte"},
  };
  for (const Case& c : cases) {
    if (c.index.empty()) continue;
    SCOPED_TRACE(c.index);
    absl::StatusOr<ShardedModel> m = Open(c.index, &files);
    ASSERT_FALSE(m.ok());
    EXPECT_THAT(std::string(m.status().message()), HasSubstr(c.want));
  }
  // The same tensor in two shards.
  Files dup = files;
  dup[kB] = BuildSafetensors({T("b.0", 5, 3), T("a.0", 8, 1)});
  absl::StatusOr<ShardedModel> m = Open(TwoShardIndex(), &dup);
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(std::string(m.status().message()),
              HasSubstr("tensor 'a.0' is in shard '" + b +
                        "' but the index names shard '" + a + "'"));
}

TEST(Shards, LimitsOnTheIndexAndTheShardCount) {
  const Files files = TwoShards();
  ShardLimits small;
  small.max_index_bytes = 40;
  absl::StatusOr<ShardedModel> m = Open(TwoShardIndex(), &files, small);
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(std::string(m.status().message()), HasSubstr("above the limit"));
  // 10,000 shards named: refused past max_shards before any is opened.
  std::string index = R"({"weight_map": {)";
  for (int i = 0; i < 10000; ++i)
    absl::StrAppend(&index, i ? "," : "", "\"t", i, "\": \"s", i, "\"");
  index += "}}";
  ShardLimits few;
  few.max_shards = 1000;
  m = Open(index, &files, few);
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(std::string(m.status().message()), HasSubstr("more than 1000"));
  // Within the limit: 10,000 one-tensor shards, one open at a time.
  Files many;
  for (int i = 0; i < 10000; ++i)
    many[absl::StrCat("s", i)] =
        BuildSafetensors({T(absl::StrCat("t", i), 1, 0)});
  m = Open(index, &many);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->shard_count, 10000u);
  // The last bytes are the last shard's ("s9999" by name) tensor.
  uint8_t last[4];
  ASSERT_TRUE(
      m->source->ReadAt(m->source->size() - 4, absl::MakeSpan(last), "test")
          .ok());
  EXPECT_EQ(std::vector<uint8_t>(last, last + 4), T("t9999", 1, 0).data);
}

// From files: a directory holding the index, one shard a symlink (as the
// Hugging Face cache stores them).
TEST(Shards, FromADirectoryWithASymlinkedShard) {
  const std::string dir =
      absl::StrCat(std::getenv("TEST_TMPDIR"), "/model_", getpid());
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
  const Files files = TwoShards();
  auto write = [](const std::string& path, const std::vector<uint8_t>& b) {
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(b.data()),
               static_cast<std::streamsize>(b.size()));
  };
  write(absl::StrCat(dir, "/", kA), files.at(kA));
  write(absl::StrCat(dir, "/blob"), files.at(kB));
  ASSERT_EQ(::symlink("blob", absl::StrCat(dir, "/", kB).c_str()), 0);
  write(absl::StrCat(dir, "/", kShardIndexName), Bytes(TwoShardIndex("64")));
  EXPECT_TRUE(IsShardIndexPath(dir));
  EXPECT_TRUE(IsShardIndexPath(absl::StrCat(dir, "/", kShardIndexName)));
  for (const std::string& path :
       {dir, absl::StrCat(dir, "/", kShardIndexName)}) {
    absl::StatusOr<ShardedModel> m = OpenShardedSafetensors(path);
    ASSERT_TRUE(m.ok()) << m.status();
    std::vector<uint8_t> out;
    absl::StatusOr<ConvertReport> r =
        Convert(*m->source, {}, [&out](absl::Span<const uint8_t> b) {
          out.insert(out.end(), b.begin(), b.end());
          return absl::OkStatus();
        });
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->tensor_count, 3u);
  }
}

}  // namespace
}  // namespace hurray::stream::convert
