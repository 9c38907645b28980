// `hurray dequant [--json] [--permissive] [--agree KIND=VALUE]... FILE -o OUT
//                 [--format npy|safetensors|f32] [--dtype T]`
//
// FILE holds one tensor in the streaming format (its descriptor, then its
// buffers back to back). OUT receives the tensor dequantized (a .npy file
// unless --format says otherwise, float32 unless --dtype says otherwise) in
// logical row-major order, written as the data buffer is read (the
// parameter buffers are read first; tools/dequant_file.h). Exit 0 on
// success, 1 with the rule id when the input is invalid, 2 on usage or I/O
// errors or when the tensor cannot be dequantized by this build (not
// quantized).
//
// A layout other than row-major (column-major, strided, tiled, Morton,
// Hilbert) is read back in logical row-major order from its whole data
// buffer and dequantized as the same tensor stored row-major, as
// `hurray ingest --dequant` does, in memory bounded by DequantLimits
// whatever the tensor's size; --json says how many bytes went to a temp
// file ("spooled_bytes").
//
// The options are parsed by the table parser (tools/arg_parser.h).
#ifndef HURRAY_TOOLS_DEQUANT_COMMAND_H_
#define HURRAY_TOOLS_DEQUANT_COMMAND_H_

#include <ostream>
#include <string>

#include "absl/types/span.h"
#include "tools/dequant_file.h"  // DequantLimits

namespace hurray::tools {

int RunDequant(absl::Span<const std::string> args, std::ostream& out,
               std::ostream& err, const DequantLimits& limits = {});

}  // namespace hurray::tools

#endif  // HURRAY_TOOLS_DEQUANT_COMMAND_H_
