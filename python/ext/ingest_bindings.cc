// `hurray.ingest` over stream::Ingest() (stream/ingest/ingest.h), for every
// source: paths, http(s)://, tcp://, file objects and sockets (read through
// their own methods, PyPullReader below), with or without dequantization.
//
// Threads and the GIL. LibIngest runs Ingest() on a thread of its own that
// never holds the GIL while Ingest() runs; the observer's OnTensor
// re-acquires it to build the tensor's Python value (a float32 array, or the
// descriptor dict and buffers of a Tensor), then releases it and waits until
// Python's thread has taken the value (Next()), so memory stays bounded by
// one tensor and the loader's ring. A PyPullReader re-acquires the GIL on
// the loader's reader thread for each read of the Python object. No thread
// waits for the GIL while holding `mu_`.
//
// Cancel. Next() waits without the GIL in slices and checks for signals
// between them: a KeyboardInterrupt (or an abandoned iteration, ~LibIngest)
// sets `closing_`, which the observer's Cancelled() reports between chunks
// and tensors, and cancels the run's IngestCanceller, which stops a loader
// that waits for a byte at once. An exception raised by Python
// code the run calls (a file object's read, building a value) stops the run
// and is raised by Next() once, in place of the run's status.
#include "python/ext/ingest_bindings.h"

#include <poll.h>
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "parser/rules.h"
#include "python/ext/buffers.h"
#include "python/ext/descriptor_dict.h"
#include "python/ext/errors.h"
#include "stream/http/http_fields.h"
#include "stream/ingest/ingest.h"
#include "stream/ingest/loader.h"

namespace hurray::python {
namespace {

namespace py = pybind11;

// The first Python exception of a run, raised once by Next(). Set and taken
// with the GIL held; `mu` is never held while waiting for the GIL.
class PyErrorSlot {
 public:
  void Set(py::error_already_set&& e) {
    std::lock_guard<std::mutex> lock(mu_);
    if (error_ == nullptr) {
      error_ = std::make_unique<py::error_already_set>(std::move(e));
    }
    set_.store(true);
  }
  bool is_set() const { return set_.load(); }
  std::unique_ptr<py::error_already_set> Take() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::move(error_);
  }

 private:
  std::mutex mu_;
  std::unique_ptr<py::error_already_set> error_;
  std::atomic<bool> set_{false};
};

// A Python object's bytes, pulled by the loader's reader thread in chunks
// of the loader's slot size: `readinto(buffer)`, else `read(n)`; a socket
// (`recv_into` and `fileno`) is waited on without the GIL for at most the
// idle timeout, in slices that notice Interrupt().
class PyPullReader final : public stream::container::PullReader {
 public:
  // kReadintoFd: an unbuffered file object (io.FileIO, one read(2) per
  // readinto), waited on like a socket, so a pipe with no data does not
  // hold a cancelled run.
  enum class Mode { kReadinto, kReadintoFd, kRead, kRecv };

  PyPullReader(py::object source, Mode mode, double idle_timeout,
               PyErrorSlot* errors)
      : source_(std::move(source)),
        mode_(mode),
        idle_timeout_(idle_timeout),
        errors_(errors) {
    if (mode_ == Mode::kRecv || mode_ == Mode::kReadintoFd) {
      fd_ = source_.attr("fileno")().cast<int>();
    }
  }

  absl::StatusOr<size_t> Read(absl::Span<uint8_t> into) override {
    if (interrupted_.load()) return absl::CancelledError("cancelled");
    if (fd_ >= 0) HURRAY_RETURN_IF_ERROR(WaitReadable());
    py::gil_scoped_acquire gil;
    const std::string type = py::str(py::type::of(source_).attr("__name__"));
    try {
      if (mode_ == Mode::kRead) {
        py::object chunk = source_.attr("read")(into.size());
        if (chunk.is_none()) {
          return absl::UnavailableError(
              absl::StrCat(type,
                           ".read() returned None (a non-blocking source with "
                           "no data ready)"));
        }
        if (!PyObject_CheckBuffer(chunk.ptr())) {
          throw py::type_error(absl::StrCat(
              type, ".read() returned ",
              std::string(py::str(py::type::of(chunk).attr("__name__"))),
              ", not bytes"));
        }
        ByteView view(chunk);
        if (view.span().size() > into.size()) {
          return absl::OutOfRangeError(
              absl::StrCat(type, ".read(", into.size(), ") returned ",
                           view.span().size(), " bytes"));
        }
        std::memcpy(into.data(), view.span().data(), view.span().size());
        return view.span().size();
      }
      py::memoryview buffer = py::memoryview::from_memory(
          into.data(), static_cast<py::ssize_t>(into.size()),
          /*readonly=*/false);
      const char* method = mode_ == Mode::kRecv ? "recv_into" : "readinto";
      py::object n = source_.attr(method)(buffer);
      buffer.attr("release")();  // no view of the ring outlives the call
      const bool is_count = PyLong_Check(n.ptr()) && !PyBool_Check(n.ptr());
      const long long count = is_count ? n.cast<long long>() : -1;
      if (n.is_none()) {
        return absl::UnavailableError(
            absl::StrCat(type, ".", method,
                         "() returned None (a non-blocking source with no "
                         "data ready)"));
      }
      if (!is_count || count < 0 ||
          static_cast<unsigned long long>(count) > into.size()) {
        return absl::OutOfRangeError(absl::StrCat(
            type, ".", method, "() returned ", std::string(py::repr(n)),
            ": a count from 0 to ", into.size(), " was expected"));
      }
      return static_cast<size_t>(count);
    } catch (py::error_already_set& e) {
      errors_->Set(std::move(e));
      return absl::CancelledError("a Python exception");
    } catch (const py::builtin_exception& e) {
      e.set_error();
      errors_->Set(py::error_already_set());
      return absl::CancelledError("a Python exception");
    }
  }

  void Interrupt() override { interrupted_.store(true); }

  // Dropped with the GIL held (~LibIngest).
  void ReleaseSource() { source_ = py::object(); }

 private:
  absl::Status WaitReadable() {
    const auto start = std::chrono::steady_clock::now();
    for (;;) {
      if (interrupted_.load()) return absl::CancelledError("cancelled");
      pollfd p{fd_, POLLIN, 0};
      const int r = ::poll(&p, 1, 100);
      if (r > 0) return absl::OkStatus();
      if (r < 0 && errno != EINTR) {
        return absl::ErrnoToStatus(errno, "poll on the socket");
      }
      const double waited = std::chrono::duration<double>(
                                std::chrono::steady_clock::now() - start)
                                .count();
      if (idle_timeout_ > 0 && waited >= idle_timeout_) {
        return absl::DeadlineExceededError(
            absl::StrCat("no byte for ", idle_timeout_, " s (idle timeout)"));
      }
    }
  }

  py::object source_;
  Mode mode_;
  double idle_timeout_;
  PyErrorSlot* errors_;
  int fd_ = -1;
  std::atomic<bool> interrupted_{false};
};

class IngestRun {
 public:
  // `source` is a source string (stream::ParseSource) or, with `reader`
  // ("readinto", "read" or "recv"), a Python object read through that
  // method and named `label`. `names` (not None) selects tensors (for
  // tcp://, replacing the URL's names; an empty list asks for every tensor
  // the server lists).
  IngestRun(py::object source, std::optional<std::string> reader,
            std::string label, std::optional<std::vector<std::string>> names,
            bool dequantize, bool permissive,
            std::optional<double> idle_timeout, double connect_timeout,
            double total_timeout, std::string ca_file,
            std::vector<std::string> headers, bool insecure,
            std::optional<uint32_t> max_open_streams,
            std::optional<uint64_t> max_spooled_bytes, int connections) {
    if (reader.has_value()) {
      PyPullReader::Mode mode = PyPullReader::Mode::kReadinto;
      if (*reader == "read") mode = PyPullReader::Mode::kRead;
      if (*reader == "recv") mode = PyPullReader::Mode::kRecv;
      if (*reader == "readinto_fd") mode = PyPullReader::Mode::kReadintoFd;
      pull_ = std::make_unique<PyPullReader>(
          std::move(source), mode, idle_timeout.value_or(0), &errors_);
      request_.source =
          stream::ingest::IngestSource::Reader(pull_.get(), label);
    } else {
      absl::StatusOr<stream::ingest::IngestSource> s =
          stream::ingest::ParseSource(source.cast<std::string>());
      ThrowIfError(s.status());
      request_.source = *std::move(s);
    }
    if (names.has_value()) {
      request_.source.keys.clear();
      request_.tensors = *std::move(names);
    }
    request_.index_first = true;  // each tensor named as it ends
    request_.canceller = &canceller_;
    request_.parse.mode = permissive ? Mode::kPermissive : Mode::kStrict;
    request_.dequantize = dequantize;
    request_.data = dequantize ? stream::ingest::TensorData::kDequantized
                               : stream::ingest::TensorData::kRaw;
    // As StreamReader: a tensor's buffers grow with the bytes that arrive,
    // never with a declared size, so no cap of its own.
    request_.max_raw_tensor_bytes = std::numeric_limits<uint64_t>::max();
    request_.idle_timeout_seconds = idle_timeout.value_or(0);
    request_.connect_timeout_seconds = connect_timeout;
    request_.total_timeout_seconds = total_timeout;
    request_.ca_file = std::move(ca_file);
    for (const std::string& h : headers) {
      absl::StatusOr<std::pair<std::string, std::string>> f =
          stream::http::ParseHeaderFlag(h);
      if (!f.ok()) throw py::value_error(std::string(f.status().message()));
      request_.headers.push_back(*std::move(f));
    }
    request_.insecure = insecure;
    request_.max_open_streams = max_open_streams;
    request_.max_spooled_bytes = max_spooled_bytes;
    request_.connections = connections;
    ThrowIfError(stream::ingest::CheckRequest(request_));
    thread_ = std::thread([this] { Run(); });
  }

  ~IngestRun() {
    {
      py::gil_scoped_release release;
      Close();
      if (thread_.joinable()) thread_.join();
    }
    Py_XDECREF(ready_);
    if (pull_ != nullptr) pull_->ReleaseSource();
  }

  // At interpreter exit: a thread of the run that waits for the GIL would be
  // ended by Python (the loader would then wait for it forever), so the
  // run is told to stop and left to the process's end, not joined.
  void Abandon() {
    Close();
    if (thread_.joinable()) thread_.detach();
  }

  // The next (name, value) or None at the end; raises what stopped the run.
  py::object Next() {
    for (;;) {
      PyObject* item = nullptr;
      bool done = false;
      {
        py::gil_scoped_release release;
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait_for(lock, std::chrono::milliseconds(100),
                     [this] { return ready_ != nullptr || done_; });
        if (ready_ != nullptr) {
          item = ready_;
          ready_ = nullptr;
          cv_.notify_all();
        } else {
          done = done_;
        }
      }  // the GIL is taken back after `mu_` is released
      if (item != nullptr) return py::reinterpret_steal<py::object>(item);
      if (done) break;
      if (PyErr_CheckSignals() != 0) {  // KeyboardInterrupt, ...
        py::error_already_set e;
        {
          py::gil_scoped_release release;
          Close();
        }
        throw e;
      }
    }
    if (std::unique_ptr<py::error_already_set> e = errors_.Take()) {
      ended_ = true;
      throw py::error_already_set(*e);
    }
    if (!ended_) {
      ended_ = true;
      ThrowIfError(status_);
    }
    return py::none();
  }

 private:
  class Observer final : public stream::ingest::IngestObserver {
   public:
    explicit Observer(IngestRun* owner) : owner_(owner) {}
    absl::Status OnTensor(const stream::ingest::IngestedTensor& t) override {
      return owner_->HandOver(t);
    }
    bool Cancelled() override {
      if (owner_->errors_.is_set()) return true;
      std::lock_guard<std::mutex> lock(owner_->mu_);
      return owner_->closing_;
    }

   private:
    IngestRun* owner_;
  };

  // Stops the run at once, even while it waits for a byte (the canceller).
  void Close() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      closing_ = true;
      cv_.notify_all();
    }
    if (pull_ != nullptr) pull_->Interrupt();
    canceller_.Cancel();
  }

  // Builds the tensor's value with the GIL, then waits (without it) until
  // Python took it.
  absl::Status HandOver(const stream::ingest::IngestedTensor& t) {
    PyObject* item = nullptr;
    {
      py::gil_scoped_acquire gil;
      try {
        item = Build(t).release().ptr();
      } catch (py::error_already_set& e) {
        errors_.Set(std::move(e));
        return absl::CancelledError("a Python exception");
      }
    }
    std::unique_lock<std::mutex> lock(mu_);
    if (!closing_) {
      ready_ = item;
      item = nullptr;
      cv_.notify_all();
      cv_.wait(lock, [this] { return ready_ == nullptr || closing_; });
    }
    const bool closing = closing_;
    lock.unlock();
    if (item != nullptr) {
      py::gil_scoped_acquire gil;
      Py_DECREF(item);
    }
    return closing ? absl::CancelledError("cancelled") : absl::OkStatus();
  }

  // (name, float32 array or None) or (name, fields, [buffers]).
  py::object Build(const stream::ingest::IngestedTensor& t) const {
    py::str name = t.record->name.empty()
                       ? py::str(absl::StrCat("tensor_", t.record->index))
                       : py::str(t.record->name);
    if (request_.data == stream::ingest::TensorData::kRaw) {
      py::list buffers;
      for (absl::Span<const uint8_t> b : t.buffers) {
        buffers.append(OwnedBytes(
            std::string(reinterpret_cast<const char*>(b.data()), b.size())));
      }
      return py::make_tuple(name, DescriptorToDict(*t.descriptor), buffers);
    }
    if (!t.has_values) return py::make_tuple(name, py::none());
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
    return py::make_tuple(name, std::move(values));
  }

  void Run() {
    Observer observer(this);
    absl::StatusOr<stream::ingest::IngestReport> r =
        stream::ingest::Ingest(request_, &observer);
    std::lock_guard<std::mutex> lock(mu_);
    // A run that could not start names its source ("PATH: cannot open:
    // ...", as `hurray inspect` says it).
    if (r.ok()) {
      status_ = r->status;
    } else if (RuleIdOf(r.status()).has_value()) {
      status_ = r.status();
    } else {
      status_ = absl::Status(
          r.status().code(),
          absl::StrCat(request_.source.text, ": ", r.status().message()));
    }
    done_ = true;
    cv_.notify_all();
  }

  stream::ingest::IngestRequest request_;
  stream::ingest::IngestCanceller canceller_;
  PyErrorSlot errors_;
  std::unique_ptr<PyPullReader> pull_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  PyObject* ready_ = nullptr;  // a value handed to Python, owned
  bool done_ = false;
  bool closing_ = false;
  bool ended_ = false;  // Python's thread only
  absl::Status status_;
};

// What Python holds: the run, joined when dropped, abandoned at exit.
class PyLibIngest {
 public:
  PyLibIngest(py::object source, std::optional<std::string> reader,
              std::string label, std::optional<std::vector<std::string>> names,
              bool dequantize, bool permissive,
              std::optional<double> idle_timeout, double connect_timeout,
              double total_timeout, std::string ca_file,
              std::vector<std::string> headers, bool insecure,
              std::optional<uint32_t> max_open_streams,
              std::optional<uint64_t> max_spooled_bytes, int connections)
      : run_(std::make_unique<IngestRun>(
            std::move(source), std::move(reader), std::move(label),
            std::move(names), dequantize, permissive, idle_timeout,
            connect_timeout, total_timeout, std::move(ca_file),
            std::move(headers), insecure, max_open_streams, max_spooled_bytes,
            connections)) {}
  // Joined when dropped (a run blocked in a buffered object's read, or
  // waiting for a silent network peer, stops when the read returns or at
  // its idle timeout); at interpreter exit left to stop by itself.
  ~PyLibIngest() {
    if (_Py_IsFinalizing()) run_.release()->Abandon();
  }
  py::object Next() { return run_->Next(); }

 private:
  std::unique_ptr<IngestRun> run_;
};

}  // namespace

void BindIngest(py::module_& m) {
  py::class_<PyLibIngest>(m, "LibIngest")
      .def(
          py::init<py::object, std::optional<std::string>, std::string,
                   std::optional<std::vector<std::string>>, bool, bool,
                   std::optional<double>, double, double, std::string,
                   std::vector<std::string>, bool, std::optional<uint32_t>,
                   std::optional<uint64_t>, int>(),
          py::arg("source"), py::arg("reader") = py::none(),
          py::arg("label") = "", py::arg("names") = py::none(),
          py::arg("dequantize") = true, py::arg("permissive") = false,
          py::arg("idle_timeout") = 60.0, py::arg("connect_timeout") = 10.0,
          py::arg("total_timeout") = 0.0, py::arg("ca_file") = "",
          py::arg("headers") = std::vector<std::string>(),
          py::arg("insecure") = false, py::arg("max_open_streams") = py::none(),
          py::arg("max_spooled_bytes") = py::none(), py::arg("connections") = 1)
      .def("next", &PyLibIngest::Next);
}

}  // namespace hurray::python
