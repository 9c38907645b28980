// Text that came from the input (tensor names, KV keys and strings, messages
// a peer sent) made safe to print on a terminal: nothing in it can move the
// cursor, change colours, clear the screen, break a table row or reorder
// what follows it.
//
// TerminalSafe escapes, with a backslash: '\' itself (\\), \n, \r, \t, every
// other C0 control and DEL as \xNN (ESC is \x1b), bytes that are not UTF-8
// as \xNN, and the C1 controls, the bidirectional formatting characters
// (U+061C, U+200E, U+200F, U+202A..U+202E, U+2066..U+2069) and the line and
// paragraph separators (U+2028, U+2029) as \uNNNN. Any other valid UTF-8 is
// kept. With `max_columns` > 0 the result is cut to that many columns (one
// per character, a cut ends with "...", never inside an escape).
//
// Every readable (non-JSON) output of the hurray tool prints input text
// through this function; JSON output escapes with its own rules.
#ifndef HURRAY_TOOLS_DISPLAY_TEXT_H_
#define HURRAY_TOOLS_DISPLAY_TEXT_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace hurray::tools {

// Column width of table cells holding names.
inline constexpr size_t kNameColumnWidth = 48;

std::string TerminalSafe(absl::string_view text, size_t max_columns = 0);

// Columns `text` takes (one per UTF-8 character).
size_t DisplayWidth(absl::string_view text);

// `text` followed by spaces up to `width` columns.
std::string PadRight(absl::string_view text, size_t width);

}  // namespace hurray::tools

#endif  // HURRAY_TOOLS_DISPLAY_TEXT_H_
