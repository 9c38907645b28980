// Fused 2- and 4-bit kernels of the AVX2 target, included by
// dequant/simd_kernels.cc inside its per-target namespace (issue 18).
//
// Blocked parameters only (per-tensor, per-block, per-channel along an outer
// axis); periodic runs and the 64-bit affine path keep the two-stage
// kernels. Each 32-bit word of codes (8 4-bit or 16 2-bit codes) is decoded
// straight from the packed stream, with no byte tile in between: one
// load, then per 8 outputs:
//  - affine integers: one variable left shift that puts code i at the top
//    of lane i, a shift down (arithmetic for signed codecs) and the
//    scalar reference's IEEE operations float(q - zp) · scale;
//  - NF4 and float4_e2m1: both values of each byte from a 256-entry table
//    of pairs, then value · scale.
// No cross-lane permute: on Zen 2, vpermps costs about three times a shift
// (a 16-entry lookup through two vpermps ran 2 × slower than the two-stage
// kernel there).
// Heads (a start inside a byte) go through the scalar forms; tails read only
// their own bytes and end in masked stores.

#if HWY_TARGET == HWY_AVX2

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

// Operations on `top` (code i of the vector at the top of lane i). Each has
//   kBits, Param Make(scale, zp), __m256 Apply(top, param) and
//   float Scalar(raw code, scale, zp).

// float(q - zp) · scale; kZp: the run has zero points.
template <int kBitsT, bool kSigned, bool kZp>
struct Avx2AffineOp {
  static constexpr int kBits = kBitsT;
  struct Param {
    __m256i zp;
    __m256 scale;
  };
  HWY_INLINE Param Make(float scale, int32_t zp) const {
    return {_mm256_set1_epi32(zp), _mm256_set1_ps(scale)};
  }
  HWY_INLINE __m256 Apply(__m256i top, const Param& a) const {
    __m256i q = kSigned ? _mm256_srai_epi32(top, 32 - kBits)
                        : _mm256_srli_epi32(top, 32 - kBits);
    if constexpr (kZp) q = _mm256_sub_epi32(q, a.zp);
    return _mm256_mul_ps(_mm256_cvtepi32_ps(q), a.scale);
  }
  HWY_INLINE __m256 Vector(uint32_t w, int v, const Param& a,
                           const Avx2Shifts<kBits>& s) const {
    return Apply(
        _mm256_sllv_epi32(_mm256_set1_epi32(static_cast<int>(w)), s.v[v]), a);
  }
  float Scalar(uint32_t code, float scale, int32_t zp) const {
    int32_t q = static_cast<int32_t>(code);
    if (kSigned && q >= (1 << (kBits - 1))) q -= 1 << kBits;
    return detail::AffineScalar(q, zp, scale);
  }
};

// value(code) · scale for 4-bit codes with a 16-entry table (NF4,
// float4_e2m1): every byte of codes is one 8-byte load of its two values
// from a 256-entry table (2 KiB, in L1), then one product by the scale.
// Table lookups in registers are slow on Zen 2 (two vpermps per 8 outputs
// ran at 0.17 × the store loop, four vpermilps and three blends at 0.21 ×);
// these loads go to the load ports, which the rest of the loop hardly uses.
struct Avx2PairTableOp {
  static constexpr int kBits = 4;
  using Param = __m256;
  const detail::PairTable* pairs;

  HWY_INLINE Param Make(float scale, int32_t) const {
    return _mm256_set1_ps(scale);
  }
  // The 8 codes of w (v is 0: one vector per word).
  HWY_INLINE __m256 Vector(uint32_t w, int, const Param& scale,
                           const Avx2Shifts<4>&) const {
    const double* t = pairs->v;
    const __m128d a =
        _mm_loadh_pd(_mm_load_sd(t + (w & 0xFF)), t + ((w >> 8) & 0xFF));
    const __m128d b =
        _mm_loadh_pd(_mm_load_sd(t + ((w >> 16) & 0xFF)), t + (w >> 24));
    const __m256 v =
        _mm256_castpd_ps(_mm256_insertf128_pd(_mm256_castpd128_pd256(a), b, 1));
    return _mm256_mul_ps(v, scale);
  }
  float Scalar(uint32_t code, float scale, int32_t) const {
    float lo;
    std::memcpy(&lo, &pairs->v[code & 15], 4);
    return lo * scale;
  }
};

// The 32 / kBits codes of the word at p → out.
template <class Op>
HWY_INLINE void Avx2Word(const Op& op, const uint8_t* p,
                         const typename Op::Param& a,
                         const Avx2Shifts<Op::kBits>& s, float* out) {
  uint32_t w;
  std::memcpy(&w, p, 4);
  for (int v = 0; v < kAvx2WordVectors<Op::kBits>; ++v) {
    _mm256_storeu_ps(out + 8 * v, op.Vector(w, v, a, s));
  }
}

template <class Op>
void Avx2Run(const Run& r, const Op& op, float* out, uint64_t e, size_t n,
             ParamCursor& cursor) {
  // A local copy stays in registers (the stores to `out` could alias the
  // caller's cursor).
  ParamCursor pc = cursor;
  constexpr int kBits = Op::kBits;
  constexpr uint64_t kPerByte = 8 / kBits;
  constexpr size_t S = kAvx2WordCodes<kBits>;
  const Avx2Shifts<kBits> shifts;
  const Codec raw = kBits == 4 ? Codec::kUInt4 : Codec::kUInt2;
  while (n > 0) {
    if (AtWholeBlocks<S>(pc, n) && e % kPerByte == 0) {
      const size_t k = static_cast<size_t>(pc.period);
      const size_t blocks = n / k;
      const uint8_t* p = r.src + e / kPerByte;
      const float* scales = pc.scales + pc.index;
      auto step = [&](size_t i, const typename Op::Param& a) {
        Avx2Word(op, p + i / kPerByte, a, shifts, out + i);
      };
      if (pc.zero_points != nullptr) {
        const int32_t* zps = pc.zero_points + pc.index;
        WholeBlocks<S>(
            k, blocks, [&](size_t b) { return op.Make(scales[b], zps[b]); },
            step);
      } else {
        WholeBlocks<S>(
            k, blocks, [&](size_t b) { return op.Make(scales[b], 0); }, step);
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
    const typename Op::Param a = op.Make(scale, zp);
    size_t i = 0;
    for (; i < len && (e + i) % kPerByte != 0; ++i) {
      out[i] = op.Scalar(ReadRawCode(r.src, e + i, raw), scale, zp);
    }
    const uint8_t* p = r.src + (e + i) / kPerByte;
    for (; i + S <= len; i += S, p += 4) Avx2Word(op, p, a, shifts, out + i);
    if (i < len) {
      // Fewer than a word of codes: only their bytes are read.
      const size_t rem = len - i;
      uint32_t w = 0;
      std::memcpy(&w, p, (rem + kPerByte - 1) / kPerByte);
      const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
      for (int v = 0; v < kAvx2WordVectors<kBits> && 8 * v < rem; ++v) {
        const __m256i keep = _mm256_cmpgt_epi32(
            _mm256_set1_epi32(static_cast<int>(rem) - 8 * v), lanes);
        _mm256_maskstore_ps(out + i + 8 * v, keep, op.Vector(w, v, a, shifts));
      }
    }
    out += len;
    e += len;
    n -= len;
    pc.Advance(len);
  }
  cursor = pc;
}

template <class Op>
void Avx2Fused(const Run& r, const Op& op) {
  FusedRun(r, [&](float* out, uint64_t e, size_t n, ParamCursor& pc) {
    Avx2Run(r, op, out, e, n, pc);
  });
}

template <int kBits, bool kSigned>
void Avx2FusedAffine(const Run& r) {
  if (r.zero_points != nullptr) {
    Avx2Fused(r, Avx2AffineOp<kBits, kSigned, true>());
  } else {
    Avx2Fused(r, Avx2AffineOp<kBits, kSigned, false>());
  }
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
    case Codec::kNf4:
      Avx2Fused(r, Avx2PairTableOp{&detail::Nf4Pairs()});
      return true;
    case Codec::kFloat4E2M1:
      Avx2Fused(r, Avx2PairTableOp{&detail::Fp4Pairs()});
      return true;
    default:
      return false;
  }
}

#endif  // HWY_TARGET == HWY_AVX2
