#include "tools/command_util.h"

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace hurray::tools {
namespace {

absl::Status TooLarge(size_t max_bytes, absl::string_view size_text) {
  const std::string limit = max_bytes % (size_t{1} << 20) == 0
                                ? absl::StrCat(max_bytes >> 20, " MiB")
                                : absl::StrCat(max_bytes, " bytes");
  return absl::ResourceExhaustedError(absl::StrCat(
      "file is larger than ", limit, size_text, "; refusing to read it"));
}

}  // namespace

void PrintUsage(std::ostream& os) {
  os << R"(Usage: hurray <command> [options] FILE...

Commands:
  inspect [--json] [--permissive] FILE...
      Decode the tensor descriptor at the start of each FILE and print its
      fields: a readable summary, or with --json one JSON object per line.
  validate [--permissive] FILE...
      Print one line per FILE: "FILE: OK" or
      "FILE: <RULE-ID> at byte <offset>: <message>".
  help
      Print this help.

Options:
  --json         inspect: one JSON object per file, one per line
  --permissive   decode in permissive mode (strict-only rules relaxed)
  --             treat every following argument as a FILE
  -h, --help     print this help

Each FILE holds one encoded descriptor; bytes after its descriptor_length
(e.g. data buffers) are ignored. Files larger than 64 MiB are refused.

Exit status: 0 if every descriptor is valid, 1 if any was rejected,
2 on a usage error or when a file cannot be read.
)";
}

absl::StatusOr<CommandArgs> ParseCommandArgs(absl::Span<const std::string> args,
                                             bool allow_json) {
  CommandArgs parsed;
  bool options_done = false;
  for (const std::string& arg : args) {
    if (options_done || arg.size() < 2 || arg[0] != '-') {
      if (!options_done && arg == "-") {
        return absl::InvalidArgumentError(
            "reading standard input ('-') is not supported; pass /dev/stdin");
      }
      parsed.files.push_back(arg);
    } else if (arg == "--") {
      options_done = true;
    } else if (arg == "--permissive") {
      parsed.permissive = true;
    } else if (arg == "--json" && allow_json) {
      parsed.json = true;
    } else if (arg == "--help" || arg == "-h") {
      parsed.help = true;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown option '", arg, "'"));
    }
  }
  if (parsed.files.empty() && !parsed.help) {
    return absl::InvalidArgumentError("no input files");
  }
  return parsed;
}

int UsageError(absl::string_view command, absl::string_view message,
               std::ostream& err) {
  err << "hurray " << command << ": " << message << "\n\n";
  PrintUsage(err);
  return kExitError;
}

absl::StatusOr<std::vector<uint8_t>> ReadInputFile(const std::string& path,
                                                   size_t max_bytes) {
  // Refuse directories and oversized regular files before reading anything.
  // Other file kinds (pipes, /dev/stdin) have no size up front; the read
  // loop below enforces the limit for them.
  std::error_code ec;
  const std::filesystem::file_status st = std::filesystem::status(path, ec);
  if (ec) {
    return absl::ErrnoToStatus(ec.value(), "cannot open");
  }
  if (std::filesystem::is_directory(st)) {
    return absl::ErrnoToStatus(EISDIR, "cannot read");
  }
  if (std::filesystem::is_regular_file(st)) {
    const uintmax_t size = std::filesystem::file_size(path, ec);
    if (!ec && size > max_bytes) {
      return TooLarge(max_bytes, absl::StrCat(" (", size, " bytes)"));
    }
  }

  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in.is_open()) {
    return absl::ErrnoToStatus(errno != 0 ? errno : EIO, "cannot open");
  }
  std::vector<uint8_t> bytes;
  char chunk[1 << 16];
  while (in) {
    in.read(chunk, sizeof(chunk));
    const size_t got = static_cast<size_t>(in.gcount());
    if (got > max_bytes - bytes.size()) {
      return TooLarge(max_bytes, "");
    }
    bytes.insert(bytes.end(), chunk, chunk + got);
  }
  if (in.bad()) {
    return absl::ErrnoToStatus(errno != 0 ? errno : EIO, "read error");
  }
  return bytes;
}

}  // namespace hurray::tools
