// The native protocol (tensor_capsule.h): a Tensor's descriptor and buffers
// handed to another binding in one PyCapsule, and taken back out of one.
#include "python/ext/capsule_bindings.h"

#include <Python.h>
#include <pybind11/numpy.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "python/ext/buffers.h"
#include "python/ext/tensor_capsule.h"

namespace hurray::python {
namespace {

// What a capsule we produce owns: the descriptor's bytes and a Py_buffer
// per buffer (which keeps each exporter alive and its memory pinned).
struct Export {
  HurrayTensorCapsule payload{};
  std::string descriptor;
  std::vector<Py_buffer> views;
  std::vector<void*> pointers;
  std::vector<uint64_t> sizes;
};

void DeleteExport(HurrayTensorCapsule* payload) {
  auto* e = static_cast<Export*>(payload->manager_ctx);
  // During interpreter shutdown the exporters may be gone already: leak
  // rather than touch them.
  if (Py_IsInitialized()) {
    for (Py_buffer& v : e->views) PyBuffer_Release(&v);
  }
  delete e;
}

void CapsuleDestructor(PyObject* capsule) {
  // A consumed capsule was renamed: the consumer calls the deleter.
  if (!PyCapsule_IsValid(capsule, HURRAY_TENSOR_CAPSULE_NAME)) return;
  auto* payload = static_cast<HurrayTensorCapsule*>(
      PyCapsule_GetPointer(capsule, HURRAY_TENSOR_CAPSULE_NAME));
  if (payload != nullptr && payload->deleter != nullptr) {
    payload->deleter(payload);
  }
}

py::object MakeCapsule(py::bytes descriptor, py::sequence buffers) {
  auto e = std::make_unique<Export>();
  e->descriptor = descriptor;
  bool read_only = false;
  e->views.reserve(buffers.size());
  for (const py::handle b : buffers) {
    Py_buffer view;
    if (PyObject_GetBuffer(b.ptr(), &view, PyBUF_C_CONTIGUOUS) != 0) {
      for (Py_buffer& v : e->views) PyBuffer_Release(&v);
      throw py::error_already_set();
    }
    read_only = read_only || view.readonly;
    e->views.push_back(view);
    e->pointers.push_back(view.buf);
    e->sizes.push_back(static_cast<uint64_t>(view.len));
  }
  HurrayTensorCapsule& p = e->payload;
  p.version = HURRAY_TENSOR_CAPSULE_VERSION;
  p.flags = read_only ? HURRAY_TENSOR_READ_ONLY : 0;
  p.descriptor = reinterpret_cast<const uint8_t*>(e->descriptor.data());
  p.descriptor_size = e->descriptor.size();
  p.buffer_count = static_cast<uint32_t>(e->pointers.size());
  p.buffers = e->pointers.data();
  p.buffer_sizes = e->sizes.data();
  p.manager_ctx = e.get();
  p.deleter = &DeleteExport;
  PyObject* capsule =
      PyCapsule_New(&p, HURRAY_TENSOR_CAPSULE_NAME, &CapsuleDestructor);
  if (capsule == nullptr) {
    for (Py_buffer& v : e->views) PyBuffer_Release(&v);
    throw py::error_already_set();
  }
  e.release();  // the capsule owns it now
  return py::reinterpret_steal<py::object>(capsule);
}

// (descriptor bytes, [uint8 arrays over the producer's buffers]); the
// capsule is marked consumed, and the arrays' base calls the producer's
// deleter when the last of them goes.
py::tuple OpenCapsule(py::object capsule) {
  if (!PyCapsule_IsValid(capsule.ptr(), HURRAY_TENSOR_CAPSULE_NAME)) {
    throw py::type_error(
        "__hurray__() must return an unconsumed PyCapsule named "
        "'hurray_tensor'");
  }
  auto* p = static_cast<HurrayTensorCapsule*>(
      PyCapsule_GetPointer(capsule.ptr(), HURRAY_TENSOR_CAPSULE_NAME));
  if (p == nullptr) throw py::error_already_set();
  if (p->version != HURRAY_TENSOR_CAPSULE_VERSION) {
    throw py::value_error("hurray_tensor capsule of version " +
                          std::to_string(p->version) + ", expected " +
                          std::to_string(HURRAY_TENSOR_CAPSULE_VERSION));
  }
  if (PyCapsule_SetName(capsule.ptr(), HURRAY_TENSOR_CAPSULE_USED_NAME) != 0) {
    throw py::error_already_set();
  }
  // From here the payload is ours to release.
  py::capsule owner(p, [](void* payload) {
    auto* q = static_cast<HurrayTensorCapsule*>(payload);
    if (q->deleter != nullptr) q->deleter(q);
  });
  py::bytes descriptor(reinterpret_cast<const char*>(p->descriptor),
                       p->descriptor_size);
  py::list arrays;
  const bool read_only = (p->flags & HURRAY_TENSOR_READ_ONLY) != 0;
  for (uint32_t i = 0; i < p->buffer_count; ++i) {
    py::array a(py::dtype::of<uint8_t>(),
                {static_cast<py::ssize_t>(p->buffer_sizes[i])},
                static_cast<uint8_t*>(p->buffers[i]), owner);
    if (read_only) {
      py::detail::array_proxy(a.ptr())->flags &=
          ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
    }
    arrays.append(a);
  }
  return py::make_tuple(descriptor, arrays);
}

}  // namespace

void BindCapsules(py::module_& m) {
  m.def("make_tensor_capsule", &MakeCapsule, py::arg("descriptor"),
        py::arg("buffers"));
  m.def("open_tensor_capsule", &OpenCapsule, py::arg("capsule"));
}

}  // namespace hurray::python
