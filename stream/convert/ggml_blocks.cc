#include "stream/convert/ggml_blocks.h"

#include <cstring>

namespace hurray::convert {
namespace {

constexpr uint16_t kF16One = 0x3C00, kF16MinusOne = 0xBC00;

bool FiniteNonZeroF16(uint16_t d) {
  return (d & 0x7C00) != 0x7C00 && (d & 0x7FFF) != 0;
}

void PutF16(uint16_t bits, uint8_t* out) {
  out[0] = static_cast<uint8_t>(bits);
  out[1] = static_cast<uint8_t>(bits >> 8);
}

// Checks a float16 scale. For ±0, decides the sign all of the block's
// zeros share (`negative[j]`: ggml's value j is −0) and sets `zero_scale`.
bool CheckF16Scale(uint16_t d, const bool* negative, uint8_t* scale,
                   bool* zero_scale, std::string* why) {
  if ((d & 0x7C00) == 0x7C00) {
    *why = "the float16 scale is infinite or NaN";
    return false;
  }
  *zero_scale = (d & 0x7FFF) == 0;
  if (!*zero_scale) {
    PutF16(d, scale);
    return true;
  }
  for (uint32_t j = 1; j < kGgmlBlock; ++j) {
    if (negative[j] != negative[0]) {
      *why =
          "the scale is 0 and the codes have both signs: ggml gives +0 and "
          "-0 in one block, which no Hurray scale can express";
      return false;
    }
  }
  PutF16(negative[0] ? kF16MinusOne : kF16One, scale);
  return true;
}

// OCP e2m1 magnitudes ×2 by 3-bit code: 0, 0.5, 1, 1.5, 2, 3, 4, 6.
// kHalf[m]: the code of half the magnitude, or -1 when not an e2m1 value.
constexpr int kHalf[8] = {0, -1, 1, -1, 2, 3, 4, 5};

}  // namespace

bool RewriteQ8_0(const uint8_t* in, uint8_t* codes, uint8_t* scale,
                 std::string* why) {
  const uint16_t d = static_cast<uint16_t>(in[0] | (in[1] << 8));
  if (FiniteNonZeroF16(d)) {  // the common case: kept as it is
    PutF16(d, scale);
    std::memcpy(codes, in + 2, kGgmlBlock);
    return true;
  }
  const bool d_negative = (d & 0x8000) != 0;
  bool negative[kGgmlBlock];
  for (uint32_t j = 0; j < kGgmlBlock; ++j) {
    // ggml: float(qs[j]) · d; a zero product is negative when exactly one
    // factor is (float(0) is +0).
    negative[j] = d_negative != (static_cast<int8_t>(in[2 + j]) < 0);
  }
  bool zero_scale = false;
  if (!CheckF16Scale(d, negative, scale, &zero_scale, why)) return false;
  if (zero_scale) {
    std::memset(codes, 0, kGgmlBlock);
  } else {
    std::memcpy(codes, in + 2, kGgmlBlock);
  }
  return true;
}

bool RewriteQ4_0(const uint8_t* in, uint8_t* codes, uint8_t* scale,
                 std::string* why) {
  const uint16_t d = static_cast<uint16_t>(in[0] | (in[1] << 8));
  const bool d_negative = (d & 0x8000) != 0;
  const uint8_t* qs = in + 2;
  uint8_t nib[kGgmlBlock];
  bool negative[kGgmlBlock];
  for (uint32_t j = 0; j < 16; ++j) {
    nib[j] = qs[j] & 0x0F;
    nib[j + 16] = qs[j] >> 4;
  }
  for (uint32_t j = 0; j < kGgmlBlock; ++j)
    negative[j] = d_negative != (nib[j] < 8);
  bool zero_scale = false;
  if (!CheckF16Scale(d, negative, scale, &zero_scale, why)) return false;
  for (uint32_t k = 0; k < 16; ++k) {
    if (zero_scale) {
      codes[k] = 0;
      continue;
    }
    // int4 two's complement of nibble − 8 is nibble ^ 8.
    const uint8_t lo = nib[2 * k] ^ 8, hi = nib[2 * k + 1] ^ 8;
    codes[k] = static_cast<uint8_t>(lo | (hi << 4));
  }
  return true;
}

bool RewriteMxfp4(const uint8_t* in, uint8_t* codes, uint8_t* scale,
                  std::string* why) {
  uint8_t e = in[0];
  const uint8_t* qs = in + 1;
  uint8_t nib[kGgmlBlock];
  bool all_zero = true;
  for (uint32_t j = 0; j < 16; ++j) {
    nib[j] = qs[j] & 0x0F;
    nib[j + 16] = qs[j] >> 4;
  }
  for (uint32_t j = 0; j < kGgmlBlock; ++j) {
    // ggml's +0 for nibble 0x8 (kvalues[8] = 0) is Hurray's code 0x0.
    if (nib[j] == 0x8) nib[j] = 0;
    all_zero = all_zero && nib[j] == 0;
  }
  if (all_zero) {
    e = (e == 0x00 || e == 0xFF) ? 127 : e;
  } else if (e == 0x00) {
    // 2^−128 · 2·e2m1(q) = 2^(1−127) · e2m1(q)/2.
    for (uint32_t j = 0; j < kGgmlBlock; ++j) {
      const int half = kHalf[nib[j] & 7];
      if (half < 0) {
        *why =
            "the e8m0 scale is 0x00 (ggml: 2^-128) and a code is not twice "
            "an e2m1 value: not expressible with Hurray's scales";
        return false;
      }
      nib[j] = static_cast<uint8_t>((nib[j] & 8) | half);
      if (nib[j] == 0x8) nib[j] = 0;
    }
    e = 0x01;
  } else if (e == 0xFF) {
    *why = "the e8m0 scale is 0xFF, reserved in Hurray (mxfp.md)";
    return false;
  }
  for (uint32_t k = 0; k < 16; ++k)
    codes[k] = static_cast<uint8_t>(nib[2 * k] | (nib[2 * k + 1] << 4));
  *scale = e;
  return true;
}

bool PlainScale(const uint8_t* in, bool e8m0, uint8_t* scale) {
  if (e8m0) {
    if (in[0] == 0x00 || in[0] == 0xFF) return false;
    *scale = in[0];
    return true;
  }
  const uint16_t d = static_cast<uint16_t>(in[0] | (in[1] << 8));
  if (!FiniteNonZeroF16(d)) return false;
  PutF16(d, scale);
  return true;
}

uint32_t SourceBlockBytes(GgmlBlockType type) {
  return type == GgmlBlockType::kQ8_0   ? kQ8_0Bytes
         : type == GgmlBlockType::kQ4_0 ? kQ4_0Bytes
                                        : kMxfp4Bytes;
}
uint32_t CodeBytes(GgmlBlockType type) {
  return type == GgmlBlockType::kQ8_0 ? kGgmlBlock : kGgmlBlock / 2;
}
uint32_t ScaleBytes(GgmlBlockType type) {
  return type == GgmlBlockType::kMxfp4 ? 1 : 2;
}

uint64_t RewriteBlocks(GgmlBlockType type, const uint8_t* in, uint64_t n,
                       uint8_t* codes, uint8_t* scales, std::string* why) {
  uint8_t scratch_codes[kGgmlBlock], scratch_scale[2];
  if (type == GgmlBlockType::kQ8_0 && codes != nullptr) {
    // Converting a Q8_0 model is mostly this loop: 32 code bytes and the
    // scale moved as they are.
    for (uint64_t i = 0; i < n; ++i) {
      const uint8_t* b = in + i * kQ8_0Bytes;
      uint8_t* c = codes + i * kGgmlBlock;
      uint8_t* sc = scales != nullptr ? scales + i * 2 : scratch_scale;
      const uint16_t d = static_cast<uint16_t>(b[0] | (b[1] << 8));
      if (FiniteNonZeroF16(d)) [[likely]] {
        std::memcpy(c, b + 2, kGgmlBlock);
        std::memcpy(sc, b, 2);
      } else if (!RewriteQ8_0(b, c, sc, why)) {
        return i;
      }
    }
    return n;
  }
  const uint32_t in_bytes = SourceBlockBytes(type);
  const uint32_t code_bytes = CodeBytes(type);
  const uint32_t scale_bytes = ScaleBytes(type);
  for (uint64_t i = 0; i < n; ++i) {
    const uint8_t* b = in + i * in_bytes;
    uint8_t* sc = scales != nullptr ? scales + i * scale_bytes : scratch_scale;
    // Scales alone: the codes are rewritten only where the scale is not
    // the source's own.
    if (codes == nullptr && PlainScale(b, type == GgmlBlockType::kMxfp4, sc))
      continue;
    uint8_t* c = codes != nullptr ? codes + i * code_bytes : scratch_codes;
    const bool ok = type == GgmlBlockType::kQ8_0 ? RewriteQ8_0(b, c, sc, why)
                    : type == GgmlBlockType::kQ4_0
                        ? RewriteQ4_0(b, c, sc, why)
                        : RewriteMxfp4(b, c, sc, why);
    if (!ok) return i;
  }
  return n;
}

}  // namespace hurray::convert
