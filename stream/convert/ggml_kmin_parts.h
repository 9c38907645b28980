// The pieces of RewriteKMinBlocks (ggml_kmin.h) that its scalar code
// (ggml_kmin.cc) and its AVX2 code (ggml_kmin_avx2.cc) share: the block
// header, a sub-block's codes, the choice of a sub-block's step and zero
// point, and the refusal's reason. Internal to the ggml_kmin library.
#ifndef HURRAY_STREAM_CONVERT_GGML_KMIN_PARTS_H_
#define HURRAY_STREAM_CONVERT_GGML_KMIN_PARTS_H_

#include <cmath>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "dequant/minifloat.h"
#include "stream/convert/ggml_kmin.h"

namespace hurray::stream::convert::kmin_internal {

inline uint32_t Bits(KMinType type) {
  return type == KMinType::kQ4_K ? 4 : type == KMinType::kQ5_K ? 5 : 2;
}

inline bool Half(const uint8_t* at, const char* name, float* v,
                 std::string* why) {
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
inline void ScaleMinK4(uint32_t j, const uint8_t* q, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

// Per sub-block d1 = d·sc and m1 = dmin·m (float32, as ggml).
inline bool Header(KMinType type, const uint8_t* in, float* d1, float* m1,
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
inline void SubCodes(KMinType type, const uint8_t* in, uint32_t j, uint8_t* q) {
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

// Why sub-block j is refused (Choose returned false).
inline std::string RefusalWhy(uint32_t j, float m1, float d1, uint32_t bits) {
  return absl::StrCat(
      "sub-block ", j, ": m1 / d1 = ", m1, " / ", d1,
      " needs a zero point outside ",
      bits == 8 ? "uint8 even at ggml's own step" : absl::StrCat("uint", bits),
      bits == 8 ? "" : " (the compact form)");
}

}  // namespace hurray::stream::convert::kmin_internal

#endif  // HURRAY_STREAM_CONVERT_GGML_KMIN_PARTS_H_
