// What the hurray subcommands share: exit codes, usage errors, argument
// parsing and reading an input file.
#ifndef HURRAY_TOOLS_COMMAND_UTIL_H_
#define HURRAY_TOOLS_COMMAND_UTIL_H_

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "parser/options.h"
#include "tools/arg_parser.h"
#include "tools/usage.h"

namespace hurray::tools {

// Exit codes. When several apply, the largest wins.
inline constexpr int kExitOk = 0;        // every descriptor is valid
inline constexpr int kExitRejected = 1;  // some descriptor was rejected
inline constexpr int kExitError = 2;     // usage or I/O error

// Input files are small descriptor files; larger ones are refused.
inline constexpr size_t kMaxInputFileBytes = size_t{64} << 20;  // 64 MiB

struct CommandArgs {
  bool help = false;  // --help / -h: print usage, exit 0
  bool json = false;
  // Mode (--permissive) and private values agreed with --agree.
  ParseOptions options;
  std::vector<std::string> files;
};

// The rows the commands share (tools/arg_parser.h).
// -h, --help: print the command's page, exit 0.
[[nodiscard]] OptionSpec HelpOption(bool* help);
// --json.
[[nodiscard]] OptionSpec JsonOption(bool* json);
// --permissive: decode in permissive mode.
[[nodiscard]] OptionSpec PermissiveOption(Mode* mode);
// --agree KIND=VALUE (repeatable; KIND: type, device, memory-class, scheme
// for a private tag 0xF0-0xFE, or layout-id for an extension layout id).
[[nodiscard]] OptionSpec AgreeOption(PrivateAgreements* agreed);
// --kv KEY=VALUE (repeatable), appended to *kv.
[[nodiscard]] OptionSpec KvOption(
    std::vector<std::pair<std::string, std::string>>* kv);
// -h/--help, --permissive, --agree and, when `allow_json`, --json, setting
// the fields of *args.
[[nodiscard]] std::vector<OptionSpec> CommonOptions(CommandArgs* args,
                                                    bool allow_json);

// Parses the arguments after the subcommand name of a command that reads
// FILEs: CommonOptions, then the command's `extra` rows, and files (not
// "-": stdin is not read). Fails (InvalidArgument, with a one-line
// message) on a usage error (tools/arg_parser.h), a bad --agree value, or
// when there is no file (unless --help).
[[nodiscard]] absl::StatusOr<CommandArgs> ParseCommandArgs(
    absl::Span<const std::string> args, bool allow_json,
    absl::Span<const OptionSpec> extra = {});

// Prints "hurray <command>: <message>" (escaped: it may quote an argument)
// and the command's synopsis to `err`; returns kExitError.
int UsageError(absl::string_view command, absl::string_view message,
               std::ostream& err);

// Reads the whole file at `path`. Errors: the file cannot be opened or read
// (NotFound, PermissionDenied, ... from errno), or it is larger than
// `max_bytes` (ResourceExhausted).
[[nodiscard]] absl::StatusOr<std::vector<uint8_t>> ReadInputFile(
    const std::string& path, size_t max_bytes = kMaxInputFileBytes);

}  // namespace hurray::tools

#endif  // HURRAY_TOOLS_COMMAND_UTIL_H_
