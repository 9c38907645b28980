// `hurray.ingest("tcp://...")`: tensors from a `hurray serve` peer over the
// framed network protocol (interchange.md), through the same Loader and
// NetClientSession as `hurray ingest`. The loader runs on its own thread;
// completed tensors wait in a queue of bounded size for Python to take them,
// and a full queue holds the loader back (so the socket is read no faster
// than Python consumes).
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <condition_variable>
#include <cstdint>
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
#include "python/ext/next_tensor.h"
#include "python/ext/queue_sink.h"
#include "stream/container/tensor_sink.h"
#include "stream/ingest/loader.h"
#include "stream/net/client_session.h"

namespace hurray::python {
namespace {

class PyNetIngest {
 public:
  // `max_open_streams` and `max_spooled_bytes` (LIMIT-OPEN-STREAMS,
  // LIMIT-SPOOL-BYTES; 0: the session's default) are range-checked by
  // hurray.ingest.
  PyNetIngest(std::string host, std::string port, std::vector<std::string> keys,
              bool permissive, double idle_timeout, double connect_timeout,
              size_t max_queued_bytes, uint32_t max_open_streams,
              uint64_t max_spooled_bytes)
      : sink_(max_queued_bytes) {
    stream::NetClientOptions o;
    o.parse.mode = permissive ? Mode::kPermissive : Mode::kStrict;
    o.keys = std::move(keys);
    if (max_open_streams != 0) o.max_open_streams = max_open_streams;
    if (max_spooled_bytes != 0) o.max_spooled_bytes = max_spooled_bytes;
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
  py::object Next() { return NextTensor(sink_); }

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
                    double, double, size_t, uint32_t, uint64_t>(),
           py::arg("host"), py::arg("port"), py::arg("keys"),
           py::arg("permissive") = false, py::arg("idle_timeout") = 60.0,
           py::arg("connect_timeout") = 10.0,
           py::arg("max_queued_bytes") = size_t{64} << 20,
           py::arg("max_open_streams") = 0, py::arg("max_spooled_bytes") = 0)
      .def("next", &PyNetIngest::Next);
}

}  // namespace hurray::python
