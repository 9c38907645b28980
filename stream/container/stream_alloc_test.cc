// Reading a stream allocates nothing per byte or from declared sizes: every
// operator new is counted while streams are fed (the reader itself is built
// before counting starts). Covers the 2^63-byte declared buffer of
// REJECT-RULES.md §5 and long streams fed one byte at a time. The one
// exception is the composite validator, set up once at the first composite
// head (stream/container/composite_binder.h): a fixed number of allocations
// whatever the input's length or chunking.
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "parser/descriptor.h"
#include "parser/element_type.h"
#include "stream/container/stream_reader.h"
#include "stream/container/stream_writer.h"
#include "stream/container/testing/test_util.h"
#include "tests/alloc_counter.h"
#include "tests/vectors.h"

namespace hurray::stream::container {
namespace {

// Counts what Feed and Finish allocate.
uint64_t AllocationsWhileReading(absl::Span<const uint8_t> bytes, size_t chunk,
                                 Rule* rule) {
  StreamOptions options;
  options.parse = vectors::AgreedOptions();
  StreamReader reader(options, nullptr);
  hurray::testing::AllocationCount allocations;
  container::testing::FeedInChunks(
      bytes, chunk, [&](absl::Span<const uint8_t> piece) {
        return reader.Feed(piece) == StreamState::kNeedMore;
      });
  (void)reader.Finish();  // the verdict (kNone when accepted) is read below
  allocations.Stop();
  *rule = reader.rejection().rule;
  return allocations.value();
}

TEST(StreamAllocTest, HugeDeclaredBufferAllocatesNothing) {
  auto d = vectors::Dense(type_tag::kFloat32, {uint64_t{1} << 61});
  const std::vector<uint8_t> bytes = vectors::Bytes(*d);
  Rule rule;
  EXPECT_EQ(AllocationsWhileReading(bytes, bytes.size(), &rule), 0u);
  EXPECT_EQ(rule, Rule::kLimitBufferBytes);
  EXPECT_EQ(AllocationsWhileReading(bytes, 1, &rule), 0u);
  EXPECT_EQ(rule, Rule::kLimitBufferBytes);
}

std::vector<uint8_t> Stream(bool composites) {
  std::vector<uint8_t> stream;
  StreamWriter writer(vectors::AgreedOptions());
  auto sink = [&stream](absl::Span<const uint8_t> b) {
    stream.insert(stream.end(), b.begin(), b.end());
    return absl::OkStatus();
  };
  uint32_t seed = 0;
  for (const vectors::Named& t : container::testing::ContainerVectors()) {
    const TensorDescriptor& d = *t.descriptor;
    if (!composites &&
        (d.layout_tag == layout_tag::kComposite || d.has(flag::kHasShard))) {
      continue;  // heads and their members
    }
    const auto buffers = container::testing::BuffersFor(d, ++seed);
    EXPECT_TRUE(writer.Write(d, container::testing::Spans(buffers), sink).ok());
  }
  return stream;
}

TEST(StreamAllocTest, ReadingEveryVectorAllocatesNothing) {
  const std::vector<uint8_t> stream = Stream(/*composites=*/false);
  for (size_t chunk : {size_t{1}, size_t{13}, stream.size()}) {
    Rule rule;
    EXPECT_EQ(AllocationsWhileReading(stream, chunk, &rule), 0u) << chunk;
    EXPECT_EQ(rule, Rule::kNone);
    // Truncated: rejected, still without allocating.
    EXPECT_EQ(
        AllocationsWhileReading(
            absl::MakeConstSpan(stream).first(stream.size() - 3), chunk, &rule),
        0u);
    EXPECT_EQ(rule, Rule::kStreamEofBuffer);
  }
}

TEST(StreamAllocTest, CompositesAllocateOnceWhateverTheChunking) {
  const std::vector<uint8_t> stream = Stream(/*composites=*/true);
  Rule rule;
  const uint64_t once = AllocationsWhileReading(stream, stream.size(), &rule);
  EXPECT_EQ(rule, Rule::kNone);
  EXPECT_GT(once, 0u);
  EXPECT_LE(once, 8u);
  for (size_t chunk : {size_t{1}, size_t{13}}) {
    EXPECT_EQ(AllocationsWhileReading(stream, chunk, &rule), once) << chunk;
  }
}

}  // namespace
}  // namespace hurray::stream::container
