// RunChunks: the threaded pass gives put the chunks in order and stops as
// the serial loop does at the first error of make or put.
#include "stream/convert/chunk_pipeline.h"

#include <atomic>
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace hurray::stream::convert {
namespace {

struct Calls {
  std::atomic<uint64_t> made{0};  // make calls
  std::vector<uint64_t> put;      // the first byte of each chunk put
};

// make(i) writes i + 1 bytes of value i; fails at `fail_make`; put fails
// at its `fail_put`-th call (0-based).
absl::Status Pass(uint64_t chunks, bool threaded, uint64_t fail_make,
                  uint64_t fail_put, Calls* c) {
  std::vector<uint8_t> scratch;
  uint64_t next = 0;  // make is called in chunk order
  return RunChunks(
      chunks, threaded,
      [&](uint64_t i, std::vector<uint8_t>* out) {
        EXPECT_EQ(i, next++);
        ++c->made;
        if (i == fail_make) return absl::InvalidArgumentError("bad chunk");
        out->assign(static_cast<size_t>(i + 1), static_cast<uint8_t>(i));
        return absl::OkStatus();
      },
      [&](absl::Span<const uint8_t> b) {
        if (c->put.size() == fail_put) return absl::DataLossError("full");
        EXPECT_EQ(b.size(), b[0] + size_t{1});
        c->put.push_back(b[0]);
        return absl::OkStatus();
      },
      &scratch);
}

std::vector<uint64_t> Upto(uint64_t n) {
  std::vector<uint64_t> v;
  for (uint64_t i = 0; i < n; ++i) v.push_back(i);
  return v;
}

TEST(RunChunks, PutsEveryChunkInOrder) {
  for (bool threaded : {false, true}) {
    for (uint64_t chunks : {0, 1, 2, 3, 4, 50}) {
      Calls c;
      EXPECT_TRUE(Pass(chunks, threaded, ~0ull, ~0ull, &c).ok());
      EXPECT_EQ(c.put, Upto(chunks));
      EXPECT_EQ(c.made, chunks);
    }
  }
}

TEST(RunChunks, AFailedMakeIsReturnedAfterTheChunksBeforeIt) {
  for (bool threaded : {false, true}) {
    for (uint64_t at : {0, 1, 7, 49}) {
      Calls c;
      absl::Status s = Pass(50, threaded, at, ~0ull, &c);
      EXPECT_EQ(s, absl::InvalidArgumentError("bad chunk"));
      EXPECT_EQ(c.put, Upto(at));
      EXPECT_EQ(c.made, at + 1);  // none after the failed one
    }
  }
}

TEST(RunChunks, AFailedPutStopsTheWorker) {
  for (bool threaded : {false, true}) {
    for (uint64_t at : {0, 1, 7, 49}) {
      Calls c;
      absl::Status s = Pass(50, threaded, ~0ull, at, &c);
      EXPECT_EQ(s, absl::DataLossError("full"));
      EXPECT_EQ(c.put, Upto(at));
      // Made ahead by at most the ring's depth, never after the failure.
      EXPECT_GE(c.made, at + 1);
      EXPECT_LE(c.made, threaded ? at + kPipelineDepth : at + 1);
    }
  }
}

TEST(RunChunks, AFailedPutBeforeAFailedMakeWins) {
  Calls c;
  EXPECT_EQ(Pass(50, true, 4, 3, &c), absl::DataLossError("full"));
  EXPECT_EQ(c.put, Upto(3));
}

}  // namespace
}  // namespace hurray::stream::convert
