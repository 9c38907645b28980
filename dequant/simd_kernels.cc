// Highway kernels behind dequant/kernels.h, compiled once per x86 target
// (AVX3_DL, AVX3, AVX2, SSE4, SSSE3, and EMU128 or SCALAR) and chosen at
// run time.
//
// Blocked runs of 2- and 4-bit codes (affine, NF4, float4_e2m1; not the
// 64-bit affine path of `wide` runs), float8_e4m3 and float6 take fused
// kernels on AVX2 and AVX3_DL, 8-bit affine codes and float8_e5m2 on AVX2
// (dequant/avx2_fused-inl.h, dequant/avx3dl_lookup-inl.h). Otherwise a run is
// processed in two stages. Sub-byte codecs are first expanded into a tile of
// one code per byte (signed codes sign-extended to int8), with order-preserving
// widen/shift/mask steps; 8-, 16- and 32-bit codecs are read in place. The
// second stage widens codes to int32 lanes and applies the scheme's arithmetic
// per parameter sub-run (broadcast scale within a block, or a vector of scales
// along the row).
//
// Bit-exactness with dequant/scalar.cc: conversions and products are the
// same IEEE operations in the same order (int32 → float32 conversion rounds
// to nearest even like the scalar int64 → float32 one when the difference
// fits int32; otherwise the exact difference goes through float64 and one
// rounding). Minifloats are decoded without subnormal float32 intermediates,
// so a caller's DAZ setting cannot change them.

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "dequant/simd_kernels.cc"
#ifndef HWY_WANT_AVX3_DL
#define HWY_WANT_AVX3_DL  // Ice Lake / Zen 4 target (issue 3)
#endif
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// Must come after foreach_target.h.
#include "hwy/highway.h"
// Must come after highway.h.
#include "hwy/cache_control.h"

#ifndef HURRAY_DEQUANT_SIMD_KERNELS_ONCE
#define HURRAY_DEQUANT_SIMD_KERNELS_ONCE

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#if HWY_ARCH_X86
#include <cpuid.h>
#endif

#include "absl/base/config.h"
#include "dequant/codec.h"
#include "dequant/kernels.h"
#include "dequant/minifloat.h"
#include "parser/quantization.h"

static_assert(ABSL_IS_LITTLE_ENDIAN, "storage is read as little-endian");

namespace hurray::dequant::detail {

// Codes per tile when expanding sub-byte data (fits L1 with room to spare).
inline constexpr size_t kTile = 1024;
// Slack after a tile for full-vector stores (widest vector: 64 bytes).
inline constexpr size_t kTileSlack = 64;

// Behind StreamedOutputsOfThisThread (kernels.h); used in this file only.
static constinit thread_local StreamedOutputs streamed_outputs;

// Padded to 64 entries so a full 512-bit vector can be loaded from any
// 16-entry table.
struct Table16 {
  alignas(64) float v[64];
};

inline const Table16& Nf4Table() {
  static const Table16 t = [] {
    Table16 r{};
    for (int i = 0; i < 16; ++i) r.v[i] = kNf4Lut[i];
    return r;
  }();
  return t;
}

inline const Table16& Fp4Table() {
  static const Table16 t = [] {
    Table16 r{};
    for (int i = 0; i < 16; ++i) {
      r.v[i] = Float4E2M1ToF32(static_cast<uint8_t>(i));
    }
    return r;
  }();
  return t;
}

// Values of two codes at a time, for the AVX2 fused kernels: entry j of a
// kBits table holds the float32 bits of value(j mod 2^kBits) (low half) and
// value(j >> kBits) (high half), the two codes of a 2 · kBits-bit field,
// low code first (2 KiB for 4-bit codes).
template <int kBits>
struct PairTable {
  alignas(64) double v[size_t{1} << (2 * kBits)];
};

template <int kBits, class Value>
const PairTable<kBits>* NewPairTable(const Value& value) {
  auto* t = new PairTable<kBits>;  // built once, never freed
  constexpr uint32_t kMask = (1u << kBits) - 1;
  for (uint32_t j = 0; j < (1u << (2 * kBits)); ++j) {
    const float pair[2] = {value(j & kMask), value(j >> kBits)};
    std::memcpy(&t->v[j], pair, sizeof(pair));
  }
  return t;
}

inline const PairTable<4>& Nf4Pairs() {
  static const PairTable<4>* t =
      NewPairTable<4>([](uint32_t c) { return kNf4Lut[c]; });
  return *t;
}

inline const PairTable<4>& Fp4Pairs() {
  static const PairTable<4>* t = NewPairTable<4>(
      [](uint32_t c) { return Float4E2M1ToF32(static_cast<uint8_t>(c)); });
  return *t;
}

// SetAvx2PreferenceForTest (kernels.h): 0 by the CPU's vendor, 1 as on
// Intel, 2 as elsewhere.
inline std::atomic<int> avx2_preference{0};

#if HWY_ARCH_X86
inline bool IsIntelCpu() {
  static const bool intel = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (__get_cpuid(0, &a, &b, &c, &d) == 0) return false;
    // "GenuineIntel" in EBX, EDX, ECX.
    return b == 0x756E6547u && d == 0x49656E69u && c == 0x6C65746Eu;
  }();
  return intel;
}
#endif

// True when the kernels are to avoid 512-bit floating-point arithmetic:
// on Intel's AVX-512 cores it lowers the clock for some time after
// (avx3dl_lookup-inl.h JoinHalves); AMD's Zen 4 runs it at full clock, as
// two 256-bit halves, so there one 512-bit operation beats the two to
// four narrower ones and the inserts that join them (bench/RESULTS.md,
// issue 47).
inline bool AvoidFloat512() {
#if HWY_ARCH_X86
  const int preference = avx2_preference.load(std::memory_order_relaxed);
  return preference == 1 || (preference == 0 && IsIntelCpu());
#else
  return false;
#endif
}

// The scalar forms of the arithmetic, for heads and tails of vector loops.
inline float AffineScalar(int64_t q, int64_t zero_point, float scale) {
  return static_cast<float>(q - zero_point) * scale;
}

}  // namespace hurray::dequant::detail

#endif  // HURRAY_DEQUANT_SIMD_KERNELS_ONCE

HWY_BEFORE_NAMESPACE();
namespace hurray::dequant {
namespace HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;
using detail::kTile;
using detail::kTileSlack;

using DF = hn::ScalableTag<float>;
using DI = hn::RebindToSigned<DF>;
using DU = hn::RebindToUnsigned<DF>;
using VF = hn::Vec<DF>;
using VI = hn::Vec<DI>;

// N codes of type T widened to int32 lanes (uint32 is reinterpreted; only
// the wide path reads it, through WidenToF64).
template <typename T>
HWY_INLINE VI LoadI32(const T* p) {
  const DI di;
  if constexpr (sizeof(T) == 4) {
    return hn::BitCast(di, hn::LoadU(hn::Rebind<T, DI>(), p));
  } else {
    return hn::PromoteTo(di, hn::LoadU(hn::Rebind<T, DI>(), p));
  }
}

// ---------------------------------------------------------------------------
// Parameter sub-runs.

struct ParamCursor {
  const float* scales;
  const int32_t* zero_points;  // may be null
  bool periodic;
  uint64_t period;
  uint64_t index;  // current parameter index
  uint64_t left;   // elements before the index changes (blocked) / wraps

  ParamCursor(const Run& r)  // NOLINT
      : scales(r.scales),
        zero_points(r.zero_points),
        periodic(r.periodic),
        period(r.period) {
    if (periodic) {
      index = r.phase % period;
      left = period - index;
    } else {
      index = r.phase / period;
      left = period - r.phase % period;
    }
  }

  void Advance(size_t len) {
    left -= len;
    if (periodic) {
      index += len;
      if (left == 0) {
        index = 0;
        left = period;
      }
    } else if (left == 0) {
      ++index;
      left = period;
    }
  }
};

// True when the first parameter block that starts within the next n
// outputs (the first output when one parameter covers them) is on a 64-byte
// line. For blocks of a multiple of 16 codes every block then is, and so is
// every whole vector a fused kernel stores: the condition for storing them
// non-temporally without a stage (the generic operations ask VectorsOnLines).
HWY_INLINE bool BlocksOnLines(const float* out, size_t n,
                              const ParamCursor& pc) {
  const uint64_t to_block = pc.left < n ? pc.left % pc.period : 0;
  return (reinterpret_cast<uintptr_t>(out + to_block) & 63) == 0;
}

// True when every whole vector that a stage 2 operation stores for the next
// n outputs at `out` lies within one 64-byte line (but those of a partial
// first block or row): the blocks (blocked runs) or rows (periodic runs)
// start on lines (above), and the n outputs lie within the first one or
// every one is a whole number of lines.
HWY_INLINE bool VectorsOnLines(const float* out, size_t n,
                               const ParamCursor& pc) {
  return BlocksOnLines(out, n, pc) && (pc.left >= n || pc.period % 16 == 0);
}

// Splits n codes into sub-runs of constant parameters (blocked) or of
// consecutive parameters (periodic) and hands each to Op. Whole blocks whose
// length is a multiple of the Op's vector step go through Op::Body, a loop
// without tail handling (the common K = 32, 64, ... case).
template <class Op, typename T>
HWY_INLINE void ApplyParams(const Op& op, const T* codes, size_t n,
                            ParamCursor& pc, float* out) {
  const bool whole_blocks = !pc.periodic && pc.period % op.Step() == 0;
  while (n > 0) {
    if (whole_blocks && pc.left == pc.period && n >= pc.period) {
      const size_t k = static_cast<size_t>(pc.period);
      const size_t blocks = n / k;
      const float* scales = pc.scales + pc.index;
      const int32_t* zps = pc.zero_points ? pc.zero_points + pc.index : nullptr;
      // Separate loops with and without zero points, so each block's
      // parameters are broadcast straight from memory.
#if HWY_TARGET <= HWY_AVX3
      // AVX-512: K = 32 gets a compile-time length (one straight-line pass
      // of two vectors); it gained 1.08-1.21 x there (per-block 8-bit, MXFP
      // e5m2, three builds). On AVX2 the same code read 0.71 x in two
      // builds, so AVX2 keeps its loop (bench/RESULTS.md: an unchanged
      // AVX2 source also moved by up to 0.77 x between builds).
      auto each_block = [&](auto kk) {
        const size_t len = kk() != 0 ? kk() : k;
        if (zps != nullptr) {
          for (size_t b = 0; b < blocks; ++b) {
            op.Body(codes + b * len, len, scales[b], zps[b], out + b * len);
          }
        } else {
          for (size_t b = 0; b < blocks; ++b) {
            op.Body(codes + b * len, len, scales[b], 0, out + b * len);
          }
        }
      };
      if (k == 32) {  // MXFP's only block size, per-block affine's usual one
        each_block([] { return size_t{32}; });
      } else {
        each_block([] { return size_t{0}; });
      }
#else
      if (zps != nullptr) {
        for (size_t b = 0; b < blocks; ++b) {
          op.Body(codes + b * k, k, scales[b], zps[b], out + b * k);
        }
      } else {
        for (size_t b = 0; b < blocks; ++b) {
          op.Body(codes + b * k, k, scales[b], 0, out + b * k);
        }
      }
#endif
      codes += blocks * k;
      out += blocks * k;
      n -= blocks * k;
      pc.index += blocks;
      continue;
    }
    const size_t len = static_cast<size_t>(std::min<uint64_t>(n, pc.left));
    if (pc.periodic) {
      op.Vector(codes, len, pc.scales + pc.index,
                pc.zero_points ? pc.zero_points + pc.index : nullptr, out);
    } else {
      op.Broadcast(codes, len, pc.scales[pc.index],
                   pc.zero_points ? pc.zero_points[pc.index] : 0, out);
    }
    codes += len;
    out += len;
    n -= len;
    pc.Advance(len);
  }
}

// ---------------------------------------------------------------------------
// Stage 2 operations: codes → float32. Each has
//   Step()                       its vector step in elements
//   Body(q, n, scale, zp, out)   n a multiple of Step(), one parameter
//   Broadcast(...)               any n, one parameter
//   Vector(q, n, scales, zps, out)  parameter i for element i

// Stores the float vector v at out; with kStream, non-temporally where
// StoresNonTemporal (kernels.h) says so. The stage 2 operations below store
// through it; ApplyToOutput picks their kStream = true form for streamed runs
// it sends straight from the registers (a compile-time choice: a run-time
// flag tested per store halved the K = 32 block loops in L2). Vectors under
// 16 bytes (AffineWide's halves on SSE4 and SSSE3, the SCALAR target) always
// take StoreU: Highway's Stream writes a whole 16-byte register whatever the
// lanes; ops whose vectors are that short say so by kCanStream = false, and
// ApplyToOutput streams them through the stage.
template <bool kStream, class D, class V>
HWY_INLINE void PutF(D d, V v, float* out) {
  if constexpr (kStream && hn::MaxLanes(D()) * sizeof(float) >= 16) {
    if (StoresNonTemporal(out, hn::Lanes(d) * sizeof(float))) {
      return hn::Stream(v, d, out);
    }
  }
  hn::StoreU(v, d, out);
}

// float(q - zp) · scale with q - zp in int32 (run.wide == false).
template <bool kStream = false>
struct AffineNarrow {
  static constexpr bool kCanStream = hn::MaxLanes(DF()) * sizeof(float) >= 16;
  AffineNarrow<true> Streamed() const { return {}; }
  size_t Step() const { return hn::Lanes(DF()); }

  template <typename T>
  HWY_INLINE void Body(const T* q, size_t n, float scale, int32_t zp,
                       float* out) const {
    const DF df;
    const DI di;
    const size_t N = hn::Lanes(df);
    const VI vzp = hn::Set(di, zp);
    const VF vs = hn::Set(df, scale);
    size_t i = 0;
    // Two vectors per iteration: a block of K = 2N (32 codes on AVX-512)
    // is one pass without loop control.
    for (; i + 2 * N <= n; i += 2 * N) {
      const VI a0 = hn::Sub(LoadI32(q + i), vzp);
      const VI a1 = hn::Sub(LoadI32(q + i + N), vzp);
      PutF<kStream>(df, hn::Mul(hn::ConvertTo(df, a0), vs), out + i);
      PutF<kStream>(df, hn::Mul(hn::ConvertTo(df, a1), vs), out + i + N);
    }
    if (i < n) {
      const VI a = hn::Sub(LoadI32(q + i), vzp);
      PutF<kStream>(df, hn::Mul(hn::ConvertTo(df, a), vs), out + i);
    }
  }

  template <typename T>
  HWY_INLINE void Broadcast(const T* q, size_t n, float scale, int32_t zp,
                            float* out) const {
    const size_t N = Step();
    const size_t body = n - n % N;
    Body(q, body, scale, zp, out);
    for (size_t i = body; i < n; ++i) {
      out[i] = detail::AffineScalar(q[i], zp, scale);
    }
  }

  template <typename T>
  HWY_INLINE void Vector(const T* q, size_t n, const float* scales,
                         const int32_t* zps, float* out) const {
    const DF df;
    const DI di;
    const size_t N = hn::Lanes(df);
    size_t i = 0;
    if (zps != nullptr) {
      for (; i + N <= n; i += N) {
        const VI a = hn::Sub(LoadI32(q + i), hn::LoadU(di, zps + i));
        PutF<kStream>(df,
                      hn::Mul(hn::ConvertTo(df, a), hn::LoadU(df, scales + i)),
                      out + i);
      }
      for (; i < n; ++i) out[i] = detail::AffineScalar(q[i], zps[i], scales[i]);
    } else {
      for (; i + N <= n; i += N) {
        PutF<kStream>(df,
                      hn::Mul(hn::ConvertTo(df, LoadI32(q + i)),
                              hn::LoadU(df, scales + i)),
                      out + i);
      }
      for (; i < n; ++i) out[i] = detail::AffineScalar(q[i], 0, scales[i]);
    }
  }
};

// float(q - zp) · scale where q - zp may leave int32: the difference of two
// doubles holding integers below 2^33 is exact, and DemoteTo rounds it once
// to float32, as the scalar int64 → float32 conversion does.
template <bool kStream = false>
struct AffineWide {
  AffineWide<true> Streamed() const { return {}; }
  using DD = hn::Repartition<double, DF>;  // N/2 doubles
  using DFH = hn::Rebind<float, DD>;       // N/2 floats
  using DIH = hn::Rebind<int32_t, DD>;
  static constexpr bool kCanStream = hn::MaxLanes(DFH()) * sizeof(float) >= 16;

  size_t Step() const { return hn::Lanes(DD()); }

  template <typename T>
  HWY_INLINE hn::Vec<DD> WidenToF64(const T* p) const {
    const DD dd;
    const DIH dih;
    if constexpr (std::is_same_v<T, uint32_t>) {
      const hn::Rebind<uint32_t, DD> du;
      const auto flipped = hn::Xor(hn::LoadU(du, p), hn::Set(du, 0x80000000u));
      return hn::Add(hn::PromoteTo(dd, hn::BitCast(dih, flipped)),
                     hn::Set(dd, 2147483648.0));
    } else if constexpr (std::is_same_v<T, int32_t>) {
      return hn::PromoteTo(dd, hn::LoadU(dih, p));
    } else {
      return hn::PromoteTo(
          dd, hn::PromoteTo(dih, hn::LoadU(hn::Rebind<T, DD>(), p)));
    }
  }

  template <typename T>
  HWY_INLINE void Body(const T* q, size_t n, float scale, int32_t zp,
                       float* out) const {
    const DD dd;
    const DFH dfh;
    const size_t H = hn::Lanes(dd);
    const auto vzp = hn::Set(dd, static_cast<double>(zp));
    const auto vs = hn::Set(dfh, scale);
    for (size_t i = 0; i < n; i += H) {
      const auto diff = hn::Sub(WidenToF64(q + i), vzp);
      PutF<kStream>(dfh, hn::Mul(hn::DemoteTo(dfh, diff), vs), out + i);
    }
  }

  template <typename T>
  HWY_INLINE void Broadcast(const T* q, size_t n, float scale, int32_t zp,
                            float* out) const {
    const size_t body = n - n % Step();
    Body(q, body, scale, zp, out);
    for (size_t i = body; i < n; ++i) {
      out[i] = detail::AffineScalar(q[i], zp, scale);
    }
  }

  template <typename T>
  HWY_INLINE void Vector(const T* q, size_t n, const float* scales,
                         const int32_t* zps, float* out) const {
    const DD dd;
    const DFH dfh;
    const DIH dih;
    const size_t H = hn::Lanes(dd);
    size_t i = 0;
    for (; i + H <= n; i += H) {
      auto diff = WidenToF64(q + i);
      if (zps != nullptr) {
        diff = hn::Sub(diff, hn::PromoteTo(dd, hn::LoadU(dih, zps + i)));
      }
      PutF<kStream>(
          dfh, hn::Mul(hn::DemoteTo(dfh, diff), hn::LoadU(dfh, scales + i)),
          out + i);
    }
    for (; i < n; ++i) {
      out[i] = detail::AffineScalar(q[i], zps ? zps[i] : 0, scales[i]);
    }
  }
};

// Looks up 16-entry float tables: one permute per TableLookupLanes chunk of
// N entries, chunks above the first selected by comparing the code.
HWY_INLINE VF Lookup16(const float* table, VI code) {
  const DF df;
  const DI di;
  const size_t N = hn::Lanes(df);
  const VI lane = hn::And(code, hn::Set(di, static_cast<int32_t>(N - 1)));
  const auto idx = hn::IndicesFromVec(df, lane);
  VF v = hn::TableLookupLanes(hn::LoadU(df, table), idx);
  for (size_t k = N; k < 16; k += N) {
    const VF part = hn::TableLookupLanes(hn::LoadU(df, table + k), idx);
    const auto upper = hn::RebindMask(
        df, hn::Gt(code, hn::Set(di, static_cast<int32_t>(k - 1))));
    v = hn::IfThenElse(upper, part, v);
  }
  return v;
}

// value(q) · scale for codes decoded by a Decoder:
//   VF Decode(const uint8_t* q) const   N codes → value · 2^-kRebiasLog2
//   float DecodeScalar(uint8_t) const   one code → value
//   static constexpr int kRebiasLog2
// Decode may return the values scaled by an exact power of two, which the
// product restores: Body multiplies by scale · 2^kRebiasLog2 when that is
// finite (the same real product, so the same rounding), else by both.
template <class Decoder, bool kStream = false>
struct DecodeOp {
  Decoder dec;
  static constexpr bool kCanStream = hn::MaxLanes(DF()) * sizeof(float) >= 16;
  DecodeOp<Decoder, true> Streamed() const { return {dec}; }

  size_t Step() const { return hn::Lanes(DF()); }

  HWY_INLINE void Body(const uint8_t* q, size_t n, float scale, int32_t,
                       float* out) const {
    const DF df;
    const size_t N = hn::Lanes(df);
    constexpr float kRebias =
        static_cast<float>(uint64_t{1} << Decoder::kRebiasLog2);
    const float folded = scale * kRebias;
    if (Decoder::kRebiasLog2 == 0 || std::isfinite(folded)) {
      const VF vs = hn::Set(df, folded);
      size_t i = 0;
      for (; i + 2 * N <= n; i += 2 * N) {  // as AffineNarrow::Body
        const VF v0 = dec.Decode(q + i);
        const VF v1 = dec.Decode(q + i + N);
        PutF<kStream>(df, hn::Mul(v0, vs), out + i);
        PutF<kStream>(df, hn::Mul(v1, vs), out + i + N);
      }
      if (i < n) PutF<kStream>(df, hn::Mul(dec.Decode(q + i), vs), out + i);
    } else {
      const VF vr = hn::Set(df, kRebias);
      const VF vs = hn::Set(df, scale);
      for (size_t i = 0; i < n; i += N) {
        PutF<kStream>(df, hn::Mul(hn::Mul(dec.Decode(q + i), vr), vs), out + i);
      }
    }
  }

  HWY_INLINE void Broadcast(const uint8_t* q, size_t n, float scale, int32_t zp,
                            float* out) const {
    const size_t body = n - n % Step();
    Body(q, body, scale, zp, out);
    for (size_t i = body; i < n; ++i) out[i] = dec.DecodeScalar(q[i]) * scale;
  }

  HWY_INLINE void Vector(const uint8_t* q, size_t n, const float* scales,
                         const int32_t*, float* out) const {
    const DF df;
    const size_t N = hn::Lanes(df);
    constexpr float kRebias =
        static_cast<float>(uint64_t{1} << Decoder::kRebiasLog2);
    const VF vr = hn::Set(df, kRebias);
    size_t i = 0;
    for (; i + N <= n; i += N) {
      VF v = dec.Decode(q + i);
      if (Decoder::kRebiasLog2 != 0) v = hn::Mul(v, vr);
      PutF<kStream>(df, hn::Mul(v, hn::LoadU(df, scales + i)), out + i);
    }
    for (; i < n; ++i) out[i] = dec.DecodeScalar(q[i]) * scales[i];
  }
};

// 4-bit codes through a 16-entry table (NF4, float4_e2m1).
struct TableDecoder {
  static constexpr int kRebiasLog2 = 0;
  const float* table;

  HWY_INLINE VF Decode(const uint8_t* q) const {
    return Lookup16(table, LoadI32(q));
  }
  float DecodeScalar(uint8_t code) const { return table[code & 15]; }
};

// Minifloat codes (sign bit `kSignBit`, `kMan` mantissa bits, bias `kBias`)
// to float32, exactly and without subnormal float32 intermediates (so a
// caller's DAZ setting cannot change them). Special codes: see minifloat.h.
template <int kSignBit, int kMan, int kBias, Codec kCodec>
struct MinifloatDecoder {
  float DecodeScalar(uint8_t code) const {
    switch (kCodec) {
      case Codec::kFloat8E4M3:
        return Float8E4M3ToF32(code);
      case Codec::kFloat8E5M2:
        return Float8E5M2ToF32(code);
      case Codec::kFloat6E2M3:
        return Float6E2M3ToF32(code);
      default:
        return Float6E3M2ToF32(code);
    }
  }

#if HWY_TARGET <= HWY_AVX2
  // With F16C: the code's exponent and mantissa fields are placed in a
  // binary16 (exponent field as is, mantissa at the top), which is the value
  // times 2^(kBias - 15), subnormals included; vcvtph2ps widens it exactly
  // (DAZ does not apply to it) and a product by 2^(15 - kBias) restores the
  // value, exactly. float8_e5m2 is the top byte of a binary16 and converts
  // as is, infinities and NaNs included.
  static constexpr int kRebiasLog2 =
      kCodec == Codec::kFloat8E5M2 ? 0 : 15 - kBias;

  HWY_INLINE VF Decode(const uint8_t* q) const {
    const DF df;
    const hn::Rebind<uint16_t, DF> d16;
    const hn::Rebind<hwy::float16_t, DF> dh;
    const auto c = hn::PromoteTo(d16, hn::LoadU(hn::Rebind<uint8_t, DF>(), q));
    if constexpr (kCodec == Codec::kFloat8E5M2) {
      return hn::PromoteTo(df, hn::BitCast(dh, hn::ShiftLeft<8>(c)));
    } else {
      // Magnitude bits land with the mantissa at the top of the binary16
      // mantissa (shift by 10 - kMan), which leaves the sign at bit
      // kSignBit + 10 - kMan; adding that bit to itself moves it to bit 15.
      constexpr int kShift = 10 - kMan;
      constexpr int kSignAt = kSignBit + kShift;
      static_assert(kSignAt <= 15, "sign must land in the binary16");
      auto h = hn::ShiftLeft<kShift>(c);
      if constexpr (kSignAt == 14) {
        h = hn::Add(h, hn::And(h, hn::Set(d16, 0x4000)));
      } else {
        const auto sign = hn::And(h, hn::Set(d16, 1u << kSignAt));
        h = hn::Or(hn::Xor(h, sign), hn::ShiftLeft<15 - kSignAt>(sign));
      }
      if constexpr (kCodec == Codec::kFloat8E4M3) {
        // S.1111.111 → the binary16 quiet NaN 0x7E00 (→ 0x7FC00000), sign
        // kept: 0x3F80 ^ 0x4180 = 0x7E00.
        const auto nan =
            hn::Eq(hn::And(h, hn::Set(d16, 0x7FFF)), hn::Set(d16, 0x3F80));
        h = hn::Xor(h, hn::IfThenElseZero(nan, hn::Set(d16, 0x4180)));
      }
      return hn::PromoteTo(df, hn::BitCast(dh, h));
    }
  }

#else
  // Normal codes: exponent and mantissa fields moved into place and rebiased
  // in the integer domain; subnormal codes: (mantissa as float) ·
  // 2^(1 - bias - mantissa bits). Both exact and normal in float32.
  static constexpr int kRebiasLog2 = 0;

  HWY_INLINE VF Decode(const uint8_t* q) const {
    const DF df;
    const DI di;
    const VI code = LoadI32(q);
    const VI mag = hn::And(code, hn::Set(di, (1 << kSignBit) - 1));
    const VI sign =
        hn::ShiftLeft<31 - kSignBit>(hn::And(code, hn::Set(di, 1 << kSignBit)));
    const VI normal = hn::Add(hn::ShiftLeft<23 - kMan>(mag),
                              hn::Set(di, (127 - kBias) << 23));
    const VF subnormal = hn::Mul(
        hn::ConvertTo(df, mag),
        hn::Set(df, 1.0f / static_cast<float>(1 << (kBias - 1 + kMan))));
    const auto is_subnormal =
        hn::RebindMask(df, hn::Lt(mag, hn::Set(di, 1 << kMan)));
    VF v =
        hn::Or(hn::IfThenElse(is_subnormal, subnormal, hn::BitCast(df, normal)),
               hn::BitCast(df, sign));
    if constexpr (kCodec == Codec::kFloat8E4M3) {
      // S.1111.111 is NaN (OCP OFP8): quiet, signed, no payload.
      const auto nan = hn::RebindMask(df, hn::Eq(mag, hn::Set(di, 0x7F)));
      const VI nan_bits =
          hn::Or(sign, hn::Set(di, static_cast<int32_t>(kE4M3NanBits)));
      v = hn::IfThenElse(nan, hn::BitCast(df, nan_bits), v);
    } else if constexpr (kCodec == Codec::kFloat8E5M2) {
      // Exponent field 31: infinity (mantissa 0) or NaN (quiet bit set,
      // payload in the top mantissa bits), like binary16 → binary32.
      const auto special = hn::RebindMask(df, hn::Gt(mag, hn::Set(di, 0x7B)));
      const VI man = hn::And(mag, hn::Set(di, 3));
      const VI quiet = hn::IfThenElseZero(hn::Gt(mag, hn::Set(di, 0x7C)),
                                          hn::Set(di, 0x00400000));
      const VI bits = hn::Or(hn::Or(sign, hn::Set(di, 0x7F800000)),
                             hn::Or(hn::ShiftLeft<21>(man), quiet));
      v = hn::IfThenElse(special, hn::BitCast(df, bits), v);
    }
    return v;
  }
#endif
};

#if HWY_TARGET == HWY_AVX3_DL
// float8_e5m2 on AVX3_DL off Intel (detail::AvoidFloat512 false: AMD's Zen
// 4; Intel keeps the F16C form it was measured with, for its streamed runs,
// its cached ones taking the AVX2 kernels): a code is the top byte of a
// binary16, so one zero-masking byte permute (256 bits) puts 16 codes in
// the high bytes of 16 words, and vcvtph2ps widens them exactly (infinities,
// NaNs and subnormals included; DAZ does not apply to it). Per 16 outputs:
// a 16-byte load, the permute, the convert, the multiply (DecodeOp) and the
// store, where the F16C form widens and shifts: MXFP e5m2 in L2 went from
// 0.65 to 0.72 of the store loop on Zen 4 (bench/RESULTS.md, issue 47).
// The permute's indices are a constant in static storage: as a member of
// the op (on the caller's stack, reloaded after every block's stores) the
// row ran at 0.48.
struct E5M2PermuteDecoder {
  static constexpr int kRebiasLog2 = 0;

  float DecodeScalar(uint8_t code) const { return Float8E5M2ToF32(code); }

  HWY_INLINE VF Decode(const uint8_t* q) const {
    // Word i takes code i as its high byte (the mask zeroes the low bytes).
    alignas(32) static constexpr uint8_t kToHighBytes[32] = {
        0, 0, 0, 1, 0, 2,  0, 3,  0, 4,  0, 5,  0, 6,  0, 7,
        0, 8, 0, 9, 0, 10, 0, 11, 0, 12, 0, 13, 0, 14, 0, 15};
    const __m256i in = _mm256_castsi128_si256(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(q)));
    const __m256i halves = _mm256_maskz_permutexvar_epi8(
        0xAAAAAAAAu,
        _mm256_load_si256(reinterpret_cast<const __m256i*>(kToHighBytes)), in);
    return VF{_mm512_cvtph_ps(halves)};
  }
};
#endif  // HWY_TARGET == HWY_AVX3_DL

// ---------------------------------------------------------------------------
// Stage 1: sub-byte codes → one byte per code (int8 for signed codecs).

// Codes of elements first .. first + n - 1 of a 4-bit stream into out[0, n).
// src holds `src_bytes` bytes.
void Expand4(const uint8_t* src, size_t src_bytes, uint64_t first, size_t n,
             bool is_signed, uint8_t* out) {
  const uint8_t bias = is_signed ? 8 : 0;
  auto scalar = [&](uint64_t e) {
    return static_cast<uint8_t>((ReadRawCode(src, e, Codec::kUInt4) ^ bias) -
                                bias);
  };
  size_t j = 0;
  uint64_t e = first;
  if ((e & 1) != 0 && j < n) out[j++] = scalar(e++);
#if HWY_TARGET != HWY_SCALAR
  // Each u16 lane takes one byte b and becomes (b & 0xF) | (b >> 4) << 8:
  // the two codes in element order once read as bytes.
  const hn::ScalableTag<uint16_t> d16;
  const hn::Rebind<uint8_t, decltype(d16)> d8h;  // one byte per u16 lane
  const hn::Repartition<uint8_t, decltype(d16)> d8;
  const size_t L = hn::Lanes(d16);  // bytes in, 2L codes out
  const auto lo_mask = hn::Set(d16, 0x000F);
  const auto hi_mask = hn::Set(d16, 0x00F0);
  const auto vbias = hn::Set(d8, bias);
  size_t byte = static_cast<size_t>(e >> 1);
  while (j + 2 * L <= n && byte + L <= src_bytes) {
    const auto b = hn::PromoteTo(d16, hn::LoadU(d8h, src + byte));
    const auto w =
        hn::Or(hn::And(b, lo_mask), hn::ShiftLeft<4>(hn::And(b, hi_mask)));
    auto codes = hn::BitCast(d8, w);
    if (is_signed) codes = hn::Sub(hn::Xor(codes, vbias), vbias);
    hn::StoreU(codes, d8, out + j);
    j += 2 * L;
    byte += L;
    e += 2 * L;
  }
#else
  (void)src_bytes;
#endif
  for (; j < n; ++j) out[j] = scalar(e++);
}

void Expand2(const uint8_t* src, size_t src_bytes, uint64_t first, size_t n,
             bool is_signed, uint8_t* out) {
  const uint8_t bias = is_signed ? 2 : 0;
  auto scalar = [&](uint64_t e) {
    return static_cast<uint8_t>((ReadRawCode(src, e, Codec::kUInt2) ^ bias) -
                                bias);
  };
  size_t j = 0;
  uint64_t e = first;
  while ((e & 3) != 0 && j < n) out[j++] = scalar(e++);
#if HWY_TARGET != HWY_SCALAR
  // Each u32 lane takes one byte and spreads its four 2-bit codes to the
  // low bits of its four bytes.
  const DU du;
  const hn::Rebind<uint8_t, DU> d8q;
  const hn::Repartition<uint8_t, DU> d8;
  const size_t L = hn::Lanes(du);  // bytes in, 4L codes out
  const auto vbias = hn::Set(d8, bias);
  size_t byte = static_cast<size_t>(e >> 2);
  while (j + 4 * L <= n && byte + L <= src_bytes) {
    const auto b = hn::PromoteTo(du, hn::LoadU(d8q, src + byte));
    const auto w =
        hn::Or(hn::Or(hn::And(b, hn::Set(du, 0x3u)),
                      hn::And(hn::ShiftLeft<6>(b), hn::Set(du, 0x300u))),
               hn::Or(hn::And(hn::ShiftLeft<12>(b), hn::Set(du, 0x30000u)),
                      hn::And(hn::ShiftLeft<18>(b), hn::Set(du, 0x3000000u))));
    auto codes = hn::BitCast(d8, w);
    if (is_signed) codes = hn::Sub(hn::Xor(codes, vbias), vbias);
    hn::StoreU(codes, d8, out + j);
    j += 4 * L;
    byte += L;
    e += 4 * L;
  }
#else
  (void)src_bytes;
#endif
  for (; j < n; ++j) out[j] = scalar(e++);
}

// 6-bit: every u32 lane gathers one 3-byte group (a lane permute brings 12
// input bytes into each 128-bit block, a byte shuffle spreads them 3 per
// lane), then moves its four 6-bit fields to the low bits of its four bytes.
void Expand6(const uint8_t* src, size_t src_bytes, uint64_t first, size_t n,
             uint8_t* out) {
  size_t j = 0;
  uint64_t e = first;
  while ((e & 3) != 0 && j < n) {
    out[j++] = static_cast<uint8_t>(ReadRawCode(src, e++, Codec::kFloat6E2M3));
  }
#if HWY_TARGET != HWY_SCALAR
  const DU du;
  const DI di;
  const hn::Repartition<uint8_t, DU> d8;
  const size_t L = hn::Lanes(du);  // groups per vector: 3L bytes in, 4L out
  HWY_ALIGN int32_t spread[64];
  for (size_t i = 0; i < L && i < 64; ++i) {
    spread[i] = static_cast<int32_t>((i / 4) * 3 + (i % 4));
  }
  const auto spread_idx = hn::IndicesFromVec(du, hn::LoadU(di, spread));
  alignas(16) static constexpr uint8_t kShuffle[16] = {
      0, 1, 2, 2, 3, 4, 5, 5, 6, 7, 8, 8, 9, 10, 11, 11};
  const auto shuffle = hn::LoadDup128(d8, kShuffle);
  size_t byte = static_cast<size_t>(e >> 2) * 3;
#if HWY_TARGET == HWY_AVX3_DL
  // VBMI: a byte permute puts 6 input bytes (8 codes) in every 64-bit lane,
  // a multishift picks the byte at bit 6i of the lane for code i.
  {
    alignas(64) static constexpr uint8_t kSpread[64] = {
        0,  1,  2,  3,  4,  5,  5,  5,  6,  7,  8,  9,  10, 11, 11, 11,
        12, 13, 14, 15, 16, 17, 17, 17, 18, 19, 20, 21, 22, 23, 23, 23,
        24, 25, 26, 27, 28, 29, 29, 29, 30, 31, 32, 33, 34, 35, 35, 35,
        36, 37, 38, 39, 40, 41, 41, 41, 42, 43, 44, 45, 46, 47, 47, 47};
    const __m512i spread6 = _mm512_load_si512(kSpread);
    const __m512i shifts = _mm512_set1_epi64(0x2A241E18120C0600LL);
    const __m512i mask = _mm512_set1_epi8(0x3F);
    while (j + 64 <= n && byte + 64 <= src_bytes) {
      const __m512i in = _mm512_loadu_si512(src + byte);
      const __m512i lanes = _mm512_permutexvar_epi8(spread6, in);
      const __m512i codes =
          _mm512_and_si512(_mm512_multishift_epi64_epi8(shifts, lanes), mask);
      _mm512_storeu_si512(out + j, codes);
      j += 64;
      byte += 48;
      e += 64;
    }
  }
#endif
  // The load reads 4L bytes although 3L are used.
  while (j + 4 * L <= n && byte + 4 * L <= src_bytes) {
    auto words = hn::BitCast(du, hn::LoadU(d8, src + byte));
    if (L > 4) words = hn::TableLookupLanes(words, spread_idx);
    const auto w =
        hn::BitCast(du, hn::TableLookupBytes(hn::BitCast(d8, words), shuffle));
    const auto codes =
        hn::Or(hn::Or(hn::And(w, hn::Set(du, 0x3Fu)),
                      hn::And(hn::ShiftLeft<2>(w), hn::Set(du, 0x3F00u))),
               hn::Or(hn::And(hn::ShiftLeft<4>(w), hn::Set(du, 0x3F0000u)),
                      hn::And(hn::ShiftLeft<6>(w), hn::Set(du, 0x3F000000u))));
    hn::StoreU(hn::BitCast(d8, codes), d8, out + j);
    j += 4 * L;
    byte += 3 * L;
    e += 4 * L;
  }
#else
  (void)src_bytes;
#endif
  for (; j < n; ++j) {
    out[j] = static_cast<uint8_t>(ReadRawCode(src, e++, Codec::kFloat6E2M3));
  }
}

// ---------------------------------------------------------------------------
// Drivers.

// Copies n floats, with non-temporal stores where StoresNonTemporal says
// (kernels.h: vector-aligned, outside the first line of a page).
void StreamCopy(const float* from, float* to, size_t n) {
  detail::streamed_outputs.through_stage += n;
  const DF df;
  const size_t N = hn::Lanes(df);
  const size_t align = N * sizeof(float);
  size_t i = 0;
  for (; i < n && reinterpret_cast<uintptr_t>(to + i) % align != 0; ++i) {
    to[i] = from[i];
  }
  for (; i + N <= n; i += N) {
    const auto v = hn::LoadU(df, from + i);
    if (StoresNonTemporal(to + i, align)) {
      hn::Stream(v, df, to + i);
    } else {
      hn::StoreU(v, df, to + i);
    }
  }
  for (; i < n; ++i) to[i] = from[i];
}

#include "dequant/fused_blocks-inl.h"
// Must come after fused_blocks-inl.h.
#include "dequant/avx2_fused-inl.h"
#include "dequant/avx3dl_lookup-inl.h"

// n codes through `op` into an L1 stage, tile by tile, that StreamCopy
// writes out (non-temporally on lines, whatever the output's alignment).
template <class Op, typename T>
HWY_INLINE void StageToOutput(const Op& op, const T* codes, size_t n,
                              ParamCursor& pc, float* out) {
  HWY_ALIGN float stage[kTile];
  for (size_t done = 0; done < n;) {
    const size_t len = std::min(kTile, n - done);
    ApplyParams(op, codes + done, len, pc, stage);
    StreamCopy(stage, out + done, len);
    done += len;
  }
}

// Applies `op` to n codes, into `out` directly or, when streaming, with
// non-temporal stores: straight from the registers where the vectors land
// on lines, else through the stage (StageToOutput). A partial first block
// at an output off a line takes the stage, so that the blocks after it can
// take the registers. Since the page rule (StoresNonTemporal) the registers
// beat the stage from DRAM: 21 of 22 row-rounds (8-, 16-, 32-bit codes and
// float8 e5m2, AVX3_DL) and 14 of 14 (AVX2), summed rates 1.28-1.41 x and
// 1.13-1.29 x (bench/RESULTS.md, issue 18, "the generic kernels straight
// from the registers").
template <class Op, typename T>
HWY_INLINE void ApplyToOutput(const Op& op, const T* codes, size_t n,
                              ParamCursor& pc, float* out, bool stream) {
  if (!stream) return ApplyParams(op, codes, n, pc, out);
  if constexpr (Op::kCanStream) {
    const bool off_line = (reinterpret_cast<uintptr_t>(out) & 63) != 0;
    const size_t head =
        off_line && pc.left < n ? static_cast<size_t>(pc.left % pc.period) : 0;
    if (head > 0) {
      StageToOutput(op, codes, head, pc, out);
      codes += head;
      out += head;
      n -= head;
    }
    if (VectorsOnLines(out, n, pc)) {
      detail::streamed_outputs.from_registers += n;
      return ApplyParams(op.Streamed(), codes, n, pc, out);
    }
  }
  StageToOutput(op, codes, n, pc, out);
}

// Length of the tile `done` outputs into a run of n at `out`: kTile, but in
// a streamed run the first tile ends where a 64-byte line of the output
// starts, so that every later tile starts on one. A block that crosses a
// tile's edge then keeps its vectors on lines (VectorsOnLines) rather than
// sending its tail through the stage, when the run starts off a line (a
// piece that starts inside a block, or a block start past the output's own).
// Runs not streamed keep whole tiles: later tiles then start at the first
// tile's phase within a group of codes, and expanding from inside a group
// costs scalar reads.
HWY_INLINE size_t TileLength(const float* out, size_t done, size_t n,
                             bool stream) {
  const size_t past_line =
      stream && done == 0
          ? (reinterpret_cast<uintptr_t>(out) & 63) / sizeof(float)
          : 0;
  return std::min(kTile - past_line, n - done);
}

// Codecs of 8 bits or more: codes are read in place.
template <typename T, class Op>
void RunInPlace(const Run& r, const Op& op) {
  ParamCursor pc(r);
  const T* codes = reinterpret_cast<const T*>(r.src) + r.first;
  if constexpr (sizeof(T) > 1) {
    // Unaligned multi-byte codes: Highway loads are unaligned, and the
    // scalar tails read through memcpy-safe copies below.
    if (reinterpret_cast<uintptr_t>(codes) % alignof(T) != 0) {
      HWY_ALIGN T buf[kTile];
      for (size_t done = 0; done < r.count;) {
        const size_t len = TileLength(r.out, done, r.count, r.stream);
        std::memcpy(buf, codes + done, len * sizeof(T));
        ApplyToOutput(op, static_cast<const T*>(buf), len, pc, r.out + done,
                      r.stream);
        done += len;
      }
      return;
    }
  }
  ApplyToOutput(op, codes, r.count, pc, r.out, r.stream);
}

// Sub-byte codecs: expand a tile of codes, then apply.
template <typename T, class Op>
void RunExpanded(const Run& r, const Op& op) {
  const Packing pk = PackingOf(r.codec);
  const bool is_signed = r.codec == Codec::kInt4 || r.codec == Codec::kInt2;
  const uint64_t groups =
      (r.first + r.count + pk.group_elements - 1) / pk.group_elements;
  const size_t src_bytes = static_cast<size_t>(groups * pk.group_bytes);
  ParamCursor pc(r);
  HWY_ALIGN uint8_t tile[kTile + kTileSlack];
  for (size_t done = 0; done < r.count;) {
    const size_t len = TileLength(r.out, done, r.count, r.stream);
    const uint64_t e = r.first + done;
    switch (pk.bits) {
      case 4:
        Expand4(r.src, src_bytes, e, len, is_signed, tile);
        break;
      case 2:
        Expand2(r.src, src_bytes, e, len, is_signed, tile);
        break;
      default:
        Expand6(r.src, src_bytes, e, len, tile);
        break;
    }
    ApplyToOutput(op, reinterpret_cast<const T*>(tile), len, pc, r.out + done,
                  r.stream);
    done += len;
  }
}

template <typename T>
void RunAffine(const Run& r) {
  if (r.wide) {
    RunInPlace<T>(r, AffineWide<>());
  } else {
    RunInPlace<T>(r, AffineNarrow<>());
  }
}

template <typename T>
void RunAffineExpanded(const Run& r) {
  if (r.wide) {
    RunExpanded<T>(r, AffineWide<>());
  } else {
    RunExpanded<T>(r, AffineNarrow<>());
  }
}

}  // namespace

void DequantizeRunCodec(const Run& r) {
#if HWY_TARGET == HWY_AVX3_DL
  if (TryFusedAvx3Dl(r)) return;
#elif HWY_TARGET == HWY_AVX2
  if (TryFusedAvx2(r)) return;
#endif
  switch (r.codec) {
    case Codec::kInt8:
      return RunAffine<int8_t>(r);
    case Codec::kUInt8:
      return RunAffine<uint8_t>(r);
    case Codec::kInt16:
      return RunAffine<int16_t>(r);
    case Codec::kUInt16:
      return RunAffine<uint16_t>(r);
    case Codec::kInt32:
      // q - zp stays in int32 only with a zero point of 0, which the caller
      // flags as narrow (NarrowAffineSafe); otherwise the wide path.
      return RunAffine<int32_t>(r);
    case Codec::kUInt32: {
      Run wide = r;
      wide.wide = true;
      return RunAffine<uint32_t>(wide);
    }
    case Codec::kInt4:
    case Codec::kInt2:
      return RunAffineExpanded<int8_t>(r);
    case Codec::kUInt4:
    case Codec::kUInt2:
      return RunAffineExpanded<uint8_t>(r);
    case Codec::kNf4:
      return RunExpanded<uint8_t>(
          r, DecodeOp<TableDecoder>{{detail::Nf4Table().v}});
    case Codec::kFloat4E2M1:
      return RunExpanded<uint8_t>(
          r, DecodeOp<TableDecoder>{{detail::Fp4Table().v}});
    case Codec::kFloat8E4M3:
      return RunInPlace<uint8_t>(
          r, DecodeOp<MinifloatDecoder<7, 3, 7, Codec::kFloat8E4M3>>());
    case Codec::kFloat8E5M2:
#if HWY_TARGET == HWY_AVX3_DL
      if (!detail::AvoidFloat512()) {
        return RunInPlace<uint8_t>(r, DecodeOp<E5M2PermuteDecoder>());
      }
#endif
      return RunInPlace<uint8_t>(
          r, DecodeOp<MinifloatDecoder<7, 2, 15, Codec::kFloat8E5M2>>());
    case Codec::kFloat6E2M3:
      return RunExpanded<uint8_t>(
          r, DecodeOp<MinifloatDecoder<5, 3, 1, Codec::kFloat6E2M3>>());
    case Codec::kFloat6E3M2:
      return RunExpanded<uint8_t>(
          r, DecodeOp<MinifloatDecoder<5, 2, 3, Codec::kFloat6E3M2>>());
  }
}

void DequantizeRunImpl(const Run& r) {
  if (r.count == 0) return;
  DequantizeRunCodec(r);
  if (r.stream) hwy::FlushStream();  // order the non-temporal stores
}

const char* TargetNameImpl() { return hwy::TargetName(HWY_TARGET); }

int64_t TargetImpl() { return HWY_TARGET; }

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace hurray::dequant
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace hurray::dequant {

HWY_EXPORT(DequantizeRunImpl);
HWY_EXPORT(TargetNameImpl);
HWY_EXPORT(TargetImpl);

namespace {

using detail::avx2_preference;

#if HWY_ARCH_X86 && (HWY_TARGETS & HWY_AVX2)
using detail::IsIntelCpu;

// The codecs whose AVX3 kernels convert and multiply in 512 bits and whose
// AVX2 kernels were faster on an Intel AVX-512 host in L2 (bench/RESULTS.md,
// issue 18: int8 5.13 against 5.50 us, int16 5.20 against 5.94,
// float8_e5m2 4.99 against 5.64). The 2- and 4-bit, float8_e4m3, float6
// and 32-bit codecs stay on their AVX3_DL kernels, which were faster there.
bool Avx2KernelsFaster(Codec codec) {
  switch (codec) {
    case Codec::kInt8:
    case Codec::kUInt8:
    case Codec::kInt16:
    case Codec::kUInt16:
    case Codec::kFloat8E5M2:
      return true;
    default:
      return false;
  }
}
#endif  // HWY_ARCH_X86 && (HWY_TARGETS & HWY_AVX2)

// Intel's AVX-512 cores run at a lower clock for some time after 512-bit
// floating-point instructions (one such multiply before an L2-sized lookup
// run cost it 8 %, bench/RESULTS.md); AMD's do not change their clock. Only
// for outputs that stay in the caches: streamed ones (Run::stream) were
// faster with the 512-bit kernels and their 64-byte non-temporal stores
// (per_tensor int8 at 64 Mi outputs: 0.78 of the store loop with the
// AVX3_DL kernels, 0.65 with AVX2's).
bool UseAvx2Kernels(Codec codec, bool stream) {
#if HWY_ARCH_X86 && (HWY_TARGETS & HWY_AVX2)
  if (stream || !Avx2KernelsFaster(codec)) return false;
  const int preference = avx2_preference.load(std::memory_order_relaxed);
  if (preference == 2 || (preference == 0 && !IsIntelCpu())) return false;
  const int64_t target = HWY_DYNAMIC_DISPATCH(TargetImpl)();
  return target == HWY_AVX3 || target == HWY_AVX3_DL;
#else
  (void)codec;
  (void)stream;
  return false;
#endif
}

}  // namespace

void DequantizeRun(const Run& run) {
#if HWY_ARCH_X86 && (HWY_TARGETS & HWY_AVX2)
  if (UseAvx2Kernels(run.codec, run.stream)) {
    return N_AVX2::DequantizeRunImpl(run);
  }
#endif
  HWY_DYNAMIC_DISPATCH(DequantizeRunImpl)(run);
}

const char* KernelTargetName() {
  return HWY_DYNAMIC_DISPATCH(TargetNameImpl)();
}

const char* KernelTargetNameFor(Codec codec, bool stream) {
  return UseAvx2Kernels(codec, stream) ? hwy::TargetName(HWY_AVX2)
                                       : KernelTargetName();
}

void SetAvx2PreferenceForTest(int preference) {
  avx2_preference.store(preference, std::memory_order_relaxed);
}

StreamedOutputs StreamedOutputsOfThisThread() {
  return detail::streamed_outputs;
}

bool NarrowAffineSafe(Codec codec, int64_t zero_point) {
  if (!IsIntegerCodec(codec)) return true;
  const int64_t lo = MinValue(codec) - zero_point;
  const int64_t hi = MaxValue(codec) - zero_point;
  return lo >= INT32_MIN && hi <= INT32_MAX;
}

std::vector<float> ExactFloatZeroPoints(Codec codec,
                                        const std::vector<int32_t>& zps) {
  std::vector<float> out;
  if (codec != Codec::kInt4 && codec != Codec::kUInt4 &&
      codec != Codec::kInt2 && codec != Codec::kUInt2) {
    return out;
  }
  constexpr int32_t kExact = int32_t{1} << 24;  // float32's 24-bit significand
  for (int32_t zp : zps) {
    if (zp > kExact || zp < -kExact) return out;
  }
  out.reserve(zps.size());
  for (int32_t zp : zps) out.push_back(static_cast<float>(zp));
  return out;
}

}  // namespace hurray::dequant
#endif  // HWY_ONCE
