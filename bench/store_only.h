// The store bound of bench/dequant_bench (issue 18): Highway vector stores of
// a constant into a float32 output, on the same dynamically dispatched
// target set as the dequantization kernels (dequant/simd_kernels.cc), with
// the same store policy (non-temporal for outputs of kStreamOutputBytes or
// more). A kernel cannot write its output faster than this loop does.
#ifndef HURRAY_BENCH_STORE_ONLY_H_
#define HURRAY_BENCH_STORE_ONLY_H_

#include <cstddef>

namespace hurray::bench {

// out[0, n) = value; non-temporal stores (then a fence) when `stream`.
void StoreConstant(float* out, size_t n, float value, bool stream);

// The Highway target StoreConstant runs on ("AVX2", "AVX3_DL", ...).
const char* StoreOnlyTargetName();

}  // namespace hurray::bench

#endif  // HURRAY_BENCH_STORE_ONLY_H_
