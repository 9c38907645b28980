#include "stream/ingest/ingest.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <functional>
#include <memory>
#include <system_error>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "parser/rules.h"
#include "stream/container/file_format.h"
#include "stream/container/hrry_mmap.h"
#include "stream/container/safe_output_dir.h"
#include "stream/http/http_body.h"
#include "stream/http/http_parallel.h"
#include "stream/http/http_ranges.h"
#include "stream/ingest/consumers.h"
#include "stream/ingest/loader.h"
#include "stream/ingest/observer_tap.h"
#include "stream/ingest/partial_hrry.h"
#include "stream/ingest/resume_check_sink.h"
#include "stream/ingest/selecting_sink.h"
#include "stream/ingest/values_buffer.h"
#include "stream/net/client_session.h"
#include "stream/resume/ingest_state.h"
#include "stream/resume/network_records.h"
#include "stream/resume/resume_source.h"

namespace hurray::stream::ingest {
namespace {

using container::Checkpoint;
using container::ContainerFormat;
using http::HttpBody;
using http::HttpOptions;
using http::HttpRange;
using http::HttpRangeSource;
using http::HttpResponseInfo;
using http::Url;
using resume::TensorRecord;

// --- The network client's own fetches -----------------------------------

// Keeps the bytes of a tensor's data buffer (bounded): the listing, the
// identity.
class ListingSink : public IngestSink {
 public:
  ListingSink(absl::string_view what, size_t max_bytes)
      : what_(what), max_bytes_(max_bytes) {}
  absl::Status OnBufferPiece(uint32_t buffer_index, uint64_t,
                             absl::Span<const uint8_t> piece) override {
    if (buffer_index != 0) return absl::OkStatus();
    if (bytes.size() + piece.size() > max_bytes_) {
      overflowed_ = true;
      return absl::ResourceExhaustedError(absl::StrCat(
          "the server's ", what_, " is over ", max_bytes_, " bytes"));
    }
    bytes.insert(bytes.end(), piece.begin(), piece.end());
    return absl::OkStatus();
  }
  bool overflowed() const { return overflowed_; }

  static constexpr size_t kMaxListingBytes = size_t{64} << 20;
  std::vector<uint8_t> bytes;

 private:
  std::string what_;
  size_t max_bytes_;
  bool overflowed_ = false;
};

std::unique_ptr<net::NetClientSession> MakeNetConsumer(
    const std::vector<std::string>& names, const IngestRequest& r,
    container::TensorSink* sink,
    std::function<void(size_t)> on_keys = nullptr) {
  net::NetClientOptions o;
  o.parse = r.parse;
  o.keys = names;
  if (r.max_open_streams.has_value()) o.max_open_streams = *r.max_open_streams;
  if (r.max_spooled_bytes.has_value()) {
    o.max_spooled_bytes = *r.max_spooled_bytes;
  }
  o.on_keys_completed = std::move(on_keys);
  return std::make_unique<net::NetClientSession>(o, sink);
}

// The loader options of a run: the chunk size and the deadlines every
// connection of it honours (idle, connect).
LoaderOptions LoaderOptionsOf(const IngestRequest& r) {
  LoaderOptions lo;
  lo.chunk_size = r.chunk_size;
  lo.idle_timeout_seconds = IdleTimeoutFor(r.source, r.idle_timeout_seconds);
  lo.connect_timeout_seconds = r.connect_timeout_seconds;
  return lo;
}

// One session of its own that requests `key` alone into `sink`: the
// server's conventions (the listing, the identity). The session's status.
absl::Status FetchKey(absl::string_view key, ListingSink* sink,
                      const LoadSource& source, const IngestRequest& r) {
  std::unique_ptr<net::NetClientSession> c =
      MakeNetConsumer({std::string(key)}, r, sink);
  Loader loader(LoaderOptionsOf(r));
  if (r.canceller != nullptr) r.canceller->Attach(&loader);
  const LoadResult result = loader.Run(source, c.get());
  if (r.canceller != nullptr) r.canceller->Attach(nullptr);
  return result.status;
}

// The server's tensor names (the `hurray:list` key, docs/network.md).
absl::StatusOr<std::vector<std::string>> FetchNames(const LoadSource& source,
                                                    const IngestRequest& r) {
  ListingSink sink("tensor list", ListingSink::kMaxListingBytes);
  HURRAY_RETURN_IF_ERROR(FetchKey(net::kListKey, &sink, source, r));
  return net::ParseTensorList(sink.bytes);
}

// What the server says identifies the file it serves (the `hurray:identity`
// key, docs/network.md § Identity); nullopt when it does not say: ERROR
// UNKNOWN_TENSOR (another server, or an older one), or an answer that is
// not one (over 1024 bytes, not printable ASCII). A resumed run that
// recorded an identity refuses a nullopt.
absl::StatusOr<std::optional<std::string>> FetchIdentity(
    const LoadSource& source, const IngestRequest& r) {
  ListingSink sink("identity", resume::kMaxServerIdentityBytes);
  const absl::Status s = FetchKey(net::kIdentityKey, &sink, source, r);
  if (s.code() == absl::StatusCode::kNotFound || sink.overflowed()) {
    return std::optional<std::string>();
  }
  if (!s.ok()) return s;
  std::string id(sink.bytes.begin(), sink.bytes.end());
  if (!resume::IsServerIdentity(id)) return std::optional<std::string>();
  return std::optional<std::string>(std::move(id));
}

// --- HTTP(S) --------------------------------------------------------------

// What binds a resume state to an HTTP object: a strong ETag, else the
// Last-Modified date (weak ETags cannot be used in If-Range, RFC 9110
// 13.1.5); none when the server gave neither (the run cannot be resumed).
std::optional<resume::HttpValidator> ValidatorOf(const HttpResponseInfo& info) {
  std::string v;
  if (!info.etag.empty() && !absl::StartsWith(info.etag, "W/")) {
    v = info.etag;
  } else {
    v = info.last_modified;
  }
  if (v.empty() || v.size() > resume::kMaxValidatorBytes) return std::nullopt;
  for (char ch : v) {
    if (ch < 0x20 || ch > 0x7e) return std::nullopt;
  }
  return resume::HttpValidator{v, info.object_size.value_or(0)};
}

// An HTTP(S) body as the loader reads it, and its first response.
struct HttpSource {
  std::unique_ptr<container::PullReader> reader;
  HttpResponseInfo info;
};

// One GET (connections 1, exactly as before issue 47), or the object over
// `connections` range requests at once (http_parallel.h).
absl::StatusOr<HttpSource> OpenHttp(const Url& url, const HttpOptions& http,
                                    int connections,
                                    const std::optional<HttpRange>& range) {
  HttpSource out;
  if (connections <= 1) {
    absl::StatusOr<std::unique_ptr<HttpBody>> b =
        HttpBody::Open(url, http, range);
    if (!b.ok()) return b.status();
    out.info = (*b)->info();
    out.reader = *std::move(b);
    return out;
  }
  http::ParallelOptions parallel;
  parallel.connections = connections;
  absl::StatusOr<std::unique_ptr<http::ParallelHttpBody>> p =
      http::ParallelHttpBody::Open(
          url, http, parallel, range.has_value() ? range->first : 0,
          range.has_value() ? range->if_range : std::string());
  if (!p.ok()) return p.status();
  out.info = (*p)->info();
  out.reader = *std::move(p);
  return out;
}

// A resumed HTTP(S) run asks for the bytes after the checkpoint with
// If-Range: a 200 (the whole object) means it changed since the state was
// written, which is refused before anything in OUT is touched.
absl::StatusOr<HttpSource> OpenResumedHttp(const Url& url,
                                           const HttpOptions& http,
                                           int connections,
                                           const resume::IngestState& st) {
  if (!st.http.has_value()) {
    return absl::FailedPreconditionError(
        "the resume state does not identify the HTTP object (the server gave "
        "no ETag or Last-Modified): refusing to resume; remove the state file "
        "to start over");
  }
  std::optional<HttpRange> range;
  if (st.checkpoint.offset > 0) {
    range = HttpRange{st.checkpoint.offset, std::nullopt, st.http->validator};
  }
  absl::StatusOr<HttpSource> b = OpenHttp(url, http, connections, range);
  if (!b.ok()) return b.status();
  const HttpResponseInfo& info = b->info;
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
  return b;
}

HttpOptions HttpOptionsOf(const IngestRequest& r) {
  HttpOptions http;
  http.headers = r.headers;
  http.ca_file = r.ca_file;
  http.insecure = r.insecure;
  http.connect_timeout_seconds = r.connect_timeout_seconds;
  http.idle_timeout_seconds = IdleTimeoutFor(r.source, r.idle_timeout_seconds);
  http.total_timeout_seconds = r.total_timeout_seconds;
  return http;
}

// --- Files ----------------------------------------------------------------

// A path that cannot be opened fails before anything else, as the other
// commands say it ("cannot open: No such file or directory").
absl::Status CheckOpenable(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    return absl::ErrnoToStatus(errno, "cannot open");
  }
  if (S_ISDIR(st.st_mode)) return absl::ErrnoToStatus(EISDIR, "cannot open");
  if (!S_ISREG(st.st_mode)) return absl::OkStatus();  // a FIFO may wait
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::ErrnoToStatus(errno, "cannot open");
  ::close(fd);
  return absl::OkStatus();
}

bool StartsWithFileMagic(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return false;
  uint8_t magic[container::kFileMagic.size()] = {};
  size_t got = 0;
  while (got < sizeof magic) {
    const ssize_t n = ::read(fd, magic + got, sizeof magic - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  return got == sizeof magic && std::equal(container::kFileMagic.begin(),
                                           container::kFileMagic.end(), magic);
}

// --- The run ----------------------------------------------------------------

class IngestRun {
 public:
  IngestRun(const IngestRequest& r, IngestObserver* observer)
      : r_(r), observer_(observer) {
    report_.source = r.source.text;
  }

  absl::StatusOr<IngestReport> Go();

 private:
  absl::Status MakeSink();
  absl::Status LoadResume();
  absl::StatusOr<IngestReport> RunSelected();
  absl::Status SetUpNet();
  absl::Status SetUpStream();
  void SaveFileCheckpoint(const Checkpoint& c);
  void SaveNetCheckpoint(size_t keys_done);
  void Notice(absl::string_view text) { observer_->OnNotice(text); }
  // The sink the reader reports to: the observer's tap in front of `next`.
  IngestSink* Tap(IngestSink* next, std::function<void()> cancel);

  const IngestRequest& r_;
  IngestObserver* observer_;
  IngestReport report_;

  ScratchDir scratch_;
  std::unique_ptr<ValuesBuffer> values_;
  std::unique_ptr<container::SafeOutputDir> values_dir_;
  std::unique_ptr<RecordingIngestSink> sink_;
  std::unique_ptr<ObserverTap> tap_;
  std::string outputs_;  // "npy/auto", "" without outputs

  HttpOptions http_;
  std::unique_ptr<container::PullReader> body_;
  HttpResponseInfo body_info_;
  std::optional<resume::HttpValidator> http_id_;
  std::optional<resume::SourceIdentity> identity_;
  std::optional<resume::IngestState> resumed_;
  std::optional<std::string> server_id_;

  LoadSource source_;
  std::unique_ptr<container::ByteConsumer> consumer_;
  std::unique_ptr<ResumeCheckSink> check_;
  std::vector<std::string> net_names_;
  size_t keys_before_ = 0;
  // index_first met a source that is read forward after all (RunSelected
  // returned before reading a tensor).
  bool read_forward_ = false;
  Loader* loader_ = nullptr;
};

absl::Status IngestRun::MakeSink() {
  const bool values = r_.data == TensorData::kDequantized;
  if (!r_.dequantize) {
    sink_ = std::make_unique<ValidateSink>(r_.parse.mode);
    return absl::OkStatus();
  }
  DequantSinkOptions o;
  o.mode = r_.parse.mode;
  o.format = r_.format;
  o.dtype = r_.dtype;
  o.max_dense_bytes = r_.max_dense_bytes;
  o.sparse = r_.sparse;
  if (!r_.out_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(r_.out_dir, ec);
    if (ec) {
      return absl::PermissionDeniedError(
          absl::StrCat("cannot create ", r_.out_dir, ": ", ec.message()));
    }
    o.out_dir = r_.out_dir;
    // A resumable run keeps finished .hrry outputs that wait for the index
    // when it is interrupted.
    o.keep_unnamed_outputs = !r_.resume_file.empty();
  } else if (values) {
    // In memory (values_buffer.h); files only for what cannot be, in a
    // scratch directory that matters only then (IngestRequest::
    // max_values_bytes).
    values_ = std::make_unique<ValuesBuffer>(r_.max_values_bytes);
    o.values = values_.get();
    if (scratch_.Create(r_.scratch_dir).ok()) o.out_dir = scratch_.path();
    o.format = OutputFormat::kF32;
    o.dtype = OutputDtype::kFloat32;
    o.sparse = SparseOutput::kDense;
  } else {
    o.write_files = false;
  }
  if (values && !o.out_dir.empty()) {
    absl::StatusOr<std::unique_ptr<container::SafeOutputDir>> d =
        container::SafeOutputDir::Open(o.out_dir);
    if (!d.ok()) return d.status();
    values_dir_ = *std::move(d);
  }
  sink_ = std::make_unique<DequantSink>(o);
  return absl::OkStatus();
}

IngestSink* IngestRun::Tap(IngestSink* next, std::function<void()> cancel) {
  tap_ = std::make_unique<ObserverTap>(
      next, sink_.get(), observer_, r_, values_.get(), values_dir_.get(),
      /*remove_values=*/r_.out_dir.empty(), std::move(cancel));
  return tap_.get();
}

// Resume state. A file source is bound to its state by its identity and the
// CRC-32C of the bytes consumed (resume_source.h); both are checked before
// anything in OUT is touched.
absl::Status IngestRun::LoadResume() {
  const IngestSource::Kind kind = r_.source.kind;
  if (kind == IngestSource::Kind::kFile) {
    absl::StatusOr<resume::SourceIdentity> id =
        resume::IdentifyFile(r_.source.path);
    if (id.ok()) identity_ = *id;
  }
  absl::StatusOr<resume::IngestState> st = resume::LoadState(r_.resume_file);
  if (!st.ok()) {
    return st.status().code() == absl::StatusCode::kNotFound ? absl::OkStatus()
                                                             : st.status();
  }
  if (st->source != r_.source.text || st->out_dir != r_.out_dir) {
    return absl::FailedPreconditionError(
        "the resume state belongs to another SOURCE or --dequant");
  }
  if (st->outputs != outputs_ &&
      !(st->outputs.empty() && outputs_ == "f32/auto")) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the resume state was written with --format/--dtype ",
        st->outputs.empty() ? "f32/auto" : st->outputs, ", this run asks for ",
        outputs_.empty() ? "f32/auto" : outputs_));
  }
  if (kind == IngestSource::Kind::kHttp) {
    absl::StatusOr<HttpSource> b =
        OpenResumedHttp(r_.source.url, http_, r_.connections, *st);
    if (!b.ok()) return b.status();
    body_ = std::move(b->reader);
    body_info_ = std::move(b->info);
  } else if (kind == IngestSource::Kind::kFile) {
    if (!st->identity.has_value()) {
      return absl::FailedPreconditionError(
          "the resume state does not identify its source file: refusing "
          "to resume; remove the state file to start over");
    }
    HURRAY_RETURN_IF_ERROR(resume::CheckResumeSource(
        r_.source.path, *st->identity, st->checkpoint.offset,
        st->checkpoint.crc32c));
  }
  resumed_ = *std::move(st);
  return sink_->Preload(resumed_->records);
}

void IngestRun::SaveFileCheckpoint(const Checkpoint& c) {
  if (!report_.state_status.ok()) return;
  resume::IngestState st;
  st.source = r_.source.text;
  st.out_dir = r_.out_dir;
  st.outputs = outputs_;
  st.identity = identity_;
  st.http = http_id_;
  st.checkpoint = c;
  const std::vector<TensorRecord>& records = sink_->records();
  st.records.assign(
      records.begin(),
      records.begin() + std::min<size_t>(c.tensors, records.size()));
  report_.state_status = resume::SaveState(r_.resume_file, st);
  if (report_.state_status.ok()) {
    observer_->OnCheckpoint({c.offset, c.tensors, 0});
  }
}

// Network resume: after each completed key, the keys left and the records
// of the completed ones.
void IngestRun::SaveNetCheckpoint(size_t keys_done) {
  if (!report_.state_status.ok()) return;
  resume::IngestState st;
  st.source = r_.source.text;
  st.out_dir = r_.out_dir;
  st.outputs = outputs_;
  st.server = server_id_;
  keys_done = std::min(keys_done, net_names_.size());
  st.remaining_names.assign(net_names_.begin() + keys_done, net_names_.end());
  // The records of the completed keys only (a key's members may be
  // complete while the key is not).
  const std::vector<TensorRecord>& records = sink_->records();
  const size_t keep = resume::RecordsOfKeys(records, keys_before_ + keys_done);
  for (size_t i = 0; i < keep; ++i) {
    if (!records[i].complete) break;
    st.records.push_back(records[i]);
  }
  st.checkpoint.tensors = st.records.size();
  report_.state_status = resume::SaveState(r_.resume_file, st);
  if (report_.state_status.ok()) {
    observer_->OnCheckpoint(
        {0, st.checkpoint.tensors, st.remaining_names.size()});
  }
}

absl::Status IngestRun::SetUpNet() {
  const bool resumable = !r_.resume_file.empty();
  source_ = LoadSource::Tcp(r_.source.host, r_.source.port);
  net_names_ = r_.source.keys;
  if (!r_.tensors.empty()) net_names_ = r_.tensors;
  if (resumable) {
    absl::StatusOr<std::optional<std::string>> id = FetchIdentity(source_, r_);
    if (!id.ok()) return id.status();
    server_id_ = *std::move(id);
    // A state that recorded the server's identity resumes only against the
    // same file; one without (an older client, or a server that does not
    // say) is checked by its last key alone (below).
    if (resumed_.has_value() && resumed_->server.has_value() &&
        server_id_ != resumed_->server) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the server's file changed since the resume state was written "
          "(hurray:identity was '",
          *resumed_->server, "', is ",
          server_id_.has_value() ? absl::StrCat("'", *server_id_, "'")
                                 : "not given",
          "): refusing to resume; remove the state file to start over"));
    }
  }
  IngestSink* to = sink_.get();
  if (resumed_.has_value()) {
    net_names_ = resumed_->remaining_names;
    // The last completed key is fetched again, first, and compared with its
    // records before anything new is written (resume_check_sink.h).
    const size_t from = resume::LastKeyStart(resumed_->records);
    if (from < resumed_->records.size()) {
      check_ = std::make_unique<ResumeCheckSink>(
          std::vector<TensorRecord>(resumed_->records.begin() + from,
                                    resumed_->records.end()),
          sink_.get());
      to = check_.get();
      net_names_.insert(net_names_.begin(), resumed_->records[from].name);
      keys_before_ = resume::CountKeys(resumed_->records) - 1;
    }
  } else if (net_names_.empty()) {
    absl::StatusOr<std::vector<std::string>> listed = FetchNames(source_, r_);
    if (!listed.ok()) return listed.status();
    net_names_ = *std::move(listed);
  }
  if (net_names_.empty()) return absl::OkStatus();  // nothing left to fetch
  // The CRC-32C of each tensor's data binds a network state to the server's
  // tensors.
  if (resumable) sink_->set_record_data_crc(true);
  std::function<void(size_t)> on_keys;
  if (resumable) on_keys = [this](size_t done) { SaveNetCheckpoint(done); };
  std::unique_ptr<net::NetClientSession> net =
      MakeNetConsumer(net_names_, r_, Tap(to, [this] { loader_->Cancel(); }),
                      std::move(on_keys));
  consumer_ = std::move(net);
  return absl::OkStatus();
}

absl::Status IngestRun::SetUpStream() {
  container::FileOptions options;
  options.parse = r_.parse;
  const Checkpoint* resume =
      resumed_.has_value() ? &resumed_->checkpoint : nullptr;
  CheckpointFn checkpoint;
  if (!r_.resume_file.empty()) {
    checkpoint = [this](const Checkpoint& c) { SaveFileCheckpoint(c); };
  }
  consumer_ = MakeConsumer(ContainerFormat::kUnknown, options,
                           Tap(sink_.get(), [this] { loader_->Cancel(); }),
                           resume, checkpoint);
  switch (r_.source.kind) {
    case IngestSource::Kind::kHttp:
      if (body_ == nullptr) {
        absl::StatusOr<HttpSource> b =
            OpenHttp(r_.source.url, http_, r_.connections, std::nullopt);
        if (!b.ok()) return b.status();
        body_ = std::move(b->reader);
        body_info_ = std::move(b->info);
      }
      http_id_ = ValidatorOf(body_info_);
      if (resumed_.has_value() && resumed_->http.has_value()) {
        http_id_ = resumed_->http;
      }
      source_ = LoadSource::Reader(body_.get());
      break;
    case IngestSource::Kind::kStdin:
    case IngestSource::Kind::kFd:
      source_ = LoadSource::Fd(r_.source.fd);
      break;
    case IngestSource::Kind::kReader:
      source_ = LoadSource::Reader(r_.source.reader);
      break;
    default:
      source_ = LoadSource::File(r_.source.path, resume ? resume->offset : 0);
      break;
  }
  return absl::OkStatus();
}

// `tensors` from a .hrry file or URL by ranges, or in one forward pass
// (stdin, a server without range support): partial_hrry.h,
// selecting_sink.h. A name the index lacks fails before OUT is created.
absl::StatusOr<IngestReport> IngestRun::RunSelected() {
  container::FileOptions options;
  options.parse = r_.parse;
  options.verify_region = false;  // only the named tensors are read
  // The ranges path: metadata, names, then the tensors.
  auto read_ranges = [&](container::RangeSource* src,
                         const container::FileGeometry& g,
                         const container::FileIndex& index,
                         const container::KvSection& kv) -> absl::Status {
    std::vector<std::string> every;  // index_first: all, in file order
    if (r_.tensors.empty()) {
      std::vector<const container::IndexEntry*> all;
      for (const container::IndexEntry& e : index.entries()) all.push_back(&e);
      std::sort(all.begin(), all.end(), [](const auto* a, const auto* b) {
        return a->descriptor_offset < b->descriptor_offset;
      });
      for (const container::IndexEntry* e : all) every.emplace_back(e->name);
    }
    absl::StatusOr<std::vector<const container::IndexEntry*>> sel =
        ResolveNames(index, r_.tensors.empty() ? every : r_.tensors);
    if (!sel.ok()) return sel.status();
    HURRAY_RETURN_IF_ERROR(MakeSink());
    PartialReadStats stats;
    report_.status = ReadSelected(src, g, index, kv, *sel, options,
                                  Tap(sink_.get(), nullptr), &stats);
    report_.bytes = stats.bytes_read;
    return absl::OkStatus();
  };
  std::unique_ptr<HttpBody> whole;  // the forward pass, over HTTP
  bool forward = r_.source.kind == IngestSource::Kind::kStdin ||
                 r_.source.kind == IngestSource::Kind::kFd ||
                 r_.source.kind == IngestSource::Kind::kReader;
  if (r_.source.kind == IngestSource::Kind::kHttp) {
    absl::StatusOr<HttpRangeSource::Opened> opened =
        HttpRangeSource::Open(r_.source.url, http_, r_.connections);
    if (!opened.ok()) return opened.status();
    if (r_.tensors.empty() && opened->ranges != nullptr) {
      // index_first: a bare stream is read forward.
      std::vector<uint8_t> magic;
      HURRAY_RETURN_IF_ERROR(opened->ranges->Read(
          0,
          std::min<uint64_t>(opened->ranges->size(),
                             container::kFileMagic.size()),
          [&](absl::Span<const uint8_t> piece) {
            magic.insert(magic.end(), piece.begin(), piece.end());
            return absl::OkStatus();
          }));
      if (SniffFormat(magic) != ContainerFormat::kHrry) opened->ranges.reset();
    }
    if (r_.tensors.empty() && opened->ranges == nullptr) {
      read_forward_ = true;  // index_first without ranges
      return std::move(report_);
    }
    if (opened->ranges != nullptr) {
      HttpRangeSource* src = opened->ranges.get();
      absl::StatusOr<std::unique_ptr<HrryMetadata>> meta =
          ReadHrryMetadata(src, options);
      if (!meta.ok()) {
        report_.status = meta.status();
      } else {
        HURRAY_RETURN_IF_ERROR(
            read_ranges(src, (*meta)->geometry, (*meta)->index, (*meta)->kv));
      }
      report_.bytes = src->bytes_received();
    } else {
      whole = std::move(opened->whole);
      forward = true;
      Notice(absl::StrCat(r_.source.text,
                          ": the server does not serve byte ranges: reading "
                          "the whole file once, keeping only the named "
                          "tensors"));
    }
  } else if (!forward) {
    if (!StartsWithFileMagic(r_.source.path)) {
      return absl::InvalidArgumentError(
          "--tensors needs a .hrry file (or a URL of one)");
    }
    absl::StatusOr<std::unique_ptr<container::HrryFile>> file =
        container::HrryFile::Open(r_.source.path, options);
    if (!file.ok()) {
      if (!RuleIdOf(file.status()).has_value()) return file.status();
      report_.status = file.status();
    } else {
      MemoryRangeSource src((*file)->bytes());
      HURRAY_RETURN_IF_ERROR(read_ranges(&src, (*file)->geometry(),
                                         (*file)->index(), (*file)->kv()));
    }
  }
  std::unique_ptr<SelectingSink> selecting;
  if (forward) {
    if (r_.format == OutputFormat::kSafetensors && !r_.out_dir.empty()) {
      return absl::FailedPreconditionError(
          "--tensors with --format safetensors needs range requests (or a "
          "file): in one forward pass every tensor is written before the "
          "index names them");
    }
    HURRAY_RETURN_IF_ERROR(MakeSink());
    selecting = std::make_unique<SelectingSink>(sink_.get(), r_.tensors);
    LoaderOptions lo = LoaderOptionsOf(r_);
    IngestProgress progress;
    lo.on_progress = [&](const LoadProgress& p) {
      progress.bytes = p.bytes;
      progress.tensors = p.tensors;
      progress.elapsed_seconds = p.elapsed_seconds;
      observer_->OnProgress(progress);
      if (observer_->Cancelled()) loader_->Cancel();
    };
    Loader loader(lo);
    loader_ = &loader;
    if (r_.canceller != nullptr) r_.canceller->Attach(&loader);
    std::unique_ptr<container::ByteConsumer> consumer = MakeConsumer(
        ContainerFormat::kUnknown, options,
        Tap(selecting.get(), [&loader] { loader.Cancel(); }), nullptr, nullptr);
    LoadSource from = LoadSource::Fd(r_.source.fd);
    if (whole != nullptr) from = LoadSource::Reader(whole.get());
    if (r_.source.kind == IngestSource::Kind::kReader) {
      from = LoadSource::Reader(r_.source.reader);
    }
    const LoadResult res = loader.Run(from, consumer.get());
    loader_ = nullptr;
    if (r_.canceller != nullptr) r_.canceller->Attach(nullptr);
    // A name the index lacks is an error of the request, not of the file:
    // the status SelectingSink stopped the read with (no rule id).
    report_.status = res.status;
    report_.bytes = res.bytes;
  }
  if (sink_ != nullptr) report_.tensors = sink_->TakeRecords();
  return std::move(report_);
}

absl::StatusOr<IngestReport> IngestRun::Go() {
  const IngestSource& src = r_.source;
  if (src.kind == IngestSource::Kind::kFile) {
    HURRAY_RETURN_IF_ERROR(CheckOpenable(src.path));
  }
  if (src.kind == IngestSource::Kind::kHttp) {
    http_ = HttpOptionsOf(r_);
    if (r_.insecure) {
      Notice(
          "warning: --insecure: the server's certificate and host name are "
          "NOT verified");
    }
  }
  if (!r_.tensors.empty() && src.kind != IngestSource::Kind::kTcp) {
    return RunSelected();
  }
  // index_first: a .hrry file or URL by ranges (the URL falls back to a
  // forward read when its server cannot serve them or it is not a .hrry).
  if (r_.index_first && r_.tensors.empty() && r_.resume_file.empty() &&
      (src.kind == IngestSource::Kind::kHttp ||
       (src.kind == IngestSource::Kind::kFile &&
        StartsWithFileMagic(src.path)))) {
    absl::StatusOr<IngestReport> selected = RunSelected();
    if (!read_forward_) return selected;
    report_ = IngestReport();
    report_.source = r_.source.text;
  }
  HURRAY_RETURN_IF_ERROR(MakeSink());
  // What the outputs are, recorded in the resume state ("" without them).
  if (!r_.out_dir.empty()) {
    outputs_ = absl::StrCat(OutputFormatName(r_.format), "/",
                            OutputDtypeName(r_.dtype));
  }
  if (!r_.resume_file.empty()) HURRAY_RETURN_IF_ERROR(LoadResume());
  const uint64_t skipped =
      resumed_.has_value() ? resumed_->checkpoint.offset : 0;
  if (src.kind == IngestSource::Kind::kTcp) {
    HURRAY_RETURN_IF_ERROR(SetUpNet());
  } else {
    HURRAY_RETURN_IF_ERROR(SetUpStream());
  }
  IngestProgress progress;
  progress.skipped = skipped;
  if (body_ != nullptr && body_info_.object_size.has_value()) {
    progress.total = *body_info_.object_size;
  }
  LoaderOptions lo = LoaderOptionsOf(r_);
  lo.on_progress = [&](const LoadProgress& p) {
    progress.bytes = p.bytes + skipped;
    progress.tensors = p.tensors;
    progress.elapsed_seconds = p.elapsed_seconds;
    observer_->OnProgress(progress);
    if (observer_->Cancelled()) loader_->Cancel();
  };
  Loader run_loader(lo);
  loader_ = &run_loader;
  if (r_.canceller != nullptr) r_.canceller->Attach(&run_loader);
  LoadResult result;
  if (consumer_ != nullptr) {
    result = run_loader.Run(source_, consumer_.get());
  }  // else: a resumed network ingest with nothing left to fetch
  if (r_.canceller != nullptr) r_.canceller->Attach(nullptr);
  loader_ = nullptr;
  report_.status = result.status;
  report_.bytes = result.bytes + skipped;
  report_.tensors = sink_->TakeRecords();
  // Finished, or rejected (the outputs waiting for a .hrry index were
  // removed with the verdict, and a rerun reaches the same one): nothing to
  // resume. unlink(2) removes a symlink, never its target.
  const bool verdict = report_.status.ok() || report_.rejected();
  if (!r_.resume_file.empty() && verdict) {
    report_.resume_state_removed = ::unlink(r_.resume_file.c_str()) == 0;
  }
  return std::move(report_);
}

class NullObserver final : public IngestObserver {};

}  // namespace

absl::StatusOr<IngestReport> Ingest(const IngestRequest& request,
                                    IngestObserver* observer) {
  NullObserver none;
  HURRAY_RETURN_IF_ERROR(CheckRequest(request));
  IngestRun run(request, observer != nullptr ? observer : &none);
  return run.Go();
}

}  // namespace hurray::stream::ingest
