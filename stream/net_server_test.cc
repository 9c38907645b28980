// The Asio server and the client session over real sockets, 127.0.0.1 and
// ephemeral ports only. Time is bounded by receive timeouts; no timing is
// asserted.
#include "stream/net_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "parser/rules.h"
#include "parser/wire.h"
#include "stream/net_client_session.h"
#include "stream/net_message.h"
#include "stream/net_test_util.h"
#include "stream/test_util.h"

namespace hurray::stream {
namespace {

using testing::ClientOptions;
using testing::RecordingSink;

const std::vector<std::string> kKeys = {"dense", "quant", "partition", "empty",
                                        "big"};

// A server over the test file on an ephemeral port, run on its own thread.
class Served {
 public:
  explicit Served(uint32_t idle_ms = 20000, uint64_t big = 1 << 20)
      : bytes_(testing::NetTestFile(big)),
        file_(testing::OpenTestFile(bytes_)) {
    NetServerConfig c;
    c.port = 0;
    c.idle_timeout_ms = idle_ms;
    c.read_buffer_bytes = 4096;
    server_ = std::make_unique<NetServer>(file_.get(), c);
    const absl::Status s = server_->Listen();
    EXPECT_TRUE(s.ok()) << s;
    thread_ = std::thread([this] { server_->Run(); });
  }
  ~Served() {
    server_->Stop();
    thread_.join();
  }
  uint16_t port() const { return server_->port(); }
  const HrryFile& file() const { return *file_; }
  NetServer& server() { return *server_; }

 private:
  std::vector<uint8_t> bytes_;
  std::unique_ptr<HrryFile> file_;
  std::unique_ptr<NetServer> server_;
  std::thread thread_;
};

// Every tensor of the response equals the file's (byte for byte).
::testing::AssertionResult SameAsFile(const HrryFile& file,
                                      const RecordingSink& sink) {
  const std::vector<std::string> names = {
      "dense", "quant", "partition", "partition_top", "partition_bottom",
      "empty", "big"};
  if (sink.tensors.size() != names.size()) {
    return ::testing::AssertionFailure() << sink.tensors.size() << " tensors";
  }
  for (size_t t = 0; t < names.size(); ++t) {
    const IndexEntry* e = file.Find(names[t]);
    auto d = std::make_unique<TensorDescriptor>();
    if (e == nullptr || !file.ReadDescriptor(*e, d.get()).ok()) {
      return ::testing::AssertionFailure() << names[t];
    }
    const auto& got = sink.tensors[t];
    if (!got.complete || !(got.descriptor == *d) ||
        got.buffers.size() != d->buffer_count) {
      return ::testing::AssertionFailure() << names[t] << " differs";
    }
    for (uint32_t i = 0; i < d->buffer_count; ++i) {
      const auto b = file.Buffer(*e, *d, i);
      if (!b.ok() ||
          std::vector<uint8_t>(b->begin(), b->end()) != got.buffers[i]) {
        return ::testing::AssertionFailure() << names[t] << " buffer " << i;
      }
    }
  }
  return ::testing::AssertionSuccess();
}

// Messages in `bytes` (a whole server answer): the last one's type and, for
// an ERROR, its code.
std::pair<uint32_t, uint32_t> LastMessage(const std::vector<uint8_t>& bytes) {
  size_t at = 0;
  std::pair<uint32_t, uint32_t> last{0, 0};
  while (at + net::kHeaderSize <= bytes.size()) {
    const net::MessageHeader h = net::DecodeHeader(bytes.data() + at);
    if (at + net::kHeaderSize + h.payload_length > bytes.size()) break;
    last = {h.type, h.type == 9 && h.payload_length >= 4
                        ? wire::LoadU32(bytes.data() + at + net::kHeaderSize)
                        : 0};
    at += net::kHeaderSize + h.payload_length;
  }
  return last;
}

std::vector<uint8_t> HelloAndRequest(absl::string_view key) {
  std::vector<uint8_t> out;
  net::Hello h;
  net::AppendHello(&out, net::MessageType::kClientHello, 1, h);
  net::TensorRequest r;
  r.key = key;
  net::AppendRequest(&out, 1, r);
  return out;
}

TEST(NetServer, ServesEveryTensorByteExactly) {
  Served s;
  RecordingSink sink;
  const auto run = testing::FetchTcp(s.port(), ClientOptions(kKeys), &sink);
  ASSERT_TRUE(run.status.ok()) << run.status;
  EXPECT_TRUE(run.satisfied);
  EXPECT_TRUE(SameAsFile(s.file(), sink));
}

TEST(NetServer, ClientReadingOneByteAtATime) {
  Served s(20000, 4096);
  RecordingSink sink;
  const auto run =
      testing::FetchTcp(s.port(), ClientOptions(kKeys), &sink, /*chunk=*/1);
  ASSERT_TRUE(run.status.ok()) << run.status;
  EXPECT_TRUE(SameAsFile(s.file(), sink));
}

TEST(NetServer, ClientTricklingItsRequestsOneByteAtATime) {
  Served s(20000, 4096);
  RecordingSink sink;
  NetClientSession client(ClientOptions({"dense", "quant"}), &sink);
  const int fd = testing::ConnectLoopback(s.port());
  ASSERT_GE(fd, 0);
  std::vector<uint8_t> buf(1 << 16);
  absl::Status st;
  while (st.ok() && !client.Satisfied()) {
    const auto out = client.PendingOutput();
    for (size_t i = 0; i < out.size(); ++i) {
      ASSERT_TRUE(testing::SendAll(fd, out.subspan(i, 1)));
    }
    client.ConsumeOutput(out.size());
    const ssize_t n = recv(fd, buf.data(), buf.size(), 0);
    ASSERT_GT(n, 0);
    st = client.Feed(absl::MakeConstSpan(buf.data(), n));
  }
  close(fd);
  EXPECT_TRUE(st.ok()) << st;
  EXPECT_EQ(sink.tensors.size(), 2u);
}

TEST(NetServer, GarbageIsAnsweredWithInvalidMessageThenClosed) {
  Served s;
  const int fd = testing::ConnectLoopback(s.port());
  ASSERT_GE(fd, 0);
  const std::vector<uint8_t> garbage = {0xDE, 0xAD, 0xBE, 0xEF, 1, 0, 0, 0,
                                        0,    0,    0,    0,    7, 7, 7};
  ASSERT_TRUE(testing::SendAll(fd, garbage));
  const auto reply = testing::ReadUntilClose(fd);  // ends: server closed
  close(fd);
  EXPECT_EQ(LastMessage(reply), std::make_pair(9u, 6u));
}

TEST(NetServer, OversizedFrameIsAnsweredWithMessageTooLargeThenClosed) {
  Served s;
  const int fd = testing::ConnectLoopback(s.port());
  ASSERT_GE(fd, 0);
  std::vector<uint8_t> in = HelloAndRequest("dense");
  uint8_t h[net::kHeaderSize];
  net::EncodeHeader({3, 3, 0x7FFFFFFF}, h);
  in.insert(in.end(), h, h + sizeof(h));
  ASSERT_TRUE(testing::SendAll(fd, in));
  const auto reply = testing::ReadUntilClose(fd, 64 << 20);
  close(fd);
  EXPECT_EQ(LastMessage(reply), std::make_pair(9u, 7u));
}

TEST(NetServer, IdleConnectionIsClosed) {
  Served s(/*idle_ms=*/100);
  const int fd = testing::ConnectLoopback(s.port());
  ASSERT_GE(fd, 0);
  uint8_t b;
  // The server closes: recv returns 0 (not a receive timeout, -1).
  EXPECT_EQ(recv(fd, &b, 1, 0), 0);
  close(fd);
}

// A fake server that answers with the first `cut` bytes of a transcript and
// closes: the client reports NET-05 and never a complete tensor it did not
// receive whole.
TEST(NetServer, PeerClosingAtEveryStructuralBoundary) {
  auto bytes = testing::NetTestFile(0);
  auto file = testing::OpenTestFile(bytes);
  const std::vector<std::string> keys = {"dense", "quant", "partition"};
  const std::vector<uint8_t> t = testing::ServerTranscript(*file, keys);
  // Every message boundary and the middle of every message.
  std::vector<size_t> cuts;
  for (size_t at = 0; at + net::kHeaderSize <= t.size();) {
    const net::MessageHeader h = net::DecodeHeader(t.data() + at);
    cuts.push_back(at);
    cuts.push_back(at + 5);
    cuts.push_back(at + net::kHeaderSize + h.payload_length / 2);
    at += net::kHeaderSize + h.payload_length;
  }
  cuts.erase(std::remove_if(cuts.begin(), cuts.end(),
                            [&](size_t c) { return c >= t.size(); }),
             cuts.end());
  ASSERT_GT(cuts.size(), 20u);
  const int lfd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_EQ(listen(lfd, 4), 0);
  socklen_t len = sizeof(a);
  getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &len);
  const uint16_t port = ntohs(a.sin_port);
  std::thread fake([&] {
    for (size_t cut : cuts) {
      const int c = accept(lfd, nullptr, nullptr);
      if (c < 0) return;
      testing::SendAll(c, absl::MakeConstSpan(t).first(cut));
      shutdown(c, SHUT_WR);
      uint8_t sink[4096];
      while (recv(c, sink, sizeof(sink), 0) > 0) {
      }
      close(c);
    }
  });
  for (size_t cut : cuts) {
    RecordingSink sink;
    const auto run = testing::FetchTcp(port, ClientOptions(keys), &sink);
    EXPECT_EQ(RuleIdOf(run.status).value_or(""), "NET-05")
        << cut << ": " << run.status;
    EXPECT_FALSE(sink.ended);
    for (const auto& r : sink.tensors) {
      if (!r.complete) continue;
      uint64_t want = 0, got = 0;
      for (uint32_t i = 0; i < r.descriptor.buffer_count; ++i) {
        want += r.descriptor.buffers[i].byte_size;
        got += i < r.buffers.size() ? r.buffers[i].size() : 0;
      }
      EXPECT_EQ(want, got) << cut;
    }
  }
  fake.join();
  close(lfd);
}

// 50 concurrent clients, one of them hostile (it asks for the big tensor
// and never reads; another connection sends garbage): the other 49 get every
// tensor byte-exactly.
TEST(NetServer, FiftyClientsOneHostile) {
  Served s(20000, 2 << 20);
  // The hostile one: requests, never reads (the server holds it at one
  // frame), and a garbage sender.
  const int stalled = testing::ConnectLoopback(s.port());
  ASSERT_GE(stalled, 0);
  std::vector<uint8_t> asks = HelloAndRequest("big");
  for (uint32_t i = 3; i < 40; i += 2) {
    net::TensorRequest r;
    r.key = "big";
    net::AppendRequest(&asks, i, r);
  }
  ASSERT_TRUE(testing::SendAll(stalled, asks));
  const int rude = testing::ConnectLoopback(s.port());
  ASSERT_GE(rude, 0);
  ASSERT_TRUE(testing::SendAll(rude, std::vector<uint8_t>(100, 0xFF)));

  std::atomic<int> good{0};
  std::vector<std::thread> clients;
  std::vector<std::string> failures(49);
  for (int i = 0; i < 49; ++i) {
    clients.emplace_back([&, i] {
      RecordingSink sink;
      const auto run = testing::FetchTcp(s.port(), ClientOptions(kKeys), &sink);
      const auto same = SameAsFile(s.file(), sink);
      if (run.status.ok() && same) {
        ++good;
      } else {
        failures[i] = std::string(run.status.message()) + same.message();
      }
    });
  }
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(good.load(), 49);
  for (const std::string& f : failures) {
    if (!f.empty()) ADD_FAILURE() << f;
  }
  close(stalled);
  close(rude);
}

TEST(NetServer, StopEndsRunWithConnectionsOpen) {
  auto s = std::make_unique<Served>();
  const int fd = testing::ConnectLoopback(s->port());
  ASSERT_GE(fd, 0);
  s.reset();  // Stop() + join: returns although a client is connected
  uint8_t b;
  EXPECT_LE(recv(fd, &b, 1, 0), 0);
  close(fd);
}

}  // namespace
}  // namespace hurray::stream
