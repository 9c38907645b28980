// Quantization descriptors (quantization.md and quantization/*.md).
//
// QuantizationDescriptor is a wire-faithful record of the quantization
// section: the 4-byte header, every payload field of the five assigned
// schemes, the reserved bytes as read, and the length of anything past the
// scheme's fixed payload (writer padding, or the whole payload of a scheme
// this reader does not interpret). It holds invalid values as readily as valid
// ones so that tests can break one field at a time; CheckQuantizationFields()
// and the descriptor validator say whether it is acceptable.
//
// The per-scheme types (PerTensorAffine, PerChannelAffine, PerBlockAffine,
// Nf4, Mxfp) are the safe way to build one: their factories validate, and a
// QuantizationDescriptor converts from each.
#ifndef HURRAY_PARSER_QUANTIZATION_H_
#define HURRAY_PARSER_QUANTIZATION_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "parser/options.h"
#include "parser/rules.h"

namespace hurray {

namespace scheme_tag {
inline constexpr uint8_t kPerTensorAffine = 0x01;
inline constexpr uint8_t kPerChannelAffine = 0x02;
inline constexpr uint8_t kPerBlockAffine = 0x03;
inline constexpr uint8_t kNf4 = 0x04;
inline constexpr uint8_t kMxfp = 0x05;
}  // namespace scheme_tag

inline constexpr uint32_t kNoBufferIndex = 0xFFFFFFFF;
inline constexpr uint16_t kSymmetricFlag = 0x0001;
inline constexpr uint8_t kCurrentSchemeVersion = 0x01;
inline constexpr uint32_t kMxfpCanonicalBlockSize = 32;
inline constexpr uint32_t kQuantizationHeaderSize = 4;

// NF4 levels, code → value (quantization/nf4.md). Bit-exact float32 values.
inline constexpr std::array<float, 16> kNf4Lut = {
    -1.0f,
    -0.6961928009986877f,
    -0.5250730514526367f,
    -0.39491748809814453f,
    -0.28444138169288635f,
    -0.18477343022823334f,
    -0.09105003625154495f,
    0.0f,
    0.07958029955625534f,
    0.16093020141124725f,
    0.24611230194568634f,
    0.33791524171829224f,
    0.44070982933044434f,
    0.5626170039176941f,
    0.7229568362236023f,
    1.0f,
};

// Size of header + fixed payload of an assigned scheme, 0 for others.
inline uint32_t SchemeFixedSize(uint8_t tag) {
  switch (tag) {
    case scheme_tag::kPerTensorAffine:
      return 16;
    case scheme_tag::kPerChannelAffine:
      return 20;
    case scheme_tag::kPerBlockAffine:
      return 24;
    case scheme_tag::kNf4:
      return 16;
    case scheme_tag::kMxfp:
      return 16;
    default:
      return 0;
  }
}
// The largest SchemeFixedSize() (per-block affine).
inline constexpr uint32_t kMaxSchemeFixedSize = 24;
const char* SchemeName(uint8_t scheme_tag);  // "per_tensor_affine", ...

struct PerTensorAffine;
struct PerChannelAffine;
struct PerBlockAffine;
struct Nf4;
struct Mxfp;

struct QuantizationDescriptor {
  uint8_t scheme_tag = 0;
  uint8_t scheme_version = kCurrentSchemeVersion;
  uint16_t flags = 0;
  // Per-tensor affine.
  float scale = 0.0f;
  int32_t zero_point = 0;
  // Per-channel, per-block, NF4, MXFP.
  uint32_t axis = 0;
  uint32_t block_size = 0;  // per-block, NF4, MXFP
  uint32_t scale_buffer_index = 0;
  uint32_t zero_point_buffer_index = kNoBufferIndex;  // per-channel, per-block
  uint8_t scale_type_tag = 0;                         // per-channel, per-block
  // Reserved payload bytes as read (per-tensor: 4 at @12; per-channel: 3 at
  // @17; per-block: 3 at @21). Must be zero.
  std::array<uint8_t, 4> reserved{};
  // Bytes after the fixed payload, or after the header when the payload is not
  // interpreted (unassigned, private or future-version scheme). Skipped.
  uint32_t extra_length = 0;

  QuantizationDescriptor() = default;
  QuantizationDescriptor(const PerTensorAffine& q);   // NOLINT: tagged union
  QuantizationDescriptor(const PerChannelAffine& q);  // NOLINT
  QuantizationDescriptor(const PerBlockAffine& q);    // NOLINT
  QuantizationDescriptor(const Nf4& q);               // NOLINT
  QuantizationDescriptor(const Mxfp& q);              // NOLINT

  bool symmetric() const { return (flags & kSymmetricFlag) != 0; }
  // True when the payload fields above were read (assigned scheme, version 1).
  bool interpreted() const {
    return SchemeFixedSize(scheme_tag) != 0 &&
           scheme_version == kCurrentSchemeVersion;
  }
  // The value of quantization_length: header + payload + extra bytes.
  size_t encoded_len() const;
  // Writes encoded_len() bytes (extra bytes as zeros). No allocation.
  [[nodiscard]] absl::StatusOr<size_t> EncodeInto(
      absl::Span<uint8_t> out) const;
  std::vector<uint8_t> EncodeToVector() const;

  friend bool operator==(const QuantizationDescriptor& a,
                         const QuantizationDescriptor& b);
};

// Reads the raw header and (for an interpreted scheme) the fixed payload from
// `p`, which holds at least kQuantizationHeaderSize bytes and, when the scheme
// is interpreted, SchemeFixedSize() bytes. Sets extra_length to `length` minus
// what was read. No checks beyond what locating the fields needs.
void ParseQuantizationFields(const uint8_t* p, uint32_t length,
                             QuantizationDescriptor* q);

// Checks of the quantization descriptor on its own: header (QNT-HDR-03…09),
// reserved bytes, scale types and block sizes. `base` is the byte offset of
// scheme_tag, used for the reported offsets.
Rejection CheckQuantizationFields(const QuantizationDescriptor& q,
                                  uint64_t base, const ParseOptions& options);

struct DecodedQuantization {
  QuantizationDescriptor descriptor;
  size_t consumed;
};
// Decodes one quantization descriptor from the start of `bytes` (the bytes
// after the quantization_length prefix). Trailing bytes are ignored:
// `consumed` is the scheme's fixed size. Applies CheckQuantizationFields.
[[nodiscard]] absl::StatusOr<DecodedQuantization> DecodeQuantization(
    absl::Span<const uint8_t> bytes,
    const ParseOptions& options = ParseOptions());

// --- Per-scheme types with validating factories. -------------------------

struct PerTensorAffine {
  float scale;
  int32_t zero_point;
  // scale finite and non-zero (QNT-PTA-01).
  [[nodiscard]] static absl::StatusOr<PerTensorAffine> Create(
      float scale, int32_t zero_point);
  // zero_point inside the storage type's range (QNT-PTA-02).
  [[nodiscard]] absl::Status ValidateZeroPointFor(
      uint8_t storage_type_tag) const;
  friend bool operator==(const PerTensorAffine&,
                         const PerTensorAffine&) = default;
};

struct PerChannelAffine {
  uint32_t axis;
  uint32_t scale_buffer_index;
  uint32_t zero_point_buffer_index;  // kNoBufferIndex when symmetric
  [[nodiscard]] static absl::StatusOr<PerChannelAffine> Symmetric(
      uint32_t axis, uint32_t scale_buffer_index);
  [[nodiscard]] static absl::StatusOr<PerChannelAffine> Asymmetric(
      uint32_t axis, uint32_t scale_buffer_index,
      uint32_t zero_point_buffer_index);
  bool symmetric() const { return zero_point_buffer_index == kNoBufferIndex; }
  friend bool operator==(const PerChannelAffine&,
                         const PerChannelAffine&) = default;
};

struct PerBlockAffine {
  uint32_t axis;
  uint32_t block_size;
  uint32_t scale_buffer_index;
  uint32_t zero_point_buffer_index;  // kNoBufferIndex when symmetric
  uint8_t scale_type_tag;            // float16, bfloat16 or float32
  [[nodiscard]] static absl::StatusOr<PerBlockAffine> Symmetric(
      uint32_t axis, uint32_t block_size, uint32_t scale_buffer_index,
      uint8_t scale_type_tag);
  [[nodiscard]] static absl::StatusOr<PerBlockAffine> Asymmetric(
      uint32_t axis, uint32_t block_size, uint32_t scale_buffer_index,
      uint32_t zero_point_buffer_index, uint8_t scale_type_tag);
  bool symmetric() const { return zero_point_buffer_index == kNoBufferIndex; }
  friend bool operator==(const PerBlockAffine&,
                         const PerBlockAffine&) = default;
};

struct Nf4 {
  uint32_t axis;
  uint32_t block_size;
  uint32_t scale_buffer_index;
  [[nodiscard]] static absl::StatusOr<Nf4> Create(uint32_t axis,
                                                  uint32_t block_size,
                                                  uint32_t scale_buffer_index);
  friend bool operator==(const Nf4&, const Nf4&) = default;
};

struct Mxfp {
  uint32_t axis;
  uint32_t block_size;
  uint32_t scale_buffer_index;
  [[nodiscard]] static absl::StatusOr<Mxfp> Create(uint32_t axis,
                                                   uint32_t block_size,
                                                   uint32_t scale_buffer_index);
  friend bool operator==(const Mxfp&, const Mxfp&) = default;
};

}  // namespace hurray

#endif  // HURRAY_PARSER_QUANTIZATION_H_
