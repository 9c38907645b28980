// Highway's two dispatch entry points (hwy/targets.h), forwarding to
// libhwy.so.1 loaded on the first call rather than at start-up.
//
// libhwy.so.1.0.3 has a static initialiser that measures the timer
// (hwy::platform::TimerResolution, for its nanobenchmark): ~5 ms of CPU at
// every start of a binary that links it, a third of a 16-byte `hurray
// convert` (issue 47 item 3), which never runs a kernel. A binary that
// links this library (alwayslink) and `-Wl,--as-needed` before -lhwy
// (third_party/static_link.bzl) has no DT_NEEDED on libhwy when these two
// are all it uses: HWY_DYNAMIC_DISPATCH calls GetChosenTarget, whose first
// dispatch calls SupportedTargets. The library is loaded then, once.
//
// Should libhwy.so.1 not load, dispatch keeps to HWY_STATIC_TARGET, the
// baseline the binary was compiled for: the same values, slower.
#include <dlfcn.h>

#include <cstdint>

#include "hwy/targets.h"

namespace hwy {
namespace {

struct Entry {
  int64_t (*supported_targets)() = nullptr;
  ChosenTarget& (*get_chosen_target)() = nullptr;
};

const Entry& Library() {
  static const Entry entry = [] {
    Entry e;
    void* lib = ::dlopen("libhwy.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) return e;
    auto* supported = reinterpret_cast<int64_t (*)()>(
        ::dlsym(lib, "_ZN3hwy16SupportedTargetsEv"));
    auto* chosen = reinterpret_cast<ChosenTarget& (*)()>(
        ::dlsym(lib, "_ZN3hwy15GetChosenTargetEv"));
    if (supported != nullptr && chosen != nullptr) {
      e.supported_targets = supported;
      e.get_chosen_target = chosen;
    }
    return e;
  }();
  return entry;
}

}  // namespace

int64_t SupportedTargets() {
  const Entry& e = Library();
  return e.supported_targets != nullptr ? e.supported_targets()
                                        : HWY_STATIC_TARGET;
}

ChosenTarget& GetChosenTarget() {
  const Entry& e = Library();
  if (e.get_chosen_target != nullptr) return e.get_chosen_target();
  static ChosenTarget fallback;
  return fallback;
}

}  // namespace hwy
