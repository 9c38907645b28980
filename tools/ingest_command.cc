#include "tools/ingest_command.h"

#include <iterator>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "parser/rules.h"
#include "stream/http/http_body.h"
#include "stream/http/http_fields.h"
#include "stream/http/http_parallel.h"
#include "stream/ingest/output/element_convert.h"
#include "tools/arg_parser.h"
#include "tools/command_util.h"
#include "tools/display_text.h"
#include "tools/ingest_report.h"

namespace hurray::tools {
namespace {

struct IngestArgs {
  stream::ingest::IngestRequest request;
  std::string source;
  bool json = false;
  bool help = false;
};

// The options of `hurray ingest`, one row each, and the rows every command
// shares (--permissive, --agree, --json, --help; command_util.h).
absl::StatusOr<IngestArgs> ParseArgs(absl::Span<const std::string> args) {
  IngestArgs a;
  stream::ingest::IngestRequest& r = a.request;
  r.dequantize = false;  // validate only, unless --dequant
  CommandArgs common;
  auto seconds = [](absl::string_view name, double* to) {
    return
        [name, to](absl::string_view v) { return ParseSeconds(name, v, to); };
  };
  double idle = 0;
  bool idle_given = false;
  const OptionSpec own[] = {
      {"--dequant", true,
       [&r](absl::string_view v) {
         r.out_dir = std::string(v);
         r.dequantize = true;
         return absl::OkStatus();
       }},
      TextOption("--resume", &r.resume_file),
      {"--format", true,
       [&r](absl::string_view v) {
         absl::StatusOr<stream::ingest::OutputFormat> f =
             stream::ingest::ParseOutputFormat(v);
         if (f.ok()) r.format = *f;
         return f.status();
       }},
      {"--dtype", true,
       [&r](absl::string_view v) {
         absl::StatusOr<stream::ingest::OutputDtype> d =
             stream::ingest::ParseOutputDtype(v);
         if (d.ok()) r.dtype = *d;
         return d.status();
       }},
      {"--max-dense-bytes", true,
       [&r](absl::string_view v) {
         return ParseUint(v, 0, UINT64_MAX,
                          "--max-dense-bytes needs a byte count",
                          &r.max_dense_bytes);
       }},
      {"--sparse", true,
       [&r](absl::string_view v) {
         if (v == "dense" || v == "keep") {
           r.sparse = v == "dense" ? stream::ingest::SparseOutput::kDense
                                   : stream::ingest::SparseOutput::kKeep;
           return absl::OkStatus();
         }
         return absl::InvalidArgumentError(
             absl::StrCat("--sparse: '", v, "' is not dense or keep"));
       }},
      {"--chunk-size", true,
       [&r](absl::string_view v) {
         uint64_t n = 0;
         HURRAY_RETURN_IF_ERROR(ParseUint(
             v, 1, uint64_t{1} << 30,
             "--chunk-size needs a byte count from 1 to 1073741824", &n));
         r.chunk_size = static_cast<size_t>(n);
         return absl::OkStatus();
       }},
      {"--max-open-streams", true,
       [&r](absl::string_view v) {
         uint64_t n = 0;
         HURRAY_RETURN_IF_ERROR(
             ParseUint(v, 1, stream::ingest::kMaxOpenStreamsLimit,
                       absl::StrCat("--max-open-streams needs a count from 1 "
                                    "to ",
                                    stream::ingest::kMaxOpenStreamsLimit),
                       &n));
         r.max_open_streams = static_cast<uint32_t>(n);
         return absl::OkStatus();
       }},
      {"--max-spool-bytes", true,
       [&r](absl::string_view v) {
         uint64_t n = 0;
         HURRAY_RETURN_IF_ERROR(
             ParseUint(v, 1, stream::ingest::kMaxSpoolBytesLimit,
                       absl::StrCat("--max-spool-bytes needs a byte count "
                                    "from 1 to ",
                                    stream::ingest::kMaxSpoolBytesLimit),
                       &n));
         r.max_spooled_bytes = n;
         return absl::OkStatus();
       }},
      TextOption("--ca-file", &r.ca_file),
      {"--header", true,
       [&r](absl::string_view v) {
         absl::StatusOr<std::pair<std::string, std::string>> h =
             stream::http::ParseHeaderFlag(v);
         if (!h.ok()) return h.status();
         if (r.headers.size() >= stream::http::kMaxExtraHeaders) {
           return absl::InvalidArgumentError("too many --header options");
         }
         r.headers.push_back(*std::move(h));
         return absl::OkStatus();
       }},
      FlagOption("--insecure", &r.insecure),
      {"--tensors", true,
       [&r](absl::string_view v) {
         for (absl::string_view n : absl::StrSplit(v, ',')) {
           if (n.empty()) {
             return absl::InvalidArgumentError(
                 "--tensors needs names separated by commas");
           }
           r.tensors.emplace_back(n);
         }
         return absl::OkStatus();
       }},
      {"--idle-timeout", true,
       [&idle, &idle_given](absl::string_view v) {
         idle_given = true;
         return ParseSeconds("--idle-timeout", v, &idle);
       }},
      {"--connect-timeout", true,
       seconds("--connect-timeout", &r.connect_timeout_seconds)},
      {"--total-timeout", true,
       seconds("--total-timeout", &r.total_timeout_seconds)},
      {"--connections", true,
       [&r](absl::string_view v) {
         uint64_t n = 0;
         HURRAY_RETURN_IF_ERROR(
             ParseUint(v, 1, stream::http::kMaxConnections,
                       absl::StrCat("--connections needs a count from 1 to ",
                                    stream::http::kMaxConnections),
                       &n));
         r.connections = static_cast<int>(n);
         return absl::OkStatus();
       }},
  };
  std::vector<OptionSpec> options = CommonOptions(&common, /*allow_json=*/true);
  options.insert(options.end(), std::begin(own), std::end(own));
  std::vector<std::string> sources;
  HURRAY_RETURN_IF_ERROR(ParseArgTable(args, options, &sources));
  if (idle_given) r.idle_timeout_seconds = idle;
  a.help = common.help;
  a.json = common.json;
  r.parse = common.options;
  if (a.help) return a;
  if (sources.size() != 1) {
    return absl::InvalidArgumentError("needs exactly one SOURCE");
  }
  a.source = sources[0];
  absl::StatusOr<stream::ingest::IngestSource> s =
      stream::ingest::ParseSource(a.source);
  if (!s.ok()) return s.status();
  r.source = *std::move(s);
  HURRAY_RETURN_IF_ERROR(stream::ingest::CheckRequest(r));
  return a;
}

// STREAM-IO (the source failed: cannot open or read, idle timeout,
// cancelled) says nothing about the input: an I/O error, exit 2.
int ExitCodeOf(const absl::Status& s) {
  if (s.ok()) return kExitOk;
  const std::optional<absl::string_view> rule = RuleIdOf(s);
  return rule.has_value() && *rule != "STREAM-IO" ? kExitRejected : kExitError;
}

// The progress line and the library's notices, on stderr.
class CliObserver final : public stream::ingest::IngestObserver {
 public:
  explicit CliObserver(std::ostream& err) : err_(err), progress_(err) {}
  void OnProgress(const stream::ingest::IngestProgress& p) override {
    progress_.Update(p);
  }
  void OnNotice(absl::string_view text) override {
    err_ << "hurray ingest: " << TerminalSafe(text) << "\n";
  }
  void Done() { progress_.Done(); }

 private:
  std::ostream& err_;
  ProgressLine progress_;
};

}  // namespace

double IdleTimeoutFor(absl::string_view source, std::optional<double> flag) {
  absl::StatusOr<stream::ingest::IngestSource> s =
      stream::ingest::ParseSource(source);
  if (!s.ok()) return flag.value_or(0);
  return stream::ingest::IdleTimeoutFor(*s, flag);
}

int RunIngest(absl::Span<const std::string> args, std::ostream& out,
              std::ostream& err) {
  absl::StatusOr<IngestArgs> parsed = ParseArgs(args);
  if (!parsed.ok()) {
    // UsageError escapes the message: it may quote an argument (an option,
    // a URL).
    return UsageError("ingest", parsed.status().message(), err);
  }
  if (parsed->help) {
    PrintCommandHelp("ingest", out);
    return kExitOk;
  }
  const IngestArgs& a = *parsed;
  CliObserver observer(err);
  absl::StatusOr<stream::ingest::IngestReport> report =
      stream::ingest::Ingest(a.request, &observer);
  observer.Done();
  if (!report.ok()) {
    // Before the first byte: as the other commands say it.
    PrintError(a.source, report.status(), err);
    return kExitError;
  }
  const bool ranges =
      !a.request.tensors.empty() &&
      a.request.source.kind != stream::ingest::IngestSource::Kind::kTcp;
  PrintReport(*report, a.json, ranges ? "bytes read" : "bytes", out, err);
  out.flush();
  const int code = ExitCodeOf(report->status);
  return !report->state_status.ok() && code == kExitOk ? kExitError : code;
}

}  // namespace hurray::tools
