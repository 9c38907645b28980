// The client session allocates nothing per data byte and nothing from
// declared sizes: every operator new is counted while a server's answer is
// fed (the session is built before counting starts). Receiving a 4 MiB
// tensor costs as many allocations as receiving a 64 KiB one, and a
// declared 2^63-byte buffer is refused without allocating for it.
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "stream/net/client_session.h"
#include "stream/net/testing/net_test_util.h"
#include "tests/alloc_counter.h"
#include "tests/vectors.h"

namespace hurray::stream::net {
namespace {

// Allocations while `transcript` is fed in `chunk`-byte pieces to a client
// asking for `key` (the sink ignores everything).
uint64_t AllocationsToReceive(const std::vector<uint8_t>& transcript,
                              const char* key, size_t chunk) {
  container::TensorSink sink;
  NetClientSession c(net::testing::ClientOptions({key}), &sink);
  hurray::testing::AllocationCount allocations;
  bool ok = true;
  for (size_t at = 0; at < transcript.size() && ok; at += chunk) {
    ok = c.Feed(absl::MakeConstSpan(transcript).subspan(at, chunk)).ok();
  }
  allocations.Stop();
  EXPECT_TRUE(ok);
  EXPECT_TRUE(c.Satisfied());
  return allocations.value();
}

TEST(NetAlloc, NothingPerDataByte) {
  const auto small_bytes = net::testing::NetTestFile(64 << 10);
  const auto big_bytes = net::testing::NetTestFile(4 << 20);
  const auto small = net::testing::OpenTestFile(small_bytes);
  const auto big = net::testing::OpenTestFile(big_bytes);
  const auto t_small = net::testing::ServerTranscript(*small, {"big"});
  const auto t_big = net::testing::ServerTranscript(*big, {"big"});
  ASSERT_GT(t_big.size(), t_small.size() + (3 << 20));
  for (size_t chunk : {size_t{1} << 16, size_t{4096}, size_t{7}}) {
    const uint64_t a = AllocationsToReceive(t_small, "big", chunk);
    const uint64_t b = AllocationsToReceive(t_big, "big", chunk);
    EXPECT_EQ(a, b) << chunk;
    EXPECT_LT(b, 64u) << chunk;
  }
}

TEST(NetAlloc, DeclaredHugeBufferAllocatesNothingForIt) {
  auto d = vectors::Dense(0x11, {uint64_t{1} << 63});
  const auto in =
      net::testing::Cat({net::testing::ServerHelloBytes(),
                         net::testing::DescriptorBytes(1, vectors::Bytes(*d),
                                                       uint64_t{1} << 63)});
  container::TensorSink sink;
  NetClientSession c(net::testing::ClientOptions({"huge"}), &sink);
  hurray::testing::AllocationCount allocations;
  const absl::Status s = c.Feed(in);
  allocations.Stop();
  EXPECT_EQ(RuleIdOf(s).value_or(""), "LIMIT-BUFFER-BYTES");
  // The framer's payload buffer, the request, the status and the ERROR
  // reply: a handful, not 2^63 bytes.
  EXPECT_LT(allocations.value(), 64u);
}

}  // namespace
}  // namespace hurray::stream::net
