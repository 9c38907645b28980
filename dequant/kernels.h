// The inner loops of dequantization: one call turns a run of consecutive
// storage elements into float32, with Highway SIMD kernels chosen at run time
// for the best target of this CPU (dequant/simd_kernels.cc).
//
// Every kernel computes exactly what the scalar reference (dequant/scalar.h)
// computes, bit for bit: integer codecs give float(q - zero_point) · scale
// with the difference exact and one rounding to float32 (RESOLUTIONS.md 1),
// NF4 gives kNf4Lut[q] · scale, minifloats give value(q) · scale.
#ifndef HURRAY_DEQUANT_KERNELS_H_
#define HURRAY_DEQUANT_KERNELS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "dequant/codec.h"

namespace hurray::dequant {

// One run: elements first .. first + count - 1 of the packed stream at `src`
// (a group boundary, see Packing). src must hold every byte of the groups
// those elements live in, and nothing past them is read.
//
// Element j of the run (0-based) uses parameter index
//   blocked (periodic = false): (phase + j) / period
//   periodic (periodic = true): (phase + j) % period
// into `scales` and `zero_points` (nullptr: all zero points are 0).
struct Run {
  Codec codec = Codec::kInt8;
  const uint8_t* src = nullptr;
  uint64_t first = 0;
  size_t count = 0;
  bool periodic = false;
  uint64_t phase = 0;
  uint64_t period = UINT64_MAX;
  const float* scales = nullptr;
  const int32_t* zero_points = nullptr;
  // The same array as zero_points, element for element, as float32 when
  // every one converts exactly (|zp| <= 2^24; the Dequantizer gives them for
  // 2- and 4-bit codes), else nullptr. float(q) - zp_f is then float(q - zp)
  // (in the default rounding mode, where the kernels use it), and the 2- and
  // 4-bit table kernels build their tables from it.
  const float* zero_points_f = nullptr;
  // Some q - zero_point may leave the int32 range (32-bit storage, or zero
  // points outside the storage range in permissive mode): the kernels then
  // take the 64-bit exact path.
  bool wide = false;
  // Write `out` with non-temporal stores, for outputs far larger than the
  // caches: no read-for-ownership of the destination. Straight from the
  // registers where the kernel's vectors land on 64-byte lines, else
  // (and for vectors under 16 bytes) through an L1 tile copied out on
  // lines. Same values.
  bool stream = false;
  float* out = nullptr;
};

// Outputs of at least this many bytes in one Consume are streamed.
inline constexpr size_t kStreamOutputBytes = size_t{32} << 20;

// In a streamed output, whether the vector of `vector_bytes` at `out` is
// stored non-temporally: when it is whole in a 64-byte line, except in the
// first line of each 4 KiB page, which takes an ordinary store. From DRAM,
// on the AVX-512 host, a loop of nothing but non-temporal stores ran at
// 4.4-9.8 el/ns from one pass to the next, and at 8.7-10.2 with one
// ordinary line per page; the fused kernels went from 3.1-8.8 to 7.4-9.2
// el/ns (bench/RESULTS.md, issue 18, "one ordinary line per page"). The
// kernels' stores from registers and from their L1 stage, and
// bench/store_only.cc (the store bound), all follow this rule.
inline bool StoresNonTemporal(const float* out, size_t vector_bytes) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(out);
  return (a & (vector_bytes - 1)) == 0 && (a & 4095) >= 64;
}

// How far past an ordinary (cached) store the fused kernels ask for the
// line they will write there (PrefetchForWrite; 512 and 2048 measured the
// same).
inline constexpr size_t kWriteAheadBytes = 1024;

// Asks for the line kWriteAheadBytes past `out` in a writable state. The
// fused AVX2 and AVX3_DL kernels do once per 64 bytes of ordinary stores
// (before each 512-bit store, every other 256-bit one): into
// L2 (64 Ki outputs), MXFP float6 went from 0.81 to 0.93 of the store loop,
// float8_e4m3 from 0.79 to 0.87, float4_e2m1, NF4 and the per-tensor and
// per-channel 2- and 4-bit rows from 0.91-0.94 to 0.96-0.98
// (bench/RESULTS.md, issue 18). The likely reason (this VM has no
// hardware counters): with ten or more instructions per output vector, a
// kernel's out-of-order window holds far fewer stores than a plain store
// loop's, so fewer of the lines they write are on their way at once. The
// Highway kernels of 16- and 32-bit codes do not ask: there it measured
// -3.5 % to +3.5 % by row. A hint: it never faults and changes no memory, so
// the lines past the output it asks for (at most kWriteAheadBytes, perhaps
// another thread's) are harmless; PREFETCHW is a NOP on x86 CPUs without
// it.
// kOffsetBytes: for a store at out + kOffsetBytes, so that the address is
// one register plus a displacement (no instruction to form out + offset).
template <int kOffsetBytes = 0>
inline void PrefetchForWrite(const float* out) {
#if defined(__x86_64__) || defined(__i386__)
  asm volatile("prefetchw %c1(%0)"
               :
               : "r"(out), "i"(kWriteAheadBytes + kOffsetBytes));
#else
  __builtin_prefetch(
      reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(out) +
                                    kWriteAheadBytes + kOffsetBytes),
      1, 3);
#endif
}

// Dequantizes one run on the best SIMD target of this CPU (or the one forced
// by hwy::SetSupportedTargetsForTest).
void DequantizeRun(const Run& run);

// Outputs of streamed runs (Run::stream) that DequantizeRun has stored on
// this thread since it started: straight from the kernels' registers, and
// through the L1 stage. Which path a run took does not show in its values
// (only in its speed from DRAM); simd_equivalence_test and dequant_bench
// read it here. Counted once per register run or stage tile, never per
// vector.
struct StreamedOutputs {
  uint64_t from_registers = 0;
  uint64_t through_stage = 0;
};
StreamedOutputs StreamedOutputsOfThisThread();

// Name of the Highway target DequantizeRun uses now ("AVX3_DL", "AVX2",
// "SSE4", "EMU128", ...).
const char* KernelTargetName();

// The target whose kernels dequantize runs of `codec` now (`stream`:
// Run::stream): KernelTargetName(), but "AVX2" for in-cache runs of the 8-
// and 16-bit integer codecs and float8_e5m2 on Intel CPUs whose best target
// is AVX3 or AVX3_DL. Their 512-bit converts and multiplies lower the core's
// clock there, and their 256-bit kernels were the faster ones into the
// caches; streamed outputs keep the 512-bit kernels, faster there
// (bench/RESULTS.md, issue 18).
const char* KernelTargetNameFor(Codec codec, bool stream);

// Tests: 0 (the default) takes the AVX2 kernels above on Intel CPUs only, 1
// on any CPU, 2 never (every target's own kernels). The same choice keeps
// the AVX3_DL kernels' per-parameter arithmetic in 256 bits or less (1, or
// 0 on Intel: its clock licence) or lets it use 512 bits (2, or 0
// elsewhere), and picks the AVX3_DL float8_e5m2 decoding (the F16C widening
// kept for Intel, or E5M2PermuteDecoder in dequant/simd_kernels.cc), with
// the same values either way.
void SetAvx2PreferenceForTest(int preference);

// True when q - zero_point fits in int32 for every q of `codec` (the narrow
// kernels' precondition for run.wide = false).
bool NarrowAffineSafe(Codec codec, int64_t zero_point);

// Run::zero_points_f for `codec`: the zero points as float32 when the codec
// has 2- or 4-bit codes and every zero point converts exactly, else empty
// (nothing to gain elsewhere).
std::vector<float> ExactFloatZeroPoints(Codec codec,
                                        const std::vector<int32_t>& zps);

}  // namespace hurray::dequant

#endif  // HURRAY_DEQUANT_KERNELS_H_
