// The scalar reference dequantizer: every logical element on its own, from
// the spec's formulas, with no folding, tiling or SIMD. It is the yardstick
// the streaming Dequantizer (dequant/dequantizer.h) is tested against, bit
// for bit, and is meant to be read next to the spec:
//
//   position [i_0 .. i_{r-1}] in row-major order → its bit offset in the
//   data buffer by the layout's ElementAddresser (parser/addressing.h) over
//   the stored grid (shape[axis] rounded up to a multiple of block_size for
//   per-block affine and NF4, RESOLUTIONS.md 2), for every dense layout →
//   code q from the little-endian bit stream (element-types.md) →
//     affine:  float32(int64(q) - zero_point) · scale   (RESOLUTIONS.md 1)
//     NF4:     kNf4Lut[q] · absmax                       (nf4.md)
//     MXFP:    value(q) · 2^(e - 127)                    (mxfp.md; int8 and
//              int4 storage use their integer value)
//   with per-channel parameter i_axis and block index
//   b = outer · ceil(S / K) + i_axis / K (RESOLUTIONS.md 3). Results keep
//   their sign, zeros included (RESOLUTIONS.md 5); NaN codes give NaN.
#ifndef HURRAY_DEQUANT_SCALAR_H_
#define HURRAY_DEQUANT_SCALAR_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "dequant/options.h"
#include "dequant/params.h"
#include "parser/descriptor.h"

namespace hurray::dequant {

// Same contract as DequantizeAll (dequant/dequantizer.h): `data` is the whole
// data buffer; the same rejections and warnings.
[[nodiscard]] absl::Status ReferenceDequantize(
    const TensorDescriptor& d, absl::Span<const uint8_t> data,
    const ParameterBytes& params, std::vector<float>* out,
    const DequantOptions& options = DequantOptions(),
    DequantWarnings* warnings = nullptr);

}  // namespace hurray::dequant

#endif  // HURRAY_DEQUANT_SCALAR_H_
