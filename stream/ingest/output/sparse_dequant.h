// The stored values of a quantized sparse tensor (COO, CSR, CSC, CSF)
// dequantized one by one at their logical positions, for writing it dense.
//
// The layouts put the quantized leaf values in buffer 0 and the parameter
// buffers after the index buffers (layouts/csf.md § Quantization
// Compatibility: "compose as for COO/CSR"); the parameters are sized and
// indexed by the logical shape as for a dense tensor (quantization.md,
// RESOLUTIONS.md 3): per-channel parameter i_axis, block
// b = outer · ceil(S / K) + i_axis / K with `outer` the row-major index over
// the non-axis dimensions. The formulas are those of dequant/scalar.h:
// affine float32(q − zero_point) · scale, NF4 lut[q] · absmax, MXFP
// value(q) · 2^(e − 127).
#ifndef HURRAY_STREAM_INGEST_OUTPUT_SPARSE_DEQUANT_H_
#define HURRAY_STREAM_INGEST_OUTPUT_SPARSE_DEQUANT_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "dequant/codec.h"
#include "dequant/minifloat.h"
#include "dequant/params.h"
#include "dequant/plan.h"
#include "parser/descriptor.h"
#include "parser/options.h"

namespace hurray::stream::ingest {

class SparseDequantizer {
 public:
  // `d`: a quantized sparse descriptor; `params`: its parameter bytes.
  // The parameters' data-level rules (QNT-PCA-10/11, QNT-PBA-12/13,
  // QNT-NF4-07, QNT-MX-07) as the dense dequantizer checks them;
  // Unimplemented for a scheme this reader does not interpret.
  [[nodiscard]] static absl::StatusOr<SparseDequantizer> Create(
      const TensorDescriptor& d, const dequant::ParameterBytes& params,
      Mode mode);

  // The value of stored element `value` of the values buffer `codes`, at
  // logical row-major position `position`. `value` < nnz and `position` <
  // the element count (the sparse walk checks both).
  float Value(absl::Span<const uint8_t> codes, uint64_t value,
              uint64_t position) const;

 private:
  dequant::Plan plan_;
  dequant::Params params_;
  dequant::MinifloatDecoder minifloat_ = nullptr;
  uint32_t bits_ = 8;
  bool signed_ = false;
};

}  // namespace hurray::stream::ingest

#endif  // HURRAY_STREAM_INGEST_OUTPUT_SPARSE_DEQUANT_H_
