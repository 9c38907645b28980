#include "python/ext/sigbus_guard.h"

#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

namespace hurray::python {
namespace {

// The guarding thread's id (0: none), the handler that was installed before
// the guard's, and whether a fault was papered over. Plain globals: only
// async-signal-safe operations touch them in the handler.
std::atomic<long> guarded_tid{0};
struct sigaction previous_action;
volatile sig_atomic_t fault_seen = 0;
long page_size = 0;

long ThreadId() { return syscall(SYS_gettid); }

void OnSigbus(int sig, siginfo_t* info, void* context) {
  if (guarded_tid.load() == ThreadId() && info != nullptr &&
      info->si_addr != nullptr && page_size > 0) {
    const uintptr_t page = reinterpret_cast<uintptr_t>(info->si_addr) &
                           ~static_cast<uintptr_t>(page_size - 1);
    void* zero = mmap(reinterpret_cast<void*>(page), page_size, PROT_READ,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    if (zero != MAP_FAILED) {
      fault_seen = 1;
      return;  // the faulting read is retried, over zeros
    }
  }
  // Not ours: what would have happened without the guard.
  if ((previous_action.sa_flags & SA_SIGINFO) != 0 &&
      previous_action.sa_sigaction != nullptr) {
    previous_action.sa_sigaction(sig, info, context);
    return;
  }
  if (previous_action.sa_handler != SIG_DFL &&
      previous_action.sa_handler != SIG_IGN &&
      previous_action.sa_handler != nullptr) {
    previous_action.sa_handler(sig);
    return;
  }
  // Default action: put it back; the retried access faults again and
  // terminates as it would have.
  sigaction(SIGBUS, &previous_action, nullptr);
}

}  // namespace

SigbusGuard::SigbusGuard() {
  if (page_size == 0) page_size = sysconf(_SC_PAGESIZE);
  fault_seen = 0;
  struct sigaction action = {};
  action.sa_sigaction = &OnSigbus;
  action.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&action.sa_mask);
  if (sigaction(SIGBUS, &action, &previous_) == 0) {
    previous_action = previous_;
    installed_ = true;
    guarded_tid.store(ThreadId());
  }
}

SigbusGuard::~SigbusGuard() {
  if (!installed_) return;
  guarded_tid.store(0);
  sigaction(SIGBUS, &previous_, nullptr);
}

bool SigbusGuard::faulted() const { return fault_seen != 0; }

}  // namespace hurray::python
