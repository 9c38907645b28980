// The hurray tool's help texts: the overview (`hurray --help`) and each
// command's own page (`hurray COMMAND --help`), kept in one table so that
// the overview, the pages and the usage errors never disagree.
#ifndef HURRAY_TOOLS_USAGE_H_
#define HURRAY_TOOLS_USAGE_H_

#include <ostream>

#include "absl/strings/string_view.h"

namespace hurray::tools {

// The overview: what the tool is, every command's synopsis and one line on
// what it does, and how to get a command's page.
void PrintUsage(std::ostream& os);

// The whole page of one command (synopsis, what it does, its options, its
// outputs and exit status). Returns false, printing nothing, for a name
// that is not a command.
bool PrintCommandHelp(absl::string_view command, std::ostream& os);

// The synopsis lines of one command ("Usage: hurray CMD ..."), for usage
// errors; the overview for a name that is not a command.
void PrintCommandUsage(absl::string_view command, std::ostream& os);

// "hurray X.Y.Z" (the VERSION file at the root of the tree).
void PrintVersion(std::ostream& os);

}  // namespace hurray::tools

#endif  // HURRAY_TOOLS_USAGE_H_
