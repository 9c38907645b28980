// The request side of Ingest() (ingest.h): ParseSource, CheckRequest,
// IdleTimeoutFor and the report's accessors.
#include <unistd.h>

#include <optional>
#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "parser/rules.h"
#include "stream/http/http_body.h"
#include "stream/http/http_parallel.h"
#include "stream/ingest/ingest.h"
#include "stream/ingest/loader.h"

namespace hurray::stream::ingest {

IngestSource IngestSource::Fd(int fd, std::string label) {
  IngestSource s;
  s.kind = Kind::kFd;
  s.fd = fd;
  s.text = label.empty() ? absl::StrCat("fd:", fd) : std::move(label);
  return s;
}

void IngestCanceller::Cancel() {
  absl::MutexLock lock(&mu_);
  cancelled_ = true;
  if (loader_ != nullptr) loader_->Cancel();
}

bool IngestCanceller::cancelled() const {
  absl::MutexLock lock(&mu_);
  return cancelled_;
}

void IngestCanceller::Attach(Loader* loader) {
  absl::MutexLock lock(&mu_);
  loader_ = loader;
  if (loader_ != nullptr && cancelled_) loader_->Cancel();
}

IngestSource IngestSource::Reader(container::PullReader* reader,
                                  std::string label) {
  IngestSource s;
  s.kind = Kind::kReader;
  s.reader = reader;
  s.text = label.empty() ? "reader" : std::move(label);
  return s;
}

absl::StatusOr<IngestSource> ParseSource(absl::string_view text) {
  IngestSource s;
  s.text = std::string(text);
  if (text == "-") {
    s.kind = IngestSource::Kind::kStdin;
    s.fd = STDIN_FILENO;
    return s;
  }
  if (http::IsHttpUrl(text)) {
    absl::StatusOr<http::Url> u = http::ParseUrl(text);
    if (!u.ok()) return u.status();
    s.kind = IngestSource::Kind::kHttp;
    s.url = *std::move(u);
    return s;
  }
  if (absl::StartsWith(text, "tcp://")) {
    const absl::string_view rest = text.substr(6);
    const size_t slash = rest.find('/');
    const absl::string_view hostport = rest.substr(0, slash);
    const size_t colon = hostport.rfind(':');
    if (colon == absl::string_view::npos || colon == 0 ||
        colon + 1 == hostport.size()) {
      return absl::InvalidArgumentError("tcp:// needs HOST:PORT");
    }
    absl::string_view host = hostport.substr(0, colon);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
      host = host.substr(1, host.size() - 2);
    }
    s.kind = IngestSource::Kind::kTcp;
    s.host = std::string(host);
    s.port = std::string(hostport.substr(colon + 1));
    if (slash != absl::string_view::npos && slash + 1 < rest.size()) {
      s.keys = absl::StrSplit(rest.substr(slash + 1), ',', absl::SkipEmpty());
    }
    return s;
  }
  s.kind = IngestSource::Kind::kFile;
  s.path = std::string(text);
  return s;
}

bool IngestReport::rejected() const {
  const std::optional<absl::string_view> rule = RuleIdOf(status);
  return rule.has_value() && *rule != "STREAM-IO";
}

std::optional<std::string> IngestReport::rule_id() const {
  const std::optional<absl::string_view> rule = RuleIdOf(status);
  if (!rule.has_value()) return std::nullopt;
  return std::string(*rule);
}

uint64_t IngestReport::offset() const { return OffsetOf(status).value_or(0); }

double IdleTimeoutFor(const IngestSource& source,
                      std::optional<double> requested) {
  if (requested.has_value()) return *requested;
  return source.is_network() ? kDefaultNetIdleTimeoutSeconds : 0;
}

absl::Status CheckRequest(const IngestRequest& r) {
  using Kind = IngestSource::Kind;
  const Kind kind = r.source.kind;
  HURRAY_RETURN_IF_ERROR(CheckFormatAndDtype(r.format, r.dtype));
  if (r.chunk_size == 0 || r.chunk_size > (size_t{1} << 30)) {
    return absl::InvalidArgumentError(
        "the chunk size must be from 1 to 1073741824 bytes");
  }
  const bool resumable = !r.resume_file.empty();
  if (r.format == OutputFormat::kSafetensors && resumable &&
      !r.out_dir.empty()) {
    return absl::InvalidArgumentError(
        "--format safetensors cannot be resumed (model.safetensors is "
        "written whole at the end): use --format npy with --resume");
  }
  if (kind == Kind::kReader && r.source.reader == nullptr) {
    return absl::InvalidArgumentError("a reader source needs a reader");
  }
  if ((kind == Kind::kStdin || kind == Kind::kFd || kind == Kind::kReader) &&
      resumable) {
    return absl::InvalidArgumentError("standard input cannot be resumed");
  }
  if (!r.tensors.empty() && resumable) {
    return absl::InvalidArgumentError(
        "--tensors cannot be resumed (--resume reads the whole input)");
  }
  for (const std::string& n : r.tensors) {
    if (n.empty()) {
      return absl::InvalidArgumentError(
          "--tensors needs names separated by commas");
    }
  }
  if (kind == Kind::kTcp && !r.tensors.empty() && !r.source.keys.empty()) {
    return absl::InvalidArgumentError(
        "names in the tcp:// URL and --tensors: give one");
  }
  if (kind != Kind::kHttp && (!r.ca_file.empty() || !r.headers.empty() ||
                              r.insecure || r.total_timeout_seconds > 0)) {
    return absl::InvalidArgumentError(
        "--ca-file, --header, --insecure and --total-timeout are for "
        "http:// and https:// sources");
  }
  if (r.connections < 1 || r.connections > http::kMaxConnections) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--connections must be from 1 to ", http::kMaxConnections));
  }
  if (kind != Kind::kHttp && r.connections != 1) {
    return absl::InvalidArgumentError(
        "--connections is for http:// and https:// sources");
  }
  if (r.headers.size() > http::kMaxExtraHeaders) {
    return absl::InvalidArgumentError("too many --header options");
  }
  if (kind != Kind::kTcp &&
      (r.max_open_streams.has_value() || r.max_spooled_bytes.has_value())) {
    return absl::InvalidArgumentError(
        "--max-open-streams and --max-spool-bytes are for tcp:// sources");
  }
  if (r.max_open_streams.has_value() &&
      (*r.max_open_streams == 0 ||
       *r.max_open_streams > kMaxOpenStreamsLimit)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--max-open-streams needs a count from 1 to ", kMaxOpenStreamsLimit));
  }
  if (r.max_spooled_bytes.has_value() &&
      (*r.max_spooled_bytes == 0 ||
       *r.max_spooled_bytes > kMaxSpoolBytesLimit)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max-spool-bytes needs a byte count from 1 to ",
                     kMaxSpoolBytesLimit));
  }
  if (!r.dequantize &&
      (!r.out_dir.empty() || r.data == TensorData::kDequantized)) {
    return absl::InvalidArgumentError(
        "outputs and dequantized values need dequantize");
  }
  if (r.data == TensorData::kDequantized && !r.out_dir.empty() &&
      (r.format != OutputFormat::kF32 || r.dtype != OutputDtype::kFloat32)) {
    return absl::InvalidArgumentError(
        "dequantized values for the observer with an output directory need "
        "--format f32 --dtype float32 (or no output directory)");
  }
  return absl::OkStatus();
}

}  // namespace hurray::stream::ingest
