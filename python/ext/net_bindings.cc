// `hurray.ingest("tcp://...")`: tensors from a `hurray serve` peer over the
// framed network protocol (interchange.md), through the same Loader and
// NetClientSession as `hurray ingest`. The loader runs on its own thread;
// completed tensors wait in a queue of bounded size for Python to take them,
// and a full queue holds the loader back (so the socket is read no faster
// than Python consumes).
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "python/ext/buffers.h"
#include "python/ext/codec_bindings.h"
#include "python/ext/descriptor_dict.h"
#include "python/ext/errors.h"
#include "stream/container/tensor_sink.h"
#include "stream/ingest/loader.h"
#include "stream/net/client_session.h"

namespace hurray::python {
namespace {

// One tensor as it arrived: its key, descriptor and buffers.
struct Arrived {
  std::string key;
  std::unique_ptr<TensorDescriptor> descriptor;
  std::vector<std::string> buffers;
  size_t bytes = 0;
};

// Collects tensors on the loader's thread; hands them to Python's.
class QueueSink : public stream::TensorSink {
 public:
  explicit QueueSink(size_t max_queued_bytes)
      : max_queued_bytes_(max_queued_bytes) {}

  absl::Status OnTensorKey(absl::string_view key) override {
    current_.key = std::string(key);
    return absl::OkStatus();
  }
  absl::Status OnDescriptor(const TensorDescriptor& d) override {
    current_.descriptor = std::make_unique<TensorDescriptor>(d);
    current_.buffers.assign(d.buffer_count, std::string());
    current_.bytes = 0;
    return absl::OkStatus();
  }
  absl::Status OnBufferPiece(uint32_t index, uint64_t /*offset*/,
                             absl::Span<const uint8_t> piece) override {
    current_.buffers[index].append(reinterpret_cast<const char*>(piece.data()),
                                   piece.size());
    current_.bytes += piece.size();
    return absl::OkStatus();
  }
  absl::Status OnTensorEnd() override {
    std::unique_lock<std::mutex> lock(mu_);
    // Back-pressure: wait while the queue is full (one tensor always fits).
    room_.wait(lock, [&] {
      return stopped_ || queue_.empty() ||
             queued_bytes_ + current_.bytes <= max_queued_bytes_;
    });
    if (stopped_) return absl::OkStatus();
    queued_bytes_ += current_.bytes;
    queue_.push_back(std::move(current_));
    current_ = Arrived();
    ready_.notify_all();
    return absl::OkStatus();
  }

  // The loader finished with `status`.
  void End(absl::Status status) {
    std::lock_guard<std::mutex> lock(mu_);
    ended_ = true;
    status_ = std::move(status);
    ready_.notify_all();
  }
  // Python is gone: release a waiting loader thread.
  void Stop() {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
    room_.notify_all();
  }
  // Waits for the next tensor: true with `out` filled, or false at the end
  // (`status` says how it ended).
  bool Next(Arrived* out, absl::Status* status) {
    std::unique_lock<std::mutex> lock(mu_);
    ready_.wait(lock, [&] { return !queue_.empty() || ended_; });
    if (queue_.empty()) {
      *status = status_;
      return false;
    }
    *out = std::move(queue_.front());
    queue_.pop_front();
    queued_bytes_ -= out->bytes;
    room_.notify_all();
    return true;
  }

 private:
  const size_t max_queued_bytes_;
  Arrived current_;  // the loader thread's only
  std::mutex mu_;
  std::condition_variable ready_, room_;
  std::deque<Arrived> queue_;
  size_t queued_bytes_ = 0;
  bool ended_ = false, stopped_ = false;
  absl::Status status_;
};

class PyNetIngest {
 public:
  PyNetIngest(std::string host, std::string port, std::vector<std::string> keys,
              bool permissive, double idle_timeout, double connect_timeout,
              size_t max_queued_bytes)
      : sink_(max_queued_bytes) {
    stream::NetClientOptions o;
    o.parse.mode = permissive ? Mode::kPermissive : Mode::kStrict;
    o.keys = std::move(keys);
    session_ = std::make_unique<stream::NetClientSession>(o, &sink_);
    stream::LoaderOptions lo;
    lo.idle_timeout_seconds = idle_timeout;
    lo.connect_timeout_seconds = connect_timeout;
    loader_ = std::make_unique<stream::Loader>(lo);
    thread_ = std::thread([this, source = stream::LoadSource::Tcp(
                                     std::move(host), std::move(port))] {
      const stream::LoadResult r = loader_->Run(source, session_.get());
      sink_.End(r.status);
    });
  }

  ~PyNetIngest() {
    loader_->Cancel();
    sink_.Stop();
    if (thread_.joinable()) {
      py::gil_scoped_release release;
      thread_.join();
    }
  }

  // (key, fields, buffers), or None at the end; raises what stopped the
  // session.
  py::object Next() {
    Arrived a;
    absl::Status status;
    bool got;
    {
      py::gil_scoped_release release;
      got = sink_.Next(&a, &status);
    }
    if (!got) {
      ThrowIfError(status);
      return py::none();
    }
    py::list buffers;
    for (std::string& b : a.buffers) buffers.append(OwnedBytes(std::move(b)));
    return py::make_tuple(py::str(a.key), DescriptorToDict(*a.descriptor),
                          buffers);
  }

 private:
  QueueSink sink_;
  std::unique_ptr<stream::NetClientSession> session_;
  std::unique_ptr<stream::Loader> loader_;
  std::thread thread_;
};

py::list ParseList(const py::buffer& bytes) {
  ByteView view(bytes);
  absl::StatusOr<std::vector<std::string>> names =
      stream::ParseTensorList(view.span());
  ThrowIfError(names.status());
  py::list out;
  for (const std::string& n : *names) out.append(py::str(n));
  return out;
}

}  // namespace

void BindNet(py::module_& m) {
  m.attr("LIST_KEY") = std::string(stream::kListKey);
  m.def("parse_tensor_list", &ParseList);
  py::class_<PyNetIngest>(m, "NetIngest")
      .def(py::init<std::string, std::string, std::vector<std::string>, bool,
                    double, double, size_t>(),
           py::arg("host"), py::arg("port"), py::arg("keys"),
           py::arg("permissive") = false, py::arg("idle_timeout") = 60.0,
           py::arg("connect_timeout") = 10.0,
           py::arg("max_queued_bytes") = size_t{64} << 20)
      .def("next", &PyNetIngest::Next);
}

}  // namespace hurray::python
