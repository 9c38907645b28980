// Memory stays bounded whatever the input size: over an input of hundreds
// of chunks, with a sink slower than the reader, the only allocations of a
// chunk's size or more are the ring's slots, made once. Replaces operator
// new to count them: its own binary.
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <new>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "stream/consumers.h"
#include "stream/loader.h"
#include "stream/loader_test_util.h"
#include "stream/sinks.h"

namespace {
std::atomic<size_t> g_threshold{~size_t{0}};
std::atomic<size_t> g_large{0};
}  // namespace

void* operator new(size_t n) {
  if (n >= g_threshold.load(std::memory_order_relaxed)) ++g_large;
  void* p = std::malloc(n == 0 ? 1 : n);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void* operator new[](size_t n) { return operator new(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }

namespace hurray::stream {
namespace {

class SlowSink : public ValidateSink {
 public:
  void OnBufferPiece(uint32_t, uint64_t, absl::Span<const uint8_t>) override {
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
};

TEST(LoaderAlloc, OnlyTheRingIsChunkSized) {
  const std::vector<uint8_t> bytes =
      testing::StreamBytes(testing::MixedTensors(8, /*scale=*/2000));
  for (size_t slots : {size_t{2}, size_t{4}}) {
    LoaderOptions o;
    o.chunk_size = 16 << 10;
    o.ring_slots = slots;
    ASSERT_GT(bytes.size(), 50 * o.chunk_size);
    SlowSink sink;
    StreamConsumer c(StreamOptions(), &sink);
    Loader loader(o);
    g_large = 0;
    g_threshold = o.chunk_size;
    const LoadResult r = loader.Run(LoadSource::Memory(bytes), &c);
    g_threshold = ~size_t{0};
    ASSERT_TRUE(r.status.ok()) << r.status;
    EXPECT_EQ(r.bytes, bytes.size());
    EXPECT_EQ(g_large.load(), slots);
    EXPECT_LE(r.max_slots_in_flight, slots);
  }
}

}  // namespace
}  // namespace hurray::stream
