// `hurray.ingest("https://...")` and `http://`: the tensors of a .hrry (or a
// bare stream) on a web server, through the same code as `hurray ingest`
// (issue 15): verified TLS, redirects and deadlines (stream/ingest/
// http_body.h); a .hrry is read with range requests, its index first, so
// every tensor is yielded with its name as it arrives, and with `names` only
// those tensors' bytes are fetched (stream/ingest/partial_hrry.h). A server
// without range support can serve a bare stream (read once, forward); a
// .hrry there is refused before any tensor (its names come only at its end,
// so the tensors could not be handed over as they arrive). The reader runs
// on its own thread; tensors wait in a bounded queue (queue_sink.h).
#include <pybind11/stl.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "python/ext/buffers.h"
#include "python/ext/codec_bindings.h"
#include "python/ext/descriptor_dict.h"
#include "python/ext/errors.h"
#include "python/ext/next_tensor.h"
#include "python/ext/queue_sink.h"
#include "stream/container/file_format.h"
#include "stream/http/http_body.h"
#include "stream/http/http_ranges.h"
#include "stream/http/http_url.h"
#include "stream/ingest/consumers.h"
#include "stream/ingest/loader.h"
#include "stream/ingest/partial_hrry.h"

namespace hurray::python {
namespace {

// The IngestSink face of the queue: the readers' events go to it, and a
// .hrry read forward (no names before its end) is refused at once.
class QueueIngestSink final : public stream::IngestSink {
 public:
  explicit QueueIngestSink(QueueSink* queue) : queue_(queue) {}
  void ExpectTensorNames() override { names_at_end_ = true; }
  void set_names_first() { names_first_ = true; }
  absl::Status OnTensorKey(absl::string_view key) override {
    return queue_->OnTensorKey(key);
  }
  absl::Status OnDescriptor(const TensorDescriptor& d) override {
    if (names_at_end_ && !names_first_) {
      return absl::FailedPreconditionError(
          "the server does not serve byte ranges: a .hrry names its tensors "
          "only at its end, so hurray.ingest cannot yield them as they "
          "arrive (download the file, or use `hurray ingest`)");
    }
    return queue_->OnDescriptor(d);
  }
  absl::Status OnBufferPiece(uint32_t i, uint64_t at,
                             absl::Span<const uint8_t> piece) override {
    return queue_->OnBufferPiece(i, at, piece);
  }
  absl::Status OnTensorEnd() override { return queue_->OnTensorEnd(); }

 private:
  QueueSink* queue_;
  bool names_at_end_ = false;
  bool names_first_ = false;
};

class PyHttpIngest {
 public:
  PyHttpIngest(const std::string& url, std::vector<std::string> names,
               bool permissive, std::string ca_file,
               std::vector<std::string> headers, bool insecure,
               double connect_timeout, double idle_timeout,
               double total_timeout, size_t max_queued_bytes)
      : queue_(max_queued_bytes), sink_(&queue_) {
    absl::StatusOr<stream::http::Url> u = stream::http::ParseUrl(url);
    if (!u.ok()) throw py::value_error(std::string(u.status().message()));
    stream::http::HttpOptions http;
    for (const std::string& h : headers) {
      absl::StatusOr<std::pair<std::string, std::string>> f =
          stream::http::ParseHeaderFlag(h);
      if (!f.ok()) throw py::value_error(std::string(f.status().message()));
      http.headers.push_back(*std::move(f));
    }
    http.ca_file = std::move(ca_file);
    http.insecure = insecure;
    http.connect_timeout_seconds = connect_timeout;
    http.idle_timeout_seconds = idle_timeout;
    http.total_timeout_seconds = total_timeout;
    stream::FileOptions options;
    options.parse.mode = permissive ? Mode::kPermissive : Mode::kStrict;
    stream::LoaderOptions lo;
    lo.idle_timeout_seconds = idle_timeout;
    lo.connect_timeout_seconds = connect_timeout;
    loader_ = std::make_unique<stream::Loader>(lo);
    thread_ =
        std::thread([this, url = *std::move(u), http, names = std::move(names),
                     options] { queue_.End(Run(url, http, names, options)); });
  }

  ~PyHttpIngest() {
    loader_->Cancel();
    queue_.Stop();
    if (thread_.joinable()) {
      py::gil_scoped_release release;
      thread_.join();
    }
  }

  // (name, fields, buffers), or None at the end; raises what stopped it.
  py::object Next() { return NextTensor(queue_); }

 private:
  absl::Status Run(const stream::http::Url& url,
                   const stream::http::HttpOptions& http,
                   const std::vector<std::string>& names,
                   const stream::FileOptions& options) {
    absl::StatusOr<stream::http::HttpRangeSource::Opened> opened =
        stream::http::HttpRangeSource::Open(url, http);
    if (!opened.ok()) return opened.status();
    if (opened->ranges == nullptr) {
      if (!names.empty()) {
        return absl::FailedPreconditionError(
            "names= needs a server with range support (a .hrry's index is "
            "at its end)");
      }
      // One forward pass: a bare stream (a .hrry is refused, see above).
      std::unique_ptr<stream::http::HttpBody> body = std::move(opened->whole);
      auto consumer = stream::MakeConsumer(stream::ContainerFormat::kUnknown,
                                           options, &sink_, nullptr, nullptr);
      return loader_
          ->Run(stream::LoadSource::Reader(body.get()), consumer.get())
          .status;
    }
    stream::http::HttpRangeSource* src = opened->ranges.get();
    std::vector<uint8_t> magic;
    magic.reserve(stream::kFileMagic.size());
    absl::Status s =
        src->Read(0, std::min<uint64_t>(src->size(), 8),
                  [&](absl::Span<const uint8_t> piece) {
                    magic.insert(magic.end(), piece.begin(), piece.end());
                    return absl::OkStatus();
                  });
    if (!s.ok()) return s;
    if (stream::SniffFormat(magic) != stream::ContainerFormat::kHrry) {
      if (!names.empty()) {
        return absl::InvalidArgumentError(
            "names= needs a .hrry (a bare stream names no tensor)");
      }
      // A bare stream, read whole in one range.
      auto consumer = stream::MakeConsumer(stream::ContainerFormat::kStream,
                                           options, &sink_, nullptr, nullptr);
      s = src->Read(0, src->size(), [&](absl::Span<const uint8_t> piece) {
        return consumer->Feed(piece);
      });
      return s.ok() ? consumer->Finish() : s;
    }
    sink_.set_names_first();
    absl::StatusOr<std::unique_ptr<stream::HrryMetadata>> meta =
        stream::ReadHrryMetadata(src, options);
    if (!meta.ok()) return meta.status();
    std::vector<std::string> wanted = names;
    if (wanted.empty()) {  // every tensor, in file order
      std::vector<const stream::IndexEntry*> all;
      for (const stream::IndexEntry& e : (*meta)->index.entries()) {
        all.push_back(&e);
      }
      std::sort(all.begin(), all.end(), [](const auto* a, const auto* b) {
        return a->descriptor_offset < b->descriptor_offset;
      });
      for (const stream::IndexEntry* e : all) wanted.emplace_back(e->name);
    }
    absl::StatusOr<std::vector<const stream::IndexEntry*>> sel =
        stream::ResolveNames((*meta)->index, wanted);
    if (!sel.ok()) return sel.status();
    return stream::ReadSelected(src, (*meta)->geometry, (*meta)->index,
                                (*meta)->kv, *sel, options, &sink_);
  }

  QueueSink queue_;
  QueueIngestSink sink_;
  std::unique_ptr<stream::Loader> loader_;  // made before the thread
  std::thread thread_;
};

}  // namespace

void BindHttp(py::module_& m) {
  py::class_<PyHttpIngest>(m, "HttpIngest")
      .def(py::init<const std::string&, std::vector<std::string>, bool,
                    std::string, std::vector<std::string>, bool, double, double,
                    double, size_t>(),
           py::arg("url"), py::arg("names"), py::arg("permissive") = false,
           py::arg("ca_file") = "",
           py::arg("headers") = std::vector<std::string>(),
           py::arg("insecure") = false, py::arg("connect_timeout") = 10.0,
           py::arg("idle_timeout") = 60.0, py::arg("total_timeout") = 0.0,
           py::arg("max_queued_bytes") = size_t{64} << 20)
      .def("next", &PyHttpIngest::Next);
}

}  // namespace hurray::python
