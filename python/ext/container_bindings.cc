// Bindings of the containers: .hrry files (writer; the reader is
// file_bindings.cc) and bare tensor streams (incremental reader, writer).
// Everything is parsed and checked by stream/; this file only moves bytes
// between it and Python.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "python/ext/buffers.h"
#include "python/ext/codec_bindings.h"
#include "python/ext/descriptor_dict.h"
#include "python/ext/errors.h"
#include "python/ext/file_bindings.h"
#include "stream/container/file_format.h"
#include "stream/container/file_kv.h"
#include "stream/container/hrry_writer.h"
#include "stream/container/safe_output_dir.h"
#include "stream/container/stream_reader.h"
#include "stream/container/stream_writer.h"
#include "stream/container/tensor_sink.h"

namespace hurray::python {
namespace {

// A Python exception raised inside a ByteSink, carried out of the C++ call.
struct SinkError {
  std::optional<py::error_already_set> error;
  void RethrowIfAny() {
    if (error.has_value()) {
      py::error_already_set e = std::move(*error);
      error.reset();
      throw e;
    }
  }
};

// Calls `write(memoryview)` for each span the writer emits.
absl::Status WriteThrough(const py::object& write, SinkError* failure,
                          absl::Span<const uint8_t> bytes) {
  if (bytes.empty()) return absl::OkStatus();
  try {
    write(py::memoryview::from_memory(bytes.data(),
                                      static_cast<py::ssize_t>(bytes.size())));
  } catch (py::error_already_set& e) {
    failure->error.emplace(std::move(e));
    return absl::DataLossError("the Python writer raised");
  }
  return absl::OkStatus();
}

// A KV integer: int64 when it fits, else uint64 (file-format.md § KV Value
// Types has no wider integer): OverflowError outside [-2^63, 2^64).
struct KvInt {
  bool is_signed;
  int64_t i64;
  uint64_t u64;
};

KvInt KvIntOf(const std::string& key, const py::handle& value) {
  int overflow = 0;
  const long long i = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
  if (i == -1 && PyErr_Occurred()) throw py::error_already_set();
  if (overflow == 0) return {true, static_cast<int64_t>(i), 0};
  if (overflow > 0) {
    const unsigned long long u = PyLong_AsUnsignedLongLong(value.ptr());
    if (!(u == static_cast<unsigned long long>(-1) && PyErr_Occurred())) {
      return {false, 0, static_cast<uint64_t>(u)};
    }
    PyErr_Clear();
  }
  PyErr_SetString(PyExc_OverflowError,
                  ("KV value of key '" + key +
                   "': integers must be from -2**63 to 2**64 - 1")
                      .c_str());
  throw py::error_already_set();
}

// The items of a KV list, all of one Python type (bool is not an int here):
// TypeError naming the first item of another type.
template <typename Check>
void CheckItems(const std::string& key, const py::list& items, Check is_kind,
                const char* kind) {
  for (size_t i = 0; i < items.size(); ++i) {
    if (!is_kind(items[i])) {
      throw py::type_error(
          "KV list of key '" + key + "' mixes types: item " +
          std::to_string(i) + " is " +
          std::string(py::str(py::type::of(items[i]).attr("__name__"))) +
          ", the list is of " + kind);
    }
  }
}

bool IsInt(const py::handle& h) {
  return py::isinstance<py::int_>(h) && !py::isinstance<py::bool_>(h);
}

absl::Status AddKv(stream::container::KvBuilder& kv, const std::string& key,
                   const py::handle& value) {
  if (py::isinstance<py::bool_>(value)) {
    return kv.AddBool(key, value.cast<bool>());
  }
  if (IsInt(value)) {
    const KvInt v = KvIntOf(key, value);
    return v.is_signed ? kv.AddInt64(key, v.i64)
           : v.u64 <= static_cast<uint64_t>(INT64_MAX)
               ? kv.AddInt64(key, static_cast<int64_t>(v.u64))
               : kv.AddUInt64(key, v.u64);
  }
  if (py::isinstance<py::float_>(value)) {
    return kv.AddFloat64(key, value.cast<double>());
  }
  if (py::isinstance<py::str>(value)) {
    return kv.AddString(key, value.cast<std::string>());
  }
  if (py::isinstance<py::bytes>(value)) {
    const std::string b = value.cast<std::string>();
    return kv.AddBytes(
        key, absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(b.data()),
                                 b.size()));
  }
  if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
    py::list items(py::reinterpret_borrow<py::object>(value));
    if (items.size() == 0) return kv.AddInt64Array(key, {});
    const py::handle first = items[0];
    if (py::isinstance<py::bool_>(first)) {
      CheckItems(
          key, items, [](py::handle h) { return py::isinstance<py::bool_>(h); },
          "bool");
      std::unique_ptr<bool[]> flat(new bool[items.size()]);
      for (size_t i = 0; i < items.size(); ++i) {
        flat[i] = items[i].cast<bool>();
      }
      return kv.AddBoolArray(key,
                             absl::MakeConstSpan(flat.get(), items.size()));
    }
    if (IsInt(first)) {
      CheckItems(key, items, IsInt, "int");
      std::vector<int64_t> ints;
      ints.reserve(items.size());
      for (const py::handle item : items) {
        const KvInt v = KvIntOf(key, item);
        // Our KV int arrays are int64 (KvBuilder::AddInt64Array).
        if (!v.is_signed) {
          PyErr_SetString(PyExc_OverflowError,
                          ("KV list of key '" + key +
                           "': list integers must be from -2**63 to "
                           "2**63 - 1")
                              .c_str());
          throw py::error_already_set();
        }
        ints.push_back(v.i64);
      }
      return kv.AddInt64Array(key, ints);
    }
    if (py::isinstance<py::float_>(first)) {
      CheckItems(
          key, items,
          [](py::handle h) { return py::isinstance<py::float_>(h); }, "float");
      std::vector<double> doubles;
      doubles.reserve(items.size());
      for (const py::handle item : items)
        doubles.push_back(item.cast<double>());
      return kv.AddFloat64Array(key, doubles);
    }
    if (py::isinstance<py::str>(first)) {
      CheckItems(
          key, items, [](py::handle h) { return py::isinstance<py::str>(h); },
          "str");
      std::vector<std::string> strings;
      strings.reserve(items.size());
      for (const py::handle item : items) {
        strings.push_back(item.cast<std::string>());
      }
      std::vector<absl::string_view> views(strings.begin(), strings.end());
      return kv.AddStringArray(key, views);
    }
  }
  throw py::type_error("KV value of key '" + key +
                       "' must be bool, int, float, str, bytes or a list of "
                       "bool, int, float or str (one type per list)");
}

// Writes a .hrry file through a Python `write(bytes-like)` callable.
class PyHrryBuilder {
 public:
  PyHrryBuilder(py::object write, bool with_kv, bool permissive)
      : write_(std::move(write)) {
    stream::container::HrryWriterOptions options;
    options.parse.mode = permissive ? Mode::kPermissive : Mode::kStrict;
    options.with_kv = with_kv;
    options.sorted_index = true;
    writer_ = std::make_unique<stream::container::HrryWriter>(options);
  }

  void Begin() {
    Call([&](stream::container::ByteSink s) { return writer_->Begin(s); });
  }

  void Add(const std::string& name, const py::dict& fields,
           const py::sequence& buffers) {
    auto d = std::make_unique<TensorDescriptor>();
    DescriptorFromDict(fields, d.get());
    ByteViews views(buffers);
    Call([&](stream::container::ByteSink s) {
      return writer_->Add(name, *d, views.spans(), s);
    });
  }

  void AddKvEntry(const std::string& key, const py::handle& value) {
    ThrowIfError(AddKv(writer_->kv(), key, value));
  }

  void Finish() {
    Call([&](stream::container::ByteSink s) { return writer_->Finish(s); });
  }

 private:
  template <typename F>
  void Call(F f) {
    SinkError failure;
    auto sink = [&](absl::Span<const uint8_t> b) {
      return WriteThrough(write_, &failure, b);
    };
    const absl::Status status = f(stream::container::ByteSink(sink));
    failure.RethrowIfAny();
    ThrowIfError(status);
  }

  py::object write_;
  std::unique_ptr<stream::container::HrryWriter> writer_;
};

// Writes a bare tensor stream through a Python `write(bytes-like)` callable.
class PyStreamEncoder {
 public:
  explicit PyStreamEncoder(bool permissive) {
    ParseOptions options;
    options.mode = permissive ? Mode::kPermissive : Mode::kStrict;
    writer_ = std::make_unique<stream::container::StreamWriter>(options);
  }

  void Write(const py::dict& fields, const py::sequence& buffers,
             const py::object& write) {
    auto d = std::make_unique<TensorDescriptor>();
    DescriptorFromDict(fields, d.get());
    ByteViews views(buffers);
    SinkError failure;
    auto sink = [&](absl::Span<const uint8_t> b) {
      return WriteThrough(write, &failure, b);
    };
    const absl::Status status =
        writer_->Write(*d, views.spans(), stream::container::ByteSink(sink));
    failure.RethrowIfAny();
    ThrowIfError(status);
  }

  void Close() { ThrowIfError(writer_->Close()); }
  uint64_t tensors_written() const { return writer_->tensors_written(); }

 private:
  std::unique_ptr<stream::container::StreamWriter> writer_;
};

// Reads a bare tensor stream pushed in chunks; completed tensors queue up
// until pop(). Buffer memory grows with the bytes that actually arrive (never
// from a declared size), each buffer at most max_buffer_bytes
// (LIMIT-BUFFER-BYTES, decided from the descriptor).
class PyStreamDecoder : public stream::container::TensorSink {
 public:
  PyStreamDecoder(bool permissive, uint64_t max_buffer_bytes) {
    stream::container::StreamOptions options;
    options.parse.mode = permissive ? Mode::kPermissive : Mode::kStrict;
    if (max_buffer_bytes != 0)
      options.limits.max_buffer_bytes = max_buffer_bytes;
    reader_ = std::make_unique<stream::container::StreamReader>(options, this);
  }

  size_t Feed(py::handle chunk) {
    ByteView view(chunk);
    // Sticky: Python takes the tensors completed before a rejection first,
    // then asks rejected() (hurray._io).
    (void)reader_->Feed(view.span());
    return ready_.size();
  }
  // End of input: raises on a rejection (a stream cut inside a tensor is a
  // StreamError).
  void Finish() {
    if (reader_->Finish() == stream::container::StreamState::kRejected) {
      ThrowIfError(reader_->status());
    }
  }
  void RaiseIfRejected() const {
    if (reader_->state() == stream::container::StreamState::kRejected) {
      ThrowIfError(reader_->status());
    }
  }
  bool rejected() const {
    return reader_->state() == stream::container::StreamState::kRejected;
  }
  size_t ready() const { return ready_.size(); }
  uint64_t position() const { return reader_->position(); }

  py::object Pop() {
    if (ready_.empty()) return py::none();
    Pending p = std::move(ready_.front());
    ready_.pop_front();
    py::list buffers;
    for (std::string& b : p.buffers) buffers.append(OwnedBytes(std::move(b)));
    return py::make_tuple(DescriptorToDict(*p.descriptor), buffers);
  }

  // TensorSink.
  absl::Status OnDescriptor(const TensorDescriptor& d) override {
    current_.descriptor = std::make_unique<TensorDescriptor>(d);
    current_.buffers.assign(d.buffer_count, std::string());
    return absl::OkStatus();
  }
  absl::Status OnBufferPiece(uint32_t index, uint64_t /*offset*/,
                             absl::Span<const uint8_t> piece) override {
    current_.buffers[index].append(reinterpret_cast<const char*>(piece.data()),
                                   piece.size());
    return absl::OkStatus();
  }
  absl::Status OnTensorEnd() override {
    ready_.push_back(std::move(current_));
    return absl::OkStatus();
  }

 private:
  struct Pending {
    std::unique_ptr<TensorDescriptor> descriptor;
    std::vector<std::string> buffers;
  };
  std::unique_ptr<stream::container::StreamReader> reader_;
  Pending current_;
  std::deque<Pending> ready_;
};

// A whole file written through the library's one way of creating files
// (stream/container/safe_output_dir.h): a hidden temp beside `path` created
// with O_EXCL | O_NOFOLLOW, published by renameat at commit(), removed
// otherwise.
class PySafeOutputFile {
 public:
  explicit PySafeOutputFile(const std::string& path) {
    absl::StatusOr<std::unique_ptr<stream::container::SafeOutputFile>> f =
        stream::container::SafeOutputFile::Create(path);
    ThrowIfError(f.status());
    file_ = std::move(*f);
  }
  void Write(py::handle bytes) {
    if (file_ == nullptr) throw py::value_error("the file is closed");
    ByteView view(bytes);
    ThrowIfError(file_->Write(view.span()));
  }
  void Commit(bool durable) {
    if (file_ == nullptr) throw py::value_error("the file is closed");
    const absl::Status s = file_->Commit(durable);
    file_.reset();
    ThrowIfError(s);
  }
  // Without commit: the temp is removed, whatever was at `path` stays.
  void Discard() { file_.reset(); }

 private:
  std::unique_ptr<stream::container::SafeOutputFile> file_;
};

}  // namespace

void BindContainers(py::module_& m) {
  py::class_<PySafeOutputFile>(m, "SafeOutputFile")
      .def(py::init<const std::string&>(), py::arg("path"))
      .def("write", &PySafeOutputFile::Write)
      .def("commit", &PySafeOutputFile::Commit, py::arg("durable") = true)
      .def("discard", &PySafeOutputFile::Discard);
  BindFile(m);
  py::class_<PyHrryBuilder>(m, "HrryBuilder")
      .def(py::init<py::object, bool, bool>(), py::arg("write"),
           py::arg("with_kv"), py::arg("permissive") = false)
      .def("begin", &PyHrryBuilder::Begin)
      .def("add", &PyHrryBuilder::Add)
      .def("add_kv", &PyHrryBuilder::AddKvEntry)
      .def("finish", &PyHrryBuilder::Finish);
  py::class_<PyStreamEncoder>(m, "StreamEncoder")
      .def(py::init<bool>(), py::arg("permissive") = false)
      .def("write", &PyStreamEncoder::Write)
      .def("close", &PyStreamEncoder::Close)
      .def_property_readonly("tensors_written",
                             &PyStreamEncoder::tensors_written);
  py::class_<PyStreamDecoder>(m, "StreamDecoder")
      .def(py::init<bool, uint64_t>(), py::arg("permissive") = false,
           py::arg("max_buffer_bytes") = 0)
      .def("feed", &PyStreamDecoder::Feed)
      .def("finish", &PyStreamDecoder::Finish)
      .def("raise_if_rejected", &PyStreamDecoder::RaiseIfRejected)
      .def("pop", &PyStreamDecoder::Pop)
      .def_property_readonly("rejected", &PyStreamDecoder::rejected)
      .def_property_readonly("ready", &PyStreamDecoder::ready)
      .def_property_readonly("position", &PyStreamDecoder::position);
}

}  // namespace hurray::python
