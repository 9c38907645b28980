// The `hurray._hurray` extension module: the C++ core behind the Python
// package (python/src/hurray/). No format logic lives here or in the
// package: parsing, validation, dequantization and the containers are the
// library's own (parser/, dequant/, stream/).
#include <pybind11/pybind11.h>

#include "python/ext/capsule_bindings.h"
#include "python/ext/codec_bindings.h"
#include "python/ext/convert_bindings.h"
#include "python/ext/errors.h"
#include "python/ext/ingest_bindings.h"

PYBIND11_MODULE(_hurray, m) {
  m.doc() = "C++ core of the hurray package (hurray-cpp).";
  m.def("_set_error_classes", &hurray::python::SetErrorClasses);
  hurray::python::BindCodec(m);
  hurray::python::BindContainers(m);
  hurray::python::BindCapsules(m);
  hurray::python::BindIngest(m);
  hurray::python::BindConvert(m);
}
