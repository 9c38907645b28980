// Sharded answers (interchange.md § Parallel Transfers): the shard
// sequences of one answer on several streams, their messages interleaved
// with each other, are each validated by their own walker, checked
// together (NET-PAR-01..03) and reported as separate tensors, one at a
// time, every byte intact; LIMIT-OPEN-STREAMS counts the shard streams.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "parser/descriptor.h"
#include "parser/element_type.h"
#include "parser/rules.h"
#include "stream/container/testing/test_util.h"
#include "stream/net/client_session.h"
#include "stream/net/testing/net_test_util.h"

namespace hurray::stream::net {
namespace {

using Bytes = std::vector<uint8_t>;
using net::testing::InterleavedShardAnswer;
using net::testing::ShardData;

absl::Status Fetch(const Bytes& in, net::testing::KeyedSink* sink, size_t chunk,
                   uint32_t max_open_streams = 16) {
  NetClientOptions o = net::testing::ClientOptions({"t"});
  o.max_open_streams = max_open_streams;
  NetClientSession c(o, sink);
  absl::Status s;
  container::testing::FeedInChunks(in, chunk, [&](absl::Span<const uint8_t> p) {
    s = c.Feed(p);
    return s.ok();
  });
  if (s.ok() && !c.Satisfied()) s = c.Finish();
  return s;
}

TEST(Shards, InterleavedShardsArriveIntactOneAtATime) {
  const Bytes in = InterleavedShardAnswer();
  for (size_t chunk : {size_t{1}, size_t{7}, size_t{4096}}) {
    net::testing::KeyedSink sink;
    const absl::Status s = Fetch(in, &sink, chunk);
    ASSERT_TRUE(s.ok()) << s << " chunk " << chunk;
    EXPECT_TRUE(sink.errors.empty()) << sink.errors[0];
    EXPECT_TRUE(sink.ended);
    EXPECT_EQ(sink.keys, std::vector<std::string>{"t"});
    ASSERT_EQ(sink.tensors.size(), 4u);
    std::vector<bool> seen(4, false);
    for (const container::testing::RecordedTensor& t : sink.tensors) {
      ASSERT_TRUE(t.complete);
      ASSERT_TRUE(t.descriptor.has(flag::kHasShard));
      const uint64_t i = t.descriptor.shard.shard_offset[0] / 2;
      ASSERT_LT(i, 4u);
      EXPECT_FALSE(seen[i]);
      seen[i] = true;
      ASSERT_EQ(t.buffers.size(), 1u);
      EXPECT_EQ(t.buffers[0], ShardData(static_cast<uint32_t>(i)))
          << "shard " << i;
    }
  }
}

TEST(Shards, InterleavedShardsAreCheckedTogether) {
  net::testing::KeyedSink sink;
  // Two streams send shard_index 1: NET-PAR-03.
  absl::Status s =
      Fetch(InterleavedShardAnswer(+[](uint32_t i) { return i == 3 ? 1u : i; }),
            &sink, 4096);
  EXPECT_NE(s.message().find("NET-PAR-03"), std::string::npos) << s;
  // Shard 1 of another parent_shape: NET-PAR-01.
  s = Fetch(InterleavedShardAnswer(nullptr, 16), &sink, 4096);
  EXPECT_NE(s.message().find("NET-PAR-01"), std::string::npos) << s;
}

TEST(Shards, ShardStreamsCountAsOpenStreams) {
  net::testing::KeyedSink sink;
  EXPECT_TRUE(Fetch(InterleavedShardAnswer(), &sink, 4096, 4).ok());
  const absl::Status s = Fetch(InterleavedShardAnswer(), &sink, 4096, 3);
  EXPECT_NE(s.message().find("LIMIT-OPEN-STREAMS"), std::string::npos) << s;
}

}  // namespace
}  // namespace hurray::stream::net
