// `hurray.ingest` over stream::Ingest() (stream/ingest/ingest.h), the call
// the CLI and the C ABI use (ingest_bindings.cc).
#ifndef HURRAY_PYTHON_EXT_INGEST_BINDINGS_H_
#define HURRAY_PYTHON_EXT_INGEST_BINDINGS_H_

#include <pybind11/pybind11.h>

namespace hurray::python {

void BindIngest(pybind11::module_& m);

}  // namespace hurray::python

#endif  // HURRAY_PYTHON_EXT_INGEST_BINDINGS_H_
