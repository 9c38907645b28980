// Multiplexed responses (interchange.md § Overview: several streams on one
// connection, demultiplexed on stream_id): a server interleaving its answers
// to pipelined requests message by message; every tensor arrives intact and
// in request order; LIMIT-OPEN-STREAMS and LIMIT-SPOOL-BYTES bound what a
// peer can make the client hold (valid vector, vector over the limit,
// expected rule id and offset).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "parser/descriptor.h"
#include "parser/rules.h"
#include "stream/container/testing/test_util.h"
#include "stream/net/client_session.h"
#include "stream/net/testing/interleaving_server.h"
#include "stream/net/testing/net_test_util.h"

namespace hurray::stream::net {
namespace {

using net::testing::KeyedSink;
using net::testing::Transcript;

class MultiplexTest : public ::testing::Test {
 protected:
  void SetUp() override {
    bytes_ = net::testing::NetTestFile(/*big_bytes=*/300000);
    file_ = net::testing::OpenTestFile(bytes_);
    ASSERT_NE(file_, nullptr);
  }
  NetClientOptions Options() const {
    NetClientOptions o = net::testing::ClientOptions(keys_);
    o.max_outstanding = static_cast<uint32_t>(keys_.size());
    return o;
  }
  Transcript Answers(bool interleave) const {
    return net::testing::AnswerPipelined(*file_, keys_, 4096, interleave);
  }
  // Offset of the first message on `stream`.
  static uint64_t FirstOn(const Transcript& t, uint32_t stream) {
    for (size_t i = 0; i < t.stream_of.size(); ++i) {
      if (t.stream_of[i] == stream) return t.message_at[i];
    }
    ADD_FAILURE() << "no message on stream " << stream;
    return 0;
  }
  static absl::Status Run(const NetClientOptions& o, const Transcript& t,
                          container::TensorSink* sink, size_t chunk) {
    NetClientSession c(o, sink);
    absl::Status s;
    container::testing::FeedInChunks(t.bytes, chunk,
                                     [&](absl::Span<const uint8_t> p) {
                                       s = c.Feed(p);
                                       return s.ok();
                                     });
    if (s.ok() && !c.Satisfied()) s = c.Finish();
    return s;
  }

  std::vector<std::string> keys_ = {"big",       "dense", "quant",
                                    "partition", "empty", "dense"};
  std::vector<uint8_t> bytes_;
  std::unique_ptr<container::HrryFile> file_;
};

TEST_F(MultiplexTest, InterleavedAnswersArriveIntactInRequestOrder) {
  const Transcript t = Answers(/*interleave=*/true);
  // The answers really are interleaved: the first answer's messages are
  // not adjacent.
  ASSERT_GT(t.stream_of.size(), 3u);
  EXPECT_EQ(t.stream_of[1], 1u);
  EXPECT_EQ(t.stream_of[2], 2u);
  EXPECT_EQ(t.stream_of[3], 3u);

  KeyedSink sequential;
  ASSERT_TRUE(Run(Options(), Answers(false), &sequential, 1 << 20).ok());
  for (size_t chunk : {size_t{1} << 20, size_t{1000}, size_t{7}}) {
    KeyedSink sink;
    const absl::Status s = Run(Options(), t, &sink, chunk);
    ASSERT_TRUE(s.ok()) << chunk << ": " << s;
    EXPECT_TRUE(sink.errors.empty()) << sink.errors[0];
    EXPECT_TRUE(sink.ended);
    EXPECT_EQ(sink.keys, keys_);
    EXPECT_TRUE(container::testing::SameEvents(sequential, sink)) << chunk;
    EXPECT_EQ(sink.key_of_tensor, sequential.key_of_tensor);
  }
  // Byte for byte what the file holds.
  KeyedSink sink;
  ASSERT_TRUE(Run(Options(), t, &sink, 4096).ok());
  const std::vector<std::string> names = {"big",           "dense",
                                          "quant",         "partition",
                                          "partition_top", "partition_bottom",
                                          "empty",         "dense"};
  ASSERT_EQ(sink.tensors.size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    const container::IndexEntry* e = file_->Find(names[i]);
    ASSERT_NE(e, nullptr);
    auto d = std::make_unique<TensorDescriptor>();
    ASSERT_TRUE(file_->ReadDescriptor(*e, d.get()).ok());
    const container::testing::RecordedTensor& got = sink.tensors[i];
    EXPECT_TRUE(*d == got.descriptor) << names[i];
    EXPECT_TRUE(got.complete) << names[i];
    ASSERT_EQ(got.buffers.size(), d->buffer_count);
    for (uint32_t b = 0; b < d->buffer_count; ++b) {
      const auto want = file_->Buffer(*e, *d, b);
      ASSERT_TRUE(want.ok());
      EXPECT_EQ(std::vector<uint8_t>(want->begin(), want->end()),
                got.buffers[b])
          << names[i] << " buffer " << b;
    }
  }
}

TEST_F(MultiplexTest, LimitOpenStreams) {
  NetClientOptions o = Options();
  o.max_open_streams = 1;
  // Valid: the same answers one after another need one stream at a time.
  KeyedSink sink;
  const absl::Status ok = Run(o, Answers(false), &sink, 1000);
  EXPECT_TRUE(ok.ok()) << ok;
  // Over the limit: the second stream opens while the first is open, at
  // its first message's stream_id field.
  const Transcript t = Answers(true);
  const absl::Status bad = Run(o, t, nullptr, 1000);
  EXPECT_EQ(RuleIdOf(bad).value_or(""), "LIMIT-OPEN-STREAMS") << bad;
  EXPECT_EQ(OffsetOf(bad).value_or(0), FirstOn(t, 2) + 4) << bad;
}

TEST_F(MultiplexTest, LimitSpoolBytes) {
  NetClientOptions o = Options();
  o.max_spooled_bytes = 1000;
  // Valid: answers one after another are never held.
  KeyedSink sink;
  const absl::Status ok = Run(o, Answers(false), &sink, 1000);
  EXPECT_TRUE(ok.ok()) << ok;
  // Over the limit: the second answer's descriptor must be held while the
  // first is delivered; it is refused at the descriptor.
  const Transcript t = Answers(true);
  KeyedSink held;
  const absl::Status bad = Run(o, t, &held, 1000);
  EXPECT_EQ(RuleIdOf(bad).value_or(""), "LIMIT-SPOOL-BYTES") << bad;
  EXPECT_EQ(OffsetOf(bad).value_or(0), FirstOn(t, 2) + 12) << bad;
  EXPECT_EQ(held.keys, std::vector<std::string>{"big"});
}

// A sink that stops the session while a held answer is handed to it: the
// session fails with the sink's status and calls it no more.
TEST_F(MultiplexTest, SinkStoppingAHeldAnswerStopsTheSession) {
  class StopAtSecondKey : public KeyedSink {
   public:
    absl::Status OnTensorKey(absl::string_view key) override {
      if (keys.size() == 1) return absl::AbortedError("enough");
      return KeyedSink::OnTensorKey(key);
    }
  };
  StopAtSecondKey sink;
  const absl::Status s = Run(Options(), Answers(true), &sink, 1000);
  EXPECT_EQ(s, absl::AbortedError("enough"));
  EXPECT_EQ(sink.keys, std::vector<std::string>{"big"});
  ASSERT_EQ(sink.tensors.size(), 1u);
  EXPECT_TRUE(sink.tensors[0].complete);
  EXPECT_FALSE(sink.ended);
}

}  // namespace
}  // namespace hurray::stream::net
