// Streaming dequantization of one quantized tensor to float32.
//
//   absl::StatusOr<Dequantizer> dq = Dequantizer::Create(descriptor, params);
//   // for each piece of the data buffer as it arrives, cut anywhere:
//   absl::Status s = dq->Feed(piece, output);   // a DequantOutput
//   ...
//   absl::Status done = dq->Finish();  // every element written?
//
// Feed is the one streaming entry point: it takes the bytes of the data
// buffer (buffer 0) from its first byte, skips the byte_offset prefix,
// ignores bytes after the tensor's last group, and carries a group cut by a
// piece boundary (a 16/32-bit value, a 6-bit 3-byte group) over in at most 3
// bytes. It picks the path from the layout (dequant/output.h):
//   - row-major storage: every element it completes is written in logical
//     row-major order into a window the output lends for the piece (bounded
//     memory whatever the tensor's size; per-block affine and NF4 padding
//     elements are skipped, RESOLUTIONS.md 2);
//   - other dense layouts (column-major, strided, tiled, Morton, Hilbert)
//     store elements out of logical order: each element it completes goes to
//     its logical row-major position in the whole-tensor memory the output
//     lends. Elements arrive in storage order (dequant/storage_walk.h); a
//     layout whose strides interleave or overlap has no such order
//     (streamable() is false) and must be fed its whole data buffer at once.
// Consume and ConsumeScattered are those two paths, for callers that hold
// the right memory already; ConsumeWhole takes a whole buffer on N threads.
// Sparse, block-paged, composite and extension layouts are Unimplemented at
// Create.
//
// Data-level rules, strict by default (DequantOptions::mode):
//   at Create: QNT-PCA-10, QNT-PCA-11, QNT-PBA-12, QNT-PBA-13 (strict),
//     QNT-NF4-07, QNT-MX-07, offsets as documented in dequant/params.h;
//   while feeding: TYPE-PACK-02/03/04 (strict) for non-zero unused bits
//     after the last element of a 4-, 2- or 6-bit tensor; the offset is the
//     element index (in the data buffer's packed grid) of the first unused
//     slot that is not zero. Row- and column-major only: the other layouts
//     have no "last element" of a packed grid.
// Non-zero padding in a partial trailing block is a warning, never a
// rejection (RESOLUTIONS.md 2): see warnings().
#ifndef HURRAY_DEQUANT_DEQUANTIZER_H_
#define HURRAY_DEQUANT_DEQUANTIZER_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "dequant/minifloat.h"
#include "dequant/options.h"
#include "dequant/output.h"
#include "dequant/params.h"
#include "dequant/plan.h"
#include "dequant/storage_walk.h"
#include "parser/descriptor.h"
#include "parser/rules.h"

namespace hurray::dequant {

// One Dequantizer reads one tensor's data stream; it is movable, not
// thread-safe, and holds only the tensor's plan and parameters (no data).
class Dequantizer {
 public:
  // `d` is a validated descriptor; `params` its parameter buffers (see
  // ParametersFromBuffers). The parameters are read, checked and copied
  // here; neither `d` nor `params` is referenced afterwards.
  [[nodiscard]] static absl::StatusOr<Dequantizer> Create(
      const TensorDescriptor& d, const ParameterBytes& params,
      const DequantOptions& options = DequantOptions());
  // The same, with `plan` = MakePlan(d) already built by the caller (it is
  // not built twice).
  [[nodiscard]] static absl::StatusOr<Dequantizer> Create(
      Plan plan, const TensorDescriptor& d, const ParameterBytes& params,
      const DequantOptions& options = DequantOptions());

  // Consumes the next piece of the data buffer and writes the elements it
  // completes to `out` (see dequant/output.h for which memory it asks for).
  // Errors: ResourceExhausted, nothing consumed, when `out` lends too little
  // memory; OutOfRange when the piece runs past the data buffer's byte_size;
  // FailedPrecondition for a piece that is not the whole data buffer when
  // !streamable(); the status of out.Commit; a data-level rejection
  // (TYPE-PACK-0x) stops the dequantizer, and every later call returns it.
  [[nodiscard]] absl::Status Feed(absl::Span<const uint8_t> piece,
                                  DequantOutput& out);

  // How many floats Consume writes for a next piece of `piece_bytes` bytes
  // (0 for a layout that needs ConsumeScattered).
  uint64_t OutputCountFor(size_t piece_bytes) const;

  // Consumes the next piece of the data buffer and writes the elements it
  // completes to out[0, *elements_written). Errors: InvalidArgument without
  // consuming anything when `out` is shorter than OutputCountFor(), OutOfRange
  // when the piece runs past the data buffer's byte_size; a data-level
  // rejection (TYPE-PACK-0x) stops the dequantizer, and every later call
  // returns it. *elements_written counts what was written, also on error.
  // Row-major storage only (FailedPrecondition otherwise: in_order()).
  [[nodiscard]] absl::Status Consume(absl::Span<const uint8_t> piece,
                                     absl::Span<float> out,
                                     size_t* elements_written);

  // Consumes the next piece of the data buffer and writes every element it
  // completes to tensor[logical row-major index]. `tensor` holds
  // plan().logical_elements floats (InvalidArgument otherwise, nothing
  // consumed). Any dense layout. Same errors as Consume; besides,
  // FailedPrecondition when !streamable() and the piece is not the whole
  // data buffer.
  [[nodiscard]] absl::Status ConsumeScattered(absl::Span<const uint8_t> piece,
                                              absl::Span<float> tensor);

  // The whole data buffer at once, from a fresh (or Restart()ed)
  // Dequantizer, into `tensor` (plan().logical_elements floats), split at
  // group boundaries over `threads` threads (the caller's included; fewer
  // for small tensors: options.h ThreadParts) for
  // row-major storage: bit-identical to one thread, the same warnings and
  // rejections. Otherwise (other layouts, data shorter than the tensor, a
  // started Dequantizer) it is ConsumeScattered on the calling thread.
  [[nodiscard]] absl::Status ConsumeWhole(absl::Span<const uint8_t> data,
                                          absl::Span<float> tensor,
                                          int threads);

  // OK when every element has been written; OutOfRange when data is missing;
  // the rejection if one stopped the dequantizer.
  [[nodiscard]] absl::Status Finish() const;

  // Rewinds to the first byte of the data buffer, keeping the parameters
  // (to dequantize the same tensor's data again, e.g. a re-sent buffer).
  void Restart();

  bool done() const {
    return walk_ != nullptr ? walk_done_ : pos_ == plan_.storage_elements;
  }
  uint64_t elements_written() const {
    return walk_ != nullptr ? scattered_ : plan_.LogicalBefore(pos_);
  }
  // Consume works (row-major storage); otherwise use ConsumeScattered.
  bool in_order() const { return walk_ == nullptr; }
  // ConsumeScattered accepts pieces (false: only the whole buffer at once).
  bool streamable() const;
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
  [[nodiscard]] absl::Status EmitGroups(const uint8_t* src, uint64_t groups,
                                        float** out);
  // EmitGroups from storage element *pos, with its own output cursor and
  // warnings (what parallel parts run): the TYPE-PACK rejection, or OK.
  [[nodiscard]] absl::Status EmitGroupsAt(const uint8_t* src, uint64_t groups,
                                          bool stream, uint64_t* pos,
                                          float** out,
                                          DequantWarnings* warnings) const;
  void CheckPadding(const uint8_t* src, uint64_t src_first, uint64_t first,
                    uint64_t count, DequantWarnings* warnings) const;

  // ConsumeScattered's loop over the storage walk; `piece` starts at byte
  // bytes_seen_ of the data buffer.
  [[nodiscard]] absl::Status Scatter(absl::Span<const uint8_t> piece,
                                     float* tensor);
  // The bits of the element at bit `bit` of the data buffer, from `piece` or
  // the bytes carried before it.
  uint32_t CodeAt(uint64_t bit, absl::Span<const uint8_t> piece) const;
  // Scatter's element loop for codes of kBits bits.
  template <uint32_t kBits>
  void ScatterElements(absl::Span<const uint8_t> piece, float* tensor);

  Plan plan_;
  Mode mode_ = Mode::kStrict;
  StoreMode stores_ = StoreMode::kAuto;
  uint64_t min_elements_per_thread_ = 0;  // DequantOptions'
  // Parameters in access order: buffer order, except per-block schemes with
  // inner > 1, where the blocks of one [outer, block] pair are made
  // contiguous over the inner dimensions.
  std::vector<float> scales_;
  std::vector<int32_t> zero_points_;  // empty: all zero
  std::vector<float> zero_points_f_;  // Run::zero_points_f (or empty)
  bool wide_ = false;    // some zero point needs the 64-bit kernels
  bool stream_ = false;  // this Consume writes with non-temporal stores

  uint64_t pos_ = 0;          // next storage element
  uint64_t bytes_seen_ = 0;   // of the data buffer
  uint64_t prefix_left_ = 0;  // byte_offset bytes still to skip
  std::array<uint8_t, 4> carry_{};
  size_t carry_len_ = 0;
  absl::Status status_;
  DequantWarnings warnings_;

  // Other layouts: the storage-order walk, the last bytes before the next
  // piece, and the elements written.
  std::unique_ptr<StorageWalk> walk_;
  // Codes of at most 8 bits: value_of_code_ (NF4 table, minifloat value)
  // or int_of_code_ (the sign-extended integer), by code.
  std::vector<float> value_of_code_;
  std::vector<int32_t> int_of_code_;
  bool walk_done_ = false;
  bool pack_check_ = false;  // column-major: unused bits still to check
  std::array<uint8_t, 8> tail_{};
  size_t tail_len_ = 0;
  uint64_t scattered_ = 0;
};

// One shot: `data` is the whole data buffer (buffer 0). `out` is resized to
// the logical element count. ResourceExhausted for a non-row-major tensor of
// more than 16 Mi elements and more than 64 per data byte (broadcast strides
// make any count possible): ConsumeScattered takes the caller's output.
[[nodiscard]] absl::Status DequantizeAll(
    const TensorDescriptor& d, absl::Span<const uint8_t> data,
    const ParameterBytes& params, std::vector<float>* out,
    const DequantOptions& options = DequantOptions(),
    DequantWarnings* warnings = nullptr);

}  // namespace hurray::dequant

#endif  // HURRAY_DEQUANT_DEQUANTIZER_H_
