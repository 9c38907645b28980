// Test helpers for the network protocol: test files, a recording sink that
// also records keys, the server side driven in memory, server message
// builders for breaking one field at a time, and a blocking TCP client over
// POSIX sockets that drives NetClientSession (the production TCP transport
// is the loader's, stream/ingest/loader.h).
#ifndef HURRAY_STREAM_NET_TESTING_NET_TEST_UTIL_H_
#define HURRAY_STREAM_NET_TESTING_NET_TEST_UTIL_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "parser/descriptor.h"
#include "stream/container/hrry_mmap.h"
#include "stream/container/testing/test_util.h"
#include "stream/net/client_session.h"
#include "stream/net/message.h"
#include "stream/net/server_session.h"

namespace hurray::stream::net::testing {

// Records keys too, and the order of key / descriptor events.
class KeyedSink : public container::testing::RecordingSink {
 public:
  [[nodiscard]] absl::Status OnTensorKey(absl::string_view key) override;
  [[nodiscard]] absl::Status OnDescriptor(const TensorDescriptor& d) override;
  std::vector<std::string> keys;
  // For each tensor, the key announced just before it ("" for none).
  std::vector<std::string> key_of_tensor;

 private:
  std::string pending_key_;
};

// A .hrry file: "dense" f32 [3, 4], "quant" (per-block uint4 [8, 100]: a
// data and two parameter buffers), "partition" (composite head, two
// members), "empty" (f32 [0]), and "big" (uint8 [big_bytes]) when
// big_bytes > 0, written with vectors::AgreedOptions().
std::vector<uint8_t> NetTestFile(uint64_t big_bytes = 0);
// The file opened over `bytes` (kept alive by the caller).
std::unique_ptr<container::HrryFile> OpenTestFile(
    absl::Span<const uint8_t> bytes);

// Client options valid for NetTestFile: agreed private values, `keys`.
NetClientOptions ClientOptions(std::vector<std::string> keys);

// Feeds `input` to `server` and collects every byte it answers until it
// wants input again or closed.
std::vector<uint8_t> Drain(NetServerSession* server);
std::vector<uint8_t> Serve(NetServerSession* server,
                           absl::Span<const uint8_t> input);

// Runs a client against a server in memory, the server's bytes fed to the
// client in `chunk`-byte pieces (the server with `server_options`, default
// ones when null). Returns the client's final status.
struct InMemoryRun {
  absl::Status status;
  bool satisfied = false;
  std::vector<uint8_t> server_bytes;  // everything the server sent
};
InMemoryRun RunInMemory(const container::HrryFile& file,
                        const NetClientOptions& options,
                        container::TensorSink* sink, size_t chunk = 1 << 20,
                        const NetServerOptions* server_options = nullptr);

// The bytes a server would send in answer to `keys` (the whole
// conversation's server side), for feeding a client at chosen split points.
std::vector<uint8_t> ServerTranscript(const container::HrryFile& file,
                                      const std::vector<std::string>& keys);

// Server messages, built by hand.
std::vector<uint8_t> ServerHelloBytes(uint32_t stream = 1);
std::vector<uint8_t> DescriptorBytes(uint32_t stream,
                                     absl::Span<const uint8_t> descriptor,
                                     uint64_t total, uint32_t shard_index = 0,
                                     uint32_t total_shards = 1);
std::vector<uint8_t> DataBytes(uint32_t stream, uint64_t offset,
                               absl::Span<const uint8_t> data);
std::vector<uint8_t> EndBytes(uint32_t stream);
std::vector<uint8_t> Cat(std::initializer_list<std::vector<uint8_t>> parts);

// A sharded answer (§ Parallel Transfers) to the first request (stream 1):
// SERVER_HELLO, then a uint8 [8, 8] tensor as four [2, 8] row-band shards,
// shard 0 on stream 1 and shards 1..3 on streams 20, 22, 24, their
// descriptor, data (4-byte frames) and end messages interleaved.
// `index_of(i)`: the shard_index stream i declares (default i);
// `shard1_rows`: the parent_shape rows shard 1 declares (8: consistent).
std::vector<uint8_t> InterleavedShardAnswer(
    uint32_t (*index_of)(uint32_t) = nullptr, uint64_t shard1_rows = 8);
// The 16 data bytes of shard i.
std::vector<uint8_t> ShardData(uint32_t i);

// Blocking TCP client (127.0.0.1) that drives a NetClientSession: writes its
// output, reads `read_chunk` bytes at a time with a receive timeout, stops
// when the session is satisfied or fails, or the server closes.
struct TcpRun {
  absl::Status status;
  bool satisfied = false;
  uint64_t received = 0;
};
TcpRun FetchTcp(uint16_t port, const NetClientOptions& options,
                container::TensorSink* sink, size_t read_chunk = 64 << 10,
                int timeout_ms = 20000);

// Raw TCP helpers: connect (-1 on failure), send all, read until the peer
// closes or `timeout_ms` passes (returns what arrived).
int ConnectLoopback(uint16_t port, int timeout_ms = 20000);
bool SendAll(int fd, absl::Span<const uint8_t> bytes);
std::vector<uint8_t> ReadUntilClose(int fd, size_t limit = 1 << 20);

}  // namespace hurray::stream::net::testing

#endif  // HURRAY_STREAM_NET_TESTING_NET_TEST_UTIL_H_
