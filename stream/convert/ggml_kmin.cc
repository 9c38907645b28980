#include "stream/convert/ggml_kmin.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"
#include "dequant/minifloat.h"

// Built with -ffp-contract=off (BUILD.bazel): ggml's d1·q − m1 is two
// roundings, which a fused multiply-add would make one.

namespace hurray::stream::convert {
namespace {

constexpr uint32_t kQK = 256;

void Put32(uint32_t v, uint8_t* out) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<uint8_t>(v >> (8 * i));
}
void PutF32(float f, uint8_t* out) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  Put32(bits, out);
}

bool Half(const uint8_t* at, const char* name, float* v, std::string* why) {
  const uint16_t h = static_cast<uint16_t>(at[0] | (at[1] << 8));
  if ((h & 0x7C00) == 0x7C00) {
    *why =
        absl::StrCat("the float16 super-block ", name, " is infinite or NaN");
    return false;
  }
  *v = dequant::F16ToF32(h);
  return true;
}

// ggml's get_scale_min_k4: 6-bit scale and min j of the 12 packed bytes.
void ScaleMinK4(uint32_t j, const uint8_t* q, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

// Per sub-block d1 = d·sc and m1 = dmin·m (float32, as ggml).
bool Header(KMinType type, const uint8_t* in, float* d1, float* m1,
            std::string* why) {
  float d, dmin;
  if (type == KMinType::kQ2_K) {
    if (!Half(in + 80, "d", &d, why) || !Half(in + 82, "dmin", &dmin, why))
      return false;
    for (uint32_t j = 0; j < 16; ++j) {
      d1[j] = d * (in[j] & 0xF);
      m1[j] = dmin * (in[j] >> 4);
    }
    return true;
  }
  if (!Half(in, "d", &d, why) || !Half(in + 2, "dmin", &dmin, why))
    return false;
  for (uint32_t j = 0; j < 8; ++j) {
    uint8_t sc, m;
    ScaleMinK4(j, in + 4, &sc, &m);
    d1[j] = d * sc;
    m1[j] = dmin * m;
  }
  return true;
}

// Sub-block j's codes q (KMinSubBlock of them).
void SubCodes(KMinType type, const uint8_t* in, uint32_t j, uint8_t* q) {
  if (type == KMinType::kQ2_K) {
    // Sub-block j: half h = j / 8, pair p = (j % 8) / 2, bits 2p of
    // qs[32h + 16·(j % 2) + l].
    const uint8_t* qs = in + 16 + 32 * (j / 8) + 16 * (j % 2);
    const uint32_t shift = 2 * ((j % 8) / 2);
    for (uint32_t l = 0; l < 16; ++l)
      q[l] = static_cast<uint8_t>((qs[l] >> shift) & 3);
    return;
  }
  // Sub-blocks 2i and 2i+1 share ql[32i..32i+31]: low, high nibbles; Q5_K's
  // fifth bit is bit j of qh[l].
  const bool five = type == KMinType::kQ5_K;
  const uint8_t* ql = in + (five ? 48 : 16) + 32 * (j / 2);
  const uint32_t shift = 4 * (j % 2);
  for (uint32_t l = 0; l < 32; ++l)
    q[l] = static_cast<uint8_t>((ql[l] >> shift) & 0x0F);
  if (five) {
    const uint8_t* qh = in + 16;
    for (uint32_t l = 0; l < 32; ++l)
      q[l] = static_cast<uint8_t>(q[l] | (((qh[l] >> j) & 1) << 4));
  }
}

uint32_t Bits(KMinType type) {
  return type == KMinType::kQ4_K ? 4 : type == KMinType::kQ5_K ? 5 : 2;
}

// One sub-block's parameters: value (c − zero)·scale, code c = 2^k·q + add
// (0 when d1 = 0).
struct Sub {
  float scale = 1.0f;
  int32_t zero = 0, add = 0;
  int k = 0;
};

// Chooses k from `finest` down to 0 so that the zero point and the codes
// stay within 0..cmax; `ratio` is m1 / d1 in float64 (the divisions of a
// block done together, in vector registers); `qmax` is the sub-block's
// largest code, computed only when the zero point is negative.
template <typename QMax>
inline __attribute__((always_inline)) bool Choose(float d1, float m1,
                                                  double ratio, int finest,
                                                  int32_t cmax, QMax qmax,
                                                  Sub* s) {
  s->add = 0, s->zero = 0, s->k = 0;
  if (d1 == 0.0f) {
    if (m1 != 0.0f) {
      s->scale = m1, s->zero = 1;  // (0 − 1)·m1 = −m1: ggml's every value
    } else {
      // ggml: (±0·q) − (±0) is −0 only for −0 − (+0).
      s->scale = std::signbit(d1) && !std::signbit(m1) ? -1.0f : 1.0f;
    }
    return true;
  }
  int top = -1;
  for (int k = finest; k >= 0; --k) {
    const double x = ratio * static_cast<double>(1 << k);
    // Beyond 2^51 nothing fits; below, adding and taking away 1.5·2^52
    // rounds to the nearest integer, ties to even (nearbyint, inlined).
    if (!(std::fabs(x) < 0x1p51)) continue;
    const double r = (x + 0x1.8p52) - 0x1.8p52;
    bool fits = false;
    if (r >= 0 && r <= cmax) {
      s->zero = static_cast<int32_t>(r), s->add = 0, fits = true;
    } else if (r < 0) {
      if (top < 0) top = qmax();
      if ((static_cast<double>(top) * (1 << k)) - r <= cmax)
        s->zero = 0, s->add = static_cast<int32_t>(-r), fits = true;
    }
    if (fits) {
      s->k = k;
      // Exact: |d1| ≥ 2^-24, so d1 / 2^k stays a normal float32.
      s->scale = d1 * (1.0f / static_cast<float>(1 << k));
      return true;
    }
  }
  return false;
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

// The body of RewriteKMinBlocks, inlined twice: for any x86-64 and for
// AVX2 (four doubles a vector for the error sums). Both compute the same
// values: -ffp-contract=off keeps every rounding, AVX2 or not.
inline __attribute__((always_inline)) uint64_t Rewrite(
    KMinType type, bool compact, const uint8_t* in, uint64_t n,
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
        *why = absl::StrCat("sub-block ", j, ": m1 / d1 = ", m1[j], " / ",
                            d1[j], " needs a zero point outside ",
                            bits == 8 ? "uint8 even at ggml's own step"
                                      : absl::StrCat("uint", bits),
                            bits == 8 ? "" : " (the compact form)");
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

#if defined(__x86_64__)
__attribute__((target("avx2"), flatten)) uint64_t RewriteAvx2(
    KMinType type, bool compact, const uint8_t* in, uint64_t n,
    const KMinOutput& out, KMinError* error, std::string* why) {
  return Rewrite(type, compact, in, n, out, error, why);
}
#endif

}  // namespace

uint64_t RewriteKMinBlocks(KMinType type, bool compact, const uint8_t* in,
                           uint64_t n, const KMinOutput& out, KMinError* error,
                           std::string* why) {
#if defined(__x86_64__)
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2) return RewriteAvx2(type, compact, in, n, out, error, why);
#endif
  return Rewrite(type, compact, in, n, out, error, why);
}

}  // namespace hurray::stream::convert
