// WriteBehind (stream/ingest/write_behind.h): many files written in order
// through a small pool, a failing fd's error at the next Write or Wait with
// its name, Cancel and destruction with writes pending.
#include "stream/ingest/write_behind.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/types/span.h"
#include "gtest/gtest.h"
#include "stream/container/crc32c.h"

namespace hurray::stream::ingest {
namespace {

class TempDir {
 public:
  TempDir() {
    std::string t = ::testing::TempDir() + "/write_behind_XXXXXX";
    path_ = ::mkdtemp(t.data());
  }
  ~TempDir() { std::system(("rm -rf '" + path_ + "'").c_str()); }
  std::string File(int i) const { return path_ + "/f" + std::to_string(i); }

 private:
  std::string path_;
};

std::vector<uint8_t> ReadAll(const std::string& path) {
  std::vector<uint8_t> out;
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return out;
  uint8_t b[65536];
  for (ssize_t n; (n = ::read(fd, b, sizeof b)) > 0;) {
    out.insert(out.end(), b, b + n);
  }
  ::close(fd);
  return out;
}

// The bytes of file `f`'s buffer `k`: their length and contents vary.
std::vector<uint8_t> Chunk(int f, int k) {
  std::vector<uint8_t> c(1000 + 37 * k + 101 * f);
  for (size_t i = 0; i < c.size(); ++i) {
    c[i] = static_cast<uint8_t>(f * 31 + k * 7 + i);
  }
  return c;
}

TEST(WriteBehindTest, ManyFilesInterleavedKeepTheirOrderAndCrc) {
  TempDir dir;
  constexpr int kFiles = 7, kChunks = 50;
  WriteBehind wb(2);
  std::vector<int> fds;
  std::vector<std::unique_ptr<WriteBehind::File>> files;
  std::vector<std::vector<uint8_t>> expected(kFiles);
  for (int f = 0; f < kFiles; ++f) {
    fds.push_back(::open(dir.File(f).c_str(), O_WRONLY | O_CREAT, 0644));
    ASSERT_GE(fds.back(), 0);
    files.push_back(
        std::make_unique<WriteBehind::File>(&wb, fds.back(), dir.File(f)));
  }
  std::vector<uint8_t> buf;
  for (int k = 0; k < kChunks; ++k) {
    for (int f = 0; f < kFiles; ++f) {
      const std::vector<uint8_t> c = Chunk(f, k);
      buf.insert(buf.end(), c.begin(), c.end());
      expected[f].insert(expected[f].end(), c.begin(), c.end());
      ASSERT_TRUE(files[f]->Write(&buf).ok());
      EXPECT_TRUE(buf.empty());
    }
  }
  for (int f = 0; f < kFiles; ++f) {
    ASSERT_TRUE(files[f]->Wait().ok());
    EXPECT_EQ(files[f]->crc(), container::Crc32cExtend(0, expected[f]));
    files[f].reset();
    ASSERT_EQ(::close(fds[f]), 0);
    EXPECT_EQ(ReadAll(dir.File(f)), expected[f]) << f;
  }
}

TEST(WriteBehindTest, SetCrcContinuesFromTheGivenValue) {
  TempDir dir;
  WriteBehind wb;
  const int fd = ::open(dir.File(0).c_str(), O_WRONLY | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  WriteBehind::File file(&wb, fd, dir.File(0));
  const std::vector<uint8_t> a = Chunk(0, 0), b = Chunk(0, 1);
  std::vector<uint8_t> buf = b;
  file.set_crc(container::Crc32cExtend(0, a));
  ASSERT_TRUE(file.Write(&buf).ok());
  ASSERT_TRUE(file.Wait().ok());
  std::vector<uint8_t> ab = a;
  ab.insert(ab.end(), b.begin(), b.end());
  EXPECT_EQ(file.crc(), container::Crc32cExtend(0, ab));
  ::close(fd);
}

TEST(WriteBehindTest, AFullDeviceFailsTheNextWriteOrWaitWithItsName) {
  const int full = ::open("/dev/full", O_WRONLY);
  if (full < 0) GTEST_SKIP() << "no /dev/full";
  TempDir dir;
  const int good = ::open(dir.File(0).c_str(), O_WRONLY | O_CREAT, 0644);
  ASSERT_GE(good, 0);
  WriteBehind wb(1);
  WriteBehind::File bad(&wb, full, "OUT/.full-temp");
  WriteBehind::File ok(&wb, good, dir.File(0));
  std::vector<uint8_t> buf = Chunk(1, 1);
  // Queued: the error is not known yet.
  ASSERT_TRUE(bad.Write(&buf).ok());
  const absl::Status waited = bad.Wait();
  EXPECT_EQ(waited.code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(waited.message(),
            "cannot write OUT/.full-temp: No space left on device");
  // Latched: every later Write of that file returns it, queuing nothing.
  buf = Chunk(1, 2);
  EXPECT_EQ(bad.Write(&buf), waited);
  EXPECT_TRUE(buf.empty());
  EXPECT_EQ(bad.Wait(), waited);
  // The other file is not touched by it.
  buf = Chunk(0, 0);
  ASSERT_TRUE(ok.Write(&buf).ok());
  EXPECT_TRUE(ok.Wait().ok());
  EXPECT_EQ(ReadAll(dir.File(0)), Chunk(0, 0));
  ::close(good);
  ::close(full);
}

TEST(WriteBehindTest, AnErrorComesBackFromALaterWrite) {
  const int full = ::open("/dev/full", O_WRONLY);
  if (full < 0) GTEST_SKIP() << "no /dev/full";
  WriteBehind wb(1);
  WriteBehind::File bad(&wb, full, "OUT/.t");
  absl::Status s;
  // With one buffer in flight, the third Write waits for the first to
  // fail; the error must come back by then at the latest.
  for (int k = 0; k < 3 && s.ok(); ++k) {
    std::vector<uint8_t> buf = Chunk(0, k);
    s = bad.Write(&buf);
  }
  if (s.ok()) s = bad.Wait();
  EXPECT_EQ(s.message(), "cannot write OUT/.t: No space left on device");
  ::close(full);
}

// A pipe nobody reads blocks the writer thread: writes stay pending.
TEST(WriteBehindTest, CancelDropsQueuedWritesAndWaitsForTheOneInProgress) {
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  TempDir dir;
  const int other = ::open(dir.File(0).c_str(), O_WRONLY | O_CREAT, 0644);
  ASSERT_GE(other, 0);
  WriteBehind wb(3);
  auto file = std::make_unique<WriteBehind::File>(&wb, p[1], "pipe");
  WriteBehind::File next(&wb, other, dir.File(0));
  // More than the pipe holds (64 KiB): the first write blocks.
  std::vector<uint8_t> buf(size_t{1} << 20, 7);
  ASSERT_TRUE(file->Write(&buf).ok());
  buf.assign(1000, 8);
  ASSERT_TRUE(file->Write(&buf).ok());
  buf = Chunk(0, 0);
  ASSERT_TRUE(next.Write(&buf).ok());  // queued behind the pipe's
  // The first write is in progress once bytes are in the pipe.
  pollfd pfd = {p[0], POLLIN, 0};
  ASSERT_EQ(::poll(&pfd, 1, -1), 1);
  // Drain the pipe from here so that the write in progress ends; Cancel
  // must not return before it did, and the queued 1000 bytes are dropped.
  std::thread reader([&] {
    uint8_t b[65536];
    size_t total = 0;
    for (ssize_t n; (n = ::read(p[0], b, sizeof b)) > 0;) total += n;
    EXPECT_EQ(total, size_t{1} << 20);
  });
  file.reset();   // Cancel
  ::close(p[1]);  // safe: nothing in flight on it
  reader.join();
  ASSERT_TRUE(next.Wait().ok());
  EXPECT_EQ(ReadAll(dir.File(0)), Chunk(0, 0));
  ::close(other);
  ::close(p[0]);
}

TEST(WriteBehindTest, DestroyedWithWritesPendingWritesThemAndJoins) {
  TempDir dir;
  const int fd = ::open(dir.File(0).c_str(), O_WRONLY | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  std::vector<uint8_t> expected;
  {
    WriteBehind wb(4);
    WriteBehind::File file(&wb, fd, dir.File(0));
    for (int k = 0; k < 4; ++k) {
      std::vector<uint8_t> buf = Chunk(0, k);
      ASSERT_TRUE(file.Write(&buf).ok());
    }
    // The File goes first (as in DequantSink): its pending writes are
    // dropped or finished, then the thread is joined.
  }
  ::close(fd);
  const std::vector<uint8_t> got = ReadAll(dir.File(0));
  // A prefix of whole buffers, in order.
  size_t at = 0;
  for (int k = 0; k < 4 && at < got.size(); ++k) {
    const std::vector<uint8_t> c = Chunk(0, k);
    ASSERT_LE(at + c.size(), got.size());
    EXPECT_TRUE(std::equal(c.begin(), c.end(), got.begin() + at));
    at += c.size();
  }
  EXPECT_EQ(at, got.size());
}

TEST(WriteBehindTest, NoThreadWithoutAWrite) {
  WriteBehind wb;  // destroyed without ever starting its thread
  WriteBehind::File file(&wb, -1, "none");
  std::vector<uint8_t> empty;
  EXPECT_TRUE(file.Write(&empty).ok());
  EXPECT_TRUE(file.Wait().ok());
}

}  // namespace
}  // namespace hurray::stream::ingest
