// Registers hurray._hurray.HrryFile, the random-access .hrry reader
// (file_bindings.cc), on `m`.
#ifndef HURRAY_PYTHON_EXT_FILE_BINDINGS_H_
#define HURRAY_PYTHON_EXT_FILE_BINDINGS_H_

#include <pybind11/pybind11.h>

namespace hurray::python {

void BindFile(pybind11::module_& m);

}  // namespace hurray::python

#endif  // HURRAY_PYTHON_EXT_FILE_BINDINGS_H_
