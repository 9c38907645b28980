// ConvertFile: a path to a path as `hurray convert` does it (single files,
// a shard index, the output published only on success) and its failure
// codes: a missing input, a refused input, a GGUF type no conversion takes,
// a cancelled run.
#include "stream/convert/convert_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "parser/rules.h"
#include "stream/container/hrry_mmap.h"
#include "stream/convert/gguf.h"
#include "stream/convert/testing/source_builders.h"
#include "stream/convert/testing/temp_files.h"

namespace hurray::stream::convert {
namespace {

using testing::BuildSafetensors;
using testing::GgufBuilder;
using ::testing::HasSubstr;
using testing::NewTempDir;
using testing::StTensor;
using testing::WriteFile;

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::vector<uint8_t> Floats(std::vector<float> v) {
  std::vector<uint8_t> out(v.size() * 4);
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

TEST(ConvertFile, SafetensorsToHrryReadsBack) {
  const std::string dir = NewTempDir("cfile");
  const std::vector<uint8_t> w = Floats({1, 2, 3, 4, 5, 6});
  WriteFile(dir + "/m.safetensors",
            BuildSafetensors({{"w", "F32", {2, 3}, w}}, {{"k", "v"}}));
  ConvertOptions o;
  o.kv = {{"extra", "1"}};
  std::vector<std::string> warnings;
  absl::StatusOr<ConvertReport> r =
      ConvertFile(dir + "/m.safetensors", dir + "/o.hrry", o, &warnings);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->format, "safetensors");
  ASSERT_EQ(r->tensors.size(), 1u);
  EXPECT_EQ(r->tensors[0].hurray_type, "float32");
  EXPECT_TRUE(r->tensors[0].exact);
  EXPECT_EQ(r->kv_entries, 2u);
  EXPECT_TRUE(warnings.empty());
  absl::StatusOr<std::unique_ptr<container::HrryFile>> f =
      container::HrryFile::Open(dir + "/o.hrry");
  ASSERT_TRUE(f.ok()) << f.status();
  const container::IndexEntry* e = (*f)->Find("w");
  ASSERT_NE(e, nullptr);
  TensorDescriptor d;
  ASSERT_TRUE((*f)->ReadDescriptor(*e, &d).ok());
  absl::StatusOr<absl::Span<const uint8_t>> b = (*f)->Buffer(*e, d, 0);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(std::vector<uint8_t>(b->begin(), b->end()), w);
}

TEST(ConvertFile, ShardIndexDirectory) {
  const std::string dir = NewTempDir("cfile");
  WriteFile(dir + "/a.safetensors",
            BuildSafetensors({{"a", "F32", {2}, Floats({1, 2})}}));
  WriteFile(dir + "/b.safetensors",
            BuildSafetensors({{"b", "F32", {1}, Floats({3})}}));
  const std::string index =
      R"({"weight_map": {"a": "a.safetensors", "b": "b.safetensors"}})";
  WriteFile(dir + "/model.safetensors.index.json",
            std::vector<uint8_t>(index.begin(), index.end()));
  absl::StatusOr<ConvertReport> r = ConvertFile(dir, dir + "/o.hrry", {});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->tensor_count, 2u);
}

TEST(ConvertFile, FailuresByCode) {
  const std::string dir = NewTempDir("cfile");
  // Missing input: NotFound, and nothing written.
  absl::StatusOr<ConvertReport> r =
      ConvertFile(dir + "/none.safetensors", dir + "/o.hrry", {});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_FALSE(Exists(dir + "/o.hrry"));
  // Neither format: refused.
  WriteFile(dir + "/junk", std::vector<uint8_t>(64, 'x'));
  r = ConvertFile(dir + "/junk", dir + "/o.hrry", {});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(Exists(dir + "/o.hrry"));
  // A buffer past the reader's limit: refused with its rule id.
  WriteFile(dir + "/m.safetensors",
            BuildSafetensors({{"w", "F32", {4}, Floats({1, 2, 3, 4})}}));
  ConvertOptions small;
  small.reader.limits.max_buffer_bytes = 8;
  r = ConvertFile(dir + "/m.safetensors", dir + "/o.hrry", small);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RuleIdOf(r.status()), "LIMIT-BUFFER-BYTES");
  // A GGUF type with no Hurray form (without --requantize): Unimplemented.
  GgufBuilder g;
  g.Tensor("q", {32}, ggml_type::kQ4_1, std::vector<uint8_t>(20, 0));
  WriteFile(dir + "/m.gguf", g.Build());
  r = ConvertFile(dir + "/m.gguf", dir + "/o.hrry", {});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnimplemented) << r.status();
  // An output directory that does not exist: not a refusal of the input.
  r = ConvertFile(dir + "/m.safetensors", dir + "/no/o.hrry", {});
  EXPECT_NE(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(r.ok());
}

TEST(ConvertFile, CancelledPublishesNothing) {
  const std::string dir = NewTempDir("cfile");
  WriteFile(dir + "/m.safetensors",
            BuildSafetensors({{"w", "F32", {4}, Floats({1, 2, 3, 4})}}));
  WriteFile(dir + "/o.hrry", {1, 2, 3});  // kept as it is
  int polls = 0;
  absl::StatusOr<ConvertReport> r =
      ConvertFile(dir + "/m.safetensors", dir + "/o.hrry", {}, nullptr,
                  [&polls] { return ++polls > 1; });
  EXPECT_EQ(r.status().code(), absl::StatusCode::kCancelled) << r.status();
  struct stat st;
  ASSERT_EQ(::stat((dir + "/o.hrry").c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 3);
}

}  // namespace
}  // namespace hurray::stream::convert
