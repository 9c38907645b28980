// The random-access .hrry reader for Python: the library's mmap reader
// (stream/container/hrry_mmap.h), read so that a file truncated by another
// writer gives Python an exception, never a SIGBUS (issue 46 item 6).
//
// Every read of the mapping happens here, in C++, under a SigbusGuard
// (sigbus_guard.h), and a tensor's buffers are copied out of the map into
// memory Python owns: numpy never holds a view of the mapping, so no later
// Python access can fault. A read that hit a page past the file's new end
// raises FileError and hands out nothing.
#include "python/ext/file_bindings.h"

#include <pybind11/numpy.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "python/ext/buffers.h"
#include "python/ext/descriptor_dict.h"
#include "python/ext/errors.h"
#include "python/ext/sigbus_guard.h"
#include "stream/container/file_kv.h"
#include "stream/container/hrry_mmap.h"

namespace hurray::python {
namespace {

using stream::container::KvType;
using stream::container::KvValue;

constexpr size_t kMinAlignment = 64;  // buffer-protocol.md § Alignment

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

// A read-only uint8 array owning a copy of `bytes`, at an address that is a
// multiple of `alignment` (at least 64; the handle's declared alignment
// when it is a power of two up to the 2 MiB a file may declare).
py::array AlignedCopy(absl::Span<const uint8_t> bytes, uint64_t alignment) {
  size_t a = kMinAlignment;
  if (alignment > a && alignment <= (uint64_t{2} << 20) &&
      (alignment & (alignment - 1)) == 0) {
    a = static_cast<size_t>(alignment);
  }
  const size_t rounded = (std::max<size_t>(bytes.size(), 1) + a - 1) / a * a;
  void* memory = std::aligned_alloc(a, rounded);
  if (memory == nullptr) throw std::bad_alloc();
  if (!bytes.empty()) std::memcpy(memory, bytes.data(), bytes.size());
  py::capsule owner(memory, [](void* p) { std::free(p); });
  py::array out(py::dtype::of<uint8_t>(),
                {static_cast<py::ssize_t>(bytes.size())},
                static_cast<uint8_t*>(memory), owner);
  py::detail::array_proxy(out.ptr())->flags &=
      ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
  return out;
}

// Raised when a guarded read met a page past the file's end.
[[noreturn]] void ThrowTruncated(const std::string& path) {
  ThrowIfError(absl::DataLossError(
      absl::StrCat(path,
                   ": the file was truncated while being read (another writer "
                   "changed it); nothing read from it was kept")));
  throw std::logic_error("unreachable");  // ThrowIfError threw
}

class PyHrryFile {
 public:
  static std::unique_ptr<PyHrryFile> Open(const std::string& path,
                                          bool permissive) {
    stream::container::FileOptions options;
    options.parse.mode = permissive ? Mode::kPermissive : Mode::kStrict;
    auto out = std::make_unique<PyHrryFile>();
    out->path_ = path;
    absl::Status status;
    {
      SigbusGuard guard;
      absl::StatusOr<std::unique_ptr<stream::container::HrryFile>> file =
          stream::container::HrryFile::Open(path, options);
      if (guard.faulted()) ThrowTruncated(path);
      status = file.status();
      if (file.ok()) out->file_ = std::move(*file);
    }
    ThrowIfError(status);
    return out;
  }

  py::list Names() const {
    CheckIntact();
    SigbusGuard guard;
    py::list names;
    for (const stream::container::IndexEntry* e : file_->InFileOrder()) {
      names.append(py::str(e->name.data(), e->name.size()));
    }
    ThrowIfTruncated(guard);
    return names;
  }

  py::dict Kv() const {
    CheckIntact();
    SigbusGuard guard;
    py::dict kv;
    for (const stream::container::KvEntry& e : file_->kv().entries()) {
      kv[py::str(e.key.data(), e.key.size())] = KvScalar(e.value);
    }
    ThrowIfTruncated(guard);
    return kv;
  }

  // (descriptor fields, [buffer arrays]) of a tensor, the buffers copied
  // out of the map; KeyError when absent.
  py::tuple Tensor(const std::string& name) const {
    CheckIntact();
    SigbusGuard guard;
    const stream::container::IndexEntry* e = file_->Find(name);
    ThrowIfTruncated(guard);
    if (e == nullptr) throw py::key_error(name);
    auto d = std::make_unique<TensorDescriptor>();
    const absl::Status read = file_->ReadDescriptor(*e, d.get());
    ThrowIfTruncated(guard);
    ThrowIfError(read);
    py::list buffers;
    for (uint32_t i = 0; i < d->buffer_count; ++i) {
      absl::StatusOr<absl::Span<const uint8_t>> b = file_->Buffer(*e, *d, i);
      ThrowIfError(b.status());
      buffers.append(AlignedCopy(*b, d->buffers[i].alignment));
      ThrowIfTruncated(guard);
    }
    return py::make_tuple(DescriptorToDict(*d), buffers);
  }

 private:
  // Once a read faulted, the pages past the file's end read as zeros: no
  // later read may trust the map, whatever the file holds now.
  void ThrowIfTruncated(const SigbusGuard& guard) const {
    if (guard.faulted()) {
      truncated_ = true;
      ThrowTruncated(path_);
    }
  }
  void CheckIntact() const {
    if (truncated_) ThrowTruncated(path_);
  }

  std::string path_;
  std::unique_ptr<stream::container::HrryFile> file_;
  mutable bool truncated_ = false;
};

}  // namespace

void BindFile(py::module_& m) {
  py::class_<PyHrryFile>(m, "HrryFile")
      .def_static("open", &PyHrryFile::Open, py::arg("path"),
                  py::arg("permissive") = false)
      .def("names", &PyHrryFile::Names)
      .def("kv", &PyHrryFile::Kv)
      .def("tensor", &PyHrryFile::Tensor);
}

}  // namespace hurray::python
