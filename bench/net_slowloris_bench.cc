// The slow-loris load of issue 13 at full scale, by hand (not a test: it
// needs ~2500 descriptors and several seconds):
//   bazel run -c opt //bench:net_slowloris_bench -- [SLOW IDLE [MAX_CONN]]
// SLOW (default 1000) clients trickle a CLIENT_HELLO one byte per 100 ms,
// IDLE (200) connect and stay silent, all from 127.0.0.1 and reconnecting
// when closed, against `hurray serve`'s defaults (or --max-connections
// MAX_CONN). Once the crowd has connected, a normal client fetches every
// tensor of a 16 MiB test file five times; each fetch is checked byte for
// byte. Prints the time to serve each fetch, the process RSS (server and
// crowd; the crowd holds only sockets) and the server's counters.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "stream/container/testing/test_util.h"
#include "stream/net/message.h"
#include "stream/net/server.h"
#include "stream/net/testing/net_test_util.h"
#include "stream/net/testing/slow_crowd.h"

namespace hurray::stream {
namespace {

long RssKib() {
  long pages = 0, resident = -1;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return -1;
  if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = -1;
  std::fclose(f);
  return resident < 0 ? -1 : resident * (sysconf(_SC_PAGESIZE) / 1024);
}

// Every recorded tensor equals the file's, byte for byte.
bool SameAsFile(const container::HrryFile& file,
                const std::vector<std::string>& names,
                const container::testing::RecordingSink& sink) {
  if (sink.tensors.size() != names.size()) return false;
  for (size_t t = 0; t < names.size(); ++t) {
    const container::IndexEntry* e = file.Find(names[t]);
    auto d = std::make_unique<TensorDescriptor>();
    if (e == nullptr || !file.ReadDescriptor(*e, d.get()).ok()) return false;
    const auto& got = sink.tensors[t];
    if (!got.complete || got.buffers.size() != d->buffer_count) return false;
    for (uint32_t i = 0; i < d->buffer_count; ++i) {
      const auto b = file.Buffer(*e, *d, i);
      if (!b.ok() ||
          std::vector<uint8_t>(b->begin(), b->end()) != got.buffers[i]) {
        return false;
      }
    }
  }
  return true;
}

int Main(int argc, char** argv) {
  const int slow = argc > 1 ? std::atoi(argv[1]) : 1000;
  const int idle = argc > 2 ? std::atoi(argv[2]) : 200;
  rlimit r{};
  getrlimit(RLIMIT_NOFILE, &r);
  if (r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;  // the crowd and the server share this process
    setrlimit(RLIMIT_NOFILE, &r);
  }
  const std::vector<uint8_t> bytes = net::testing::NetTestFile(16 << 20);
  const std::unique_ptr<container::HrryFile> file =
      net::testing::OpenTestFile(bytes);
  net::NetServerConfig c;  // hurray serve's defaults
  c.port = 0;
  if (argc > 3) c.max_connections = static_cast<uint32_t>(std::atoi(argv[3]));
  net::NetServer server(file.get(), c);
  if (!server.Listen().ok()) return 2;
  std::thread run([&] { server.Run(); });
  const long rss_idle = RssKib();

  net::testing::CrowdOptions o;
  o.port = server.port();
  o.slow = slow;
  o.idle = idle;
  o.interval_ms = 100;
  net::AppendHello(&o.trickle, net::MessageType::kClientHello, 1, net::Hello());
  const auto crowd_start = std::chrono::steady_clock::now();
  net::testing::SlowCrowd crowd(o);
  const bool connected = crowd.WaitConnected(60000);
  std::printf("crowd: %d slow + %d idle, all connected once: %s (%.2f s)\n",
              slow, idle, connected ? "yes" : "no",
              std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                            crowd_start)
                  .count());
  std::this_thread::sleep_for(std::chrono::seconds(2));  // let it settle

  const std::vector<std::string> keys = {"dense", "quant", "partition", "empty",
                                         "big"};
  const std::vector<std::string> names = {
      "dense", "quant", "partition", "partition_top", "partition_bottom",
      "empty", "big"};
  int failures = 0;
  long rss_max = 0;
  for (int round = 0; round < 5; ++round) {
    container::testing::RecordingSink sink;
    const auto start = std::chrono::steady_clock::now();
    const auto fetched =
        net::testing::FetchTcp(server.port(), net::testing::ClientOptions(keys),
                               &sink, 64 << 10, 20000);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    const bool ok = fetched.status.ok() && SameAsFile(*file, names, sink);
    failures += ok ? 0 : 1;
    const long rss = RssKib();
    rss_max = std::max(rss_max, rss);
    std::printf(
        "fetch %d: %s in %.3f s (%llu bytes), RSS %ld KiB, crowd "
        "open %d\n",
        round, ok ? "byte-exact" : "FAILED", seconds,
        static_cast<unsigned long long>(fetched.received), rss, crowd.open());
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  crowd.Stop();
  std::printf(
      "RSS: %ld KiB before the crowd, at most %ld KiB under it\n"
      "server: %llu accepted, %llu displaced, %llu refused, %llu timed out, "
      "%llu over budget; crowd: %llu connects, %llu closed by the server, "
      "%llu connect failures\n",
      rss_idle, rss_max,
      static_cast<unsigned long long>(server.connections_accepted()),
      static_cast<unsigned long long>(server.connections_displaced()),
      static_cast<unsigned long long>(server.connections_refused()),
      static_cast<unsigned long long>(server.connections_timed_out()),
      static_cast<unsigned long long>(server.connections_over_budget()),
      static_cast<unsigned long long>(crowd.connects()),
      static_cast<unsigned long long>(crowd.closed_by_server()),
      static_cast<unsigned long long>(crowd.connect_failures()));
  server.Stop();
  run.join();
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace hurray::stream

int main(int argc, char** argv) { return hurray::stream::Main(argc, argv); }
