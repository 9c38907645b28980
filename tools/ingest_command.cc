#include "tools/ingest_command.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <system_error>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "parser/rules.h"
#include "stream/container/file_format.h"
#include "stream/container/hrry_mmap.h"
#include "stream/ingest/consumers.h"
#include "stream/ingest/http_body.h"
#include "stream/ingest/http_ranges.h"
#include "stream/ingest/http_url.h"
#include "stream/ingest/ingest_state.h"
#include "stream/ingest/loader.h"
#include "stream/ingest/output/element_convert.h"
#include "stream/ingest/partial_hrry.h"
#include "stream/ingest/resume_check_sink.h"
#include "stream/ingest/resume_source.h"
#include "stream/ingest/selecting_sink.h"
#include "stream/net/client_session.h"
#include "tools/command_util.h"
#include "tools/display_text.h"
#include "tools/json_writer.h"

namespace hurray::tools {
namespace {

using stream::Checkpoint;
using stream::IngestState;
using stream::TensorRecord;

struct IngestArgs {
  std::string source;
  std::optional<std::string> out_dir;
  std::optional<std::string> state_file;
  size_t chunk_size = size_t{1} << 20;
  std::optional<double> idle_timeout;  // --idle-timeout
  double connect_timeout = kConnectTimeoutSeconds;
  double total_timeout = 0;  // --total-timeout (HTTP(S)); 0: none
  // HTTP(S): --ca-file, --header, --insecure.
  std::string ca_file;
  std::vector<std::pair<std::string, std::string>> headers;
  bool insecure = false;
  // --tensors a,b,...: only these (a .hrry file or URL; tcp:// keys).
  std::vector<std::string> tensors;
  bool json = false;
  ParseOptions options;
  stream::OutputFormat format = stream::OutputFormat::kNpy;
  stream::OutputDtype dtype = stream::OutputDtype::kAuto;
  uint64_t max_dense_bytes = uint64_t{1} << 30;
  stream::SparseOutput sparse = stream::SparseOutput::kDense;
  NetLimits net_limits;  // tcp://: --max-open-streams, --max-spool-bytes
};

absl::StatusOr<IngestArgs> ParseArgs(absl::Span<const std::string> args,
                                     bool* help) {
  IngestArgs a;
  std::vector<std::string> rest;
  std::vector<std::string> sources;
  bool options_done = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    const bool has_value = i + 1 < args.size();
    if (!options_done && arg == "-") {
      sources.push_back(arg);
    } else if (!options_done && arg == "--") {
      options_done = true;
    } else if (options_done || arg.empty() || arg[0] != '-') {
      sources.push_back(arg);
    } else if (arg == "--dequant" && has_value) {
      a.out_dir = args[++i];
    } else if (arg == "--resume" && has_value) {
      a.state_file = args[++i];
    } else if (arg == "--format" && has_value) {
      absl::StatusOr<stream::OutputFormat> f =
          stream::ParseOutputFormat(args[++i]);
      if (!f.ok()) return f.status();
      a.format = *f;
    } else if (arg == "--max-dense-bytes" && has_value) {
      if (!absl::SimpleAtoi(args[++i], &a.max_dense_bytes)) {
        return absl::InvalidArgumentError(
            "--max-dense-bytes needs a byte count");
      }
    } else if (arg == "--sparse" && has_value) {
      const std::string& v = args[++i];
      if (v == "dense") {
        a.sparse = stream::SparseOutput::kDense;
      } else if (v == "keep") {
        a.sparse = stream::SparseOutput::kKeep;
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat("--sparse: '", v, "' is not dense or keep"));
      }
    } else if (arg == "--dtype" && has_value) {
      absl::StatusOr<stream::OutputDtype> d =
          stream::ParseOutputDtype(args[++i]);
      if (!d.ok()) return d.status();
      a.dtype = *d;
    } else if (arg == "--chunk-size" && has_value) {
      uint64_t n = 0;
      if (!absl::SimpleAtoi(args[++i], &n) || n == 0 || n > (1u << 30)) {
        return absl::InvalidArgumentError(
            "--chunk-size needs a byte count from 1 to 1073741824");
      }
      a.chunk_size = static_cast<size_t>(n);
    } else if (arg == "--max-open-streams" && has_value) {
      uint32_t n = 0;
      if (!absl::SimpleAtoi(args[++i], &n) || n == 0 ||
          n > kMaxOpenStreamsFlag) {
        return absl::InvalidArgumentError(
            absl::StrCat("--max-open-streams needs a count from 1 to ",
                         kMaxOpenStreamsFlag));
      }
      a.net_limits.max_open_streams = n;
    } else if (arg == "--max-spool-bytes" && has_value) {
      uint64_t n = 0;
      if (!absl::SimpleAtoi(args[++i], &n) || n == 0 ||
          n > kMaxSpoolBytesFlag) {
        return absl::InvalidArgumentError(
            absl::StrCat("--max-spool-bytes needs a byte count from 1 to ",
                         kMaxSpoolBytesFlag));
      }
      a.net_limits.max_spooled_bytes = n;
    } else if (arg == "--ca-file" && has_value) {
      a.ca_file = args[++i];
    } else if (arg == "--header" && has_value) {
      absl::StatusOr<std::pair<std::string, std::string>> h =
          stream::ParseHeaderFlag(args[++i]);
      if (!h.ok()) return h.status();
      if (a.headers.size() >= stream::kMaxExtraHeaders) {
        return absl::InvalidArgumentError("too many --header options");
      }
      a.headers.push_back(*std::move(h));
    } else if (arg == "--insecure") {
      a.insecure = true;
    } else if (arg == "--tensors" && has_value) {
      for (absl::string_view n : absl::StrSplit(args[++i], ',')) {
        if (n.empty()) {
          return absl::InvalidArgumentError(
              "--tensors needs names separated by commas");
        }
        a.tensors.emplace_back(n);
      }
    } else if ((arg == "--idle-timeout" || arg == "--connect-timeout" ||
                arg == "--total-timeout") &&
               has_value) {
      double seconds = 0;
      if (!absl::SimpleAtod(args[++i], &seconds) || !(seconds >= 0) ||
          seconds > 1e6) {
        return absl::InvalidArgumentError(
            absl::StrCat(arg, " needs a number of seconds"));
      }
      if (arg == "--idle-timeout") {
        a.idle_timeout = seconds;
      } else if (arg == "--total-timeout") {
        a.total_timeout = seconds;
      } else {
        a.connect_timeout = seconds;
      }
    } else if (arg == "--agree" && has_value) {
      rest.push_back(arg);
      rest.push_back(args[++i]);
    } else if (arg == "--dequant" || arg == "--resume" || arg == "--format" ||
               arg == "--dtype" || arg == "--max-dense-bytes" ||
               arg == "--sparse" || arg == "--chunk-size" ||
               arg == "--idle-timeout" || arg == "--connect-timeout" ||
               arg == "--total-timeout" || arg == "--ca-file" ||
               arg == "--header" || arg == "--tensors" ||
               arg == "--max-open-streams" || arg == "--max-spool-bytes") {
      return absl::InvalidArgumentError(absl::StrCat(arg, " needs a value"));
    } else {
      rest.push_back(arg);
    }
  }
  // --permissive, --agree, --json, --help; a placeholder stands for SOURCE.
  rest.push_back("--");
  rest.push_back("SOURCE");
  absl::StatusOr<CommandArgs> common =
      ParseCommandArgs(rest, /*allow_json=*/true);
  if (!common.ok()) return common.status();
  *help = common->help;
  if (common->files.size() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("unexpected argument '", common->files[0], "'"));
  }
  a.json = common->json;
  a.options = common->options;
  if (*help) return a;
  if (sources.size() != 1) {
    return absl::InvalidArgumentError("needs exactly one SOURCE");
  }
  a.source = sources[0];
  absl::Status fd = stream::CheckFormatAndDtype(a.format, a.dtype);
  if (!fd.ok()) return fd;
  if (a.format == stream::OutputFormat::kSafetensors &&
      a.state_file.has_value()) {
    return absl::InvalidArgumentError(
        "--format safetensors cannot be resumed (model.safetensors is "
        "written whole at the end): use --format npy with --resume");
  }
  if (a.source == "-" && a.state_file.has_value()) {
    return absl::InvalidArgumentError("standard input cannot be resumed");
  }
  if (!a.tensors.empty() && a.state_file.has_value()) {
    return absl::InvalidArgumentError(
        "--tensors cannot be resumed (--resume reads the whole input)");
  }
  if (!stream::IsHttpUrl(a.source) &&
      (!a.ca_file.empty() || !a.headers.empty() || a.insecure ||
       a.total_timeout > 0)) {
    return absl::InvalidArgumentError(
        "--ca-file, --header, --insecure and --total-timeout are for "
        "http:// and https:// sources");
  }
  if (!absl::StartsWith(a.source, "tcp://") &&
      (a.net_limits.max_open_streams.has_value() ||
       a.net_limits.max_spooled_bytes.has_value())) {
    return absl::InvalidArgumentError(
        "--max-open-streams and --max-spool-bytes are for tcp:// sources");
  }
  return a;
}

// STREAM-IO (the source failed: cannot open or read, idle timeout,
// cancelled) says nothing about the input: an I/O error, exit 2.
int ExitCodeOf(const absl::Status& s) {
  if (s.ok()) return kExitOk;
  const std::optional<absl::string_view> rule = RuleIdOf(s);
  return rule.has_value() && *rule != "STREAM-IO" ? kExitRejected : kExitError;
}

// Progress on a terminal, at most ten times a second.
class ProgressLine {
 public:
  explicit ProgressLine(std::ostream& err)
      : err_(err), enabled_(::isatty(STDERR_FILENO) == 1) {}
  // The input's size when known (an HTTP Content-Length, for the ETA) and
  // the bytes a resumed run skipped.
  void SetTotal(uint64_t total, uint64_t skipped) {
    total_ = total;
    skipped_ = skipped;
  }
  void Update(const stream::LoadProgress& p) {
    if (!enabled_) return;
    const auto now = std::chrono::steady_clock::now();
    if (shown_ && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    shown_ = true;
    const double mb = static_cast<double>(p.bytes + skipped_) / 1e6;
    const double rate = p.elapsed_seconds > 0 ? static_cast<double>(p.bytes) /
                                                    1e6 / p.elapsed_seconds
                                              : 0;
    std::string line = absl::StrFormat("\r%10.1f MB", mb);
    if (total_ > 0) {
      absl::StrAppendFormat(&line, " of %.1f MB",
                            static_cast<double>(total_) / 1e6);
    }
    absl::StrAppendFormat(&line, "  %6d tensors  %8.1f MB/s", p.tensors, rate);
    if (total_ > 0 && rate > 0 && p.bytes + skipped_ <= total_) {
      const double left =
          static_cast<double>(total_ - p.bytes - skipped_) / 1e6 / rate;
      absl::StrAppendFormat(&line, "  ETA %4.0f s", left);
    }
    err_ << line << std::flush;
  }
  void Done() {
    if (shown_) err_ << "\n" << std::flush;
  }

 private:
  std::ostream& err_;
  bool enabled_;
  bool shown_ = false;
  uint64_t total_ = 0, skipped_ = 0;
  std::chrono::steady_clock::time_point last_;
};

// Names (and verdicts, which may quote the input) through TerminalSafe;
// the name column is capped.
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

void PrintJson(const IngestArgs& a, const absl::Status& status, uint64_t bytes,
               const std::vector<TensorRecord>& records, std::ostream& out) {
  std::string line;
  JsonWriter w(&line);
  w.BeginObject();
  w.Key("source").String(a.source);
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
  w.Key("bytes").Uint(bytes);
  w.Key("tensors").BeginArray();
  for (const TensorRecord& r : records) {
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

}  // namespace

absl::StatusOr<std::unique_ptr<stream::NetClientSession>> MakeNetConsumer(
    const std::vector<std::string>& names, const ParseOptions& options,
    stream::IngestSink* sink, const NetLimits& limits) {
  if (names.empty()) {
    return absl::InvalidArgumentError("no tensor names to request");
  }
  stream::NetClientOptions o;
  o.parse = options;
  o.keys = names;
  if (limits.max_open_streams.has_value()) {
    o.max_open_streams = *limits.max_open_streams;
  }
  if (limits.max_spooled_bytes.has_value()) {
    o.max_spooled_bytes = *limits.max_spooled_bytes;
  }
  return std::make_unique<stream::NetClientSession>(o, sink);
}

namespace {

// Keeps the bytes of a tensor's data buffer (bounded): the listing, the
// identity.
class ListingSink : public stream::IngestSink {
 public:
  ListingSink(absl::string_view what, size_t max_bytes)
      : what_(what), max_bytes_(max_bytes) {}
  absl::Status OnBufferPiece(uint32_t buffer_index, uint64_t,
                             absl::Span<const uint8_t> piece) override {
    if (buffer_index != 0) return absl::OkStatus();
    if (bytes.size() + piece.size() > max_bytes_) {
      status_ = absl::ResourceExhaustedError(absl::StrCat(
          "the server's ", what_, " is over ", max_bytes_, " bytes"));
      return status_;
    }
    bytes.insert(bytes.end(), piece.begin(), piece.end());
    return absl::OkStatus();
  }
  absl::Status status() const override { return status_; }
  bool overflowed() const { return !status_.ok(); }

  static constexpr size_t kMaxListingBytes = size_t{64} << 20;
  std::vector<uint8_t> bytes;

 private:
  std::string what_;
  size_t max_bytes_;
  absl::Status status_;
};

// The loader options of a run: --chunk-size and the deadlines every
// connection of it honours (idle, connect).
stream::LoaderOptions LoaderOptionsOf(const IngestArgs& a) {
  stream::LoaderOptions lo;
  lo.chunk_size = a.chunk_size;
  lo.idle_timeout_seconds = IdleTimeoutFor(a.source, a.idle_timeout);
  lo.connect_timeout_seconds = a.connect_timeout;
  return lo;
}

// One session of its own that requests `key` alone into `sink`: the
// server's conventions (the listing, the identity). The session's status.
absl::Status FetchKey(absl::string_view key, ListingSink* sink,
                      const stream::LoadSource& source, const IngestArgs& a) {
  absl::StatusOr<std::unique_ptr<stream::NetClientSession>> c =
      MakeNetConsumer({std::string(key)}, a.options, sink, a.net_limits);
  if (!c.ok()) return c.status();
  stream::Loader loader(LoaderOptionsOf(a));
  return loader.Run(source, c->get()).status;
}

// The server's tensor names (the `hurray:list` key, docs/network.md).
absl::StatusOr<std::vector<std::string>> FetchNames(
    const stream::LoadSource& source, const IngestArgs& a) {
  ListingSink sink("tensor list", ListingSink::kMaxListingBytes);
  HURRAY_RETURN_IF_ERROR(FetchKey(stream::kListKey, &sink, source, a));
  return stream::ParseTensorList(sink.bytes);
}

// What the server says identifies the file it serves (the `hurray:identity`
// key, docs/network.md § Identity); nullopt when it does not say: ERROR
// UNKNOWN_TENSOR (another server, or an older one), or an answer that is
// not one (over 1024 bytes, not printable ASCII). A resumed run that
// recorded an identity refuses a nullopt.
absl::StatusOr<std::optional<std::string>> FetchIdentity(
    const stream::LoadSource& source, const IngestArgs& a) {
  ListingSink sink("identity", stream::kMaxServerIdentityBytes);
  const absl::Status s = FetchKey(stream::kIdentityKey, &sink, source, a);
  if (s.code() == absl::StatusCode::kNotFound || sink.overflowed()) {
    return std::optional<std::string>();
  }
  if (!s.ok()) return s;
  std::string id(sink.bytes.begin(), sink.bytes.end());
  if (!stream::IsServerIdentity(id)) return std::optional<std::string>();
  return std::optional<std::string>(std::move(id));
}

}  // namespace

namespace {

// What binds a resume state to an HTTP object: a strong ETag, else the
// Last-Modified date (weak ETags cannot be used in If-Range, RFC 9110
// 13.1.5); none when the server gave neither (the run cannot be resumed).
std::optional<stream::HttpValidator> ValidatorOf(
    const stream::HttpResponseInfo& info) {
  std::string v;
  if (!info.etag.empty() && !absl::StartsWith(info.etag, "W/")) {
    v = info.etag;
  } else {
    v = info.last_modified;
  }
  if (v.empty() || v.size() > stream::kMaxValidatorBytes) return std::nullopt;
  for (char ch : v) {
    if (ch < 0x20 || ch > 0x7e) return std::nullopt;
  }
  return stream::HttpValidator{v, info.object_size.value_or(0)};
}

// A resumed HTTP(S) run asks for the bytes after the checkpoint with
// If-Range: a 200 (the whole object) means it changed since the state was
// written, which is refused before anything in OUT is touched.
absl::Status OpenResumedHttp(const stream::Url& url,
                             const stream::HttpOptions& http,
                             const IngestState& st,
                             std::unique_ptr<stream::HttpBody>* body) {
  if (!st.http.has_value()) {
    return absl::FailedPreconditionError(
        "the resume state does not identify the HTTP object (the server gave "
        "no ETag or Last-Modified): refusing to resume; remove the state file "
        "to start over");
  }
  std::optional<stream::HttpRange> range;
  if (st.checkpoint.offset > 0) {
    range = stream::HttpRange{st.checkpoint.offset, std::nullopt,
                              st.http->validator};
  }
  absl::StatusOr<std::unique_ptr<stream::HttpBody>> b =
      stream::HttpBody::Open(url, http, range);
  if (!b.ok()) return b.status();
  const stream::HttpResponseInfo& info = (*b)->info();
  // The same kind of validator as recorded: a strong ETag ("...") or a
  // date. A 206 without it relies on If-Range alone.
  const std::string& now_validator = absl::StartsWith(st.http->validator, "\"")
                                         ? info.etag
                                         : info.last_modified;
  if (range.has_value() && info.status != 206) {
    return absl::FailedPreconditionError(
        "the object changed on the server since the resume state was written "
        "(HTTP 200 to a ranged If-Range request): refusing to resume; remove "
        "the state file to start over");
  }
  if ((!now_validator.empty() && now_validator != st.http->validator) ||
      (info.object_size.has_value() && st.http->size != 0 &&
       *info.object_size != st.http->size)) {
    return absl::FailedPreconditionError(
        "the object changed on the server since the resume state was written "
        "(another ETag, Last-Modified or size): refusing to resume; remove "
        "the state file to start over");
  }
  *body = *std::move(b);
  return absl::OkStatus();
}

// The sink of a run (--dequant OUT or validate only).
absl::StatusOr<std::unique_ptr<stream::RecordingIngestSink>> MakeSink(
    const IngestArgs& a) {
  if (!a.out_dir.has_value()) {
    return std::make_unique<stream::ValidateSink>(a.options.mode);
  }
  std::error_code ec;
  std::filesystem::create_directories(*a.out_dir, ec);
  if (ec) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot create ", *a.out_dir, ": ", ec.message()));
  }
  stream::DequantSinkOptions o;
  o.out_dir = *a.out_dir;
  o.mode = a.options.mode;
  o.format = a.format;
  o.dtype = a.dtype;
  o.max_dense_bytes = a.max_dense_bytes;
  return std::make_unique<stream::DequantSink>(o);
}

bool StartsWithFileMagic(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[stream::kFileMagic.size()] = {};
  in.read(magic, sizeof magic);
  return in.gcount() == static_cast<std::streamsize>(sizeof magic) &&
         std::equal(stream::kFileMagic.begin(), stream::kFileMagic.end(),
                    magic);
}

// `--tensors a,b` from a .hrry file or URL, or in one forward pass (stdin,
// a server without range support): stream/ingest/partial_hrry.h,
// selecting_sink.h. A name the index lacks is exit 2 before OUT is created.
int RunSelected(const IngestArgs& a, bool is_http, const stream::Url& url,
                const stream::HttpOptions& http, std::ostream& out,
                std::ostream& err) {
  auto fail = [&err, &a](const absl::Status& s) {
    err << "hurray ingest: " << TerminalSafe(a.source) << ": "
        << TerminalSafe(s.message()) << "\n";
    return kExitError;
  };
  stream::FileOptions options;
  options.parse = a.options;
  options.verify_region = false;  // only the named tensors are read
  std::unique_ptr<stream::RecordingIngestSink> sink;
  absl::Status status;
  uint64_t bytes = 0;
  // The ranges path: metadata, names, then the tensors.
  auto read_ranges = [&](stream::RangeSource* src,
                         const stream::FileGeometry& g,
                         const stream::FileIndex& index,
                         const stream::KvSection& kv) -> std::optional<int> {
    absl::StatusOr<std::vector<const stream::IndexEntry*>> sel =
        stream::ResolveNames(index, a.tensors);
    if (!sel.ok()) return fail(sel.status());
    absl::StatusOr<std::unique_ptr<stream::RecordingIngestSink>> s =
        MakeSink(a);
    if (!s.ok()) return fail(s.status());
    sink = *std::move(s);
    stream::PartialReadStats stats;
    status = stream::ReadSelected(src, g, index, kv, *sel, options, sink.get(),
                                  &stats);
    bytes = stats.bytes_read;
    return std::nullopt;
  };
  std::unique_ptr<stream::HttpBody> whole;  // the forward pass, over HTTP
  bool forward = a.source == "-";
  if (is_http) {
    absl::StatusOr<stream::HttpRangeSource::Opened> opened =
        stream::HttpRangeSource::Open(url, http);
    if (!opened.ok()) return fail(opened.status());
    if (opened->ranges != nullptr) {
      stream::HttpRangeSource* src = opened->ranges.get();
      absl::StatusOr<std::unique_ptr<stream::HrryMetadata>> meta =
          stream::ReadHrryMetadata(src, options);
      if (!meta.ok()) {
        status = meta.status();
      } else if (std::optional<int> code = read_ranges(
                     src, (*meta)->geometry, (*meta)->index, (*meta)->kv)) {
        return *code;
      }
      bytes = src->bytes_received();
    } else {
      whole = std::move(opened->whole);
      forward = true;
      err << "hurray ingest: " << TerminalSafe(a.source)
          << ": the server does not serve byte ranges: reading the whole "
             "file once, keeping only the named tensors\n";
    }
  } else if (!forward) {
    if (!StartsWithFileMagic(a.source)) {
      return UsageError("ingest",
                        "--tensors needs a .hrry file (or a URL of one)", err);
    }
    absl::StatusOr<std::unique_ptr<stream::HrryFile>> file =
        stream::HrryFile::Open(a.source, options);
    if (!file.ok()) {
      if (!RuleIdOf(file.status()).has_value()) return fail(file.status());
      status = file.status();
    } else {
      stream::MemoryRangeSource src((*file)->bytes());
      if (std::optional<int> code = read_ranges(
              &src, (*file)->geometry(), (*file)->index(), (*file)->kv())) {
        return *code;
      }
    }
  }
  if (forward) {
    if (a.format == stream::OutputFormat::kSafetensors && a.out_dir) {
      return fail(absl::FailedPreconditionError(
          "--tensors with --format safetensors needs range requests (or a "
          "file): in one forward pass every tensor is written before the "
          "index names them"));
    }
    absl::StatusOr<std::unique_ptr<stream::RecordingIngestSink>> s =
        MakeSink(a);
    if (!s.ok()) return fail(s.status());
    sink = *std::move(s);
    stream::SelectingSink selecting(sink.get(), a.tensors);
    std::unique_ptr<stream::ByteConsumer> consumer = stream::MakeConsumer(
        stream::SourceFormat::kUnknown, options, &selecting, nullptr, nullptr);
    stream::Loader loader(LoaderOptionsOf(a));
    const stream::LoadResult r =
        loader.Run(whole != nullptr ? stream::LoadSource::Reader(whole.get())
                                    : stream::LoadSource::Fd(STDIN_FILENO),
                   consumer.get());
    status = r.status;
    bytes = r.bytes;
    // A name the index lacks: an error of the request, not of the file.
    if (!selecting.status().ok() && !RuleIdOf(selecting.status())) {
      status = selecting.status();
    }
  }
  static const std::vector<TensorRecord> kNone;
  const std::vector<TensorRecord>& records =
      sink != nullptr ? sink->records() : kNone;
  if (a.json) {
    PrintJson(a, status, bytes, records, out);
  } else {
    PrintTable(records, out);
    if (status.ok()) {
      out << a.source << ": OK (" << records.size() << " tensors, " << bytes
          << " bytes read)\n";
    } else if (RuleIdOf(status).has_value()) {
      out << a.source << ": " << TerminalSafe(status.message()) << "\n";
    }
  }
  if (!status.ok() && !RuleIdOf(status).has_value()) {
    err << "hurray ingest: " << TerminalSafe(a.source) << ": "
        << TerminalSafe(status.message()) << "\n";
  }
  out.flush();
  return ExitCodeOf(status);
}

}  // namespace

double IdleTimeoutFor(absl::string_view source, std::optional<double> flag) {
  if (flag.has_value()) return *flag;
  return absl::StartsWith(source, "tcp://") || stream::IsHttpUrl(source)
             ? kNetIdleTimeoutSeconds
             : 0;
}

int RunIngest(absl::Span<const std::string> args, std::ostream& out,
              std::ostream& err) {
  bool help = false;
  absl::StatusOr<IngestArgs> parsed = ParseArgs(args, &help);
  if (!parsed.ok()) return UsageError("ingest", parsed.status().message(), err);
  if (help) {
    PrintCommandHelp("ingest", out);
    return kExitOk;
  }
  const IngestArgs& a = *parsed;
  auto fail = [&err, &a](const absl::Status& s) {
    err << "hurray ingest: " << TerminalSafe(a.source) << ": "
        << TerminalSafe(s.message()) << "\n";
    return kExitError;
  };

  // HTTP(S) (issue 15): the URL and the client's options.
  const bool is_http = stream::IsHttpUrl(a.source);
  stream::Url url;
  stream::HttpOptions http;
  if (is_http) {
    absl::StatusOr<stream::Url> u = stream::ParseUrl(a.source);
    if (!u.ok()) return UsageError("ingest", u.status().message(), err);
    url = *std::move(u);
    http.headers = a.headers;
    http.ca_file = a.ca_file;
    http.insecure = a.insecure;
    http.connect_timeout_seconds = a.connect_timeout;
    http.idle_timeout_seconds = IdleTimeoutFor(a.source, a.idle_timeout);
    http.total_timeout_seconds = a.total_timeout;
    if (a.insecure) {
      err << "hurray ingest: warning: --insecure: the server's certificate "
             "and host name are NOT verified\n";
    }
  }
  std::unique_ptr<stream::HttpBody> body;
  std::optional<stream::HttpValidator> http_id;
  const bool is_net = absl::StartsWith(a.source, "tcp://");
  if (!a.tensors.empty() && !is_net) {
    return RunSelected(a, is_http, url, http, out, err);
  }

  // The sink.
  std::unique_ptr<stream::RecordingIngestSink> sink;
  if (a.out_dir.has_value()) {
    std::error_code ec;
    std::filesystem::create_directories(*a.out_dir, ec);
    if (ec) {
      return fail(absl::PermissionDeniedError(
          absl::StrCat("cannot create ", *a.out_dir, ": ", ec.message())));
    }
    stream::DequantSinkOptions o;
    o.out_dir = *a.out_dir;
    o.mode = a.options.mode;
    o.format = a.format;
    o.dtype = a.dtype;
    o.max_dense_bytes = a.max_dense_bytes;
    o.sparse = a.sparse;
    // A resumable run keeps finished .hrry outputs that wait for the index
    // when it is interrupted.
    o.keep_unnamed_outputs = a.state_file.has_value();
    sink = std::make_unique<stream::DequantSink>(o);
  } else {
    sink = std::make_unique<stream::ValidateSink>(a.options.mode);
  }

  // What the outputs are, recorded in the resume state ("" without
  // --dequant).
  const std::string outputs =
      a.out_dir.has_value()
          ? absl::StrCat(stream::OutputFormatName(a.format), "/",
                         stream::OutputDtypeName(a.dtype))
          : "";

  // Resume state. A file source is bound to its state by its identity and
  // the CRC-32C of the bytes consumed (stream/resume_source.h); both are
  // checked before anything in OUT is touched, and a mismatch is exit 2.
  std::optional<stream::SourceIdentity> identity;
  if (a.state_file.has_value() && !is_net && !is_http) {
    absl::StatusOr<stream::SourceIdentity> id = stream::IdentifyFile(a.source);
    if (id.ok()) identity = *id;
  }
  std::optional<IngestState> resumed;
  if (a.state_file.has_value()) {
    absl::StatusOr<IngestState> st = stream::LoadState(*a.state_file);
    if (st.ok()) {
      if (st->source != a.source || st->out_dir != a.out_dir.value_or("")) {
        return fail(absl::FailedPreconditionError(
            "the resume state belongs to another SOURCE or --dequant"));
      }
      if (st->outputs != outputs &&
          !(st->outputs.empty() && outputs == "f32/auto")) {
        return fail(absl::FailedPreconditionError(absl::StrCat(
            "the resume state was written with --format/--dtype ",
            st->outputs.empty() ? "f32/auto" : st->outputs,
            ", this run asks for ", outputs.empty() ? "f32/auto" : outputs)));
      }
      if (is_http) {
        absl::Status s = OpenResumedHttp(url, http, *st, &body);
        if (!s.ok()) return fail(s);
      } else if (!is_net) {
        if (!st->identity.has_value()) {
          return fail(absl::FailedPreconditionError(
              "the resume state does not identify its source file: refusing "
              "to resume; remove the state file to start over"));
        }
        absl::Status s = stream::CheckResumeSource(a.source, *st->identity,
                                                   st->checkpoint.offset,
                                                   st->checkpoint.crc32c);
        if (!s.ok()) return fail(s);
      }
      resumed = *std::move(st);
      absl::Status s = sink->Preload(resumed->records);
      if (!s.ok()) return fail(s);
    } else if (st.status().code() != absl::StatusCode::kNotFound) {
      return fail(st.status());
    }
  }

  // tcp:// with a resume state: what the server says identifies its file
  // (fetched below, before anything is requested), recorded in the state and
  // compared on resume.
  std::optional<std::string> server_id;

  stream::FileOptions options;
  options.parse = a.options;
  absl::Status state_error;
  stream::CheckpointFn checkpoint;
  if (a.state_file.has_value()) {
    checkpoint = [&](const Checkpoint& c) {
      if (!state_error.ok()) return;
      IngestState st;
      st.source = a.source;
      st.out_dir = a.out_dir.value_or("");
      st.outputs = outputs;
      st.identity = identity;
      st.http = http_id;
      st.checkpoint = c;
      st.records.assign(
          sink->records().begin(),
          sink->records().begin() +
              std::min<size_t>(c.tensors, sink->records().size()));
      state_error = stream::SaveState(*a.state_file, st);
    };
  }

  // The source and its consumer.
  stream::LoadSource source;
  std::vector<std::string> net_names;              // tcp://: the keys requested
  std::unique_ptr<stream::ResumeCheckSink> check;  // resumed tcp://
  const stream::NetClientSession* net_session = nullptr;
  size_t keys_before = 0;  // resumed tcp://: keys done before net_names[0]
  // The CRC-32C of each tensor's data binds a network state to the server's
  // tensors.
  if (is_net && a.state_file.has_value()) sink->set_record_data_crc(true);
  std::unique_ptr<stream::ByteConsumer> consumer;
  if (is_net) {
    const absl::string_view rest = absl::string_view(a.source).substr(6);
    const size_t slash = rest.find('/');
    const absl::string_view hostport = rest.substr(0, slash);
    const size_t colon = hostport.rfind(':');
    if (colon == absl::string_view::npos || colon == 0 ||
        colon + 1 == hostport.size()) {
      return UsageError("ingest", "tcp:// needs HOST:PORT", err);
    }
    std::string host(hostport.substr(0, colon));
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
      host = host.substr(1, host.size() - 2);
    }
    source =
        stream::LoadSource::Tcp(host, std::string(hostport.substr(colon + 1)));
    if (slash != absl::string_view::npos && slash + 1 < rest.size()) {
      net_names =
          absl::StrSplit(rest.substr(slash + 1), ',', absl::SkipEmpty());
    }
    if (!a.tensors.empty()) {
      if (!net_names.empty()) {
        return UsageError(
            "ingest", "names in the tcp:// URL and --tensors: give one", err);
      }
      net_names = a.tensors;
    }
    if (a.state_file.has_value()) {
      absl::StatusOr<std::optional<std::string>> id = FetchIdentity(source, a);
      if (!id.ok()) return fail(id.status());
      server_id = *std::move(id);
      // A state that recorded the server's identity resumes only against
      // the same file; one without (an older client, or a server that does
      // not say) is checked by its last key alone (below).
      if (resumed.has_value() && resumed->server.has_value() &&
          server_id != resumed->server) {
        return fail(absl::FailedPreconditionError(absl::StrCat(
            "the server's file changed since the resume state was written "
            "(hurray:identity was '",
            *resumed->server, "', is ",
            server_id.has_value() ? absl::StrCat("'", *server_id, "'")
                                  : "not given",
            "): refusing to resume; remove the state file to start over")));
      }
    }
    if (resumed.has_value()) {
      net_names = resumed->remaining_names;
      // The last completed key is fetched again, first, and compared with
      // its records before anything new is written (resume_check_sink.h).
      const size_t from = stream::LastKeyStart(resumed->records);
      if (from < resumed->records.size()) {
        check = std::make_unique<stream::ResumeCheckSink>(
            std::vector<TensorRecord>(resumed->records.begin() + from,
                                      resumed->records.end()),
            sink.get());
        net_names.insert(net_names.begin(), resumed->records[from].name);
        keys_before = stream::CountKeys(resumed->records) - 1;
      }
    } else if (net_names.empty()) {
      absl::StatusOr<std::vector<std::string>> listed = FetchNames(source, a);
      if (!listed.ok()) return fail(listed.status());
      net_names = *std::move(listed);
    }
    if (!net_names.empty()) {
      absl::StatusOr<std::unique_ptr<stream::NetClientSession>> net =
          MakeNetConsumer(net_names, a.options,
                          check != nullptr
                              ? static_cast<stream::IngestSink*>(check.get())
                              : sink.get(),
                          a.net_limits);
      if (!net.ok()) return fail(net.status());
      net_session = net->get();
      consumer = *std::move(net);
    }
  } else {
    const Checkpoint* resume =
        resumed.has_value() ? &resumed->checkpoint : nullptr;
    consumer = stream::MakeConsumer(stream::SourceFormat::kUnknown, options,
                                    sink.get(), resume, checkpoint);
    if (is_http) {
      if (body == nullptr) {
        absl::StatusOr<std::unique_ptr<stream::HttpBody>> b =
            stream::HttpBody::Open(url, http);
        if (!b.ok()) return fail(b.status());
        body = *std::move(b);
      }
      http_id = ValidatorOf(body->info());
      if (resumed.has_value() && resumed->http.has_value()) {
        http_id = resumed->http;
      }
      source = stream::LoadSource::Reader(body.get());
    } else {
      source = a.source == "-" ? stream::LoadSource::Fd(STDIN_FILENO)
                               : stream::LoadSource::File(
                                     a.source, resume ? resume->offset : 0);
    }
  }

  stream::LoaderOptions lo = LoaderOptionsOf(a);
  ProgressLine progress(err);
  if (body != nullptr && body->info().object_size.has_value()) {
    progress.SetTotal(*body->info().object_size,
                      resumed.has_value() ? resumed->checkpoint.offset : 0);
  }
  const stream::NetClientSession* net = net_session;
  const stream::ByteConsumer* c = consumer.get();
  lo.tensors_completed = [c, net] {
    return net != nullptr ? net->tensors_completed()
                          : stream::TensorsCompleted(*c);
  };
  // Network resume: after each chunk that completed keys, the keys left and
  // the records of the completed ones.
  size_t keys_saved = 0;
  lo.on_progress = [&](const stream::LoadProgress& p) {
    progress.Update(p);
    if (net == nullptr || !a.state_file.has_value() || !state_error.ok() ||
        net->keys_completed() == keys_saved) {
      return;
    }
    keys_saved = net->keys_completed();
    IngestState st;
    st.source = a.source;
    st.out_dir = a.out_dir.value_or("");
    st.outputs = outputs;
    st.server = server_id;
    st.remaining_names.assign(net_names.begin() + keys_saved, net_names.end());
    // The records of the completed keys only (a key's members may be
    // complete while the key is not).
    const size_t keep =
        stream::RecordsOfKeys(sink->records(), keys_before + keys_saved);
    for (size_t i = 0; i < keep; ++i) {
      const TensorRecord& r = sink->records()[i];
      if (!r.complete) break;
      st.records.push_back(r);
    }
    st.checkpoint.tensors = st.records.size();
    state_error = stream::SaveState(*a.state_file, st);
  };
  stream::Loader loader(lo);
  stream::LoadResult result;
  if (consumer != nullptr) {
    result = loader.Run(source, consumer.get());
  }  // else: a resumed network ingest with nothing left to fetch
  progress.Done();
  absl::Status status = result.status;
  const uint64_t total_bytes =
      result.bytes + (resumed.has_value() ? resumed->checkpoint.offset : 0);

  if (a.json) {
    PrintJson(a, status, total_bytes, sink->records(), out);
  } else {
    PrintTable(sink->records(), out);
    if (status.ok()) {
      out << a.source << ": OK (" << sink->records().size() << " tensors, "
          << total_bytes << " bytes)\n";
    } else if (RuleIdOf(status).has_value()) {
      out << a.source << ": " << TerminalSafe(status.message()) << "\n";
    }
  }
  if (!status.ok() && !RuleIdOf(status).has_value()) {
    err << "hurray ingest: " << a.source << ": "
        << TerminalSafe(status.message()) << "\n";
  }
  if (!state_error.ok()) {
    err << "hurray ingest: " << TerminalSafe(state_error.message()) << "\n";
  }
  const int code = ExitCodeOf(status);
  // Finished, or rejected (the outputs waiting for a .hrry index were
  // removed with the verdict, and a rerun reaches the same one): nothing to
  // resume. unlink(2) removes a symlink, never its target.
  if (a.state_file.has_value() && code != kExitError) {
    ::unlink(a.state_file->c_str());
  }
  out.flush();
  return !state_error.ok() && code == kExitOk ? kExitError : code;
}

}  // namespace hurray::tools
