// Dequantization throughput, elements per second (items_per_second), single
// thread, at 64 Ki elements (in L2) and 64 Mi elements (DRAM):
//   BM_Dequant/<scheme>/<storage>/<elements>
//       Dequantizer::Consume of the whole data buffer (after Restart(); the
//       Dequantizer and its parameters are built once, outside the loop).
//       Tensors are [elements / 4096, 4096]: per_tensor; per_channel along
//       axis 0 (one scale per row); per_block along axis 1, K = 32, f16
//       scales, asymmetric (also K = 16 and 64 for 4-bit codes:
//       per_block_k16/int4, per_block_k64/uint4, ...); nf4 along axis 1,
//       K = 64; mxfp along axis 1, K = 32.
// and three baselines:
//   BM_StoreOnly/<elements>     the store bound: Highway vector stores of a
//                               constant over the float32 output, on the
//                               kernels' target and store policy
//                               (bench/store_only.h); the ratio to it is the
//                               figure of merit (issue 18)
//   BM_Memcpy/<elements>        memcpy of the float32 output size
//   BM_ConvertInt8/<elements>   a plain int8 → float32 loop, compiled with
//                               -O3 for this CPU's best of AVX-512 / AVX2
// (BM_Dequant and BM_StoreOnly also at 4 Ki and 8 Ki elements, outputs in
// L1: the difference of the two times is a row's compute rate, Consume's
// fixed cost taken out; bench/RESULTS.md),
// and, per BM_Dequant row, its own traffic bound:
//   BM_TrafficBound/<scheme>/<storage>/<elements>
//       the store loop that also reads as many bytes as the row's kernel
//       does (data, scales and zero points) and asks for its lines ahead
//       as the kernels do (bench/store_only.h ReadAndStore), converting
//       nothing. BM_StoreOnly itself does not ask: with PrefetchForWrite
//       it took 4.99 us for 64 Ki outputs against 4.66-4.71 (issue 18)
// and, at 64 Mi elements, the same rows into an output 16 bytes past a line:
//   BM_DequantOffLine/<scheme>/<storage>/<elements>
//       streamed outputs whose blocks do not start on lines go through the
//       kernels' L1 stage; BM_Dequant's, on lines, are stored non-temporally
//       straight from the registers where the vectors are 16 bytes or more
//       (each streamed row's `staged_share` counter: the share of its
//       outputs that took the stage; on AVX3_DL 0 in every BM_Dequant row
//       and 1 in every BM_DequantOffLine row. Elsewhere a run in tiles of
//       codes off a line takes the stage for its first tile only when its
//       blocks are longer than a tile, and the 64-bit path of SSE4 and
//       SSSE3 always takes it)
// and, at both sizes, the parallel whole-buffer path:
//   BM_DequantThreads/<scheme>/<storage>/<elements>/threads:<1|2>
//       Dequantizer::ConsumeWhole (wall time; threads:1 is the serial path)
//   BM_StoreOnlyThreads/<elements>/threads:<1|2>
//       BM_StoreOnly split the same way over std::threads
// and, at 64 Mi elements, each row paired in every round with its
// baselines (the figures to quote on this noisy host; see each function):
//   BM_BoundsPaired/<scheme>/<storage>/<elements>    one thread: the store
//       loop, the traffic bound, Consume
//   BM_ThreadsPaired/<scheme>/<storage>/<elements>   the store loop and
//       ConsumeWhole, each on one thread and on two
// and other layouts at 64 Ki elements (ConsumeScattered):
//   BM_DequantLayout/<column_major|tiled>/<scheme>/<storage>/<elements>
//
//   bazel run -c opt //bench:dequant_bench -- --benchmark_min_time=0.1
//
// HURRAY_BENCH_TARGET=AVX2 (any Highway target name this CPU supports: AVX2,
// AVX3, AVX3_DL, SSE4, ...) runs the kernels and the store bound on that
// target instead of the best one, so one AVX-512 host measures both; each
// row's label names the target its kernels ran on (on an Intel AVX-512 host,
// AVX2 for the in-cache 8- and 16-bit and float8_e5m2 rows:
// dequant/kernels.h KernelTargetNameFor).
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "bench/paired_rounds.h"
#include "bench/store_only.h"
#include "benchmark/benchmark.h"
#include "dequant/dequantizer.h"
#include "dequant/kernels.h"
#include "dequant/params.h"
#include "dequant/plan.h"
#include "hwy/targets.h"
#include "parser/descriptor.h"
#include "parser/element_type.h"
#include "parser/quantization.h"
#include "tests/vectors.h"

namespace hurray::dequant {
namespace {

using namespace type_tag;  // NOLINT

// HURRAY_BENCH_TARGET, applied before the first benchmark runs.
[[maybe_unused]] const bool kTargetForced = [] {
  const char* want = std::getenv("HURRAY_BENCH_TARGET");
  if (want == nullptr || *want == '\0') return false;
  for (int64_t bits = hwy::SupportedTargets(); bits != 0; bits &= bits - 1) {
    const int64_t target = bits & -bits;
    if (std::strcmp(hwy::TargetName(target), want) == 0) {
      hwy::SetSupportedTargetsForTest(target);
      return true;
    }
  }
  std::fprintf(stderr, "HURRAY_BENCH_TARGET=%s: not a target of this CPU\n",
               want);
  std::exit(2);
}();

// HURRAY_BENCH_AVX2_PREFERENCE=0|1|2 (kernels.h SetAvx2PreferenceForTest):
// 1 runs the kernels as on Intel (the AVX2 kernels for the codecs it hands
// them, per-parameter arithmetic in 256 bits or less), 2 as on other CPUs,
// so that one host measures both; 0 (the default) by the CPU's vendor.
[[maybe_unused]] const bool kPreferenceForced = [] {
  const char* want = std::getenv("HURRAY_BENCH_AVX2_PREFERENCE");
  if (want == nullptr || *want == '\0') return false;
  if (std::strlen(want) != 1 || want[0] < '0' || want[0] > '2') {
    std::fprintf(stderr, "HURRAY_BENCH_AVX2_PREFERENCE=%s: not 0, 1 or 2\n",
                 want);
    std::exit(2);
  }
  SetAvx2PreferenceForTest(want[0] - '0');
  return true;
}();

// Every float32 output (kernels and baselines alike) starts
// HURRAY_BENCH_OUT_OFFSET bytes (a multiple of 4, default 0) past a 64-byte
// line. A std::vector would put it wherever malloc does: 16 bytes past a
// page for mmapped chunks, elsewhere once glibc raises its mmap threshold,
// so rows of one run would differ in alignment, by up to a quarter in rate.
size_t OutputOffsetFloats() {
  static const size_t offset = [] {
    const char* v = std::getenv("HURRAY_BENCH_OUT_OFFSET");
    const long bytes = v == nullptr ? 0 : std::strtol(v, nullptr, 10);
    return bytes > 0 && bytes < 64 ? static_cast<size_t>(bytes) / 4 : 0;
  }();
  return offset;
}

// n floats at OutputOffsetFloats() past a 64-byte boundary.
class Output {
 public:
  // `extra` more floats past the line, on top of HURRAY_BENCH_OUT_OFFSET.
  explicit Output(size_t n, float fill = 0.0f, size_t extra = 0)
      : storage_(n + 32), n_(n) {
    const uintptr_t base = reinterpret_cast<uintptr_t>(storage_.data());
    const size_t skip =
        ((64 - base % 64) % 64) / 4 + (OutputOffsetFloats() + extra) % 16;
    data_ = storage_.data() + skip;
    std::fill(data_, data_ + n_, fill);
  }
  float* data() { return data_; }
  size_t size() const { return n_; }

 private:
  std::vector<float> storage_;
  float* data_;
  size_t n_;
};

constexpr uint64_t kRow = 4096;
constexpr int64_t kSizes[] = {65536, 67108864};
// Outputs that stay in L1 (BM_Dequant and BM_StoreOnly only): the time at
// 8 Ki less the time at 4 Ki is 4 Ki outputs' worth of the kernel's own
// work, Consume's fixed cost taken out.
constexpr int64_t kL1Sizes[] = {4096, 8192};

void PutF32(std::vector<uint8_t>* b, float f) {
  uint8_t bytes[4];
  std::memcpy(bytes, &f, 4);
  b->insert(b->end(), bytes, bytes + 4);
}

// The data buffer starts HURRAY_BENCH_IN_OFFSET bytes (default 0) past a
// 64-byte line. A conforming buffer's base is aligned to at least 64 bytes
// (spec buffer-protocol.md § Alignment), which is what the loader and a
// mapped .hrry file hand the Dequantizer; a std::vector would put it where
// malloc does (16 bytes past a line), a case the offset still measures.
size_t InputOffsetBytes() {
  static const size_t offset = [] {
    const char* v = std::getenv("HURRAY_BENCH_IN_OFFSET");
    const long bytes = v == nullptr ? 0 : std::strtol(v, nullptr, 10);
    return bytes > 0 && bytes < 64 ? static_cast<size_t>(bytes) : 0;
  }();
  return offset;
}

struct BenchTensor {
  std::unique_ptr<TensorDescriptor> descriptor;
  std::vector<uint8_t> data_storage;
  absl::Span<const uint8_t> data;  // in data_storage, InputOffsetBytes()
  std::vector<uint8_t> scales, zero_points;
};

// A Dequantizer of `d` with `t`'s parameters; nothing, the benchmark marked
// skipped with the reason, if `d` is refused.
std::optional<Dequantizer> DequantizerOrSkip(benchmark::State& state,
                                             const TensorDescriptor& d,
                                             const BenchTensor& t) {
  absl::StatusOr<Dequantizer> dq =
      Dequantizer::Create(d, {t.scales, t.zero_points});
  if (!dq.ok()) {
    state.SkipWithError(dq.status().ToString().c_str());
    return std::nullopt;
  }
  return *std::move(dq);
}

// [n / 4096, 4096] of `type` under `scheme`, with ordinary parameters
// (scales around 0.01, zero points inside the storage range).
BenchTensor Make(Scheme scheme, uint8_t type, uint64_t n, uint32_t block = 32) {
  std::mt19937_64 rng(42);
  BenchTensor t;
  t.descriptor = vectors::Dense(type, {n / kRow, kRow});
  TensorDescriptor& d = *t.descriptor;
  d.flags |= flag::kHasQuantization;
  int64_t min = 0, max = 0;
  IntegerStorageRange(type, &min, &max);
  auto zero_point = [&] {
    return static_cast<int32_t>(min + static_cast<int64_t>(rng() % 16) %
                                          (max - min + 1));
  };
  auto scale = [&] {
    return 0.001f + static_cast<float>(rng() % 1000) * 1e-5f;
  };
  auto add_buffer = [&d](size_t size) {
    d.buffers[d.buffer_count].byte_size = size;
    return d.buffer_count++;
  };
  uint64_t blocks = 0;
  switch (scheme) {
    case Scheme::kPerTensorAffine:
      d.quantization = *PerTensorAffine::Create(scale(), zero_point());
      break;
    case Scheme::kPerChannelAffine: {
      for (uint64_t c = 0; c < n / kRow; ++c) {
        PutF32(&t.scales, scale());
        const int32_t zp = zero_point();
        const uint8_t* p = reinterpret_cast<const uint8_t*>(&zp);
        t.zero_points.insert(t.zero_points.end(), p, p + 4);
      }
      const uint32_t s = add_buffer(t.scales.size());
      const uint32_t z = add_buffer(t.zero_points.size());
      d.quantization = *PerChannelAffine::Asymmetric(0, s, z);
      break;
    }
    case Scheme::kPerBlockAffine: {
      blocks = n / block;
      for (uint64_t b = 0; b < blocks; ++b) {
        const uint16_t half = 0x2000 | static_cast<uint16_t>(rng() % 0x400);
        t.scales.push_back(static_cast<uint8_t>(half));
        t.scales.push_back(static_cast<uint8_t>(half >> 8));
        const int32_t zp = zero_point();
        const uint8_t* p = reinterpret_cast<const uint8_t*>(&zp);
        t.zero_points.insert(t.zero_points.end(), p, p + 4);
      }
      const uint32_t s = add_buffer(t.scales.size());
      const uint32_t z = add_buffer(t.zero_points.size());
      d.quantization = *PerBlockAffine::Asymmetric(1, block, s, z, kFloat16);
      break;
    }
    case Scheme::kNf4:
      for (uint64_t b = 0; b < n / 64; ++b) PutF32(&t.scales, scale());
      d.quantization = *Nf4::Create(1, 64, add_buffer(t.scales.size()));
      break;
    case Scheme::kMxfp:
      for (uint64_t b = 0; b < n / 32; ++b) {
        t.scales.push_back(static_cast<uint8_t>(120 + rng() % 8));
      }
      d.quantization = *Mxfp::Create(1, 32, add_buffer(t.scales.size()));
      break;
  }
  const size_t size = d.buffers[0].byte_size;
  t.data_storage.resize(size + 128);
  const uintptr_t base = reinterpret_cast<uintptr_t>(t.data_storage.data());
  uint8_t* data =
      t.data_storage.data() + (64 - base % 64) % 64 + InputOffsetBytes();
  for (size_t i = 0; i < size; ++i) data[i] = static_cast<uint8_t>(rng());
  t.data = absl::MakeConstSpan(data, size);
  return t;
}

// `off_line` floats past the output's line: 0 for BM_Dequant;
// BM_DequantOffLine puts the output 16 bytes past a line, where streamed
// outputs go through the kernels' L1 stage instead of straight from the
// registers (dequant/simd_kernels.cc BlocksOnLines, VectorsOnLines).
void BM_Dequant(benchmark::State& state, Scheme scheme, uint8_t type,
                size_t off_line, uint32_t block) {
  const uint64_t n = static_cast<uint64_t>(state.range(0));
  const BenchTensor t = Make(scheme, type, n, block);
  std::optional<Dequantizer> dq = DequantizerOrSkip(state, *t.descriptor, t);
  if (!dq) return;
  Output out(n, 0.0f, off_line);
  const StreamedOutputs before = StreamedOutputsOfThisThread();
  for (auto _ : state) {
    dq->Restart();
    size_t written = 0;
    const absl::Status s = dq->Consume(t.data, absl::MakeSpan(out), &written);
    if (!s.ok() || written != n) {
      state.SkipWithError(s.ToString().c_str());
      return;
    }
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(n));
  state.SetLabel(KernelTargetNameFor(dq->plan().codec,
                                     n * sizeof(float) >= kStreamOutputBytes));
  // Of the streamed outputs, the share that went through the kernels' L1
  // stage rather than straight from the registers (kernels.h
  // StreamedOutputs; see the comment at the top).
  const StreamedOutputs after = StreamedOutputsOfThisThread();
  const uint64_t staged = after.through_stage - before.through_stage;
  const uint64_t streamed =
      staged + after.from_registers - before.from_registers;
  if (streamed > 0) {
    state.counters["staged_share"] =
        static_cast<double>(staged) / static_cast<double>(streamed);
  }
}

// The store loop plus the row's input traffic (no conversion): where reads
// and writes share the cache's bandwidth, no kernel of the row can beat it.
void BM_TrafficBound(benchmark::State& state, Scheme scheme, uint8_t type,
                     uint32_t block) {
  const uint64_t n = static_cast<uint64_t>(state.range(0));
  const BenchTensor t = Make(scheme, type, n, block);
  std::vector<uint8_t> in(t.data.begin(), t.data.end());
  in.insert(in.end(), t.scales.begin(), t.scales.end());
  in.insert(in.end(), t.zero_points.begin(), t.zero_points.end());
  Output out(n);
  const bool stream = n * sizeof(float) >= kStreamOutputBytes;
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        bench::ReadAndStore(in.data(), in.size(), out.data(), n, stream));
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(n));
  state.SetLabel(bench::StoreOnlyTargetName());
}

// ConsumeWhole over range(1) threads (1: the serial path, for the ratio).
void BM_DequantThreads(benchmark::State& state, Scheme scheme, uint8_t type) {
  const uint64_t n = static_cast<uint64_t>(state.range(0));
  const int threads = static_cast<int>(state.range(1));
  const BenchTensor t = Make(scheme, type, n);
  std::optional<Dequantizer> dq = DequantizerOrSkip(state, *t.descriptor, t);
  if (!dq) return;
  Output out(n);
  for (auto _ : state) {
    dq->Restart();
    const absl::Status s =
        dq->ConsumeWhole(t.data, absl::MakeSpan(out), threads);
    if (!s.ok() || dq->elements_written() != n) {
      state.SkipWithError(s.ToString().c_str());
      return;
    }
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(n));
  state.SetLabel(KernelTargetNameFor(dq->plan().codec,
                                     n * sizeof(float) >= kStreamOutputBytes));
}

// Other dense layouts (ConsumeScattered, the storage-order walk): the same
// tensors stored column-major or in 16×64 row-major tiles.
void BM_DequantLayout(benchmark::State& state, uint8_t layout, Scheme scheme,
                      uint8_t type) {
  const uint64_t n = static_cast<uint64_t>(state.range(0));
  const BenchTensor t = Make(scheme, type, n);
  TensorDescriptor& d = *t.descriptor;
  d.layout_tag = layout;
  if (layout == layout_tag::kTiled) {
    d.layout.tiled_depth = 1;
    d.layout.tiled[0].outer_layout = layout_tag::kRowMajor;
    d.layout.tiled[0].inner_layout = layout_tag::kRowMajor;
    d.layout.tiled[0].tile_shape[0] = 16;  // rows are 4096 long
    d.layout.tiled[0].tile_shape[1] = 64;
  }
  std::optional<Dequantizer> dq = DequantizerOrSkip(state, d, t);
  if (!dq) return;
  Output out(n);
  for (auto _ : state) {
    dq->Restart();
    const absl::Status s = dq->ConsumeScattered(t.data, absl::MakeSpan(out));
    if (!s.ok() || dq->elements_written() != n) {
      state.SkipWithError(s.ToString().c_str());
      return;
    }
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(n));
}

// The store bound, with the dequantizer's store policy (non-temporal from
// kStreamOutputBytes on).
void BM_StoreOnly(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  Output dst(n);
  const bool stream = n * sizeof(float) >= kStreamOutputBytes;
  for (auto _ : state) {
    bench::StoreConstant(dst.data(), n, 1.5f, stream);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(n));
  state.SetLabel(bench::StoreOnlyTargetName());
}

// Stores a constant into dst[0, n) on `threads` threads, parts cut at
// 64-float boundaries as ConsumeWhole cuts them, one std::thread per extra
// part.
void StoreOnThreads(float* dst, size_t n, size_t threads, bool stream) {
  auto part = [&](size_t i) {
    const size_t from = (n * i / threads) / 64 * 64;
    const size_t to = i + 1 == threads ? n : (n * (i + 1) / threads) / 64 * 64;
    bench::StoreConstant(dst + from, to - from, 1.5f, stream);
  };
  std::vector<std::thread> pool;
  for (size_t i = 1; i < threads; ++i) pool.emplace_back(part, i);
  part(0);
  for (std::thread& t : pool) t.join();
}

// BM_StoreOnly over range(1) threads (StoreOnThreads per iteration).
void BM_StoreOnlyThreads(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  const size_t threads = static_cast<size_t>(state.range(1));
  Output dst(n);
  const bool stream = n * sizeof(float) >= kStreamOutputBytes;
  for (auto _ : state) {
    StoreOnThreads(dst.data(), n, threads, stream);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(n));
}

using ::hurray::bench::kOrdersOf3;
using ::hurray::bench::kOrdersOf4;
using ::hurray::bench::Median;

// Keeps the first failure of a paired round's pass in *failed (call it
// after the pass: `complete` must be read once the pass is done).
void NoteFailure(const absl::Status& s, bool complete, const char* short_of,
                 std::string* failed) {
  if (failed->empty() && (!s.ok() || !complete)) {
    *failed = s.ok() ? short_of : s.ToString();
  }
}

// The rounds of a paired benchmark: each iteration times pass(p) for the P
// passes in orders[round % R] (each over `out`), then hands the seconds,
// indexed by pass, to record(sec). Sets the `rounds` counter; stops at the
// first failure a pass leaves in *failed.
template <size_t R, size_t P, class Pass, class Record>
void PairedRounds(benchmark::State& state, const int (&orders)[R][P],
                  float* out, const std::string* failed, const Pass& pass,
                  const Record& record) {
  size_t round = 0;
  for (auto _ : state) {
    double sec[P];
    for (int which : orders[round % R]) {
      const auto t0 = std::chrono::steady_clock::now();
      pass(which);
      benchmark::DoNotOptimize(out);
      benchmark::ClobberMemory();
      sec[which] =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
              .count();
    }
    if (!failed->empty()) {
      state.SkipWithError(failed->c_str());
      return;
    }
    ++round;
    record(sec);
  }
  state.counters["rounds"] = static_cast<double>(round);
}

// Each iteration is one round of three single-thread passes over the same
// output, in the orders of kOrdersOf3 in turn: the store loop
// (BM_StoreOnly), the row's traffic bound (BM_TrafficBound) and
// Dequantizer::Consume (BM_Dequant). Counters, medians over rounds of ratios
// within a round (as BM_ThreadsPaired below, and for the same reason):
//   of_store        the store loop's time / Consume's (the issue 18 target
//                   at DRAM size: >= 0.95)
//   of_bound        the traffic bound's time / Consume's
//   bound_of_store  the store loop's time / the traffic bound's: the most
//                   of_store could be
void BM_BoundsPaired(benchmark::State& state, Scheme scheme, uint8_t type) {
  const uint64_t n = static_cast<uint64_t>(state.range(0));
  const BenchTensor t = Make(scheme, type, n);
  std::optional<Dequantizer> dq = DequantizerOrSkip(state, *t.descriptor, t);
  if (!dq) return;
  std::vector<uint8_t> in(t.data.begin(), t.data.end());
  in.insert(in.end(), t.scales.begin(), t.scales.end());
  in.insert(in.end(), t.zero_points.begin(), t.zero_points.end());
  Output out(n);
  const bool stream = n * sizeof(float) >= kStreamOutputBytes;
  std::string failed;
  std::vector<double> of_store, of_bound, bound_of_store;
  PairedRounds(
      state, kOrdersOf3, out.data(), &failed,
      [&](int which) {
        if (which == 0) {
          bench::StoreConstant(out.data(), n, 1.5f, stream);
        } else if (which == 1) {
          benchmark::DoNotOptimize(
              bench::ReadAndStore(in.data(), in.size(), out.data(), n, stream));
        } else {
          dq->Restart();
          size_t written = 0;
          const absl::Status st =
              dq->Consume(t.data, absl::MakeSpan(out), &written);
          NoteFailure(st, written == n, "Consume wrote too few outputs",
                      &failed);
        }
      },
      [&](const double* sec) {
        of_store.push_back(sec[0] / sec[2]);
        of_bound.push_back(sec[1] / sec[2]);
        bound_of_store.push_back(sec[0] / sec[1]);
      });
  state.counters["of_store"] = Median(of_store);
  state.counters["of_bound"] = Median(of_bound);
  state.counters["bound_of_store"] = Median(bound_of_store);
  state.SetLabel(KernelTargetNameFor(dq->plan().codec,
                                     n * sizeof(float) >= kStreamOutputBytes));
}

// Each iteration is one round of four passes over the same output, in the
// orders of kOrdersOf4 in turn: the store loop on one thread and
// on two (StoreOnThreads), ConsumeWhole on one thread and on two. On this
// shared VM a pass's rate swings by 2 x from one second to the next, so
// rates from separate benchmarks minutes apart cannot be divided; the
// counters are medians over rounds of ratios within a round:
//   dequant_x   one-thread time / two-thread time of ConsumeWhole (the
//               issue 18 target: >= 1.8)
//   store_x     the same for the store loop: what two threads of nothing
//               but stores gain on this memory path
//   of_store_2t ConsumeWhole's two-thread rate / the store loop's
void BM_ThreadsPaired(benchmark::State& state, Scheme scheme, uint8_t type) {
  const uint64_t n = static_cast<uint64_t>(state.range(0));
  const BenchTensor t = Make(scheme, type, n);
  std::optional<Dequantizer> dq = DequantizerOrSkip(state, *t.descriptor, t);
  if (!dq) return;
  Output out(n);
  const bool stream = n * sizeof(float) >= kStreamOutputBytes;
  std::string failed;
  std::vector<double> dequant_x, store_x, of_store;
  PairedRounds(
      state, kOrdersOf4, out.data(), &failed,
      [&](int which) {
        if (which < 2) {
          StoreOnThreads(out.data(), n, which + 1, stream);
        } else {
          dq->Restart();
          const absl::Status st =
              dq->ConsumeWhole(t.data, absl::MakeSpan(out), which - 1);
          NoteFailure(st, dq->elements_written() == n,
                      "ConsumeWhole wrote too few outputs", &failed);
        }
      },
      [&](const double* sec) {
        store_x.push_back(sec[0] / sec[1]);
        dequant_x.push_back(sec[2] / sec[3]);
        of_store.push_back(sec[1] / sec[3]);
      });
  state.counters["dequant_x"] = Median(dequant_x);
  state.counters["store_x"] = Median(store_x);
  state.counters["of_store_2t"] = Median(of_store);
  state.SetLabel(KernelTargetNameFor(dq->plan().codec,
                                     n * sizeof(float) >= kStreamOutputBytes));
}

void BM_Memcpy(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  Output src(n, 1.0f), dst(n);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), n * sizeof(float));
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(n));
}

// The plain loop, auto-vectorized (the target's -O3) for AVX-512, AVX2 or the
// x86-64 baseline, whichever this CPU runs (GCC function multiversioning).
// (Multiversioned functions are not inlined; clang refuses an explicit
// noinline beside target_clones.)
__attribute__((target_clones("arch=x86-64-v4", "avx2", "default"))) void
ConvertInt8(const int8_t* in, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<float>(in[i]);
}

void BM_ConvertInt8(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  std::vector<int8_t> src(n);
  for (size_t i = 0; i < n; ++i) src[i] = static_cast<int8_t>(i * 37);
  Output dst(n);
  for (auto _ : state) {
    ConvertInt8(src.data(), dst.data(), n);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(n));
}

struct Registrar {
  Registrar() {
    for (int64_t n : kL1Sizes) {
      benchmark::RegisterBenchmark("BM_StoreOnly", BM_StoreOnly)->Arg(n);
    }
    for (int64_t n : kSizes) {
      benchmark::RegisterBenchmark("BM_StoreOnly", BM_StoreOnly)->Arg(n);
      benchmark::RegisterBenchmark("BM_StoreOnlyThreads", BM_StoreOnlyThreads)
          ->Args({n, 1})
          ->Args({n, 2})
          ->ArgNames({"", "threads"})
          ->UseRealTime();
      benchmark::RegisterBenchmark("BM_Memcpy", BM_Memcpy)->Arg(n);
      benchmark::RegisterBenchmark("BM_ConvertInt8", BM_ConvertInt8)->Arg(n);
    }
    const Scheme schemes[] = {
        Scheme::kPerTensorAffine, Scheme::kPerChannelAffine,
        Scheme::kPerBlockAffine, Scheme::kNf4, Scheme::kMxfp};
    for (Scheme scheme : schemes) {
      for (uint8_t type : StorageTypesOf(scheme)) {
        const std::string name = std::string("BM_Dequant/") +
                                 SchemeLabel(scheme) + "/" +
                                 std::string(ElementTypeName(type));
        auto* b = benchmark::RegisterBenchmark(name.c_str(), BM_Dequant, scheme,
                                               type, size_t{0}, uint32_t{32});
        for (int64_t n : kSizes) b->Arg(n);
        for (int64_t n : kL1Sizes) b->Arg(n);
        b->Unit(benchmark::kMicrosecond);
        const std::string off_line_name = std::string("BM_DequantOffLine/") +
                                          SchemeLabel(scheme) + "/" +
                                          std::string(ElementTypeName(type));
        benchmark::RegisterBenchmark(off_line_name.c_str(), BM_Dequant, scheme,
                                     type, size_t{4}, uint32_t{32})
            ->Arg(kSizes[1])
            ->Unit(benchmark::kMicrosecond);
        const std::string bound_name = std::string("BM_TrafficBound/") +
                                       SchemeLabel(scheme) + "/" +
                                       std::string(ElementTypeName(type));
        auto* bound = benchmark::RegisterBenchmark(
            bound_name.c_str(), BM_TrafficBound, scheme, type, uint32_t{32});
        for (int64_t n : kSizes) bound->Arg(n);
        bound->Unit(benchmark::kMicrosecond);
        const std::string threads_name = std::string("BM_DequantThreads/") +
                                         SchemeLabel(scheme) + "/" +
                                         std::string(ElementTypeName(type));
        benchmark::RegisterBenchmark(threads_name.c_str(), BM_DequantThreads,
                                     scheme, type)
            ->Args({kSizes[0], 1})
            ->Args({kSizes[0], 2})
            ->Args({kSizes[1], 1})
            ->Args({kSizes[1], 2})
            ->ArgNames({"", "threads"})
            ->Unit(benchmark::kMicrosecond)
            ->UseRealTime();
        const std::string bounds_name = std::string("BM_BoundsPaired/") +
                                        SchemeLabel(scheme) + "/" +
                                        std::string(ElementTypeName(type));
        benchmark::RegisterBenchmark(bounds_name.c_str(), BM_BoundsPaired,
                                     scheme, type)
            ->Arg(kSizes[1])
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
        const std::string paired_name = std::string("BM_ThreadsPaired/") +
                                        SchemeLabel(scheme) + "/" +
                                        std::string(ElementTypeName(type));
        benchmark::RegisterBenchmark(paired_name.c_str(), BM_ThreadsPaired,
                                     scheme, type)
            ->Arg(kSizes[1])
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
      }
    }
    // Per-block 4-bit codes in the other block sizes in use: 16 (the
    // K-quants' sub-blocks), 64 (issue 47), rows per_block_k16/int4, ...
    for (uint32_t block : {16u, 64u}) {
      for (uint8_t type : {kInt4, kUInt4}) {
        const std::string key = "per_block_k" + std::to_string(block) + "/" +
                                std::string(ElementTypeName(type));
        auto* b = benchmark::RegisterBenchmark(
            ("BM_Dequant/" + key).c_str(), BM_Dequant, Scheme::kPerBlockAffine,
            type, size_t{0}, block);
        for (int64_t n : kSizes) b->Arg(n);
        b->Unit(benchmark::kMicrosecond);
        auto* bound = benchmark::RegisterBenchmark(
            ("BM_TrafficBound/" + key).c_str(), BM_TrafficBound,
            Scheme::kPerBlockAffine, type, block);
        for (int64_t n : kSizes) bound->Arg(n);
        bound->Unit(benchmark::kMicrosecond);
      }
    }
    const std::pair<Scheme, uint8_t> layout_cases[] = {
        {Scheme::kPerTensorAffine, kInt8},
        {Scheme::kNf4, kUInt4},
        {Scheme::kMxfp, kFloat8E4M3}};
    for (uint8_t layout : {layout_tag::kColumnMajor, layout_tag::kTiled}) {
      for (const auto& [scheme, type] : layout_cases) {
        const std::string name =
            std::string("BM_DequantLayout/") + LayoutName(layout) + "/" +
            SchemeLabel(scheme) + "/" + std::string(ElementTypeName(type));
        benchmark::RegisterBenchmark(name.c_str(), BM_DequantLayout, layout,
                                     scheme, type)
            ->Arg(kSizes[0])
            ->Unit(benchmark::kMicrosecond);
      }
    }
  }

  static std::vector<uint8_t> StorageTypesOf(Scheme scheme) {
    switch (scheme) {
      case Scheme::kPerTensorAffine:
      case Scheme::kPerChannelAffine:
        return {kInt8,   kUInt8, kInt16, kUInt16, kInt32,
                kUInt32, kInt4,  kUInt4, kInt2,   kUInt2};
      case Scheme::kPerBlockAffine:
        return {kInt8, kUInt8, kInt4, kUInt4, kInt2, kUInt2};
      case Scheme::kNf4:
        return {kUInt4};
      case Scheme::kMxfp:
        return {kFloat8E4M3, kFloat8E5M2, kFloat4E2M1, kFloat6E2M3,
                kFloat6E3M2, kInt8,       kInt4};
    }
    return {};
  }
};
const Registrar registrar;

}  // namespace
}  // namespace hurray::dequant
