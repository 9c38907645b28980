#include "tools/arg_parser.h"

#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace hurray::tools {

absl::Status ParseArgTable(absl::Span<const std::string> args,
                           absl::Span<const OptionSpec> options,
                           std::vector<std::string>* positionals) {
  bool options_done = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (options_done || arg.size() < 2 || arg[0] != '-') {
      positionals->push_back(arg);
      continue;
    }
    if (arg == "--") {
      options_done = true;
      continue;
    }
    // "--name=value": the name is what precedes the first '='.
    absl::string_view name = arg;
    std::optional<absl::string_view> inline_value;
    const size_t eq = arg.find('=');
    if (absl::StartsWith(arg, "--") && eq != std::string::npos) {
      name = name.substr(0, eq);
      inline_value = absl::string_view(arg).substr(eq + 1);
    }
    size_t row = 0;
    while (row < options.size() && options[row].name != name &&
           (options[row].alias.empty() || options[row].alias != name)) {
      ++row;
    }
    if (row == options.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown option '", name, "'"));
    }
    const OptionSpec& spec = options[row];
    absl::string_view value;
    if (spec.takes_value) {
      if (inline_value.has_value()) {
        value = *inline_value;
      } else if (i + 1 < args.size()) {
        value = args[++i];
      }
      if (value.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(name, " needs a value"));
      }
    } else if (inline_value.has_value()) {
      return absl::InvalidArgumentError(absl::StrCat(name, " takes no value"));
    }
    absl::Status s = spec.set(value);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

OptionSpec FlagOption(absl::string_view name, bool* to) {
  return {.name = name, .set = [to](absl::string_view) {
            *to = true;
            return absl::OkStatus();
          }};
}

OptionSpec TextOption(absl::string_view name, std::string* to) {
  return {.name = name, .takes_value = true, .set = [to](absl::string_view v) {
            *to = std::string(v);
            return absl::OkStatus();
          }};
}

absl::Status ParseUint(absl::string_view value, uint64_t min, uint64_t max,
                       absl::string_view what, uint64_t* out) {
  uint64_t n = 0;
  if (!absl::SimpleAtoi(value, &n) || n < min || n > max) {
    return absl::InvalidArgumentError(what);
  }
  *out = n;
  return absl::OkStatus();
}

absl::Status ParseSeconds(absl::string_view option, absl::string_view value,
                          double* out) {
  double seconds = 0;
  if (!absl::SimpleAtod(value, &seconds) || !(seconds >= 0) || seconds > 1e6) {
    return absl::InvalidArgumentError(
        absl::StrCat(option, " needs a number of seconds"));
  }
  *out = seconds;
  return absl::OkStatus();
}

}  // namespace hurray::tools
