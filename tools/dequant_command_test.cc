// `hurray dequant`: the output file holds exactly the scalar reference's
// float32 values, little-endian, for every scheme; invalid input exits 1
// with the rule id; what this build cannot dequantize exits 2.
#include "tools/dequant_command.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "dequant/scalar.h"
#include "dequant/testing/test_tensor.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "parser/element_type.h"
#include "parser/encoder.h"
#include "parser/wire.h"
#include "stream/ingest/output/npy.h"
#include "tests/vectors.h"
#include "tools/command_util.h"

namespace hurray::tools {
namespace {

using dequant::Scheme;
using dequant::testing::TensorSpec;
using dequant::testing::TestTensor;

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/" + name;
}

// The streaming format: descriptor, then every buffer back to back.
std::string WriteStream(const TestTensor& t, const std::string& name,
                        size_t drop_tail = 0) {
  std::vector<uint8_t> bytes = *Encode(*t.descriptor);
  for (const std::vector<uint8_t>& b : t.buffers) {
    bytes.insert(bytes.end(), b.begin(), b.end());
  }
  bytes.resize(bytes.size() - drop_tail);
  const std::string path = TempPath(name);
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
  return path;
}

struct CommandRun {
  int exit_code;
  std::string out, err;
};
CommandRun Dequant(std::vector<std::string> args) {
  std::ostringstream out, err;
  const int code = RunDequant(args, out, err);
  return {code, out.str(), err.str()};
}

std::vector<float> ReadFloats(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), {});
  std::vector<float> v(bytes.size() / 4);
  for (size_t i = 0; i < v.size(); ++i) {
    v[i] = wire::LoadF32(reinterpret_cast<const uint8_t*>(&bytes[4 * i]));
  }
  return v;
}

TEST(DequantCommandTest, EverySchemeMatchesTheReference) {
  std::mt19937_64 rng(7);
  const TensorSpec specs[] = {
      {Scheme::kPerTensorAffine, type_tag::kInt8, {3, 5}},
      {Scheme::kPerChannelAffine, type_tag::kUInt4, {4, 7}, 1},
      {Scheme::kPerBlockAffine,
       type_tag::kInt4,
       {5, 40},
       1,
       16,
       type_tag::kFloat16},
      {Scheme::kNf4, type_tag::kUInt4, {64, 3}, 0, 32},
      {Scheme::kMxfp, type_tag::kFloat6E2M3, {2, 64}, 1, 32},
  };
  int i = 0;
  for (const TensorSpec& spec : specs) {
    const TestTensor t = dequant::testing::MakeTensor(spec, rng);
    const std::string in = WriteStream(t, "in" + std::to_string(i) + ".hrs");
    // The default: a .npy file, its header then the floats.
    const std::string out = TempPath("out" + std::to_string(i++) + ".npy");
    const CommandRun r = Dequant({in, "-o", out});
    ASSERT_EQ(r.exit_code, kExitOk) << spec.Name() << r.out << r.err;
    std::vector<float> want;
    ASSERT_TRUE(
        dequant::ReferenceDequantize(*t.descriptor, t.data(), t.params(), &want)
            .ok());
    std::vector<float> got = ReadFloats(out);
    const std::string header =
        stream::ingest::NpyHeader("<f4", t.descriptor->dims());
    ASSERT_GE(got.size(), header.size() / 4);
    std::string head(header.size(), '\0');
    std::memcpy(head.data(), got.data(), header.size());
    EXPECT_EQ(head, header);
    got.erase(got.begin(), got.begin() + header.size() / 4);
    ASSERT_EQ(got.size(), want.size()) << spec.Name();
    EXPECT_EQ(std::memcmp(got.data(), want.data(), 4 * got.size()), 0)
        << spec.Name();
  }
}

// A tensor in a layout other than row-major (a random one of the tag,
// `interleaved`: overlapping strides).
struct LayoutCase {
  uint8_t layout;
  bool interleaved;
  TensorSpec spec;
};

TEST(DequantCommandTest, EveryDenseLayoutMatchesTheReference) {
  std::mt19937_64 rng(13);
  const LayoutCase cases[] = {
      {layout_tag::kColumnMajor,
       false,
       {Scheme::kPerChannelAffine, type_tag::kInt4, {5, 7}, 0}},
      {layout_tag::kStrided,
       false,
       {Scheme::kPerBlockAffine, type_tag::kUInt2, {3, 9}, 1, 4}},
      {layout_tag::kStrided,
       true,
       {Scheme::kPerTensorAffine, type_tag::kInt16, {4, 3}}},
      {layout_tag::kTiled,
       false,
       {Scheme::kNf4, type_tag::kUInt4, {5, 13}, 1, 8}},
      {layout_tag::kMorton,
       false,
       {Scheme::kMxfp, type_tag::kFloat8E4M3, {3, 32}, 1, 16}},
      {layout_tag::kHilbert,
       false,
       {Scheme::kMxfp, type_tag::kFloat6E3M2, {16, 16}, 0, 16}},
  };
  int i = 0;
  for (LayoutCase c : cases) {
    c.spec.layout = dequant::testing::RandomLayout(
        c.layout, dequant::testing::StoredShape(c.spec), rng, c.interleaved);
    const TestTensor t = dequant::testing::MakeTensor(c.spec, rng);
    const std::string in = WriteStream(t, "l" + std::to_string(i) + ".hrs");
    const std::string out = TempPath("l" + std::to_string(i++) + ".f32");
    const CommandRun r = Dequant({in, "-o", out, "--format", "f32"});
    ASSERT_EQ(r.exit_code, kExitOk) << c.spec.Name() << r.out << r.err;
    std::vector<float> want;
    ASSERT_TRUE(
        dequant::ReferenceDequantize(*t.descriptor, t.data(), t.params(), &want)
            .ok());
    const std::vector<float> got = ReadFloats(out);
    ASSERT_EQ(got.size(), want.size()) << c.spec.Name();
    EXPECT_EQ(std::memcmp(got.data(), want.data(), 4 * got.size()), 0)
        << c.spec.Name();
  }
}

std::vector<uint8_t> ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), {});
}

std::vector<std::string> Files(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Issue 16: a non-row-major tensor whose data buffer passes the memory
// limit (lowered here to 512 bytes instead of allocating GiBs) is copied to
// a temp of OUT's directory and read back from it in row-major order: the
// output equals the scalar reference (the logical row-major values) and,
// byte for byte, the in-memory run's; the temp is gone afterwards.
TEST(DequantCommandTest, LargeNonRowMajorIsSpooledToATempFile) {
  std::mt19937_64 rng(29);
  const LayoutCase cases[] = {
      {layout_tag::kColumnMajor,
       false,
       {Scheme::kPerChannelAffine, type_tag::kInt4, {64, 70}, 0}},
      {layout_tag::kStrided,
       true,
       {Scheme::kPerTensorAffine, type_tag::kInt16, {48, 40}}},
      {layout_tag::kTiled,
       false,
       {Scheme::kNf4, type_tag::kUInt4, {40, 130}, 1, 8}},
      {layout_tag::kMorton,
       false,
       {Scheme::kMxfp, type_tag::kFloat8E4M3, {32, 64}, 1, 16}},
  };
  DequantLimits small;
  small.data_memory_bytes = 512;
  int i = 0;
  for (LayoutCase c : cases) {
    c.spec.layout = dequant::testing::RandomLayout(
        c.layout, dequant::testing::StoredShape(c.spec), rng, c.interleaved);
    const TestTensor t = dequant::testing::MakeTensor(c.spec, rng);
    ASSERT_GT(t.data().size(), small.data_memory_bytes) << c.spec.Name();
    const std::string in = WriteStream(t, "big" + std::to_string(i) + ".hrs");
    const std::string dir = TempPath("big" + std::to_string(i++));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    std::vector<float> want;
    ASSERT_TRUE(
        dequant::ReferenceDequantize(*t.descriptor, t.data(), t.params(), &want)
            .ok());
    for (const char* format : {"f32", "npy"}) {
      SCOPED_TRACE(c.spec.Name() + " " + format);
      std::ostringstream out, err, out2, err2;
      const std::string spooled = dir + "/spooled." + format;
      ASSERT_EQ(RunDequant({"--json", in, "-o", spooled, "--format", format},
                           out, err, small),
                kExitOk)
          << out.str() << err.str();
      const nlohmann::json j = nlohmann::json::parse(out.str());
      EXPECT_EQ(j["spooled_bytes"], t.data().size());
      const std::string whole = dir + "/memory." + format;
      ASSERT_EQ(RunDequant({"--json", in, "-o", whole, "--format", format},
                           out2, err2),
                kExitOk)
          << out2.str() << err2.str();
      EXPECT_EQ(nlohmann::json::parse(out2.str())["spooled_bytes"], 0);
      const std::vector<uint8_t> got = ReadBytes(spooled);
      EXPECT_EQ(got, ReadBytes(whole));
      ASSERT_GE(got.size(), 4 * want.size());
      // The last 4·n bytes (after the .npy header) are the reference's.
      EXPECT_EQ(std::memcmp(got.data() + got.size() - 4 * want.size(),
                            want.data(), 4 * want.size()),
                0);
    }
    // Only the outputs: no temp left behind.
    EXPECT_EQ(Files(dir),
              (std::vector<std::string>{"memory.f32", "memory.npy",
                                        "spooled.f32", "spooled.npy"}));
  }
}

TEST(DequantCommandTest, JsonSummary) {
  std::mt19937_64 rng(1);
  const TestTensor t = dequant::testing::MakeTensor(
      {Scheme::kPerChannelAffine, type_tag::kInt8, {2, 3}, 0}, rng);
  const std::string in = WriteStream(t, "json.hrs");
  const CommandRun r = Dequant({"--json", in, "-o", TempPath("json.f32")});
  EXPECT_EQ(r.exit_code, kExitOk);
  EXPECT_NE(r.out.find(R"("valid":true,)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(R"("elements":6,"scheme":"per_channel_affine",)"
                       R"("storage":"int8","spooled_bytes":0})"),
            std::string::npos)
      << r.out;
}

TEST(DequantCommandTest, InvalidInputExitsOneWithTheRule) {
  std::mt19937_64 rng(2);
  TestTensor t = dequant::testing::MakeTensor(
      {Scheme::kMxfp, type_tag::kFloat8E4M3, {1, 32}, 1, 32}, rng);
  dequant::testing::SetScaleByte(&t, 0, 0xFF);  // QNT-MX-07
  CommandRun r =
      Dequant({"--json", WriteStream(t, "mx.hrs"), "-o", TempPath("x")});
  EXPECT_EQ(r.exit_code, kExitRejected);
  EXPECT_NE(r.out.find(R"("valid":false,"rule":"QNT-MX-07")"),
            std::string::npos)
      << r.out;

  // A stream that ends inside a buffer (RESOLUTIONS.md 14).
  t = dequant::testing::MakeTensor(
      {Scheme::kPerTensorAffine, type_tag::kInt8, {4, 4}}, rng);
  r = Dequant({WriteStream(t, "cut.hrs", 3), "-o", TempPath("y")});
  EXPECT_EQ(r.exit_code, kExitRejected);
  EXPECT_NE(r.out.find("STREAM-EOF-BUFFER"), std::string::npos) << r.out;

  // A descriptor the validator rejects.
  std::vector<uint8_t> bad = vectors::Bytes(*vectors::PerTensorInt8());
  bad[0] = 'X';
  const std::string path = TempPath("bad.hrs");
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bad.data()),
             static_cast<std::streamsize>(bad.size()));
  r = Dequant({path, "-o", TempPath("z")});
  EXPECT_EQ(r.exit_code, kExitRejected);
  EXPECT_NE(r.out.find("DESC-HDR-02"), std::string::npos) << r.out;
}

// Issue 13: OUT is published by rename once complete; a symlink planted at
// OUT is replaced, never written through.
TEST(DequantCommandTest, ASymlinkAtTheOutputIsNotWrittenThrough) {
  std::mt19937_64 rng(3);
  const TestTensor t = dequant::testing::MakeTensor(
      {Scheme::kPerTensorAffine, type_tag::kInt8, {4, 4}}, rng);
  const std::string victim = TempPath("dequant_victim");
  std::ofstream(victim) << "precious";
  const std::string out = TempPath("dequant_link.f32");
  std::remove(out.c_str());
  ASSERT_EQ(::symlink(victim.c_str(), out.c_str()), 0);
  const CommandRun r =
      Dequant({WriteStream(t, "link.hrs"), "-o", out, "--format", "f32"});
  ASSERT_EQ(r.exit_code, kExitOk) << r.err;
  std::ifstream in(victim);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "precious");
  struct stat st;
  ASSERT_EQ(::lstat(out.c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(ReadFloats(out).size(), 16u);
}

// --format safetensors: one tensor named after FILE's stem, the header
// first; --dtype bfloat16 rounds the reference's floats to nearest even
// (written out here on the float32 bits).
TEST(DequantCommandTest, SafetensorsWithBfloat16) {
  std::mt19937_64 rng(21);
  const TensorSpec spec = {
      Scheme::kPerChannelAffine, type_tag::kInt8, {3, 6}, 1};
  const TestTensor t = dequant::testing::MakeTensor(spec, rng);
  const std::string in = WriteStream(t, "weights.hrs");
  const std::string out = TempPath("weights.safetensors");
  const CommandRun r = Dequant(
      {in, "-o", out, "--format", "safetensors", "--dtype", "bfloat16"});
  ASSERT_EQ(r.exit_code, kExitOk) << r.out << r.err;
  std::vector<float> want;
  ASSERT_TRUE(
      dequant::ReferenceDequantize(*t.descriptor, t.data(), t.params(), &want)
          .ok());
  std::ifstream f(out, std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(f)), {});
  ASSERT_GE(bytes.size(), 8u);
  const uint64_t n = wire::LoadU64(reinterpret_cast<const uint8_t*>(&bytes[0]));
  ASSERT_EQ(n % 8, 0u);
  ASSERT_EQ(bytes.size(), 8 + n + 2 * want.size());
  const nlohmann::json h =
      nlohmann::json::parse(std::string(&bytes[8], static_cast<size_t>(n)));
  EXPECT_EQ(h.size(), 1u) << h.dump();
  EXPECT_EQ(h["weights"]["dtype"], "BF16");
  EXPECT_EQ(h["weights"]["shape"], nlohmann::json::array({3, 6}));
  EXPECT_EQ(h["weights"]["data_offsets"],
            nlohmann::json::array({0, 2 * want.size()}));
  for (size_t i = 0; i < want.size(); ++i) {
    uint32_t bits = 0;
    std::memcpy(&bits, &want[i], 4);
    const uint16_t bf16 =
        static_cast<uint16_t>((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16);
    EXPECT_EQ(
        wire::LoadU16(reinterpret_cast<const uint8_t*>(&bytes[8 + n + 2 * i])),
        bf16)
        << i;
  }
}

TEST(DequantCommandTest, UsageAndUnsupportedExitTwo) {
  EXPECT_EQ(
      Dequant({"a.hrs", "-o", "x", "--format", "npy", "--dtype", "bfloat16"})
          .exit_code,
      kExitError);  // numpy has no bfloat16
  EXPECT_EQ(Dequant({"a.hrs", "-o", "x", "--format", "csv"}).exit_code,
            kExitError);
  EXPECT_EQ(Dequant({"a.hrs"}).exit_code, kExitError);    // no -o
  EXPECT_EQ(Dequant({"-o", "x"}).exit_code, kExitError);  // no FILE
  EXPECT_EQ(Dequant({TempPath("missing.hrs"), "-o", TempPath("m")}).exit_code,
            kExitError);
  // Not quantized.
  const std::vector<uint8_t> dense =
      vectors::Bytes(*vectors::Dense(type_tag::kFloat32, {0}));
  const std::string path = TempPath("dense.hrs");
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(dense.data()),
             static_cast<std::streamsize>(dense.size()));
  const CommandRun r = Dequant({path, "-o", TempPath("d")});
  EXPECT_EQ(r.exit_code, kExitError);
  EXPECT_NE(r.err.find("not quantized"), std::string::npos) << r.err;
}

// A directory (or anything that is not a readable regular file) is an I/O
// error, exit 2, not a verdict on the bytes (it was DESC-HDR-01, exit 1).
TEST(DequantCommandTest, DirectoryOrDeviceInputExitsTwo) {
  const std::string dir = TempPath("a_directory");
  std::filesystem::create_directories(dir);
  for (const std::string& input : {dir, std::string("/dev/null")}) {
    const CommandRun r = Dequant({input, "-o", TempPath("x.f32")});
    EXPECT_EQ(r.exit_code, kExitError) << input << ": " << r.out << r.err;
    EXPECT_EQ(r.out.find("DESC-HDR"), std::string::npos) << r.out;
    EXPECT_NE(r.err.find("hurray dequant"), std::string::npos) << r.err;
  }
  const CommandRun j = Dequant({"--json", dir, "-o", TempPath("x.f32")});
  EXPECT_EQ(j.exit_code, kExitError);
  EXPECT_EQ(j.out.find("\"valid\""), std::string::npos) << j.out;
}

}  // namespace
}  // namespace hurray::tools
