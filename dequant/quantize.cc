#include "dequant/quantize.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "dequant/minifloat.h"
#include "parser/element_type.h"
#include "parser/quantization.h"

namespace hurray::dequant {

AffineParams ChooseAffine(float lo, float hi, int64_t qmin, int64_t qmax,
                          bool symmetric) {
  AffineParams p;
  if (symmetric) {
    const float m = std::max(std::fabs(lo), std::fabs(hi));
    const float s = m / static_cast<float>(qmax);
    if (s > 0 && std::isfinite(s)) p.scale = s;
    return p;
  }
  lo = std::min(lo, 0.0f);
  hi = std::max(hi, 0.0f);
  const float s = (hi - lo) / static_cast<float>(qmax - qmin);
  if (!(s > 0) || !std::isfinite(s)) return p;
  p.scale = s;
  const double zp = std::nearbyint(static_cast<double>(qmin) - lo / s);
  p.zero_point = static_cast<int32_t>(std::clamp<double>(
      zp, static_cast<double>(qmin), static_cast<double>(qmax)));
  return p;
}

int64_t QuantizeAffine(float x, const AffineParams& p, int64_t qmin,
                       int64_t qmax) {
  const double q =
      std::nearbyint(static_cast<double>(x) / p.scale) + p.zero_point;
  if (!(q >= static_cast<double>(qmin))) return qmin;  // NaN too
  if (q > static_cast<double>(qmax)) return qmax;
  return static_cast<int64_t>(q);
}

uint8_t QuantizeNf4(float normalized) {
  uint8_t best = 7;  // 0.0
  float best_err = std::numeric_limits<float>::infinity();
  for (uint8_t c = 0; c < 16; ++c) {
    const float err = std::fabs(kNf4Lut[c] - normalized);
    if (err < best_err) best = c, best_err = err;
  }
  return best;
}

bool MinifloatQuantizer::Init(uint8_t type_tag) {
  const MinifloatDecoder decode = MinifloatDecoderFor(type_tag);
  const ElementTypeInfo* info = FindElementType(type_tag);
  if (decode == nullptr || info == nullptr || !info->is_float) return false;
  const int codes = 1 << std::min<int>(info->bits, 8);
  values_.resize(codes);
  sorted_.clear();
  float max = 0;
  for (int c = 0; c < codes; ++c) {
    values_[c] = decode(static_cast<uint8_t>(c));
    if (!std::isfinite(values_[c])) continue;
    // One entry per value: +0 over −0, the first code otherwise.
    if (values_[c] == 0 && std::signbit(values_[c])) continue;
    sorted_.emplace_back(values_[c], static_cast<uint8_t>(c));
    max = std::max(max, std::fabs(values_[c]));
  }
  std::sort(sorted_.begin(), sorted_.end());
  sorted_.erase(std::unique(sorted_.begin(), sorted_.end(),
                            [](const auto& a, const auto& b) {
                              return a.first == b.first;
                            }),
                sorted_.end());
  int exp = 0;
  std::frexp(max, &exp);  // max = m · 2^exp, m in [0.5, 1)
  emax_ = exp - 1;
  return !sorted_.empty();
}

uint8_t MinifloatQuantizer::Quantize(float x) const {
  if (std::isnan(x)) return 0;
  auto it = std::lower_bound(
      sorted_.begin(), sorted_.end(), x,
      [](const std::pair<float, uint8_t>& e, float v) { return e.first < v; });
  if (it == sorted_.end()) return sorted_.back().second;
  if (it == sorted_.begin()) return it->second;
  const auto below = it - 1;
  const float up = it->first - x, down = x - below->first;
  if (up < down) return it->second;
  if (down < up) return below->second;
  // A tie: the smaller magnitude.
  return std::fabs(it->first) < std::fabs(below->first) ? it->second
                                                        : below->second;
}

uint8_t MxfpScaleByte(float absmax, int element_emax) {
  if (!(absmax > 0) || !std::isfinite(absmax)) return 127;
  int exp = 0;
  std::frexp(absmax, &exp);
  const int e = (exp - 1) - element_emax;
  return static_cast<uint8_t>(std::clamp(e + 127, 1, 254));
}

float MxfpScale(uint8_t byte) {
  return std::ldexp(1.0f, static_cast<int>(byte) - 127);
}

}  // namespace hurray::dequant
