// The ingest functions of hurray.h: hurray_ingest (callbacks) and
// hurray_ingest_open / _next / _close (pull), over stream::Ingest()
// (stream/ingest/ingest.h). Kept apart from hurray.cc: it links the loader,
// the network client and the HTTP(S) client.
#include "stream/ingest/ingest.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "capi/error_fill.h"
#include "capi/hurray.h"
#include "parser/rules.h"
#include "stream/http/http_body.h"
#include "stream/http/http_fields.h"
#include "stream/ingest/output/element_convert.h"

namespace {

using hurray::capi::Guarded;
using hurray::capi::SetError;
using hurray::capi::SetErrorOf;

using hurray::stream::ingest::IngestedTensor;
using hurray::stream::ingest::IngestReport;
using hurray::stream::ingest::IngestRequest;

// The run's outcome as hurray.h says: a rule id is a rejection, but
// STREAM-IO (the source failed) is an I/O error; the rule id and offset are
// given in both cases.
hurray_status SetStatus(hurray_error* e, const absl::Status& s,
                        bool cancelled) {
  hurray_status code = HURRAY_OK;
  const std::optional<absl::string_view> rule = hurray::RuleIdOf(s);
  if (s.ok()) {
    code = HURRAY_OK;
  } else if (cancelled) {
    code = HURRAY_CANCELLED;
  } else if (rule.has_value()) {
    code = *rule == "STREAM-IO" ? HURRAY_IO_ERROR : HURRAY_REJECTED;
  } else {
    switch (s.code()) {
      case absl::StatusCode::kInvalidArgument:
      case absl::StatusCode::kOutOfRange:
        code = HURRAY_INVALID_ARGUMENT;
        break;
      case absl::StatusCode::kNotFound:
        code = HURRAY_NOT_FOUND;
        break;
      case absl::StatusCode::kPermissionDenied:
      case absl::StatusCode::kUnavailable:
      case absl::StatusCode::kDeadlineExceeded:
      case absl::StatusCode::kDataLoss:
        code = HURRAY_IO_ERROR;
        break;
      case absl::StatusCode::kFailedPrecondition:
        code = HURRAY_BAD_STATE;
        break;
      case absl::StatusCode::kCancelled:
        code = HURRAY_CANCELLED;
        break;
      case absl::StatusCode::kResourceExhausted:
        code = HURRAY_NO_MEMORY;
        break;
      default:
        code = HURRAY_INTERNAL;
        break;
    }
    // "cannot open: No such file or directory" and the like.
    if (absl::StartsWith(s.message(), "cannot open")) code = HURRAY_IO_ERROR;
  }
  return SetErrorOf(e, code, s);
}

// The options a caller's struct holds, whatever its size (a smaller, older
// struct leaves the later fields at their defaults).
hurray_ingest_options OptionsOf(const hurray_ingest_options* given) {
  hurray_ingest_options o;
  hurray_ingest_options_init(&o);
  if (given != nullptr && given->size >= sizeof(uint32_t)) {
    const size_t n = given->size < sizeof o ? given->size : sizeof o;
    std::memcpy(&o, given, n);
    o.size = sizeof o;
  }
  return o;
}

// The C++ request of a source string and C options; an error is
// INVALID_ARGUMENT.
absl::StatusOr<IngestRequest> RequestOf(const char* source,
                                        const hurray_ingest_options* given) {
  namespace stream = hurray::stream;
  if (source == nullptr) return absl::InvalidArgumentError("null source");
  const hurray_ingest_options o = OptionsOf(given);
  IngestRequest r;
  absl::StatusOr<stream::ingest::IngestSource> s =
      stream::ingest::ParseSource(source);
  if (!s.ok()) return s.status();
  r.source = *std::move(s);
  if (o.flags & HURRAY_PERMISSIVE) r.parse.mode = hurray::Mode::kPermissive;
  if (o.tensor_count > 0 && o.tensors == nullptr) {
    return absl::InvalidArgumentError("null tensors with a tensor_count");
  }
  for (size_t i = 0; i < o.tensor_count; ++i) {
    if (o.tensors[i] == nullptr) {
      return absl::InvalidArgumentError("a null tensor name");
    }
    r.tensors.emplace_back(o.tensors[i]);
  }
  if (o.resume_file != nullptr) r.resume_file = o.resume_file;
  if (o.out_dir != nullptr) r.out_dir = o.out_dir;
  r.format = stream::ingest::OutputFormat::kNpy;
  if (o.format != nullptr) {
    absl::StatusOr<stream::ingest::OutputFormat> f =
        stream::ingest::ParseOutputFormat(o.format);
    if (!f.ok()) return f.status();
    r.format = *f;
  }
  if (o.dtype != nullptr) {
    absl::StatusOr<stream::ingest::OutputDtype> d =
        stream::ingest::ParseOutputDtype(o.dtype);
    if (!d.ok()) return d.status();
    r.dtype = *d;
  }
  r.data = o.want_values ? stream::ingest::TensorData::kDequantized
                         : stream::ingest::TensorData::kNone;
  if (o.scratch_dir != nullptr) r.scratch_dir = o.scratch_dir;
  if (o.chunk_size != 0) {
    if (o.chunk_size > (uint64_t{1} << 30)) {
      return absl::InvalidArgumentError("chunk_size over 1 GiB");
    }
    r.chunk_size = static_cast<size_t>(o.chunk_size);
  }
  if (o.idle_timeout_seconds >= 0) {
    r.idle_timeout_seconds = o.idle_timeout_seconds;
  }
  const bool idle_nan = o.idle_timeout_seconds != o.idle_timeout_seconds;
  if (!(o.connect_timeout_seconds >= 0) || !(o.total_timeout_seconds >= 0) ||
      idle_nan) {
    return absl::InvalidArgumentError("a timeout is not a number of seconds");
  }
  r.connect_timeout_seconds = o.connect_timeout_seconds;
  r.total_timeout_seconds = o.total_timeout_seconds;
  if (o.max_open_streams != 0) r.max_open_streams = o.max_open_streams;
  if (o.max_spool_bytes != 0) r.max_spooled_bytes = o.max_spool_bytes;
  if (o.connections != 0) {  // CheckRequest refuses more than 32
    r.connections = static_cast<int>(std::min<uint32_t>(o.connections, 1024));
  }
  if (o.ca_file != nullptr) r.ca_file = o.ca_file;
  if (o.header_count > 0 && o.headers == nullptr) {
    return absl::InvalidArgumentError("null headers with a header_count");
  }
  if (o.header_count > stream::http::kMaxExtraHeaders) {
    return absl::InvalidArgumentError("too many headers");
  }
  for (size_t i = 0; i < o.header_count; ++i) {
    if (o.headers[i] == nullptr) {
      return absl::InvalidArgumentError("a null header");
    }
    absl::StatusOr<std::pair<std::string, std::string>> h =
        stream::http::ParseHeaderFlag(o.headers[i]);
    if (!h.ok()) return h.status();
    r.headers.push_back(*std::move(h));
  }
  r.insecure = o.insecure != 0;
  HURRAY_RETURN_IF_ERROR(stream::ingest::CheckRequest(r));
  return r;
}

// A tensor as hurray.h shows it; `name` keeps the NUL-terminated copy.
struct CTensor {
  hurray_ingest_tensor t;
  std::string name;
  std::string verdict;

  void Set(const IngestedTensor& in) {
    name = in.record->name;
    verdict = in.record->verdict;
    std::memset(&t, 0, sizeof t);
    t.size = sizeof t;
    t.index = in.record->index;
    t.name = name.c_str();
    t.name_size = name.size();
    t.shape = in.shape.data();
    t.rank = static_cast<uint32_t>(in.shape.size());
    t.type_tag = in.type_tag;
    t.verdict = verdict.c_str();
    t.values = in.has_values ? in.values.data() : nullptr;
    t.value_count = in.has_values ? in.values.size() : 0;
    t.has_values = in.has_values ? 1 : 0;
  }
};

// Calls the caller's callbacks (on the thread of hurray_ingest).
class CallbackObserver final : public hurray::stream::ingest::IngestObserver {
 public:
  explicit CallbackObserver(const hurray_ingest_callbacks* cb) {
    if (cb != nullptr) cb_ = *cb;
  }
  absl::Status OnTensor(const IngestedTensor& t) override {
    if (cb_.on_tensor == nullptr) return absl::OkStatus();
    tensor_.Set(t);
    if (cb_.on_tensor(cb_.user, &tensor_.t) != 0) {
      stopped_ = true;
      return absl::CancelledError("the on_tensor callback asked to stop");
    }
    return absl::OkStatus();
  }
  void OnProgress(const hurray::stream::ingest::IngestProgress& p) override {
    if (cb_.on_progress != nullptr) {
      cb_.on_progress(cb_.user, p.bytes, p.total, p.tensors);
    }
  }
  bool Cancelled() override {
    if (cb_.cancelled != nullptr && cb_.cancelled(cb_.user) != 0) {
      stopped_ = true;
    }
    return stopped_;
  }
  void OnNotice(absl::string_view text) override {
    if (cb_.on_notice != nullptr) {
      const std::string s(text);
      cb_.on_notice(cb_.user, s.c_str());
    }
  }
  bool stopped() const { return stopped_; }

 private:
  hurray_ingest_callbacks cb_ = {};
  CTensor tensor_;
  bool stopped_ = false;
};

}  // namespace

// The pull form: Ingest() runs on a thread of its own and hands each tensor
// over at a rendezvous; it waits in OnTensor until the caller asks for the
// next one (or closes), so the views stay valid meanwhile.
struct hurray_ingest_reader {
  class Observer final : public hurray::stream::ingest::IngestObserver {
   public:
    explicit Observer(hurray_ingest_reader* owner) : owner_(owner) {}
    absl::Status OnTensor(const IngestedTensor& t) override {
      std::unique_lock<std::mutex> lock(owner_->mu);
      if (owner_->closing) return absl::CancelledError("closed");
      owner_->tensor.Set(t);
      owner_->has_tensor = true;
      owner_->cv.notify_all();
      owner_->cv.wait(
          lock, [this] { return !owner_->has_tensor || owner_->closing; });
      return owner_->closing ? absl::CancelledError("closed")
                             : absl::OkStatus();
    }
    void OnProgress(const hurray::stream::ingest::IngestProgress& p) override {
      std::lock_guard<std::mutex> lock(owner_->mu);
      owner_->bytes = p.bytes;
    }
    bool Cancelled() override {
      std::lock_guard<std::mutex> lock(owner_->mu);
      return owner_->closing;
    }

   private:
    hurray_ingest_reader* owner_;
  };

  IngestRequest request;
  std::thread thread;
  mutable std::mutex mu;
  std::condition_variable cv;
  CTensor tensor;
  bool has_tensor = false;  // a tensor waits for the caller
  bool handed = false;      // the caller holds one (to release at _next)
  bool done = false;        // Ingest() returned
  bool closing = false;
  uint64_t bytes = 0;
  absl::Status status;

  void Run() {
    Observer observer(this);
    absl::StatusOr<IngestReport> report =
        hurray::stream::ingest::Ingest(request, &observer);
    std::lock_guard<std::mutex> lock(mu);
    if (!report.ok()) {
      status = report.status();
    } else {
      status = report->status;
      bytes = report->bytes;
    }
    done = true;
    cv.notify_all();
  }
};

extern "C" {

void hurray_ingest_options_init(hurray_ingest_options* options) {
  if (options == nullptr) return;
  std::memset(options, 0, sizeof *options);
  options->size = sizeof *options;
  options->want_values = 1;
  options->idle_timeout_seconds = -1;
  options->connect_timeout_seconds =
      hurray::stream::ingest::kDefaultConnectTimeoutSeconds;
}

hurray_status hurray_ingest(const char* source,
                            const hurray_ingest_options* options,
                            const hurray_ingest_callbacks* callbacks,
                            hurray_error* error) {
  return Guarded(error, [&]() -> hurray_status {
    absl::StatusOr<IngestRequest> r = RequestOf(source, options);
    if (!r.ok()) {
      return SetError(error, HURRAY_INVALID_ARGUMENT, r.status().message());
    }
    CallbackObserver observer(callbacks);
    absl::StatusOr<IngestReport> report =
        hurray::stream::ingest::Ingest(*r, &observer);
    if (!report.ok()) return SetStatus(error, report.status(), false);
    return SetStatus(error, report->status, observer.stopped());
  });
}

hurray_status hurray_ingest_open(const char* source,
                                 const hurray_ingest_options* options,
                                 hurray_ingest_reader** ingest,
                                 hurray_error* error) {
  return Guarded(error, [&]() -> hurray_status {
    if (ingest == nullptr) {
      return SetError(error, HURRAY_INVALID_ARGUMENT, "null argument");
    }
    *ingest = nullptr;
    absl::StatusOr<IngestRequest> r = RequestOf(source, options);
    if (!r.ok()) {
      return SetError(error, HURRAY_INVALID_ARGUMENT, r.status().message());
    }
    auto h = std::make_unique<hurray_ingest_reader>();
    h->request = *std::move(r);
    hurray_ingest_reader* raw = h.get();
    h->thread = std::thread([raw] { raw->Run(); });
    *ingest = h.release();
    return SetError(error, HURRAY_OK, "");
  });
}

hurray_status hurray_ingest_next(hurray_ingest_reader* ingest,
                                 const hurray_ingest_tensor** tensor,
                                 hurray_error* error) {
  return Guarded(error, [&]() -> hurray_status {
    if (ingest == nullptr || tensor == nullptr) {
      return SetError(error, HURRAY_INVALID_ARGUMENT, "null argument");
    }
    *tensor = nullptr;
    std::unique_lock<std::mutex> lock(ingest->mu);
    if (ingest->handed) {  // the caller is done with the last one
      ingest->handed = false;
      ingest->has_tensor = false;
      ingest->cv.notify_all();
    }
    ingest->cv.wait(lock, [ingest] {
      return ingest->has_tensor || ingest->done || ingest->closing;
    });
    if (ingest->has_tensor) {
      ingest->handed = true;
      *tensor = &ingest->tensor.t;
      return SetError(error, HURRAY_OK, "");
    }
    if (ingest->status.ok()) return SetError(error, HURRAY_END, "");
    return SetStatus(error, ingest->status, false);
  });
}

uint64_t hurray_ingest_bytes(const hurray_ingest_reader* ingest) {
  if (ingest == nullptr) return 0;
  std::lock_guard<std::mutex> lock(ingest->mu);
  return ingest->bytes;
}

void hurray_ingest_close(hurray_ingest_reader* ingest) {
  if (ingest == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(ingest->mu);
    ingest->closing = true;
    ingest->cv.notify_all();
  }
  if (ingest->thread.joinable()) ingest->thread.join();
  delete ingest;
}

}  // extern "C"
