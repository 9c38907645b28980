// `hurray.convert` over stream::convert::ConvertFile
// (stream/convert/convert_file.h), the call the CLI's convert and the C
// ABI's hurray_convert make (convert_bindings.cc).
#ifndef HURRAY_PYTHON_EXT_CONVERT_BINDINGS_H_
#define HURRAY_PYTHON_EXT_CONVERT_BINDINGS_H_

#include <pybind11/pybind11.h>

namespace hurray::python {

void BindConvert(pybind11::module_& m);

}  // namespace hurray::python

#endif  // HURRAY_PYTHON_EXT_CONVERT_BINDINGS_H_
