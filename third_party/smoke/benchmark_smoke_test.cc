#include <cstdint>
#include <numeric>
#include <vector>

#include "benchmark/benchmark.h"

namespace {

void BM_Accumulate(benchmark::State& state) {
  std::vector<uint32_t> v(static_cast<size_t>(state.range(0)), 1u);
  for (auto _ : state) {
    benchmark::DoNotOptimize(std::accumulate(v.begin(), v.end(), uint64_t{0}));
  }
  state.SetBytesProcessed(state.iterations() * state.range(0) *
                          static_cast<int64_t>(sizeof(uint32_t)));
}
BENCHMARK(BM_Accumulate)->Arg(64)->Arg(4096);

}  // namespace
// main() comes from //third_party:benchmark_main.
