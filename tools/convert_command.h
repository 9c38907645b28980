// `hurray convert`: a safetensors or GGUF file (told apart by its magic,
// not its name) to a .hrry file, losslessly (stream/convert/convert.h).
//
//   hurray convert SRC -o OUT.hrry [--kv KEY=VALUE]... [--quantize SCHEME]
//                  [--skip PATTERN]... [--requantize SCHEME]
//
// --quantize quantizes float tensors of rank >= 2 whose names match no
// --skip pattern (fnmatch); --requantize re-quantizes GGUF Q4_1, Q5_0, Q5_1
// and Q8_1 tensors (SCHEME: stream/convert/quantizer.h).
//
// The output is written to a hidden temp of OUT's directory and renamed to
// OUT once complete (stream/container/safe_output_dir.h). Prints one line per
// tensor (name, shape, source type → Hurray type and scheme, max abs and RMS
// error of quantized tensors). Exit 0, 1 (the input
// was refused: the reason, naming the tensor, is printed) or 2 (usage or
// I/O error).
#ifndef HURRAY_TOOLS_CONVERT_COMMAND_H_
#define HURRAY_TOOLS_CONVERT_COMMAND_H_

#include <ostream>
#include <string>

#include "absl/types/span.h"

namespace hurray::tools {

int RunConvert(absl::Span<const std::string> args, std::ostream& out,
               std::ostream& err);

}  // namespace hurray::tools

#endif  // HURRAY_TOOLS_CONVERT_COMMAND_H_
