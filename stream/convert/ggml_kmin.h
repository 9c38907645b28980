// ggml's K-quants with a per-sub-block minimum (ggml-common.h block_q4_K
// {fp16 d, dmin; u8 scales[12]; u8 qs[128]}, block_q5_K {… scales[12];
// u8 qh[32]; u8 qs[128]}, block_q2_K {u8 scales[16]; u8 qs[64]; fp16 d,
// dmin}): ggml's value is d1·q − m1 per sub-block (d1 = d·sc, m1 = dmin·m,
// float32, two roundings), which no integer zero point expresses exactly
// when m1 is not a multiple of d1. Issue 48: converted near-losslessly.
//
// Each sub-block (32 elements for Q4_K / Q5_K, 16 for Q2_K) becomes a
// per-block affine block of uint8 codes on a finer step: for a b-bit source
// (b = 4, 5, 2) and k = 8 − b, codes c = 2^k·q, scale d1 / 2^k (exact in
// float32), zero point z = round(2^k·m1 / d1); the value (c − z)·scale is
// d1·q − d1·z / 2^k, within |d1| / 2^(k+1) of d1·q − m1 (1/32 of ggml's
// step for Q4_K) before float32 rounding. A zero point below 0 goes into
// the codes instead (c = 2^k·q − z, z = 0). Codes and zero points are kept
// within uint8 (the strict reader refuses a per-block zero point outside
// the storage range, QNT-PBA-13): where they do not fit, k is lowered one
// step at a time (the bound doubles each step); a sub-block that fits at no
// k ≥ 0 is refused. Exact special cases: d1 = 0 with m1 ≠ 0 (every value
// −m1) is scale m1, zero point 1, codes 0; d1 = 0 with m1 = 0 is scale ±1,
// codes 0, with ggml's signed zero. A NaN or infinite d or dmin is refused.
#ifndef HURRAY_STREAM_CONVERT_GGML_KMIN_H_
#define HURRAY_STREAM_CONVERT_GGML_KMIN_H_

#include <cstdint>
#include <string>

namespace hurray::stream::convert {

enum class KMinType { kQ4_K, kQ5_K, kQ2_K };

uint32_t KMinSourceBytes(KMinType type);  // 144, 176, 84 per 256 elements
uint32_t KMinSubBlock(KMinType type);     // 32, 32, 16
uint32_t KMinSubBlocks(KMinType type);    // 8, 8, 16 per source block

// The compact form (ConvertOptions::kquant_compact): codes at the source's
// own width, c = q (+ a negative zero point moved into them), zero point
// z = round(m1 / d1), scale d1: within |d1| / 2 of ggml's value (half its
// step) before float32 rounding. Q4_K becomes uint4 and Q2_K uint2; Q5_K,
// for which Hurray has no 5-bit type, keeps the default form. A sub-block
// whose zero point or codes leave the storage range is refused.
// Storage bits of a block's codes (8, or 4 / 2 in the compact form), and
// code bytes per source block of 256.
uint32_t KMinCodeBits(KMinType type, bool compact);
inline uint32_t KMinCodeBytes(KMinType type, bool compact) {
  return 256 * KMinCodeBits(type, compact) / 8;
}

// Error of the converted values against ggml's, over the blocks rewritten.
struct KMinError {
  double max_abs = 0, sum_sq = 0;
  uint64_t count = 0;
  // Smallest k used (8 − b when every sub-block took the finest step).
  int min_step_bits = 8;
};

// Where RewriteKMinBlocks writes; any may be null.
struct KMinOutput {
  uint8_t* codes = nullptr;        // KMinCodeBytes per source block
  uint8_t* scales = nullptr;       // float32 little-endian per sub-block
  uint8_t* zero_points = nullptr;  // int32 little-endian per sub-block
  // The zero points again, one byte each (all fit in uint8): 5 bytes per
  // sub-block with `scales`, for a caller that keeps them for later.
  uint8_t* zero_bytes = nullptr;
};

// Rewrites `n` source blocks to `out`. With `error`, adds each value's error
// against ggml's formula. Without codes and error, a sub-block's codes are
// decoded only when its zero point does not fit at the finest step (the
// parameters alone cost a read of the block's header). Returns n, or the
// index of the first block refused, with `why`.
uint64_t RewriteKMinBlocks(KMinType type, bool compact, const uint8_t* in,
                           uint64_t n, const KMinOutput& out, KMinError* error,
                           std::string* why);

// RewriteKMinBlocks with `vector`: AVX2 (with FMA and F16C) where the CPU
// has them (ggml_kmin_avx2.h; what RewriteKMinBlocks uses), otherwise the
// scalar code, which measures each element's error in float64; the AVX2
// code measures it in float32 lanes (max abs within float32 rounding of
// the scalar's, the sum of squares within float32 rounding of each square
// and of sums of at most 32 of them). Codes, scales, zero points, refusals
// and their reasons are the same; tests compare the two.
uint64_t RewriteKMinBlocksPath(bool vector, KMinType type, bool compact,
                               const uint8_t* in, uint64_t n,
                               const KMinOutput& out, KMinError* error,
                               std::string* why);
// Whether RewriteKMinBlocksPath(true, ...) takes the vector path here.
bool KMinHasVectorPath();

// ggml's values of one source block (dequantize_row_q4_K / q5_K / q2_K:
// (d1·q) − m1 in float32, two roundings) to y[0..255]; false with `why` for
// a NaN or infinite d or dmin.
bool GgmlKMinValues(KMinType type, const uint8_t* in, float* y,
                    std::string* why);

}  // namespace hurray::stream::convert

#endif  // HURRAY_STREAM_CONVERT_GGML_KMIN_H_
