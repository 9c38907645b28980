#include "stream/ingest/output/file_block_cache.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace hurray::stream::ingest {
namespace {

// A temp file holding `bytes`, removed at the end.
class TempBytes {
 public:
  explicit TempBytes(const std::vector<uint8_t>& bytes) {
    std::string path = ::testing::TempDir() + "/cacheXXXXXX";
    fd_ = ::mkstemp(path.data());
    EXPECT_GE(fd_, 0);
    ::unlink(path.c_str());
    EXPECT_EQ(::write(fd_, bytes.data(), bytes.size()),
              static_cast<ssize_t>(bytes.size()));
  }
  ~TempBytes() { ::close(fd_); }
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
};

std::vector<uint8_t> RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> b(n);
  for (uint8_t& x : b) x = static_cast<uint8_t>(rng());
  return b;
}

TEST(FileBlockCache, RandomReadsMatchTheFileInASmallBudget) {
  const std::vector<uint8_t> bytes = RandomBytes(300000, 1);
  TempBytes file(bytes);
  FileBlockCache::Options o;
  o.budget_bytes = 8 * (256 + FileBlockCache::kMaxRead);  // one set
  o.block_bytes = 256;
  absl::StatusOr<FileBlockCache> c =
      FileBlockCache::Create(file.fd(), 0, bytes.size(), o, "t");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->slots(), 8u);
  std::mt19937_64 rng(2);
  for (int i = 0; i < 20000; ++i) {
    const size_t n = 1 + rng() % FileBlockCache::kMaxRead;
    const uint64_t at = rng() % (bytes.size() - n + 1);
    const uint8_t* p = c->Read(at, n);
    ASSERT_NE(p, nullptr) << c->status();
    ASSERT_EQ(std::memcmp(p, bytes.data() + at, n), 0) << at << " " << n;
  }
  // The last bytes of the file, and a read across a block boundary.
  const uint8_t* last = c->Read(bytes.size() - 3, 3);
  ASSERT_NE(last, nullptr);
  EXPECT_EQ(std::memcmp(last, bytes.data() + bytes.size() - 3, 3), 0);
  const uint8_t* across = c->Read(255, 2);
  ASSERT_NE(across, nullptr);
  EXPECT_EQ(std::memcmp(across, bytes.data() + 255, 2), 0);
}

TEST(FileBlockCache, StaysWithinItsBudget) {
  const std::vector<uint8_t> bytes = RandomBytes(1 << 20, 3);
  TempBytes file(bytes);
  for (size_t budget : {size_t{1000}, size_t{40000}, size_t{1} << 24}) {
    FileBlockCache::Options o;
    o.budget_bytes = budget;
    o.block_bytes = 1024;
    absl::StatusOr<FileBlockCache> c =
        FileBlockCache::Create(file.fd(), 0, bytes.size(), o, "t");
    ASSERT_TRUE(c.ok());
    // One set of 8 at least; else within the budget, and not much more
    // than the file's blocks.
    EXPECT_LE(c->slots() * (1024 + FileBlockCache::kMaxRead),
              std::max<size_t>(budget, 8 * (1024 + FileBlockCache::kMaxRead)));
    EXPECT_LE(c->slots(), 4 * (bytes.size() / 1024 + 1 + 8));
  }
}

TEST(FileBlockCache, ReusesCachedBlocks) {
  const std::vector<uint8_t> bytes = RandomBytes(64 * 1024, 4);
  TempBytes file(bytes);
  FileBlockCache::Options o;
  o.block_bytes = 1024;
  absl::StatusOr<FileBlockCache> c =
      FileBlockCache::Create(file.fd(), 0, bytes.size(), o, "t");
  ASSERT_TRUE(c.ok());
  // A column-major walk of a 64 x 1024 byte matrix: 64 places of the file
  // at once; every block is read once.
  for (uint64_t r = 0; r < 1024; ++r) {
    for (uint64_t col = 0; col < 64; ++col) {
      ASSERT_EQ(*c->Read(col * 1024 + r, 1), bytes[col * 1024 + r]);
    }
  }
  EXPECT_EQ(c->block_reads(), 64u);
}

TEST(FileBlockCache, ABaseOffsetIsAdded) {
  const std::vector<uint8_t> bytes = RandomBytes(5000, 5);
  TempBytes file(bytes);
  absl::StatusOr<FileBlockCache> c =
      FileBlockCache::Create(file.fd(), 1000, 4000, {}, "t");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c->Read(0, 1), bytes[1000]);
  EXPECT_EQ(*c->Read(3999, 1), bytes[4999]);
}

TEST(FileBlockCache, ReadsOutOfRangeOrPastTheFileFail) {
  const std::vector<uint8_t> bytes = RandomBytes(1000, 6);
  TempBytes file(bytes);
  absl::StatusOr<FileBlockCache> c =
      FileBlockCache::Create(file.fd(), 0, 1000, {}, "t");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->Read(999, 2), nullptr);
  EXPECT_EQ(c->status().code(), absl::StatusCode::kOutOfRange);
  // A file shorter than the caller says: a read error, not garbage.
  absl::StatusOr<FileBlockCache> d =
      FileBlockCache::Create(file.fd(), 0, 9000, {}, "t");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->Read(8000, 1), nullptr);
  EXPECT_EQ(d->status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(d->status().message().find("shorter"), std::string::npos);
  // A closed descriptor.
  absl::StatusOr<FileBlockCache> e =
      FileBlockCache::Create(-1, 0, 1000, {}, "t");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->Read(0, 1), nullptr);
  EXPECT_EQ(e->status().code(), absl::StatusCode::kDataLoss);
}

TEST(FileBlockCache, RefusesABadBlockSize) {
  FileBlockCache::Options o;
  o.block_bytes = 1000;
  EXPECT_FALSE(FileBlockCache::Create(0, 0, 10, o, "t").ok());
  o.block_bytes = 32;
  EXPECT_FALSE(FileBlockCache::Create(0, 0, 10, o, "t").ok());
}

}  // namespace
}  // namespace hurray::stream::ingest
