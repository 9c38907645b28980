#include "stream/convert/ggml_kmin.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

#include "stream/convert/ggml_kmin_avx2.h"
#include "stream/convert/ggml_kmin_parts.h"

// Built with -ffp-contract=off (BUILD.bazel): ggml's d1·q − m1 is two
// roundings, which a fused multiply-add would make one.

namespace hurray::stream::convert {
namespace {

using kmin_internal::Bits;
using kmin_internal::Choose;
using kmin_internal::Header;
using kmin_internal::Sub;
using kmin_internal::SubCodes;

constexpr uint32_t kQK = 256;

void Put32(uint32_t v, uint8_t* out) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<uint8_t>(v >> (8 * i));
}
void PutF32(float f, uint8_t* out) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  Put32(bits, out);
}

// Lanes of the error sums, one per position in a sub-block (element-wise
// updates the compiler vectorizes, unlike one running sum).
struct ErrorLanes {
  double max[32] = {}, sum_sq[32] = {};
};

// Codes of one sub-block of kSub and, with `lanes`, their error against
// ggml's (d1·q) − m1.
template <uint32_t kSub>
void SubBlock(const uint8_t* q, const Sub& s, float d1, float m1, uint32_t bits,
              uint8_t* codes, ErrorLanes* lanes) {
  // c = 2^k·q + add (all 0 when d1 = 0), within 0..255 by Choose.
  const bool zero = d1 == 0.0f;
  const uint8_t add = static_cast<uint8_t>(s.add);
  if (codes != nullptr) {
    if (zero) {
      std::memset(codes, 0, kSub * bits / 8);
    } else if (bits == 8) {
      for (uint32_t l = 0; l < kSub; ++l)
        codes[l] = static_cast<uint8_t>((q[l] << s.k) + add);
    } else {
      // element-types.md § 4-bit and 2-bit packing: element i of a byte in
      // bits bits·i and up.
      const uint32_t per = 8 / bits;
      for (uint32_t l = 0; l < kSub / per; ++l) {
        uint32_t b = 0;
        for (uint32_t t = 0; t < per; ++t)
          b |= ((q[per * l + t] << s.k) + add) << (bits * t);
        codes[l] = static_cast<uint8_t>(b);
      }
    }
  }
  if (lanes == nullptr) return;
  // c − zero = 2^k·q + (add − zero): small integers, exact in float32, so
  // `ours` is the one rounding of (c − zero)·scale.
  const float step = zero ? 0.0f : static_cast<float>(1 << s.k);
  const float offset = static_cast<float>((zero ? 0 : s.add) - s.zero);
  for (uint32_t l = 0; l < kSub; ++l) {
    const float ggml = d1 * static_cast<float>(q[l]) - m1;
    const float ours = (static_cast<float>(q[l]) * step + offset) * s.scale;
    const double e =
        std::fabs(static_cast<double>(ours) - static_cast<double>(ggml));
    lanes->max[l] = lanes->max[l] < e ? e : lanes->max[l];
    lanes->sum_sq[l] += e * e;
  }
}

}  // namespace

uint32_t KMinSourceBytes(KMinType type) {
  return type == KMinType::kQ4_K ? 144 : type == KMinType::kQ5_K ? 176 : 84;
}
uint32_t KMinSubBlock(KMinType type) {
  return type == KMinType::kQ2_K ? 16 : 32;
}
uint32_t KMinSubBlocks(KMinType type) { return kQK / KMinSubBlock(type); }
uint32_t KMinCodeBits(KMinType type, bool compact) {
  return !compact || type == KMinType::kQ5_K ? 8 : Bits(type);
}

bool GgmlKMinValues(KMinType type, const uint8_t* in, float* y,
                    std::string* why) {
  float d1[16], m1[16];
  if (!Header(type, in, d1, m1, why)) return false;
  const uint32_t sub = KMinSubBlock(type);
  uint8_t q[32];
  for (uint32_t j = 0; j < KMinSubBlocks(type); ++j) {
    SubCodes(type, in, j, q);
    for (uint32_t l = 0; l < sub; ++l)
      y[sub * j + l] = d1[j] * static_cast<float>(q[l]) - m1[j];
  }
  return true;
}

namespace {

// RewriteKMinBlocks for any CPU, and the reference of the AVX2 code
// (ggml_kmin_avx2.cc): a sub-block at a time, each element's error in
// float64. -ffp-contract=off keeps ggml's two roundings.
uint64_t Rewrite(KMinType type, bool compact, const uint8_t* in, uint64_t n,
                 const KMinOutput& out, KMinError* error, std::string* why) {
  const uint32_t sub = KMinSubBlock(type), subs = KMinSubBlocks(type);
  const uint32_t bits = KMinCodeBits(type, compact);
  const int finest = bits == 8 ? 8 - static_cast<int>(Bits(type)) : 0;
  const int32_t cmax = (1 << bits) - 1;
  const uint32_t code_bytes = sub * bits / 8;
  const bool need_codes = out.codes != nullptr || error != nullptr;
  std::unique_ptr<ErrorLanes> lanes;
  if (error != nullptr) lanes = std::make_unique<ErrorLanes>();
  int min_k = 8;
  float d1[16] = {}, m1[16] = {};  // Q4_K / Q5_K: 8 of them
  double ratio[16];
  uint8_t q[32];
  uint64_t i = 0;
  for (; i < n; ++i) {
    const uint8_t* block = in + i * KMinSourceBytes(type);
    if (!Header(type, block, d1, m1, why)) break;
    // ±inf or NaN where d1 = 0: Choose does not look at it there.
    for (uint32_t j = 0; j < 16; ++j)
      ratio[j] = static_cast<double>(m1[j]) / static_cast<double>(d1[j]);
    bool ok = true;
    for (uint32_t j = 0; j < subs && ok; ++j) {
      bool decoded = false;
      auto qmax = [&]() -> int {
        SubCodes(type, block, j, q);
        decoded = true;
        return *std::max_element(q, q + sub);
      };
      Sub s;
      if (!Choose(d1[j], m1[j], ratio[j], finest, cmax, qmax, &s)) {
        *why = kmin_internal::RefusalWhy(j, m1[j], d1[j], bits);
        ok = false;
        break;
      }
      const uint32_t b = static_cast<uint32_t>(i * subs + j);
      if (out.scales != nullptr) PutF32(s.scale, out.scales + 4 * b);
      if (out.zero_points != nullptr)
        Put32(static_cast<uint32_t>(s.zero), out.zero_points + 4 * b);
      if (out.zero_bytes != nullptr)
        out.zero_bytes[b] = static_cast<uint8_t>(s.zero);
      if (d1[j] != 0.0f) min_k = std::min(min_k, s.k);
      if (!need_codes) continue;
      if (!decoded) SubCodes(type, block, j, q);
      uint8_t* c =
          out.codes == nullptr ? nullptr : out.codes + uint64_t{b} * code_bytes;
      if (sub == 32) {
        SubBlock<32>(q, s, d1[j], m1[j], bits, c, lanes.get());
      } else {
        SubBlock<16>(q, s, d1[j], m1[j], bits, c, lanes.get());
      }
    }
    if (!ok) break;
  }
  if (error != nullptr) {
    for (uint32_t l = 0; l < sub; ++l) {
      error->max_abs = std::max(error->max_abs, lanes->max[l]);
      error->sum_sq += lanes->sum_sq[l];
    }
    error->count += i * kQK;
    error->min_step_bits = std::min(error->min_step_bits, min_k);
  }
  return i;
}

}  // namespace

uint64_t RewriteKMinBlocksPath(bool vector, KMinType type, bool compact,
                               const uint8_t* in, uint64_t n,
                               const KMinOutput& out, KMinError* error,
                               std::string* why) {
  if (vector && KMinHasVectorPath())
    return kmin_internal::RewriteAvx2(type, compact, in, n, out, error, why);
  return Rewrite(type, compact, in, n, out, error, why);
}

bool KMinHasVectorPath() { return kmin_internal::HasAvx2(); }

uint64_t RewriteKMinBlocks(KMinType type, bool compact, const uint8_t* in,
                           uint64_t n, const KMinOutput& out, KMinError* error,
                           std::string* why) {
  return RewriteKMinBlocksPath(/*vector=*/true, type, compact, in, n, out,
                               error, why);
}

}  // namespace hurray::stream::convert
