// Quantizers: float32 values to the codes and parameters of Hurray's
// schemes (quantization/*.md), round to nearest, deterministic (no
// randomness, no dependence on the floating-point environment beyond the
// default round-to-nearest-even). Used by `hurray convert --quantize`.
// Each dequantization helper here follows the spec formula, so the error a
// caller measures with it is the error a reader sees.
//
//   affine (per-tensor, per-channel, per-block): for values in [lo, hi] and
//     storage range [qmin, qmax]:
//       symmetric:  scale = max(|lo|, |hi|) / qmax, zero_point 0 (codes
//                   clamped to [-qmax, qmax])
//       asymmetric: scale = (max(hi, 0) - min(lo, 0)) / (qmax - qmin),
//                   zero_point = clamp(round(qmin - min(lo, 0) / scale))
//     a range of zeros gets scale 1 (scales must be non-zero);
//     q = clamp(round(x / scale) + zero_point), x' = float(q - zp) · scale.
//   NF4: absmax of the block, q = the nearest level of x / absmax (nf4.md),
//     x' = lut[q] · absmax.
//   MXFP: shared exponent E = floor(log2(absmax)) − emax(element type)
//     (OCP MX v1.0 § 6.3), e8m0 byte E + 127 clamped to [1, 254] (127 for
//     an all-zero block), q = the nearest finite element code of x / 2^E,
//     saturating at the largest magnitude; x' = value(q) · 2^E.
#ifndef HURRAY_DEQUANT_QUANTIZE_H_
#define HURRAY_DEQUANT_QUANTIZE_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"

namespace hurray::dequant {

struct AffineParams {
  float scale = 1.0f;
  int32_t zero_point = 0;
};

AffineParams ChooseAffine(float lo, float hi, int64_t qmin, int64_t qmax,
                          bool symmetric);
int64_t QuantizeAffine(float x, const AffineParams& p, int64_t qmin,
                       int64_t qmax);
inline float DequantizeAffine(int64_t q, const AffineParams& p) {
  return static_cast<float>(q - p.zero_point) * p.scale;
}

// NF4: the code of the level nearest to `normalized` (ties: lower code).
uint8_t QuantizeNf4(float normalized);

// The finite codes of a float element type (float4_e2m1, float8_e4m3,
// float8_e5m2, float6_e2m3, float6_e3m2) for nearest-code rounding.
class MinifloatQuantizer {
 public:
  // False for a type without a minifloat decoder.
  bool Init(uint8_t type_tag);
  // The nearest finite code (ties: the smaller magnitude, then +),
  // saturating beyond the largest magnitude. NaN gives code 0 (callers
  // refuse non-finite inputs first).
  uint8_t Quantize(float x) const;
  float Value(uint8_t code) const { return values_[code]; }
  // floor(log2(largest finite magnitude)).
  int emax() const { return emax_; }

 private:
  std::vector<float> values_;                      // by code
  std::vector<std::pair<float, uint8_t>> sorted_;  // finite, by value
  int emax_ = 0;
};

// MXFP shared-scale byte for a block's absolute maximum.
uint8_t MxfpScaleByte(float absmax, int element_emax);
// 2^(byte − 127) as float32 (byte in 1..254).
float MxfpScale(uint8_t byte);

}  // namespace hurray::dequant

#endif  // HURRAY_DEQUANT_QUANTIZE_H_
