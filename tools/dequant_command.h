// `hurray dequant [--json] [--permissive] [--agree KIND=VALUE]... FILE -o OUT`
//
// FILE holds one tensor in the streaming format (its descriptor, then its
// buffers back to back). OUT receives the tensor dequantized to
// little-endian float32 in logical row-major order, written as the data
// buffer is read (the parameter buffers are read first). Exit 0 on success,
// 1 with the rule id when the input is invalid, 2 on usage or I/O errors or
// when the tensor cannot be dequantized by this build (not quantized, or a
// layout the dequantizer does not address yet).
#ifndef HURRAY_TOOLS_DEQUANT_COMMAND_H_
#define HURRAY_TOOLS_DEQUANT_COMMAND_H_

#include <ostream>
#include <string>

#include "absl/types/span.h"

namespace hurray::tools {

int RunDequant(absl::Span<const std::string> args, std::ostream& out,
               std::ostream& err);

}  // namespace hurray::tools

#endif  // HURRAY_TOOLS_DEQUANT_COMMAND_H_
