#include "stream/ingest/output/safetensors.h"

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "stream/container/safe_output_dir.h"

namespace hurray::stream::ingest {
namespace {

std::string FreshDir(const std::string& name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string dir = std::string(tmp ? tmp : "/tmp") + "/" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::string Read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::vector<uint8_t> Bytes(std::initializer_list<int> b) {
  return std::vector<uint8_t>(b.begin(), b.end());
}

TEST(Safetensors, HeaderOffsetsDataAndMetadata) {
  const std::string dir = FreshDir("st_basic");
  std::unique_ptr<container::SafeOutputDir> d =
      *container::SafeOutputDir::Open(dir);
  {
    SafetensorsWriter w(d.get());
    ASSERT_TRUE(w.BeginTensor("a", "F32", {2}).ok());
    ASSERT_TRUE(w.Append(Bytes({0, 0, 128, 63})).ok());
    ASSERT_TRUE(w.Append(Bytes({0, 0, 0, 64})).ok());
    w.EndTensor();
    // A tensor that failed half-way leaves nothing.
    ASSERT_TRUE(w.BeginTensor("gone", "U8", {3}).ok());
    ASSERT_TRUE(w.Append(Bytes({9, 9})).ok());
    w.AbandonTensor();
    ASSERT_TRUE(w.BeginTensor("tensor_2", "I16", {1, 1}).ok());
    ASSERT_TRUE(w.Append(Bytes({7, 0})).ok());
    w.EndTensor();
    ASSERT_TRUE(w.BeginTensor("empty", "F16", {0, 4}).ok());
    w.EndTensor();
    w.SetName(1, "b");
    w.SetMetadata({{"model", "x"}, {"n", "3"}});
    ASSERT_TRUE(w.Finish().ok());
  }
  // Only the published file is left.
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    files.push_back(e.path().filename().string());
  }
  EXPECT_EQ(files, std::vector<std::string>{kSafetensorsFileName});
  const std::string f = Read(dir + "/" + kSafetensorsFileName);
  ASSERT_GE(f.size(), 8u);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = n << 8 | static_cast<uint8_t>(f[i]);
  EXPECT_EQ(n % 8, 0u);
  ASSERT_EQ(f.size(), 8 + n + 10);
  const nlohmann::json h = nlohmann::json::parse(f.substr(8, n));
  EXPECT_EQ(h["__metadata__"]["model"], "x");
  EXPECT_EQ(h["__metadata__"]["n"], "3");
  EXPECT_EQ(h["a"]["dtype"], "F32");
  EXPECT_EQ(h["a"]["shape"], nlohmann::json::array({2}));
  EXPECT_EQ(h["a"]["data_offsets"], nlohmann::json::array({0, 8}));
  EXPECT_EQ(h["b"]["dtype"], "I16");
  EXPECT_EQ(h["b"]["data_offsets"], nlohmann::json::array({8, 10}));
  EXPECT_EQ(h["empty"]["shape"], nlohmann::json::array({0, 4}));
  EXPECT_EQ(h["empty"]["data_offsets"], nlohmann::json::array({10, 10}));
  EXPECT_FALSE(h.contains("gone"));
  EXPECT_EQ(f.substr(8 + n), std::string("\0\0\x80\x3f\0\0\0\x40\x07\0", 10));
}

TEST(Safetensors, RepeatedAndReservedNamesAreMadeDistinct) {
  std::vector<SafetensorsEntry> e(3);
  e[0].name = "w";
  e[1].name = "w";
  e[2].name = "__metadata__";
  for (auto& x : e) x.dtype = "F32";
  const nlohmann::json h = nlohmann::json::parse(SafetensorsHeader(e, {}));
  EXPECT_TRUE(h.contains("w"));
  EXPECT_TRUE(h.contains("w~1"));
  EXPECT_TRUE(h.contains("__metadata__~2"));
  EXPECT_FALSE(h.contains("__metadata__"));
  // Not UTF-8: replaced, still valid JSON.
  e.resize(1);
  e[0].name = std::string("a\xff", 2);
  const std::string text = SafetensorsHeader(e, {});
  EXPECT_EQ(text.size() % 8, 0u);
  EXPECT_TRUE(nlohmann::json::parse(text).contains("a\xEF\xBF\xBD"));
}

TEST(Safetensors, DiscardLeavesNothing) {
  const std::string dir = FreshDir("st_discard");
  std::unique_ptr<container::SafeOutputDir> d =
      *container::SafeOutputDir::Open(dir);
  {
    SafetensorsWriter w(d.get());
    ASSERT_TRUE(w.BeginTensor("a", "U8", {1}).ok());
    ASSERT_TRUE(w.Append(Bytes({1})).ok());
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir));
}

}  // namespace
}  // namespace hurray::stream::ingest
