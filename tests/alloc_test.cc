// Zero heap allocation while decoding: every operator new (counted by
// tests/alloc_counter.h) and, outside sanitizer builds, every malloc, calloc
// and realloc is counted while thousands of descriptors of every kind, valid
// and rejected, are fed at random chunk sizes through one decoder. The count
// must be 0.
#include <cstdint>
#include <cstdlib>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "parser/decoder.h"
#include "tests/alloc_counter.h"
#include "tests/mutations.h"
#include "tests/vectors.h"

// malloc itself, through glibc's internal entry points. Sanitizers interpose
// malloc themselves, so there only operator new is counted.
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__) && \
    !defined(HURRAY_FUZZING)
extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* malloc(size_t n) {
  hurray::testing::NoteAllocation(n);
  return __libc_malloc(n);
}
void* calloc(size_t n, size_t m) {
  hurray::testing::NoteAllocation(n * m);
  return __libc_calloc(n, m);
}
void* realloc(void* p, size_t n) {
  hurray::testing::NoteAllocation(n);
  return __libc_realloc(p, n);
}
}
#define HURRAY_COUNTS_MALLOC 1
#endif

namespace hurray {
namespace {

TEST(AllocTest, CounterSeesAllocations) {
  testing::AllocationCount allocations;
  auto* p = new int(1);
  // Keeps the optimizer from eliding the new/delete pair (allowed since
  // C++14), which would make this check vacuous under -O2.
  asm volatile("" : : "g"(p) : "memory");
  allocations.Stop();
  delete p;
  EXPECT_GE(allocations.value(), 1u);  // new, and malloc underneath it
#ifdef HURRAY_COUNTS_MALLOC
  testing::AllocationCount mallocs;
  void* q = std::malloc(16);
  asm volatile("" : : "g"(q) : "memory");
  mallocs.Stop();
  std::free(q);
  EXPECT_EQ(mallocs.value(), 1u);
#endif
}

TEST(AllocTest, DecodingAllocatesNothing) {
  // Inputs and the decoder are prepared before counting starts.
  std::vector<std::vector<uint8_t>> inputs;
  for (const auto& v : vectors::AllValid()) {
    const std::vector<uint8_t> bytes = vectors::Bytes(*v.descriptor);
    for (int copies = 0; copies < 20; ++copies) inputs.push_back(bytes);
    for (auto& m : vectors::SingleByteMutations(bytes, 11)) {
      inputs.push_back(std::move(m));
    }
  }
  ASSERT_GT(inputs.size(), 5000u);
  std::vector<size_t> chunk_sizes(1 << 16);
  std::mt19937 rng(42);
  for (size_t& c : chunk_sizes) c = 1 + rng() % 64;

  for (Mode mode : {Mode::kStrict, Mode::kPermissive}) {
    auto decoder =
        std::make_unique<DescriptorDecoder>(vectors::AgreedOptions(mode));
    size_t next_chunk = 0, done = 0, rejected = 0;
    testing::AllocationCount allocations;
    for (const std::vector<uint8_t>& in : inputs) {
      decoder->Reset();
      size_t at = 0;
      while (at < in.size()) {
        const size_t n =
            std::min(chunk_sizes[next_chunk++ & 0xFFFF], in.size() - at);
        const FeedResult r =
            decoder->Feed(absl::MakeConstSpan(in.data() + at, n));
        at += n;
        if (r.state != DecodeState::kNeedMore) break;
      }
      const DecodeState s = decoder->Finish();
      done += s == DecodeState::kDone;
      rejected += s == DecodeState::kRejected;
    }
    allocations.Stop();
    EXPECT_EQ(allocations.value(), 0u);
    // Both paths were exercised.
    EXPECT_GT(done, 400u);
    EXPECT_GT(rejected, 400u);
  }
}

TEST(AllocTest, OneShotDecodeWithReusedDecoderAllocatesNothing) {
  const std::vector<uint8_t> bytes = vectors::Bytes(*vectors::Everything());
  auto decoder = std::make_unique<DescriptorDecoder>();
  testing::AllocationCount allocations;
  for (int i = 0; i < 1000; ++i) {
    EXPECT_TRUE(DecodeWith(bytes, decoder.get()).ok());
  }
  allocations.Stop();
  EXPECT_EQ(allocations.value(), 0u);
}

}  // namespace
}  // namespace hurray
