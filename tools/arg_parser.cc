#include "tools/arg_parser.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace hurray::tools {

absl::Status ParseArgTable(absl::Span<const std::string> args,
                           absl::Span<const OptionSpec> options,
                           std::vector<std::string>* positionals) {
  bool options_done = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (options_done || arg == "-" || arg.empty() || arg[0] != '-') {
      positionals->push_back(arg);
      continue;
    }
    if (arg == "--") {
      options_done = true;
      continue;
    }
    const OptionSpec* spec = nullptr;
    for (const OptionSpec& o : options) {
      if (o.name == arg) {
        spec = &o;
        break;
      }
    }
    if (spec == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown option '", arg, "'"));
    }
    absl::string_view value;
    if (spec->takes_value) {
      if (i + 1 == args.size()) {
        return absl::InvalidArgumentError(absl::StrCat(arg, " needs a value"));
      }
      value = args[++i];
    }
    absl::Status s = spec->set(value);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
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
