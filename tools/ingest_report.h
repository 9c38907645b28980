// What `hurray ingest` prints (tools/ingest_command.cc): the progress line
// on a terminal, the per-tensor table and its last line, or one JSON
// object. Everything that comes from the input or the peer (the source,
// names, types, verdicts, messages) goes through TerminalSafe
// (tools/display_text.h) on its way to a terminal; JSON escapes it itself.
#ifndef HURRAY_TOOLS_INGEST_REPORT_H_
#define HURRAY_TOOLS_INGEST_REPORT_H_

#include <chrono>
#include <cstdint>
#include <ostream>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "stream/ingest/ingest.h"
#include "stream/resume/tensor_record.h"

namespace hurray::tools {

// Progress on stderr when it is a terminal, at most ten times a second.
class ProgressLine {
 public:
  explicit ProgressLine(std::ostream& err);
  void Update(const stream::ingest::IngestProgress& p);
  // Ends the line, if one was shown.
  void Done();

 private:
  std::ostream& err_;
  bool enabled_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point last_;
};

// The table: name, shape, type, scheme, bytes, verdict; the name column is
// capped.
void PrintTable(const std::vector<stream::resume::TensorRecord>& records,
                std::ostream& out);

// The report as one JSON object on a line.
void PrintJson(const stream::ingest::IngestReport& report, std::ostream& out);

// The table and its last line ("SOURCE: OK (...)" or "SOURCE: <rule> at
// byte <offset>: ..."), or the JSON object; an error without a rule id on
// `err` as "hurray ingest: SOURCE: message". `ok_word` ends the OK line
// ("bytes" or "bytes read").
void PrintReport(const stream::ingest::IngestReport& report, bool json,
                 absl::string_view ok_word, std::ostream& out,
                 std::ostream& err);

// "hurray ingest: SOURCE: message" on `err`.
void PrintError(absl::string_view source, const absl::Status& status,
                std::ostream& err);

}  // namespace hurray::tools

#endif  // HURRAY_TOOLS_INGEST_REPORT_H_
