// Encoder: writes a TensorDescriptor exactly as the wire format lays it out
// (metadata.md). It encodes what it is given, valid or not, so tests can
// build vectors broken in one field; validate first when that matters.
#ifndef HURRAY_PARSER_ENCODER_H_
#define HURRAY_PARSER_ENCODER_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "parser/descriptor.h"

namespace hurray {

// Offsets of every part and the total length (descriptor_length) the encoder
// will produce: the natural length plus trailing_length. Fails for counts the
// fixed storage cannot hold (rank > 64, tiled depth 0 or > 8) or an unparsed
// layout.
[[nodiscard]] absl::StatusOr<PartOffsets> ComputeOffsets(
    const TensorDescriptor& d);

// Writes the descriptor into `out` and returns its length. The
// descriptor_length field is the computed length (d.descriptor_length is
// ignored). Extension-layout data comes from `extension_data` (zeros when it
// is empty); quantization padding and trailing bytes are zeros. No
// allocation.
[[nodiscard]] absl::StatusOr<size_t> EncodeInto(
    const TensorDescriptor& d, absl::Span<uint8_t> out,
    absl::Span<const uint8_t> extension_data = {});

[[nodiscard]] absl::StatusOr<std::vector<uint8_t>> Encode(
    const TensorDescriptor& d, absl::Span<const uint8_t> extension_data = {});

}  // namespace hurray

#endif  // HURRAY_PARSER_ENCODER_H_
