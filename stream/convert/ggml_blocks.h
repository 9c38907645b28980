// Lossless rewriting of ggml quantized blocks (ggml-common.h block_q8_0,
// block_q4_0, block_mxfp4) as Hurray codes and scales, so that Hurray's
// dequantization gives ggml's dequantized values bit for bit:
//
//   Q8_0  {fp16 d; int8 qs[32]}  ggml: qs[j]·d          → int8 codes,
//         per-block affine, symmetric, block 32, float16 scale d.
//   Q4_0  {fp16 d; u8 qs[16]}    ggml: (nibble − 8)·d   → int4 codes
//         nibble − 8, same scheme. Element j is the low nibble of qs[j],
//         element j+16 its high nibble; Hurray packs elements 2k, 2k+1 into
//         byte k (element-types.md § 4-bit packing), so nibbles are moved.
//   MXFP4 {u8 e; u8 qs[16]}      ggml: kvalues[nibble]·2^(e−128), kvalues
//         the doubled e2m1 values → float4_e2m1 codes, MXFP block 32, e8m0
//         scale e (x = e2m1(q)·2^(e−127), mxfp.md): the same value.
//
// Two corners (issue 16):
// - Scales of ±0 (ggml writes them for all-zero blocks) are not legal
//   Hurray scales (per-block-affine.md § Validity Constraints; mxfp.md
//   forbids e8m0 0x00 and 0xFF). A zero-scale block decodes to signed
//   zeros in ggml; it becomes scale ±1.0 with all codes 0, whose zeros have
//   the same sign. A block whose ggml zeros have both signs (a scale of ±0
//   with codes of both signs, never written by ggml's quantizer) cannot be
//   expressed and is refused. MXFP4 e = 0x00 (ggml: 2^−128) is kept exactly
//   as e = 0x01 with codes halved when every code is halvable, and refused
//   otherwise; e = 0xFF is kept only for an all-zero block.
// - ggml decodes the MXFP4 nibble 0x8 as +0.0 (kvalues[8] = 0); OCP e2m1
//   and Hurray give −0.0. We keep ggml's value: nibble 0x8 is written as
//   code 0x0, so the converted tensor dequantizes to +0.0 there.
//
// K-quants of 256 elements in 16 sub-blocks of 16 (ggml-common.h
// block_q6_K {u8 ql[128]; u8 qh[64]; i8 scales[16]; fp16 d}, block_q3_K
// {u8 hmask[32]; u8 qs[64]; u8 scales[12]; fp16 d}; issue 48):
//   Q6_K  ggml: (d·sc[j])·(q − 32), q 6-bit      → int8 codes q − 32,
//   Q3_K  ggml: (d·(sc[j] − 32))·q, q in [−4, 3] → int4 codes q,
//         per-block affine, symmetric, block 16, float32 scale d·sc[j]
//         (d·(sc[j] − 32)): at most 11 + 8 significant bits, so the
//         product is exact in float32 and Hurray's scale·code is ggml's
//         one rounding. A sub-block whose scale is ±0 follows the zero-scale
//         ruling above (scale ±1.0, codes 0; refused when its zeros have
//         both signs); a NaN or infinite d is refused.
#ifndef HURRAY_STREAM_CONVERT_GGML_BLOCKS_H_
#define HURRAY_STREAM_CONVERT_GGML_BLOCKS_H_

#include <cstdint>
#include <string>

namespace hurray::stream::convert {

inline constexpr uint32_t kGgmlBlock = 32;
inline constexpr uint32_t kQ8_0Bytes = 34, kQ4_0Bytes = 18, kMxfp4Bytes = 17;

// Each writes the block's codes (32 bytes for Q8_0, 16 for Q4_0 and MXFP4,
// Hurray's packing) and its scale (2 bytes little-endian float16, or 1 byte
// e8m0). On a block that cannot be expressed, returns false with `why`.
bool RewriteQ8_0(const uint8_t* in, uint8_t* codes, uint8_t* scale,
                 std::string* why);
bool RewriteQ4_0(const uint8_t* in, uint8_t* codes, uint8_t* scale,
                 std::string* why);
bool RewriteMxfp4(const uint8_t* in, uint8_t* codes, uint8_t* scale,
                  std::string* why);

// The scale alone, when it is the source's own (a finite non-zero float16,
// an e8m0 byte in 1..254): true and `scale` set; false when the block must
// go through its Rewrite function.
bool PlainScale(const uint8_t* in, bool e8m0, uint8_t* scale);

inline constexpr uint32_t kQK = 256, kKSubBlock = 16;
inline constexpr uint32_t kQ6_KBytes = 210, kQ3_KBytes = 110;

// One source block of 256 (kQ6_KBytes / kQ3_KBytes) to 256 int8 codes
// (Q6_K) or 128 bytes of int4 codes (Q3_K) and 16 float32 scales (64 bytes
// little-endian).
bool RewriteQ6_K(const uint8_t* in, uint8_t* codes, uint8_t* scales,
                 std::string* why);
bool RewriteQ3_K(const uint8_t* in, uint8_t* codes, uint8_t* scales,
                 std::string* why);

enum class GgmlBlockType { kQ8_0, kQ4_0, kMxfp4, kQ6_K, kQ3_K };

// Elements of one source block (32, or 256 for the K-quants), and of one
// Hurray block (32, or 16: a K-quant sub-block).
uint32_t SourceBlockElements(GgmlBlockType type);
uint32_t HurrayBlockElements(GgmlBlockType type);

// Bytes of one source block, and of its Hurray codes and scales (all the
// scales of the source block: 64 for a K-quant).
uint32_t SourceBlockBytes(GgmlBlockType type);
uint32_t CodeBytes(GgmlBlockType type);
uint32_t ScaleBytes(GgmlBlockType type);

// Rewrites `n` consecutive source blocks at `in` (n × SourceBlockBytes):
// their codes to `codes` (n × CodeBytes) and their scales to `scales`
// (n × ScaleBytes); either may be null when that part is not wanted. The
// same bytes as the per-block functions above, a block at a time, with
// Q8_0's common case (a finite non-zero scale: the block is kept as it is)
// inlined. Returns n, or the index of the first block that cannot be
// expressed, with `why`.
uint64_t RewriteBlocks(GgmlBlockType type, const uint8_t* in, uint64_t n,
                       uint8_t* codes, uint8_t* scales, std::string* why);

// RewriteBlocks for Q6_K: with `vector`, AVX2 and F16C where the CPU has them
// (what RewriteBlocks uses), otherwise the scalar RewriteQ6_K a block at a
// time. Both write the same bytes; tests compare them.
uint64_t RewriteQ6_KBlocks(bool vector, const uint8_t* in, uint64_t n,
                           uint8_t* codes, uint8_t* scales, std::string* why);
// Whether RewriteQ6_KBlocks(true, ...) takes a vector path on this CPU.
bool Q6_KHasVectorPath();

}  // namespace hurray::stream::convert

#endif  // HURRAY_STREAM_CONVERT_GGML_BLOCKS_H_
