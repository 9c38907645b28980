#include "stream/convert/ggml_kmin.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "dequant/minifloat.h"

// Built with -ffp-contract=off (BUILD.bazel): ggml's d1·q − m1 is two
// roundings, which a fused multiply-add would make one.

namespace hurray::convert {
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

// One source block decoded: per sub-block d1, m1 and the codes q.
struct Decoded {
  float d1[16], m1[16];
  uint8_t q[kQK];
};

bool Decode(KMinType type, const uint8_t* in, Decoded* out, std::string* why) {
  float d, dmin;
  switch (type) {
    case KMinType::kQ4_K:
    case KMinType::kQ5_K: {
      if (!Half(in, "d", &d, why) || !Half(in + 2, "dmin", &dmin, why))
        return false;
      const uint8_t* scales = in + 4;
      const bool five = type == KMinType::kQ5_K;
      const uint8_t* qh = in + 16;
      const uint8_t* ql = in + (five ? 48 : 16);
      for (uint32_t j = 0; j < 8; ++j) {
        uint8_t sc, m;
        ScaleMinK4(j, scales, &sc, &m);
        out->d1[j] = d * sc;
        out->m1[j] = dmin * m;
        // Sub-blocks 2i and 2i+1 share ql[32i..32i+31]: low, high nibbles;
        // Q5_K's fifth bit is bit j of qh[l].
        const uint32_t i = j / 2;
        for (uint32_t l = 0; l < 32; ++l) {
          const uint8_t b = ql[32 * i + l];
          uint32_t v = j % 2 ? b >> 4 : b & 0x0F;
          if (five && ((qh[l] >> j) & 1)) v += 16;
          out->q[32 * j + l] = static_cast<uint8_t>(v);
        }
      }
      return true;
    }
    case KMinType::kQ2_K: {
      if (!Half(in + 80, "d", &d, why) || !Half(in + 82, "dmin", &dmin, why))
        return false;
      const uint8_t* scales = in;
      const uint8_t* qs = in + 16;
      for (uint32_t j = 0; j < 16; ++j) {
        out->d1[j] = d * (scales[j] & 0xF);
        out->m1[j] = dmin * (scales[j] >> 4);
        // Sub-block j: half h = j / 8, pair p = (j % 8) / 2, bits 2p of
        // qs[32h + 16·(j % 2) + l].
        const uint32_t h = j / 8, p = (j % 8) / 2, half = j % 2;
        for (uint32_t l = 0; l < 16; ++l)
          out->q[16 * j + l] =
              static_cast<uint8_t>((qs[32 * h + 16 * half + l] >> (2 * p)) & 3);
      }
      return true;
    }
  }
  return false;
}

uint32_t Bits(KMinType type) {
  return type == KMinType::kQ4_K ? 4 : type == KMinType::kQ5_K ? 5 : 2;
}

}  // namespace

uint32_t KMinSourceBytes(KMinType type) {
  return type == KMinType::kQ4_K ? 144 : type == KMinType::kQ5_K ? 176 : 84;
}
uint32_t KMinSubBlock(KMinType type) {
  return type == KMinType::kQ2_K ? 16 : 32;
}
uint32_t KMinSubBlocks(KMinType type) { return kQK / KMinSubBlock(type); }

uint64_t RewriteKMinBlocks(KMinType type, const uint8_t* in, uint64_t n,
                           uint8_t* codes, uint8_t* scales,
                           uint8_t* zero_points, KMinError* error,
                           std::string* why) {
  const uint32_t sub = KMinSubBlock(type), subs = KMinSubBlocks(type);
  const int finest = 8 - static_cast<int>(Bits(type));
  Decoded dec;
  for (uint64_t i = 0; i < n; ++i) {
    if (!Decode(type, in + i * KMinSourceBytes(type), &dec, why)) return i;
    for (uint32_t j = 0; j < subs; ++j) {
      const float d1 = dec.d1[j], m1 = dec.m1[j];
      const uint8_t* q = dec.q + sub * j;
      float scale;
      int32_t zero = 0;
      int32_t add = 0;  // added to 2^k·q for the code
      int k = 0;
      if (d1 == 0.0f) {
        if (m1 != 0.0f) {
          scale = m1, zero = 1;  // (0 − 1)·m1 = −m1: ggml's every value
        } else {
          // ggml: (±0·q) − (±0) is −0 only for −0 − (+0).
          scale = std::signbit(d1) && !std::signbit(m1) ? -1.0f : 1.0f;
        }
      } else {
        const uint8_t qmax = *std::max_element(q, q + sub);
        const double ratio = static_cast<double>(m1) / static_cast<double>(d1);
        bool fits = false;
        for (k = finest; k >= 0 && !fits; --k) {
          const double r = std::nearbyint(std::ldexp(ratio, k));
          const double top = std::ldexp(static_cast<double>(qmax), k);
          if (r >= 0 && r <= 255) {
            zero = static_cast<int32_t>(r), add = 0, fits = true;
          } else if (r < 0 && top - r <= 255) {
            zero = 0, add = static_cast<int32_t>(-r), fits = true;
          }
          if (fits) break;
        }
        if (!fits) {
          *why = absl::StrCat(
              "sub-block ", j, ": m1 / d1 = ", m1, " / ", d1,
              " needs a zero point outside uint8 even at ggml's own step");
          return i;
        }
        scale = std::ldexp(d1, -k);  // exact: d1 ≥ 2^-24 in magnitude
      }
      const uint32_t b = static_cast<uint32_t>(i * subs + j);
      if (scales != nullptr) PutF32(scale, scales + 4 * b);
      if (zero_points != nullptr)
        Put32(static_cast<uint32_t>(zero), zero_points + 4 * b);
      // Codes, then the error: two branch-free loops.
      const int32_t shift = d1 == 0.0f ? 0 : k;
      const int32_t mask = d1 == 0.0f ? 0 : 0xFF;
      if (codes != nullptr) {
        uint8_t* c = codes + (i * subs + j) * sub;
        for (uint32_t l = 0; l < sub; ++l)
          c[l] = static_cast<uint8_t>(((q[l] << shift) + add) & mask);
      }
      if (error != nullptr) {
        double max_abs = error->max_abs, sum_sq = 0;
        for (uint32_t l = 0; l < sub; ++l) {
          const int32_t c = ((q[l] << shift) + add) & mask;
          const float ggml = d1 * q[l] - m1;
          const float ours = static_cast<float>(c - zero) * scale;
          const double e =
              std::fabs(static_cast<double>(ours) - static_cast<double>(ggml));
          max_abs = std::max(max_abs, e);
          sum_sq += e * e;
        }
        error->max_abs = max_abs;
        error->sum_sq += sum_sq;
        error->count += sub;
      }
      if (error != nullptr && d1 != 0.0f)
        error->min_step_bits = std::min(error->min_step_bits, k);
    }
  }
  return n;
}

}  // namespace hurray::convert
