#include "tools/pack_command.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "stream/container/byte_sink.h"
#include "stream/container/hrry_file.h"
#include "stream/container/stream_writer.h"
#include "tools/command_util.h"
#include "tools/sample_model.h"

namespace hurray::tools {
namespace {

namespace fs = std::filesystem;

std::vector<uint8_t> ReadAll(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

class PackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = std::getenv("TEST_TMPDIR");
    dir_ = fs::path(tmp != nullptr ? tmp : "/tmp") / "pack_test";
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  // Writes tensors [first, last) of the sample as one bare stream.
  std::string WriteStream(const std::string& name, size_t first, size_t last) {
    absl::StatusOr<std::vector<SampleTensor>> tensors = BuildSampleTensors();
    EXPECT_TRUE(tensors.ok());
    const fs::path path = dir_ / name;
    std::ofstream out(path, std::ios::binary);
    stream::container::OstreamSink sink(&out);
    stream::container::StreamWriter writer;
    for (size_t i = first; i < last; ++i) {
      const SampleTensor& t = (*tensors)[i];
      std::vector<absl::Span<const uint8_t>> views(t.buffers.begin(),
                                                   t.buffers.end());
      EXPECT_TRUE(writer.Write(*t.descriptor, views, sink).ok());
    }
    return path.string();
  }
  int Run(std::vector<std::string> args) {
    out_.str(""), err_.str("");
    return RunPack(args, out_, err_);
  }
  fs::path dir_;
  std::ostringstream out_, err_;
};

TEST_F(PackTest, PacksNamedStreamsIntoAValidSortedFile) {
  const std::string one = WriteStream("one.stream", 0, 1);
  const std::string three = WriteStream("three.stream", 1, 4);
  const std::string out = (dir_ / "out.hrry").string();
  ASSERT_EQ(
      Run({"-o", out, "--kv", "source=test", "zeta=" + one, "alpha=" + three}),
      kExitOk)
      << err_.str();
  const std::vector<uint8_t> bytes = ReadAll(out);
  stream::container::HrryForwardReader reader;
  ASSERT_EQ(reader.Feed(bytes), stream::container::FileState::kNeedMore);
  ASSERT_EQ(reader.Finish(), stream::container::FileState::kDone)
      << reader.status();
  std::vector<std::string> names;
  for (size_t i = 0; i < reader.tensors().size(); ++i)
    names.emplace_back(reader.entry_of_tensor(i)->name);
  EXPECT_EQ(names, (std::vector<std::string>{"zeta", "alpha.0", "alpha.1",
                                             "alpha.2"}));
  EXPECT_FALSE(fs::exists(out + ".partial"));
}

TEST_F(PackTest, SampleIsTheBuiltInModel) {
  const std::string out = (dir_ / "sample.hrry").string();
  ASSERT_EQ(Run({"--sample", "-o", out}), kExitOk) << err_.str();
  std::vector<uint8_t> want;
  auto sink = [&want](absl::Span<const uint8_t> b) {
    want.insert(want.end(), b.begin(), b.end());
    return absl::OkStatus();
  };
  ASSERT_TRUE(WriteSampleModel(sink).ok());
  EXPECT_EQ(ReadAll(out), want);
}

TEST_F(PackTest, ARejectedInputNamesItsRuleAndLeavesNoOutput) {
  const std::string good = WriteStream("good.stream", 0, 1);
  std::vector<uint8_t> bytes = ReadAll(good);
  bytes[0] = 'X';  // magic
  const fs::path bad = dir_ / "bad.stream";
  std::ofstream(bad, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  const std::string out = (dir_ / "bad.hrry").string();
  EXPECT_EQ(Run({"-o", out, "t=" + bad.string()}), kExitRejected);
  EXPECT_NE(err_.str().find("DESC-HDR-02"), std::string::npos) << err_.str();
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(out + ".partial"));
}

// Issue 13: the output goes through a fresh hidden temp, never a fixed
// name: a symlink planted at the old temp name OUT.partial (or at OUT) is
// not written through.
TEST_F(PackTest, PlantedSymlinksAreNotWrittenThrough) {
  const fs::path victim = dir_ / "victim";
  std::ofstream(victim) << "precious";
  const std::string out = (dir_ / "linked.hrry").string();
  fs::create_symlink(victim, out + ".partial");
  ASSERT_EQ(Run({"--sample", "-o", out}), kExitOk) << err_.str();
  fs::remove(out);
  fs::create_symlink(victim, out);
  ASSERT_EQ(Run({"--sample", "-o", out}), kExitOk) << err_.str();
  std::ifstream in(victim);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "precious");
  EXPECT_FALSE(fs::is_symlink(out));
  EXPECT_GT(fs::file_size(out), 100u);
}

TEST_F(PackTest, UsageErrors) {
  EXPECT_EQ(Run({"--sample"}), kExitError);                  // no -o
  EXPECT_EQ(Run({"-o", "x.hrry"}), kExitError);              // no input
  EXPECT_EQ(Run({"-o", "x.hrry", "noequals"}), kExitError);  // NAME=
  EXPECT_EQ(Run({"-o", "x.hrry", "--bogus", "a=b"}), kExitError);
  EXPECT_EQ(Run({"-o", (dir_ / "x.hrry").string(), "a=/nonexistent"}),
            kExitError);
}

}  // namespace
}  // namespace hurray::tools
