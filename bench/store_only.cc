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
#endif

HWY_BEFORE_NAMESPACE();
namespace hurray::bench {
namespace HWY_NAMESPACE {

namespace hn = hwy::HWY_NAMESPACE;

void StoreConstantImpl(float* out, size_t n, float value, bool stream) {
  const hn::ScalableTag<float> df;
  const size_t N = hn::Lanes(df);
  const auto v = hn::Set(df, value);
  size_t i = 0;
  if (stream) {
    for (; i < n && reinterpret_cast<uintptr_t>(out + i) % (N * 4) != 0; ++i) {
      out[i] = value;
    }
    for (; i + N <= n; i += N) hn::Stream(v, df, out + i);
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

const char* TargetNameImpl() { return hwy::TargetName(HWY_TARGET); }

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace hurray::bench
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace hurray::bench {

HWY_EXPORT(StoreConstantImpl);
HWY_EXPORT(TargetNameImpl);

void StoreConstant(float* out, size_t n, float value, bool stream) {
  HWY_DYNAMIC_DISPATCH(StoreConstantImpl)(out, n, value, stream);
}

const char* StoreOnlyTargetName() {
  return HWY_DYNAMIC_DISPATCH(TargetNameImpl)();
}

}  // namespace hurray::bench
#endif  // HWY_ONCE
