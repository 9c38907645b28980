// RewriteKMinBlocks (stream/convert/ggml_kmin.h) on its AVX2 path against
// its scalar path, in the same rounds (issue 48): 8 MiB of source blocks
// (a convert chunk) of bench/make_kquant_gguf.py's kind (random codes,
// scales in the upper half of their range, d = 0.01, dmin = 0.005: every
// sub-block on the finest step), codes, scales, zero bytes and the error
// sums asked for, as convert's codes pass does (with `noerror`, the error
// sums left out). Prints per case the median
// [range] of ns per block of 256 of each path and of the per-round ratio
// scalar / vector; the order of the two alternates by round.
//
//   bazel run -c opt //bench:kmin_bench -- [ROUNDS [noerror]]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "bench/paired_rounds.h"
#include "stream/convert/ggml_kmin.h"

namespace hurray::bench {
namespace {

using stream::convert::KMinCodeBytes;
using stream::convert::KMinError;
using stream::convert::KMinOutput;
using stream::convert::KMinSourceBytes;
using stream::convert::KMinSubBlocks;
using stream::convert::KMinType;

std::vector<uint8_t> Blocks(KMinType type, size_t n) {
  const uint32_t bytes = KMinSourceBytes(type);
  std::vector<uint8_t> raw(n * bytes);
  std::mt19937 rng(1);
  for (uint8_t& b : raw) b = static_cast<uint8_t>(rng());
  for (size_t i = 0; i < n; ++i) {
    uint8_t* x = raw.data() + i * bytes;
    if (type == KMinType::kQ2_K) {
      for (int j = 0; j < 16; ++j) x[j] = (x[j] & 0xF0) | 0x08 | (x[j] & 0x07);
      x[80] = 0x1F, x[81] = 0x21, x[82] = 0x1F, x[83] = 0x1D;
    } else {
      for (int j = 0; j < 4; ++j)
        x[4 + j] = (x[4 + j] & 0xC0) | 0x10 | (x[4 + j] & 0x2F) | 0x40;
      x[0] = 0x1F, x[1] = 0x21, x[2] = 0x1F, x[3] = 0x1D;
    }
  }
  return raw;
}

// ns per block of one pass.
double Pass(bool vector, bool with_error, KMinType type, bool compact,
            const std::vector<uint8_t>& raw, std::vector<uint8_t>* codes,
            std::vector<uint8_t>* scales, std::vector<uint8_t>* zeros) {
  const uint64_t n = raw.size() / KMinSourceBytes(type);
  KMinOutput out;
  out.codes = codes->data();
  out.scales = scales->data();
  out.zero_bytes = zeros->data();
  KMinError error;
  std::string why;
  const auto t0 = std::chrono::steady_clock::now();
  const uint64_t done = stream::convert::RewriteKMinBlocksPath(
      vector, type, compact, raw.data(), n, out, with_error ? &error : nullptr,
      &why);
  const auto t1 = std::chrono::steady_clock::now();
  if (done != n) {
    std::fprintf(stderr, "refused: %s\n", why.c_str());
    std::exit(1);
  }
  return std::chrono::duration<double, std::nano>(t1 - t0).count() /
         static_cast<double>(n);
}

void Case(const char* name, KMinType type, bool compact, bool with_error,
          int rounds) {
  const size_t n = (size_t{8} << 20) / KMinSourceBytes(type);
  const std::vector<uint8_t> raw = Blocks(type, n);
  std::vector<uint8_t> codes(n * KMinCodeBytes(type, compact));
  std::vector<uint8_t> scales(n * KMinSubBlocks(type) * 4);
  std::vector<uint8_t> zeros(n * KMinSubBlocks(type));
  std::vector<double> vec, sca, ratio;
  for (int r = 0; r < rounds; ++r) {
    double t[2];
    for (int k = 0; k < 2; ++k) {
      const bool vector = (k + r) % 2 == 0;
      t[vector ? 0 : 1] =
          Pass(vector, with_error, type, compact, raw, &codes, &scales, &zeros);
    }
    vec.push_back(t[0]);
    sca.push_back(t[1]);
    ratio.push_back(t[1] / t[0]);
  }
  auto range = [](std::vector<double> v) {
    return std::make_pair(*std::min_element(v.begin(), v.end()),
                          *std::max_element(v.begin(), v.end()));
  };
  const auto [vl, vh] = range(vec);
  const auto [sl, sh] = range(sca);
  const auto [rl, rh] = range(ratio);
  std::printf(
      "%-12s vector %6.1f ns/block [%.1f, %.1f]  scalar %6.1f [%.1f, %.1f]  "
      "scalar / vector %5.2f [%.2f, %.2f]\n",
      name, Median(vec), vl, vh, Median(sca), sl, sh, Median(ratio), rl, rh);
}

}  // namespace
}  // namespace hurray::bench

int main(int argc, char** argv) {
  using hurray::stream::convert::KMinType;
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 15;
  const bool e = !(argc > 2 && std::string(argv[2]) == "noerror");
  if (!hurray::stream::convert::KMinHasVectorPath())
    std::printf("no AVX2 / FMA / F16C: both passes are the scalar code\n");
  hurray::bench::Case("Q4_K", KMinType::kQ4_K, false, e, rounds);
  hurray::bench::Case("Q4_K compact", KMinType::kQ4_K, true, e, rounds);
  hurray::bench::Case("Q5_K", KMinType::kQ5_K, false, e, rounds);
  hurray::bench::Case("Q2_K", KMinType::kQ2_K, false, e, rounds);
  hurray::bench::Case("Q2_K compact", KMinType::kQ2_K, true, e, rounds);
  return 0;
}
