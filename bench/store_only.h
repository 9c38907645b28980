// The store bound of bench/dequant_bench (issue 18): Highway vector stores of
// a constant into a float32 output, on the same dynamically dispatched
// target set as the dequantization kernels (dequant/simd_kernels.cc), with
// the same store policy (non-temporal for outputs of kStreamOutputBytes or
// more, but for the first line of each page: dequant/kernels.h
// StoresNonTemporal). A kernel cannot write its output faster than this
// loop does.
#ifndef HURRAY_BENCH_STORE_ONLY_H_
#define HURRAY_BENCH_STORE_ONLY_H_

#include <cstddef>
#include <cstdint>

namespace hurray::bench {

// out[0, n) = value; non-temporal stores (then a fence) when `stream`.
void StoreConstant(float* out, size_t n, float value, bool stream);

// The traffic bound of a kernel that reads `in_bytes` bytes of input for `n`
// float32 outputs: StoreConstant's stores, with one whole input vector
// loaded before the n · vector / in_bytes output vectors it stands for, so
// the input is read once, front to back, as a kernel reads it; each
// ordinary store asks for its line ahead as the kernels' do
// (dequant/kernels.h PrefetchForWrite: without it this loop ran at 0.86 -
// 0.95 of the store loop in L2 for codes up to 8 bits, and the fused
// kernels that ask beat it).
// Nothing is converted: where reads and writes share the cache's bandwidth,
// no kernel with that much input beats this loop. Does nothing if
// in_bytes < 64.
// Returns a fold of the loaded bytes, for benchmark::DoNotOptimize.
uint64_t ReadAndStore(const uint8_t* in, size_t in_bytes, float* out, size_t n,
                      bool stream);

// The Highway target StoreConstant runs on ("AVX2", "AVX3_DL", ...).
const char* StoreOnlyTargetName();

}  // namespace hurray::bench

#endif  // HURRAY_BENCH_STORE_ONLY_H_
