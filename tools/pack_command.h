// `hurray pack`: writes a valid .hrry file (file-format.md § Writer
// Protocol) from tensors in the bare streaming format, or the built-in
// sample model.
//
//   hurray pack -o OUT.hrry [--unsorted] [--no-crc] [--kv KEY=VALUE]...
//               [--permissive] NAME=STREAM...
//   hurray pack -o OUT.hrry --sample
//
// Each STREAM file holds tensors back to back (descriptor, then buffers).
// One tensor is named NAME; several (e.g. a composite head and its members)
// are NAME.0, NAME.1, ... in stream order. The output is written to a
// hidden temp of OUT's directory and renamed to OUT once complete
// (stream/container/safe_output_dir.h). Exit 0, 1 (an input was
// rejected: its rule id is printed) or 2 (usage or I/O error).
#ifndef HURRAY_TOOLS_PACK_COMMAND_H_
#define HURRAY_TOOLS_PACK_COMMAND_H_

#include <ostream>
#include <string>

#include "absl/types/span.h"

namespace hurray::tools {

int RunPack(absl::Span<const std::string> args, std::ostream& out,
            std::ostream& err);

}  // namespace hurray::tools

#endif  // HURRAY_TOOLS_PACK_COMMAND_H_
