#include "stream/convert/ggml_blocks.h"

#include <cmath>
#include <cstring>

#include "dequant/minifloat.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace hurray::stream::convert {
namespace {

constexpr uint16_t kF16One = 0x3C00, kF16MinusOne = 0xBC00;

bool FiniteNonZeroF16(uint16_t d) {
  return (d & 0x7C00) != 0x7C00 && (d & 0x7FFF) != 0;
}

void PutF16(uint16_t bits, uint8_t* out) {
  out[0] = static_cast<uint8_t>(bits);
  out[1] = static_cast<uint8_t>(bits >> 8);
}

// Checks a float16 scale. For ±0, decides the sign all of the block's
// zeros share (`negative[j]`: ggml's value j is −0) and sets `zero_scale`.
bool CheckF16Scale(uint16_t d, const bool* negative, uint8_t* scale,
                   bool* zero_scale, std::string* why) {
  if ((d & 0x7C00) == 0x7C00) {
    *why = "the float16 scale is infinite or NaN";
    return false;
  }
  *zero_scale = (d & 0x7FFF) == 0;
  if (!*zero_scale) {
    PutF16(d, scale);
    return true;
  }
  for (uint32_t j = 1; j < kGgmlBlock; ++j) {
    if (negative[j] != negative[0]) {
      *why =
          "the scale is 0 and the codes have both signs: ggml gives +0 and "
          "-0 in one block, which no Hurray scale can express";
      return false;
    }
  }
  PutF16(negative[0] ? kF16MinusOne : kF16One, scale);
  return true;
}

// OCP e2m1 magnitudes ×2 by 3-bit code: 0, 0.5, 1, 1.5, 2, 3, 4, 6.
// kHalf[m]: the code of half the magnitude, or -1 when not an e2m1 value.
constexpr int kHalf[8] = {0, -1, 1, -1, 2, 3, 4, 5};

void PutF32(float f, uint8_t* out) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  for (int i = 0; i < 4; ++i) out[i] = static_cast<uint8_t>(bits >> (8 * i));
}

// One K-quant sub-block: ggml's value k is s·q[k] with s = d·sc as float32
// (exact). Writes the float32 scale; a zero s becomes ±1.0 with codes 0
// (`*zero`), refused when ggml's zeros would have both signs.
bool SubBlockScale(float s, const int8_t* q, uint32_t sub, uint8_t* scale,
                   bool* zero, std::string* why) {
  *zero = s == 0.0f;
  if (!*zero) {
    PutF32(s, scale);
    return true;
  }
  // ggml: s · float(q); a zero product is negative when exactly one factor
  // is (float(0) is +0).
  const bool s_negative = std::signbit(s);
  const bool first = s_negative != (q[0] < 0);
  for (uint32_t k = 1; k < kKSubBlock; ++k) {
    if ((s_negative != (q[k] < 0)) != first) {
      *why = "sub-block " + std::to_string(sub) +
             ": the scale is 0 and the codes have both signs: ggml gives +0 "
             "and -0 in one block, which no Hurray scale can express";
      return false;
    }
  }
  PutF32(first ? -1.0f : 1.0f, scale);
  return true;
}

// d of a K-quant block (the float16 at `at`), refused when not finite.
bool KScale(const uint8_t* at, float* d, std::string* why) {
  const uint16_t h = static_cast<uint16_t>(at[0] | (at[1] << 8));
  if ((h & 0x7C00) == 0x7C00) {
    *why = "the float16 super-block scale d is infinite or NaN";
    return false;
  }
  *d = dequant::F16ToF32(h);
  return true;
}

}  // namespace

bool RewriteQ8_0(const uint8_t* in, uint8_t* codes, uint8_t* scale,
                 std::string* why) {
  const uint16_t d = static_cast<uint16_t>(in[0] | (in[1] << 8));
  if (FiniteNonZeroF16(d)) {  // the common case: kept as it is
    PutF16(d, scale);
    std::memcpy(codes, in + 2, kGgmlBlock);
    return true;
  }
  const bool d_negative = (d & 0x8000) != 0;
  bool negative[kGgmlBlock];
  for (uint32_t j = 0; j < kGgmlBlock; ++j) {
    // ggml: float(qs[j]) · d; a zero product is negative when exactly one
    // factor is (float(0) is +0).
    negative[j] = d_negative != (static_cast<int8_t>(in[2 + j]) < 0);
  }
  bool zero_scale = false;
  if (!CheckF16Scale(d, negative, scale, &zero_scale, why)) return false;
  if (zero_scale) {
    std::memset(codes, 0, kGgmlBlock);
  } else {
    std::memcpy(codes, in + 2, kGgmlBlock);
  }
  return true;
}

bool RewriteQ4_0(const uint8_t* in, uint8_t* codes, uint8_t* scale,
                 std::string* why) {
  const uint16_t d = static_cast<uint16_t>(in[0] | (in[1] << 8));
  const bool d_negative = (d & 0x8000) != 0;
  const uint8_t* qs = in + 2;
  uint8_t nib[kGgmlBlock];
  bool negative[kGgmlBlock];
  for (uint32_t j = 0; j < 16; ++j) {
    nib[j] = qs[j] & 0x0F;
    nib[j + 16] = qs[j] >> 4;
  }
  for (uint32_t j = 0; j < kGgmlBlock; ++j)
    negative[j] = d_negative != (nib[j] < 8);
  bool zero_scale = false;
  if (!CheckF16Scale(d, negative, scale, &zero_scale, why)) return false;
  for (uint32_t k = 0; k < 16; ++k) {
    if (zero_scale) {
      codes[k] = 0;
      continue;
    }
    // int4 two's complement of nibble − 8 is nibble ^ 8.
    const uint8_t lo = nib[2 * k] ^ 8, hi = nib[2 * k + 1] ^ 8;
    codes[k] = static_cast<uint8_t>(lo | (hi << 4));
  }
  return true;
}

bool RewriteMxfp4(const uint8_t* in, uint8_t* codes, uint8_t* scale,
                  std::string* why) {
  uint8_t e = in[0];
  const uint8_t* qs = in + 1;
  uint8_t nib[kGgmlBlock];
  bool all_zero = true;
  for (uint32_t j = 0; j < 16; ++j) {
    nib[j] = qs[j] & 0x0F;
    nib[j + 16] = qs[j] >> 4;
  }
  for (uint32_t j = 0; j < kGgmlBlock; ++j) {
    // ggml's +0 for nibble 0x8 (kvalues[8] = 0) is Hurray's code 0x0.
    if (nib[j] == 0x8) nib[j] = 0;
    all_zero = all_zero && nib[j] == 0;
  }
  if (all_zero) {
    e = (e == 0x00 || e == 0xFF) ? 127 : e;
  } else if (e == 0x00) {
    // 2^−128 · 2·e2m1(q) = 2^(1−127) · e2m1(q)/2.
    for (uint32_t j = 0; j < kGgmlBlock; ++j) {
      const int half = kHalf[nib[j] & 7];
      if (half < 0) {
        *why =
            "the e8m0 scale is 0x00 (ggml: 2^-128) and a code is not twice "
            "an e2m1 value: not expressible with Hurray's scales";
        return false;
      }
      nib[j] = static_cast<uint8_t>((nib[j] & 8) | half);
      if (nib[j] == 0x8) nib[j] = 0;
    }
    e = 0x01;
  } else if (e == 0xFF) {
    *why = "the e8m0 scale is 0xFF, reserved in Hurray (mxfp.md)";
    return false;
  }
  for (uint32_t k = 0; k < 16; ++k)
    codes[k] = static_cast<uint8_t>(nib[2 * k] | (nib[2 * k + 1] << 4));
  *scale = e;
  return true;
}

bool RewriteQ6_K(const uint8_t* in, uint8_t* codes, uint8_t* scales,
                 std::string* why) {
  const uint8_t* ql = in;
  const uint8_t* qh = in + 128;
  const int8_t* sc = reinterpret_cast<const int8_t*>(in + 192);
  float d;
  if (!KScale(in + 208, &d, why)) return false;
  int8_t q[kQK];
  // Element e = 128h + 32k + l (l < 32): the low nibble of ql[64h + l]
  // (k = 0), of ql[64h + l + 32] (k = 1), their high nibbles (k = 2, 3),
  // bits 2k, 2k+1 of qh[32h + l] on top; its scale is sc[e / 16].
  for (uint32_t h = 0; h < 2; ++h) {
    for (uint32_t k = 0; k < 4; ++k) {
      for (uint32_t l = 0; l < 32; ++l) {
        const uint8_t lo = ql[64 * h + l + (k & 1) * 32];
        const uint32_t low = (k < 2 ? lo : lo >> 4) & 0x0F;
        const uint32_t high = (qh[32 * h + l] >> (2 * k)) & 3;
        q[128 * h + 32 * k + l] =
            static_cast<int8_t>(static_cast<int>(low | high << 4) - 32);
      }
    }
  }
  for (uint32_t j = 0; j < kQK / kKSubBlock; ++j) {
    const float s = d * static_cast<float>(sc[j]);
    bool zero = false;
    if (!SubBlockScale(s, q + kKSubBlock * j, j, scales + 4 * j, &zero, why))
      return false;
    uint8_t* c = codes + kKSubBlock * j;
    if (zero) {
      std::memset(c, 0, kKSubBlock);
    } else {
      std::memcpy(c, q + kKSubBlock * j, kKSubBlock);
    }
  }
  return true;
}

namespace {

#if defined(__x86_64__)
// RewriteQ6_K with AVX2 (and F16C for d) for the common block (d finite, no
// sub-block scale d·sc[j] zero): the 256 codes a 32-byte vector at a time, the
// 16 scales two 8-float vectors, the same IEEE products as the scalar code. Any
// other block goes to RewriteQ6_K itself, so refusals and the zero-scale ruling
// have one implementation.
__attribute__((target("avx2,f16c"))) bool RewriteQ6_KAvx2(const uint8_t* in,
                                                          uint8_t* codes,
                                                          uint8_t* scales,
                                                          std::string* why) {
  const uint16_t h = static_cast<uint16_t>(in[208] | (in[209] << 8));
  if ((h & 0x7C00) == 0x7C00) return RewriteQ6_K(in, codes, scales, why);
  // F16C's conversion is exact, subnormals included, as F16ToF32 is.
  const __m256 d = _mm256_set1_ps(_cvtsh_ss(h));
  const __m128i sc =
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 192));
  const __m256 s0 =
      _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(sc)));
  const __m256 s1 = _mm256_mul_ps(
      d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(sc, 8))));
  const __m256 zero = _mm256_setzero_ps();
  if (_mm256_movemask_ps(_mm256_or_ps(_mm256_cmp_ps(s0, zero, _CMP_EQ_OQ),
                                      _mm256_cmp_ps(s1, zero, _CMP_EQ_OQ))) !=
      0)
    return RewriteQ6_K(in, codes, scales, why);
  // Little-endian float32, as PutF32 writes them.
  _mm256_storeu_ps(reinterpret_cast<float*>(scales), s0);
  _mm256_storeu_ps(reinterpret_cast<float*>(scales + 32), s1);
  // Element 128h + 32k + l: the low (k = 0, 1) or high (k = 2, 3) nibble of
  // ql[64h + 32(k & 1) + l], bits 2k, 2k+1 of qh[32h + l] as bits 4, 5.
  // 16-bit shifts, then byte masks: bits that cross a byte are masked off.
  const __m256i nib = _mm256_set1_epi8(0x0F), top = _mm256_set1_epi8(0x30);
  const __m256i bias = _mm256_set1_epi8(32);
  for (uint32_t half = 0; half < 2; ++half) {
    const __m256i a =
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + 64 * half));
    const __m256i b = _mm256_loadu_si256(
        reinterpret_cast<const __m256i*>(in + 64 * half + 32));
    const __m256i hi = _mm256_loadu_si256(
        reinterpret_cast<const __m256i*>(in + 128 + 32 * half));
    const __m256i q[4] = {
        _mm256_or_si256(_mm256_and_si256(a, nib),
                        _mm256_and_si256(_mm256_slli_epi16(hi, 4), top)),
        _mm256_or_si256(_mm256_and_si256(b, nib),
                        _mm256_and_si256(_mm256_slli_epi16(hi, 2), top)),
        _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(a, 4), nib),
                        _mm256_and_si256(hi, top)),
        _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(b, 4), nib),
                        _mm256_and_si256(_mm256_srli_epi16(hi, 2), top)),
    };
    for (uint32_t k = 0; k < 4; ++k) {
      _mm256_storeu_si256(
          reinterpret_cast<__m256i*>(codes + 128 * half + 32 * k),
          _mm256_sub_epi8(q[k], bias));
    }
  }
  return true;
}

__attribute__((target("avx2,f16c"))) uint64_t RewriteQ6_KBlocksAvx2(
    const uint8_t* in, uint64_t n, uint8_t* codes, uint8_t* scales,
    std::string* why) {
  uint8_t scratch_codes[kQK], scratch_scales[4 * (kQK / kKSubBlock)];
  for (uint64_t i = 0; i < n; ++i) {
    uint8_t* c = codes != nullptr ? codes + i * kQK : scratch_codes;
    uint8_t* s = scales != nullptr ? scales + i * 4 * (kQK / kKSubBlock)
                                   : scratch_scales;
    if (!RewriteQ6_KAvx2(in + i * kQ6_KBytes, c, s, why)) return i;
  }
  return n;
}
#endif

uint64_t RewriteQ6_KBlocksScalar(const uint8_t* in, uint64_t n, uint8_t* codes,
                                 uint8_t* scales, std::string* why) {
  uint8_t scratch_codes[kQK], scratch_scales[4 * (kQK / kKSubBlock)];
  for (uint64_t i = 0; i < n; ++i) {
    uint8_t* c = codes != nullptr ? codes + i * kQK : scratch_codes;
    uint8_t* s = scales != nullptr ? scales + i * 4 * (kQK / kKSubBlock)
                                   : scratch_scales;
    if (!RewriteQ6_K(in + i * kQ6_KBytes, c, s, why)) return i;
  }
  return n;
}

}  // namespace

bool Q6_KHasVectorPath() {
#if defined(__x86_64__)
  // clang 14's __builtin_cpu_supports has no "f16c": CPUID leaf 1, ECX
  // bit 29.
  static const bool avx2 = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __builtin_cpu_supports("avx2") && __get_cpuid(1, &a, &b, &c, &d) &&
           (c & bit_F16C) != 0;
  }();
  return avx2;
#else
  return false;
#endif
}

uint64_t RewriteQ6_KBlocks(bool vector, const uint8_t* in, uint64_t n,
                           uint8_t* codes, uint8_t* scales, std::string* why) {
#if defined(__x86_64__)
  if (vector && Q6_KHasVectorPath())
    return RewriteQ6_KBlocksAvx2(in, n, codes, scales, why);
#endif
  return RewriteQ6_KBlocksScalar(in, n, codes, scales, why);
}

bool RewriteQ3_K(const uint8_t* in, uint8_t* codes, uint8_t* scales,
                 std::string* why) {
  const uint8_t* hmask = in;
  const uint8_t* qs = in + 32;
  const uint8_t* packed = in + 96;
  float d;
  if (!KScale(in + 108, &d, why)) return false;
  for (uint32_t j = 0; j < kQK / kKSubBlock; ++j) {
    // Scale j: 4 low bits from byte j % 8 (its low nibble for j < 8, its
    // high one after), 2 high bits from byte 8 + j % 4 at bit 2·(j / 4).
    const uint8_t b = packed[j % 8];
    const int low = j < 8 ? (b & 0x0F) : (b >> 4);
    const int high = (packed[8 + j % 4] >> (2 * (j / 4))) & 3;
    const int sc = (low | high << 4) - 32;
    // Sub-block j: h = j / 8, pair p = (j % 8) / 2, half j % 2; element l
    // has 2 low bits at 2p of qs[32h + 16·half + l] and its high bit
    // (set: +0, clear: −4) at bit 4h + p of hmask[16·half + l].
    const uint32_t h = j / 8, p = (j % 8) / 2, half = j % 2;
    int8_t q[kKSubBlock];
    for (uint32_t l = 0; l < kKSubBlock; ++l) {
      const uint32_t idx = 16 * half + l;
      const int low2 = (qs[32 * h + idx] >> (2 * p)) & 3;
      const bool hbit = (hmask[idx] >> (4 * h + p)) & 1;
      q[l] = static_cast<int8_t>(low2 - (hbit ? 0 : 4));
    }
    const float s = d * static_cast<float>(sc);
    bool zero = false;
    if (!SubBlockScale(s, q, j, scales + 4 * j, &zero, why)) return false;
    uint8_t* c = codes + (kKSubBlock / 2) * j;
    for (uint32_t k = 0; k < kKSubBlock / 2; ++k) {
      c[k] = zero ? 0
                  : static_cast<uint8_t>((q[2 * k] & 0x0F) |
                                         (q[2 * k + 1] & 0x0F) << 4);
    }
  }
  return true;
}

bool PlainScale(const uint8_t* in, bool e8m0, uint8_t* scale) {
  if (e8m0) {
    if (in[0] == 0x00 || in[0] == 0xFF) return false;
    *scale = in[0];
    return true;
  }
  const uint16_t d = static_cast<uint16_t>(in[0] | (in[1] << 8));
  if (!FiniteNonZeroF16(d)) return false;
  PutF16(d, scale);
  return true;
}

namespace {
bool IsK(GgmlBlockType type) {
  return type == GgmlBlockType::kQ6_K || type == GgmlBlockType::kQ3_K;
}
}  // namespace

uint32_t SourceBlockElements(GgmlBlockType type) {
  return IsK(type) ? kQK : kGgmlBlock;
}
uint32_t HurrayBlockElements(GgmlBlockType type) {
  return IsK(type) ? kKSubBlock : kGgmlBlock;
}
uint32_t SourceBlockBytes(GgmlBlockType type) {
  switch (type) {
    case GgmlBlockType::kQ8_0:
      return kQ8_0Bytes;
    case GgmlBlockType::kQ4_0:
      return kQ4_0Bytes;
    case GgmlBlockType::kMxfp4:
      return kMxfp4Bytes;
    case GgmlBlockType::kQ6_K:
      return kQ6_KBytes;
    case GgmlBlockType::kQ3_K:
      return kQ3_KBytes;
  }
  return 0;
}
uint32_t CodeBytes(GgmlBlockType type) {
  switch (type) {
    case GgmlBlockType::kQ8_0:
      return kGgmlBlock;
    case GgmlBlockType::kQ6_K:
      return kQK;
    case GgmlBlockType::kQ3_K:
      return kQK / 2;
    default:
      return kGgmlBlock / 2;
  }
}
uint32_t ScaleBytes(GgmlBlockType type) {
  if (IsK(type)) return 4 * (kQK / kKSubBlock);
  return type == GgmlBlockType::kMxfp4 ? 1 : 2;
}

uint64_t RewriteBlocks(GgmlBlockType type, const uint8_t* in, uint64_t n,
                       uint8_t* codes, uint8_t* scales, std::string* why) {
  uint8_t scratch_codes[kQK], scratch_scale[4 * (kQK / kKSubBlock)];
  if (type == GgmlBlockType::kQ8_0 && codes != nullptr) {
    // Converting a Q8_0 model is mostly this loop: 32 code bytes and the
    // scale moved as they are.
    for (uint64_t i = 0; i < n; ++i) {
      const uint8_t* b = in + i * kQ8_0Bytes;
      uint8_t* c = codes + i * kGgmlBlock;
      uint8_t* sc = scales != nullptr ? scales + i * 2 : scratch_scale;
      const uint16_t d = static_cast<uint16_t>(b[0] | (b[1] << 8));
      if (FiniteNonZeroF16(d)) [[likely]] {
        std::memcpy(c, b + 2, kGgmlBlock);
        std::memcpy(sc, b, 2);
      } else if (!RewriteQ8_0(b, c, sc, why)) {
        return i;
      }
    }
    return n;
  }
  if (type == GgmlBlockType::kQ6_K)
    return RewriteQ6_KBlocks(/*vector=*/true, in, n, codes, scales, why);
  const uint32_t in_bytes = SourceBlockBytes(type);
  const uint32_t code_bytes = CodeBytes(type);
  const uint32_t scale_bytes = ScaleBytes(type);
  for (uint64_t i = 0; i < n; ++i) {
    const uint8_t* b = in + i * in_bytes;
    uint8_t* sc = scales != nullptr ? scales + i * scale_bytes : scratch_scale;
    // Scales alone: the codes are rewritten only where the scale is not
    // the source's own.
    if (codes == nullptr && !IsK(type) &&
        PlainScale(b, type == GgmlBlockType::kMxfp4, sc))
      continue;
    uint8_t* c = codes != nullptr ? codes + i * code_bytes : scratch_codes;
    bool ok = false;
    switch (type) {
      case GgmlBlockType::kQ8_0:
        ok = RewriteQ8_0(b, c, sc, why);
        break;
      case GgmlBlockType::kQ4_0:
        ok = RewriteQ4_0(b, c, sc, why);
        break;
      case GgmlBlockType::kMxfp4:
        ok = RewriteMxfp4(b, c, sc, why);
        break;
      case GgmlBlockType::kQ6_K:
        ok = RewriteQ6_K(b, c, sc, why);
        break;
      case GgmlBlockType::kQ3_K:
        ok = RewriteQ3_K(b, c, sc, why);
        break;
    }
    if (!ok) return i;
  }
  return n;
}

}  // namespace hurray::stream::convert
