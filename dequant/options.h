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
};

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
