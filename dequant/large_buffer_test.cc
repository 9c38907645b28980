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

// The "VmSize:" of /proc/self/status in KiB; -1 if unreadable.
long VmSizeKib() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmSize:", 0) == 0) return std::stol(line.substr(7));
  }
  return -1;
}

// The [start, end) of the /proc/self/maps entry that holds `p`, or {0, 0}.
std::pair<uintptr_t, uintptr_t> MappingOf(const void* p) {
  const uintptr_t at = reinterpret_cast<uintptr_t>(p);
  std::ifstream in("/proc/self/maps");
  std::string line;
  while (std::getline(in, line)) {
    const size_t dash = line.find('-');
    const size_t space = line.find(' ');
    const uintptr_t start = std::stoull(line.substr(0, dash), nullptr, 16);
    const uintptr_t end =
        std::stoull(line.substr(dash + 1, space - dash - 1), nullptr, 16);
    if (start <= at && at < end) return {start, end};
  }
  return {0, 0};
}

TEST(LargeBufferTest, SmallRequestsComeFromTheHeap) {
  // Below a huge page the block is operator new's: usable, freed, unmapped.
  const uint64_t mappings = LargeMappingsMade();
  void* p = AllocateLarge(100);
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(Aligned(p, alignof(std::max_align_t)));
  std::memset(p, 0xAB, 100);
  FreeLarge(p, 100);
  FreeLarge(nullptr, 100);
  p = AllocateLarge(kLargeBufferMinBytes - 1);
  FreeLarge(p, kLargeBufferMinBytes - 1);
  EXPECT_EQ(LargeMappingsMade(), mappings);
}

TEST(LargeBufferTest, LargeRequestsStartOnAHugePageAndReadAsZeros) {
  const size_t size = 5 * kHugePageBytes + 12345;
  const uint64_t mappings = LargeMappingsMade();
  void* p = AllocateLarge(size);
  ASSERT_NE(p, nullptr);
  const auto* bytes = static_cast<const uint8_t*>(p);
  if (HugePagesEnabled()) {
    EXPECT_EQ(LargeMappingsMade(), mappings + 1);
    EXPECT_TRUE(Aligned(p, kHugePageBytes));
    // A fresh mapping: zeros to its last byte (operator new promises none).
    EXPECT_EQ(bytes[0], 0);
    EXPECT_EQ(bytes[size - 1], 0);
  }
  std::memset(p, 0x5A, size);  // every byte writable
  EXPECT_EQ(bytes[size - 1], 0x5A);
  FreeLarge(p, size);
}

TEST(LargeBufferTest, AMappedBlockIsExactlyItsHugePagesAndFreedWhole) {
  if (!HugePagesEnabled()) GTEST_SKIP() << "large blocks are not mapped here";
  for (const size_t size :
       {kHugePageBytes, 2 * kHugePageBytes, 5 * kHugePageBytes + 12345}) {
    void* p = AllocateLarge(size);
    // Its own mapping, trimmed at both ends to whole huge pages (the
    // kernel may merge it with a neighbour of the same protection, so
    // only check it is inside one entry that covers it).
    const auto [start, end] = MappingOf(p);
    const uintptr_t at = reinterpret_cast<uintptr_t>(p);
    const size_t whole = (size + kHugePageBytes - 1) / kHugePageBytes;
    EXPECT_LE(start, at);
    EXPECT_GE(end, at + whole * kHugePageBytes) << size;
    FreeLarge(p, size);
    EXPECT_EQ(MappingOf(p).first, 0u) << "still mapped after FreeLarge";
  }
  // Nothing is left behind: no trimmed end, no block. (A leak of any piece
  // would grow the address space by megabytes over 100 cycles; the slack
  // is for the heap, which reading /proc may grow.)
  const long before = VmSizeKib();
  ASSERT_GT(before, 0);
  for (int i = 0; i < 100; ++i) {
    void* p = AllocateLarge(5 * kHugePageBytes + 12345);
    FreeLarge(p, 5 * kHugePageBytes + 12345);
  }
  EXPECT_LT(VmSizeKib() - before, 1024);
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

TEST(LargeBufferTest, ByteBufferMovesAndAppendsFromItself) {
  LargeByteBuffer a;
  const uint8_t bytes[4] = {4, 5, 6, 7};
  a.Append(bytes, 4);
  LargeByteBuffer b(std::move(a));
  EXPECT_EQ(a.size(), 0u);  // the moved-from buffer is empty, and usable
  EXPECT_EQ(a.data(), nullptr);
  a.Append(bytes, 2);
  EXPECT_EQ(a.size(), 2u);
  EXPECT_EQ(a.data()[1], 5);
  ASSERT_EQ(b.size(), 4u);
  EXPECT_EQ(b.data()[3], 7);
  a = std::move(b);
  EXPECT_EQ(b.size(), 0u);
  ASSERT_EQ(a.size(), 4u);
  // Appending its own bytes while it grows (the source block is freed
  // only after the copy; ASan would report a use after free otherwise).
  for (int i = 0; i < 20; ++i) a.Append(a.data(), a.size());
  ASSERT_EQ(a.size(), size_t{4} << 20);
  EXPECT_EQ(a.data()[(size_t{4} << 20) - 1], 7);
  EXPECT_EQ(a.data()[(size_t{4} << 20) - 4], 4);
}

TEST(LargeBufferTest, ImpossibleSizesThrowBadAlloc) {
  LargeByteBuffer b;
  const uint8_t byte = 0;
  b.Append(&byte, 1);
  EXPECT_THROW(b.Append(&byte, SIZE_MAX), std::bad_alloc);
  EXPECT_EQ(b.size(), 1u);  // unchanged by the refusal
  // Sizes no mapping can hold are refused by our own check; operator new's
  // own refusal is not tested (AddressSanitizer's aborts instead).
  if (!HugePagesEnabled()) GTEST_SKIP() << "large blocks are not mapped here";
  EXPECT_THROW(AllocateLarge(SIZE_MAX - 10), std::bad_alloc);
  EXPECT_THROW(b.Reserve(SIZE_MAX - 3), std::bad_alloc);
  EXPECT_EQ(b.size(), 1u);
}

}  // namespace
}  // namespace hurray::dequant
