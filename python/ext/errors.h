// How the library's absl::Status errors reach Python.
//
// ThrowIfError raises, for a status with a rule id (parser/rules.h
// RuleIdOf), the package's InvalidDescriptorError — or StreamError for the
// rules that say a stream ended or failed — carrying `.rule` and `.offset`;
// other statuses raise FileError (NotFound, PermissionDenied, DataLoss and
// other I/O) or ValueError. The classes are defined in Python
// (python/src/hurray/_errors.py) and handed over once at import.
#ifndef HURRAY_PYTHON_EXT_ERRORS_H_
#define HURRAY_PYTHON_EXT_ERRORS_H_

#include <pybind11/pybind11.h>

#include "absl/status/status.h"

namespace hurray::python {

namespace py = pybind11;

// Called once by the package: (InvalidDescriptorError, FileError,
// StreamError).
void SetErrorClasses(py::object invalid, py::object file, py::object stream);

[[noreturn]] void RaiseStatus(const absl::Status& status);

inline void ThrowIfError(const absl::Status& status) {
  if (!status.ok()) RaiseStatus(status);
}

}  // namespace hurray::python

#endif  // HURRAY_PYTHON_EXT_ERRORS_H_
