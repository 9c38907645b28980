// hurray: command-line tool for Hurray tensor descriptors.
//
//   hurray inspect [--json] [--permissive] [--agree KIND=VALUE]... FILE...
//   hurray validate [--permissive] [--agree KIND=VALUE]... FILE...
//   hurray dequant [--json] [--permissive] FILE -o OUT [--format F]
//   hurray ingest SOURCE [--dequant OUT_DIR] [--resume STATE] [--json] ...
//   hurray convert SRC -o OUT.hrry [--kv KEY=VALUE]...
//   hurray serve FILE.hrry [--port P] [--bind ADDR]
//   hurray help [COMMAND] | --help | -h
//   hurray COMMAND --help
//   hurray --version
//
// This file only dispatches: each subcommand lives in its own file
// (tools/<name>_command.{h,cc}). tools/usage.cc holds the help texts and
// tools/command_util.h the exit codes.
#include <iostream>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "tools/command_util.h"
#include "tools/convert_command.h"
#include "tools/dequant_command.h"
#include "tools/display_text.h"
#include "tools/ingest_command.h"
#include "tools/inspect_command.h"
#include "tools/pack_command.h"
#include "tools/serve_command.h"
#include "tools/usage.h"
#include "tools/validate_command.h"

int main(int argc, char** argv) {
  using hurray::tools::kExitError;
  using hurray::tools::kExitOk;
  using hurray::tools::PrintUsage;

  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    PrintUsage(std::cerr);
    return kExitError;
  }
  const std::string& command = args[0];
  const absl::Span<const std::string> rest =
      absl::MakeConstSpan(args).subspan(1);

  if (command == "help" || command == "--help" || command == "-h") {
    // `hurray help COMMAND` is that command's page.
    if (rest.size() == 1 &&
        hurray::tools::PrintCommandHelp(rest[0], std::cout)) {
      return kExitOk;
    }
    if (!rest.empty()) {
      std::cerr << "hurray help: unknown command '"
                << hurray::tools::TerminalSafe(rest[0]) << "'\n\n";
      PrintUsage(std::cerr);
      return kExitError;
    }
    PrintUsage(std::cout);
    return kExitOk;
  }
  if (command == "--version" || command == "version") {
    hurray::tools::PrintVersion(std::cout);
    return kExitOk;
  }
  int exit_code;
  if (command == "inspect") {
    exit_code = hurray::tools::RunInspect(rest, std::cout, std::cerr);
  } else if (command == "validate") {
    exit_code = hurray::tools::RunValidate(rest, std::cout, std::cerr);
  } else if (command == "dequant") {
    exit_code = hurray::tools::RunDequant(rest, std::cout, std::cerr);
  } else if (command == "ingest") {
    exit_code = hurray::tools::RunIngest(rest, std::cout, std::cerr);
  } else if (command == "pack") {
    exit_code = hurray::tools::RunPack(rest, std::cout, std::cerr);
  } else if (command == "convert") {
    exit_code = hurray::tools::RunConvert(rest, std::cout, std::cerr);
  } else if (command == "serve") {
    exit_code = hurray::tools::RunServe(rest, std::cout, std::cerr);
  } else {
    std::cerr << "hurray: unknown command '"
              << hurray::tools::TerminalSafe(command) << "'\n\n";
    PrintUsage(std::cerr);
    return kExitError;
  }
  // A result that could not be written (full disk, closed pipe) is an I/O
  // error, whatever the descriptors said.
  if (!std::cout.flush()) {
    std::cerr << "hurray: error writing the output\n";
    return kExitError;
  }
  return exit_code;
}
