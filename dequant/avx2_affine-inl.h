// Fused 2- and 4-bit affine kernels of the AVX2 target, included by
// dequant/simd_kernels.cc inside its per-target namespace (issue 18).
//
// Blocked parameters only (per-tensor, per-block, per-channel along an outer
// axis); periodic runs and the 64-bit affine path keep the two-stage
// kernels. Each 32-bit word of codes (8 4-bit or 16 2-bit codes) is decoded
// straight from the packed stream, with no byte tile in between: one
// broadcast load, then per 8 outputs one variable left shift that puts
// code i at the top of lane i, one shift right (arithmetic for signed
// codecs) that brings it down, and the scalar reference's IEEE operations
// float(q - zp) · scale. No lane permute: on Zen
// 2, vpermps costs about three times a shift (a fused table lookup through
// two vpermps ran 2 × slower than the two-stage kernel there).
// Heads (a start inside a byte) go through the scalar form; tails read only
// their own bytes and end in a masked store.

#if HWY_TARGET == HWY_AVX2

// The parameter of one sub-run, broadcast.
struct Avx2Affine {
  __m256i zp;
  __m256 scale;
};

// Lane i of vector v shifts the broadcast word left so that code 8v + i
// ends at the top of the lane.
template <int kBits>
HWY_INLINE __m256i Avx2CodeShifts(int v) {
  const int top = 32 - 8 * v * kBits;
  return _mm256_setr_epi32(top - kBits, top - 2 * kBits, top - 3 * kBits,
                           top - 4 * kBits, top - 5 * kBits, top - 6 * kBits,
                           top - 7 * kBits, top - 8 * kBits);
}

// Codes per 32-bit word, and vectors of 8 outputs per word.
template <int kBits>
inline constexpr size_t kAvx2WordCodes = 32 / kBits;
template <int kBits>
inline constexpr int kAvx2WordVectors = 4 / kBits;

template <int kBits>
struct Avx2Shifts {
  __m256i v[kAvx2WordVectors<kBits>];
  Avx2Shifts() {
    for (int i = 0; i < kAvx2WordVectors<kBits>; ++i) {
      v[i] = Avx2CodeShifts<kBits>(i);
    }
  }
};

// Vector v of the codes of `word` (code i at bit i · kBits) →
// float(q - zp) · scale.
template <int kBits, bool kSigned, bool kZp>
HWY_INLINE __m256 Avx2Affine8(__m256i word, const Avx2Affine& a,
                              __m256i shifts) {
  const __m256i top = _mm256_sllv_epi32(word, shifts);
  __m256i q = kSigned ? _mm256_srai_epi32(top, 32 - kBits)
                      : _mm256_srli_epi32(top, 32 - kBits);
  if constexpr (kZp) q = _mm256_sub_epi32(q, a.zp);
  return _mm256_mul_ps(_mm256_cvtepi32_ps(q), a.scale);
}

// The 32 / kBits codes of the word at p → out.
template <int kBits, bool kSigned, bool kZp>
HWY_INLINE void Avx2AffineWord(const uint8_t* p, const Avx2Affine& a,
                               const Avx2Shifts<kBits>& s, float* out) {
  uint32_t w;
  std::memcpy(&w, p, 4);
  const __m256i word = _mm256_set1_epi32(static_cast<int>(w));
  for (int v = 0; v < kAvx2WordVectors<kBits>; ++v) {
    _mm256_storeu_ps(out + 8 * v,
                     Avx2Affine8<kBits, kSigned, kZp>(word, a, s.v[v]));
  }
}

template <int kBits, bool kSigned>
void Avx2AffineRun(const Run& r, float* out, uint64_t e, size_t n,
                   ParamCursor& cursor) {
  // A local copy stays in registers (the stores to `out` could alias the
  // caller's cursor).
  ParamCursor pc = cursor;
  constexpr uint64_t kPerByte = 8 / kBits;
  constexpr size_t S = kAvx2WordCodes<kBits>;
  const Avx2Shifts<kBits> shifts;
  const Codec raw = kBits == 4 ? Codec::kUInt4 : Codec::kUInt2;
  constexpr int32_t kMod = 1 << kBits;
  while (n > 0) {
    if (AtWholeBlocks<S>(pc, n) && e % kPerByte == 0) {
      const size_t k = static_cast<size_t>(pc.period);
      const size_t blocks = n / k;
      const uint8_t* p = r.src + e / kPerByte;
      const float* scales = pc.scales + pc.index;
      if (pc.zero_points != nullptr) {
        const int32_t* zps = pc.zero_points + pc.index;
        WholeBlocks<S>(
            k, blocks,
            [&](size_t b) {
              return Avx2Affine{_mm256_set1_epi32(zps[b]),
                                _mm256_set1_ps(scales[b])};
            },
            [&](size_t i, const Avx2Affine& a) {
              Avx2AffineWord<kBits, kSigned, true>(p + i / kPerByte, a, shifts,
                                                   out + i);
            });
      } else {
        WholeBlocks<S>(
            k, blocks,
            [&](size_t b) {
              return Avx2Affine{_mm256_setzero_si256(),
                                _mm256_set1_ps(scales[b])};
            },
            [&](size_t i, const Avx2Affine& a) {
              Avx2AffineWord<kBits, kSigned, false>(p + i / kPerByte, a, shifts,
                                                    out + i);
            });
      }
      out += blocks * k;
      e += blocks * k;
      n -= blocks * k;
      pc.index += blocks;
      continue;
    }
    const size_t len = static_cast<size_t>(std::min<uint64_t>(n, pc.left));
    const int32_t zp = pc.zero_points ? pc.zero_points[pc.index] : 0;
    const float scale = pc.scales[pc.index];
    const Avx2Affine a{_mm256_set1_epi32(zp), _mm256_set1_ps(scale)};
    size_t i = 0;
    for (; i < len && (e + i) % kPerByte != 0; ++i) {
      int32_t q = static_cast<int32_t>(ReadRawCode(r.src, e + i, raw));
      if (kSigned && q >= kMod / 2) q -= kMod;
      out[i] = detail::AffineScalar(q, zp, scale);
    }
    const uint8_t* p = r.src + (e + i) / kPerByte;
    for (; i + S <= len; i += S, p += 4) {
      Avx2AffineWord<kBits, kSigned, true>(p, a, shifts, out + i);
    }
    if (i < len) {
      // Fewer than a word of codes: only their bytes are read.
      const size_t rem = len - i;
      uint32_t w = 0;
      std::memcpy(&w, p, (rem + kPerByte - 1) / kPerByte);
      const __m256i word = _mm256_set1_epi32(static_cast<int>(w));
      const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
      for (int v = 0; v < kAvx2WordVectors<kBits> && 8 * v < rem; ++v) {
        const __m256i keep = _mm256_cmpgt_epi32(
            _mm256_set1_epi32(static_cast<int>(rem) - 8 * v), lanes);
        _mm256_maskstore_ps(
            out + i + 8 * v, keep,
            Avx2Affine8<kBits, kSigned, true>(word, a, shifts.v[v]));
      }
    }
    out += len;
    e += len;
    n -= len;
    pc.Advance(len);
  }
  cursor = pc;
}

template <int kBits, bool kSigned>
void Avx2FusedAffine(const Run& r) {
  FusedRun(r, [&](float* out, uint64_t e, size_t n, ParamCursor& pc) {
    Avx2AffineRun<kBits, kSigned>(r, out, e, n, pc);
  });
}

// True when the run was dequantized here.
bool TryFusedAvx2(const Run& r) {
  if (r.periodic || r.wide) return false;
  switch (r.codec) {
    case Codec::kInt4:
      Avx2FusedAffine<4, true>(r);
      return true;
    case Codec::kUInt4:
      Avx2FusedAffine<4, false>(r);
      return true;
    case Codec::kInt2:
      Avx2FusedAffine<2, true>(r);
      return true;
    case Codec::kUInt2:
      Avx2FusedAffine<2, false>(r);
      return true;
    default:
      return false;
  }
}

#endif  // HWY_TARGET == HWY_AVX2
