#include "tools/command_util.h"

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "tools/display_text.h"

namespace hurray::tools {
namespace {

absl::Status TooLarge(size_t max_bytes, absl::string_view size_text) {
  const std::string limit = max_bytes % (size_t{1} << 20) == 0
                                ? absl::StrCat(max_bytes >> 20, " MiB")
                                : absl::StrCat(max_bytes, " bytes");
  return absl::ResourceExhaustedError(absl::StrCat(
      "file is larger than ", limit, size_text, "; refusing to read it"));
}

// Applies one --agree KIND=VALUE to the private-value agreements.
absl::Status ParseAgreement(absl::string_view spec, PrivateAgreements* agreed) {
  const size_t eq = spec.find('=');
  const absl::string_view kind = spec.substr(0, eq);
  // VALUE is decimal, or hexadecimal with a 0x prefix.
  uint64_t value = 0;
  const absl::string_view text =
      eq == absl::string_view::npos ? "" : spec.substr(eq + 1);
  const bool hex = absl::StartsWithIgnoreCase(text, "0x");
  if (text.empty() || (hex ? !absl::SimpleHexAtoi(text.substr(2), &value)
                           : !absl::SimpleAtoi(text, &value))) {
    return absl::InvalidArgumentError(
        absl::StrCat("--agree needs KIND=VALUE, got '", spec, "'"));
  }
  if (kind == "layout-id") {
    if (agreed->layout_id_count >= agreed->layout_ids.size()) {
      return absl::InvalidArgumentError("too many --agree layout-id values");
    }
    agreed->layout_ids[agreed->layout_id_count++] = value;
    return absl::OkStatus();
  }
  uint16_t* set = kind == "type"           ? &agreed->type_tags
                  : kind == "device"       ? &agreed->device_tags
                  : kind == "memory-class" ? &agreed->memory_classes
                  : kind == "scheme"       ? &agreed->scheme_tags
                                           : nullptr;
  if (set == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown --agree kind '", kind, "'"));
  }
  if (value < 0xF0 || value > 0xFE) {
    return absl::InvalidArgumentError(
        absl::StrCat("--agree ", kind, " needs a private tag 0xF0-0xFE"));
  }
  *set |= static_cast<uint16_t>(1u << (value - 0xF0));
  return absl::OkStatus();
}

}  // namespace

OptionSpec HelpOption(bool* help) {
  OptionSpec row = FlagOption("--help", help);
  row.alias = "-h";
  return row;
}

OptionSpec JsonOption(bool* json) { return FlagOption("--json", json); }

OptionSpec PermissiveOption(Mode* mode) {
  return {.name = "--permissive", .set = [mode](absl::string_view) {
            *mode = Mode::kPermissive;
            return absl::OkStatus();
          }};
}

OptionSpec AgreeOption(PrivateAgreements* agreed) {
  return {.name = "--agree",
          .takes_value = true,
          .set = [agreed](absl::string_view v) {
            return ParseAgreement(v, agreed);
          }};
}

OptionSpec KvOption(std::vector<std::pair<std::string, std::string>>* kv) {
  return {
      .name = "--kv", .takes_value = true, .set = [kv](absl::string_view v) {
        const size_t eq = v.find('=');
        if (eq == absl::string_view::npos || eq == 0) {
          return absl::InvalidArgumentError("--kv wants KEY=VALUE");
        }
        kv->emplace_back(v.substr(0, eq), v.substr(eq + 1));
        return absl::OkStatus();
      }};
}

std::vector<OptionSpec> CommonOptions(CommandArgs* args, bool allow_json) {
  std::vector<OptionSpec> rows = {HelpOption(&args->help),
                                  PermissiveOption(&args->options.mode),
                                  AgreeOption(&args->options.agreed)};
  if (allow_json) rows.push_back(JsonOption(&args->json));
  return rows;
}

absl::StatusOr<CommandArgs> ParseCommandArgs(
    absl::Span<const std::string> args, bool allow_json,
    absl::Span<const OptionSpec> extra) {
  CommandArgs parsed;
  std::vector<OptionSpec> rows = CommonOptions(&parsed, allow_json);
  rows.insert(rows.end(), extra.begin(), extra.end());
  absl::Status s = ParseArgTable(args, rows, &parsed.files);
  if (!s.ok()) return s;
  for (const std::string& file : parsed.files) {
    if (file == "-") {
      return absl::InvalidArgumentError(
          "reading standard input ('-') is not supported; pass /dev/stdin");
    }
  }
  if (parsed.files.empty() && !parsed.help) {
    return absl::InvalidArgumentError("no input files");
  }
  return parsed;
}

int UsageError(absl::string_view command, absl::string_view message,
               std::ostream& err) {
  err << "hurray " << command << ": " << TerminalSafe(message) << "\n\n";
  PrintCommandUsage(command, err);
  err << "\n'hurray " << command
      << " --help' shows its options, 'hurray help' every command.\n";
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
