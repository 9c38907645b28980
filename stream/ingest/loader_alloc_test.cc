// Memory stays bounded whatever the input size: over an input of hundreds
// of chunks, with a sink slower than the reader, the only allocations of a
// chunk's size or more are the ring's slots, made once (counted by
// tests/alloc_counter.h, which replaces operator new: its own binary).
#include <chrono>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "stream/ingest/consumers.h"
#include "stream/ingest/loader.h"
#include "stream/ingest/sinks.h"
#include "stream/ingest/testing/loader_test_peer.h"
#include "stream/ingest/testing/loader_test_util.h"
#include "tests/alloc_counter.h"

namespace hurray::stream {
namespace {

class SlowSink : public ValidateSink {
 public:
  absl::Status OnBufferPiece(uint32_t, uint64_t,
                             absl::Span<const uint8_t>) override {
    std::this_thread::sleep_for(std::chrono::microseconds(100));
    return absl::OkStatus();
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
    hurray::testing::LargeAllocationCount large(o.chunk_size);
    const LoadResult r = loader.Run(LoadSource::Memory(bytes), &c);
    large.Stop();
    ASSERT_TRUE(r.status.ok()) << r.status;
    EXPECT_EQ(r.bytes, bytes.size());
    EXPECT_EQ(large.value(), slots);
    EXPECT_LE(LoaderTestPeer::MaxSlotsInFlight(loader), slots);
  }
}

}  // namespace
}  // namespace hurray::stream
