// Bindings of the containers: .hrry files (mmap reader, writer) and bare
// tensor streams (incremental reader, writer). Everything is parsed and
// checked by stream/; this file only moves bytes between it and Python.
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
#include "stream/container/file_format.h"
#include "stream/container/file_kv.h"
#include "stream/container/hrry_mmap.h"
#include "stream/container/hrry_writer.h"
#include "stream/container/stream_reader.h"
#include "stream/container/stream_writer.h"
#include "stream/container/tensor_sink.h"
#include "stream/ingest/safe_output_dir.h"

namespace hurray::python {
namespace {

using stream::KvType;
using stream::KvValue;

// A read-only uint8 array over `bytes`, keeping `owner` alive.
py::array ReadOnlyBytes(absl::Span<const uint8_t> bytes, py::handle owner) {
  py::array a(py::dtype::of<uint8_t>(),
              {static_cast<py::ssize_t>(bytes.size())}, bytes.data(), owner);
  py::detail::array_proxy(a.ptr())->flags &=
      ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
  return a;
}

py::object KvScalar(const KvValue& v) {
  switch (v.type) {
    case KvType::kString:
      return py::str(v.str().data(), v.str().size());
    case KvType::kInt64:
      return py::int_(v.i64);
    case KvType::kUInt64:
      return py::int_(v.u64);
    case KvType::kFloat64:
      return py::float_(v.f64);
    case KvType::kBool:
      return py::bool_(v.boolean);
    case KvType::kBytes:
      return py::bytes(reinterpret_cast<const char*>(v.bytes.data()),
                       v.bytes.size());
    case KvType::kArray: {
      py::list items;
      for (const KvValue& e : v.Elements()) items.append(KvScalar(e));
      return items;
    }
  }
  return py::none();
}

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

// .hrry random access over mmap. Buffers are read-only arrays into the map
// that keep the file open.
class PyHrryFile {
 public:
  static std::unique_ptr<PyHrryFile> Open(const std::string& path,
                                          bool permissive) {
    stream::FileOptions options;
    options.parse.mode = permissive ? Mode::kPermissive : Mode::kStrict;
    absl::StatusOr<std::unique_ptr<stream::HrryFile>> file =
        stream::HrryFile::Open(path, options);
    ThrowIfError(file.status());
    auto out = std::make_unique<PyHrryFile>();
    out->file_ = std::move(*file);
    return out;
  }

  py::list Names() const {
    py::list names;
    for (const stream::IndexEntry* e : file_->InFileOrder()) {
      names.append(py::str(e->name.data(), e->name.size()));
    }
    return names;
  }

  py::dict Kv() const {
    py::dict kv;
    for (const stream::KvEntry& e : file_->kv().entries()) {
      kv[py::str(e.key.data(), e.key.size())] = KvScalar(e.value);
    }
    return kv;
  }

  // (descriptor fields, [buffer arrays]) of a tensor; KeyError when absent.
  py::tuple Tensor(py::object self, const std::string& name) const {
    const stream::IndexEntry* e = file_->Find(name);
    if (e == nullptr) throw py::key_error(name);
    auto d = std::make_unique<TensorDescriptor>();
    ThrowIfError(file_->ReadDescriptor(*e, d.get()));
    py::list buffers;
    for (uint32_t i = 0; i < d->buffer_count; ++i) {
      absl::StatusOr<absl::Span<const uint8_t>> b = file_->Buffer(*e, *d, i);
      ThrowIfError(b.status());
      buffers.append(ReadOnlyBytes(*b, self));
    }
    return py::make_tuple(DescriptorToDict(*d), buffers);
  }

 private:
  std::unique_ptr<stream::HrryFile> file_;
};

absl::Status AddKv(stream::KvBuilder& kv, const std::string& key,
                   const py::handle& value);

template <typename T>
std::vector<T> ListOf(const py::list& items) {
  std::vector<T> out;
  out.reserve(items.size());
  for (const py::handle item : items) out.push_back(item.cast<T>());
  return out;
}

absl::Status AddKv(stream::KvBuilder& kv, const std::string& key,
                   const py::handle& value) {
  if (py::isinstance<py::bool_>(value)) {
    return kv.AddBool(key, value.cast<bool>());
  }
  if (py::isinstance<py::int_>(value)) {
    if (value.cast<py::int_>() < py::int_(0)) {
      return kv.AddInt64(key, value.cast<int64_t>());
    }
    const uint64_t u = value.cast<uint64_t>();
    if (u <= static_cast<uint64_t>(INT64_MAX)) {
      return kv.AddInt64(key, static_cast<int64_t>(u));
    }
    return kv.AddUInt64(key, u);
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
      std::vector<bool> bools = ListOf<bool>(items);
      std::unique_ptr<bool[]> flat(new bool[bools.size()]);
      for (size_t i = 0; i < bools.size(); ++i) flat[i] = bools[i];
      return kv.AddBoolArray(key,
                             absl::MakeConstSpan(flat.get(), bools.size()));
    }
    if (py::isinstance<py::int_>(first)) {
      return kv.AddInt64Array(key, ListOf<int64_t>(items));
    }
    if (py::isinstance<py::float_>(first)) {
      return kv.AddFloat64Array(key, ListOf<double>(items));
    }
    if (py::isinstance<py::str>(first)) {
      std::vector<std::string> strings = ListOf<std::string>(items);
      std::vector<absl::string_view> views(strings.begin(), strings.end());
      return kv.AddStringArray(key, views);
    }
  }
  throw py::type_error("KV value of key '" + key +
                       "' must be bool, int, float, str, bytes or a list");
}

// Writes a .hrry file through a Python `write(bytes-like)` callable.
class PyHrryBuilder {
 public:
  PyHrryBuilder(py::object write, bool with_kv, bool permissive)
      : write_(std::move(write)) {
    stream::HrryWriterOptions options;
    options.parse.mode = permissive ? Mode::kPermissive : Mode::kStrict;
    options.with_kv = with_kv;
    options.sorted_index = true;
    writer_ = std::make_unique<stream::HrryWriter>(options);
  }

  void Begin() {
    Call([&](stream::ByteSink s) { return writer_->Begin(s); });
  }

  void Add(const std::string& name, const py::dict& fields,
           const py::sequence& buffers) {
    auto d = std::make_unique<TensorDescriptor>();
    DescriptorFromDict(fields, d.get());
    ByteViews views(buffers);
    Call([&](stream::ByteSink s) {
      return writer_->Add(name, *d, views.spans(), s);
    });
  }

  void AddKvEntry(const std::string& key, const py::handle& value) {
    ThrowIfError(AddKv(writer_->kv(), key, value));
  }

  void Finish() {
    Call([&](stream::ByteSink s) { return writer_->Finish(s); });
  }

 private:
  template <typename F>
  void Call(F f) {
    SinkError failure;
    auto sink = [&](absl::Span<const uint8_t> b) {
      return WriteThrough(write_, &failure, b);
    };
    const absl::Status status = f(stream::ByteSink(sink));
    failure.RethrowIfAny();
    ThrowIfError(status);
  }

  py::object write_;
  std::unique_ptr<stream::HrryWriter> writer_;
};

// Writes a bare tensor stream through a Python `write(bytes-like)` callable.
class PyStreamEncoder {
 public:
  explicit PyStreamEncoder(bool permissive) {
    ParseOptions options;
    options.mode = permissive ? Mode::kPermissive : Mode::kStrict;
    writer_ = std::make_unique<stream::StreamWriter>(options);
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
        writer_->Write(*d, views.spans(), stream::ByteSink(sink));
    failure.RethrowIfAny();
    ThrowIfError(status);
  }

  void Close() { ThrowIfError(writer_->Close()); }
  uint64_t tensors_written() const { return writer_->tensors_written(); }

 private:
  std::unique_ptr<stream::StreamWriter> writer_;
};

// Reads a bare tensor stream pushed in chunks; completed tensors queue up
// until pop(). Buffer memory grows with the bytes that actually arrive (never
// from a declared size), each buffer at most max_buffer_bytes
// (LIMIT-BUFFER-BYTES, decided from the descriptor).
class PyStreamDecoder : public stream::TensorSink {
 public:
  PyStreamDecoder(bool permissive, uint64_t max_buffer_bytes) {
    stream::StreamOptions options;
    options.parse.mode = permissive ? Mode::kPermissive : Mode::kStrict;
    if (max_buffer_bytes != 0)
      options.limits.max_buffer_bytes = max_buffer_bytes;
    reader_ = std::make_unique<stream::StreamReader>(options, this);
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
    if (reader_->Finish() == stream::StreamState::kRejected) {
      ThrowIfError(reader_->status());
    }
  }
  void RaiseIfRejected() const {
    if (reader_->state() == stream::StreamState::kRejected) {
      ThrowIfError(reader_->status());
    }
  }
  bool rejected() const {
    return reader_->state() == stream::StreamState::kRejected;
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
  std::unique_ptr<stream::StreamReader> reader_;
  Pending current_;
  std::deque<Pending> ready_;
};

// A whole file written through the library's one way of creating files
// (stream/safe_output_dir.h): a hidden temp beside `path` created with
// O_EXCL | O_NOFOLLOW, published by renameat at commit(), removed otherwise.
class PySafeOutputFile {
 public:
  explicit PySafeOutputFile(const std::string& path) {
    absl::StatusOr<std::unique_ptr<stream::SafeOutputFile>> f =
        stream::SafeOutputFile::Create(path);
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
  std::unique_ptr<stream::SafeOutputFile> file_;
};

}  // namespace

void BindContainers(py::module_& m) {
  py::class_<PySafeOutputFile>(m, "SafeOutputFile")
      .def(py::init<const std::string&>(), py::arg("path"))
      .def("write", &PySafeOutputFile::Write)
      .def("commit", &PySafeOutputFile::Commit, py::arg("durable") = true)
      .def("discard", &PySafeOutputFile::Discard);
  py::class_<PyHrryFile>(m, "HrryFile")
      .def_static("open", &PyHrryFile::Open, py::arg("path"),
                  py::arg("permissive") = false)
      .def("names", &PyHrryFile::Names)
      .def("kv", &PyHrryFile::Kv)
      .def("tensor", [](py::object self, const std::string& name) {
        return self.cast<const PyHrryFile&>().Tensor(self, name);
      });
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
