// Registers the descriptor-layer bindings (codec_bindings.cc) on `m`.
#ifndef HURRAY_PYTHON_EXT_CODEC_BINDINGS_H_
#define HURRAY_PYTHON_EXT_CODEC_BINDINGS_H_

#include <pybind11/pybind11.h>

namespace hurray::python {

void BindCodec(pybind11::module_& m);
void BindContainers(pybind11::module_& m);  // container_bindings.cc

}  // namespace hurray::python

#endif  // HURRAY_PYTHON_EXT_CODEC_BINDINGS_H_
