// The validator: every descriptor-level reject rule that is not a framing
// rule (parser/decoder.h), applied to a decoded TensorDescriptor in wire
// order, so the first violation in the byte stream is the one reported.
//
// Each rule is checked in exactly one place. Strict-only rules are skipped in
// permissive mode (REJECT-RULES.md §1). Size checks are skipped, not failed,
// when a dimension they need is the dynamic sentinel, and every product and
// sum is overflow-checked (an overflow is a rejection of the rule whose size
// it is).
#ifndef HURRAY_PARSER_VALIDATOR_H_
#define HURRAY_PARSER_VALIDATOR_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "parser/descriptor.h"
#include "parser/options.h"
#include "parser/quantization.h"
#include "parser/rules.h"

namespace hurray {

// Validates a descriptor as decoded (its `offsets` locate the fields).
Rejection ValidateDescriptor(const TensorDescriptor& d,
                             const ParseOptions& options);

// Validates a descriptor built in memory: computes the offsets the encoder
// would use, then validates.
[[nodiscard]] absl::Status Validate(
    const TensorDescriptor& d, const ParseOptions& options = ParseOptions());

// Number of buffers a layout uses for itself, before quantization
// parameters (REJECT-RULES.md §2.4): dense and extension 1, COO 2, CSR/CSC
// and block-paged 3, CSF 2·rank+1, composite head 0.
uint32_t LayoutBufferCount(uint8_t layout_tag, uint32_t rank);

// Number of distinct buffers a quantization descriptor names (BUF-03):
// per-tensor 0; per-channel/per-block 1 when symmetric or when both indices
// are equal, else 2; NF4/MXFP 1.
uint32_t ParameterBufferCount(const QuantizationDescriptor& q);

// Placement of the parameter buffers a quantization descriptor names
// (quantization.md § Buffer Table Placement Rules): every index names a
// buffer, none aliases the data buffer or (strict) another layout buffer,
// and each sits on the data buffer's device and memory class. Offsets are
// relative to the quantization descriptor's first byte. The descriptor
// validator runs this same check on every quantized descriptor it reads.
[[nodiscard]] absl::Status ValidateBufferPlacement(
    const QuantizationDescriptor& q, absl::Span<const BufferHandle> buffers,
    uint32_t layout_buffer_count = 1, Mode mode = Mode::kStrict);
Rejection CheckBufferPlacement(const QuantizationDescriptor& q,
                               absl::Span<const BufferHandle> buffers,
                               uint32_t layout_buffer_count, uint64_t base,
                               Mode mode);

}  // namespace hurray

#endif  // HURRAY_PARSER_VALIDATOR_H_
