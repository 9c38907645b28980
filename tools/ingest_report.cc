#include "tools/ingest_report.h"

#include <unistd.h>

#include <algorithm>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "parser/rules.h"
#include "tools/display_text.h"
#include "tools/json_writer.h"

namespace hurray::tools {

using stream::resume::TensorRecord;

ProgressLine::ProgressLine(std::ostream& err)
    : err_(err), enabled_(::isatty(STDERR_FILENO) == 1) {}

void ProgressLine::Update(const stream::ingest::IngestProgress& p) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (shown_ && now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  shown_ = true;
  const double mb = static_cast<double>(p.bytes) / 1e6;
  // The rate of this run's bytes (a resumed run skipped some).
  const double rate =
      p.elapsed_seconds > 0
          ? static_cast<double>(p.bytes - p.skipped) / 1e6 / p.elapsed_seconds
          : 0;
  std::string line = absl::StrFormat("\r%10.1f MB", mb);
  if (p.total > 0) {
    absl::StrAppendFormat(&line, " of %.1f MB",
                          static_cast<double>(p.total) / 1e6);
  }
  absl::StrAppendFormat(&line, "  %6d tensors  %8.1f MB/s", p.tensors, rate);
  if (p.total > 0 && rate > 0 && p.bytes <= p.total) {
    const double left = static_cast<double>(p.total - p.bytes) / 1e6 / rate;
    absl::StrAppendFormat(&line, "  ETA %4.0f s", left);
  }
  err_ << line << std::flush;
}

void ProgressLine::Done() {
  if (shown_) err_ << "\n" << std::flush;
}

void PrintTable(const std::vector<TensorRecord>& records, std::ostream& out) {
  struct Row {
    std::string name, shape, type, scheme, bytes, verdict;
  };
  std::vector<Row> rows;
  rows.push_back({"name", "shape", "type", "scheme", "bytes", "verdict"});
  for (const TensorRecord& r : records) {
    rows.push_back(
        {r.name.empty() ? absl::StrCat("#", r.index)
                        : TerminalSafe(r.name, kNameColumnWidth),
         TerminalSafe(r.shape), TerminalSafe(r.type), TerminalSafe(r.scheme),
         absl::StrCat(r.bytes),
         TerminalSafe(r.complete
                          ? r.verdict
                          : (r.verdict.empty() ? "incomplete" : r.verdict))});
  }
  size_t w_name = 0, w_shape = 0, w_type = 0, w_scheme = 0, w_bytes = 0;
  for (const Row& r : rows) {
    w_name = std::max(w_name, DisplayWidth(r.name));
    w_shape = std::max(w_shape, DisplayWidth(r.shape));
    w_type = std::max(w_type, DisplayWidth(r.type));
    w_scheme = std::max(w_scheme, DisplayWidth(r.scheme));
    w_bytes = std::max(w_bytes, r.bytes.size());
  }
  for (const Row& r : rows) {
    out << PadRight(r.name, w_name) << "  " << PadRight(r.shape, w_shape)
        << "  " << PadRight(r.type, w_type) << "  "
        << PadRight(r.scheme, w_scheme) << "  "
        << std::string(w_bytes - r.bytes.size(), ' ') << r.bytes << "  "
        << r.verdict << "\n";
  }
}

void PrintJson(const stream::ingest::IngestReport& report, std::ostream& out) {
  const absl::Status& status = report.status;
  std::string line;
  JsonWriter w(&line);
  w.BeginObject();
  w.Key("source").String(report.source);
  const std::optional<absl::string_view> rule = RuleIdOf(status);
  if (status.ok() || rule.has_value()) w.Key("valid").Bool(status.ok());
  if (rule.has_value()) {
    w.Key("rule").String(*rule);
    w.Key("offset").Uint(OffsetOf(status).value_or(0));
    if (OffsetUnitOf(status) != OffsetUnit::kByte) {
      w.Key("offset_unit").String(OffsetUnitName(OffsetUnitOf(status)));
    }
  }
  if (!status.ok()) w.Key("error").String(status.message());
  w.Key("bytes").Uint(report.bytes);
  w.Key("tensors").BeginArray();
  for (const TensorRecord& r : report.tensors) {
    w.BeginObject();
    w.Key("index").Uint(r.index);
    if (!r.name.empty()) w.Key("name").String(r.name);
    w.Key("shape").String(r.shape);
    w.Key("type").String(r.type);
    w.Key("scheme").String(r.scheme);
    w.Key("bytes").Uint(r.bytes);
    w.Key("complete").Bool(r.complete);
    w.Key("verdict").String(r.verdict);
    if (!r.output.empty()) w.Key("output").String(r.output);
    if (!r.more.empty()) {
      w.Key("more_outputs").BeginArray();
      for (const TensorRecord::MoreOutput& m : r.more) {
        if (!m.output.empty()) w.String(m.output);
      }
      w.EndArray();
    }
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  out << line << "\n";
}

void PrintError(absl::string_view source, const absl::Status& status,
                std::ostream& err) {
  err << "hurray ingest: " << TerminalSafe(source) << ": "
      << TerminalSafe(status.message()) << "\n";
}

void PrintReport(const stream::ingest::IngestReport& report, bool json,
                 absl::string_view ok_word, std::ostream& out,
                 std::ostream& err) {
  const absl::Status& status = report.status;
  if (json) {
    PrintJson(report, out);
  } else {
    PrintTable(report.tensors, out);
    if (status.ok()) {
      out << TerminalSafe(report.source) << ": OK (" << report.tensors.size()
          << " tensors, " << report.bytes << " " << ok_word << ")\n";
    } else if (RuleIdOf(status).has_value()) {
      out << TerminalSafe(report.source) << ": "
          << TerminalSafe(status.message()) << "\n";
    }
  }
  if (!status.ok() && !RuleIdOf(status).has_value()) {
    PrintError(report.source, status, err);
  }
  if (!report.state_status.ok()) {
    err << "hurray ingest: " << TerminalSafe(report.state_status.message())
        << "\n";
  }
}

}  // namespace hurray::tools
