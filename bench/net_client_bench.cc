// NetClientSession's data plane alone, no socket: a server transcript of a
// tensor of HURRAY_NET_CLIENT_BENCH_BYTES bytes (default 256 MiB; TENSOR_DATA
// frames of 1 MiB) is fed from memory in chunks of 64 KiB and 1 MiB to a
// client whose sink only sums the piece sizes. Prints the best of five runs
// for each chunk size as nanoseconds per chunk (the client's own cost: the
// framer, the response stream, the walker, the sink calls; the bytes are
// not touched), then the same with a sink that reads every byte (XOR of
// 8-byte words), in GB/s.
//   bazel build -c opt //bench:net_client_bench &&
//   bazel-bin/bench/net_client_bench
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "stream/container/tensor_sink.h"
#include "stream/net/client_session.h"
#include "stream/net/testing/net_test_util.h"

namespace {

using hurray::stream::container::TensorSink;
using hurray::stream::net::NetClientSession;

class CountingSink : public TensorSink {
 public:
  explicit CountingSink(bool touch) : touch_(touch) {}
  absl::Status OnBufferPiece(uint32_t, uint64_t,
                             absl::Span<const uint8_t> piece) override {
    bytes += piece.size();
    if (touch_) {
      size_t i = 0;
      for (; i + 8 <= piece.size(); i += 8) {
        uint64_t w;
        std::memcpy(&w, piece.data() + i, 8);
        x ^= w;
      }
      for (; i < piece.size(); ++i) x ^= piece[i];
    }
    return absl::OkStatus();
  }
  uint64_t bytes = 0;
  uint64_t x = 0;

 private:
  bool touch_;
};

}  // namespace

int main() {
  namespace testing = hurray::stream::net::testing;
  uint64_t size = uint64_t{256} << 20;
  if (const char* e = std::getenv("HURRAY_NET_CLIENT_BENCH_BYTES")) {
    size = std::strtoull(e, nullptr, 10);
  }
  const std::vector<uint8_t> file_bytes = testing::NetTestFile(size);
  const auto file = testing::OpenTestFile(file_bytes);
  const std::vector<uint8_t> transcript =
      testing::ServerTranscript(*file, {"big"});
  uint64_t sink_x = 0;
  for (bool touch : {false, true}) {
    for (size_t chunk : {size_t{64} << 10, size_t{1} << 20}) {
      double best = 1e30;
      for (int run = 0; run < 5; ++run) {
        CountingSink sink(touch);
        NetClientSession c(testing::ClientOptions({"big"}), &sink);
        const auto t0 = std::chrono::steady_clock::now();
        for (size_t at = 0; at < transcript.size(); at += chunk) {
          const size_t n = std::min(chunk, transcript.size() - at);
          if (!c.Feed(absl::MakeConstSpan(transcript.data() + at, n)).ok()) {
            std::fprintf(stderr, "rejected: %s\n",
                         std::string(c.status().message()).c_str());
            return 1;
          }
        }
        const double s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
                .count();
        if (!c.Satisfied() || sink.bytes != size) return 1;
        sink_x ^= sink.x;
        best = std::min(best, s);
      }
      const double chunks = static_cast<double>(transcript.size()) / chunk;
      if (touch) {
        std::printf("reading sink, chunk %7zu: %.2f GB/s\n", chunk,
                    size / best / 1e9);
      } else {
        std::printf("counting sink, chunk %7zu: %.1f ns per chunk\n", chunk,
                    best * 1e9 / chunks);
      }
    }
  }
  return sink_x == 42 ? 2 : 0;
}
