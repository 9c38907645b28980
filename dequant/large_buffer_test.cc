#include "dequant/large_buffer.h"

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace hurray::dequant {
namespace {

bool Aligned(const void* p, size_t to) {
  return reinterpret_cast<uintptr_t>(p) % to == 0;
}

// The "AnonHugePages:" line of this process's smaps_rollup, in KiB; -1 if
// the file cannot be read.
long AnonHugeKib() {
  std::ifstream in("/proc/self/smaps_rollup");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("AnonHugePages:", 0) == 0) {
      std::istringstream fields(line.substr(14));
      long kib = -1;
      fields >> kib;
      return kib;
    }
  }
  return -1;
}

TEST(LargeBufferTest, SmallRequestsComeFromTheHeap) {
  // Below a huge page the block is operator new's; it is usable and freed.
  void* p = AllocateLarge(100);
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(Aligned(p, alignof(std::max_align_t)));
  std::memset(p, 0xAB, 100);
  FreeLarge(p, 100);
  FreeLarge(nullptr, 100);
}

TEST(LargeBufferTest, LargeRequestsStartOnAHugePageAndReadAsZeros) {
  const size_t size = 5 * kHugePageBytes + 12345;
  void* p = AllocateLarge(size);
  ASSERT_NE(p, nullptr);
  if (HugePagesEnabled()) EXPECT_TRUE(Aligned(p, kHugePageBytes));
  const auto* bytes = static_cast<const uint8_t*>(p);
  if (HugePagesEnabled()) {
    // A fresh mapping: zeros to its last byte (operator new promises none).
    EXPECT_EQ(bytes[0], 0);
    EXPECT_EQ(bytes[size - 1], 0);
  }
  std::memset(p, 0x5A, size);  // every byte writable
  EXPECT_EQ(bytes[size - 1], 0x5A);
  FreeLarge(p, size);
}

TEST(LargeBufferTest, TouchedLargeBlocksAreBackedByHugePages) {
  if (!HugePagesEnabled()) GTEST_SKIP() << "transparent huge pages are off";
  const long before = AnonHugeKib();
  if (before < 0) GTEST_SKIP() << "no /proc/self/smaps_rollup";
  // The kernel may still refuse (no free 2 MiB block, khugepaged settings):
  // the advice is a request. Eight pages, so one refusal does not fail it.
  const size_t size = 8 * kHugePageBytes;
  LargeBytes block(size);
  std::memset(block.data(), 1, size);
  const long after = AnonHugeKib();
  EXPECT_GE(after - before, 2048) << "no huge page backs a touched block";
}

TEST(LargeBufferTest, ByteBufferAppendsGrowsAndKeepsItsBlock) {
  LargeByteBuffer b;
  EXPECT_EQ(b.size(), 0u);
  b.Reserve(100);
  const uint8_t head[3] = {1, 2, 3};
  b.Append(head, 3);
  EXPECT_EQ(b.capacity(), 100u);
  // Past the reserved capacity: the block grows and keeps what it held.
  std::vector<uint8_t> big(kHugePageBytes + 5, 9);
  b.Append(big.data(), big.size());
  ASSERT_EQ(b.size(), big.size() + 3);
  EXPECT_GE(b.capacity(), b.size());
  EXPECT_EQ(b.data()[0], 1);
  EXPECT_EQ(b.data()[2], 3);
  EXPECT_EQ(b.data()[3], 9);
  EXPECT_EQ(b.data()[b.size() - 1], 9);
  b.Append(nullptr, 0);
  EXPECT_EQ(b.size(), big.size() + 3);
  // Clear keeps the block; Reserve of less than it holds is a no-op.
  const uint8_t* block = b.data();
  const size_t capacity = b.capacity();
  b.Clear();
  b.Reserve(10);
  EXPECT_EQ(b.size(), 0u);
  EXPECT_EQ(b.data(), block);
  EXPECT_EQ(b.capacity(), capacity);
  b.Append(head + 1, 2);
  EXPECT_EQ(b.data()[0], 2);
  b.Release();
  EXPECT_EQ(b.data(), nullptr);
  EXPECT_EQ(b.capacity(), 0u);
}

TEST(LargeBufferTest, LargeBytesMovesItsBlock) {
  LargeBytes a(3 * kHugePageBytes);
  uint8_t* const p = a.data();
  a.data()[3 * kHugePageBytes - 1] = 7;
  LargeBytes b(std::move(a));
  EXPECT_EQ(a.data(), nullptr);
  EXPECT_EQ(a.size(), 0u);
  EXPECT_EQ(b.data(), p);
  EXPECT_EQ(b.data()[3 * kHugePageBytes - 1], 7);
  LargeBytes c(10);
  c = std::move(b);
  EXPECT_EQ(c.data(), p);
  EXPECT_EQ(c.size(), 3 * kHugePageBytes);
}

TEST(LargeBufferTest, ImpossibleSizesThrowBadAlloc) {
  EXPECT_THROW(AllocateLarge(SIZE_MAX - 10), std::bad_alloc);
  LargeByteBuffer b;
  const uint8_t byte = 0;
  b.Append(&byte, 1);
  EXPECT_THROW(b.Reserve(SIZE_MAX - 3), std::bad_alloc);
  EXPECT_EQ(b.size(), 1u);  // unchanged by the refusal
}

}  // namespace
}  // namespace hurray::dequant
