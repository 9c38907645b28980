#include "tools/validate_command.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "parser/decoder.h"
#include "parser/options.h"
#include "parser/rules.h"
#include "tools/command_util.h"
#include "tools/display_text.h"
#include "tools/hrry_inspect.h"
#include "tools/input_file.h"

namespace hurray::tools {

int RunValidate(absl::Span<const std::string> args, std::ostream& out,
                std::ostream& err) {
  absl::StatusOr<CommandArgs> parsed =
      ParseCommandArgs(args, /*allow_json=*/false);
  if (!parsed.ok()) {
    return UsageError("validate", parsed.status().message(), err);
  }
  if (parsed->help) {
    PrintCommandHelp("validate", out);
    return kExitOk;
  }

  const ParseOptions& options = parsed->options;
  // The decoder holds a whole TensorDescriptor (~19 KiB): keep it on the
  // heap, and reuse it for every file.
  auto decoder = std::make_unique<DescriptorDecoder>(options);

  int exit_code = kExitOk;
  for (const std::string& file : parsed->files) {
    // Opened once and read only as far as its descriptor needs (a .hrry
    // file is mapped instead).
    DescriptorRead read;
    absl::StatusOr<InputKind> kind = ReadInput(file, decoder.get(), &read);
    if (kind.ok() && *kind == InputKind::kHrry) {
      exit_code = std::max(exit_code, ValidateHrry(file, options, out, err));
      continue;
    }
    if (!kind.ok()) {
      out.flush();  // keep stdout and stderr in order on a terminal
      err << "hurray validate: " << TerminalSafe(file) << ": "
          << TerminalSafe(kind.status().message()) << "\n";
      exit_code = std::max(exit_code, kExitError);
      continue;
    }
    const Rejection& r = read.rejection;
    if (r.ok()) {
      out << TerminalSafe(file) << ": OK\n";
    } else {
      out << TerminalSafe(file) << ": " << RuleId(r.rule) << " at byte "
          << r.offset << ": " << TerminalSafe(r.message) << "\n";
      exit_code = std::max(exit_code, kExitRejected);
    }
  }
  out.flush();
  return exit_code;
}

}  // namespace hurray::tools
