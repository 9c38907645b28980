// Fused kernels of the AVX2 target for 8-bit and sub-byte codes and
// minifloats, included by dequant/simd_kernels.cc inside its per-target
// namespace (issue 18).
//
// Blocked parameters only (per-tensor, per-block, per-channel along an outer
// axis); periodic runs and the 64-bit affine path keep the two-stage
// kernels. Codes are decoded straight from the packed stream, with no byte
// tile in between, one step of 8 or 16 codes at a time (one load of their
// bytes), then per 8 outputs:
//  - 2- and 4-bit affine integers: a broadcast, one variable left shift that
//    puts code i at the top of lane i, a shift down (arithmetic for signed
//    codecs) and the scalar reference's IEEE operations float(q - zp) ·
//    scale;
//  - NF4 and float4_e2m1: the values of the two codes of a byte by one
//    8-byte load from a 256-entry table of value pairs (2 KiB), then
//    value · scale;
//  - 8-bit affine integers: 16 codes per step, each half widened to int32
//    lanes, then float(q - zp) · scale;
//  - float8 and float6: 16 codes per step made binary16 in 16-bit lanes
//    (float6: a byte shuffle and a product by a power of two per lane
//    bring each code to the top of its lane), widened by vcvtph2ps, then
//    value · scale.
// No table lookup in registers: on Zen 2, vpermps costs about three times a
// shift, and a 16-entry lookup through two vpermps (or four vpermilps and
// three blends) ran 2 × slower than these loads, which go to the load ports
// the rest of the loop hardly uses. (The same pair loads for float6, from a
// 32 KiB table of 12-bit fields, ran no faster than the two-stage kernel:
// the table does not stay in L1.)
// Heads (a start inside a byte or float6 group) go through the scalar forms;
// tails read only their own bytes and end in masked stores.

#if HWY_TARGET == HWY_AVX2

// A step of a kBits codec: kStepCodes codes (kStepBytes bytes) in kVectors
// vectors of 8. Steps start on a whole-byte group of kGroupCodes codes
// (kGroupBytes bytes: 3 for 6-bit codes, else 1).
template <int kBits>
struct Avx2Packing {
  static_assert(kBits == 2 || kBits == 4 || kBits == 6 || kBits == 8);
  static constexpr size_t kStepCodes = kBits <= 4 ? 32 / kBits : 16;
  static constexpr size_t kStepBytes = kStepCodes * kBits / 8;
  static constexpr uint64_t kGroupCodes = kBits == 6 ? 4 : 8 / kBits;
  static constexpr uint64_t kGroupBytes = kBits == 6 ? 3 : 1;
  static constexpr int kVectors = static_cast<int>(kStepCodes / 8);
  // The raw field reader of the scalar heads.
  static constexpr Codec kRaw = kBits == 2   ? Codec::kUInt2
                                : kBits == 4 ? Codec::kUInt4
                                : kBits == 6 ? Codec::kFloat6E2M3
                                             : Codec::kUInt8;
  // Byte offset of code e, a multiple of kGroupCodes.
  static constexpr uint64_t ByteOf(uint64_t e) {
    return e / kGroupCodes * kGroupBytes;
  }
  // Bytes that hold n codes from a group start.
  static constexpr size_t BytesOf(size_t n) { return (n * kBits + 7) / 8; }
};

// Operations. Each has kBits, Param Make(scale, zp), Word Load(step bytes)
// (reads exactly kStepBytes), __m256 Vector(word, vector v of the step,
// param) and float Scalar(raw code, scale, zp).

// float(q - zp) · scale; kZp: the run has zero points.
template <int kBitsT, bool kSigned, bool kZp>
struct Avx2AffineOp {
  static constexpr int kBits = kBitsT;
  struct Param {
    __m256i zp;
    __m256 scale;
  };
  using Word = uint32_t;
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
  static HWY_INLINE Word Load(const uint8_t* p) {
    Word w;
    std::memcpy(&w, p, 4);
    return w;
  }
  HWY_INLINE __m256 Vector(Word w, int v, const Param& a) const {
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

// float(q - zp) · scale for 8-bit integer codes, 16 per step: one 16-byte
// load, each half widened to int32 lanes. In L2 (64 Ki outputs, runs
// alternating with the two-stage Highway kernels' binary) per_tensor and
// per_channel went from 0.88-0.90 to 0.93-0.96 of the store loop, MXFP int8
// from 0.885-0.895 to 0.90-0.925; per_block stayed at 0.88-0.89
// (bench/RESULTS.md, issue 18).
template <bool kSigned, bool kZp>
struct Avx2Affine8Op {
  static constexpr int kBits = 8;
  struct Param {
    __m256i zp;
    __m256 scale;
  };
  using Word = __m128i;

  HWY_INLINE Param Make(float scale, int32_t zp) const {
    return {_mm256_set1_epi32(zp), _mm256_set1_ps(scale)};
  }
  static HWY_INLINE Word Load(const uint8_t* p) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  }
  HWY_INLINE __m256 Vector(Word w, int v, const Param& a) const {
    const __m128i x = v == 0 ? w : _mm_unpackhi_epi64(w, w);
    __m256i q = kSigned ? _mm256_cvtepi8_epi32(x) : _mm256_cvtepu8_epi32(x);
    if constexpr (kZp) q = _mm256_sub_epi32(q, a.zp);
    return _mm256_mul_ps(_mm256_cvtepi32_ps(q), a.scale);
  }
  float Scalar(uint32_t code, float scale, int32_t zp) const {
    int32_t q = static_cast<int32_t>(code);
    if (kSigned && q >= 128) q -= 256;
    return detail::AffineScalar(q, zp, scale);
  }
};

// value(code) · scale through a table of value pairs: entry b holds the
// values of the two codes of byte b (low code first).
struct Avx2PairTableOp {
  static constexpr int kBits = 4;
  using Param = __m256;
  using Word = uint32_t;
  const double* pairs;

  HWY_INLINE Param Make(float scale, int32_t) const {
    return _mm256_set1_ps(scale);
  }
  static HWY_INLINE Word Load(const uint8_t* p) {
    return Avx2AffineOp<4, false, false>::Load(p);
  }
  // The 8 codes of w (v is 0: one vector per step).
  HWY_INLINE __m256 Vector(Word w, int, const Param& scale) const {
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

// float8 and float6 codes, 16 per step: each code's fields placed in a
// binary16 as MinifloatDecoder does (value · 2^(kBias − 15), subnormals
// included; float8_e4m3's NaN codes made the binary16 quiet NaN), widened
// exactly by vcvtph2ps, then · 2^(15 − kBias) · scale, the two factors
// folded into one product when that is finite (DecodeOp's rule: the same
// real product, so the same rounding).
template <Codec kCodec>
struct Avx2MinifloatOp {
  static constexpr bool kFloat8 =
      kCodec == Codec::kFloat8E4M3 || kCodec == Codec::kFloat8E5M2;
  static constexpr int kBits = kFloat8 ? 8 : 6;
  static constexpr int kMan =
      kCodec == Codec::kFloat8E5M2 || kCodec == Codec::kFloat6E3M2 ? 2 : 3;
  static constexpr int kBias = kCodec == Codec::kFloat8E4M3   ? 7
                               : kCodec == Codec::kFloat8E5M2 ? 15
                               : kCodec == Codec::kFloat6E2M3 ? 1
                                                              : 3;
  static constexpr float kRebias = static_cast<float>(1 << (15 - kBias));
  struct Param {
    __m256 scale;   // scale · kRebias when that is finite, else scale
    bool unfolded;  // then a product by kRebias comes first (rare: huge
                    // MXFP scales)
  };
  using Word = __m256i;  // the step's 16 binary16 values

  HWY_INLINE Param Make(float scale, int32_t) const {
    const float folded = scale * kRebias;
    const bool fold = kBias == 15 || std::isfinite(folded);
    return {_mm256_set1_ps(fold ? folded : scale), !fold};
  }

  static HWY_INLINE Word Load(const uint8_t* p) {
    if constexpr (kCodec == Codec::kFloat8E5M2) {
      // The top byte of a binary16, infinities and NaNs included.
      return _mm256_slli_epi16(_mm256_cvtepu8_epi16(_mm_loadu_si128(
                                   reinterpret_cast<const __m128i*>(p))),
                               8);
    } else if constexpr (kCodec == Codec::kFloat8E4M3) {
      // Sign-extended and shifted: the sign lands at bits 14 and 15, the
      // magnitude at bits 7-13; clearing bit 14 leaves the binary16.
      // S.1111.111 (NaN), either sign, is the one x with x | 0xC000 ==
      // 0xFF80; it becomes the binary16 quiet NaN 0x7E00, sign kept
      // (0x3F80 ^ 0x4180).
      const __m256i x = _mm256_slli_epi16(
          _mm256_cvtepi8_epi16(
              _mm_loadu_si128(reinterpret_cast<const __m128i*>(p))),
          7);
      const __m256i nan =
          _mm256_cmpeq_epi16(_mm256_or_si256(x, _mm256_set1_epi16(-0x4000)),
                             _mm256_set1_epi16(-0x80));
      const __m256i h = _mm256_and_si256(x, _mm256_set1_epi16(-0x4001));
      return _mm256_xor_si256(h,
                              _mm256_and_si256(nan, _mm256_set1_epi16(0x4180)));
    } else {
      // 12 bytes: codes 0-7 in bytes 0-5 (low lane), 8-15 in bytes 6-11
      // (high lane, loaded from byte 4). Code i of a lane starts at bit 6i:
      // its lane gathers the two bytes around it, and a product by
      // 2^(10 − 6i mod 8) puts its top bit (the sign) at bit 15.
      const __m128i lo = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
      const __m128i hi =
          _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 4));
      const __m256i bytes =
          _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
      const __m256i gather = _mm256_setr_epi8(
          0, 1, 0, 1, 1, 2, 2, 3, 3, 4, 3, 4, 4, 5, 5, -128,  //
          2, 3, 2, 3, 3, 4, 4, 5, 5, 6, 5, 6, 6, 7, 7, -128);
      const __m256i to_top = _mm256_setr_epi16(
          1 << 10, 1 << 4, 1 << 6, 1 << 8, 1 << 10, 1 << 4, 1 << 6, 1 << 8,
          1 << 10, 1 << 4, 1 << 6, 1 << 8, 1 << 10, 1 << 4, 1 << 6, 1 << 8);
      const __m256i top =
          _mm256_mullo_epi16(_mm256_shuffle_epi8(bytes, gather), to_top);
      // An arithmetic shift ends exponent and mantissa at the top of the
      // binary16 mantissa; the mask keeps them and one copy of the sign.
      constexpr int kKeep = 0x8000 | (0x7C00 >> kMan);
      return _mm256_and_si256(_mm256_srai_epi16(top, kMan),
                              _mm256_set1_epi16(static_cast<int16_t>(kKeep)));
    }
  }

  HWY_INLINE __m256 Vector(const Word& w, int v, const Param& a) const {
    const __m128i h =
        v == 0 ? _mm256_castsi256_si128(w) : _mm256_extracti128_si256(w, 1);
    __m256 f = _mm256_cvtph_ps(h);
    if (kBias != 15 && HWY_UNLIKELY(a.unfolded)) {
      f = _mm256_mul_ps(f, _mm256_set1_ps(kRebias));
    }
    return _mm256_mul_ps(f, a.scale);
  }

  float Scalar(uint32_t code, float scale, int32_t) const {
    const uint8_t c = static_cast<uint8_t>(code);
    switch (kCodec) {
      case Codec::kFloat8E4M3:
        return Float8E4M3ToF32(c) * scale;
      case Codec::kFloat8E5M2:
        return Float8E5M2ToF32(c) * scale;
      case Codec::kFloat6E2M3:
        return Float6E2M3ToF32(c) * scale;
      default:
        return Float6E3M2ToF32(c) * scale;
    }
  }
};

// Stores 8 floats at out: non-temporal when kStream and out is on a whole
// vector (the non-temporal store needs it) outside the first line of a
// page (StoresNonTemporal), else the ordinary store.
template <bool kStream, bool kAsk = true>
HWY_INLINE void StoreOut(float* out, __m256 v) {
  if constexpr (kStream) {
    if (StoresNonTemporal(out, 32)) {
      _mm256_stream_ps(out, v);
      return;
    }
  } else if constexpr (kAsk) {
    // Cached outputs: ask for the line ahead (PrefetchForWrite). Not in
    // streamed runs, where a non-temporal store may write that line next.
    PrefetchForWrite(out);
  }
  _mm256_storeu_ps(out, v);
}

// The step of codes at p → out. A step of two vectors (16 outputs) asks for
// a line ahead once, before its first store: steps are contiguous, so the
// requests stay 64 bytes apart and every line is asked for, whatever the
// alignment. (Steps of one vector, 4-bit codes, ask before each store.)
// Asking before every 32-byte store instead cost per_block int8 0.93 ->
// 0.885 of the store loop in L2 and MXFP int8 0.94 -> 0.90 (alternating
// runs; bench/RESULTS.md, issue 18).
template <bool kStream, class Op>
HWY_INLINE void Avx2Step(const Op& op, const uint8_t* p,
                         const typename Op::Param& a, float* out) {
  using Pk = Avx2Packing<Op::kBits>;
  const typename Op::Word w = Op::Load(p);
  for (int v = 0; v < Pk::kVectors; ++v) {
    if (Pk::kVectors % 2 == 0 && v % 2 == 1) {
      StoreOut<kStream, false>(out + 8 * v, op.Vector(w, v, a));
    } else {
      StoreOut<kStream>(out + 8 * v, op.Vector(w, v, a));
    }
  }
}

template <bool kStream, class Op>
void Avx2Run(const Run& r, const Op& op_in, float* out, uint64_t e, size_t n,
             ParamCursor& cursor) {
  // Local copies stay in registers (the stores to `out` could alias the
  // caller's cursor and op).
  ParamCursor pc = cursor;
  const Op op = op_in;
  using Pk = Avx2Packing<Op::kBits>;
  constexpr size_t S = Pk::kStepCodes;
  while (n > 0) {
    if (AtWholeBlocks<S>(pc, n) && e % Pk::kGroupCodes == 0) {
      const size_t k = static_cast<size_t>(pc.period);
      const size_t blocks = n / k;
      const uint8_t* p = r.src + Pk::ByteOf(e);
      const float* scales = pc.scales + pc.index;
      auto step = [&](size_t i, const typename Op::Param& a) {
        Avx2Step<kStream>(op, p + Pk::ByteOf(i), a, out + i);
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
    for (; i < len && (e + i) % Pk::kGroupCodes != 0; ++i) {
      out[i] = op.Scalar(ReadRawCode(r.src, e + i, Pk::kRaw), scale, zp);
    }
    const uint8_t* p = r.src + Pk::ByteOf(e + i);
    for (; i + S <= len; i += S, p += Pk::kStepBytes) {
      Avx2Step<kStream>(op, p, a, out + i);
    }
    if (i < len) {
      // Less than a step: only the bytes of these codes are read.
      const size_t rem = len - i;
      alignas(16) uint8_t bytes[Pk::kStepBytes] = {};
      std::memcpy(bytes, p, Pk::BytesOf(rem));
      const typename Op::Word w = Op::Load(bytes);
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
  FusedRun(r,
           [&](auto stream, float* out, uint64_t e, size_t n, ParamCursor& pc) {
             Avx2Run<decltype(stream)::value>(r, op, out, e, n, pc);
           });
}

// The affine operation of kBits-bit codes.
template <int kBits, bool kSigned, bool kZp>
using Avx2AffineOpFor =
    std::conditional_t<kBits == 8, Avx2Affine8Op<kSigned, kZp>,
                       Avx2AffineOp<kBits, kSigned, kZp>>;

template <int kBits, bool kSigned>
void Avx2FusedAffine(const Run& r) {
  if (r.zero_points != nullptr) {
    Avx2Fused(r, Avx2AffineOpFor<kBits, kSigned, true>());
  } else {
    Avx2Fused(r, Avx2AffineOpFor<kBits, kSigned, false>());
  }
}

// True when the run was dequantized here.
bool TryFusedAvx2(const Run& r) {
  if (r.periodic || r.wide) return false;
  switch (r.codec) {
    case Codec::kInt8:
      Avx2FusedAffine<8, true>(r);
      return true;
    case Codec::kUInt8:
      Avx2FusedAffine<8, false>(r);
      return true;
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
    case Codec::kFloat8E4M3:
      Avx2Fused(r, Avx2MinifloatOp<Codec::kFloat8E4M3>());
      return true;
    case Codec::kFloat8E5M2:
      Avx2Fused(r, Avx2MinifloatOp<Codec::kFloat8E5M2>());
      return true;
    case Codec::kFloat6E2M3:
      Avx2Fused(r, Avx2MinifloatOp<Codec::kFloat6E2M3>());
      return true;
    case Codec::kFloat6E3M2:
      Avx2Fused(r, Avx2MinifloatOp<Codec::kFloat6E3M2>());
      return true;
    default:
      return false;
  }
}

#endif  // HWY_TARGET == HWY_AVX2
