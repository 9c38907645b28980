// Read-only views of Python buffer-protocol objects (bytes, bytearray,
// memoryview, numpy arrays) as byte spans, without copying.
#ifndef HURRAY_PYTHON_EXT_BUFFERS_H_
#define HURRAY_PYTHON_EXT_BUFFERS_H_

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/types/span.h"

namespace hurray::python {

namespace py = pybind11;

// One contiguous buffer, released when destroyed. Raises TypeError (through
// py::error_already_set) for an object without a contiguous buffer.
class ByteView {
 public:
  explicit ByteView(py::handle object) {
    if (PyObject_GetBuffer(object.ptr(), &view_, PyBUF_C_CONTIGUOUS) != 0) {
      throw py::error_already_set();
    }
  }
  ~ByteView() { PyBuffer_Release(&view_); }
  ByteView(const ByteView&) = delete;
  ByteView& operator=(const ByteView&) = delete;

  absl::Span<const uint8_t> span() const {
    return {static_cast<const uint8_t*>(view_.buf),
            static_cast<size_t>(view_.len)};
  }

 private:
  Py_buffer view_;
};

// Views of every object of a sequence, in order.
class ByteViews {
 public:
  explicit ByteViews(const py::sequence& objects) {
    views_.reserve(objects.size());
    spans_.reserve(objects.size());
    for (const py::handle object : objects) {
      views_.push_back(std::make_unique<ByteView>(object));
      spans_.push_back(views_.back()->span());
    }
  }
  absl::Span<const absl::Span<const uint8_t>> spans() const { return spans_; }

 private:
  std::vector<std::unique_ptr<ByteView>> views_;
  std::vector<absl::Span<const uint8_t>> spans_;
};

// A uint8 array that takes ownership of `bytes` (no copy): the buffers the
// readers collect become numpy arrays as they are.
inline py::array OwnedBytes(std::string bytes) {
  auto* owned = new std::string(std::move(bytes));
  py::capsule free_when_done(
      owned, [](void* p) { delete static_cast<std::string*>(p); });
  return py::array(py::dtype::of<uint8_t>(),
                   {static_cast<py::ssize_t>(owned->size())},
                   reinterpret_cast<uint8_t*>(owned->data()), free_when_done);
}

}  // namespace hurray::python

#endif  // HURRAY_PYTHON_EXT_BUFFERS_H_
