// RewriteKMinBlocks (ggml_kmin.h) with AVX2, FMA and F16C: a source block
// at a time, its header decoded and its sub-blocks' steps and zero points
// chosen in vector lanes (a sub-block outside the common case, whose zero
// point does not fit at the finest step or whose d1 is 0, goes through the
// scalar Choose of ggml_kmin_parts.h), its codes unpacked, shifted and
// packed 32 at a time, and the error against ggml's values measured in
// float32 lanes. Internal to the ggml_kmin library.
#ifndef HURRAY_STREAM_CONVERT_GGML_KMIN_AVX2_H_
#define HURRAY_STREAM_CONVERT_GGML_KMIN_AVX2_H_

#include <cstdint>
#include <string>

#include "stream/convert/ggml_kmin.h"

namespace hurray::stream::convert::kmin_internal {

// Whether this CPU (and its OS) runs AVX2, FMA and F16C.
bool HasAvx2();

// RewriteKMinBlocks on a CPU where HasAvx2(); the same codes, scales, zero
// points, returned count and reason as the scalar code, the error sums
// within float32 rounding of its (RewriteKMinBlocksPath in ggml_kmin.h).
uint64_t RewriteAvx2(KMinType type, bool compact, const uint8_t* in, uint64_t n,
                     const KMinOutput& out, KMinError* error, std::string* why);

}  // namespace hurray::stream::convert::kmin_internal

#endif  // HURRAY_STREAM_CONVERT_GGML_KMIN_AVX2_H_
