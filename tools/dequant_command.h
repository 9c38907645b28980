// `hurray dequant [--json] [--permissive] [--agree KIND=VALUE]... FILE -o OUT`
//
// FILE holds one tensor in the streaming format (its descriptor, then its
// buffers back to back). OUT receives the tensor dequantized to
// little-endian float32 in logical row-major order, written as the data
// buffer is read (the parameter buffers are read first). Exit 0 on success,
// 1 with the rule id when the input is invalid, 2 on usage or I/O errors or
// when the tensor cannot be dequantized by this build (not quantized, or a
// layout the dequantizer does not address yet).
//
// A layout other than row-major (column-major, strided, tiled, Morton,
// Hilbert) is read back in logical row-major order from its whole data
// buffer (stream/ingest/output/row_major_gather.h) and dequantized as the
// same tensor stored row-major, as `hurray ingest --dequant` does: the
// buffer is held in memory up to DequantLimits::data_memory_bytes, else
// copied to a hidden temp of OUT's directory
// (stream/container/safe_output_dir.h), read back through a block cache of
// DequantLimits::gather_cache_bytes (never mapped), and removed at the end.
// Memory stays bounded whatever the tensor's size; --json says how many bytes
// went to the temp ("spooled_bytes").
#ifndef HURRAY_TOOLS_DEQUANT_COMMAND_H_
#define HURRAY_TOOLS_DEQUANT_COMMAND_H_

#include <cstdint>
#include <ostream>
#include <string>

#include "absl/types/span.h"

namespace hurray::tools {

struct DequantLimits {
  // A non-row-major tensor's data buffer is held in memory up to this size,
  // else spooled to a temp file (tests lower it).
  uint64_t data_memory_bytes = uint64_t{24} << 20;
  // The temp is read back through a block cache of this size.
  size_t gather_cache_bytes = size_t{24} << 20;
};

int RunDequant(absl::Span<const std::string> args, std::ostream& out,
               std::ostream& err, const DequantLimits& limits = {});

}  // namespace hurray::tools

#endif  // HURRAY_TOOLS_DEQUANT_COMMAND_H_
