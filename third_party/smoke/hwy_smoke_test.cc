// Highway smoke test: runtime dispatch over all compiled targets (no
// -march=native), plus hwy::SupportedTargets().

#include <cstddef>
#include <cstdint>
#include <numeric>
#include <vector>

// Also compile the AVX3_DL (Icelake) target when dispatching.
#ifndef HWY_WANT_AVX3_DL
#define HWY_WANT_AVX3_DL 1
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "third_party/smoke/hwy_smoke_test.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace hurray::smoke::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

uint64_t SumU32(const uint32_t* HWY_RESTRICT in, size_t n) {
  const hn::ScalableTag<uint32_t> d;
  const size_t lanes = hn::Lanes(d);
  auto acc = hn::Zero(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) acc = hn::Add(acc, hn::LoadU(d, in + i));
  uint64_t sum = hn::GetLane(hn::SumOfLanes(d, acc));
  for (; i < n; ++i) sum += in[i];
  return sum;
}

}  // namespace hurray::smoke::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <cstdio>

#include "gtest/gtest.h"
#include "hwy/targets.h"

namespace hurray::smoke {
HWY_EXPORT(SumU32);

namespace {

TEST(HwySmoke, SupportedTargets) {
  const int64_t targets = hwy::SupportedTargets();
  EXPECT_NE(targets, 0);
  std::printf("hwy supported targets:");
  for (int64_t t : hwy::SupportedAndGeneratedTargets()) {
    std::printf(" %s", hwy::TargetName(t));
  }
  std::printf("\n");
}

TEST(HwySmoke, DynamicDispatch) {
  std::vector<uint32_t> v(1001);
  std::iota(v.begin(), v.end(), 1u);
  EXPECT_EQ(HWY_DYNAMIC_DISPATCH(SumU32)(v.data(), v.size()),
            1001u * 1002u / 2);
}

}  // namespace
}  // namespace hurray::smoke
#endif  // HWY_ONCE
