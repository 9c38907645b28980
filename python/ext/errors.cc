#include "python/ext/errors.h"

#include <string>

#include "absl/strings/match.h"
#include "parser/rules.h"

namespace hurray::python {
namespace {

struct ErrorClasses {
  py::object invalid, file, stream;
};

ErrorClasses& Classes() {
  static ErrorClasses* classes = new ErrorClasses();  // never destroyed
  return *classes;
}

// Rules that say the bytes stopped or could not be read, not that they were
// wrong (StreamError in Python).
bool IsStreamRule(absl::string_view rule) {
  return rule == "DESC-HDR-01" || absl::StartsWith(rule, "STREAM-");
}

}  // namespace

void SetErrorClasses(py::object invalid, py::object file, py::object stream) {
  Classes() =
      ErrorClasses{std::move(invalid), std::move(file), std::move(stream)};
}

void RaiseStatus(const absl::Status& status) {
  const std::string message(status.message());
  const ErrorClasses& c = Classes();
  const std::optional<absl::string_view> rule = RuleIdOf(status);
  py::object cls;
  py::object rule_value = py::none(), offset_value = py::none();
  if (rule.has_value()) {
    cls = IsStreamRule(*rule) ? c.stream : c.invalid;
    rule_value = py::str(std::string(*rule));
    if (std::optional<uint64_t> offset = OffsetOf(status)) {
      offset_value = py::int_(*offset);
    }
  } else if (status.code() == absl::StatusCode::kInvalidArgument ||
             status.code() == absl::StatusCode::kOutOfRange ||
             status.code() == absl::StatusCode::kFailedPrecondition) {
    cls = c.invalid;
  } else if (status.code() == absl::StatusCode::kUnimplemented) {
    PyErr_SetString(PyExc_NotImplementedError, message.c_str());
    throw py::error_already_set();
  } else if (status.code() == absl::StatusCode::kResourceExhausted) {
    PyErr_SetString(PyExc_MemoryError, message.c_str());
    throw py::error_already_set();
  } else {
    cls = c.file;
  }
  if (!cls) {  // the package did not register its classes
    PyErr_SetString(PyExc_ValueError, message.c_str());
    throw py::error_already_set();
  }
  py::object error = cls(message, rule_value, offset_value);
  PyErr_SetObject(cls.ptr(), error.ptr());
  throw py::error_already_set();
}

}  // namespace hurray::python
