// Reading a stream allocates nothing per byte or from declared sizes: every
// operator new is counted while streams are fed (the reader itself is built
// before counting starts). Covers the 2^63-byte declared buffer of
// REJECT-RULES.md §5 and long streams fed one byte at a time. The one
// exception is the composite validator, set up once at the first composite
// head (stream/composite_binder.h): a fixed number of allocations whatever
// the input's length or chunking.
#include <cstdint>
#include <cstdlib>
#include <new>
#include <vector>

#include "gtest/gtest.h"
#include "parser/descriptor.h"
#include "parser/element_type.h"
#include "stream/stream_reader.h"
#include "stream/stream_writer.h"
#include "stream/test_util.h"
#include "tests/vectors.h"

namespace {

thread_local bool g_counting = false;
thread_local uint64_t g_allocations = 0;

}  // namespace

void* operator new(std::size_t n) {
  if (g_counting) ++g_allocations;
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return operator new(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace hurray::stream {
namespace {

// Counts what Feed and Finish allocate.
uint64_t AllocationsWhileReading(absl::Span<const uint8_t> bytes, size_t chunk,
                                 Rule* rule) {
  StreamOptions options;
  options.parse = vectors::AgreedOptions();
  StreamReader reader(options, nullptr);
  g_allocations = 0;
  g_counting = true;
  testing::FeedInChunks(bytes, chunk, [&](absl::Span<const uint8_t> piece) {
    return reader.Feed(piece) == StreamState::kNeedMore;
  });
  reader.Finish();
  g_counting = false;
  *rule = reader.rejection().rule;
  return g_allocations;
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
  for (const vectors::Named& t : testing::ContainerVectors()) {
    const TensorDescriptor& d = *t.descriptor;
    if (!composites &&
        (d.layout_tag == layout_tag::kComposite || d.has(flag::kHasShard))) {
      continue;  // heads and their members
    }
    const auto buffers = testing::BuffersFor(d, ++seed);
    EXPECT_TRUE(writer.Write(d, testing::Spans(buffers), sink).ok());
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
}  // namespace hurray::stream
