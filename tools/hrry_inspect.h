// `hurray inspect` and `hurray validate` on a whole .hrry file
// (file-format.md): the file is opened with the random-access reader, which
// checks header, tensor region, KV section, index and trailer
// (stream/container/hrry_mmap.h), then its tensors are listed in file order.
#ifndef HURRAY_TOOLS_HRRY_INSPECT_H_
#define HURRAY_TOOLS_HRRY_INSPECT_H_

#include <ostream>
#include <string>

#include "parser/options.h"

namespace hurray::tools {

// Prints a summary (text, or one JSON object on one line) and returns the
// exit code: 0 valid, 1 rejected (rule id and offset printed), 2 unreadable.
int InspectHrry(const std::string& path, const ParseOptions& options, bool json,
                std::ostream& out, std::ostream& err);

// Prints "FILE: OK (N tensors)" or "FILE: <RULE-ID> at byte <offset>: ...".
int ValidateHrry(const std::string& path, const ParseOptions& options,
                 std::ostream& out, std::ostream& err);

}  // namespace hurray::tools

#endif  // HURRAY_TOOLS_HRRY_INSPECT_H_
