#include "stream/convert/ggml_kmin_avx2.h"

#include <algorithm>
#include <cstring>

#include "stream/convert/ggml_kmin_parts.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

// Built with -ffp-contract=off (BUILD.bazel): ggml's d1·q − m1 stays two
// roundings, a multiply then a subtraction; the only fused multiply-adds
// are the explicit ones below.

namespace hurray::stream::convert::kmin_internal {

#if defined(__x86_64__)
namespace {

#define HURRAY_KMIN_AVX2 __attribute__((target("avx2,fma,f16c")))

constexpr uint32_t SubOf(KMinType t) { return t == KMinType::kQ2_K ? 16 : 32; }
constexpr uint32_t SourceOf(KMinType t) {
  return t == KMinType::kQ4_K ? 144 : t == KMinType::kQ5_K ? 176 : 84;
}
constexpr int BitsOf(KMinType t) {
  return t == KMinType::kQ4_K ? 4 : t == KMinType::kQ5_K ? 5 : 2;
}

// One source block's sub-block parameters, as the element loop reads them:
// ggml's d1 and m1, our value (q·step + offset)·scale (step 2^k, offset
// add − zero; step 0 and offset −zero where d1 = 0), and the code
// ((q << k) + add) & keep (keep 0 where d1 = 0).
struct Params {
  alignas(32) float d1[16], m1[16], step[16], offset[16], scale[16];
  alignas(32) int32_t zero[16], k[16];
  alignas(16) uint8_t add[16], keep[16];
};

// The block's header to `p`: d1 = d·sc, m1 = dmin·m as ggml (float32), and
// for each sub-block the finest step with its zero point round(2^k·m1 /
// d1) in float64 lanes where it lies in 0..cmax (the common case), the
// scalar Choose elsewhere. False with `why` (the scalar code's reasons) for
// a non-finite d or dmin or a sub-block that fits at no step.
template <KMinType T, int kBits>
HURRAY_KMIN_AVX2 inline bool BlockParams(const uint8_t* block, Params* p,
                                         int* min_k, std::string* why) {
  constexpr uint32_t kSubs = 256 / SubOf(T);
  constexpr int kFinest = kBits == 8 ? 8 - BitsOf(T) : 0;
  constexpr int32_t kCmax = (1 << kBits) - 1;
  const uint8_t* dd = block + (T == KMinType::kQ2_K ? 80 : 0);
  const uint16_t hd = static_cast<uint16_t>(dd[0] | (dd[1] << 8));
  const uint16_t hm = static_cast<uint16_t>(dd[2] | (dd[3] << 8));
  if ((hd & 0x7C00) == 0x7C00 || (hm & 0x7C00) == 0x7C00) {
    float d1[16], m1[16];
    Header(T, block, d1, m1, why);  // the reason
    return false;
  }
  // F16C's conversion is exact, subnormals included, as F16ToF32 is.
  const __m256 d = _mm256_set1_ps(_cvtsh_ss(hd));
  const __m256 dmin = _mm256_set1_ps(_cvtsh_ss(hm));
  __m128i sc, m;  // 6-bit (Q2_K: 4-bit) scales and mins, a byte each
  if constexpr (T == KMinType::kQ2_K) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block));
    const __m128i low = _mm_set1_epi8(0x0F);
    sc = _mm_and_si128(b, low);
    m = _mm_and_si128(_mm_srli_epi16(b, 4), low);
  } else {
    // ggml's get_scale_min_k4 for all 8 at once (as its vec_dot does):
    // scales in bytes 0..7 of u, mins in bytes 8..15.
    uint32_t u[4];
    std::memcpy(u, block + 4, 12);
    constexpr uint32_t kM1 = 0x3f3f3f3f, kM2 = 0x0f0f0f0f, kM3 = 0x03030303;
    u[3] = ((u[2] >> 4) & kM2) | (((u[1] >> 6) & kM3) << 4);
    const uint32_t mins_low = u[1] & kM1;
    u[1] = (u[2] & kM2) | (((u[0] >> 6) & kM3) << 4);
    u[2] = mins_low;
    u[0] &= kM1;
    sc = _mm_loadu_si128(reinterpret_cast<const __m128i*>(u));
    m = _mm_srli_si128(sc, 8);
  }
  const __m256 inv = _mm256_set1_ps(1.0f / static_cast<float>(1 << kFinest));
  const __m256d two_k = _mm256_set1_pd(static_cast<double>(1 << kFinest));
  const __m256d cmax = _mm256_set1_pd(kCmax);
  uint32_t fast = 0;  // bit j: sub-block j takes the finest step, add 0
  for (uint32_t g = 0; g < kSubs / 8; ++g) {
    const __m128i scg = g == 0 ? sc : _mm_srli_si128(sc, 8);
    const __m128i mg = g == 0 ? m : _mm_srli_si128(m, 8);
    const __m256 d1 =
        _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(scg)));
    const __m256 m1 =
        _mm256_mul_ps(dmin, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(mg)));
    _mm256_store_ps(p->d1 + 8 * g, d1);
    _mm256_store_ps(p->m1 + 8 * g, m1);
    // Exact: d1 / 2^k (Choose's scale).
    _mm256_store_ps(p->scale + 8 * g, _mm256_mul_ps(d1, inv));
    __m128i zero[2];
    for (int h = 0; h < 2; ++h) {
      const __m256d dh = _mm256_cvtps_pd(h == 0 ? _mm256_castps256_ps128(d1)
                                                : _mm256_extractf128_ps(d1, 1));
      const __m256d mh = _mm256_cvtps_pd(h == 0 ? _mm256_castps256_ps128(m1)
                                                : _mm256_extractf128_ps(m1, 1));
      // Choose's first step: m1 / d1 in float64 (±inf or NaN where d1 = 0,
      // which the comparisons below send to the scalar code), times 2^k,
      // rounded to the nearest integer, ties to even.
      const __m256d r =
          _mm256_round_pd(_mm256_mul_pd(_mm256_div_pd(mh, dh), two_k),
                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      const __m256d ok =
          _mm256_and_pd(_mm256_cmp_pd(r, _mm256_setzero_pd(), _CMP_GE_OQ),
                        _mm256_cmp_pd(r, cmax, _CMP_LE_OQ));
      fast |= static_cast<uint32_t>(_mm256_movemask_pd(ok)) << (8 * g + 4 * h);
      zero[h] = _mm256_cvtpd_epi32(r);  // lanes not `ok` are set again below
    }
    const __m256i z = _mm256_set_m128i(zero[1], zero[0]);
    _mm256_store_si256(reinterpret_cast<__m256i*>(p->zero + 8 * g), z);
    _mm256_store_ps(p->offset + 8 * g, _mm256_cvtepi32_ps(_mm256_sub_epi32(
                                           _mm256_setzero_si256(), z)));
    _mm256_store_ps(p->step + 8 * g,
                    _mm256_set1_ps(static_cast<float>(1 << kFinest)));
    _mm256_store_si256(reinterpret_cast<__m256i*>(p->k + 8 * g),
                       _mm256_set1_epi32(kFinest));
  }
  _mm_store_si128(reinterpret_cast<__m128i*>(p->add), _mm_setzero_si128());
  _mm_store_si128(reinterpret_cast<__m128i*>(p->keep), _mm_set1_epi8(-1));
  if (fast != 0) *min_k = std::min(*min_k, kFinest);
  constexpr uint32_t kAll = (1u << kSubs) - 1;
  if ((fast & kAll) == kAll) [[likely]]
    return true;
  for (uint32_t j = 0; j < kSubs; ++j) {
    if ((fast >> j) & 1) continue;
    const float d1 = p->d1[j], m1 = p->m1[j];
    auto qmax = [&]() -> int {
      uint8_t q[32];
      SubCodes(T, block, j, q);
      return *std::max_element(q, q + SubOf(T));
    };
    Sub s;
    if (!Choose(d1, m1, static_cast<double>(m1) / static_cast<double>(d1),
                kFinest, kCmax, qmax, &s)) {
      *why = RefusalWhy(j, m1, d1, kBits);
      return false;
    }
    const bool zero = d1 == 0.0f;
    p->scale[j] = s.scale;
    p->zero[j] = s.zero;
    p->k[j] = s.k;
    p->add[j] = static_cast<uint8_t>(s.add);
    p->keep[j] = zero ? 0 : 0xFF;
    p->step[j] = zero ? 0.0f : static_cast<float>(1 << s.k);
    p->offset[j] = static_cast<float>((zero ? 0 : s.add) - s.zero);
    if (!zero) *min_k = std::min(*min_k, s.k);
  }
  return true;
}

// The running error: maxima of |e| over all blocks, sums of e² over one.
struct Acc {
  __m256 max[2], sq[4];
};

// Eight codes q of sub-block j (32-bit lanes): their errors against ggml's.
HURRAY_KMIN_AVX2 inline void Error(__m256i q, uint32_t j, const Params& p,
                                   __m256* max, __m256* sq) {
  const __m256 qf = _mm256_cvtepi32_ps(q);
  // ggml: (d1·q) − m1, two roundings.
  const __m256 ggml = _mm256_sub_ps(_mm256_mul_ps(_mm256_set1_ps(p.d1[j]), qf),
                                    _mm256_set1_ps(p.m1[j]));
  // Ours: (c − zero)·scale; q·2^k + offset is a small integer, exact with or
  // without the fused multiply-add.
  const __m256 ours =
      _mm256_mul_ps(_mm256_fmadd_ps(qf, _mm256_set1_ps(p.step[j]),
                                    _mm256_set1_ps(p.offset[j])),
                    _mm256_set1_ps(p.scale[j]));
  const __m256 e = _mm256_sub_ps(ours, ggml);
  const __m256 abs = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  *max = _mm256_max_ps(*max, _mm256_and_ps(e, abs));
  *sq = _mm256_fmadd_ps(e, e, *sq);
}

// 32 codes q (one byte each) of sub-block a (Q2_K: its 16, then sub-block
// a + 1's 16): their codes to `codes` (the block's; may be null) and their
// errors against ggml's (d1·q) − m1 into `acc`.
template <KMinType T, int kBits, bool kError>
HURRAY_KMIN_AVX2 inline void Unit(__m256i q, uint32_t a, const Params& p,
                                  uint8_t* codes, Acc* acc) {
  constexpr bool kTwo = T == KMinType::kQ2_K;
  const uint32_t b = kTwo ? a + 1 : a;
  if (codes != nullptr) {
    __m256i k, add, keep;
    if constexpr (kTwo) {
      k = _mm256_set_m128i(_mm_set1_epi32(p.k[b]), _mm_set1_epi32(p.k[a]));
      add = _mm256_set_m128i(_mm_set1_epi8(static_cast<char>(p.add[b])),
                             _mm_set1_epi8(static_cast<char>(p.add[a])));
      keep = _mm256_set_m128i(_mm_set1_epi8(static_cast<char>(p.keep[b])),
                              _mm_set1_epi8(static_cast<char>(p.keep[a])));
    } else {
      k = _mm256_set1_epi32(p.k[a]);
      add = _mm256_set1_epi8(static_cast<char>(p.add[a]));
      keep = _mm256_set1_epi8(static_cast<char>(p.keep[a]));
    }
    // 2^k·q < 256 (Choose keeps 2^k·q + add ≤ cmax), so shifting 32-bit
    // lanes moves no bit into the next byte.
    const __m256i c =
        _mm256_and_si256(_mm256_add_epi8(_mm256_sllv_epi32(q, k), add), keep);
    if constexpr (kBits == 8) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(codes + SubOf(T) * a), c);
    } else if constexpr (kBits == 4) {
      // element-types.md § 4-bit packing: byte l = c[2l] | c[2l + 1] << 4.
      const __m256i t = _mm256_maddubs_epi16(c, _mm256_set1_epi16(0x1001));
      const __m256i v = _mm256_permute4x64_epi64(_mm256_packus_epi16(t, t),
                                                 _MM_SHUFFLE(3, 1, 2, 0));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(codes + 16 * a),
                       _mm256_castsi256_si128(v));
    } else {
      // 2-bit packing: byte l = c[4l] | c[4l+1] << 2 | c[4l+2] << 4 |
      // c[4l+3] << 6; sub-blocks a and a + 1, 4 bytes each.
      const __m256i t =
          _mm256_madd_epi16(_mm256_maddubs_epi16(c, _mm256_set1_epi16(0x0401)),
                            _mm256_set1_epi32(0x00100001));
      const __m256i w = _mm256_packus_epi16(_mm256_packus_epi32(t, t),
                                            _mm256_setzero_si256());
      const __m256i v = _mm256_permutevar8x32_epi32(
          w, _mm256_setr_epi32(0, 4, 0, 0, 0, 0, 0, 0));
      _mm_storel_epi64(reinterpret_cast<__m128i*>(codes + 4 * a),
                       _mm256_castsi256_si128(v));
    }
  }
  if constexpr (kError) {
    // Each element's error as the difference of two float32 values, its
    // square summed in float32 lanes over the block (32 squares a lane, at
    // most) and added to float64 per block: within float32 rounding of the
    // scalar code's float64 sums, far beyond what a report needs. Four
    // sums and two maxima, so that no chain of dependent additions waits
    // on another.
    const __m128i lo = _mm256_castsi256_si128(q);
    const __m128i hi = _mm256_extracti128_si256(q, 1);
    Error(_mm256_cvtepu8_epi32(lo), a, p, &acc->max[0], &acc->sq[0]);
    Error(_mm256_cvtepu8_epi32(_mm_srli_si128(lo, 8)), a, p, &acc->max[1],
          &acc->sq[1]);
    Error(_mm256_cvtepu8_epi32(hi), b, p, &acc->max[0], &acc->sq[2]);
    Error(_mm256_cvtepu8_epi32(_mm_srli_si128(hi, 8)), b, p, &acc->max[1],
          &acc->sq[3]);
  }
}

// A block's codes and errors, 32 codes at a time from ggml's layout.
template <KMinType T, int kBits, bool kError>
HURRAY_KMIN_AVX2 inline void Elements(const uint8_t* block, const Params& p,
                                      uint8_t* codes, Acc* acc) {
  const __m256i nibble = _mm256_set1_epi8(0x0F);
  if constexpr (T == KMinType::kQ2_K) {
    // Sub-blocks 8h + 2i and 8h + 2i + 1: bits 2i of qs[32h..32h + 31].
    for (uint32_t h = 0; h < 2; ++h) {
      const __m256i x = _mm256_loadu_si256(
          reinterpret_cast<const __m256i*>(block + 16 + 32 * h));
      for (uint32_t i = 0; i < 4; ++i) {
        const __m256i q = _mm256_and_si256(
            _mm256_srli_epi16(x, static_cast<int>(2 * i)), _mm256_set1_epi8(3));
        Unit<T, kBits, kError>(q, 8 * h + 2 * i, p, codes, acc);
      }
    }
  } else {
    // Sub-blocks 2i and 2i + 1: low and high nibbles of qs[32i..32i + 31];
    // Q5_K's fifth bit of sub-block j is bit j of qh[l].
    constexpr bool kFive = T == KMinType::kQ5_K;
    const uint8_t* qs = block + (kFive ? 48 : 16);
    __m256i qh = _mm256_setzero_si256();
    if constexpr (kFive)
      qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 16));
    for (uint32_t i = 0; i < 4; ++i) {
      const __m256i x =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * i));
      for (uint32_t h = 0; h < 2; ++h) {
        const uint32_t j = 2 * i + h;
        __m256i q =
            _mm256_and_si256(h == 0 ? x : _mm256_srli_epi16(x, 4), nibble);
        if constexpr (kFive) {
          // Bit j of each byte to bit 4 (16-bit shifts: bit 0 of a byte
          // after a shift by j < 8 is bit j of that byte).
          const __m256i bit = _mm256_and_si256(
              _mm256_srli_epi16(qh, static_cast<int>(j)), _mm256_set1_epi8(1));
          q = _mm256_or_si256(q, _mm256_slli_epi16(bit, 4));
        }
        Unit<T, kBits, kError>(q, j, p, codes, acc);
      }
    }
  }
}

template <KMinType T, int kBits>
HURRAY_KMIN_AVX2 uint64_t RewriteT(const uint8_t* in, uint64_t n,
                                   const KMinOutput& out, KMinError* error,
                                   std::string* why) {
  constexpr uint32_t kSubs = 256 / SubOf(T);
  constexpr uint32_t kCodeBytes = SubOf(T) * kBits / 8;
  Params p;
  int min_k = 8;
  Acc acc;
  acc.max[0] = acc.max[1] = _mm256_setzero_ps();
  __m256d sum = _mm256_setzero_pd();
  uint64_t i = 0;
  for (; i < n; ++i) {
    const uint8_t* block = in + i * SourceOf(T);
    if (!BlockParams<T, kBits>(block, &p, &min_k, why)) break;
    const uint64_t b = i * kSubs;
    // Little-endian float32 and int32, as the scalar code's PutF32, Put32.
    if (out.scales != nullptr)
      std::memcpy(out.scales + 4 * b, p.scale, 4 * kSubs);
    if (out.zero_points != nullptr)
      std::memcpy(out.zero_points + 4 * b, p.zero, 4 * kSubs);
    if (out.zero_bytes != nullptr) {
      for (uint32_t j = 0; j < kSubs; ++j)
        out.zero_bytes[b + j] = static_cast<uint8_t>(p.zero[j]);
    }
    uint8_t* codes =
        out.codes == nullptr ? nullptr : out.codes + b * kCodeBytes;
    if (error != nullptr) {
      for (__m256& s : acc.sq) s = _mm256_setzero_ps();
      Elements<T, kBits, true>(block, p, codes, &acc);
      // 32 squares a lane in all.
      const __m256 sq = _mm256_add_ps(_mm256_add_ps(acc.sq[0], acc.sq[1]),
                                      _mm256_add_ps(acc.sq[2], acc.sq[3]));
      sum = _mm256_add_pd(sum, _mm256_cvtps_pd(_mm256_castps256_ps128(sq)));
      sum = _mm256_add_pd(sum, _mm256_cvtps_pd(_mm256_extractf128_ps(sq, 1)));
    } else if (codes != nullptr) {
      Elements<T, kBits, false>(block, p, codes, nullptr);
    }
  }
  if (error != nullptr) {
    alignas(32) float m[8];
    alignas(32) double s[4];
    _mm256_store_ps(m, _mm256_max_ps(acc.max[0], acc.max[1]));
    _mm256_store_pd(s, sum);
    error->max_abs =
        std::max<double>(error->max_abs, *std::max_element(m, m + 8));
    error->sum_sq += (s[0] + s[1]) + (s[2] + s[3]);
    error->count += i * 256;
    error->min_step_bits = std::min(error->min_step_bits, min_k);
  }
  return i;
}

}  // namespace

#undef HURRAY_KMIN_AVX2

bool HasAvx2() {
  // clang 14's __builtin_cpu_supports has no "f16c": CPUID leaf 1, ECX
  // bits 12 (FMA) and 29 (F16C).
  static const bool avx2 = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __builtin_cpu_supports("avx2") && __get_cpuid(1, &a, &b, &c, &d) &&
           (c & bit_FMA) != 0 && (c & bit_F16C) != 0;
  }();
  return avx2;
}

uint64_t RewriteAvx2(KMinType type, bool compact, const uint8_t* in, uint64_t n,
                     const KMinOutput& out, KMinError* error,
                     std::string* why) {
  switch (type) {
    case KMinType::kQ4_K:
      return compact ? RewriteT<KMinType::kQ4_K, 4>(in, n, out, error, why)
                     : RewriteT<KMinType::kQ4_K, 8>(in, n, out, error, why);
    case KMinType::kQ5_K:
      return RewriteT<KMinType::kQ5_K, 8>(in, n, out, error, why);
    case KMinType::kQ2_K:
      return compact ? RewriteT<KMinType::kQ2_K, 2>(in, n, out, error, why)
                     : RewriteT<KMinType::kQ2_K, 8>(in, n, out, error, why);
  }
  return 0;
}

#else

bool HasAvx2() { return false; }

uint64_t RewriteAvx2(KMinType, bool, const uint8_t*, uint64_t,
                     const KMinOutput&, KMinError*, std::string* why) {
  *why = "no AVX2 code on this architecture";
  return 0;
}

#endif

}  // namespace hurray::stream::convert::kmin_internal
