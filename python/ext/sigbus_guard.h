// SigbusGuard: turns a SIGBUS raised while this thread reads a file mapping
// into a flag the caller checks, instead of a signal that kills Python.
//
// A mapped file that another process truncates faults (SIGBUS) on every page
// past its new end. While a guard lives, such a fault on the guarding thread
// maps a zero page over the faulting page (MAP_FIXED, anonymous, read-only)
// and records it; the read goes on over zeros and the caller, seeing
// faulted(), throws the bytes away and raises. Faults of other threads, or
// outside any guard, go to the handler that was installed before (Python's
// faulthandler, or the default action).
//
// One guard at a time: the Python binding holds the GIL around every guarded
// read. The guard covers C++ reads only; memory handed to Python must not be
// a view of the mapping (python/ext/file_bindings.cc copies).
#ifndef HURRAY_PYTHON_EXT_SIGBUS_GUARD_H_
#define HURRAY_PYTHON_EXT_SIGBUS_GUARD_H_

#include <signal.h>

namespace hurray::python {

class SigbusGuard {
 public:
  SigbusGuard();
  ~SigbusGuard();
  SigbusGuard(const SigbusGuard&) = delete;
  SigbusGuard& operator=(const SigbusGuard&) = delete;

  // True when a read under this guard hit a page past the file's end.
  [[nodiscard]] bool faulted() const;

 private:
  struct sigaction previous_;
  bool installed_ = false;
};

}  // namespace hurray::python

#endif  // HURRAY_PYTHON_EXT_SIGBUS_GUARD_H_
