// Data-level checks of a tensor's element bytes (REJECT-RULES.md §3.3,
// element-types.md): the packing rules TYPE-PACK-01…04 and the reserved
// float8_e8m0 patterns of TYPE-PACK-05.
//
// - TYPE-PACK-01, bool: unused high bits of the final byte not 0
//   (§ Boolean Type). Strict only.
// - TYPE-PACK-02, int4/uint4/float4_e2m1: odd count and the high nibble of
//   the last byte not 0 (§ 4-bit packing). Strict only.
// - TYPE-PACK-03, int2/uint2: unused bit pairs of the last byte not 0
//   (§ 2-bit packing). Strict only.
// - TYPE-PACK-04, float6_e2m3/float6_e3m2: unused bits of the last 3-byte
//   group not 0 (§ 6-bit packing). Strict only.
// - TYPE-PACK-05, float8_e8m0: an element is 0x00 or 0xFF (§ Float8
//   Variants). Always.
//
// Scope: contiguous tensors, i.e. row-major and column-major layouts with a
// static shape and a named (non-extension) element type. Their elements are
// the storage grid of buffer 0 from byte_offset on: the logical element
// count, or for per-block affine and NF4 the grid with the quantization axis
// rounded up to whole blocks (per-block-affine.md § Padding), the same grid
// the validator sizes (BUF-SZ-01/11) and the dequantizer walks. Other layouts
// have no "final byte" of a packed grid and may hold non-element bytes
// (strides, tile and curve padding), so nothing is checked there.
//
// Offsets are element indices in that storage grid (OffsetUnit::kElement),
// as the dequantizer reports TYPE-PACK-02/03/04 (dequant/dequantizer.h): the
// first unused slot holding a non-zero value, or the first reserved e8m0
// element. The same rejection whatever the chunking; with several faults the
// first one in buffer order. No allocation.
//
// Usage by a reader that sees the data as it passes (a TensorSink):
//
//   ElementDataChecker check(descriptor, mode);     // OnDescriptor
//   Rejection r = check.Feed(buffer_index, offset_in_buffer, piece);
//                                                    // each OnBufferPiece
//   // r.ok() is false from the first violation on; ToStatus(r) for the
//   // absl::Status with rule id and element offset.
#ifndef HURRAY_PARSER_ELEMENT_CHECKS_H_
#define HURRAY_PARSER_ELEMENT_CHECKS_H_

#include <cstdint>

#include "absl/types/span.h"
#include "parser/descriptor.h"
#include "parser/rules.h"

namespace hurray {

class ElementDataChecker {
 public:
  // `d` must have passed the validator; nothing of it is referenced later.
  explicit ElementDataChecker(const TensorDescriptor& d,
                              Mode mode = Mode::kStrict);

  // False when no rule applies to the tensor in this mode (Feed then
  // accepts everything).
  bool active() const { return rule_ != Rule::kNone; }
  // The rule this tensor is checked against, kNone when inactive.
  Rule rule() const { return rule_; }

  // The next bytes of buffer `buffer_index`, starting at its byte
  // `offset_in_buffer`. Pieces of buffer 0 arrive in order (any sizes, empty
  // ones allowed); pieces of other buffers are ignored. Once a rejection is
  // returned, every later call returns it again.
  Rejection Feed(uint32_t buffer_index, uint64_t offset_in_buffer,
                 absl::Span<const uint8_t> piece);

  const Rejection& rejection() const { return rejection_; }

 private:
  void CheckTail();

  Rule rule_ = Rule::kNone;
  uint32_t bits_ = 0;        // bits per element: 1, 2, 4, 6 or 8
  uint64_t begin_ = 0;       // first element byte in buffer 0
  uint64_t end_ = 0;         // one past the last element byte
  uint64_t tail_begin_ = 0;  // first byte of the final packed group
  uint32_t tail_used_ = 0;   // elements in the final group; 0: no tail
  uint32_t tail_seen_ = 0;   // bytes of the final group received
  uint8_t tail_[3] = {};     // the final group's bytes
  uint64_t groups_ = 0;      // packed groups in the grid
  Rejection rejection_;
};

// The whole of buffer 0 at once: ElementDataChecker(d, mode).Feed(0, 0,
// buffer0).
Rejection CheckElementData(const TensorDescriptor& d,
                           absl::Span<const uint8_t> buffer0,
                           Mode mode = Mode::kStrict);

}  // namespace hurray

#endif  // HURRAY_PARSER_ELEMENT_CHECKS_H_
