// `hurray validate [--permissive] FILE...`: decodes and validates the
// descriptor at the start of each file and prints one line per file,
// "FILE: OK" or "FILE: <RULE-ID> at byte <offset>: <message>".
#ifndef HURRAY_TOOLS_VALIDATE_COMMAND_H_
#define HURRAY_TOOLS_VALIDATE_COMMAND_H_

#include <ostream>
#include <string>

#include "absl/types/span.h"

namespace hurray::tools {

// Runs the subcommand on the arguments that follow "validate". Results go
// to `out`, I/O errors and usage to `err`. Returns the exit code (see
// tools/command_util.h): 0 all valid, 1 some rejected, 2 usage or I/O error.
int RunValidate(absl::Span<const std::string> args, std::ostream& out,
                std::ostream& err);

}  // namespace hurray::tools

#endif  // HURRAY_TOOLS_VALIDATE_COMMAND_H_
