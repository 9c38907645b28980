// The parameter buffers of a quantized tensor: locating them in the buffer
// table, reading them to float32 scales and int32 zero points, and the
// data-level rules on their values.
//
// Offsets of data-level rejections are indices into the named buffer, in its
// entries (not bytes): QNT-PCA-10 / QNT-PCA-11 give the channel index into
// the scale / zero-point buffer, QNT-PBA-12 / QNT-PBA-13 / QNT-NF4-07 /
// QNT-MX-07 the block index. hurray::ToStatus still words it "at byte N".
#ifndef HURRAY_DEQUANT_PARAMS_H_
#define HURRAY_DEQUANT_PARAMS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "dequant/plan.h"
#include "parser/descriptor.h"
#include "parser/rules.h"

namespace hurray::dequant {

// Bytes of the scale buffer and (asymmetric affine only) the zero-point
// buffer, exactly as the descriptor sizes them. Empty for per-tensor affine.
struct ParameterBytes {
  absl::Span<const uint8_t> scales;
  absl::Span<const uint8_t> zero_points;
};

// Picks the parameter buffers out of `buffers`, the bytes of every buffer of
// d's buffer table by index (entry 0, the data, is not read). A shared
// buffer (equal indices, RESOLUTIONS.md 9) is split into [scales |
// zero_points].
[[nodiscard]] absl::StatusOr<ParameterBytes> ParametersFromBuffers(
    const TensorDescriptor& d,
    absl::Span<const absl::Span<const uint8_t>> buffers);

// Scales widened to float32 (e8m0 bytes to 2^(e-127)) and zero points, in
// buffer order. zero_points is empty when the scheme is symmetric.
struct Params {
  std::vector<float> scales;
  std::vector<int32_t> zero_points;
};

// Reads and checks the parameters: InvalidArgument without a rule when a
// buffer does not have the size the plan needs, otherwise the first
// data-level rejection (every scale in order, then every zero point), via
// hurray::ToStatus. QNT-PBA-13 applies in strict mode only.
[[nodiscard]] absl::StatusOr<Params> LoadParams(const Plan& plan,
                                                const ParameterBytes& bytes,
                                                Mode mode);

}  // namespace hurray::dequant

#endif  // HURRAY_DEQUANT_PARAMS_H_
