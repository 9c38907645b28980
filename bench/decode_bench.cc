// Descriptor decoding speed, ns per descriptor, for three vectors:
//   dense_f32     float32 [3, 4], row-major (61 bytes)
//   per_channel   vectors::PerChannelAsymInt8(): int8 [4, 8] (117 bytes)
//   per_block     vectors::PerBlockAsymUInt4(): uint4 [8, 100] (121 bytes)
// each fed three ways:
//   BM_Decode/<vector>/oneshot  DecodeWith() on a reused decoder: Reset,
//                               one Feed of the whole descriptor, Finish
//                               (the fast path of parser/fast_path.h)
//   BM_Decode/<vector>/oneshot_general
//                               the same with ParseOptions::fast_path off:
//                               the general state machine and validator,
//                               the baseline of the fast path
//   BM_Decode/<vector>/chunk4k  a stream of 1000 copies fed in 4 KiB chunks;
//                               after each kDone the decoder is Reset() and
//                               goes on with the rest of the chunk (one
//                               iteration = 1000 descriptors; the
//                               `per_desc` counter is the time per descriptor)
//   BM_Decode/<vector>/byte     one descriptor fed 1 byte per Feed call
// and a baseline:
//   BM_Memcpy/<vector>          memcpy of the descriptor's bytes
// Nothing allocates inside the timed loops. Validation is on (strict mode,
// vectors::AgreedOptions()), as a reader would run it.
//
//   bazel build -c opt //bench:decode_bench
//   bazel-bin/bench/decode_bench --benchmark_min_time=0.2
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "benchmark/benchmark.h"
#include "parser/decoder.h"
#include "parser/descriptor.h"
#include "parser/element_type.h"
#include "tests/vectors.h"

namespace hurray {
namespace {

constexpr size_t kStreamCopies = 1000;
constexpr size_t kChunk = 4096;

struct Vector {
  const char* name;
  std::vector<uint8_t> bytes;
};

const std::vector<Vector>& Vectors() {
  static const std::vector<Vector>* const v = new std::vector<Vector>{
      {"dense_f32",
       vectors::Bytes(*vectors::Dense(type_tag::kFloat32, {3, 4}))},
      {"per_channel", vectors::Bytes(*vectors::PerChannelAsymInt8())},
      {"per_block", vectors::Bytes(*vectors::PerBlockAsymUInt4())},
  };
  return *v;
}

std::unique_ptr<DescriptorDecoder> NewDecoder(bool fast_path = true) {
  ParseOptions options = vectors::AgreedOptions();
  options.fast_path = fast_path;
  return std::make_unique<DescriptorDecoder>(options);
}

// Feeds `stream` in chunks of `chunk` bytes; returns the descriptors done,
// or 0 on a rejection.
size_t FeedStream(absl::Span<const uint8_t> stream, size_t chunk,
                  DescriptorDecoder* decoder) {
  size_t done = 0;
  decoder->Reset();
  for (size_t at = 0; at < stream.size(); at += chunk) {
    absl::Span<const uint8_t> rest = stream.subspan(at, chunk);
    while (!rest.empty()) {
      const FeedResult r = decoder->Feed(rest);
      rest.remove_prefix(r.consumed);
      if (r.state == DecodeState::kDone) {
        benchmark::DoNotOptimize(decoder->descriptor().rank);
        ++done;
        decoder->Reset();
      } else if (r.state == DecodeState::kRejected) {
        return 0;
      }
    }
  }
  return done;
}

void BM_OneShot(benchmark::State& state, const Vector* v, bool fast_path) {
  auto decoder = NewDecoder(fast_path);
  if (!DecodeWith(v->bytes, decoder.get()).ok()) {
    state.SkipWithError("vector rejected");
    return;
  }
  for (auto _ : state) {
    const Rejection r = DecodeWith(v->bytes, decoder.get());
    benchmark::DoNotOptimize(r);
    benchmark::DoNotOptimize(decoder->descriptor().rank);
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * v->bytes.size());
}

void BM_Chunk4k(benchmark::State& state, const Vector* v) {
  std::vector<uint8_t> stream;
  stream.reserve(v->bytes.size() * kStreamCopies);
  for (size_t i = 0; i < kStreamCopies; ++i) {
    stream.insert(stream.end(), v->bytes.begin(), v->bytes.end());
  }
  auto decoder = NewDecoder();
  if (FeedStream(stream, kChunk, decoder.get()) != kStreamCopies) {
    state.SkipWithError("stream not decoded");
    return;
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize(FeedStream(stream, kChunk, decoder.get()));
  }
  const double descriptors =
      static_cast<double>(state.iterations()) * kStreamCopies;
  state.SetItemsProcessed(static_cast<int64_t>(descriptors));
  state.SetBytesProcessed(state.iterations() * stream.size());
  state.counters["per_desc"] = benchmark::Counter(
      descriptors, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_Byte(benchmark::State& state, const Vector* v) {
  auto decoder = NewDecoder();
  const uint8_t* p = v->bytes.data();
  const size_t n = v->bytes.size();
  auto feed_bytes = [&] {
    decoder->Reset();
    FeedResult r{0, DecodeState::kNeedMore};
    for (size_t i = 0; i < n && r.state == DecodeState::kNeedMore; ++i) {
      r = decoder->Feed(absl::MakeConstSpan(p + i, 1));
    }
    return r.state;
  };
  if (feed_bytes() != DecodeState::kDone) {
    state.SkipWithError("vector not decoded byte by byte");
    return;
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize(feed_bytes());
    benchmark::DoNotOptimize(decoder->descriptor().rank);
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * n);
}

void BM_Memcpy(benchmark::State& state, const Vector* v) {
  std::vector<uint8_t> out(v->bytes.size());
  for (auto _ : state) {
    std::memcpy(out.data(), v->bytes.data(), v->bytes.size());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * v->bytes.size());
}

// Registered in this order: per vector, decode one-shot / one-shot on the
// general path / 4 KiB / byte, then the memcpy baseline.
[[maybe_unused]] const bool kRegistered = [] {
  for (const Vector& v : Vectors()) {
    const std::string base = std::string("BM_Decode/") + v.name;
    benchmark::RegisterBenchmark((base + "/oneshot").c_str(), BM_OneShot, &v,
                                 true)
        ->Unit(benchmark::kNanosecond);
    benchmark::RegisterBenchmark((base + "/oneshot_general").c_str(),
                                 BM_OneShot, &v, false)
        ->Unit(benchmark::kNanosecond);
    benchmark::RegisterBenchmark((base + "/chunk4k").c_str(), BM_Chunk4k, &v)
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark((base + "/byte").c_str(), BM_Byte, &v)
        ->Unit(benchmark::kNanosecond);
    benchmark::RegisterBenchmark((std::string("BM_Memcpy/") + v.name).c_str(),
                                 BM_Memcpy, &v)
        ->Unit(benchmark::kNanosecond);
  }
  return true;
}();

}  // namespace
}  // namespace hurray
