// `hurray ingest` throughput: how well the loader overlaps reading with
// decoding, validating and dequantizing (issue 4).
//
// One run generates a .hrry file of quantized tensors (per-channel int8 and
// per-block int4, 16 MiB of data each) in a temporary directory —
// HURRAY_INGEST_BENCH_BYTES bytes, default 1 GiB — and measures, once each:
//   (a) read_only       plain read() of the file into a reused 1 MiB buffer
//   (b) cpu_validate    HrryForwardReader over the mapped file (no I/O),
//       cpu_dequant     ... with DequantSink dequantizing (no file written)
//   (c) loader_validate the loader end to end, validate-only sink
//       loader_dequant  ... streaming dequant sink, output discarded
//       disk_write_dd   `dd if=/dev/zero bs=1M conv=fdatasync` of as many
//                       bytes as loader_dequant_files writes: the disk's
//                       own write rate, measured in the same run
//       loader_dequant_files  ... writing OUT/<name>.f32 (4-8x the input),
//                       timed until the outputs are on disk (syncfs), as
//                       dd's fdatasync is; ratio = time / max(a, b, dd);
//                       returned_s is when the loader itself returned
//   (c') loader_throttled  a source delivering at the cpu_dequant rate
//       loader_paired  (a), loader_validate, cpu_dequant and loader_dequant
//                     side by side in the same rounds, medians of in-round
//                     ratios (see BM_c_LoaderPaired)
//   (d) the same over loopback TCP: `hurray serve`'s NetServer in this
//       process serving the file, the loader's TCP source driving a
//       NetClientSession that requests every tensor:
//       tcp_validate  ... validate-only sink (the I/O baseline of TCP: the
//                     session only parses frames and descriptors)
//       tcp_dequant   ... streaming dequant sink, output discarded;
//                     ratio = time / max(tcp_validate, cpu_dequant);
//                     cpu_s = CPU seconds of all the process's threads,
//                     server_cpu_s = the server thread's, client_cpu_s =
//                     the rest (what a client pays when the server is
//                     elsewhere), client_cpu_x = client_cpu_s / the CPU
//                     seconds of cpu_dequant; cpu_floor_ratio = cpu_s /
//                     cores / that baseline (no overlap on these cores can
//                     beat it). tcp_validate runs once untimed first (the
//                     server's first pass maps the file's pages).
//       tcp_raw       ... the kernel's own loopback cost for the same bytes:
//                     a plain thread send()s the mapped file over a blocking
//                     socket, this one recv()s it; no protocol, no parsing.
//                     x_raw = tcp_validate / tcp_raw (time and CPU): what our
//                     server, loader and session add to the transport;
//                     tcp_dequant's raw_floor_ratio = (tcp_raw's CPU +
//                     cpu_dequant) / cores / its baseline: its floor if the
//                     transport cost no more than that. consumer_waits /
//                     reader_resumes: the loader's consumer found its ring
//                     empty / its reader found it full; ring_slots: the
//                     slots the ring grew to (LoaderOptions::max_ring_bytes).
//       tcp_paired    ... tcp_dequant with cpu_dequant, tcp_validate and the
//                     last two side by side in the same rounds, medians of
//                     in-round ratios (see BM_d_TcpPaired)
// ratio = time(c) / max(time(a), time(b)) (target <= 1.15: reading and
// consuming overlap). peak_rss_MiB is the ru_maxrss of a fresh process
// running the same ingest (tcp_dequant's: the client's, from this process's
// server) (target <= 64 MiB).
//
//   bazel build -c opt //bench:ingest_bench && bazel-bin/bench/ingest_bench
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/paired_rounds.h"
#include "benchmark/benchmark.h"
#include "dequant/testing/test_tensor.h"
#include "parser/element_type.h"
#include "stream/container/byte_sink.h"
#include "stream/container/hrry_file.h"
#include "stream/container/hrry_mmap.h"
#include "stream/container/hrry_writer.h"
#include "stream/container/mapped_file.h"
#include "stream/http/http_body.h"
#include "stream/http/http_url.h"
#include "stream/ingest/consumers.h"
#include "stream/ingest/loader.h"
#include "stream/ingest/sinks.h"
#include "stream/ingest/testing/loader_test_peer.h"
#include "stream/net/client_session.h"
#include "stream/net/server.h"

namespace hurray::stream {
namespace {

using Clock = std::chrono::steady_clock;

std::string g_dir, g_file;
uint64_t g_size = 0;
double g_read = 0, g_cpu_validate = 0, g_cpu_dequant = 0, g_tcp_io = 0;
double g_tcp_io_cpu = 0, g_raw_cpu = 0;
double g_cpu_dequant_cpu = 0;  // CPU seconds of cpu_dequant's thread
double g_dd = 0;               // dd's time to write g_out_bytes durably
double g_inline_share = 0;     // of the last RunLoader: slots read inline
uint64_t g_out_bytes = 0;      // float32 bytes the dequantized outputs hold
std::vector<std::string> g_names;

double Seconds(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// CPU seconds so far on a CPU-time clock: one thread's
// (CLOCK_THREAD_CPUTIME_ID, pthread_getcpuclockid) or every thread's of
// this process (CLOCK_PROCESS_CPUTIME_ID, ProcessCpuSeconds).
double CpuClockSeconds(clockid_t clock) {
  timespec ts{};
  ::clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) +
         static_cast<double>(ts.tv_nsec) * 1e-9;
}

double ProcessCpuSeconds() { return CpuClockSeconds(CLOCK_PROCESS_CPUTIME_ID); }

// The name of the benchmark file's i-th tensor.
std::string TensorName(uint64_t i) { return absl::StrCat("layer", i); }

void Generate() {
  if (!g_file.empty() && std::filesystem::exists(g_file)) return;
  uint64_t want = uint64_t{1} << 30;
  if (const char* env = std::getenv("HURRAY_INGEST_BENCH_BYTES")) {
    want = std::strtoull(env, nullptr, 10);
  }
  if (g_file.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ =
        absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/ingest_bench_XXXXXX");
    if (::mkdtemp(templ.data()) == nullptr) std::abort();
    g_dir = templ;
    g_file = g_dir + "/bench.hrry";
  }
  std::mt19937_64 rng(1);
  std::vector<dequant::testing::TestTensor> tensors;
  dequant::testing::TensorSpec s;
  s.scheme = dequant::Scheme::kPerChannelAffine;
  s.storage_type = hurray::type_tag::kInt8;
  s.shape = {4096, 4096};  // 16 MiB
  tensors.push_back(dequant::testing::MakeTensor(s, rng));
  s = dequant::testing::TensorSpec();
  s.scheme = dequant::Scheme::kPerBlockAffine;
  s.storage_type = hurray::type_tag::kInt4;
  s.shape = {8192, 4096};  // 16 MiB
  s.axis = 1;
  s.block_size = 64;
  s.symmetric = true;
  tensors.push_back(dequant::testing::MakeTensor(s, rng));

  FILE* f = std::fopen(g_file.c_str(), "wb");
  auto sink = [f](absl::Span<const uint8_t> b) {
    return std::fwrite(b.data(), 1, b.size(), f) == b.size()
               ? absl::OkStatus()
               : absl::DataLossError("write");
  };
  container::HrryWriter w;
  if (!w.Begin(sink).ok()) std::abort();
  const uint64_t out_bytes[2] = {uint64_t{4096} * 4096 * 4,
                                 uint64_t{8192} * 4096 * 4};
  for (int i = 0; w.bytes_written() + (16 << 20) <= want || i == 0; ++i) {
    const auto& t = tensors[i % 2];
    g_out_bytes += out_bytes[i % 2];
    std::vector<absl::Span<const uint8_t>> spans(t.buffers.begin(),
                                                 t.buffers.end());
    g_names.push_back(TensorName(i));
    if (!w.Add(g_names.back(), *t.descriptor, spans, sink).ok()) {
      std::abort();
    }
  }
  if (!w.Finish(sink).ok()) std::abort();
  std::fclose(f);
  g_size = std::filesystem::file_size(g_file);
}

std::unique_ptr<ingest::RecordingIngestSink> MakeSink(const std::string& kind,
                                                      const std::string& out) {
  if (kind == "validate") return std::make_unique<ingest::ValidateSink>();
  ingest::DequantSinkOptions o;
  o.out_dir = out;
  o.write_files = kind == "dequant_files";
  return std::make_unique<ingest::DequantSink>(o);
}

// The loader's options of every run, file and TCP:
// HURRAY_INGEST_BENCH_CHUNK / _SLOTS / _MAX_RING set its ring (default 4
// x 1 MiB, a stream's growing to 16 MiB: TCP and HTTPS).
ingest::LoaderOptions BenchLoaderOptions() {
  ingest::LoaderOptions o;
  if (const char* env = std::getenv("HURRAY_INGEST_BENCH_CHUNK")) {
    o.chunk_size = std::strtoull(env, nullptr, 10);
  }
  if (const char* env = std::getenv("HURRAY_INGEST_BENCH_SLOTS")) {
    o.ring_slots = std::strtoull(env, nullptr, 10);
  }
  if (const char* env = std::getenv("HURRAY_INGEST_BENCH_MAX_RING")) {
    o.max_ring_bytes = std::strtoull(env, nullptr, 10);
  }
  return o;
}

// Runs the loader over the file; returns seconds. With `durable_seconds`,
// also the time until the outputs were on disk (syncfs of the output
// directory's file system after the loader returned).
double RunLoader(const std::string& kind, double throttle = 0,
                 double* durable_seconds = nullptr) {
  const std::string out = g_dir + "/out";
  std::filesystem::remove_all(out);
  std::filesystem::create_directories(out);
  std::unique_ptr<ingest::RecordingIngestSink> sink = MakeSink(kind, out);
  std::unique_ptr<container::ByteConsumer> c = ingest::MakeConsumer(
      container::ContainerFormat::kUnknown, container::FileOptions(),
      sink.get(), nullptr, nullptr);
  ingest::Loader loader(BenchLoaderOptions());
  ingest::LoaderTestPeer::SetThrottle(loader, throttle);
  const auto t0 = Clock::now();
  const ingest::LoadResult r =
      loader.Run(ingest::LoadSource::File(g_file), c.get());
  const double t = Seconds(t0);
  g_inline_share =
      static_cast<double>(ingest::LoaderTestPeer::InlineSlots(loader)) /
      static_cast<double>(
          std::max<uint64_t>(ingest::LoaderTestPeer::SlotsFed(loader), 1));
  if (!r.status.ok()) {
    std::fprintf(stderr, "ingest failed: %s\n",
                 std::string(r.status.message()).c_str());
    std::abort();
  }
  if (durable_seconds != nullptr) {
    const int fd = ::open(out.c_str(), O_RDONLY | O_DIRECTORY);
    if (fd < 0 || ::syncfs(fd) != 0) std::abort();
    ::close(fd);
    *durable_seconds = Seconds(t0);
  }
  std::filesystem::remove_all(out);
  return t;
}

// Peak RSS (MiB) of a fresh process running the loader with `kind` over
// the file, or, with `tcp_port`, over TCP from this process's server.
double ChildPeakRss(const std::string& kind, const std::string& tcp_port = "") {
  char self[4096];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) return -1;
  self[n] = 0;
  const std::string cmd =
      tcp_port.empty()
          ? absl::StrCat("'", self, "' --child ", kind, " '", g_file, "' '",
                         g_dir, "'")
          : absl::StrCat("'", self, "' --child-tcp ", kind, " ", tcp_port, " ",
                         g_names.size(), " '", g_dir, "'");
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return -1;
  long kib = -1;
  if (std::fscanf(p, "%ld", &kib) != 1) kib = -1;
  ::pclose(p);
  return kib < 0 ? -1 : static_cast<double>(kib) / 1024.0;
}

void Report(benchmark::State& state, double seconds, double baseline) {
  state.SetIterationTime(seconds);
  state.SetBytesProcessed(static_cast<int64_t>(g_size));
  state.counters["MBps"] = static_cast<double>(g_size) / seconds / 1e6;
  if (baseline > 0) state.counters["ratio"] = seconds / baseline;
}

// A 1 MiB buffer on a page boundary, as the loader's ring slots are (on
// cache lines): on the AMD EPYC Zen 4 host the kernel's copy into a
// destination 16 bytes past a cache line (where malloc puts a 1 MiB block)
// from a page-aligned source ran 2.7x slower (bench/RESULTS.md, issue 47
// item 6), and a baseline whose speed depends on where the heap put its
// buffer is no baseline.
uint8_t* AlignedMiB() {
  void* p = std::aligned_alloc(4096, 1 << 20);
  if (p == nullptr) std::abort();
  return static_cast<uint8_t*>(p);
}

// One pass of (a): wall seconds of read()ing the file into one reused
// 1 MiB buffer.
double ReadPass() {
  static uint8_t* buf = AlignedMiB();
  const auto t0 = Clock::now();
  const int fd = ::open(g_file.c_str(), O_RDONLY);
  uint64_t total = 0;
  ssize_t got;
  while ((got = ::read(fd, buf, 1 << 20)) > 0) total += got;
  ::close(fd);
  benchmark::DoNotOptimize(total);
  return Seconds(t0);
}

void BM_a_ReadOnly(benchmark::State& state) {
  Generate();
  for (auto _ : state) {
    g_read = ReadPass();
    Report(state, g_read, 0);
  }
}

// The file mapped once, its pages faulted in: (b) measures the CPU only.
absl::Span<const uint8_t> MappedBytes() {
  static container::MappedFile* map = [] {
    auto m = container::MappedFile::Open(g_file);
    if (!m.ok()) std::abort();
    const absl::Span<const uint8_t> bytes = (*m)->bytes();
    uint64_t sum = 0;
    for (size_t i = 0; i < bytes.size(); i += 4096) sum += bytes[i];
    benchmark::DoNotOptimize(sum);
    return m->release();
  }();
  return map->bytes();
}

// One pass of (b) with a `kind` sink on this thread: wall seconds, and the
// thread's CPU seconds in *cpu_seconds.
double CpuPass(const std::string& kind, double* cpu_seconds) {
  const absl::Span<const uint8_t> bytes = MappedBytes();
  std::unique_ptr<ingest::RecordingIngestSink> sink = MakeSink(kind, g_dir);
  ingest::HrryConsumer c(container::FileOptions(), sink.get());
  const double cpu0 = CpuClockSeconds(CLOCK_THREAD_CPUTIME_ID);
  const auto t0 = Clock::now();
  for (size_t at = 0; at < bytes.size(); at += 1 << 20) {
    if (!c.Feed(bytes.subspan(at, 1 << 20)).ok()) std::abort();
  }
  if (!c.Finish().ok()) std::abort();
  const double t = Seconds(t0);
  *cpu_seconds = CpuClockSeconds(CLOCK_THREAD_CPUTIME_ID) - cpu0;
  return t;
}

void CpuOnly(benchmark::State& state, const std::string& kind,
             double* out_seconds, double* out_cpu_seconds = nullptr) {
  Generate();
  for (auto _ : state) {
    double cpu = 0;
    *out_seconds = CpuPass(kind, &cpu);
    if (out_cpu_seconds != nullptr) *out_cpu_seconds = cpu;
    Report(state, *out_seconds, 0);
  }
}

void BM_b_CpuValidate(benchmark::State& state) {
  CpuOnly(state, "validate", &g_cpu_validate);
}
void BM_b_CpuDequant(benchmark::State& state) {
  CpuOnly(state, "dequant", &g_cpu_dequant, &g_cpu_dequant_cpu);
}

void BM_c_LoaderValidate(benchmark::State& state) {
  Generate();
  for (auto _ : state) {
    Report(state, RunLoader("validate"), std::max(g_read, g_cpu_validate));
  }
  state.counters["peak_rss_MiB"] = ChildPeakRss("validate");
}

void BM_c_LoaderDequant(benchmark::State& state) {
  Generate();
  for (auto _ : state) {
    Report(state, RunLoader("dequant"), std::max(g_read, g_cpu_dequant));
  }
  state.counters["peak_rss_MiB"] = ChildPeakRss("dequant");
}

// The disk's own rate for the volume loader_dequant_files writes (issue
// 18 part 3): dd, as a user would measure it, flushed with fdatasync.
void BM_c_DiskWriteDd(benchmark::State& state) {
  Generate();
  const std::string target = g_dir + "/dd.out";
  const uint64_t mib = (g_out_bytes + (1 << 20) - 1) >> 20;
  const std::string cmd =
      absl::StrCat("dd if=/dev/zero of='", target, "' bs=1M count=", mib,
                   " conv=fdatasync status=none");
  for (auto _ : state) {
    const auto t0 = Clock::now();
    if (std::system(cmd.c_str()) != 0) std::abort();
    g_dd = Seconds(t0);
    std::filesystem::remove(target);
    state.SetIterationTime(g_dd);
    state.SetBytesProcessed(static_cast<int64_t>(mib << 20));
    state.counters["MBps"] = static_cast<double>(mib << 20) / g_dd / 1e6;
  }
}

void BM_c_LoaderDequantFiles(benchmark::State& state) {
  Generate();
  for (auto _ : state) {
    double durable = 0;
    const double returned = RunLoader("dequant_files", 0, &durable);
    Report(state, durable, std::max({g_read, g_cpu_dequant, g_dd}));
    state.counters["returned_s"] = returned;
    state.counters["out_MBps"] =
        static_cast<double>(g_out_bytes) / durable / 1e6;
  }
  state.counters["peak_rss_MiB"] = ChildPeakRss("dequant_files");
}

void BM_cprime_LoaderThrottled(benchmark::State& state) {
  Generate();
  const double rate = static_cast<double>(g_size) / g_cpu_dequant;
  for (auto _ : state) {
    // The source alone takes g_cpu_dequant seconds; so does the consumer.
    Report(state, RunLoader("dequant", rate), g_cpu_dequant);
  }
}

// The file served on 127.0.0.1 by an in-process NetServer, started once.
struct LoopbackServer {
  std::unique_ptr<container::HrryFile> file;
  std::unique_ptr<net::NetServer> server;
  std::thread thread;
  clockid_t cpu_clock{};  // the server thread's CPU time
  ~LoopbackServer() {
    if (server) server->Stop();
    if (thread.joinable()) thread.join();
  }
};
LoopbackServer& Server() {
  static LoopbackServer* s = [] {
    auto* l = new LoopbackServer;
    absl::StatusOr<std::unique_ptr<container::HrryFile>> f =
        container::HrryFile::Open(g_file);
    if (!f.ok()) std::abort();
    l->file = *std::move(f);
    net::NetServerConfig config;
    config.port = 0;
    l->server = std::make_unique<net::NetServer>(l->file.get(), config);
    if (!l->server->Listen().ok()) std::abort();
    l->thread = std::thread([l] { l->server->Run(); });
    if (::pthread_getcpuclockid(l->thread.native_handle(), &l->cpu_clock) != 0)
      std::abort();
    return l;
  }();
  return *s;
}

// CPU seconds one TCP ingest took: of every thread of the process (the
// server's, the loader's reader, the consumer), and of the server's alone;
// how often the loader's consumer found its ring empty (waits) and its
// reader found the ring full (resumes); and the slots the ring grew to.
struct TcpCpu {
  double all = 0, server = 0;
  uint64_t waits = 0, resumes = 0;
  size_t ring_slots = 0;
  double client() const { return all - server; }
};

// Wall seconds of one TCP ingest from this process's server, or from the
// one at 127.0.0.1:`port` (a child's, for its peak RSS: cpu->server 0).
double RunTcp(const std::string& kind, TcpCpu* cpu, std::string port = "") {
  const bool own_server = port.empty();
  if (own_server) port = absl::StrCat(Server().server->port());
  std::unique_ptr<ingest::RecordingIngestSink> sink =
      MakeSink(kind, g_dir + "/out");
  net::NetClientOptions o;
  o.keys = g_names;
  net::NetClientSession session(o, sink.get());
  ingest::Loader loader(BenchLoaderOptions());
  const double cpu0 = ProcessCpuSeconds();
  const double server0 = own_server ? CpuClockSeconds(Server().cpu_clock) : 0.0;
  const auto t0 = Clock::now();
  const ingest::LoadResult r =
      loader.Run(ingest::LoadSource::Tcp("127.0.0.1", port), &session);
  const double t = Seconds(t0);
  cpu->all = ProcessCpuSeconds() - cpu0;
  cpu->server =
      own_server ? CpuClockSeconds(Server().cpu_clock) - server0 : 0.0;
  cpu->waits = ingest::LoaderTestPeer::ConsumerWaits(loader);
  cpu->resumes = ingest::LoaderTestPeer::ReaderResumes(loader);
  cpu->ring_slots = ingest::LoaderTestPeer::RingSlots(loader);
  if (!r.status.ok() || session.keys_completed() != g_names.size()) {
    std::fprintf(stderr, "tcp ingest failed: %s\n",
                 std::string(r.status.message()).c_str());
    std::abort();
  }
  return t;
}

// cpu_s: the CPU seconds of all threads; server_cpu_s: the server
// thread's; client_cpu_s: the rest (the loader's reader and the consumer:
// what a client pays when the server is elsewhere).
void CountTcpCpu(benchmark::State& state, const TcpCpu& cpu) {
  state.counters["cpu_s"] = cpu.all;
  state.counters["server_cpu_s"] = cpu.server;
  state.counters["client_cpu_s"] = cpu.client();
  state.counters["consumer_waits"] = static_cast<double>(cpu.waits);
  state.counters["reader_resumes"] = static_cast<double>(cpu.resumes);
  state.counters["ring_slots"] = static_cast<double>(cpu.ring_slots);
}

void BM_d_TcpValidate(benchmark::State& state) {
  Generate();
  TcpCpu cpu;
  // Once untimed: the server's first pass maps the file's pages, which no
  // later run pays again (tcp_raw does the same); a cold baseline would
  // flatter tcp_dequant's ratio.
  (void)RunTcp("validate", &cpu);
  for (auto _ : state) {
    g_tcp_io = RunTcp("validate", &cpu);
    g_tcp_io_cpu = cpu.all;
    Report(state, g_tcp_io, 0);
  }
  CountTcpCpu(state, cpu);
}

// One loopback transfer of the file's bytes with nothing of ours in the
// way: blocking send() of 1 MiB pieces from the mapping on one thread,
// blocking recv() into a 1 MiB buffer on this one.
double RunRawTcp(absl::Span<const uint8_t> bytes, double* cpu_seconds) {
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (listener < 0 ||
      ::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(listener, 1) != 0 ||
      ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    std::abort();
  }
  const int client = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (::connect(client, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0)
    std::abort();
  const int server = ::accept(listener, nullptr, nullptr);
  if (server < 0) std::abort();
  ::close(listener);
  static uint8_t* buf = AlignedMiB();
  const size_t buf_size = 1 << 20;
  const double cpu0 = ProcessCpuSeconds();
  const auto t0 = Clock::now();
  std::thread sender([&] {
    size_t off = 0;
    while (off < bytes.size()) {
      const size_t n = std::min(buf_size, bytes.size() - off);
      const ssize_t k = ::send(server, bytes.data() + off, n, MSG_NOSIGNAL);
      if (k <= 0) std::abort();
      off += static_cast<size_t>(k);
    }
    ::shutdown(server, SHUT_WR);
  });
  uint64_t got = 0;
  ssize_t k;
  while ((k = ::recv(client, buf, buf_size, 0)) > 0) got += k;
  sender.join();
  const double t = Seconds(t0);
  *cpu_seconds = ProcessCpuSeconds() - cpu0;
  ::close(client);
  ::close(server);
  if (got != bytes.size()) std::abort();
  return t;
}

void BM_d_TcpRaw(benchmark::State& state) {
  Generate();
  absl::StatusOr<std::unique_ptr<container::MappedFile>> file =
      container::MappedFile::Open(g_file);
  if (!file.ok()) std::abort();
  double cpu = 0;
  RunRawTcp((*file)->bytes(), &cpu);  // maps the pages, as the server's are
  for (auto _ : state) {
    const double t = RunRawTcp((*file)->bytes(), &cpu);
    Report(state, t, 0);
    g_raw_cpu = cpu;
    if (g_tcp_io > 0) {
      state.counters["x_raw"] = g_tcp_io / t;
      state.counters["x_raw_cpu"] = g_tcp_io_cpu / cpu;
    }
  }
  state.counters["cpu_s"] = cpu;
}

// With the server in this process, the run cannot take less than cpu_s /
// cores: cpu_floor_ratio is that floor over the ratio's baseline, the best
// ratio any overlap could reach on this machine's cores. client_cpu_x =
// client_cpu_s / cpu_dequant's own CPU seconds: what the client's reading,
// framing and hand-offs add to the dequantization it exists for.
void BM_d_TcpDequant(benchmark::State& state) {
  Generate();
  TcpCpu cpu;
  const double baseline = std::max(g_tcp_io, g_cpu_dequant);
  for (auto _ : state) {
    Report(state, RunTcp("dequant", &cpu), baseline);
  }
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  CountTcpCpu(state, cpu);
  state.counters["cores"] = cores;
  state.counters["peak_rss_MiB"] =
      ChildPeakRss("dequant", absl::StrCat(Server().server->port()));
  if (g_cpu_dequant_cpu > 0) {
    state.counters["client_cpu_x"] = cpu.client() / g_cpu_dequant_cpu;
  }
  if (baseline > 0) {
    state.counters["cpu_floor_ratio"] = cpu.all / cores / baseline;
    if (g_raw_cpu > 0) {
      state.counters["raw_floor_ratio"] =
          (g_raw_cpu + g_cpu_dequant) / cores / baseline;
    }
  }
}

// cpu_dequant on a second thread while this one runs tcp_validate: all of
// tcp_dequant's work (and a validating consumer more) on the same cores,
// with nothing handed from the transport to the dequantizer. Wall seconds
// until both are done.
double CoRun() {
  double cpu_thread = 0;
  const auto t0 = Clock::now();
  std::thread dequant([&cpu_thread] { (void)CpuPass("dequant", &cpu_thread); });
  TcpCpu cpu;
  (void)RunTcp("validate", &cpu);
  dequant.join();
  return Seconds(t0);
}

// tcp_dequant with both its baselines in the same rounds: each round runs
// cpu_dequant, tcp_validate, tcp_dequant and co_run once, in the orders of
// kOrdersOf4 in turn (HURRAY_INGEST_BENCH_ROUNDS rounds, default 12),
// after one untimed tcp_validate. The single runs above divide times taken
// seconds apart, and cpu_dequant alone swings 140-230 ms from run to run
// on this VM (bench/RESULTS.md, issue 18). Counters, medians over rounds
// of figures taken within a round:
//   ratio            tcp_dequant / max(tcp_validate, cpu_dequant) (the
//                    issue 18 target: <= 1.15)
//   cpu_floor_ratio  tcp_dequant's CPU seconds (every thread) / cores /
//                    that baseline: the least ratio its CPU allows here
//   of_floor         ratio / cpu_floor_ratio: what the overlap loses
//   validate_cores   tcp_validate's CPU seconds / its wall seconds: the
//                    cores the transport alone keeps busy
//   of_cpu_dequant   tcp_dequant / cpu_dequant: against the baseline that
//                    the loader cannot move (a change that slowed
//                    tcp_validate would flatter `ratio`)
//   co_run           CoRun() / the baseline: the same transport and
//                    dequantization (and a second parse) side by side,
//                    nothing handed between them: a reference for what the
//                    hand-offs cost, not a bound (it does more work)
//   of_co_run        tcp_dequant / CoRun(): what the loader's hand-offs cost
// and ratio_lo / ratio_hi, the lowest and highest round's ratio, and
// rounds_met, the rounds whose ratio was <= 1.15.
void BM_d_TcpPaired(benchmark::State& state) {
  Generate();
  int rounds = 12;
  if (const char* env = std::getenv("HURRAY_INGEST_BENCH_ROUNDS")) {
    rounds = std::max(1, std::atoi(env));
  }
  const double cores = std::max(1u, std::thread::hardware_concurrency());
  std::vector<double> ratio, floors, of_floor, validate_cores, of_cpu, co_run,
      of_co_run;
  double lo = 0, hi = 0;
  int met = 0;
  for (auto _ : state) {
    TcpCpu cpu;
    (void)RunTcp("validate", &cpu);  // the server's first pass, as above
    (void)MappedBytes();             // cpu_dequant's mapping, faulted in
    double total = 0;
    for (int r = 0; r < rounds; ++r) {
      double t[4] = {}, c[4] = {};
      for (const int which : bench::kOrdersOf4[r % 4]) {
        if (which == 0) {
          t[0] = CpuPass("dequant", &c[0]);
        } else if (which == 3) {
          t[3] = CoRun();
        } else {
          t[which] = RunTcp(which == 1 ? "validate" : "dequant", &cpu);
          c[which] = cpu.all;
        }
      }
      const double baseline = std::max(t[0], t[1]);
      const double x = t[2] / baseline;
      const double f = c[2] / cores / baseline;
      ratio.push_back(x);
      floors.push_back(f);
      of_floor.push_back(x / f);
      validate_cores.push_back(c[1] / t[1]);
      of_cpu.push_back(t[2] / t[0]);
      co_run.push_back(t[3] / baseline);
      of_co_run.push_back(t[2] / t[3]);
      lo = r == 0 ? x : std::min(lo, x);
      hi = std::max(hi, x);
      met += x <= 1.15 ? 1 : 0;
      total += t[2];
    }
    Report(state, total / rounds, 0);
  }
  state.counters["ratio"] = bench::Median(ratio);
  state.counters["cpu_floor_ratio"] = bench::Median(floors);
  state.counters["of_floor"] = bench::Median(of_floor);
  state.counters["validate_cores"] = bench::Median(validate_cores);
  state.counters["of_cpu_dequant"] = bench::Median(of_cpu);
  state.counters["co_run"] = bench::Median(co_run);
  state.counters["of_co_run"] = bench::Median(of_co_run);
  state.counters["ratio_lo"] = lo;
  state.counters["ratio_hi"] = hi;
  state.counters["rounds_met"] = met;
  state.counters["rounds"] = rounds;
}

// The file loader with its baselines in the same rounds: each round runs
// read_only, loader_validate, cpu_dequant and loader_dequant once, in the
// orders of kOrdersOf4 in turn (HURRAY_INGEST_BENCH_ROUNDS rounds, default
// 12), after one untimed pass of each. Single runs divide times taken
// seconds apart, and on this shared VM read_only alone swings 30-260 ms
// between runs. Counters, medians over rounds of in-round figures:
//   validate_ratio   loader_validate / read_only (issue 47 item 6: <= 1.15)
//   dequant_ratio    loader_dequant / max(read_only, cpu_dequant)
// with validate_lo / validate_hi and dequant_lo / dequant_hi, the lowest
// and highest rounds, validate_met the rounds whose validate_ratio was
// <= 1.15, read_ms / loader_validate_ms, the medians of both times, and
// validate_inline / dequant_inline, the median share of the slots the
// loader read on the consumer's thread (stream/ingest/loader.h).
void BM_c_LoaderPaired(benchmark::State& state) {
  Generate();
  int rounds = 12;
  if (const char* env = std::getenv("HURRAY_INGEST_BENCH_ROUNDS")) {
    rounds = std::max(1, std::atoi(env));
  }
  std::vector<double> validate, dequant, read_s, validate_s, inline_v, inline_d;
  int met = 0;
  for (auto _ : state) {
    double cpu = 0;
    (void)ReadPass();
    (void)RunLoader("validate");
    (void)CpuPass("dequant", &cpu);  // also faults the mapping in
    (void)RunLoader("dequant");
    double total = 0;
    for (int r = 0; r < rounds; ++r) {
      double t[4] = {};
      for (const int which : bench::kOrdersOf4[r % 4]) {
        switch (which) {
          case 0:
            t[0] = ReadPass();
            break;
          case 1:
            t[1] = RunLoader("validate");
            inline_v.push_back(g_inline_share);
            break;
          case 2:
            t[2] = CpuPass("dequant", &cpu);
            break;
          default:
            t[3] = RunLoader("dequant");
            inline_d.push_back(g_inline_share);
        }
      }
      validate.push_back(t[1] / t[0]);
      dequant.push_back(t[3] / std::max(t[0], t[2]));
      read_s.push_back(t[0]);
      validate_s.push_back(t[1]);
      met += t[1] / t[0] <= 1.15 ? 1 : 0;
      total += t[1];
    }
    Report(state, total / rounds, 0);
  }
  state.counters["validate_ratio"] = bench::Median(validate);
  state.counters["validate_lo"] =
      *std::min_element(validate.begin(), validate.end());
  state.counters["validate_hi"] =
      *std::max_element(validate.begin(), validate.end());
  state.counters["validate_met"] = met;
  state.counters["dequant_ratio"] = bench::Median(dequant);
  state.counters["dequant_lo"] =
      *std::min_element(dequant.begin(), dequant.end());
  state.counters["dequant_hi"] =
      *std::max_element(dequant.begin(), dequant.end());
  state.counters["read_ms"] = bench::Median(read_s) * 1e3;
  state.counters["loader_validate_ms"] = bench::Median(validate_s) * 1e3;
  state.counters["validate_inline"] = bench::Median(inline_v);
  state.counters["dequant_inline"] = bench::Median(inline_d);
  state.counters["rounds"] = rounds;
}

#define HURRAY_ONCE(f) \
  BENCHMARK(f)->Iterations(1)->UseManualTime()->Unit(benchmark::kMillisecond)
HURRAY_ONCE(BM_a_ReadOnly);
HURRAY_ONCE(BM_b_CpuValidate);
HURRAY_ONCE(BM_b_CpuDequant);
HURRAY_ONCE(BM_c_LoaderValidate);
HURRAY_ONCE(BM_c_LoaderDequant);
HURRAY_ONCE(BM_cprime_LoaderThrottled);
HURRAY_ONCE(BM_c_LoaderPaired);
HURRAY_ONCE(BM_d_TcpValidate);
HURRAY_ONCE(BM_d_TcpRaw);
HURRAY_ONCE(BM_d_TcpDequant);
HURRAY_ONCE(BM_d_TcpPaired);
// Last: they write several GiB whose writeback would slow whatever runs
// next (both wait for it before they end).
HURRAY_ONCE(BM_c_DiskWriteDd);
HURRAY_ONCE(BM_c_LoaderDequantFiles);

// The child of ChildPeakRss: one ingest, then its peak RSS in KiB:
//   ingest_bench --child KIND FILE DIR          `from` is the file
//   ingest_bench --child-tcp KIND PORT N DIR    `from` is the port of a
//                                               server of N tensors
int Child(const std::string& kind, bool over_tcp, const std::string& from,
          uint64_t tensors, const std::string& dir) {
  g_dir = dir + "/child";
  std::filesystem::create_directories(g_dir);
  if (!over_tcp) {
    g_file = from;
    RunLoader(kind);
  } else {
    for (uint64_t i = 0; i < tensors; ++i) {
      g_names.push_back(TensorName(i));
    }
    TcpCpu cpu;
    (void)RunTcp(kind, &cpu, from);
  }
  std::filesystem::remove_all(g_dir);
  struct rusage ru;
  ::getrusage(RUSAGE_SELF, &ru);
  std::printf("%ld\n", ru.ru_maxrss);
  return 0;
}

// The HTTPS case (issue 15), driven by bench/http_ingest_bench.sh:
//   --generate FILE         writes the benchmark file
//   (HURRAY_INGEST_BENCH_BYTES)
//   --cpu KIND FILE         decode (+ dequant) from memory: prints seconds
//   --http KIND URL CAFILE  the loader over an HTTPS source (HttpBody):
//                           prints "seconds peak_rss_KiB"
int HttpModes(int argc, char** argv) {
  const std::string mode = argv[1];
  if (mode == "--generate" && argc == 3) {
    g_file = argv[2];
    Generate();
    std::printf("%llu\n", static_cast<unsigned long long>(g_size));
    return 0;
  }
  if (mode == "--cpu" && argc == 4) {
    g_file = argv[3];
    auto map = container::MappedFile::Open(g_file);
    if (!map.ok()) return 1;
    const absl::Span<const uint8_t> bytes = (*map)->bytes();
    uint64_t sum = 0;
    for (size_t i = 0; i < bytes.size(); i += 4096) sum += bytes[i];
    benchmark::DoNotOptimize(sum);
    std::unique_ptr<ingest::RecordingIngestSink> sink =
        MakeSink(argv[2], "/tmp");
    ingest::HrryConsumer c(container::FileOptions(), sink.get());
    const auto t0 = Clock::now();
    for (size_t at = 0; at < bytes.size(); at += 1 << 20) {
      if (!c.Feed(bytes.subspan(at, 1 << 20)).ok()) return 1;
    }
    if (!c.Finish().ok()) return 1;
    std::printf("%.3f\n", Seconds(t0));
    return 0;
  }
  if (mode == "--http" && argc == 5) {
    absl::StatusOr<http::Url> url = http::ParseUrl(argv[3]);
    if (!url.ok()) return 1;
    http::HttpOptions ho;
    ho.ca_file = argv[4];
    const auto t0 = Clock::now();
    absl::StatusOr<std::unique_ptr<http::HttpBody>> body =
        http::HttpBody::Open(*url, ho);
    if (!body.ok()) {
      std::fprintf(stderr, "%s\n",
                   std::string(body.status().message()).c_str());
      return 1;
    }
    std::unique_ptr<ingest::RecordingIngestSink> sink =
        MakeSink(argv[2], "/tmp");
    std::unique_ptr<container::ByteConsumer> c = ingest::MakeConsumer(
        container::ContainerFormat::kUnknown, container::FileOptions(),
        sink.get(), nullptr, nullptr);
    ingest::Loader loader(BenchLoaderOptions());
    const ingest::LoadResult r =
        loader.Run(ingest::LoadSource::Reader(body->get()), c.get());
    const double t = Seconds(t0);
    if (!r.status.ok()) {
      std::fprintf(stderr, "%s\n", std::string(r.status.message()).c_str());
      return 1;
    }
    struct rusage ru;
    ::getrusage(RUSAGE_SELF, &ru);
    std::printf("%.3f %ld\n", t, ru.ru_maxrss);
    return 0;
  }
  std::fprintf(stderr, "ingest_bench: bad arguments\n");
  return 2;
}

}  // namespace
}  // namespace hurray::stream

int main(int argc, char** argv) {
  if (argc == 5 && std::string(argv[1]) == "--child") {
    return hurray::stream::Child(argv[2], /*over_tcp=*/false, argv[3], 0,
                                 argv[4]);
  }
  if (argc == 6 && std::string(argv[1]) == "--child-tcp") {
    return hurray::stream::Child(argv[2], /*over_tcp=*/true, argv[3],
                                 std::strtoull(argv[4], nullptr, 10), argv[5]);
  }
  if (argc >= 2 && std::string(argv[1]).rfind("--child", 0) == 0) {
    std::fprintf(stderr, "ingest_bench: bad arguments\n");
    return 2;
  }
  if (argc >= 3 && std::string(argv[1]).rfind("--", 0) == 0 &&
      std::string(argv[1]).rfind("--benchmark", 0) != 0) {
    return hurray::stream::HttpModes(argc, argv);
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (!hurray::stream::g_dir.empty()) {
    std::filesystem::remove_all(hurray::stream::g_dir);
  }
  return 0;
}
