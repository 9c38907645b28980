// Fused kernels of the AVX3_DL target (AVX-512 with VBMI), included by
// dequant/simd_kernels.cc inside its per-target namespace (issue 18).
//
// Blocked parameters only (per-tensor, per-block, per-channel along an outer
// axis). Each parameter sub-run decodes straight from the packed stream, with
// no byte tile in between:
//  - 2- and 4-bit codes (affine integers, NF4, float4_e2m1) have at most 16
//    values under one parameter: a 16-float table value(code) · scale is
//    computed once per sub-run with the same IEEE operations as the scalar
//    reference (float(q - zp) · scale, or value · scale), and every group of
//    16 outputs is one broadcast load, one multishift (the code's bits in
//    the low byte of its lane) and one vpermps.
//  - float8_e4m3 and the float6 codes are exact bfloat16 values, and an
//    MXFP scale is a power of two 2^k: under a scale whose k keeps every
//    product normal, value · scale is the bfloat16 with k added to its
//    exponent, an integer add. float6: 32 magnitudes' words plus k per
//    block, one vpermw per 16 outputs, the sign copied; e4m3: the two bytes
//    of the magnitude's bfloat16 from 128-byte tables (vpermi2b, 64 codes
//    at a time, subnormal codes included), the sign copied, k added to
//    every word but zero's and NaN's (F6Decoder, E4M3Decoder::Words64).
//    No floating-point operation: on the Xeon of
//    issue 18 a 512-bit one slows the core (JoinHalves). Other scales, and
//    heads and tails: byte tables built from the scalar decoders (vpermb /
//    vpermi2b), then a product by the scale in 256 bits.
// Heads and tails: masked loads (never a byte past the run's groups) and
// masked stores; an unaligned first code goes through the scalar forms.

#if HWY_TARGET == HWY_AVX3_DL

// Byte tables of an 8-bit-or-less minifloat whose values are exact
// bfloat16: hi[m] and lo[m] are bytes 3 and 2 of the float32 bits of the
// magnitude code m (128 entries: e4m3), or of the whole code (64: float6).
struct BfTables {
  alignas(64) uint8_t hi[128];
  alignas(64) uint8_t lo[128];
  bool ok;  // every value has zero low 16 bits (and, for e4m3, no sign and
            // a clear bit 16)
};

template <Codec kCodec>
const BfTables& BfTablesOf() {
  static const BfTables t = [] {
    BfTables r{};
    r.ok = true;
    const int entries = kCodec == Codec::kFloat8E4M3 ? 128 : 64;
    for (int m = 0; m < entries; ++m) {
      float f;
      switch (kCodec) {
        case Codec::kFloat8E4M3:
          f = Float8E4M3ToF32(static_cast<uint8_t>(m));
          break;
        case Codec::kFloat6E2M3:
          f = Float6E2M3ToF32(static_cast<uint8_t>(m));
          break;
        default:
          f = Float6E3M2ToF32(static_cast<uint8_t>(m));
          break;
      }
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      if ((bits & 0xFFFF) != 0) r.ok = false;
      if (kCodec == Codec::kFloat8E4M3 && (bits >> 31) != 0) r.ok = false;
      // E4M3Decoder marks the magnitudes a scale changes in bit 16.
      if (kCodec == Codec::kFloat8E4M3 && (bits & 0x10000u) != 0) r.ok = false;
      r.hi[m] = static_cast<uint8_t>(bits >> 24);
      r.lo[m] = static_cast<uint8_t>(bits >> 16);
    }
    // float6: codes 32 .. 63 are the negatives of codes 0 .. 31 (F6Decoder
    // looks up the magnitude and copies the sign).
    if (kCodec != Codec::kFloat8E4M3) {
      for (int m = 0; m < 32; ++m) {
        if (r.hi[m] > 0x7F || r.hi[m + 32] != (r.hi[m] | 0x80) ||
            r.lo[m + 32] != r.lo[m]) {
          r.ok = false;
        }
      }
    }
    // e4m3 negative codes: the magnitude's value with the sign bit set.
    if (kCodec == Codec::kFloat8E4M3) {
      for (int m = 0; m < 128; ++m) {
        const float neg = Float8E4M3ToF32(static_cast<uint8_t>(m | 0x80));
        const float pos = Float8E4M3ToF32(static_cast<uint8_t>(m));
        uint32_t nb, pb;
        std::memcpy(&nb, &neg, 4);
        std::memcpy(&pb, &pos, 4);
        if (nb != (pb | 0x80000000u)) r.ok = false;
      }
    }
    return r;
  }();
  return t;
}

// Mask of the first `bytes` bytes (at most 64).
HWY_INLINE uint64_t ByteMask(size_t bytes) {
  return bytes >= 64 ? ~uint64_t{0} : (uint64_t{1} << bytes) - 1;
}

// ---------------------------------------------------------------------------
// 2- and 4-bit codes through a 16-float table.

// Multishift controls: lane i (dwords 2m, 2m + 1 of qword m) takes its code's
// bits at offset i · kBits of the broadcast word into its low byte; the bits
// above the code are ignored by vpermps (4-bit codes) or land on copies of
// the table (2-bit codes: entry j holds value(j & 3)).
template <int kBits>
HWY_INLINE __m512i CodeControl() {
  uint64_t c[8];
  for (int m = 0; m < 8; ++m) {
    c[m] = static_cast<uint64_t>(2 * m * kBits) |
           static_cast<uint64_t>((2 * m + 1) * kBits) << 32;
  }
  return _mm512_loadu_si512(c);
}

// Stores 16 floats at out + 16 · kVector: non-temporal when kStream and
// they are on a 64-byte line other than the first of a page (streamed
// outputs bypass the cache; a line split, a head or a page's first line
// takes the ordinary store: StoresNonTemporal).
template <bool kStream, int kVector = 0>
HWY_INLINE void StoreOut(float* out, __m512 v) {
  if constexpr (kStream) {
    if (StoresNonTemporal(out + 16 * kVector, 64)) {
      _mm512_stream_ps(out + 16 * kVector, v);
      return;
    }
  } else {
    // Cached outputs: ask for the line ahead (PrefetchForWrite). Not in
    // streamed runs, where a non-temporal store may write that line next.
    PrefetchForWrite<64 * kVector>(out);
  }
  _mm512_storeu_ps(out + 16 * kVector, v);
}

// The 16 codes at p (whole bytes) → t[code] into out.
template <int kBits, bool kStream>
HWY_INLINE void Lookup16(const uint8_t* p, __m512 t, __m512i ctrl, float* out) {
  __m512i w;
  if constexpr (kBits == 4) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    w = _mm512_set1_epi64(static_cast<long long>(v));
  } else {
    uint32_t v;
    std::memcpy(&v, p, 4);
    w = _mm512_set1_epi32(static_cast<int>(v));
  }
  const __m512i idx = _mm512_multishift_epi64_epi8(ctrl, w);
  StoreOut<kStream>(out, _mm512_permutexvar_ps(idx, t));
}

// 64 codes per step with one byte permute and one multishift: qword m
// gathers byte m + 8b (4-bit) or 4b + m / 2 (2-bit) of the input as its
// byte b, the multishift puts the codes of output vector b in byte b of
// their lanes, and a dword shift by 8b brings them down for vpermps.
template <int kBits>
struct Lookup64Consts {
  __m512i spread, ctrl;
  Lookup64Consts() {
    uint8_t sp[64] = {};
    uint8_t c[64] = {};
    for (int m = 0; m < 8; ++m) {
      for (int b = 0; b < 4; ++b) {
        if constexpr (kBits == 4) {
          sp[8 * m + b] = static_cast<uint8_t>(m + 8 * b);
          c[8 * m + b] = static_cast<uint8_t>(8 * b);
          c[8 * m + 4 + b] = static_cast<uint8_t>(8 * b + 4);
        } else {
          sp[8 * m + b] = static_cast<uint8_t>(4 * b + m / 2);
          c[8 * m + b] = static_cast<uint8_t>(8 * b + 4 * (m % 2));
          c[8 * m + 4 + b] = static_cast<uint8_t>(8 * b + 4 * (m % 2) + 2);
        }
      }
    }
    spread = _mm512_loadu_si512(sp);
    ctrl = _mm512_loadu_si512(c);
  }
};

// Outputs 16v .. 16v + 15 through table t[v]: ta, tb, tc, td (one block of
// 64, two of 32 as ta = tb and tc = td, or four of 16).
template <int kBits, bool kStream>
HWY_INLINE void Lookup64(const uint8_t* p, __m512 ta, __m512 tb, __m512 tc,
                         __m512 td, const Lookup64Consts<kBits>& c,
                         float* out) {
  __m512i in;
  if constexpr (kBits == 4) {
    in = _mm512_castsi256_si512(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  } else {
    in = _mm512_castsi128_si512(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  const __m512i x = _mm512_multishift_epi64_epi8(
      c.ctrl, _mm512_permutexvar_epi8(c.spread, in));
  StoreOut<kStream>(out, _mm512_permutexvar_ps(x, ta));
  StoreOut<kStream, 1>(out, _mm512_permutexvar_ps(_mm512_srli_epi32(x, 8), tb));
  StoreOut<kStream, 2>(out,
                       _mm512_permutexvar_ps(_mm512_srli_epi32(x, 16), tc));
  StoreOut<kStream, 3>(out,
                       _mm512_permutexvar_ps(_mm512_srli_epi32(x, 24), td));
}

// Codes e .. e + len - 1 (e a multiple of 8 / kBits) → t[code] into out.
template <int kBits, bool kStream>
HWY_INLINE void LookupSpan(const uint8_t* src, uint64_t e, size_t len, __m512 t,
                           __m512i ctrl, const Lookup64Consts<kBits>& c64,
                           float* out) {
  constexpr size_t kPerByte = 8 / kBits;
  const uint8_t* p = src + e / kPerByte;
  size_t i = 0;
  for (; i + 64 <= len; i += 64, p += 8 * kBits)
    Lookup64<kBits, kStream>(p, t, t, t, t, c64, out + i);
  for (; i + 16 <= len; i += 16, p += 2 * kBits) {
    Lookup16<kBits, kStream>(p, t, ctrl, out + i);
  }
  if (i < len) {
    const size_t rem = len - i;
    const size_t bytes = (rem + kPerByte - 1) / kPerByte;
    const __m128i in =
        _mm_maskz_loadu_epi8(static_cast<__mmask16>(ByteMask(bytes)), p);
    const __m512i w =
        kBits == 4 ? _mm512_broadcastq_epi64(in) : _mm512_broadcastd_epi32(in);
    const __m512i idx = _mm512_multishift_epi64_epi8(ctrl, w);
    _mm512_mask_storeu_ps(out + i, static_cast<__mmask16>((1u << rem) - 1),
                          _mm512_permutexvar_ps(idx, t));
  }
}

// The tables of one parameter (value(code) · scale for code = j mod
// 2^kBits) are built in two 256-bit halves: on the Xeon host of issue 18 one
// 512-bit multiply per call kept the core in its slower AVX-512 frequency
// licence for the whole L2-sized run after it (per-tensor int4, 64 Ki
// outputs: 5.37 us after one 512-bit multiply, 4.96 us without;
// bench/RESULTS.md), and everything else in these loops (loads, permutes,
// shifts, stores) is light. Tables with a zero point, per block of 32 codes
// twice the arithmetic, are built in 128-bit quarters: in 256 bits they
// slowed per-block int4 the same way (64 Ki outputs: 5.20-5.40 us against
// 4.93-4.95); value · scale alone is faster in 256 bits (MXFP int4: 5.13 us
// against 5.22 in quarters, 5.43 as integer exponent adds).
HWY_INLINE __m512 JoinHalves(__m256 lo, __m256 hi) {
  return _mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1);
}

// By how the zero point is given: Scaled (none: value · scale), Shifted (a
// float zero point that converts exactly, Run::zero_points_f: (value - zp)
// · scale, the same float as float(q - zp) · scale) and Make (an int32 zero
// point: float(q - zp) · scale). Per block of 32 codes, Shifted is two
// subtractions and two multiplies where Make also converts (per_block int4,
// 64 Ki outputs in L2: 5.18 against 5.35 us, bench/RESULTS.md).
struct AffineTable {
  __m256i q_lo, q_hi;  // code value (sign-extended when signed) per entry
  __m256 f_lo, f_hi;   // the same as floats (exact)
  HWY_INLINE __m512 Scaled(float scale) const {
    const __m256 s = _mm256_set1_ps(scale);
    return JoinHalves(_mm256_mul_ps(f_lo, s), _mm256_mul_ps(f_hi, s));
  }
  // With a zero point, in 128-bit quarters (JoinHalves).
  HWY_INLINE __m512 Shifted(float scale, float zp) const {
    const __m128 z = _mm_set1_ps(zp);
    const __m128 s = _mm_set1_ps(scale);
    auto half = [&](__m256 f) {
      auto quarter = [&](__m128 v) { return _mm_mul_ps(_mm_sub_ps(v, z), s); };
      return _mm256_insertf128_ps(
          _mm256_castps128_ps256(quarter(_mm256_castps256_ps128(f))),
          quarter(_mm256_extractf128_ps(f, 1)), 1);
    };
    return JoinHalves(half(f_lo), half(f_hi));
  }
  HWY_INLINE __m512 Make(float scale, int32_t zp) const {
    const __m128i z = _mm_set1_epi32(zp);
    const __m128 s = _mm_set1_ps(scale);
    auto half = [&](__m256i q) {
      auto quarter = [&](__m128i v) {
        return _mm_mul_ps(_mm_cvtepi32_ps(_mm_sub_epi32(v, z)), s);
      };
      return _mm256_insertf128_ps(
          _mm256_castps128_ps256(quarter(_mm256_castsi256_si128(q))),
          quarter(_mm256_extracti128_si256(q, 1)), 1);
    };
    return JoinHalves(half(q_lo), half(q_hi));
  }
};

// AffineTable's operations in 512 bits, the same IEEE operations per entry,
// for CPUs without the clock licence (detail::AvoidFloat512): a block's
// table is then one or two broadcasts, a subtraction and a multiply. On
// the AMD EPYC Zen 4 host of issue 47 the quarters and their inserts took
// per_block int4 (K = 32) to about half the store loop's rate in L2
// (bench/RESULTS.md).
struct AffineTable512 {
  __m512i q;
  __m512 f;
  HWY_INLINE __m512 Scaled(float scale) const {
    return _mm512_mul_ps(f, _mm512_set1_ps(scale));
  }
  HWY_INLINE __m512 Shifted(float scale, float zp) const {
    return _mm512_mul_ps(_mm512_sub_ps(f, _mm512_set1_ps(zp)),
                         _mm512_set1_ps(scale));
  }
  HWY_INLINE __m512 Make(float scale, int32_t zp) const {
    return _mm512_mul_ps(
        _mm512_cvtepi32_ps(_mm512_sub_epi32(q, _mm512_set1_epi32(zp))),
        _mm512_set1_ps(scale));
  }
};

HWY_INLINE AffineTable512 Wide(const AffineTable& t) {
  return AffineTable512{
      _mm512_inserti64x4(_mm512_castsi256_si512(t.q_lo), t.q_hi, 1),
      JoinHalves(t.f_lo, t.f_hi)};
}

// NF4 and float4_e2m1 codes (NF4 and MXFP have no zero points).
struct ValueTable {
  __m256 v_lo, v_hi;  // value(code) per entry
  HWY_INLINE __m512 Scaled(float scale) const {
    const __m256 s = _mm256_set1_ps(scale);
    return JoinHalves(_mm256_mul_ps(v_lo, s), _mm256_mul_ps(v_hi, s));
  }
  HWY_INLINE __m512 Shifted(float scale, float) const { return Scaled(scale); }
  HWY_INLINE __m512 Make(float scale, int32_t) const { return Scaled(scale); }
};

// ValueTable in 512 bits (AffineTable512).
struct ValueTable512 {
  __m512 v;
  HWY_INLINE __m512 Scaled(float scale) const {
    return _mm512_mul_ps(v, _mm512_set1_ps(scale));
  }
  HWY_INLINE __m512 Shifted(float scale, float) const { return Scaled(scale); }
  HWY_INLINE __m512 Make(float scale, int32_t) const { return Scaled(scale); }
};

HWY_INLINE ValueTable512 Wide(const ValueTable& t) {
  return ValueTable512{JoinHalves(t.v_lo, t.v_hi)};
}

// One element through the table (heads: a run starting inside a byte).
HWY_INLINE float TableAt(__m512 t, uint32_t code) {
  float v[16];
  _mm512_storeu_ps(v, t);
  return v[code & 15];
}

template <int kBits, bool kStream, class Table>
void LookupRun(const Run& r, const Table table, float* out, uint64_t e,
               size_t n, ParamCursor& cursor) {
  // A local copy stays in registers (the stores to `out` could alias the
  // caller's cursor, and reloading it after each block stalls).
  ParamCursor pc = cursor;
  // Float zero points only in the default rounding mode (MXCSR RC = 0):
  // rounding toward -inf, x - x is -0 where the reference's float(q - zp)
  // is +0 (found by a review helper's rounding-mode differential).
  const float* zero_points_f =
      (_mm_getcsr() & 0x6000u) == 0 ? r.zero_points_f : nullptr;
  constexpr uint64_t kPerByte = 8 / kBits;
  const __m512i ctrl = CodeControl<kBits>();
  const Lookup64Consts<kBits> c64;
  const Codec raw = kBits == 4 ? Codec::kUInt4 : Codec::kUInt2;
  while (n > 0) {
    if (AtWholeBlocks<16>(pc, n) && e % kPerByte == 0) {
      const size_t k = static_cast<size_t>(pc.period);
      const size_t blocks = n / k;
      const uint8_t* p = r.src + e / kPerByte;
      const float* scales = pc.scales + pc.index;
      const int32_t* zps = pc.zero_points;
      auto step16 = [&](size_t i, __m512 t) {
        Lookup16<kBits, kStream>(p + i / kPerByte, t, ctrl, out + i);
      };
      auto step64 = [&](size_t i, __m512 t) {
        Lookup64<kBits, kStream>(p + i / kPerByte, t, t, t, t, c64, out + i);
      };
      auto blocks_of = [&](const auto& param) {
        if (k == 32) {
          // Pairs of blocks: one 64-code step with a table per half.
          size_t b = 0;
          for (; b + 2 <= blocks; b += 2) {
            __m512 ta = param(b), tb = param(b + 1);
            asm("" : "+v"(ta), "+v"(tb));  // as for k == 16 below
            Lookup64<kBits, kStream>(p + b * 32 / kPerByte, ta, ta, tb, tb, c64,
                                     out + b * 32);
          }
          if (b < blocks) {
            const __m512 t = param(b);
            step16(b * 32, t);
            step16(b * 32 + 16, t);
          }
        } else if (k == 16) {
          // Four blocks per 64-code step (K-quant sub-blocks of 16).
          size_t b = 0;
          for (; b + 4 <= blocks; b += 4) {
            __m512 ta = param(b), tb = param(b + 1), tc = param(b + 2),
                   td = param(b + 3);
            // The four tables in registers before the first store: else
            // the compiler loads their scalars first and broadcasts them
            // from registers later, four more shuffles per 64 outputs.
            asm("" : "+v"(ta), "+v"(tb), "+v"(tc), "+v"(td));
            Lookup64<kBits, kStream>(p + b * 16 / kPerByte, ta, tb, tc, td, c64,
                                     out + b * 16);
          }
          for (; b < blocks; ++b) step16(b * 16, param(b));
        } else if (k % 64 == 0) {
          WholeBlocks<64>(k, blocks, param, step64);
        } else {
          WholeBlocks<16>(k, blocks, param, step16);
        }
      };
      if (zps == nullptr) {
        blocks_of([&](size_t b) { return table.Scaled(scales[b]); });
      } else if (zero_points_f != nullptr) {
        const float* zpf = zero_points_f + pc.index;
        blocks_of([&](size_t b) { return table.Shifted(scales[b], zpf[b]); });
      } else {
        zps += pc.index;
        blocks_of([&](size_t b) { return table.Make(scales[b], zps[b]); });
      }
      out += blocks * k;
      e += blocks * k;
      n -= blocks * k;
      pc.index += blocks;
      continue;
    }
    const size_t len = static_cast<size_t>(std::min<uint64_t>(n, pc.left));
    const float scale = pc.scales[pc.index];
    const __m512 t = pc.zero_points == nullptr ? table.Scaled(scale)
                     : zero_points_f != nullptr
                         ? table.Shifted(scale, zero_points_f[pc.index])
                         : table.Make(scale, pc.zero_points[pc.index]);
    size_t head = 0;
    while (head < len && (e + head) % kPerByte != 0) {
      out[head] = TableAt(t, ReadRawCode(r.src, e + head, raw));
      ++head;
    }
    LookupSpan<kBits, kStream>(r.src, e + head, len - head, t, ctrl, c64,
                               out + head);
    out += len;
    e += len;
    n -= len;
    pc.Advance(len);
  }
  cursor = pc;
}

// ---------------------------------------------------------------------------
// Minifloats through bfloat16 byte tables.

// Decoders of 16 minifloat codes to 16 floats. Their constants are members,
// loaded once per run into registers (byte tables could alias the output,
// so the compiler would reload them after every store).

// The product of a float and a scale as two 256-bit multiplies: a 512-bit
// multiply would put the core in its slower AVX-512 licence (JoinHalves).
HWY_INLINE __m512 MulIn256(__m512 v, __m512 s) {
  return JoinHalves(
      _mm256_mul_ps(_mm512_castps512_ps256(v), _mm512_castps512_ps256(s)),
      _mm256_mul_ps(_mm512_extractf32x8_ps(v, 1), _mm512_castps512_ps256(s)));
}

// True when scale is 2^k with |k| <= kMaxK: sign 0, mantissa 0, exponent
// field k + 127.
template <int kMaxK>
HWY_INLINE bool PowerOfTwoWithin(float scale) {
  uint32_t bits;
  std::memcpy(&bits, &scale, 4);
  return (bits & 0x807FFFFFu) == 0 &&
         (bits >> 23) - (127 - kMaxK) <= 2u * kMaxK;
}

// PowerOfTwoWithin for all of scales[0 .. n), 16 at a time: a scalar loop
// here took a fifth of an MXFP float6 run's time (one scale per 32 outputs).
template <int kMaxK>
HWY_INLINE bool AllPowersOfTwoWithin(const float* scales, size_t n) {
  const __m512i bias = _mm512_set1_epi32((127 - kMaxK) << 23);
  const __m512i span = _mm512_set1_epi32((2 * kMaxK) << 23);
  const __m512i mantissa = _mm512_set1_epi32(0x007FFFFF);
  for (size_t i = 0; i < n; i += 16) {
    const __mmask16 live = n - i >= 16
                               ? __mmask16{0xFFFF}
                               : static_cast<__mmask16>((1u << (n - i)) - 1);
    const __m512i bits = _mm512_maskz_loadu_epi32(live, scales + i);
    const __mmask16 in_range =
        _mm512_mask_cmple_epu32_mask(live, _mm512_sub_epi32(bits, bias), span);
    if (_mm512_mask_testn_epi32_mask(in_range, bits, mantissa) != live) {
      return false;
    }
  }
  return true;
}

// The high word of a power-of-two scale 2^k, (k + 127) · 2^7, in every word:
// added to a bfloat16 it adds k to the exponent.
HWY_INLINE __m512i ScaleExponentWords(const float* scale) {
  uint16_t high;
  std::memcpy(&high, reinterpret_cast<const char*>(scale) + 2, 2);
  return _mm512_set1_epi16(static_cast<short>(high));
}

// bfloat16 words times *scale (PowerOfTwoWithin a range that keeps them
// normal): `biased` is `words` less 127 · 2^7, and the words outside
// `nonzero` (zeros) stay as they are.
HWY_INLINE __m512i ScaledWords(const float* scale, __m512i words,
                               __m512i biased, __mmask32 nonzero) {
  return _mm512_mask_add_epi16(words, nonzero, biased,
                               ScaleExponentWords(scale));
}

// float8_e4m3: 16 codes in `in` (operator()), or blocks of 32 codes under
// power-of-two scales (WordBlocks).
struct E4M3Decoder {
  static constexpr bool kF6 = false;
  // Scales 2^k with |k| <= kMaxK keep every finite nonzero e4m3 value times
  // them normal (magnitudes lie in [2^-9, 448]).
  static constexpr int kMaxK = 116;
  __m512i spread, lo0, lo1, hi0, hi1;
  __m512i pair_spread, marked_lo0, marked_lo1;

  explicit E4M3Decoder(const BfTables& t) {
    // Code i to bytes 2 and 3 of lane i, bytes 0 and 1 zero.
    alignas(64) static constexpr uint8_t kSpread[64] = {
        0, 0, 0,  0,  0, 0, 1,  1,  0, 0, 2,  2,  0, 0, 3,  3,
        0, 0, 4,  4,  0, 0, 5,  5,  0, 0, 6,  6,  0, 0, 7,  7,
        0, 0, 8,  8,  0, 0, 9,  9,  0, 0, 10, 10, 0, 0, 11, 11,
        0, 0, 12, 12, 0, 0, 13, 13, 0, 0, 14, 14, 0, 0, 15, 15};
    spread = _mm512_load_si512(kSpread);
    lo0 = _mm512_load_si512(t.lo);
    lo1 = _mm512_load_si512(t.lo + 64);
    hi0 = _mm512_load_si512(t.hi);
    hi1 = _mm512_load_si512(t.hi + 64);
    // 64 codes reordered so that, once their bytes are unpacked into words
    // (low halves of the 128-bit lanes, then high halves), word 2d + 8L of
    // the first word vector is code 4L + d and word 2d + 1 + 8L is code
    // 16 + 4L + d: a dword shift by 16 and a mask of the high words then
    // give codes 0 .. 15 and 16 .. 31 in order; the second vector the same
    // for codes 32 .. 63.
    uint8_t ps[64];
    for (int lane = 0; lane < 4; ++lane) {
      for (int i = 0; i < 8; ++i) {
        const int code = i % 2 == 0 ? 4 * lane + i / 2 : 16 + 4 * lane + i / 2;
        ps[16 * lane + i] = static_cast<uint8_t>(code);
        ps[16 * lane + 8 + i] = static_cast<uint8_t>(code + 32);
      }
    }
    pair_spread = _mm512_loadu_si512(ps);
    // The low bytes with bit 0 (always clear: an e4m3 value has at most
    // three significant bits after its leading one) set for the magnitudes
    // a scale changes, all but zero and NaN (WordBlocks).
    uint8_t marked[128];
    for (int m = 0; m < 128; ++m) {
      marked[m] = static_cast<uint8_t>(t.lo[m] | (m != 0 && m != 0x7F));
    }
    marked_lo0 = _mm512_loadu_si512(marked);
    marked_lo1 = _mm512_loadu_si512(marked + 64);
  }

  // adds[i] = the word (k_i · 2^7 − 1) twice, for scales[i] = 2^k_i
  // (PowerOfTwoWithin<kMaxK>), i < n <= 64: the high word of the float less
  // 127 · 2^7 + 1.
  static HWY_INLINE void ExponentAdds(const float* scales, size_t n,
                                      uint32_t* adds) {
    alignas(64) static constexpr uint8_t kHighWord[64] = {
        2, 3, 2, 3, 6, 7, 6, 7, 10, 11, 10, 11, 14, 15, 14, 15,
        2, 3, 2, 3, 6, 7, 6, 7, 10, 11, 10, 11, 14, 15, 14, 15,
        2, 3, 2, 3, 6, 7, 6, 7, 10, 11, 10, 11, 14, 15, 14, 15,
        2, 3, 2, 3, 6, 7, 6, 7, 10, 11, 10, 11, 14, 15, 14, 15};
    const __m512i high_word = _mm512_load_si512(kHighWord);
    const __m512i bias = _mm512_set1_epi16((127 << 7) + 1);
    for (size_t i = 0; i < n; i += 16) {
      const __mmask16 live = n - i >= 16
                                 ? __mmask16{0xFFFF}
                                 : static_cast<__mmask16>((1u << (n - i)) - 1);
      const __m512i bits = _mm512_maskz_loadu_epi32(live, scales + i);
      _mm512_mask_storeu_epi32(
          adds + i, live,
          _mm512_sub_epi16(_mm512_shuffle_epi8(bits, high_word), bias));
    }
  }

  // 64 codes of `in` (32 when !kBoth) → out, codes 0 .. 31 under the scale
  // whose ExponentAdds word is add_a, 32 .. 63 under add_b. Two byte-table
  // lookups give each magnitude's bfloat16 (subnormal codes included: their
  // values are normal bfloat16), the code's sign is copied into the high
  // byte, and a word add of k · 2^7 − 1 puts k into the exponent and
  // clears the mark of the magnitudes that a scale changes (zero and NaN,
  // unmarked, stay as they are). No floating-point operation (JoinHalves).
  // Per 64 outputs: one vpermb, two vpermi2b, a ternary operation, two
  // unpacks, two tests, two adds, two shifts and two ands.
  template <bool kStream, bool kBoth>
  static HWY_INLINE void Words64(__m512i in, __m512i pair_spread, __m512i hi0,
                                 __m512i hi1, __m512i lo0, __m512i lo1,
                                 const uint32_t* add_a, const uint32_t* add_b,
                                 float* out) {
    const __m512i q = _mm512_permutexvar_epi8(pair_spread, in);
    const __m512i hi = _mm512_ternarylogic_epi32(
        _mm512_permutex2var_epi8(hi0, q, hi1), q,
        _mm512_set1_epi8(static_cast<char>(0x80)), 0xF8);
    const __m512i lo = _mm512_permutex2var_epi8(lo0, q, lo1);
    const __m512i one = _mm512_set1_epi16(1);
    const __m512i high_words = _mm512_set1_epi32(static_cast<int>(0xFFFF0000u));
    __m512i a = _mm512_unpacklo_epi8(lo, hi);
    a = _mm512_mask_add_epi16(a, _mm512_test_epi16_mask(a, one), a,
                              _mm512_broadcastd_epi32(_mm_loadu_si32(add_a)));
    StoreOut<kStream>(out, _mm512_castsi512_ps(_mm512_slli_epi32(a, 16)));
    StoreOut<kStream, 1>(out,
                         _mm512_castsi512_ps(_mm512_and_si512(a, high_words)));
    if constexpr (kBoth) {
      __m512i b = _mm512_unpackhi_epi8(lo, hi);
      b = _mm512_mask_add_epi16(b, _mm512_test_epi16_mask(b, one), b,
                                _mm512_broadcastd_epi32(_mm_loadu_si32(add_b)));
      StoreOut<kStream, 2>(out, _mm512_castsi512_ps(_mm512_slli_epi32(b, 16)));
      StoreOut<kStream, 3>(
          out, _mm512_castsi512_ps(_mm512_and_si512(b, high_words)));
    }
  }

  // `blocks` (at most 64) 32-code blocks from p, block i under scales[i],
  // each PowerOfTwoWithin<kMaxK>; two per 64-byte load.
  template <bool kStream>
  HWY_INLINE void WordBlocks(const uint8_t* p, const float* scales,
                             size_t blocks, float* out) const {
    alignas(64) uint32_t adds[64];
    ExponentAdds(scales, blocks, adds);
    const __m512i sp = pair_spread, h0 = hi0, h1 = hi1, l0 = marked_lo0,
                  l1 = marked_lo1;
    size_t b = 0;
    // Codes from a buffer on a 64-byte line (buffer-protocol.md §
    // Alignment) that start half a line in, as after a chunk that ended
    // mid-line: one block first, so that no 64-byte load splits two lines.
    if ((reinterpret_cast<uintptr_t>(p) & 63) == 32 && blocks > 2) {
      Words64<kStream, false>(_mm512_maskz_loadu_epi8(0xFFFFFFFFull, p), sp, h0,
                              h1, l0, l1, adds, adds, out);
      b = 1;
    }
    for (; b + 2 <= blocks; b += 2) {
      Words64<kStream, true>(_mm512_loadu_si512(p + 32 * b), sp, h0, h1, l0, l1,
                             adds + b, adds + b + 1, out + 32 * b);
    }
    if (b < blocks) {
      Words64<kStream, false>(
          _mm512_maskz_loadu_epi8(0xFFFFFFFFull, p + 32 * b), sp, h0, h1, l0,
          l1, adds + b, adds + b, out + 32 * b);
    }
  }

  // 16 outputs times the scale (heads, tails, other scales): in 256 bits,
  // not to leave the main path's light licence (JoinHalves).
  static HWY_INLINE __m512 Mul(__m512 v, __m512 s) { return MulIn256(v, s); }

  HWY_INLINE __m512 operator()(const __m128i in) const {
    const __mmask64 k2 = 0x4444444444444444ull, k3 = 0x8888888888888888ull;
    const __m512i x = _mm512_maskz_permutexvar_epi8(k2 | k3, spread,
                                                    _mm512_castsi128_si512(in));
    // Bytes 2 and 3 from the magnitude's tables (vpermi2b reads 7 bits).
    const __m512i y = _mm512_mask2_permutex2var_epi8(lo0, x, k2, lo1);
    const __m512i z = _mm512_mask2_permutex2var_epi8(hi0, y, k3, hi1);
    // The sign: bit 31 of x (the code's bit 7 in byte 3).
    return _mm512_castsi512_ps(
        _mm512_ternarylogic_epi32(z, x, _mm512_set1_epi32(INT32_MIN), 0xF8));
  }
};

// float6 under one scale: the bfloat16 magnitudes of codes 0 .. 31 (32
// words, one register), already times the scale when that is a power of two
// 2^k with |k| <= F6Decoder::kF6MaxK: the product is exact and is the
// magnitude's exponent plus k, one 16-bit add per table instead of a
// multiply per 16 outputs (an MXFP scale, E8M0, is always a power of two;
// quantization/mxfp.md). Otherwise the lookup gives the magnitude and the
// scale multiplies it (exact = false).
struct F6Scale {
  __m512i table;
  __m512 scale;
  bool exact;
};

// float6: 16 codes (12 bytes) in `in` (operator()), or 64 codes (48 bytes)
// at a time (Decode64).
struct F6Decoder {
  static constexpr bool kF6 = true;
  // Scales 2^k with |k| <= kF6MaxK keep every nonzero float6 value times
  // them normal (float6 magnitudes lie in [2^-4, 28]).
  static constexpr int kF6MaxK = 120;
  __m512i spread, ctrl, lo, hi;
  __m512i spread64, ctrl01, ctrl23, mag, biased;
  __mmask32 nonzero;

  explicit F6Decoder(const BfTables& t) {
    // 64 codes (48 bytes): qword m gathers, as its bytes 2b and 2b + 1, the
    // two input bytes from 12b + 3m / 2 on (codes 16b + 2m and 16b + 2m + 1
    // start at bit 96b + 12m, at bit o = 12m mod 8 of the pair).
    uint8_t sp[64];
    for (int m = 0; m < 8; ++m) {
      const int s = 3 * m / 2;
      for (int b = 0; b < 4; ++b) {
        sp[8 * m + 2 * b] = static_cast<uint8_t>(s + 12 * b);
        sp[8 * m + 2 * b + 1] = static_cast<uint8_t>(s + 12 * b + 1);
      }
    }
    spread64 = _mm512_loadu_si512(sp);
    // Multishift ctrl01 puts, in each lane, the code of output vector 0 in
    // byte 2 and again in byte 3 from two bits lower (so that the code's
    // sign, bit 5, is the lane's bit 31), and vector 1's code the same way
    // in bytes 0 and 1; ctrl23 does it for vectors 2 and 3. Windows wrap
    // around the qword; the bits they bring in beside the code are ignored
    // (vpermw reads 5 bits of its index word) or masked off.
    auto control = [](int v_hi, int v_lo) {
      uint8_t c[64];
      for (int m = 0; m < 8; ++m) {
        const int o = 4 * (m % 2);
        for (int lane = 0; lane < 2; ++lane) {
          const int at = o + 6 * lane;
          uint8_t* q = c + 8 * m + 4 * lane;
          q[0] = static_cast<uint8_t>((16 * v_lo + at) & 63);
          q[1] = static_cast<uint8_t>((16 * v_lo + at - 2) & 63);
          q[2] = static_cast<uint8_t>((16 * v_hi + at) & 63);
          q[3] = static_cast<uint8_t>((16 * v_hi + at - 2) & 63);
        }
      }
      return _mm512_loadu_si512(c);
    };
    ctrl01 = control(0, 1);
    ctrl23 = control(2, 3);
    // The magnitudes' bfloat16 (codes 32 .. 63 are their negatives: the
    // BfTables check).
    uint16_t w[32];
    nonzero = 0;
    for (int i = 0; i < 32; ++i) {
      w[i] = static_cast<uint16_t>(t.hi[i] << 8 | t.lo[i]);
      if (w[i] != 0) nonzero |= __mmask32{1} << i;
    }
    mag = _mm512_loadu_si512(w);
    biased = _mm512_sub_epi16(mag, _mm512_set1_epi16(127 << 7));
    // 16 codes: qword m gets the source bytes from 3m / 2 on (codes 2m and
    // 2m + 1 start at bit 12m), then the multishift takes each code's 8-bit
    // window into bytes 2 and 3 of its lane, at bit 12m mod 8 of the qword
    // for lane 2m and six bits later for lane 2m + 1 (vpermb ignores the 2
    // bits above the code).
    alignas(64) static constexpr uint8_t kSpread[64] = {
        0, 1,  2,  3,  4,  5,  6,  7,  1,  2,  3,  4,  5,  6,  7,  8,
        3, 4,  5,  6,  7,  8,  9,  10, 4,  5,  6,  7,  8,  9,  10, 11,
        6, 7,  8,  9,  10, 11, 12, 13, 7,  8,  9,  10, 11, 12, 13, 14,
        9, 10, 11, 12, 13, 14, 15, 15, 10, 11, 12, 13, 14, 15, 15, 15};
    constexpr long long kEven = 0x0606000000000000ll;
    constexpr long long kOdd = 0x0A0A000004040000ll;
    spread = _mm512_load_si512(kSpread);
    ctrl = _mm512_set_epi64(kOdd, kEven, kOdd, kEven, kOdd, kEven, kOdd, kEven);
    lo = _mm512_load_si512(t.lo);
    hi = _mm512_load_si512(t.hi);
  }

  HWY_INLINE __m512 operator()(const __m128i in) const {
    const __mmask64 k2 = 0x4444444444444444ull, k3 = 0x8888888888888888ull;
    const __m512i w =
        _mm512_permutexvar_epi8(spread, _mm512_castsi128_si512(in));
    const __m512i x = _mm512_maskz_multishift_epi64_epi8(k2 | k3, ctrl, w);
    const __m512i y = _mm512_mask_permutexvar_epi8(x, k2, x, lo);
    return _mm512_castsi512_ps(_mm512_mask_permutexvar_epi8(y, k3, y, hi));
  }

  // 16 outputs times the scale, for the 16-code steps and tails.
  static HWY_INLINE __m512 Mul(__m512 v, __m512 s) { return MulIn256(v, s); }

  HWY_INLINE F6Scale ScaleOf(const float& scale) const {
    const __m512 vs = _mm512_set1_ps(scale);
    if (!PowerOfTwoWithin<kF6MaxK>(scale)) return F6Scale{mag, vs, false};
    return F6Scale{ScaledWords(&scale, mag, biased, nonzero), vs, true};
  }

  // The 64 codes (48 bytes) at p → out, outputs 0 .. 31 through table ta,
  // 32 .. 63 through tb (each the high word of a lane, the low word zeroed),
  // the sign copied from the code; then times sa / sb when kMul. Per 32
  // outputs: one multishift, two vpermw, one shift, two ternary operations.
  template <bool kStream, bool kMul, bool kWhole = false>
  static HWY_INLINE void Decode64(const uint8_t* p, __m512i spread64,
                                  __m512i ctrl01, __m512i ctrl23, __m512i ta,
                                  __m512i tb, __m512 sa, __m512 sb,
                                  float* out) {
    // The masked load does not start the hardware prefetcher: from DRAM,
    // without this hint, the kernel ran at 0.4-0.5 x its traffic bound
    // (bench/RESULTS.md). Prefetches never fault past the input.
    _mm_prefetch(reinterpret_cast<const char*>(p) + 768, _MM_HINT_T0);
    const __m512i in = kWhole
                           ? _mm512_loadu_si512(p)
                           : _mm512_maskz_loadu_epi8(0x0000FFFFFFFFFFFFull, p);
    const __m512i w = _mm512_permutexvar_epi8(spread64, in);
    const __m512i x01 = _mm512_multishift_epi64_epi8(ctrl01, w);
    const __m512i x23 = _mm512_multishift_epi64_epi8(ctrl23, w);
    const __m512i sign = _mm512_set1_epi32(INT32_MIN);
    auto value = [&](__m512i x, __m512i t, __m512 s) {
      const __m512i m = _mm512_maskz_permutexvar_epi16(0xAAAAAAAAu, x, t);
      const __m512 v =
          _mm512_castsi512_ps(_mm512_ternarylogic_epi32(m, x, sign, 0xF8));
      if constexpr (kMul) return MulIn256(v, s);
      return v;
    };
    StoreOut<kStream>(out, value(x01, ta, sa));
    StoreOut<kStream, 1>(out, value(_mm512_slli_epi32(x01, 16), ta, sa));
    StoreOut<kStream, 2>(out, value(x23, tb, sb));
    StoreOut<kStream, 3>(out, value(_mm512_slli_epi32(x23, 16), tb, sb));
  }

  template <bool kStream>
  HWY_INLINE void Decode64(const uint8_t* p, const F6Scale& a, const F6Scale& b,
                           float* out) const {
    if (a.exact && b.exact) {
      Decode64<kStream, false>(p, spread64, ctrl01, ctrl23, a.table, b.table,
                               a.scale, b.scale, out);
    } else {
      // Both through the magnitudes (a.table may be already scaled).
      Decode64<kStream, true>(p, spread64, ctrl01, ctrl23, mag, mag, a.scale,
                              b.scale, out);
    }
  }

  // `pairs` pairs of 32-code blocks from p, block i under scales[i], every
  // scale PowerOfTwoWithin<kF6MaxK> (the MXFP layout). The constants are copied
  // to locals so that they stay in registers across the stores.
  template <bool kStream>
  HWY_INLINE void ExactPairs(const uint8_t* p, const float* scales,
                             size_t pairs, bool more_follow, float* out) const {
    const __m512i sp = spread64, c01 = ctrl01, c23 = ctrl23, m = mag,
                  bm = biased;
    const __mmask32 nz = nonzero;
    const __m512 unused = _mm512_setzero_ps();
    size_t i = 0;
    // 64 bytes from p + 48i stay inside the run while 16 more bytes follow
    // pair i (another pair, or `more_follow`: another block of the run).
    const size_t whole = more_follow ? pairs : pairs - 1;
    for (; i < whole; ++i) {
      Decode64<kStream, false, true>(p + 48 * i, sp, c01, c23,
                                     ScaledWords(scales + 2 * i, m, bm, nz),
                                     ScaledWords(scales + 2 * i + 1, m, bm, nz),
                                     unused, unused, out + 64 * i);
    }
    for (; i < pairs; ++i) {
      Decode64<kStream, false>(p + 48 * i, sp, c01, c23,
                               ScaledWords(scales + 2 * i, m, bm, nz),
                               ScaledWords(scales + 2 * i + 1, m, bm, nz),
                               unused, unused, out + 64 * i);
    }
  }
};

// Minifloat codes e .. e + len - 1 under one scale (e a multiple of 4 for
// float6).
template <bool kStream, class Decoder>
HWY_INLINE void MinifloatSpan(const uint8_t* src, uint64_t e, size_t len,
                              float scale, const Decoder& dec, float* out) {
  constexpr bool kF6 = Decoder::kF6;
  const __m512 vs = _mm512_set1_ps(scale);
  const uint8_t* p = src + (kF6 ? e / 4 * 3 : e);
  constexpr size_t kStepBytes = kF6 ? 12 : 16;
  size_t i = 0;
  if constexpr (kF6) {
    const F6Scale s = dec.ScaleOf(scale);
    for (; i + 64 <= len; i += 64, p += 48) {
      dec.template Decode64<kStream>(p, s, s, out + i);
    }
  }
  for (; i + 16 <= len; i += 16, p += kStepBytes) {
    const __m128i in =
        kF6 ? _mm_maskz_loadu_epi8(0x0FFF, p)
            : _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    StoreOut<kStream>(out + i, Decoder::Mul(dec(in), vs));
  }
  if (i < len) {
    const size_t rem = len - i;
    const size_t bytes = kF6 ? (rem * 6 + 7) / 8 : rem;
    const __m128i in =
        _mm_maskz_loadu_epi8(static_cast<__mmask16>(ByteMask(bytes)), p);
    _mm512_mask_storeu_ps(out + i, static_cast<__mmask16>((1u << rem) - 1),
                          Decoder::Mul(dec(in), vs));
  }
}

template <Codec kCodec>
float MinifloatScalar(uint8_t code) {
  return kCodec == Codec::kFloat6E2M3 ? Float6E2M3ToF32(code)
                                      : Float6E3M2ToF32(code);
}

template <Codec kCodec, bool kStream>
void MinifloatRun(const Run& r, float* out, uint64_t e, size_t n,
                  ParamCursor& cursor) {
  // A local copy stays in registers (see LookupRun).
  ParamCursor pc = cursor;
  constexpr bool kF6 = kCodec != Codec::kFloat8E4M3;
  using Decoder = std::conditional_t<kF6, F6Decoder, E4M3Decoder>;
  // Built once (building F6Decoder's constants took 1.5 % of an MXFP float6
  // run of 64 Ki outputs in L2) and copied here: used in place, the static
  // made the same run from DRAM 10 % slower.
  static const Decoder built(BfTablesOf<kCodec>());
  const Decoder dec = built;
  while (n > 0) {
    if (AtWholeBlocks<16>(pc, n) && (!kF6 || e % 4 == 0)) {
      const size_t k = static_cast<size_t>(pc.period);
      const size_t blocks = n / k;
      const uint8_t* p = r.src + (kF6 ? e / 4 * 3 : e);
      const float* scales = pc.scales + pc.index;
      // Blocks b0 .. b0 + count - 1, 16 codes at a time through the byte
      // tables, times the scale.
      auto blocks16 = [&](size_t b0, size_t count) {
        WholeBlocks<16>(
            k, count, [&](size_t b) { return _mm512_set1_ps(scales[b0 + b]); },
            [&](size_t i, __m512 vs) {
              i += b0 * k;
              const __m128i in =
                  kF6 ? _mm_maskz_loadu_epi8(0x0FFF, p + i / 4 * 3)
                      : _mm_loadu_si128(
                            reinterpret_cast<const __m128i*>(p + i));
              StoreOut<kStream>(out + i, Decoder::Mul(dec(in), vs));
            });
      };
      bool done = false;
      if constexpr (kF6) {
        auto scale_of = [&](size_t b) { return dec.ScaleOf(scales[b]); };
        if (k == 32) {
          // Pairs of blocks: one 64-code step, a scale per half; 64 blocks
          // at a time, those whose scales are all powers of two in range
          // (MXFP's, but for the extremes) through ExactPairs, the others
          // pair by pair.
          size_t b = 0;
          while (b + 2 <= blocks) {
            const size_t pairs = std::min<size_t>(64, blocks - b) / 2;
            if (AllPowersOfTwoWithin<F6Decoder::kF6MaxK>(scales + b,
                                                         2 * pairs)) {
              dec.template ExactPairs<kStream>(p + b * 24, scales + b, pairs,
                                               b + 2 * pairs < blocks,
                                               out + b * 32);
            } else {
              for (size_t i = b; i < b + 2 * pairs; i += 2) {
                dec.template Decode64<kStream>(p + i * 24, scale_of(i),
                                               scale_of(i + 1), out + i * 32);
              }
            }
            b += 2 * pairs;
          }
          if (b < blocks) {
            MinifloatSpan<kStream>(r.src, e + b * 32, 32, scales[b], dec,
                                   out + b * 32);
          }
          done = true;
        } else if (k % 64 == 0) {
          WholeBlocks<64>(k, blocks, scale_of, [&](size_t i, const F6Scale& s) {
            dec.template Decode64<kStream>(p + i / 4 * 3, s, s, out + i);
          });
          done = true;
        }
      }
      if constexpr (!kF6) {
        if (k == 32) {
          // 64 blocks at a time: WordBlocks when their scales are all
          // powers of two in range (MXFP's are, but for the extremes), else
          // 16 codes at a time.
          for (size_t b = 0; b < blocks;) {
            const size_t count = std::min<size_t>(64, blocks - b);
            if (AllPowersOfTwoWithin<E4M3Decoder::kMaxK>(scales + b, count)) {
              dec.template WordBlocks<kStream>(p + b * 32, scales + b, count,
                                               out + b * 32);
            } else {
              blocks16(b, count);
            }
            b += count;
          }
          done = true;
        }
      }
      if (!done) blocks16(0, blocks);
      out += blocks * k;
      e += blocks * k;
      n -= blocks * k;
      pc.index += blocks;
      continue;
    }
    const size_t len = static_cast<size_t>(std::min<uint64_t>(n, pc.left));
    const float scale = pc.scales[pc.index];
    size_t head = 0;
    if constexpr (kF6) {
      while (head < len && (e + head) % 4 != 0) {
        const uint32_t code = ReadRawCode(r.src, e + head, kCodec);
        out[head] = MinifloatScalar<kCodec>(static_cast<uint8_t>(code)) * scale;
        ++head;
      }
    }
    MinifloatSpan<kStream>(r.src, e + head, len - head, scale, dec, out + head);
    out += len;
    e += len;
    n -= len;
    pc.Advance(len);
  }
  cursor = pc;
}

// ---------------------------------------------------------------------------
// Driver.

template <int kBits, class Table>
void FusedLookup(const Run& r, const Table& table) {
  if (detail::AvoidFloat512()) {
    FusedRun(
        r, [&](auto stream, float* out, uint64_t e, size_t n, ParamCursor& pc) {
          LookupRun<kBits, decltype(stream)::value>(r, table, out, e, n, pc);
        });
  } else {
    const auto wide = Wide(table);
    FusedRun(
        r, [&](auto stream, float* out, uint64_t e, size_t n, ParamCursor& pc) {
          LookupRun<kBits, decltype(stream)::value>(r, wide, out, e, n, pc);
        });
  }
}

// Affine table entries: code j mod 2^kBits, sign-extended when signed.
HWY_INLINE AffineTable AffineTableOf(int bits, bool is_signed) {
  int32_t q[16];
  const int32_t mod = 1 << bits;
  for (int32_t j = 0; j < 16; ++j) {
    const int32_t c = j % mod;
    q[j] = is_signed && c >= mod / 2 ? c - mod : c;
  }
  const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q));
  const __m256i hi =
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 8));
  // 256-bit converts, written out: GCC vectorized a loop of scalar casts
  // here into one 512-bit convert per run, which put the run back in the
  // slow licence (per_tensor int4: 5.43 us against 5.02; see JoinHalves).
  return AffineTable{lo, hi, _mm256_cvtepi32_ps(lo), _mm256_cvtepi32_ps(hi)};
}

HWY_INLINE ValueTable ValueTableOf(const float* values) {
  return ValueTable{_mm256_loadu_ps(values), _mm256_loadu_ps(values + 8)};
}

// True when the run was dequantized here.
bool TryFusedAvx3Dl(const Run& r) {
  if (r.periodic) return false;
  switch (r.codec) {
    case Codec::kInt4:
    case Codec::kUInt4:
      if (r.wide) return false;
      FusedLookup<4>(r, AffineTableOf(4, r.codec == Codec::kInt4));
      return true;
    case Codec::kInt2:
    case Codec::kUInt2:
      if (r.wide) return false;
      FusedLookup<2>(r, AffineTableOf(2, r.codec == Codec::kInt2));
      return true;
    case Codec::kNf4:
      FusedLookup<4>(r, ValueTableOf(detail::Nf4Table().v));
      return true;
    case Codec::kFloat4E2M1:
      FusedLookup<4>(r, ValueTableOf(detail::Fp4Table().v));
      return true;
    case Codec::kFloat8E4M3:
      if (!BfTablesOf<Codec::kFloat8E4M3>().ok) return false;
      FusedRun(r, [&](auto stream, float* out, uint64_t e, size_t n,
                      ParamCursor& pc) {
        MinifloatRun<Codec::kFloat8E4M3, decltype(stream)::value>(r, out, e, n,
                                                                  pc);
      });
      return true;
    case Codec::kFloat6E2M3:
      if (!BfTablesOf<Codec::kFloat6E2M3>().ok) return false;
      FusedRun(r, [&](auto stream, float* out, uint64_t e, size_t n,
                      ParamCursor& pc) {
        MinifloatRun<Codec::kFloat6E2M3, decltype(stream)::value>(r, out, e, n,
                                                                  pc);
      });
      return true;
    case Codec::kFloat6E3M2:
      if (!BfTablesOf<Codec::kFloat6E3M2>().ok) return false;
      FusedRun(r, [&](auto stream, float* out, uint64_t e, size_t n,
                      ParamCursor& pc) {
        MinifloatRun<Codec::kFloat6E3M2, decltype(stream)::value>(r, out, e, n,
                                                                  pc);
      });
      return true;
    default:
      return false;
  }
}

#endif  // HWY_TARGET == HWY_AVX3_DL
