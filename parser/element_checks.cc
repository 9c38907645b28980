#include "parser/element_checks.h"

#include <algorithm>
#include <cstring>

#include "parser/element_type.h"
#include "parser/quantization.h"
#include "parser/wire.h"

namespace hurray {
namespace {

// The packing rule and bits per element of a named type, or kNone.
Rule RuleOfType(uint8_t tag, uint32_t* bits) {
  switch (tag) {
    case type_tag::kBool:  // element-types.md § Boolean Type
      *bits = 1;
      return Rule::kTypePack01;
    case type_tag::kInt4:  // § 4-bit packing; § Sub-Byte Floating-Point Types
    case type_tag::kUInt4:
    case type_tag::kFloat4E2M1:
      *bits = 4;
      return Rule::kTypePack02;
    case type_tag::kInt2:  // § 2-bit packing
    case type_tag::kUInt2:
      *bits = 2;
      return Rule::kTypePack03;
    case type_tag::kFloat6E2M3:  // § 6-bit packing
    case type_tag::kFloat6E3M2:
      *bits = 6;
      return Rule::kTypePack04;
    case type_tag::kFloat8E8M0:  // § Float8 Variants
      *bits = 8;
      return Rule::kTypePack05;
    default:
      return Rule::kNone;
  }
}

// Elements of the stored grid of a contiguous tensor: the logical count, with
// the quantization axis rounded up to whole blocks for per-block affine and
// NF4 (per-block-affine.md § Padding; the validator's BUF-SZ-01/11 grid).
bool StoredElements(const TensorDescriptor& d, uint64_t* count) {
  const QuantizationDescriptor& q = d.quantization;
  const bool padded = d.has(flag::kHasQuantization) && q.interpreted() &&
                      (q.scheme_tag == scheme_tag::kPerBlockAffine ||
                       q.scheme_tag == scheme_tag::kNf4);
  if (std::find(d.shape, d.shape + d.rank, uint64_t{0}) != d.shape + d.rank) {
    *count = 0;
    return true;
  }
  uint64_t n = 1;
  for (uint32_t k = 0; k < d.rank; ++k) {
    uint64_t dim = d.shape[k];
    if (padded && k == q.axis) {
      if (q.block_size == 0) return false;
      const uint64_t blocks = dim / q.block_size + (dim % q.block_size != 0);
      if (!wire::CheckedMul(blocks, uint64_t{q.block_size}, &dim)) {
        return false;
      }
    }
    if (!wire::CheckedMul(n, dim, &n)) return false;
  }
  *count = n;
  return true;
}

}  // namespace

ElementDataChecker::ElementDataChecker(const TensorDescriptor& d, Mode mode) {
  if ((d.layout_tag != layout_tag::kRowMajor &&
       d.layout_tag != layout_tag::kColumnMajor) ||
      !d.layout_parsed || d.buffer_count == 0 ||
      d.has(flag::kHasExtensionType) || d.HasDynamicDim()) {
    return;
  }
  uint32_t bits = 0;
  const Rule rule = RuleOfType(d.type_tag, &bits);
  if (rule == Rule::kNone || !Applies(rule, mode)) return;
  uint64_t count = 0;
  uint64_t bytes = 0;
  if (!StoredElements(d, &count) || count == 0 ||
      !d.StorageBytesFor(count, &bytes) ||
      !wire::CheckedAdd(d.byte_offset, bytes, &end_)) {
    return;
  }
  begin_ = d.byte_offset;
  bits_ = bits;
  if (bits < 8) {
    // Packed: only the unused slots of the final group can be wrong.
    const uint32_t per_group = bits == 6 ? 4 : 8 / bits;
    const uint64_t group_bytes = bits == 6 ? 3 : 1;
    groups_ = count / per_group + (count % per_group != 0);
    tail_used_ = static_cast<uint32_t>(count % per_group);
    if (tail_used_ == 0) return;  // no unused slot
    tail_begin_ = end_ - group_bytes;
  }
  rule_ = rule;
}

Rejection ElementDataChecker::Feed(uint32_t buffer_index,
                                   uint64_t offset_in_buffer,
                                   absl::Span<const uint8_t> piece) {
  if (!rejection_.ok() || !active() || buffer_index != 0) return rejection_;
  const uint64_t from = std::max(offset_in_buffer, begin_);
  uint64_t piece_end = 0;
  if (!wire::CheckedAdd(offset_in_buffer, uint64_t{piece.size()}, &piece_end)) {
    piece_end = UINT64_MAX;
  }
  if (bits_ == 8) {
    // TYPE-PACK-05: 0x00 and 0xFF are reserved (NaN per OCP MX v1.0 § 5.6)
    // and make the containing descriptor invalid.
    const uint64_t to = std::min(piece_end, end_);
    for (uint64_t at = from; at < to; ++at) {
      const uint8_t b = piece[at - offset_in_buffer];
      if (b == 0x00 || b == 0xFF) {
        rejection_ = {rule_, at - begin_,
                      "a float8_e8m0 element is 0x00 or 0xFF (reserved)",
                      OffsetUnit::kElement};
        break;
      }
    }
    return rejection_;
  }
  // The final group's bytes, gathered across pieces.
  const uint64_t lo = std::max(offset_in_buffer, tail_begin_);
  const uint64_t hi = std::min(piece_end, end_);
  if (lo >= hi) return rejection_;
  std::memcpy(tail_ + (lo - tail_begin_),
              piece.data() + (lo - offset_in_buffer), hi - lo);
  tail_seen_ += static_cast<uint32_t>(hi - lo);
  if (tail_seen_ == end_ - tail_begin_) CheckTail();
  return rejection_;
}

// The unused slots after the last element must be zero (element-types.md
// § Boolean Type, § 4-bit, § 2-bit and § 6-bit packing; LSB-first).
void ElementDataChecker::CheckTail() {
  const uint32_t per_group = bits_ == 6 ? 4 : 8 / bits_;
  const uint32_t group =
      tail_[0] | (uint32_t{tail_[1]} << 8) | (uint32_t{tail_[2]} << 16);
  const uint32_t mask = (1u << bits_) - 1;
  for (uint32_t k = tail_used_; k < per_group; ++k) {
    if (((group >> (k * bits_)) & mask) != 0) {
      rejection_ = {rule_, (groups_ - 1) * per_group + k,
                    "an unused slot after the last element is not zero",
                    OffsetUnit::kElement};
      return;
    }
  }
}

Rejection CheckElementData(const TensorDescriptor& d,
                           absl::Span<const uint8_t> buffer0, Mode mode) {
  ElementDataChecker check(d, mode);
  return check.Feed(0, 0, buffer0);
}

}  // namespace hurray
