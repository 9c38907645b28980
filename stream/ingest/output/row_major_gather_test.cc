// GatherRowMajor from a file (through the block cache, in budgets from one
// set to plenty) gives the bytes of the in-memory gather, for every dense
// layout and element width; a column-major walk reads each block about once.
#include "stream/ingest/output/row_major_gather.h"

#include <stdlib.h>
#include <unistd.h>

#include <random>
#include <string>
#include <vector>

#include "dequant/testing/test_tensor.h"
#include "gtest/gtest.h"
#include "parser/descriptor.h"
#include "parser/element_type.h"

namespace hurray::stream::ingest {
namespace {

using dequant::Scheme;
using dequant::testing::TensorSpec;
using dequant::testing::TestTensor;

// `prefix` random bytes, then `data`, in an unlinked temp file.
class TempFile {
 public:
  TempFile(size_t prefix, absl::Span<const uint8_t> data) {
    std::string path = ::testing::TempDir() + "/gatherXXXXXX";
    fd_ = ::mkstemp(path.data());
    EXPECT_GE(fd_, 0);
    ::unlink(path.c_str());
    const std::vector<uint8_t> pad(prefix, 0xA5);
    EXPECT_EQ(::write(fd_, pad.data(), pad.size()),
              static_cast<ssize_t>(pad.size()));
    EXPECT_EQ(::write(fd_, data.data(), data.size()),
              static_cast<ssize_t>(data.size()));
  }
  ~TempFile() { ::close(fd_); }
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
};

std::vector<uint8_t> FromMemory(const TensorDescriptor& d,
                                absl::Span<const uint8_t> data) {
  std::vector<uint8_t> out;
  EXPECT_TRUE(GatherRowMajor(d, data, 1000, [&](absl::Span<const uint8_t> c) {
                out.insert(out.end(), c.begin(), c.end());
                return absl::OkStatus();
              }).ok());
  return out;
}

std::vector<uint8_t> FromFile(const TensorDescriptor& d, const TempFile& f,
                              size_t prefix, size_t size, size_t budget,
                              uint64_t* block_reads = nullptr) {
  GatherFile file;
  file.fd = f.fd();
  file.base = prefix;
  file.size = size;
  file.name = "spool";
  file.cache_bytes = budget;
  std::vector<uint8_t> out;
  absl::Status s = GatherRowMajorFromFile(
      d, file, 1000,
      [&](absl::Span<const uint8_t> c) {
        out.insert(out.end(), c.begin(), c.end());
        return absl::OkStatus();
      },
      block_reads);
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

TEST(GatherRowMajor, FromAFileAsFromMemoryInEveryLayout) {
  std::mt19937_64 rng(7);
  struct L {
    uint8_t tag;
    bool interleaved;
    std::vector<uint64_t> shape;
  };
  const L layouts[] = {
      {layout_tag::kColumnMajor, false, {37, 61}},
      {layout_tag::kStrided, false, {9, 7, 11}},
      {layout_tag::kStrided, true, {12, 9}},
      {layout_tag::kTiled, false, {29, 41}},
      {layout_tag::kMorton, false, {19, 23}},
      {layout_tag::kHilbert, false, {32, 32}},
  };
  const uint8_t types[] = {type_tag::kInt8, type_tag::kInt4, type_tag::kUInt2,
                           type_tag::kInt16, type_tag::kInt32};
  for (const L& l : layouts) {
    for (uint8_t type : types) {
      TensorSpec s;
      s.scheme = Scheme::kPerTensorAffine;
      s.storage_type = type;
      s.shape = l.shape;
      s.layout =
          dequant::testing::RandomLayout(l.tag, l.shape, rng, l.interleaved);
      const TestTensor t = dequant::testing::MakeTensor(s, rng);
      const std::vector<uint8_t> want = FromMemory(*t.descriptor, t.data());
      ASSERT_FALSE(want.empty());
      const size_t prefix = rng() % 5000;
      TempFile f(prefix, t.data());
      // One set of eight 256-byte blocks (every walk thrashes), a few sets,
      // and the default.
      for (size_t budget : {size_t{1}, size_t{20000}, size_t{32} << 20}) {
        EXPECT_EQ(FromFile(*t.descriptor, f, prefix, t.data().size(), budget),
                  want)
            << s.Name() << " budget " << budget;
      }
    }
  }
}

TEST(GatherRowMajor, AColumnMajorWalkReadsEachBlockAboutOnce) {
  std::mt19937_64 rng(8);
  TensorSpec s;
  s.scheme = Scheme::kPerTensorAffine;
  s.storage_type = type_tag::kInt8;
  s.shape = {2048, 1024};  // 1024 columns of 2 KiB
  s.layout =
      dequant::testing::RandomLayout(layout_tag::kColumnMajor, s.shape, rng);
  const TestTensor t = dequant::testing::MakeTensor(s, rng);
  TempFile f(0, t.data());
  uint64_t reads = 0;
  const std::vector<uint8_t> got =
      FromFile(*t.descriptor, f, 0, t.data().size(), size_t{4} << 20, &reads);
  EXPECT_EQ(got, FromMemory(*t.descriptor, t.data()));
  // 4 MiB of cache for 1024 places: 512-byte blocks, 4096 of them in 2 MiB.
  // A cache that thrashed would read one per element (2 Mi).
  EXPECT_GE(reads, 4096u);
  EXPECT_LE(reads, 4096u * 21 / 20);
}

TEST(GatherRowMajor, AFileShorterThanItsBufferIsAReadError) {
  std::mt19937_64 rng(9);
  TensorSpec s;
  s.scheme = Scheme::kPerTensorAffine;
  s.storage_type = type_tag::kInt8;
  s.shape = {64, 64};
  s.layout =
      dequant::testing::RandomLayout(layout_tag::kColumnMajor, s.shape, rng);
  const TestTensor t = dequant::testing::MakeTensor(s, rng);
  TempFile f(0, t.data().first(t.data().size() / 2));
  GatherFile file;
  file.fd = f.fd();
  file.size = t.data().size();
  file.name = "spool";
  const absl::Status st = GatherRowMajorFromFile(
      *t.descriptor, file, 1000,
      [](absl::Span<const uint8_t>) { return absl::OkStatus(); });
  EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss) << st;
  EXPECT_NE(st.message().find("spool"), std::string::npos) << st;
}

}  // namespace
}  // namespace hurray::stream::ingest
