// A small table-driven parser for the arguments of one subcommand (issue 43
// § 1): each option is a row (its name, whether it takes a value, what it
// sets), so a subcommand states its options once instead of a chain of ifs.
// Abseil flags are process-global and our subcommands share flag names
// (--json, --permissive, --agree), hence a table per subcommand. The rows
// every command shares (-h/--help, --json, --permissive, --agree) are in
// tools/command_util.h.
//
// What every subcommand accepts, in any order:
//   - "--" ends the options: every later argument is positional;
//   - "-", "" and anything not starting with '-' are positional;
//   - "--name VALUE" and "--name=VALUE" for an option that takes a value
//     (a short "-o" only as "-o VALUE"); the separate VALUE is the next
//     argument, whatever it is ("--header -x");
//   - an empty value, or none at the end of the line, is
//     "X needs a value"; "--flag=V" for an option without a value is
//     "--flag takes no value";
//   - an option not in the table is "unknown option 'X'";
//   - an option given again sets again: a later value replaces an earlier
//     one, except for the options that collect values (--agree, --kv,
//     --skip, --header, --tensors: each adds one);
//   - the first error stops the parse. -h/--help is an ordinary row: the
//     command prints its page once the whole line parsed.
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
  // "--name" or a short "-o".
  absl::string_view name;
  bool takes_value = false;
  // Called with the value ("" for an option without one); an error is the
  // usage error to report.
  std::function<absl::Status(absl::string_view value)> set;
  // Another spelling of the same option ("--output" for "-o"), if any.
  absl::string_view alias = {};
};

// Parses `args` against `options` (the rules above); positional arguments
// go to *positionals in order.
[[nodiscard]] absl::Status ParseArgTable(absl::Span<const std::string> args,
                                         absl::Span<const OptionSpec> options,
                                         std::vector<std::string>* positionals);

// Rows for the common kinds of option.
// An option without a value that sets *to to true.
[[nodiscard]] OptionSpec FlagOption(absl::string_view name, bool* to);
// An option whose value is copied to *to.
[[nodiscard]] OptionSpec TextOption(absl::string_view name, std::string* to);

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
