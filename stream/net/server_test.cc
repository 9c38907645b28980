// The Asio server and the client session over real sockets, 127.0.0.1 and
// ephemeral ports only. Time is bounded by receive timeouts; no timing is
// asserted.
#include "stream/net/server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "parser/rules.h"
#include "parser/wire.h"
#include "stream/container/testing/test_util.h"
#include "stream/net/client_session.h"
#include "stream/net/message.h"
#include "stream/net/testing/net_test_util.h"
#include "stream/net/testing/slow_crowd.h"

namespace hurray::stream::net {
namespace {

using container::testing::RecordingSink;
using net::testing::ClientOptions;

const std::vector<std::string> kKeys = {"dense", "quant", "partition", "empty",
                                        "big"};

// A server over the test file on an ephemeral port, run on its own thread.
class Served {
 public:
  explicit Served(uint32_t idle_ms = 20000, uint64_t big = 1 << 20)
      : Served(Config(idle_ms), big) {}
  Served(const NetServerConfig& c, uint64_t big)
      : bytes_(net::testing::NetTestFile(big)),
        file_(net::testing::OpenTestFile(bytes_)) {
    server_ = std::make_unique<NetServer>(file_.get(), c);
    const absl::Status s = server_->Listen();
    EXPECT_TRUE(s.ok()) << s;
    thread_ = std::thread([this] { server_->Run(); });
  }
  ~Served() {
    server_->Stop();
    thread_.join();
  }
  // The tests' defaults: ephemeral port, small reads, long timeouts.
  static NetServerConfig Config(uint32_t idle_ms = 20000) {
    NetServerConfig c;
    c.port = 0;
    c.idle_timeout_ms = idle_ms;
    c.read_buffer_bytes = 4096;
    return c;
  }
  uint16_t port() const { return server_->port(); }
  const container::HrryFile& file() const { return *file_; }
  NetServer& server() { return *server_; }

 private:
  std::vector<uint8_t> bytes_;
  std::unique_ptr<container::HrryFile> file_;
  std::unique_ptr<NetServer> server_;
  std::thread thread_;
};

// Every tensor of the response equals the file's (byte for byte).
::testing::AssertionResult SameAsFile(const container::HrryFile& file,
                                      const RecordingSink& sink) {
  const std::vector<std::string> names = {
      "dense", "quant", "partition", "partition_top", "partition_bottom",
      "empty", "big"};
  if (sink.tensors.size() != names.size()) {
    return ::testing::AssertionFailure() << sink.tensors.size() << " tensors";
  }
  for (size_t t = 0; t < names.size(); ++t) {
    const container::IndexEntry* e = file.Find(names[t]);
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
  const auto run =
      net::testing::FetchTcp(s.port(), ClientOptions(kKeys), &sink);
  ASSERT_TRUE(run.status.ok()) << run.status;
  EXPECT_TRUE(run.satisfied);
  EXPECT_TRUE(SameAsFile(s.file(), sink));
}

TEST(NetServer, ClientReadingOneByteAtATime) {
  Served s(20000, 4096);
  RecordingSink sink;
  const auto run = net::testing::FetchTcp(s.port(), ClientOptions(kKeys), &sink,
                                          /*chunk=*/1);
  ASSERT_TRUE(run.status.ok()) << run.status;
  EXPECT_TRUE(SameAsFile(s.file(), sink));
}

TEST(NetServer, ClientTricklingItsRequestsOneByteAtATime) {
  Served s(20000, 4096);
  RecordingSink sink;
  NetClientSession client(ClientOptions({"dense", "quant"}), &sink);
  const int fd = net::testing::ConnectLoopback(s.port());
  ASSERT_GE(fd, 0);
  std::vector<uint8_t> buf(1 << 16);
  absl::Status st;
  while (st.ok() && !client.Satisfied()) {
    const auto out = client.PendingOutput();
    for (size_t i = 0; i < out.size(); ++i) {
      ASSERT_TRUE(net::testing::SendAll(fd, out.subspan(i, 1)));
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
  const int fd = net::testing::ConnectLoopback(s.port());
  ASSERT_GE(fd, 0);
  const std::vector<uint8_t> garbage = {0xDE, 0xAD, 0xBE, 0xEF, 1, 0, 0, 0,
                                        0,    0,    0,    0,    7, 7, 7};
  ASSERT_TRUE(net::testing::SendAll(fd, garbage));
  const auto reply = net::testing::ReadUntilClose(fd);  // ends: server closed
  close(fd);
  EXPECT_EQ(LastMessage(reply), std::make_pair(9u, 6u));
}

TEST(NetServer, OversizedFrameIsAnsweredWithMessageTooLargeThenClosed) {
  Served s;
  const int fd = net::testing::ConnectLoopback(s.port());
  ASSERT_GE(fd, 0);
  std::vector<uint8_t> in = HelloAndRequest("dense");
  uint8_t h[net::kHeaderSize];
  net::EncodeHeader({3, 3, 0x7FFFFFFF}, h);
  in.insert(in.end(), h, h + sizeof(h));
  ASSERT_TRUE(net::testing::SendAll(fd, in));
  const auto reply = net::testing::ReadUntilClose(fd, 64 << 20);
  close(fd);
  EXPECT_EQ(LastMessage(reply), std::make_pair(9u, 7u));
}

TEST(NetServer, IdleConnectionIsClosed) {
  Served s(/*idle_ms=*/100);
  const int fd = net::testing::ConnectLoopback(s.port());
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
  auto bytes = net::testing::NetTestFile(0);
  auto file = net::testing::OpenTestFile(bytes);
  const std::vector<std::string> keys = {"dense", "quant", "partition"};
  const std::vector<uint8_t> t = net::testing::ServerTranscript(*file, keys);
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
      net::testing::SendAll(c, absl::MakeConstSpan(t).first(cut));
      shutdown(c, SHUT_WR);
      uint8_t sink[4096];
      while (recv(c, sink, sizeof(sink), 0) > 0) {
      }
      close(c);
    }
  });
  for (size_t cut : cuts) {
    RecordingSink sink;
    const auto run = net::testing::FetchTcp(port, ClientOptions(keys), &sink);
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
  const int stalled = net::testing::ConnectLoopback(s.port());
  ASSERT_GE(stalled, 0);
  std::vector<uint8_t> asks = HelloAndRequest("big");
  for (uint32_t i = 3; i < 40; i += 2) {
    net::TensorRequest r;
    r.key = "big";
    net::AppendRequest(&asks, i, r);
  }
  ASSERT_TRUE(net::testing::SendAll(stalled, asks));
  const int rude = net::testing::ConnectLoopback(s.port());
  ASSERT_GE(rude, 0);
  ASSERT_TRUE(net::testing::SendAll(rude, std::vector<uint8_t>(100, 0xFF)));

  std::atomic<int> good{0};
  std::vector<std::thread> clients;
  std::vector<std::string> failures(49);
  for (int i = 0; i < 49; ++i) {
    clients.emplace_back([&, i] {
      RecordingSink sink;
      const auto run =
          net::testing::FetchTcp(s.port(), ClientOptions(kKeys), &sink);
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

// --- Slow and greedy clients (issue 13, item 3). ----------------------------

std::vector<uint8_t> ClientHelloBytes() {
  std::vector<uint8_t> out;
  net::AppendHello(&out, net::MessageType::kClientHello, 1, net::Hello());
  return out;
}

// Sends `bytes` one at a time every `interval_ms` on its own thread until
// they are all sent or a send fails (the server closed).
class Trickler {
 public:
  Trickler(int fd, std::vector<uint8_t> bytes, int interval_ms)
      : thread_([fd, bytes = std::move(bytes), interval_ms, this] {
          for (uint8_t b : bytes) {
            if (stop_ || send(fd, &b, 1, MSG_NOSIGNAL) != 1) return;
            std::this_thread::sleep_for(std::chrono::milliseconds(interval_ms));
          }
        }) {}
  ~Trickler() {
    stop_ = true;
    thread_.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Every byte reset the idle timer, but the HELLO never came whole: closed
// by the HELLO deadline with ERROR 0x06. (Before: kept open; the 10 s
// receive timeout ended the read with no ERROR.)
TEST(NetServer, HelloTrickledOneByteAtATimeHitsTheHelloDeadline) {
  NetServerConfig c = Served::Config(/*idle_ms=*/20000);
  c.hello_timeout_ms = 400;
  Served s(c, 0);
  const int fd = net::testing::ConnectLoopback(s.port(), /*timeout_ms=*/10000);
  ASSERT_GE(fd, 0);
  const std::vector<uint8_t> hello = ClientHelloBytes();
  std::vector<uint8_t> reply;
  {
    Trickler t(fd, hello, /*interval_ms=*/50);
    reply = net::testing::ReadUntilClose(fd);
  }
  close(fd);
  EXPECT_EQ(LastMessage(reply), std::make_pair(9u, 6u));
  EXPECT_EQ(s.server().connections_timed_out(), 1u);
}

TEST(NetServer, SilentConnectionHitsTheHelloDeadline) {
  NetServerConfig c = Served::Config(/*idle_ms=*/20000);
  c.hello_timeout_ms = 200;
  Served s(c, 0);
  const int fd = net::testing::ConnectLoopback(s.port(), /*timeout_ms=*/10000);
  ASSERT_GE(fd, 0);
  const auto reply = net::testing::ReadUntilClose(fd);
  close(fd);
  EXPECT_EQ(LastMessage(reply), std::make_pair(9u, 6u));
}

// After a good HELLO, a request trickled one byte at a time: closed by the
// message deadline.
TEST(NetServer, RequestTrickledAfterHelloHitsTheMessageDeadline) {
  NetServerConfig c = Served::Config(/*idle_ms=*/20000);
  c.message_timeout_ms = 400;
  Served s(c, 0);
  const int fd = net::testing::ConnectLoopback(s.port(), /*timeout_ms=*/10000);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(net::testing::SendAll(fd, ClientHelloBytes()));
  std::vector<uint8_t> request;
  net::TensorRequest r;
  r.key = "dense";
  net::AppendRequest(&request, 1, r);
  std::vector<uint8_t> reply;
  {
    Trickler t(fd, request, /*interval_ms=*/50);
    reply = net::testing::ReadUntilClose(fd);
  }
  close(fd);
  EXPECT_EQ(LastMessage(reply), std::make_pair(9u, 6u));
  EXPECT_EQ(s.server().connections_timed_out(), 1u);
}

// The message clock runs only while the server waits to read: half a
// request that arrived with a big request waits, unread, while the big
// response is written to a client that reads it slowly (longer than the
// message timeout), and its rest is then accepted.
TEST(NetServer, MessageDeadlineDoesNotCountTimeSpentAnswering) {
  NetServerConfig c = Served::Config(/*idle_ms=*/20000);
  c.message_timeout_ms = 300;
  // Far more than the socket buffers hold (send buffer at most 4 MiB here;
  // the receive buffer does not grow while nothing is read).
  constexpr uint64_t kBig = 24 << 20;
  Served s(c, kBig);
  const int fd = net::testing::ConnectLoopback(s.port(), /*timeout_ms=*/10000);
  ASSERT_GE(fd, 0);
  std::vector<uint8_t> in = HelloAndRequest("big");
  std::vector<uint8_t> second;
  net::TensorRequest r;
  r.key = "dense";
  net::AppendRequest(&second, 3, r);
  in.insert(in.end(), second.begin(), second.begin() + 5);
  ASSERT_TRUE(net::testing::SendAll(fd, in));
  std::this_thread::sleep_for(std::chrono::milliseconds(900));
  // Read the big response.
  std::vector<uint8_t> got;
  uint8_t buf[65536];
  while (got.size() < kBig) {
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    got.insert(got.end(), buf, buf + n);
  }
  ASSERT_GE(got.size(), kBig);
  ASSERT_TRUE(net::testing::SendAll(
      fd, absl::MakeConstSpan(second).subspan(5)));  // the rest
  shutdown(fd, SHUT_WR);
  const auto rest = net::testing::ReadUntilClose(fd, 64 << 20);
  close(fd);
  got.insert(got.end(), rest.begin(), rest.end());
  // The last message is dense's TENSOR_DATA_END (0x06), not an ERROR.
  EXPECT_EQ(s.server().connections_timed_out(), 0u);
  EXPECT_EQ(LastMessage(got).first, 6u);
}

// Control payloads beyond the per-connection allowance draw on one budget:
// a connection collecting a 200 KiB payload past a 64 KiB budget is closed
// with ERROR 0x07. (Before: collected, up to max_message_size each.)
TEST(NetServer, ControlPayloadsBeyondTheSharedBudgetAreRefused) {
  NetServerConfig c = Served::Config(/*idle_ms=*/20000);
  c.control_allowance_bytes = 1024;
  c.control_budget_bytes = 64 << 10;
  Served s(c, 0);
  const int fd = net::testing::ConnectLoopback(s.port(), /*timeout_ms=*/10000);
  ASSERT_GE(fd, 0);
  std::vector<uint8_t> in = ClientHelloBytes();
  uint8_t h[net::kHeaderSize];
  net::EncodeHeader(
      {static_cast<uint32_t>(net::MessageType::kPing), 1, 200u << 10}, h);
  in.insert(in.end(), h, h + sizeof(h));
  in.resize(in.size() + (100 << 10), 0);
  ASSERT_TRUE(net::testing::SendAll(fd, in));
  const auto reply = net::testing::ReadUntilClose(fd);
  close(fd);
  EXPECT_EQ(LastMessage(reply), std::make_pair(9u, 7u));
  EXPECT_EQ(s.server().connections_over_budget(), 1u);
}

// A connection that cannot be seated (every seat is busy answering) is
// refused with ERROR 0x06, then closed.
TEST(NetServer, FullOfBusyConnectionsRefusesWithError) {
  NetServerConfig c = Served::Config();
  c.max_connections = 2;
  Served s(c, 2 << 20);
  std::vector<int> stalled;
  for (int i = 0; i < 2; ++i) {
    const int fd = net::testing::ConnectLoopback(s.port(), 10000);
    ASSERT_GE(fd, 0);
    std::vector<uint8_t> asks = HelloAndRequest("big");
    for (uint32_t k = 3; k < 40; k += 2) {
      net::TensorRequest r;
      r.key = "big";
      net::AppendRequest(&asks, k, r);
    }
    ASSERT_TRUE(net::testing::SendAll(fd, asks));
    uint8_t first;  // the SERVER_HELLO started: the request is being served
    ASSERT_EQ(recv(fd, &first, 1, 0), 1);
    stalled.push_back(fd);
  }
  const int fd = net::testing::ConnectLoopback(s.port(), 10000);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(net::testing::SendAll(fd, HelloAndRequest("dense")));
  const auto reply = net::testing::ReadUntilClose(fd);
  close(fd);
  EXPECT_EQ(LastMessage(reply), std::make_pair(9u, 6u));
  EXPECT_EQ(s.server().connections_refused(), 1u);
  for (int f : stalled) close(f);
}

// Silent connections fill every seat; a normal client takes the oldest
// one's place and is served.
TEST(NetServer, NewClientDisplacesASilentConnection) {
  NetServerConfig c = Served::Config();
  c.max_connections = 3;
  Served s(c, 4096);
  std::vector<int> silent;
  for (int i = 0; i < 3; ++i) {
    silent.push_back(net::testing::ConnectLoopback(s.port(), 10000));
    ASSERT_GE(silent.back(), 0);
  }
  while (s.server().connections_accepted() < 3) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  RecordingSink sink;
  const auto run =
      net::testing::FetchTcp(s.port(), ClientOptions(kKeys), &sink);
  ASSERT_TRUE(run.status.ok()) << run.status;
  EXPECT_TRUE(SameAsFile(s.file(), sink));
  EXPECT_EQ(s.server().connections_displaced(), 1u);
  // The oldest silent one was told and closed.
  EXPECT_EQ(LastMessage(net::testing::ReadUntilClose(silent[0])),
            std::make_pair(9u, 6u));
  for (int f : silent) close(f);
}

// Resident set size of this process (server and clients), in KiB.
long RssKib() {
  long pages = 0, resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return -1;
  if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = -1;
  std::fclose(f);
  return resident < 0 ? -1 : resident * (sysconf(_SC_PAGESIZE) / 1024);
}

// Fewer slow-loris clients than seats: none is displaced, each is closed
// at its HELLO deadline, and comes back.
TEST(NetServer, SlowLorisCrowdWithinTheCapsIsClosedAtTheDeadlines) {
  NetServerConfig c = Served::Config(/*idle_ms=*/30000);
  c.max_connections = 48;
  c.hello_timeout_ms = 300;
  Served s(c, 0);
  net::testing::CrowdOptions o;
  o.port = s.port();
  o.slow = 16;
  o.idle = 8;
  o.interval_ms = 50;
  o.trickle = ClientHelloBytes();
  ASSERT_GT(o.trickle.size() * o.interval_ms, c.hello_timeout_ms);
  net::testing::SlowCrowd crowd(o);
  const auto until =
      std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (crowd.closed_by_server() < 48 &&
         std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  crowd.Stop();
  EXPECT_GE(crowd.closed_by_server(), 48u);
  EXPECT_GE(s.server().connections_timed_out(), 48u);
  EXPECT_EQ(s.server().connections_displaced(), 0u);
}

// The slow-loris load of issue 13, scaled down for CI (the mechanism is the
// same at any scale; bench/net_slowloris_bench runs 1000 + 200): 120 clients
// trickling a CLIENT_HELLO one byte per 50 ms and 30 silent ones, all from
// 127.0.0.1 and reconnecting as soon as they are closed, against caps of 48
// connections (40 per peer). A normal client, also from 127.0.0.1, must get
// every tensor byte-exactly, three times in a row. (Before: the crowd held
// every seat and the normal client waited in the backlog until its receive
// timeout.)
TEST(NetServer, SlowLorisAndSilentCrowdDoNotStarveANormalClient) {
  NetServerConfig c = Served::Config(/*idle_ms=*/30000);
  c.max_connections = 48;
  c.max_connections_per_peer = 40;
  c.hello_timeout_ms = 1000;
  c.message_timeout_ms = 1000;
  Served s(c, 1 << 20);
  net::testing::CrowdOptions o;
  o.port = s.port();
  o.slow = 120;
  o.idle = 30;
  o.interval_ms = 50;
  o.trickle = ClientHelloBytes();
  // At one byte per 50 ms the HELLO takes longer than its deadline.
  ASSERT_GT(o.trickle.size() * o.interval_ms, c.hello_timeout_ms);
  net::testing::SlowCrowd crowd(o);
  ASSERT_TRUE(crowd.WaitConnected(20000));
  // Let the crowd run into the deadlines and come back (bounded wait).
  const auto until =
      std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (crowd.closed_by_server() < 200 &&
         std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (int round = 0; round < 3; ++round) {
    RecordingSink sink;
    const auto start = std::chrono::steady_clock::now();
    const auto run = net::testing::FetchTcp(
        s.port(), ClientOptions(kKeys), &sink, 64 << 10, /*timeout_ms=*/10000);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    ASSERT_TRUE(run.status.ok()) << "round " << round << ": " << run.status;
    EXPECT_TRUE(SameAsFile(s.file(), sink));
    std::printf("round %d: served in %.3f s, RSS %ld KiB\n", round, seconds,
                RssKib());
  }
  crowd.Stop();
  std::printf(
      "crowd: %llu connects, %llu closed by the server; server: %llu "
      "accepted, %llu displaced, %llu refused, %llu timed out\n",
      static_cast<unsigned long long>(crowd.connects()),
      static_cast<unsigned long long>(crowd.closed_by_server()),
      static_cast<unsigned long long>(s.server().connections_accepted()),
      static_cast<unsigned long long>(s.server().connections_displaced()),
      static_cast<unsigned long long>(s.server().connections_refused()),
      static_cast<unsigned long long>(s.server().connections_timed_out()));
  // The crowd outnumbered the seats and kept coming back: the server made
  // room (displacing the most displaceable, or at a deadline).
  EXPECT_GE(crowd.closed_by_server(), 200u);
  EXPECT_GT(s.server().connections_displaced(), 0u);
}

TEST(NetServer, StopEndsRunWithConnectionsOpen) {
  auto s = std::make_unique<Served>();
  const int fd = net::testing::ConnectLoopback(s->port());
  ASSERT_GE(fd, 0);
  s.reset();  // Stop() + join: returns although a client is connected
  uint8_t b;
  EXPECT_LE(recv(fd, &b, 1, 0), 0);
  close(fd);
}

}  // namespace
}  // namespace hurray::stream::net
