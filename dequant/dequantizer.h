// Streaming dequantization of one quantized tensor to float32.
//
//   absl::StatusOr<Dequantizer> dq = Dequantizer::Create(descriptor, params);
//   // for each piece of the data buffer as it arrives, cut anywhere:
//   std::vector<float> out(dq->OutputCountFor(piece.size()));
//   size_t written = 0;
//   absl::Status s = dq->Consume(piece, absl::MakeSpan(out), &written);
//   ...
//   absl::Status done = dq->Finish();  // every element written?
//
// Consume takes the bytes of the data buffer (buffer 0) from its first byte:
// the byte_offset prefix is skipped, bytes after the tensor's last group are
// ignored, and a group cut by a piece boundary (a 16/32-bit value, a 6-bit
// 3-byte group) is carried over in at most 3 bytes. It writes float32 for
// every element it completes, in logical row-major order; per-block affine
// and NF4 padding elements are skipped (RESOLUTIONS.md 2). Row-major storage
// only for now: other layouts are Unimplemented.
//
// Data-level rules, strict by default (ParseOptions-style Mode):
//   at Create: QNT-PCA-10, QNT-PCA-11, QNT-PBA-12, QNT-PBA-13 (strict),
//     QNT-NF4-07, QNT-MX-07, offsets as documented in dequant/params.h;
//   in Consume: TYPE-PACK-02/03/04 (strict) for non-zero unused bits after
//     the last element of a 4-, 2- or 6-bit tensor; the offset is the
//     element index (in the data buffer's packed grid) of the first unused
//     slot that is not zero.
// Non-zero padding in a partial trailing block is a warning, never a
// rejection (RESOLUTIONS.md 2): see warnings().
#ifndef HURRAY_DEQUANT_DEQUANTIZER_H_
#define HURRAY_DEQUANT_DEQUANTIZER_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "dequant/params.h"
#include "dequant/plan.h"
#include "parser/descriptor.h"
#include "parser/rules.h"

namespace hurray::dequant {

// How Consume writes its output: through the caches, or with non-temporal
// stores that skip reading the destination first (faster for outputs far
// larger than the caches, slower when the caller reads them right away).
enum class StoreMode : uint8_t {
  kAuto,  // non-temporal when one Consume writes >= 32 MiB
  kCached,
  kNonTemporal,
};

struct DequantOptions {
  Mode mode = Mode::kStrict;
  StoreMode stores = StoreMode::kAuto;
};

struct DequantWarnings {
  // Padding elements of partial trailing blocks holding a non-zero code, and
  // the packed-grid element index of the first one.
  uint64_t nonzero_padding = 0;
  uint64_t first_nonzero_padding = 0;
};

// One Dequantizer reads one tensor's data stream; it is movable, not
// thread-safe, and holds only the tensor's plan and parameters (no data).
class Dequantizer {
 public:
  // `d` is a validated descriptor; `params` its parameter buffers (see
  // ParametersFromBuffers). The parameters are read, checked and copied
  // here; neither `d` nor `params` is referenced afterwards.
  static absl::StatusOr<Dequantizer> Create(
      const TensorDescriptor& d, const ParameterBytes& params,
      const DequantOptions& options = DequantOptions());

  // How many floats Consume writes for a next piece of `piece_bytes` bytes.
  uint64_t OutputCountFor(size_t piece_bytes) const;

  // Consumes the next piece of the data buffer and writes the elements it
  // completes to out[0, *elements_written). Errors: InvalidArgument without
  // consuming anything when `out` is shorter than OutputCountFor(), OutOfRange
  // when the piece runs past the data buffer's byte_size; a data-level
  // rejection (TYPE-PACK-0x) stops the dequantizer, and every later call
  // returns it. *elements_written counts what was written, also on error.
  absl::Status Consume(absl::Span<const uint8_t> piece, absl::Span<float> out,
                       size_t* elements_written);

  // OK when every element has been written; OutOfRange when data is missing;
  // the rejection if one stopped the dequantizer.
  absl::Status Finish() const;

  // Rewinds to the first byte of the data buffer, keeping the parameters
  // (to dequantize the same tensor's data again, e.g. a re-sent buffer).
  void Restart();

  bool done() const { return pos_ == plan_.storage_elements; }
  uint64_t elements_written() const { return plan_.LogicalBefore(pos_); }
  const Plan& plan() const { return plan_; }
  const DequantWarnings& warnings() const { return warnings_; }

 private:
  Dequantizer() = default;

  // One stretch of storage elements with a single parameter pattern.
  struct Segment {
    uint64_t length = 0;  // storage elements
    bool padding = false;
    bool periodic = false;
    uint64_t phase = 0;
    uint64_t period = UINT64_MAX;
    uint64_t base = 0;  // first parameter (access order)
  };
  Segment SegmentAt(uint64_t pos) const;

  // Dequantizes `groups` whole groups at `src`, the first holding element
  // pos_, and advances pos_.
  absl::Status EmitGroups(const uint8_t* src, uint64_t groups, float** out);
  void CheckPadding(const uint8_t* src, uint64_t src_first, uint64_t first,
                    uint64_t count);

  Plan plan_;
  Mode mode_ = Mode::kStrict;
  StoreMode stores_ = StoreMode::kAuto;
  // Parameters in access order: buffer order, except per-block schemes with
  // inner > 1, where the blocks of one [outer, block] pair are made
  // contiguous over the inner dimensions.
  std::vector<float> scales_;
  std::vector<int32_t> zero_points_;  // empty: all zero
  bool wide_ = false;    // some zero point needs the 64-bit kernels
  bool stream_ = false;  // this Consume writes with non-temporal stores

  uint64_t pos_ = 0;          // next storage element
  uint64_t bytes_seen_ = 0;   // of the data buffer
  uint64_t prefix_left_ = 0;  // byte_offset bytes still to skip
  std::array<uint8_t, 4> carry_{};
  size_t carry_len_ = 0;
  absl::Status status_;
  DequantWarnings warnings_;
};

// One shot: `data` is the whole data buffer (buffer 0). `out` is resized to
// the logical element count.
absl::Status DequantizeAll(const TensorDescriptor& d,
                           absl::Span<const uint8_t> data,
                           const ParameterBytes& params,
                           std::vector<float>* out,
                           const DequantOptions& options = DequantOptions(),
                           DequantWarnings* warnings = nullptr);

}  // namespace hurray::dequant

#endif  // HURRAY_DEQUANT_DEQUANTIZER_H_
