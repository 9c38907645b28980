// `hurray convert` says how much of its output is zero padding when that
// passes 10 %: the format starts every data buffer on a 4096-byte boundary
// (file-format.md, data_buffer_alignment), so many small tensors make a
// file far larger than its source (issue 46 item 5).
#include "tools/convert_command.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "stream/convert/testing/source_builders.h"
#include "tools/command_util.h"

namespace hurray::tools {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

class ConvertCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = std::getenv("TEST_TMPDIR");
    dir_ = fs::path(tmp != nullptr ? tmp : "/tmp") / "convert_command_test";
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  // Writes a safetensors file of `count` U8 tensors of `bytes` bytes each
  // and converts it.
  int Convert(int count, size_t bytes) {
    std::vector<stream::convert::testing::StTensor> tensors;
    for (int i = 0; i < count; ++i) {
      tensors.push_back({"t" + std::to_string(i),
                         "U8",
                         {bytes},
                         std::vector<uint8_t>(bytes, uint8_t(i))});
    }
    const std::vector<uint8_t> file =
        stream::convert::testing::BuildSafetensors(tensors);
    const fs::path in = dir_ / "in.safetensors";
    std::ofstream(in, std::ios::binary)
        .write(reinterpret_cast<const char*>(file.data()), file.size());
    const fs::path out = dir_ / ("out" + std::to_string(n_++) + ".hrry");
    out_.str(""), err_.str("");
    const std::vector<std::string> args = {in.string(), "-o", out.string()};
    return RunConvert(args, out_, err_);
  }
  fs::path dir_;
  int n_ = 0;
  std::ostringstream out_, err_;
};

TEST_F(ConvertCommandTest, SaysHowMuchIsPaddingWhenItPassesTenPercent) {
  // 200 one-byte tensors: about 4 KiB of padding per byte of data.
  ASSERT_EQ(Convert(200, 1), kExitOk) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("are zero padding"));
  EXPECT_THAT(out_.str(), HasSubstr("4096-byte boundary"));
  EXPECT_THAT(out_.str(), HasSubstr("data_buffer_alignment"));
  // Two tensors of 64 KiB: under 10 % padding, nothing said.
  ASSERT_EQ(Convert(2, 64 << 10), kExitOk) << err_.str();
  EXPECT_THAT(out_.str(), Not(HasSubstr("padding")));
}

// The share printed is the padding of the file written: 200 tensors of one
// byte, each buffer at a 4096-byte boundary after a descriptor of under 256
// bytes, leave at least 200 * 3840 padding bytes, and less than
// 200 * 4096 + 4096.
TEST_F(ConvertCommandTest, PaddingShareIsTheFilesOwn) {
  ASSERT_EQ(Convert(200, 1), kExitOk) << err_.str();
  const std::string text = out_.str();
  const size_t note = text.find("note: ");
  ASSERT_NE(note, std::string::npos) << text;
  const uint64_t padding = std::stoull(text.substr(note + 6));
  const uint64_t size = fs::file_size(dir_ / "out0.hrry");
  EXPECT_GE(padding, 200u * 3840);
  EXPECT_LT(padding, 200u * 4096 + 4096);
  EXPECT_THAT(text, HasSubstr("of the " + std::to_string(size) + " bytes"));
}

// Issue 46 item 4: 520 GGUF keys of 64 KiB (34 MB, past the 32 MiB metadata
// budget; the old converter wrote them and ingest refused the file) are
// refused with exit 1 and the rule id, and no output is left.
TEST_F(ConvertCommandTest, MetadataPastTheBudgetExitsOneWithTheRule) {
  stream::convert::testing::GgufBuilder b;
  for (int i = 0; i < 520; ++i) {
    b.KvU32(std::to_string(i) + std::string(65000, 'k'), i);
  }
  const std::vector<uint8_t> file = b.Build();
  const fs::path in = dir_ / "keys.gguf";
  std::ofstream(in, std::ios::binary)
      .write(reinterpret_cast<const char*>(file.data()), file.size());
  const fs::path out = dir_ / "keys.hrry";
  out_.str(""), err_.str("");
  const std::vector<std::string> args = {in.string(), "-o", out.string()};
  EXPECT_EQ(RunConvert(args, out_, err_), kExitRejected) << out_.str();
  EXPECT_THAT(err_.str(), HasSubstr("LIMIT-BUFFER-BYTES at byte "));
  EXPECT_FALSE(fs::exists(out));
}

// --json (issue 48): one object whose tensors name their source type and
// whether they are exact, with the errors of an approximate one; --compact-
// kquants narrows Q4_K to uint4.
TEST_F(ConvertCommandTest, JsonNamesSourceTypesAndExactness) {
  stream::convert::testing::GgufBuilder b;
  std::vector<uint8_t> f32(4 * 8, 0);
  f32[3] = 0x3F;  // 0.5
  b.Tensor("norm", {8}, /*F32*/ 0, f32);
  // One Q4_K block: d = 1, dmin = 0.5, sc = 1, m = 1 / 0, codes 0..15.
  std::vector<uint8_t> q4k(144, 0);
  q4k[1] = 0x3C, q4k[3] = 0x38;
  for (int i = 4; i < 16; ++i) q4k[i] = 0x01;
  for (int i = 16; i < 144; ++i) q4k[i] = static_cast<uint8_t>(i * 7);
  b.Tensor("w", {256}, /*Q4_K*/ 12, q4k);
  const std::vector<uint8_t> file = b.Build();
  const fs::path in = dir_ / "m.gguf";
  std::ofstream(in, std::ios::binary)
      .write(reinterpret_cast<const char*>(file.data()), file.size());
  for (const bool compact : {false, true}) {
    out_.str(""), err_.str("");
    std::vector<std::string> args = {in.string(), "-o",
                                     (dir_ / "m.hrry").string(), "--json"};
    if (compact) args.push_back("--compact-kquants");
    ASSERT_EQ(RunConvert(args, out_, err_), kExitOk) << err_.str();
    const std::string text = out_.str();
    EXPECT_EQ(text.front(), '{');
    EXPECT_EQ(text.substr(text.size() - 2), "}\n");
    EXPECT_THAT(text, HasSubstr(R"({"name":"norm","shape":[8],)"
                                R"("source_type":"F32","type":"float32",)"
                                R"("scheme":"","exact":true,)"
                                R"("quantized":false})"));
    EXPECT_THAT(text,
                HasSubstr(std::string(R"({"name":"w","shape":[256],)"
                                      R"("source_type":"Q4_K","type":")") +
                          (compact ? "uint4" : "uint8") +
                          R"(","scheme":"per_block_affine",)"
                          R"("exact":false,"quantized":false,)"
                          R"("max_abs_error":)"));
    EXPECT_THAT(text, HasSubstr(R"("format":"gguf","tensor_count":2,)"));
  }
}

// A sharded model (issue 48): the index or its directory is taken, a
// total_size that disagrees is a warning on stderr, a hostile shard name is
// a rejection (exit 1) and leaves no output.
TEST_F(ConvertCommandTest, ShardIndexOrItsDirectory) {
  const fs::path model = dir_ / "model";
  fs::create_directories(model);
  auto write = [](const fs::path& p, const std::vector<uint8_t>& b) {
    std::ofstream(p, std::ios::binary)
        .write(reinterpret_cast<const char*>(b.data()), b.size());
  };
  write(model / "s1.safetensors", stream::convert::testing::BuildSafetensors(
                                      {{"a", "U8", {3}, {1, 2, 3}}}));
  write(model / "s2.safetensors",
        stream::convert::testing::BuildSafetensors({{"b", "U8", {2}, {4, 5}}}));
  const std::string index =
      R"({"metadata": {"total_size": 9}, "weight_map": )"
      R"({"a": "s1.safetensors", "b": "s2.safetensors"}})";
  write(model / "model.safetensors.index.json",
        std::vector<uint8_t>(index.begin(), index.end()));
  for (const fs::path& in : {model, model / "model.safetensors.index.json"}) {
    out_.str(""), err_.str("");
    const std::string out = (dir_ / "m.hrry").string();
    ASSERT_EQ(RunConvert({in.string(), "-o", out}, out_, err_), kExitOk)
        << err_.str();
    EXPECT_THAT(out_.str(), HasSubstr("2 tensors"));
    EXPECT_THAT(err_.str(), HasSubstr("warning: the index's total_size is 9, "
                                      "the shards' tensors hold 5 bytes"));
  }
  const std::string bad = R"({"weight_map": {"a": "../s1.safetensors"}})";
  write(model / "bad.index.json", std::vector<uint8_t>(bad.begin(), bad.end()));
  out_.str(""), err_.str("");
  const fs::path out = dir_ / "bad.hrry";
  EXPECT_EQ(
      RunConvert({(model / "bad.index.json").string(), "-o", out.string()},
                 out_, err_),
      kExitRejected);
  EXPECT_THAT(err_.str(), HasSubstr("is not a plain file name"));
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace
}  // namespace hurray::tools
