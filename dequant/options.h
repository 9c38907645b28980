// What a dequantization is asked to do and what it noticed: the options and
// warnings shared by the streaming Dequantizer (dequant/dequantizer.h) and the
// scalar reference (dequant/scalar.h). Kept apart from both so that the
// reference does not depend on the SIMD kernels to name them.
#ifndef HURRAY_DEQUANT_OPTIONS_H_
#define HURRAY_DEQUANT_OPTIONS_H_

#include <cstdint>

#include "parser/rules.h"

namespace hurray::dequant {

// How the Dequantizer writes its output: through the caches, or with
// non-temporal stores that skip reading the destination first (faster for
// outputs far larger than the caches, slower when the caller reads them
// right away). The scalar reference ignores it.
enum class StoreMode : uint8_t {
  kAuto,  // non-temporal when one piece writes >= 32 MiB
  kCached,
  kNonTemporal,
};

struct DequantOptions {
  // Strict applies the strict-only data-level rules (TYPE-PACK-02/03/04,
  // QNT-PBA-12/13); permissive skips them.
  Mode mode = Mode::kStrict;
  StoreMode stores = StoreMode::kAuto;
  // DequantizeAll and Dequantizer::ConsumeWhole: split a row-major tensor's
  // data at group boundaries over this many threads (the caller's included).
  // Bit-identical to one thread, the same warnings and rejections.
  int threads = 1;
  // ... but no thread for fewer outputs than this: starting and joining a
  // thread took 70-80 us on the 2-vCPU host, the time to dequantize about
  // 600 Ki elements from DRAM or 2 Mi in L2 (bench/RESULTS.md, issue 18:
  // 64 Ki elements on 2 threads ran 11-50 x slower than on one). 0: split
  // whatever the size (the tests of the split use it).
  uint64_t min_elements_per_thread = uint64_t{1} << 20;
};

// How many parts ConsumeWhole cuts `groups` groups of a tensor of `elements`
// outputs into: at most `threads`, each of 64 groups or more (a line of
// output or more per boundary) and of min_elements_per_thread outputs or
// more; at least 1.
inline uint64_t ThreadParts(uint64_t groups, uint64_t elements, int threads,
                            uint64_t min_elements_per_thread) {
  uint64_t parts = threads < 1 ? 1 : static_cast<uint64_t>(threads);
  parts = parts < groups / 64 ? parts : groups / 64;
  if (min_elements_per_thread > 0) {
    const uint64_t by_size = elements / min_elements_per_thread;
    parts = parts < by_size ? parts : by_size;
  }
  return parts < 1 ? 1 : parts;
}

// Non-zero padding in a partial trailing block is a warning, never a
// rejection (RESOLUTIONS.md 2).
struct DequantWarnings {
  // Padding elements of partial trailing blocks holding a non-zero code, and
  // the lowest element offset (ElementAddresser::Offset; the packed-grid
  // element index for row-major) of one.
  uint64_t nonzero_padding = 0;
  uint64_t first_nonzero_padding = 0;
};

}  // namespace hurray::dequant

#endif  // HURRAY_DEQUANT_OPTIONS_H_
