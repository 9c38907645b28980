// Import of QNN per-axis quantization (Qnn_BwAxisScaleOffsetMapped_t: a
// bitwidth, an axis, scales, offsets and a value mapping, with the values
// unpacked in wider integer containers) into a Hurray per-channel affine
// tensor: descriptor and buffers.
//
// Conventions (docs/design.md § Zero-point convention, RESOLUTIONS.md 11):
// QNN adds its offset, x = scale · (q + offset); Hurray subtracts its zero
// point, x = scale · (q − zero_point). The import stores zero_point = −offset
// and refuses offsets whose negation leaves the storage type's range.
//
// Values: only the low `bitwidth` bits of each container are meaningful
// (the rest are ignored); signed containers are sign-extended from bit
// bitwidth−1. The narrowest Hurray storage type that holds a `bitwidth`-bit
// value is chosen (2, 4, 8, 16 or 32 bits, packed LSB-first with zero
// padding). The LINEAR_SYMMETRIC_EXCLUDE_ZERO mapping (q ↦ q + 0.5) becomes
// codes 2q + 1 with scale / 2, in one more bit of storage.
#ifndef HURRAY_DEQUANT_QNN_IMPORT_H_
#define HURRAY_DEQUANT_QNN_IMPORT_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "parser/descriptor.h"

namespace hurray::qnn {

enum class Mapping : uint8_t {
  kLinear,                      // q
  kLinearSymmetricExcludeZero,  // q + 0.5 (signed values, no offsets)
};

// The integer container the QNN values are stored in, little-endian.
struct Container {
  uint8_t bits;  // 8, 16 or 32
  bool is_signed;
};

struct PerAxisEncoding {
  uint32_t bitwidth = 0;  // 1 … container bits
  int32_t axis = 0;
  Mapping mapping = Mapping::kLinear;
  std::vector<float> scales;     // one per slice along axis, > 0
  std::vector<int32_t> offsets;  // same count, or empty for symmetric
};

struct ImportedTensor {
  std::unique_ptr<TensorDescriptor> descriptor;  // per-channel affine
  std::vector<uint8_t> data;         // buffer 0: packed storage values
  std::vector<uint8_t> scales;       // buffer 1: float32 little-endian
  std::vector<uint8_t> zero_points;  // buffer 2: int32 LE; empty if symmetric
};

// Converts `values` (row-major, one container per element) with their QNN
// encoding. Errors (InvalidArgument, naming the offending field): bitwidth
// 0 or wider than the container, axis outside the shape, a dynamic or
// mismatched channel count, a scale that is not finite and positive, an
// offset whose negation does not fit the storage type, offsets with the
// exclude-zero mapping, an unsigned container with that mapping, or a value
// buffer whose size is not element count × container bytes.
[[nodiscard]] absl::StatusOr<ImportedTensor> ImportPerAxis(
    const PerAxisEncoding& encoding, absl::Span<const uint64_t> shape,
    Container container, absl::Span<const uint8_t> values);

}  // namespace hurray::qnn

#endif  // HURRAY_DEQUANT_QNN_IMPORT_H_
