// Memory stays bounded whatever the input size: over an input of hundreds
// of chunks, with a sink slower than the reader, the only allocation of a
// chunk's size or more is the ring, one block for all its slots, made once
// (counted by tests/alloc_counter.h, which replaces operator new: its own
// binary). Blocks of 2 MiB or more come from dequant/large_buffer.h's
// mappings, which that counter does not see: the sizes here stay below.
#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "dequant/large_buffer.h"
#include "gtest/gtest.h"
#include "stream/ingest/consumers.h"
#include "stream/ingest/loader.h"
#include "stream/ingest/sinks.h"
#include "stream/ingest/testing/loader_test_peer.h"
#include "stream/ingest/testing/loader_test_util.h"
#include "tests/alloc_counter.h"

namespace hurray::stream::ingest {
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
  const std::vector<uint8_t> bytes = ingest::testing::StreamBytes(
      ingest::testing::MixedTensors(8, /*scale=*/2000));
  for (size_t slots : {size_t{2}, size_t{4}}) {
    LoaderOptions o;
    o.chunk_size = 16 << 10;
    o.ring_slots = slots;
    ASSERT_GT(bytes.size(), 50 * o.chunk_size);
    SlowSink sink;
    StreamConsumer c(container::StreamOptions(), &sink);
    Loader loader(o);
    hurray::testing::LargeAllocationCount large(o.chunk_size);
    const LoadResult r = loader.Run(LoadSource::Memory(bytes), &c);
    large.Stop();
    ASSERT_TRUE(r.status.ok()) << r.status;
    EXPECT_EQ(r.bytes, bytes.size());
    EXPECT_EQ(large.value(), 1u);  // slots × chunk_size < 2 MiB
    EXPECT_LE(LoaderTestPeer::MaxSlotsInFlight(loader), slots);
  }
}

// The default ring (4 slots of 1 MiB) is one huge-page mapping per Run
// (the small rings above are one heap block): never one per chunk.
TEST(LoaderAlloc, TheDefaultRingIsOneMappingPerRun) {
  if (!dequant::HugePagesEnabled()) {
    GTEST_SKIP() << "large blocks are not mapped here";
  }
  const std::vector<uint8_t> bytes = ingest::testing::StreamBytes(
      ingest::testing::MixedTensors(8, /*scale=*/2000));
  for (int run = 0; run < 2; ++run) {
    ValidateSink sink;
    StreamConsumer c(container::StreamOptions(), &sink);
    Loader loader{LoaderOptions()};
    const uint64_t before = dequant::LargeMappingsMade();
    const LoadResult r = loader.Run(LoadSource::Memory(bytes), &c);
    ASSERT_TRUE(r.status.ok()) << r.status;
    EXPECT_EQ(dequant::LargeMappingsMade(), before + 1);
  }
}

// Spools above 2 MiB are mapped (dequant/large_buffer.h), which the
// operator new counter does not see: once the first tensors went through,
// four more of 3 MiB each make no new mapping.
TEST(DequantSinkAlloc, TheMappedSpoolIsKeptAcrossTensors) {
  if (!dequant::HugePagesEnabled()) {
    GTEST_SKIP() << "large blocks are not mapped here";
  }
  const std::vector<uint8_t> bytes = ingest::testing::StreamBytes(
      ingest::testing::QuantizedTensors(3, 6, 3 << 20));
  const std::vector<uint8_t> two = ingest::testing::StreamBytes(
      ingest::testing::QuantizedTensors(3, 2, 3 << 20));
  ASSERT_TRUE(std::equal(two.begin(), two.end(), bytes.begin()));
  DequantSinkOptions o;
  o.write_files = false;
  DequantSink sink(o);
  StreamConsumer c(container::StreamOptions(), &sink);
  const uint64_t start = dequant::LargeMappingsMade();
  ASSERT_TRUE(c.Feed(absl::MakeConstSpan(bytes).first(two.size())).ok());
  ASSERT_EQ(sink.records().size(), 2u);
  const uint64_t warm = dequant::LargeMappingsMade();
  EXPECT_GT(warm, start);  // the spool is mapped
  for (size_t at = two.size(); at < bytes.size(); at += 64 << 10) {
    ASSERT_TRUE(c.Feed(absl::MakeConstSpan(bytes).subspan(at, 64 << 10)).ok());
  }
  ASSERT_TRUE(c.Finish().ok());
  ASSERT_EQ(sink.records().size(), 6u);
  EXPECT_TRUE(absl::StartsWith(sink.records()[5].verdict, "dequantized"))
      << sink.records()[5].verdict;
  EXPECT_EQ(dequant::LargeMappingsMade(), warm);
}

// DequantSink's in-memory spool keeps its buffer from one tensor to the
// next: once a tensor of each kind (per-channel int8, per-block int4, 1 MiB
// of data each) went through, four more allocate nothing of 512 KiB or more
// (before, each allocated its spool).
TEST(DequantSinkAlloc, TheSpoolIsKeptAcrossTensors) {
  const std::vector<uint8_t> bytes = ingest::testing::StreamBytes(
      ingest::testing::QuantizedTensors(3, 6, 1 << 20));
  // The same generator's first two tensors: the stream's first bytes.
  const std::vector<uint8_t> two = ingest::testing::StreamBytes(
      ingest::testing::QuantizedTensors(3, 2, 1 << 20));
  const size_t first_two = two.size();
  ASSERT_LT(first_two, bytes.size());
  ASSERT_TRUE(std::equal(two.begin(), two.end(), bytes.begin()));
  DequantSinkOptions o;
  o.write_files = false;
  DequantSink sink(o);
  StreamConsumer c(container::StreamOptions(), &sink);
  ASSERT_TRUE(c.Feed(absl::MakeConstSpan(bytes).first(first_two)).ok());
  ASSERT_EQ(sink.records().size(), 2u);
  hurray::testing::LargeAllocationCount large(512 << 10);
  for (size_t at = first_two; at < bytes.size(); at += 64 << 10) {
    ASSERT_TRUE(c.Feed(absl::MakeConstSpan(bytes).subspan(at, 64 << 10)).ok());
  }
  ASSERT_TRUE(c.Finish().ok());
  large.Stop();
  ASSERT_EQ(sink.records().size(), 6u);
  EXPECT_TRUE(absl::StartsWith(sink.records()[5].verdict, "dequantized"))
      << sink.records()[5].verdict;
  EXPECT_EQ(large.value(), 0u);
}

}  // namespace
}  // namespace hurray::stream::ingest
