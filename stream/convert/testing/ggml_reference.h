// ggml's own scalar conversions, written out for the tests that compute
// reference values from the block layouts of ggml-common.h (issue 48).
#ifndef HURRAY_STREAM_CONVERT_TESTING_GGML_REFERENCE_H_
#define HURRAY_STREAM_CONVERT_TESTING_GGML_REFERENCE_H_

#include <cmath>
#include <cstdint>

namespace hurray::stream::convert::testing {

// IEEE half → float, as ggml_compute_fp16_to_fp32 (exact: every half is a
// float).
inline float HalfToFloat(uint16_t h) {
  const int sign = h >> 15, exp = (h >> 10) & 0x1F, mant = h & 0x3FF;
  float v;
  if (exp == 0) {
    v = std::ldexp(static_cast<float>(mant), -24);
  } else if (exp == 31) {
    v = mant ? NAN : INFINITY;
  } else {
    v = std::ldexp(static_cast<float>(mant | 0x400), exp - 25);
  }
  return sign ? -v : v;
}

// The little-endian half at `p`, as a float.
inline float HalfAt(const uint8_t* p) {
  return HalfToFloat(static_cast<uint16_t>(p[0] | p[1] << 8));
}

}  // namespace hurray::stream::convert::testing

#endif  // HURRAY_STREAM_CONVERT_TESTING_GGML_REFERENCE_H_
