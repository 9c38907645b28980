// Registers the native protocol's capsule functions (capsule_bindings.cc).
#ifndef HURRAY_PYTHON_EXT_CAPSULE_BINDINGS_H_
#define HURRAY_PYTHON_EXT_CAPSULE_BINDINGS_H_

#include <pybind11/pybind11.h>

namespace hurray::python {

void BindCapsules(pybind11::module_& m);

}  // namespace hurray::python

#endif  // HURRAY_PYTHON_EXT_CAPSULE_BINDINGS_H_
