// `hurray.ingest` through stream::Ingest() (stream/ingest/ingest.h): the
// source string parsed by stream::ParseSource (parse_source), and LibIngest,
// which runs Ingest() on a thread of its own and hands each tensor's
// dequantized float32 values to Python one at a time: the thread waits in
// the observer's OnTensor until Python has copied them into a numpy array,
// so memory stays bounded by one tensor and the loader's ring.
#include "python/ext/ingest_bindings.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "python/ext/errors.h"
#include "stream/ingest/ingest.h"

namespace hurray::python {
namespace {

namespace py = pybind11;

const char* KindName(stream::IngestSource::Kind k) {
  switch (k) {
    case stream::IngestSource::Kind::kFile:
      return "file";
    case stream::IngestSource::Kind::kStdin:
      return "stdin";
    case stream::IngestSource::Kind::kFd:
      return "fd";
    case stream::IngestSource::Kind::kTcp:
      return "tcp";
    case stream::IngestSource::Kind::kHttp:
      return "http";
  }
  return "file";
}

// (kind, host, port, keys): kind is "file", "stdin", "tcp" or "http".
py::tuple ParseSourceText(const std::string& text) {
  absl::StatusOr<stream::IngestSource> s = stream::ParseSource(text);
  ThrowIfError(s.status());
  return py::make_tuple(KindName(s->kind), s->host, s->port, s->keys);
}

class PyLibIngest {
 public:
  // `names` (not None) replaces the names of a tcp:// URL; an empty list
  // asks for every tensor the server lists.
  PyLibIngest(const std::string& source,
              std::optional<std::vector<std::string>> names, bool permissive,
              double idle_timeout, double connect_timeout,
              uint32_t max_open_streams, uint64_t max_spooled_bytes) {
    absl::StatusOr<stream::IngestSource> s = stream::ParseSource(source);
    ThrowIfError(s.status());
    request_.source = *std::move(s);
    if (names.has_value()) {
      request_.source.keys.clear();
      request_.tensors = *std::move(names);
    }
    request_.parse.mode = permissive ? Mode::kPermissive : Mode::kStrict;
    request_.data = stream::TensorData::kDequantized;
    request_.idle_timeout_seconds = idle_timeout;
    request_.connect_timeout_seconds = connect_timeout;
    if (max_open_streams != 0) request_.max_open_streams = max_open_streams;
    if (max_spooled_bytes != 0) request_.max_spooled_bytes = max_spooled_bytes;
    ThrowIfError(stream::CheckRequest(request_));
    thread_ = std::thread([this] { Run(); });
  }

  ~PyLibIngest() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      closing_ = true;
      cv_.notify_all();
    }
    if (thread_.joinable()) {
      py::gil_scoped_release release;
      thread_.join();
    }
  }

  // (name, float32 array) or None at the end; raises what stopped the run.
  py::object Next() {
    std::unique_lock<std::mutex> lock(mu_);
    {
      py::gil_scoped_release release;
      cv_.wait(lock, [this] { return waiting_ != nullptr || done_; });
    }
    if (waiting_ == nullptr) {
      ThrowIfError(status_);
      return py::none();
    }
    const stream::IngestedTensor& t = *waiting_;
    std::vector<py::ssize_t> shape;
    uint64_t n = 1;
    for (uint64_t d : t.shape) {
      shape.push_back(static_cast<py::ssize_t>(d));
      n *= d;
    }
    // A block-paged tensor's values are [tokens, heads, head_dim] (sinks.h).
    if (n != t.values.size()) {
      shape.assign(1, static_cast<py::ssize_t>(t.values.size()));
    }
    py::array_t<float> values(shape);
    if (!t.values.empty()) {
      std::memcpy(values.mutable_data(), t.values.data(),
                  t.values.size() * sizeof(float));
    }
    py::tuple out = py::make_tuple(t.record->name, std::move(values));
    waiting_ = nullptr;
    cv_.notify_all();
    return out;
  }

 private:
  class Observer final : public stream::IngestObserver {
   public:
    explicit Observer(PyLibIngest* owner) : owner_(owner) {}
    absl::Status OnTensor(const stream::IngestedTensor& t) override {
      std::unique_lock<std::mutex> lock(owner_->mu_);
      if (owner_->closing_) return absl::CancelledError("closed");
      owner_->waiting_ = &t;
      owner_->cv_.notify_all();
      owner_->cv_.wait(lock, [this] {
        return owner_->waiting_ == nullptr || owner_->closing_;
      });
      owner_->waiting_ = nullptr;
      return owner_->closing_ ? absl::CancelledError("closed")
                              : absl::OkStatus();
    }
    bool Cancelled() override {
      std::lock_guard<std::mutex> lock(owner_->mu_);
      return owner_->closing_;
    }

   private:
    PyLibIngest* owner_;
  };

  void Run() {
    Observer observer(this);
    absl::StatusOr<stream::IngestReport> r =
        stream::Ingest(request_, &observer);
    std::lock_guard<std::mutex> lock(mu_);
    status_ = r.ok() ? r->status : r.status();
    done_ = true;
    cv_.notify_all();
  }

  stream::IngestRequest request_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  const stream::IngestedTensor* waiting_ = nullptr;  // handed to Python
  bool done_ = false;
  bool closing_ = false;
  absl::Status status_;
};

}  // namespace

void BindIngest(py::module_& m) {
  m.def("parse_source", &ParseSourceText, py::arg("source"));
  py::class_<PyLibIngest>(m, "LibIngest")
      .def(py::init<const std::string&, std::optional<std::vector<std::string>>,
                    bool, double, double, uint32_t, uint64_t>(),
           py::arg("source"), py::arg("names") = py::none(),
           py::arg("permissive") = false, py::arg("idle_timeout") = 60.0,
           py::arg("connect_timeout") = 10.0, py::arg("max_open_streams") = 0,
           py::arg("max_spooled_bytes") = 0)
      .def("next", &PyLibIngest::Next);
}

}  // namespace hurray::python
