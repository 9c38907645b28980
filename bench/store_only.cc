// Highway kernel of bench/store_only.h, compiled per x86 target like
// dequant/simd_kernels.cc.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "bench/store_only.cc"
#ifndef HWY_WANT_AVX3_DL
#define HWY_WANT_AVX3_DL  // the same target set as the dequant kernels
#endif
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// Must come after foreach_target.h.
#include "hwy/highway.h"
// Must come after highway.h.
#include "hwy/cache_control.h"

#ifndef HURRAY_BENCH_STORE_ONLY_ONCE
#define HURRAY_BENCH_STORE_ONLY_ONCE
#include <cstddef>
#include <cstdint>

#include "bench/store_only.h"
#include "dequant/kernels.h"
#endif

HWY_BEFORE_NAMESPACE();
namespace hurray::bench {
namespace HWY_NAMESPACE {

namespace hn = hwy::HWY_NAMESPACE;

// Writes out[0, i) = value up to the first vector-aligned i (at most n),
// where non-temporal stores may start; returns i.
size_t AlignForStream(float* out, size_t n, float value) {
  const size_t align = hn::Lanes(hn::ScalableTag<float>()) * sizeof(float);
  size_t i = 0;
  for (; i < n && reinterpret_cast<uintptr_t>(out + i) % align != 0; ++i) {
    out[i] = value;
  }
  return i;
}

void StoreConstantImpl(float* out, size_t n, float value, bool stream) {
  const hn::ScalableTag<float> df;
  const size_t N = hn::Lanes(df);
  const auto v = hn::Set(df, value);
  size_t i = 0;
  if (stream) {
    i = AlignForStream(out, n, value);
    for (; i + N <= n; i += N) {
      if (dequant::StoresNonTemporal(out + i, N * sizeof(float))) {
        hn::Stream(v, df, out + i);
      } else {
        hn::StoreU(v, df, out + i);
      }
    }
    for (; i < n; ++i) out[i] = value;
    hwy::FlushStream();
    return;
  }
  // Two vectors per iteration, as the dequant kernels' bodies.
  for (; i + 2 * N <= n; i += 2 * N) {
    hn::StoreU(v, df, out + i);
    hn::StoreU(v, df, out + i + N);
  }
  for (; i + N <= n; i += N) hn::StoreU(v, df, out + i);
  for (; i < n; ++i) out[i] = value;
}

template <bool kStream>
uint64_t ReadAndStoreLoop(const uint8_t* in, size_t in_bytes, float* out,
                          size_t n) {
  const hn::ScalableTag<float> df;
  const hn::ScalableTag<uint8_t> du8;
  const size_t N = hn::Lanes(df);
  const size_t V = hn::Lanes(du8);
  const auto v = hn::Set(df, 1.5f);
  auto fold = hn::Zero(du8);
  // As a kernel reads and writes (PrefetchForWrite before each ordinary
  // store): one whole input vector, then the output vectors it covers, n · V /
  // in_bytes of them (kept in 1/2^20 to need no division per step; the last
  // load is clamped inside the input).
  constexpr int kFrac = 20;
  const uint64_t per_load =
      ((static_cast<uint64_t>(n) * V) << kFrac) / in_bytes;
  const size_t last = in_bytes - V;
  uint64_t end = 0;
  size_t off = 0, i = 0;
  while (i + N <= n) {
    fold = hn::Xor(fold, hn::LoadU(du8, in + HWY_MIN(off, last)));
    off += V;
    end += per_load;
    const size_t stop = HWY_MIN(n, static_cast<size_t>(end >> kFrac));
    for (; i + N <= stop; i += N) {
      if (kStream && dequant::StoresNonTemporal(out + i, N * sizeof(float))) {
        hn::Stream(v, df, out + i);
      } else {
        if constexpr (!kStream) dequant::PrefetchForWrite(out + i);
        hn::StoreU(v, df, out + i);
      }
    }
  }
  for (; i < n; ++i) out[i] = 1.5f;
  if constexpr (kStream) hwy::FlushStream();
  HWY_ALIGN uint8_t bytes[hn::MaxLanes(du8)];
  hn::Store(fold, du8, bytes);
  uint64_t folded = 0;
  for (size_t k = 0; k < V; ++k) folded = folded * 31 + bytes[k];
  return folded;
}

uint64_t ReadAndStoreImpl(const uint8_t* in, size_t in_bytes, float* out,
                          size_t n, bool stream) {
  if (n == 0 || in_bytes < 64) return 0;
  if (stream) {
    const size_t i = AlignForStream(out, n, 1.5f);
    return ReadAndStoreLoop<true>(in, in_bytes, out + i, n - i);
  }
  return ReadAndStoreLoop<false>(in, in_bytes, out, n);
}

const char* TargetNameImpl() { return hwy::TargetName(HWY_TARGET); }

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace hurray::bench
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace hurray::bench {

HWY_EXPORT(StoreConstantImpl);
HWY_EXPORT(TargetNameImpl);
HWY_EXPORT(ReadAndStoreImpl);

void StoreConstant(float* out, size_t n, float value, bool stream) {
  HWY_DYNAMIC_DISPATCH(StoreConstantImpl)(out, n, value, stream);
}

uint64_t ReadAndStore(const uint8_t* in, size_t in_bytes, float* out, size_t n,
                      bool stream) {
  return HWY_DYNAMIC_DISPATCH(ReadAndStoreImpl)(in, in_bytes, out, n, stream);
}

const char* StoreOnlyTargetName() {
  return HWY_DYNAMIC_DISPATCH(TargetNameImpl)();
}

}  // namespace hurray::bench
#endif  // HWY_ONCE
