// A small table-driven parser for the arguments of one subcommand (issue 43
// § 1): each option is a row (its name, whether it takes a value, what it
// sets), so a subcommand states its options once instead of a chain of ifs.
// Abseil flags are process-global and our subcommands share flag names
// (--json, --permissive, --agree), hence a table per subcommand.
//
// Rules: "--" ends the options; "-" and anything not starting with '-' is a
// positional argument; an option that takes a value takes the next
// argument, whatever it is ("--header -x"); an option not in the table is
// "unknown option 'X'"; a missing value is "X needs a value".
#ifndef HURRAY_TOOLS_ARG_PARSER_H_
#define HURRAY_TOOLS_ARG_PARSER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace hurray::tools {

struct OptionSpec {
  // "--name" (and, for some, a short "-h" in a row of its own).
  absl::string_view name;
  bool takes_value = false;
  // Called with the value ("" for an option without one); an error is the
  // usage error to report.
  std::function<absl::Status(absl::string_view value)> set;
};

// Parses `args` against `options`; positional arguments go to
// *positionals in order.
[[nodiscard]] absl::Status ParseArgTable(absl::Span<const std::string> args,
                                         absl::Span<const OptionSpec> options,
                                         std::vector<std::string>* positionals);

// Value parsers for the rows (their messages name the option).
// An integer from `min` to `max`; else "<what>".
[[nodiscard]] absl::Status ParseUint(absl::string_view value, uint64_t min,
                                     uint64_t max, absl::string_view what,
                                     uint64_t* out);
// Seconds from 0 to 1e6; else "<option> needs a number of seconds".
[[nodiscard]] absl::Status ParseSeconds(absl::string_view option,
                                        absl::string_view value, double* out);

}  // namespace hurray::tools

#endif  // HURRAY_TOOLS_ARG_PARSER_H_
