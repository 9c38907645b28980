// The client and server sessions against each other in memory: every tensor
// arrives byte-exactly (composites, multi-buffer tensors, empty tensors,
// frames straddling buffer boundaries), the same events whatever the split
// points, listing, unknown keys, pipelining, limits from declared sizes.
#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "parser/descriptor.h"
#include "parser/element_type.h"
#include "parser/encoder.h"
#include "parser/rules.h"
#include "parser/wire.h"
#include "stream/container/testing/file_test_util.h"
#include "stream/container/testing/test_util.h"
#include "stream/net/client_session.h"
#include "stream/net/message.h"
#include "stream/net/server_session.h"
#include "stream/net/testing/net_test_util.h"
#include "tests/vectors.h"

namespace hurray::stream::net {
namespace {

using container::testing::RecordingSink;
using net::testing::Cat;
using net::testing::ClientOptions;
using net::testing::DataBytes;
using net::testing::DescriptorBytes;
using net::testing::EndBytes;
using net::testing::KeyedSink;
using net::testing::ServerHelloBytes;

// The tensor `name` of `file`, as the recording sink would hold it.
void ExpectTensorIs(const container::HrryFile& file, absl::string_view name,
                    const container::testing::RecordedTensor& got) {
  const container::IndexEntry* e = file.Find(name);
  ASSERT_NE(e, nullptr) << name;
  auto d = std::make_unique<TensorDescriptor>();
  ASSERT_TRUE(file.ReadDescriptor(*e, d.get()).ok());
  EXPECT_TRUE(*d == got.descriptor) << name;
  ASSERT_EQ(got.buffers.size(), d->buffer_count) << name;
  for (uint32_t i = 0; i < d->buffer_count; ++i) {
    const auto b = file.Buffer(*e, *d, i);
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(std::vector<uint8_t>(b->begin(), b->end()), got.buffers[i])
        << name << " buffer " << i;
  }
  EXPECT_TRUE(got.complete) << name;
}

class NetSessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    bytes_ = net::testing::NetTestFile(/*big_bytes=*/3 << 20);
    file_ = net::testing::OpenTestFile(bytes_);
    ASSERT_NE(file_, nullptr);
  }
  std::vector<uint8_t> bytes_;
  std::unique_ptr<container::HrryFile> file_;
};

TEST_F(NetSessionTest, EveryTensorArrivesByteExactly) {
  const std::vector<std::string> keys = {"dense", "quant", "partition", "empty",
                                         "big"};
  KeyedSink sink;
  const auto run =
      net::testing::RunInMemory(*file_, ClientOptions(keys), &sink, 1000);
  ASSERT_TRUE(run.status.ok()) << run.status;
  EXPECT_TRUE(run.satisfied);
  EXPECT_TRUE(sink.ended);
  EXPECT_TRUE(sink.errors.empty()) << sink.errors[0];
  EXPECT_EQ(sink.keys, keys);
  // partition = head + 2 members.
  ASSERT_EQ(sink.tensors.size(), 7u);
  const std::vector<std::string> names = {
      "dense", "quant", "partition", "partition_top", "partition_bottom",
      "empty", "big"};
  for (size_t i = 0; i < names.size(); ++i) {
    ExpectTensorIs(*file_, names[i], sink.tensors[i]);
  }
  EXPECT_EQ(sink.key_of_tensor[3], "");  // members carry no key
  EXPECT_EQ(sink.key_of_tensor[2], "partition");
}

TEST_F(NetSessionTest, DataFramesRespectTheClientsMaximumAndStraddleBuffers) {
  NetServerSession server(file_.get(), NetServerOptions());
  std::vector<uint8_t> hello;
  net::Hello h;
  h.max_message_size = 256;
  net::AppendHello(&hello, net::MessageType::kClientHello, 1, h);
  net::TensorRequest r;
  r.key = "quant";
  net::AppendRequest(&hello, 1, r);
  const std::vector<uint8_t> out = net::testing::Serve(&server, hello);
  // Walk the frames: every TENSOR_DATA payload is at most 256 bytes.
  size_t at = 0, frames = 0;
  uint64_t data = 0;
  while (at + net::kHeaderSize <= out.size()) {
    const net::MessageHeader mh = net::DecodeHeader(out.data() + at);
    if (mh.type == 5) {
      EXPECT_LE(mh.payload_length, 256u);
      EXPECT_EQ(wire::LoadU64(out.data() + at + 12), data);
      data += mh.payload_length - 8;
      ++frames;
    }
    at += net::kHeaderSize + mh.payload_length;
  }
  EXPECT_EQ(at, out.size());
  EXPECT_GE(frames, 3u);
  auto d = std::make_unique<TensorDescriptor>();
  ASSERT_TRUE(file_->ReadDescriptor(*file_->Find("quant"), d.get()).ok());
  ASSERT_GE(d->buffer_count, 2u);  // data + parameters: frames straddle them
  uint64_t sum = 0;
  for (uint32_t i = 0; i < d->buffer_count; ++i) sum += d->buffers[i].byte_size;
  EXPECT_EQ(data, sum);
}

// Chunking: the client fed the server's transcript split at every point
// gives the same events as in one piece.
TEST_F(NetSessionTest, SameEventsAtEverySplitPoint) {
  auto small_bytes = net::testing::NetTestFile(0);
  auto small = net::testing::OpenTestFile(small_bytes);
  const std::vector<std::string> keys = {"dense", "quant", "partition",
                                         "empty"};
  const std::vector<uint8_t> transcript =
      net::testing::ServerTranscript(*small, keys);
  RecordingSink whole;
  {
    NetClientSession c(ClientOptions(keys), &whole);
    ASSERT_TRUE(c.Feed(transcript).ok());
    ASSERT_TRUE(c.Satisfied());
  }
  for (size_t split = 0; split <= transcript.size(); ++split) {
    RecordingSink two;
    NetClientSession c(ClientOptions(keys), &two);
    const auto all = absl::MakeConstSpan(transcript);
    ASSERT_TRUE(c.Feed(all.first(split)).ok()) << split;
    ASSERT_TRUE(c.Feed(all.subspan(split)).ok()) << split;
    ASSERT_TRUE(c.Satisfied()) << split;
    ASSERT_TRUE(container::testing::SameEvents(whole, two)) << split;
  }
  for (size_t chunk : {1, 2, 3, 7, 13, 64}) {
    RecordingSink pieces;
    NetClientSession c(ClientOptions(keys), &pieces);
    container::testing::FeedInChunks(
        transcript, chunk,
        [&](absl::Span<const uint8_t> p) { return c.Feed(p).ok(); });
    EXPECT_TRUE(c.Satisfied()) << chunk;
    EXPECT_TRUE(container::testing::SameEvents(whole, pieces)) << chunk;
  }
}

TEST_F(NetSessionTest, TruncationAtEveryBoundaryIsNet05AndNoTensorEndsEarly) {
  auto small_bytes = net::testing::NetTestFile(0);
  auto small = net::testing::OpenTestFile(small_bytes);
  const std::vector<std::string> keys = {"dense", "quant", "partition"};
  const std::vector<uint8_t> transcript =
      net::testing::ServerTranscript(*small, keys);
  for (size_t cut = 0; cut < transcript.size(); ++cut) {
    RecordingSink sink;
    NetClientSession c(ClientOptions(keys), &sink);
    ASSERT_TRUE(c.Feed(absl::MakeConstSpan(transcript).first(cut)).ok());
    const absl::Status s = c.Finish();
    ASSERT_FALSE(s.ok()) << cut;
    EXPECT_EQ(RuleIdOf(s).value_or(""), "NET-05") << cut << " " << s;
    EXPECT_FALSE(sink.ended);
    EXPECT_TRUE(sink.errors.empty());
    for (const auto& t : sink.tensors) {
      if (!t.complete) continue;
      uint64_t sum = 0, got = 0;
      for (uint32_t i = 0; i < t.descriptor.buffer_count; ++i) {
        sum += t.descriptor.buffers[i].byte_size;
        got += i < t.buffers.size() ? t.buffers[i].size() : 0;
      }
      EXPECT_EQ(sum, got) << cut;
    }
  }
}

TEST_F(NetSessionTest, Pipelining) {
  std::vector<std::string> keys;
  for (int i = 0; i < 20; ++i) keys.push_back(i % 2 ? "dense" : "empty");
  NetClientOptions o = ClientOptions(keys);
  o.max_outstanding = 5;
  RecordingSink sink;
  const auto run = net::testing::RunInMemory(*file_, o, &sink);
  ASSERT_TRUE(run.status.ok()) << run.status;
  EXPECT_EQ(sink.tensors.size(), 20u);
}

TEST_F(NetSessionTest, ListingConvention) {
  RecordingSink sink;
  const auto run = net::testing::RunInMemory(
      *file_, ClientOptions({std::string(kListKey)}), &sink);
  ASSERT_TRUE(run.status.ok()) << run.status;
  ASSERT_EQ(sink.tensors.size(), 1u);
  EXPECT_EQ(sink.tensors[0].descriptor.type_tag, 0x11);
  EXPECT_EQ(sink.tensors[0].descriptor.rank, 1u);
  const auto names = ParseTensorList(sink.tensors[0].buffers[0]);
  ASSERT_TRUE(names.ok()) << names.status();
  std::vector<std::string> want;
  for (const container::IndexEntry& e : file_->index().entries()) {
    want.emplace_back(e.name);
  }
  EXPECT_EQ(*names, want);
  EXPECT_FALSE(ParseTensorList(std::vector<uint8_t>{5, 0, 0, 0, 'a'}).ok());
}

TEST_F(NetSessionTest, IdentityConvention) {
  // Answered with the configured bytes, as a 1-D uint8 tensor.
  NetServerOptions so;
  so.identity = "hrry dev=1 ino=2 size=3 mtime_ns=4 index_crc32c=00000005";
  RecordingSink sink;
  auto run = net::testing::RunInMemory(
      *file_, ClientOptions({std::string(kIdentityKey)}), &sink, 7, &so);
  ASSERT_TRUE(run.status.ok()) << run.status;
  ASSERT_EQ(sink.tensors.size(), 1u);
  EXPECT_EQ(sink.tensors[0].descriptor.type_tag, 0x11);
  EXPECT_EQ(sink.tensors[0].descriptor.rank, 1u);
  EXPECT_EQ(sink.tensors[0].descriptor.shape[0], so.identity.size());
  EXPECT_EQ(std::string(sink.tensors[0].buffers[0].begin(),
                        sink.tensors[0].buffers[0].end()),
            so.identity);
  // Twice on one connection, after the listing: the same bytes.
  RecordingSink again;
  run = net::testing::RunInMemory(
      *file_,
      ClientOptions({std::string(kIdentityKey), std::string(kListKey),
                     std::string(kIdentityKey)}),
      &again, 1 << 20, &so);
  ASSERT_TRUE(run.status.ok()) << run.status;
  ASSERT_EQ(again.tensors.size(), 3u);
  EXPECT_EQ(again.tensors[2].buffers[0], again.tensors[0].buffers[0]);
  // Without an identity the key is unknown (what a resumed client takes for
  // "this server does not say").
  RecordingSink none;
  run = net::testing::RunInMemory(
      *file_, ClientOptions({std::string(kIdentityKey)}), &none);
  EXPECT_EQ(run.status.code(), absl::StatusCode::kNotFound) << run.status;
}

TEST_F(NetSessionTest, IdentityKeyIsReservedEvenIfATensorHasThatName) {
  // A file with a tensor named hurray:identity: two such files would pass
  // for one if that tensor answered, so the server's identity does (or, with
  // none, UNKNOWN_TENSOR), while hurray:list still yields to a tensor.
  std::vector<vectors::Named> tensors;
  tensors.push_back(
      {std::string(kIdentityKey), vectors::Dense(type_tag::kUInt8, {4})});
  tensors.push_back(
      {std::string(kListKey), vectors::Dense(type_tag::kFloat32, {2})});
  const std::vector<uint8_t> bytes = container::testing::WriteFile(tensors);
  auto file = net::testing::OpenTestFile(bytes);
  ASSERT_NE(file, nullptr);
  NetServerOptions so;
  so.identity = "hrry dev=1 ino=2 size=3 mtime_ns=4 index_crc32c=00000005";
  RecordingSink sink;
  auto run = net::testing::RunInMemory(
      *file, ClientOptions({std::string(kIdentityKey), std::string(kListKey)}),
      &sink, 1 << 20, &so);
  ASSERT_TRUE(run.status.ok()) << run.status;
  ASSERT_EQ(sink.tensors.size(), 2u);
  EXPECT_EQ(std::string(sink.tensors[0].buffers[0].begin(),
                        sink.tensors[0].buffers[0].end()),
            so.identity);
  EXPECT_EQ(sink.tensors[1].descriptor.type_tag, type_tag::kFloat32);
  RecordingSink none;
  run = net::testing::RunInMemory(
      *file, ClientOptions({std::string(kIdentityKey)}), &none);
  EXPECT_EQ(run.status.code(), absl::StatusCode::kNotFound) << run.status;
}

TEST_F(NetSessionTest, UnknownTensorIsAFailedStatusNamingKeyAndCode) {
  RecordingSink sink;
  const auto run = net::testing::RunInMemory(
      *file_, ClientOptions({"dense", "nope"}), &sink);
  EXPECT_EQ(run.status.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(run.status.message().find("'nope'"), absl::string_view::npos);
  EXPECT_NE(run.status.message().find("0x02 UNKNOWN_TENSOR"),
            absl::string_view::npos)
      << run.status;
  EXPECT_EQ(sink.tensors.size(), 1u);
  EXPECT_FALSE(sink.ended);
}

TEST_F(NetSessionTest, NoKeysIsSatisfiedAfterHello) {
  RecordingSink sink;
  const auto run = net::testing::RunInMemory(*file_, ClientOptions({}), &sink);
  EXPECT_TRUE(run.status.ok());
  EXPECT_TRUE(run.satisfied);
  EXPECT_TRUE(sink.ended);
}

TEST_F(NetSessionTest, PingIsAnsweredWithPong) {
  NetClientSession c(ClientOptions({"x"}), nullptr);
  c.ConsumeOutput(c.PendingOutput().size());
  std::vector<uint8_t> in = ServerHelloBytes();
  net::AppendMessage(&in, net::MessageType::kPing, 9,
                     std::vector<uint8_t>{1, 2});
  ASSERT_TRUE(c.Feed(in).ok());
  const auto out = c.PendingOutput();
  std::vector<uint8_t> pong;
  net::AppendMessage(&pong, net::MessageType::kPong, 9,
                     std::vector<uint8_t>{1, 2});
  // After the request for "x".
  ASSERT_GE(out.size(), pong.size());
  EXPECT_EQ(std::vector<uint8_t>(out.end() - pong.size(), out.end()), pong);
}

// Limits are decided from declared sizes before a data byte is read.
TEST(NetLimits, DeclaredHugeBufferIsRefusedBeforeAnyData) {
  auto d = vectors::Dense(0x11, {uint64_t{1} << 63});
  const auto desc = vectors::Bytes(*d);
  RecordingSink sink;
  NetClientSession c(net::testing::ClientOptions({"huge"}), &sink);
  const absl::Status s = c.Feed(
      Cat({ServerHelloBytes(), DescriptorBytes(1, desc, uint64_t{1} << 63)}));
  EXPECT_EQ(RuleIdOf(s).value_or(""), "LIMIT-BUFFER-BYTES") << s;
  EXPECT_TRUE(sink.tensors.empty());
}

TEST(NetLimits, DeclaredHugeTotalIsRefusedBeforeAnyData) {
  auto d = vectors::Dense(0x03, {3, 4});
  const auto desc = vectors::Bytes(*d);
  for (Mode mode : {Mode::kStrict, Mode::kPermissive}) {
    NetClientOptions o = net::testing::ClientOptions({"t"});
    o.parse.mode = mode;
    NetClientSession c(o, nullptr);
    const absl::Status s = c.Feed(
        Cat({ServerHelloBytes(), DescriptorBytes(1, desc, uint64_t{1} << 63)}));
    EXPECT_EQ(RuleIdOf(s).value_or(""), "LIMIT-BUFFER-BYTES") << s;
  }
  NetClientOptions o = net::testing::ClientOptions({"t"});
  o.limits.max_total_bytes = 10;
  NetClientSession c(o, nullptr);
  const absl::Status s =
      c.Feed(Cat({ServerHelloBytes(), DescriptorBytes(1, desc, 48)}));
  EXPECT_EQ(RuleIdOf(s).value_or(""), "LIMIT-TOTAL-BYTES") << s;
}

TEST(NetClient, PermissiveAcceptsExtraDataBytesButNeverFewer) {
  auto d = vectors::Dense(0x11, {4});
  const auto desc = vectors::Bytes(*d);
  NetClientOptions o = net::testing::ClientOptions({"t"});
  o.parse.mode = Mode::kPermissive;
  RecordingSink sink;
  NetClientSession c(o, &sink);
  const std::vector<uint8_t> six = {1, 2, 3, 4, 5, 6};
  const absl::Status s =
      c.Feed(Cat({ServerHelloBytes(), DescriptorBytes(1, desc, 6),
                  DataBytes(1, 0, six), EndBytes(1)}));
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_EQ(sink.tensors.size(), 1u);
  EXPECT_EQ(sink.tensors[0].buffers[0], (std::vector<uint8_t>{1, 2, 3, 4}));
  NetClientSession fewer(o, nullptr);
  EXPECT_EQ(RuleIdOf(fewer.Feed(Cat(
                         {ServerHelloBytes(), DescriptorBytes(1, desc, 3)})))
                .value_or(""),
            "NET-TD-06");
}

TEST(NetClient, ViolationQueuesAnErrorForTheServer) {
  NetClientSession c(net::testing::ClientOptions({"t"}), nullptr);
  c.ConsumeOutput(c.PendingOutput().size());
  std::vector<uint8_t> in = ServerHelloBytes();
  net::AppendMessage(&in, static_cast<net::MessageType>(0x0E), 1, {});
  EXPECT_FALSE(c.Feed(in).ok());
  const auto out = c.PendingOutput();
  // The request for "t", then ERROR INVALID_MESSAGE.
  size_t at = 0;
  net::MessageHeader last;
  while (at + net::kHeaderSize <= out.size()) {
    last = net::DecodeHeader(out.data() + at);
    if (last.type == 9) {
      net::ErrorMessage e;
      ASSERT_TRUE(
          net::DecodeError(out.subspan(at + 12, last.payload_length), &e).ok());
      EXPECT_EQ(e.code, 6u);
      EXPECT_NE(e.message.find("NET-03"), absl::string_view::npos);
    }
    at += net::kHeaderSize + last.payload_length;
  }
  EXPECT_EQ(last.type, 9u);
}

// Once every requested tensor arrived (Satisfied, the sink's
// OnEndOfStream called), what the server sends after is not read: an
// unsolicited descriptor, an ERROR or an oversized header cannot turn the
// finished session into a failed one (found by net_session_fuzz).
TEST(NetClient, NothingAfterSatisfiedIsRead) {
  auto d = vectors::Dense(0x11, {4});
  const auto desc = vectors::Bytes(*d);
  const std::vector<uint8_t> four = {1, 2, 3, 4};
  const std::vector<uint8_t> answer =
      Cat({ServerHelloBytes(), DescriptorBytes(1, desc, 4),
           DataBytes(1, 0, four), EndBytes(1)});
  std::vector<uint8_t> error;
  net::ErrorMessage e;
  e.code = 6;
  e.message = "late";
  net::AppendError(&error, 1, e);
  std::vector<uint8_t> oversized(net::kHeaderSize);  // NET-01 if read
  net::EncodeHeader({0x05, 1, 0xFFFFFFF0u}, oversized.data());
  for (const std::vector<uint8_t>& trailing :
       {DescriptorBytes(7, desc, 4), error, oversized}) {
    RecordingSink sink;
    NetClientSession c(net::testing::ClientOptions({"t"}), &sink);
    absl::Status s = c.Feed(Cat({answer, trailing}));
    EXPECT_TRUE(s.ok()) << s;
    EXPECT_TRUE(c.Satisfied());
    EXPECT_TRUE(sink.ended);
    EXPECT_EQ(sink.tensors.size(), 1u);
    s = c.Finish();
    EXPECT_TRUE(s.ok()) << s;
  }
}

TEST(NetClient, FailSourceIsStreamIo) {
  NetClientSession c(net::testing::ClientOptions({"t"}), nullptr);
  const absl::Status s = c.FailSource("idle timeout");
  EXPECT_EQ(RuleIdOf(s).value_or(""), "STREAM-IO");
  EXPECT_NE(s.message().find("idle timeout"), absl::string_view::npos);
}

}  // namespace
}  // namespace hurray::stream::net
