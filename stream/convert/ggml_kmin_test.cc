// The Q4_K / Q5_K / Q2_K rewrite's vector path (AVX2, what
// RewriteKMinBlocks runs where the CPU has it) against its scalar code, in
// both forms: the same codes, scales, zero points, block count and reason,
// and error sums within float32 rounding of the scalar's float64 ones, on
// random blocks, a zero d1 (with m1 ≠ 0, and with both zero and signed
// zeros) at every sub-block position, negative and subnormal d and dmin,
// zero points that force a coarser step or a refusal at every position,
// and non-finite d and dmin (issue 48); and either path, on any host,
// within the bound of ggml's values (GgmlKMinValues).
#include "stream/convert/ggml_kmin.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace hurray::stream::convert {
namespace {

constexpr uint16_t kHalfs[] = {
    0x211F,  // 0.01
    0xA11F,  // -0.01
    0x1D1F,  // 0.005
    0x3800,  // 0.5
    0x0001,  // the smallest subnormal
    0x03FF,  // the largest subnormal
    0x8005,  // a negative subnormal
    0x0000, 0x8000,
};

uint32_t DOffset(KMinType type) { return type == KMinType::kQ2_K ? 80 : 0; }

void SetHalf(uint16_t h, uint8_t* at) {
  at[0] = static_cast<uint8_t>(h);
  at[1] = static_cast<uint8_t>(h >> 8);
}

void SetD(KMinType type, uint16_t d, uint16_t dmin, uint8_t* block) {
  SetHalf(d, block + DOffset(type));
  SetHalf(dmin, block + DOffset(type) + 2);
}

// Sub-block j's scale sc and minimum m (6 bits; Q2_K: 4), packed as ggml's
// get_scale_min_k4 reads them (Q2_K: scales[j] = sc | m << 4).
void SetScaleMin(KMinType type, uint32_t j, uint8_t sc, uint8_t m,
                 uint8_t* block) {
  if (type == KMinType::kQ2_K) {
    block[j] = static_cast<uint8_t>(sc | (m << 4));
    return;
  }
  uint8_t* q = block + 4;
  if (j < 4) {
    q[j] = static_cast<uint8_t>((q[j] & 0xC0) | sc);
    q[j + 4] = static_cast<uint8_t>((q[j + 4] & 0xC0) | m);
  } else {
    q[j + 4] = static_cast<uint8_t>((sc & 0xF) | ((m & 0xF) << 4));
    q[j - 4] = static_cast<uint8_t>((q[j - 4] & 0x3F) | ((sc >> 4) << 6));
    q[j] = static_cast<uint8_t>((q[j] & 0x3F) | ((m >> 4) << 6));
  }
}

// Random blocks whose sub-blocks all take the finest step: scales in the
// upper half of their range, d = 0.01, dmin = 0.005 (m1 / d1 at most 1),
// in every third block −0.005 when `negative` (the compact form refuses
// most negative zero points: no room for them in the codes).
std::vector<uint8_t> TypicalBlocks(KMinType type, size_t n, std::mt19937* rng,
                                   bool negative = false) {
  const uint32_t bytes = KMinSourceBytes(type);
  std::vector<uint8_t> raw(n * bytes);
  for (uint8_t& b : raw) b = static_cast<uint8_t>((*rng)());
  const bool q2 = type == KMinType::kQ2_K;
  for (size_t i = 0; i < n; ++i) {
    uint8_t* block = raw.data() + i * bytes;
    for (uint32_t j = 0; j < KMinSubBlocks(type); ++j) {
      const uint32_t r = (*rng)();
      SetScaleMin(type, j, static_cast<uint8_t>(q2 ? 8 + r % 8 : 32 + r % 32),
                  static_cast<uint8_t>((r >> 8) % (q2 ? 16 : 64)), block);
    }
    SetD(type, 0x211F, negative && i % 3 == 0 ? 0x9D1F : 0x1D1F, block);
  }
  return raw;
}

struct PathRun {
  uint64_t done = 0;
  std::string why;
  std::vector<uint8_t> codes, scales, zero_points, zero_bytes;
  KMinError error;
};

// Which outputs a call asks for.
enum class Ask { kAll, kCodesOnly, kErrorAndScales, kZeroPointsOnly };

PathRun RunPath(bool vector, KMinType type, bool compact, const uint8_t* in,
                uint64_t n, Ask ask) {
  PathRun r;
  const uint32_t subs = KMinSubBlocks(type);
  r.codes.assign(n * KMinCodeBytes(type, compact), 0xEE);
  r.scales.assign(n * subs * 4, 0xEE);
  r.zero_points.assign(n * subs * 4, 0xEE);
  r.zero_bytes.assign(n * subs, 0xEE);
  KMinOutput out;
  if (ask == Ask::kAll || ask == Ask::kCodesOnly) out.codes = r.codes.data();
  if (ask == Ask::kAll || ask == Ask::kErrorAndScales) {
    out.scales = r.scales.data();
    out.zero_bytes = r.zero_bytes.data();
  }
  if (ask == Ask::kAll || ask == Ask::kZeroPointsOnly)
    out.zero_points = r.zero_points.data();
  const bool error = ask == Ask::kAll || ask == Ask::kErrorAndScales;
  r.done = RewriteKMinBlocksPath(vector, type, compact, in, n, out,
                                 error ? &r.error : nullptr, &r.why);
  return r;
}

// The two paths on blocks [0, n): the same outputs for the blocks done.
// With `errors` (the call refused nothing), their error sums too.
void ExpectSameRun(KMinType type, bool compact, const uint8_t* in, uint64_t n,
                   Ask ask, uint64_t* done) {
  const PathRun v = RunPath(true, type, compact, in, n, ask);
  const PathRun s = RunPath(false, type, compact, in, n, ask);
  ASSERT_EQ(v.done, s.done);
  EXPECT_EQ(v.why, s.why);
  *done = v.done;
  const uint32_t subs = KMinSubBlocks(type);
  const uint64_t k = v.done;
  // Bytes of a refused block and past it are unspecified.
  EXPECT_EQ(0, std::memcmp(v.codes.data(), s.codes.data(),
                           k * KMinCodeBytes(type, compact)));
  EXPECT_EQ(0, std::memcmp(v.scales.data(), s.scales.data(), k * subs * 4));
  EXPECT_EQ(
      0, std::memcmp(v.zero_points.data(), s.zero_points.data(), k * subs * 4));
  EXPECT_EQ(0, std::memcmp(v.zero_bytes.data(), s.zero_bytes.data(), k * subs));
  if (v.done != n) return;  // the error of a refused call is unspecified
  EXPECT_EQ(v.error.count, s.error.count);
  EXPECT_EQ(v.error.min_step_bits, s.error.min_step_bits);
  // A float32 difference: within 2^-24 of the float64 one.
  EXPECT_NEAR(v.error.max_abs, s.error.max_abs,
              std::ldexp(s.error.max_abs, -23));
  // Squares summed in float32 over at most 32 elements: each sum within
  // 32·2^-24 of its value.
  EXPECT_NEAR(v.error.sum_sq, s.error.sum_sq, std::ldexp(s.error.sum_sq, -18));
}

// All of `raw` through both paths, a segment at a time: after a refused
// block, again from the next one; each segment refused nothing is run
// again for its error sums. Returns the number of refusals.
int ExpectSame(KMinType type, bool compact, const std::vector<uint8_t>& raw) {
  const uint32_t bytes = KMinSourceBytes(type);
  const uint64_t n = raw.size() / bytes;
  int refused = 0;
  for (Ask ask : {Ask::kAll, Ask::kCodesOnly, Ask::kErrorAndScales,
                  Ask::kZeroPointsOnly}) {
    refused = 0;
    for (uint64_t start = 0; start < n;) {
      uint64_t done = 0;
      ExpectSameRun(type, compact, raw.data() + start * bytes, n - start, ask,
                    &done);
      if (::testing::Test::HasFatalFailure()) return refused;
      if (done < n - start) {
        ++refused;
        if (done > 0) {
          uint64_t again = 0;
          ExpectSameRun(type, compact, raw.data() + start * bytes, done, ask,
                        &again);
        }
      }
      start += done + 1;
    }
  }
  return refused;
}

struct Case {
  KMinType type;
  bool compact;
};

class KMinVector : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    if (!KMinHasVectorPath()) GTEST_SKIP() << "no AVX2, FMA and F16C here";
  }
  KMinType type() const { return GetParam().type; }
  bool compact() const { return GetParam().compact; }
  std::mt19937 rng_{48};
};

TEST_P(KMinVector, TypicalBlocksTakeTheFinestStep) {
  const std::vector<uint8_t> raw =
      TypicalBlocks(type(), 300, &rng_, /*negative=*/!compact());
  EXPECT_EQ(ExpectSame(type(), compact(), raw), 0);
  KMinError e;
  std::string why;
  EXPECT_EQ(RewriteKMinBlocks(type(), compact(), raw.data(), 300, {}, &e, &why),
            300u);
  EXPECT_GT(e.sum_sq, 0);
  EXPECT_GT(e.max_abs, 0);
}

TEST_P(KMinVector, RandomBlocksAndHalves) {
  const uint32_t bytes = KMinSourceBytes(type());
  std::vector<uint8_t> raw(2000 * bytes);
  for (uint8_t& b : raw) b = static_cast<uint8_t>(rng_());
  for (size_t i = 0; i < 2000; ++i) {
    SetD(type(), kHalfs[rng_() % std::size(kHalfs)],
         kHalfs[rng_() % std::size(kHalfs)], raw.data() + i * bytes);
  }
  // Many refusals (random scales and minimums), and many blocks kept.
  const int refused = ExpectSame(type(), compact(), raw);
  EXPECT_LT(refused, 1900);
}

// Sub-block j alone outside the common case, at every position j, in
// otherwise typical blocks.
TEST_P(KMinVector, EverySubBlockPosition) {
  const uint32_t subs = KMinSubBlocks(type());
  const uint32_t bytes = KMinSourceBytes(type());
  const uint8_t top = type() == KMinType::kQ2_K ? 15 : 63;
  struct Special {
    uint8_t sc, m;
    uint16_t d, dmin;
  };
  const Special specials[] = {
      {0, 5, 0x211F, 0x1D1F},    // d1 = 0, m1 ≠ 0
      {0, 5, 0x211F, 0x9D1F},    // d1 = 0, m1 < 0
      {0, 0, 0xA11F, 0x1D1F},    // d1 = −0, m1 = +0: ggml's −0
      {0, 0, 0x211F, 0x9D1F},    // d1 = +0, m1 = −0
      {1, top, 0x211F, 0x211F},  // m1 / d1 = top: a coarser step
      {1, top, 0x211F, 0xA11F},  // negative: into the codes, coarser
      {1, top, 0x211F, 0x3800},  // m1 / d1 = 50·top: refused
      {1, top, 0x0001, 0x0001},  // subnormal d and dmin
      {2, 3, 0x8005, 0x0003},    // negative subnormal d
  };
  for (const Special& sp : specials) {
    for (uint32_t j = 0; j < subs; ++j) {
      std::vector<uint8_t> raw = TypicalBlocks(type(), 8, &rng_);
      for (size_t i = 0; i < 8; ++i) {
        uint8_t* block = raw.data() + i * bytes;
        if (i % 2 == 1) {
          // The other sub-blocks keep their step with these d and dmin.
          for (uint32_t o = 0; o < subs; ++o)
            SetScaleMin(type(), o, top, 0, block);
          SetD(type(), sp.d, sp.dmin, block);
        }
        SetScaleMin(type(), j, sp.sc, sp.m, block);
      }
      SCOPED_TRACE(::testing::Message()
                   << "sub-block " << j << " sc " << +sp.sc << " m " << +sp.m
                   << " d " << sp.d << " dmin " << sp.dmin);
      ExpectSame(type(), compact(), raw);
      if (HasFatalFailure()) return;
    }
  }
}

TEST_P(KMinVector, NonFiniteDOrDminRefusedWithTheScalarReason) {
  const uint32_t bytes = KMinSourceBytes(type());
  for (uint16_t bad : {0x7C00, 0xFC00, 0x7E00}) {
    for (int which = 0; which < 2; ++which) {
      std::vector<uint8_t> raw = TypicalBlocks(type(), 5, &rng_);
      SetHalf(bad, raw.data() + 3 * bytes + DOffset(type()) + 2 * which);
      const PathRun v =
          RunPath(true, type(), compact(), raw.data(), 5, Ask::kAll);
      EXPECT_EQ(v.done, 3u);
      EXPECT_NE(v.why.find(which == 0 ? "super-block d " : "dmin"),
                std::string::npos)
          << v.why;
      ExpectSame(type(), compact(), raw);
    }
  }
}

// Either path on any host (the vector one where the CPU has it): the
// codes, scales and zero points dequantize to within the bound of ggml's
// values (GgmlKMinValues), and the error reported is the error measured
// here (the scalar path's exactly, the vector path's within float32
// rounding).
class KMinPaths : public ::testing::TestWithParam<Case> {};

TEST_P(KMinPaths, WithinTheBoundOfGgmlsValues) {
  const KMinType type = GetParam().type;
  const bool compact = GetParam().compact;
  std::mt19937 rng(7);
  const std::vector<uint8_t> raw = TypicalBlocks(type, 50, &rng);
  const uint32_t bits = KMinCodeBits(type, compact);
  const int k = bits == 8 ? 8 - (type == KMinType::kQ4_K   ? 4
                                 : type == KMinType::kQ5_K ? 5
                                                           : 2)
                          : 0;
  const uint32_t sub = KMinSubBlock(type);
  for (bool vector : {false, true}) {
    if (vector && !KMinHasVectorPath()) continue;
    const PathRun r = RunPath(vector, type, compact, raw.data(), 50, Ask::kAll);
    ASSERT_EQ(r.done, 50u) << r.why;
    double max_abs = 0, sum_sq = 0;
    for (size_t i = 0; i < 50; ++i) {
      float y[256];
      std::string why;
      ASSERT_TRUE(GgmlKMinValues(type, raw.data() + i * KMinSourceBytes(type),
                                 y, &why));
      for (uint32_t e = 0; e < 256; ++e) {
        const size_t b = i * KMinSubBlocks(type) + e / sub;
        const size_t at = i * 256 + e;
        const uint32_t c =
            (r.codes[at * bits / 8] >> (bits * (at % (8 / bits)))) &
            ((1u << bits) - 1);
        float scale;
        int32_t zero;
        std::memcpy(&scale, &r.scales[4 * b], 4);
        std::memcpy(&zero, &r.zero_points[4 * b], 4);
        EXPECT_EQ(r.zero_bytes[b], zero);
        const float ours =
            static_cast<float>(static_cast<int32_t>(c) - zero) * scale;
        const double err = std::fabs(static_cast<double>(ours) - y[e]);
        // Half of ours's step d1 / 2^k, and a float32 rounding of each side.
        const double bound = std::ldexp(std::fabs(scale), -1) +
                             std::ldexp(std::fabs(ours) + std::fabs(y[e]), -23);
        EXPECT_LE(err, bound) << "element " << at;
        max_abs = std::max(max_abs, err);
        sum_sq += err * err;
      }
    }
    EXPECT_EQ(r.error.count, 50u * 256);
    EXPECT_EQ(r.error.min_step_bits, k);
    if (vector) {
      EXPECT_NEAR(r.error.max_abs, max_abs, std::ldexp(max_abs, -23));
      EXPECT_NEAR(r.error.sum_sq, sum_sq, std::ldexp(sum_sq, -18));
    } else {
      EXPECT_EQ(r.error.max_abs, max_abs);
      EXPECT_NEAR(r.error.sum_sq, sum_sq, std::ldexp(sum_sq, -40));
    }
  }
}

// Every type in both forms, named "Q4_K", "Q4_K_compact", ...
const Case kAllCases[] = {{KMinType::kQ4_K, false}, {KMinType::kQ4_K, true},
                          {KMinType::kQ5_K, false}, {KMinType::kQ5_K, true},
                          {KMinType::kQ2_K, false}, {KMinType::kQ2_K, true}};

std::string CaseName(const ::testing::TestParamInfo<Case>& info) {
  const char* name = info.param.type == KMinType::kQ4_K   ? "Q4_K"
                     : info.param.type == KMinType::kQ5_K ? "Q5_K"
                                                          : "Q2_K";
  return std::string(name) + (info.param.compact ? "_compact" : "");
}

INSTANTIATE_TEST_SUITE_P(Types, KMinPaths, ::testing::ValuesIn(kAllCases),
                         CaseName);

INSTANTIATE_TEST_SUITE_P(Types, KMinVector, ::testing::ValuesIn(kAllCases),
                         CaseName);

}  // namespace
}  // namespace hurray::stream::convert
