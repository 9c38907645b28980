#include "stream/net/testing/net_test_util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "parser/descriptor.h"
#include "parser/element_type.h"
#include "stream/container/hrry_writer.h"
#include "stream/container/testing/file_test_util.h"
#include "tests/vectors.h"

namespace hurray::stream::net::testing {

absl::Status KeyedSink::OnTensorKey(absl::string_view key) {
  keys.emplace_back(key);
  pending_key_ = std::string(key);
  return absl::OkStatus();
}

absl::Status KeyedSink::OnDescriptor(const TensorDescriptor& d) {
  key_of_tensor.push_back(std::move(pending_key_));
  pending_key_.clear();
  return container::testing::RecordingSink::OnDescriptor(d);
}

std::vector<uint8_t> NetTestFile(uint64_t big_bytes) {
  std::vector<vectors::Named> t;
  t.push_back({"dense", vectors::Dense(type_tag::kFloat32, {3, 4})});
  t.push_back({"quant", vectors::PerBlockAsymUInt4()});
  for (vectors::Named& v : container::testing::ContainerVectors()) {
    if (v.name == "composite_partition") {
      t.push_back({"partition", std::move(v.descriptor)});
    } else if (v.name == "partition_top" || v.name == "partition_bottom") {
      t.push_back(std::move(v));
    }
  }
  t.push_back({"empty", vectors::Dense(type_tag::kFloat32, {0})});
  if (big_bytes > 0) {
    t.push_back({"big", vectors::Dense(type_tag::kUInt8, {big_bytes})});
  }
  container::HrryWriterOptions o;
  o.parse = vectors::AgreedOptions();
  return container::testing::WriteFile(t, o);
}

std::unique_ptr<container::HrryFile> OpenTestFile(
    absl::Span<const uint8_t> bytes) {
  container::FileOptions o;
  o.parse = vectors::AgreedOptions();
  auto f = container::HrryFile::CopyOf(bytes, o);  // aligned views (BUF-19)
  if (!f.ok()) {
    ADD_FAILURE() << f.status();
    return nullptr;
  }
  return *std::move(f);
}

NetClientOptions ClientOptions(std::vector<std::string> keys) {
  NetClientOptions o;
  o.parse = vectors::AgreedOptions();
  o.keys = std::move(keys);
  return o;
}

std::vector<uint8_t> Drain(NetServerSession* server) {
  std::vector<uint8_t> out;
  for (;;) {
    const auto parts = server->Output();
    if (parts.empty()) break;
    size_t n = 0;
    for (const auto& p : parts) {
      out.insert(out.end(), p.begin(), p.end());
      n += p.size();
    }
    server->ConsumeOutput(n);
  }
  return out;
}

std::vector<uint8_t> Serve(NetServerSession* server,
                           absl::Span<const uint8_t> input) {
  (void)server->Feed(input);
  return Drain(server);
}

InMemoryRun RunInMemory(const container::HrryFile& file,
                        const NetClientOptions& options,
                        container::TensorSink* sink, size_t chunk,
                        const NetServerOptions* server_options) {
  const NetServerOptions so =
      server_options != nullptr ? *server_options : NetServerOptions();
  NetServerSession server(&file, so);
  NetClientSession client(options, sink);
  InMemoryRun run;
  for (int round = 0; round < 1000000; ++round) {
    const auto out = client.PendingOutput();
    const std::vector<uint8_t> to_server(out.begin(), out.end());
    client.ConsumeOutput(to_server.size());
    std::vector<uint8_t> reply = Serve(&server, to_server);
    run.server_bytes.insert(run.server_bytes.end(), reply.begin(), reply.end());
    if (reply.empty() && to_server.empty()) {
      run.status = client.Finish();
      break;
    }
    absl::Status s;
    for (size_t at = 0; at < reply.size() && s.ok(); at += chunk) {
      s = client.Feed(absl::MakeConstSpan(reply).subspan(at, chunk));
    }
    if (!s.ok() || client.Satisfied()) {
      run.status = s;
      break;
    }
  }
  run.satisfied = client.Satisfied();
  return run;
}

std::vector<uint8_t> ServerTranscript(const container::HrryFile& file,
                                      const std::vector<std::string>& keys) {
  NetClientOptions o = ClientOptions(keys);
  container::testing::RecordingSink sink;
  return RunInMemory(file, o, &sink).server_bytes;
}

std::vector<uint8_t> ServerHelloBytes(uint32_t stream) {
  std::vector<uint8_t> out;
  net::Hello h;
  static constexpr uint8_t kCpu[] = {0};
  h.devices = kCpu;
  net::AppendHello(&out, net::MessageType::kServerHello, stream, h);
  return out;
}

std::vector<uint8_t> DescriptorBytes(uint32_t stream,
                                     absl::Span<const uint8_t> descriptor,
                                     uint64_t total, uint32_t shard_index,
                                     uint32_t total_shards) {
  std::vector<uint8_t> out;
  net::AppendDescriptor(&out, stream, descriptor,
                        {total, shard_index, total_shards});
  return out;
}

std::vector<uint8_t> DataBytes(uint32_t stream, uint64_t offset,
                               absl::Span<const uint8_t> data) {
  std::vector<uint8_t> out;
  net::AppendData(&out, stream, offset, data);
  return out;
}

std::vector<uint8_t> EndBytes(uint32_t stream) {
  std::vector<uint8_t> out;
  net::AppendMessage(&out, net::MessageType::kTensorDataEnd, stream, {});
  return out;
}

std::vector<uint8_t> Cat(std::initializer_list<std::vector<uint8_t>> parts) {
  std::vector<uint8_t> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

int ConnectLoopback(uint16_t port, int timeout_ms) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    return -1;
  }
  timeval tv{};
  tv.tv_sec = timeout_ms / 1000;
  tv.tv_usec = (timeout_ms % 1000) * 1000;
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

bool SendAll(int fd, absl::Span<const uint8_t> bytes) {
  while (!bytes.empty()) {
    const ssize_t n = send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

std::vector<uint8_t> ReadUntilClose(int fd, size_t limit) {
  std::vector<uint8_t> out;
  uint8_t buf[4096];
  while (out.size() < limit) {
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.insert(out.end(), buf, buf + n);
  }
  return out;
}

TcpRun FetchTcp(uint16_t port, const NetClientOptions& options,
                container::TensorSink* sink, size_t read_chunk,
                int timeout_ms) {
  TcpRun run;
  NetClientSession client(options, sink);
  const int fd = ConnectLoopback(port, timeout_ms);
  if (fd < 0) {
    run.status = absl::UnavailableError("connect failed");
    return run;
  }
  std::vector<uint8_t> buf(read_chunk);
  for (;;) {
    const auto out = client.PendingOutput();
    if (!out.empty()) {
      if (!SendAll(fd, out)) {
        run.status = client.FailSource("send failed");
        break;
      }
      client.ConsumeOutput(out.size());
    }
    if (client.Satisfied() || !client.status().ok()) {
      run.status = client.status();
      break;
    }
    const ssize_t n = recv(fd, buf.data(), buf.size(), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      run.status = client.FailSource(errno == EAGAIN || errno == EWOULDBLOCK
                                         ? "receive timeout"
                                         : "receive failed");
      break;
    }
    if (n == 0) {
      run.status = client.Finish();
      break;
    }
    run.received += static_cast<uint64_t>(n);
    run.status = client.Feed(absl::MakeConstSpan(buf.data(), n));
    if (!run.status.ok()) {
      // Tell the server why (the session queued an ERROR), then close.
      const auto err = client.PendingOutput();
      SendAll(fd, err);
      break;
    }
  }
  run.satisfied = client.Satisfied();
  close(fd);
  return run;
}

namespace {

// Shard i of a uint8 [8, 8] tensor cut into four [2, 8] row bands.
std::vector<uint8_t> ShardDescriptor(uint32_t i, uint64_t parent_rows = 8) {
  auto d = vectors::Dense(type_tag::kUInt8, {2, 8});
  d->flags |= flag::kHasShard;
  d->shard.parent_shape[0] = parent_rows;
  d->shard.parent_shape[1] = 8;
  d->shard.shard_offset[0] = 2 * i;
  return vectors::Bytes(*d);
}

}  // namespace

std::vector<uint8_t> ShardData(uint32_t i) {
  return container::testing::Pattern(16, 100 + i);
}

std::vector<uint8_t> InterleavedShardAnswer(uint32_t (*index_of)(uint32_t),
                                            uint64_t shard1_rows) {
  using Bytes = std::vector<uint8_t>;
  const uint32_t streams[] = {1, 20, 22, 24};
  std::vector<Bytes> parts = {ServerHelloBytes()};
  for (uint32_t i = 0; i < 4; ++i) {
    const uint32_t index = index_of != nullptr ? index_of(i) : i;
    parts.push_back(DescriptorBytes(
        streams[i], ShardDescriptor(i, i == 1 ? shard1_rows : 8), 16, index,
        4));
  }
  for (uint64_t at = 0; at < 16; at += 4) {
    for (uint32_t i = 0; i < 4; ++i) {
      const Bytes data = ShardData(i);
      parts.push_back(
          DataBytes(streams[i], at, absl::MakeConstSpan(data).subspan(at, 4)));
    }
  }
  // The ends in another order than the starts.
  for (uint32_t i : {2u, 0u, 3u, 1u}) parts.push_back(EndBytes(streams[i]));
  Bytes out;
  for (const Bytes& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

}  // namespace hurray::stream::net::testing
