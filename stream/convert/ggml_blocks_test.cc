// The Q6_K rewrite's vector path (AVX2, what RewriteBlocks runs) against
// its scalar fallback: the same codes, scales, block index and reason on
// random blocks, a zero scale at every sub-block position, negative,
// subnormal, zero and non-finite d (issue 48).
#include "stream/convert/ggml_blocks.h"

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace hurray::stream::convert {
namespace {

constexpr size_t kScaleBytes = 4 * (kQK / kKSubBlock);

void SetD(uint16_t d, uint8_t* block) {
  block[208] = static_cast<uint8_t>(d);
  block[209] = static_cast<uint8_t>(d >> 8);
}

// Random codes and sub-block scales (never 0) with d = `d`.
std::vector<uint8_t> RandomBlocks(size_t n, uint16_t d, std::mt19937* rng) {
  std::vector<uint8_t> raw(n * kQ6_KBytes);
  for (uint8_t& b : raw) b = static_cast<uint8_t>((*rng)());
  for (size_t i = 0; i < n; ++i) {
    uint8_t* block = raw.data() + i * kQ6_KBytes;
    for (uint32_t j = 0; j < 16; ++j)
      if (block[192 + j] == 0) block[192 + j] = 1;
    SetD(d, block);
  }
  return raw;
}

struct Result {
  uint64_t done = 0;
  std::vector<uint8_t> codes, scales;
  std::string why;
};

Result RunPath(bool vector, const std::vector<uint8_t>& raw, bool with_codes) {
  const uint64_t n = raw.size() / kQ6_KBytes;
  Result r;
  r.codes.assign(n * kQK, 0xEE);
  r.scales.assign(n * kScaleBytes, 0xEE);
  r.done = RewriteQ6_KBlocks(vector, raw.data(), n,
                             with_codes ? r.codes.data() : nullptr,
                             r.scales.data(), &r.why);
  return r;
}

// Both paths, with and without codes; returns the vector path's result.
Result ExpectSame(const std::vector<uint8_t>& raw) {
  Result vec;
  for (bool with_codes : {true, false}) {
    vec = RunPath(true, raw, with_codes);
    const Result scalar = RunPath(false, raw, with_codes);
    EXPECT_EQ(vec.done, scalar.done);
    EXPECT_EQ(vec.why, scalar.why);
    // Bytes past a refused block are unspecified; those before it are not.
    const uint64_t ok = vec.done;
    EXPECT_EQ(0, std::memcmp(vec.codes.data(), scalar.codes.data(), ok * kQK));
    EXPECT_EQ(0, std::memcmp(vec.scales.data(), scalar.scales.data(),
                             ok * kScaleBytes));
  }
  return RunPath(true, raw, true);
}

class Q6KVectorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!Q6_KHasVectorPath()) GTEST_SKIP() << "no AVX2 on this CPU";
  }
  std::mt19937 rng_{48};
};

TEST_F(Q6KVectorTest, RandomBlocks) {
  // Positive, negative, subnormal (both signs), the largest finite, the
  // smallest normal float16 d.
  for (uint16_t d : {0x2C00, 0xAC00, 0x0001, 0x8001, 0x03FF, 0x7BFF, 0x0400}) {
    SCOPED_TRACE(d);
    const std::vector<uint8_t> raw = RandomBlocks(64, d, &rng_);
    const Result r = ExpectSame(raw);
    EXPECT_EQ(r.done, 64u);
  }
}

TEST_F(Q6KVectorTest, EveryFloat16D) {
  // One block for each of the 65536 float16 values of d (F16C's conversion
  // against F16ToF32's), the non-finite ones refused alike.
  std::vector<uint8_t> raw = RandomBlocks(1, 0x3C00, &rng_);
  for (uint32_t d = 0; d < 0x10000; ++d) {
    SetD(static_cast<uint16_t>(d), raw.data());
    const uint64_t done[2] = {RunPath(true, raw, true).done,
                              RunPath(false, raw, true).done};
    ASSERT_EQ(done[0], done[1]) << d;
    if (done[0] == 0) continue;
    ASSERT_TRUE(RunPath(true, raw, true).scales ==
                RunPath(false, raw, true).scales)
        << d;
  }
}

TEST_F(Q6KVectorTest, CodesAndScalesAreGgmls) {
  // The vector path checked against ggml's layout directly too (element
  // 128h + 32k + l), not only against the scalar code.
  const std::vector<uint8_t> raw = RandomBlocks(8, 0xB555, &rng_);
  const Result r = ExpectSame(raw);
  ASSERT_EQ(r.done, 8u);
  for (size_t i = 0; i < 8; ++i) {
    const uint8_t* x = raw.data() + i * kQ6_KBytes;
    for (uint32_t e = 0; e < kQK; ++e) {
      const uint32_t h = e / 128, k = (e % 128) / 32, l = e % 32;
      const uint8_t lo = x[64 * h + 32 * (k & 1) + l];
      const int q = (((k < 2 ? lo : lo >> 4) & 0x0F) |
                     (((x[128 + 32 * h + l] >> (2 * k)) & 3) << 4)) -
                    32;
      ASSERT_EQ(static_cast<int8_t>(r.codes[i * kQK + e]), q) << i << " " << e;
    }
    for (uint32_t j = 0; j < 16; ++j) {
      float s;
      std::memcpy(&s, &r.scales[i * kScaleBytes + 4 * j], 4);
      // 0xB555 is -0.33325195 (float16).
      EXPECT_EQ(s, -0.33325195f *
                       static_cast<float>(static_cast<int8_t>(x[192 + j])));
    }
  }
}

TEST_F(Q6KVectorTest, ZeroScaleAtEverySubBlock) {
  for (uint32_t j = 0; j < 16; ++j) {
    SCOPED_TRACE(j);
    // Same-sign zeros: kept (scale ±1, codes 0); both signs: refused.
    std::vector<uint8_t> raw = RandomBlocks(4, 0x3C00, &rng_);
    uint8_t* block = raw.data() + 2 * kQ6_KBytes;
    block[192 + j] = 0;
    // Sub-block j's codes all q − 32 ≥ 0 (bit 5 of q set: qh bits 2k+1).
    for (uint32_t e = 16 * j; e < 16 * j + 16; ++e) {
      const uint32_t h = e / 128, k = (e % 128) / 32, l = e % 32;
      block[128 + 32 * h + l] |= static_cast<uint8_t>(2u << (2 * k));
    }
    Result r = ExpectSame(raw);
    EXPECT_EQ(r.done, 4u);
    float s;
    std::memcpy(&s, &r.scales[2 * kScaleBytes + 4 * j], 4);
    EXPECT_EQ(s, 1.0f);
    // One code below 0 (q < 32: bit 5 clear) in the same sub-block.
    const uint32_t e = 16 * j + 5, h = e / 128, k = (e % 128) / 32, l = e % 32;
    block[128 + 32 * h + l] &= static_cast<uint8_t>(~(2u << (2 * k)));
    r = ExpectSame(raw);
    EXPECT_EQ(r.done, 2u);
    EXPECT_NE(r.why.find("sub-block " + std::to_string(j)), std::string::npos)
        << r.why;
  }
}

TEST_F(Q6KVectorTest, ZeroAndNonFiniteD) {
  for (uint16_t d : {0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E00}) {
    SCOPED_TRACE(d);
    std::vector<uint8_t> raw = RandomBlocks(5, 0x3800, &rng_);
    uint8_t* block = raw.data() + 3 * kQ6_KBytes;
    SetD(d, block);
    // Every code of block 3 at 0 (q = 32): zeros of one sign.
    std::memset(block, 0, 128);
    std::memset(block + 128, 0xAA, 64);
    const Result r = ExpectSame(raw);
    EXPECT_EQ(r.done, (d & 0x7C00) == 0x7C00 ? 3u : 5u) << r.why;
  }
}

}  // namespace
}  // namespace hurray::stream::convert
