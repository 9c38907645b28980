// `hurray inspect [--json] [--permissive] FILE...`: decodes the descriptor
// at the start of each file and prints its fields, as a readable summary
// or, with --json, as one JSON object per line (tools/descriptor_json.h).
#ifndef HURRAY_TOOLS_INSPECT_COMMAND_H_
#define HURRAY_TOOLS_INSPECT_COMMAND_H_

#include <ostream>
#include <string>

#include "absl/types/span.h"

namespace hurray::tools {

// Runs the subcommand on the arguments that follow "inspect". Results go to
// `out`, I/O errors and usage to `err`. Returns the exit code (see
// tools/command_util.h): 0 all valid, 1 some rejected, 2 usage or I/O error.
int RunInspect(absl::Span<const std::string> args, std::ostream& out,
               std::ostream& err);

}  // namespace hurray::tools

#endif  // HURRAY_TOOLS_INSPECT_COMMAND_H_
