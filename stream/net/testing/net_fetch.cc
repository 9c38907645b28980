// Test tool for the `hurray serve` shell test.
//   net_fetch gen FILE [BIG]      writes net::testing::NetTestFile(BIG bytes,
//                                 default 64 KiB) to FILE
//   net_fetch fetch PORT KEY...   fetches the keys from 127.0.0.1:PORT and
//                                 prints "KEY BYTES" per tensor (members and
//                                 listing included), exit 0, or the status
//                                 and exit 1
//   net_fetch count PORT KEY...   the same, keeping nothing: prints bytes,
//                                 seconds and MB/s
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "stream/container/testing/test_util.h"
#include "stream/net/client_session.h"
#include "stream/net/testing/net_test_util.h"

namespace {

class CountingSink : public hurray::stream::container::TensorSink {
 public:
  absl::Status OnBufferPiece(uint32_t, uint64_t,
                             absl::Span<const uint8_t> piece) override {
    bytes += piece.size();
    return absl::OkStatus();
  }
  uint64_t bytes = 0;
};

}  // namespace

int main(int argc, char** argv) {
  using namespace hurray::stream;
  const std::vector<std::string> args(argv + 1, argv + argc);
  if ((args.size() == 2 || args.size() == 3) && args[0] == "gen") {
    uint64_t big = 64 << 10;
    if (args.size() == 3 && !absl::SimpleAtoi(args[2], &big)) return 2;
    const std::vector<uint8_t> bytes = net::testing::NetTestFile(big);
    std::ofstream out(args[1], std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    return out ? 0 : 2;
  }
  uint32_t port = 0;
  if (args.size() >= 2 && args[0] == "count" &&
      absl::SimpleAtoi(args[1], &port) && port <= 65535) {
    CountingSink sink;
    const auto start = std::chrono::steady_clock::now();
    const auto run = net::testing::FetchTcp(
        static_cast<uint16_t>(port),
        net::testing::ClientOptions({args.begin() + 2, args.end()}), &sink,
        1 << 20);
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    if (!run.status.ok()) {
      std::cout << run.status << "\n";
      return 1;
    }
    std::cout << sink.bytes << " bytes in " << s
              << " s: " << sink.bytes / s / 1e6 << " MB/s\n";
    return 0;
  }
  if (args.size() < 2 || args[0] != "fetch" ||
      !absl::SimpleAtoi(args[1], &port) || port > 65535) {
    std::cerr << "usage: net_fetch gen FILE | net_fetch fetch PORT KEY...\n";
    return 2;
  }
  net::testing::KeyedSink sink;
  const auto run = net::testing::FetchTcp(
      static_cast<uint16_t>(port),
      net::testing::ClientOptions({args.begin() + 2, args.end()}), &sink);
  if (!run.status.ok()) {
    std::cout << run.status << "\n";
    return 1;
  }
  for (size_t i = 0; i < sink.tensors.size(); ++i) {
    uint64_t bytes = 0;
    for (const auto& b : sink.tensors[i].buffers) bytes += b.size();
    const std::string& key = sink.key_of_tensor[i];
    std::cout << (key.empty() ? "-" : key) << " " << bytes << "\n";
    if (key == net::kListKey) {
      const auto names = net::ParseTensorList(sink.tensors[i].buffers[0]);
      if (names.ok()) {
        for (const auto& n : *names) std::cout << "  " << n << "\n";
      }
    }
  }
  return 0;
}
