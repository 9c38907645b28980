// Fused sub-byte kernels of the AVX2 target, included by
// dequant/simd_kernels.cc inside its per-target namespace (issue 18).
//
// Blocked parameters only (per-tensor, per-block, per-channel along an outer
// axis); periodic runs and the 64-bit affine path keep the two-stage
// kernels. Codes are decoded straight from the packed stream, with no byte
// tile in between, one step of 8 or 16 codes at a time (one load of their
// 4 bytes), then per 8 outputs:
//  - 2- and 4-bit affine integers: a broadcast, one variable left shift that
//    puts code i at the top of lane i, a shift down (arithmetic for signed
//    codecs) and the scalar reference's IEEE operations float(q - zp) ·
//    scale;
//  - NF4 and float4_e2m1: the values of the two codes of a byte by one
//    8-byte load from a 256-entry table of value pairs (2 KiB), then
//    value · scale.
// No table lookup in registers: on Zen 2, vpermps costs about three times a
// shift, and a 16-entry lookup through two vpermps (or four vpermilps and
// three blends) ran 2 × slower than these loads, which go to the load ports
// the rest of the loop hardly uses. (The same pair loads for float6, from a
// 32 KiB table of 12-bit fields, ran no faster than the two-stage kernel:
// the table does not stay in L1.)
// Heads (a start inside a byte) go through the scalar forms; tails read
// only their own bytes and end in masked stores.

#if HWY_TARGET == HWY_AVX2

// A step of a kBits codec: the kStepCodes codes of one 32-bit word, in
// kVectors vectors of 8; steps start on whole bytes (kPerByte codes).
template <int kBits>
struct Avx2Packing {
  static_assert(kBits == 2 || kBits == 4);
  static constexpr size_t kStepCodes = 32 / kBits;
  static constexpr uint64_t kPerByte = 8 / kBits;
  static constexpr int kVectors = static_cast<int>(kStepCodes / 8);
  static constexpr Codec kRaw = kBits == 2 ? Codec::kUInt2 : Codec::kUInt4;
  // Byte offset of code e, a multiple of kPerByte.
  static constexpr uint64_t ByteOf(uint64_t e) { return e / kPerByte; }
};

// Operations. Each has kBits, Param Make(scale, zp),
// __m256 Vector(step word w, vector v of the step, param) and
// float Scalar(raw code, scale, zp).

// float(q - zp) · scale; kZp: the run has zero points.
template <int kBitsT, bool kSigned, bool kZp>
struct Avx2AffineOp {
  static constexpr int kBits = kBitsT;
  struct Param {
    __m256i zp;
    __m256 scale;
  };
  // Lane i of vector v shifts the broadcast word left so that code 8v + i
  // ends at the top of the lane.
  __m256i shifts[Avx2Packing<kBits>::kVectors];

  Avx2AffineOp() {
    for (int v = 0; v < Avx2Packing<kBits>::kVectors; ++v) {
      const int top = 32 - 8 * v * kBits;
      shifts[v] = _mm256_setr_epi32(
          top - kBits, top - 2 * kBits, top - 3 * kBits, top - 4 * kBits,
          top - 5 * kBits, top - 6 * kBits, top - 7 * kBits, top - 8 * kBits);
    }
  }
  HWY_INLINE Param Make(float scale, int32_t zp) const {
    return {_mm256_set1_epi32(zp), _mm256_set1_ps(scale)};
  }
  HWY_INLINE __m256 Vector(uint32_t w, int v, const Param& a) const {
    const __m256i top =
        _mm256_sllv_epi32(_mm256_set1_epi32(static_cast<int>(w)), shifts[v]);
    __m256i q = kSigned ? _mm256_srai_epi32(top, 32 - kBits)
                        : _mm256_srli_epi32(top, 32 - kBits);
    if constexpr (kZp) q = _mm256_sub_epi32(q, a.zp);
    return _mm256_mul_ps(_mm256_cvtepi32_ps(q), a.scale);
  }
  float Scalar(uint32_t code, float scale, int32_t zp) const {
    int32_t q = static_cast<int32_t>(code);
    if (kSigned && q >= (1 << (kBits - 1))) q -= 1 << kBits;
    return detail::AffineScalar(q, zp, scale);
  }
};

// value(code) · scale through a table of value pairs: entry b holds the
// values of the two codes of byte b (low code first).
struct Avx2PairTableOp {
  static constexpr int kBits = 4;
  using Param = __m256;
  const double* pairs;

  HWY_INLINE Param Make(float scale, int32_t) const {
    return _mm256_set1_ps(scale);
  }
  // The 8 codes of w (v is 0: one vector per step).
  HWY_INLINE __m256 Vector(uint32_t w, int, const Param& scale) const {
    const double* t = pairs;
    const __m128d a =
        _mm_loadh_pd(_mm_load_sd(t + (w & 0xFF)), t + ((w >> 8) & 0xFF));
    const __m128d b =
        _mm_loadh_pd(_mm_load_sd(t + ((w >> 16) & 0xFF)), t + (w >> 24));
    const __m256 v =
        _mm256_castpd_ps(_mm256_insertf128_pd(_mm256_castpd128_pd256(a), b, 1));
    return _mm256_mul_ps(v, scale);
  }
  float Scalar(uint32_t code, float scale, int32_t) const {
    float value;  // the low code of entry `code` is `code`
    std::memcpy(&value, &pairs[code], 4);
    return value * scale;
  }
};

// The step of codes at p → out.
template <class Op>
HWY_INLINE void Avx2Step(const Op& op, const uint8_t* p,
                         const typename Op::Param& a, float* out) {
  using Pk = Avx2Packing<Op::kBits>;
  uint32_t w;
  std::memcpy(&w, p, 4);
  for (int v = 0; v < Pk::kVectors; ++v) {
    _mm256_storeu_ps(out + 8 * v, op.Vector(w, v, a));
  }
}

template <class Op>
void Avx2Run(const Run& r, const Op& op_in, float* out, uint64_t e, size_t n,
             ParamCursor& cursor) {
  // Local copies stay in registers (the stores to `out` could alias the
  // caller's cursor and op).
  ParamCursor pc = cursor;
  const Op op = op_in;
  using Pk = Avx2Packing<Op::kBits>;
  constexpr size_t S = Pk::kStepCodes;
  while (n > 0) {
    if (AtWholeBlocks<S>(pc, n) && e % Pk::kPerByte == 0) {
      const size_t k = static_cast<size_t>(pc.period);
      const size_t blocks = n / k;
      const uint8_t* p = r.src + Pk::ByteOf(e);
      const float* scales = pc.scales + pc.index;
      auto step = [&](size_t i, const typename Op::Param& a) {
        Avx2Step(op, p + Pk::ByteOf(i), a, out + i);
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
    for (; i < len && (e + i) % Pk::kPerByte != 0; ++i) {
      out[i] = op.Scalar(ReadRawCode(r.src, e + i, Pk::kRaw), scale, zp);
    }
    const uint8_t* p = r.src + Pk::ByteOf(e + i);
    for (; i + S <= len; i += S, p += 4) {
      Avx2Step(op, p, a, out + i);
    }
    if (i < len) {
      // Less than a step: only the bytes of these codes are read.
      const size_t rem = len - i;
      uint32_t w = 0;
      std::memcpy(&w, p, (rem + Pk::kPerByte - 1) / Pk::kPerByte);
      const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
      for (int v = 0; v < Pk::kVectors && 8 * v < rem; ++v) {
        const __m256i keep = _mm256_cmpgt_epi32(
            _mm256_set1_epi32(static_cast<int>(rem) - 8 * v), lanes);
        _mm256_maskstore_ps(out + i + 8 * v, keep, op.Vector(w, v, a));
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
      Avx2Fused(r, Avx2PairTableOp{detail::Nf4Pairs().v});
      return true;
    case Codec::kFloat4E2M1:
      Avx2Fused(r, Avx2PairTableOp{detail::Fp4Pairs().v});
      return true;
    default:
      return false;
  }
}

#endif  // HWY_TARGET == HWY_AVX2
