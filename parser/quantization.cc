#include "parser/quantization.h"

#include <cmath>
#include <cstring>

#include "parser/element_type.h"
#include "parser/wire.h"

namespace hurray {

using wire::LoadI32;
using wire::LoadU16;
using wire::LoadU32;

const char* SchemeName(uint8_t tag) {
  switch (tag) {
    case scheme_tag::kPerTensorAffine:
      return "per_tensor_affine";
    case scheme_tag::kPerChannelAffine:
      return "per_channel_affine";
    case scheme_tag::kPerBlockAffine:
      return "per_block_affine";
    case scheme_tag::kNf4:
      return "nf4";
    case scheme_tag::kMxfp:
      return "mxfp";
    default:
      return (tag >= 0xF0 && tag <= 0xFE) ? "private" : "unknown";
  }
}

QuantizationDescriptor::QuantizationDescriptor(const PerTensorAffine& q)
    : scheme_tag(scheme_tag::kPerTensorAffine),
      scale(q.scale),
      zero_point(q.zero_point) {}

QuantizationDescriptor::QuantizationDescriptor(const PerChannelAffine& q)
    : scheme_tag(scheme_tag::kPerChannelAffine),
      flags(q.symmetric() ? kSymmetricFlag : 0),
      axis(q.axis),
      scale_buffer_index(q.scale_buffer_index),
      zero_point_buffer_index(q.zero_point_buffer_index),
      scale_type_tag(type_tag::kFloat32) {}

QuantizationDescriptor::QuantizationDescriptor(const PerBlockAffine& q)
    : scheme_tag(scheme_tag::kPerBlockAffine),
      flags(q.symmetric() ? kSymmetricFlag : 0),
      axis(q.axis),
      block_size(q.block_size),
      scale_buffer_index(q.scale_buffer_index),
      zero_point_buffer_index(q.zero_point_buffer_index),
      scale_type_tag(q.scale_type_tag) {}

QuantizationDescriptor::QuantizationDescriptor(const Nf4& q)
    : scheme_tag(scheme_tag::kNf4),
      axis(q.axis),
      block_size(q.block_size),
      scale_buffer_index(q.scale_buffer_index) {}

QuantizationDescriptor::QuantizationDescriptor(const Mxfp& q)
    : scheme_tag(scheme_tag::kMxfp),
      axis(q.axis),
      block_size(q.block_size),
      scale_buffer_index(q.scale_buffer_index) {}

bool operator==(const QuantizationDescriptor& a,
                const QuantizationDescriptor& b) {
  // Scales compare by bit pattern so that NaN payloads and -0.0 round-trip.
  uint32_t sa, sb;
  std::memcpy(&sa, &a.scale, 4);
  std::memcpy(&sb, &b.scale, 4);
  return a.scheme_tag == b.scheme_tag && a.scheme_version == b.scheme_version &&
         a.flags == b.flags && sa == sb && a.zero_point == b.zero_point &&
         a.axis == b.axis && a.block_size == b.block_size &&
         a.scale_buffer_index == b.scale_buffer_index &&
         a.zero_point_buffer_index == b.zero_point_buffer_index &&
         a.scale_type_tag == b.scale_type_tag && a.reserved == b.reserved &&
         a.extra_length == b.extra_length;
}

size_t QuantizationDescriptor::encoded_len() const {
  const uint32_t base =
      interpreted() ? SchemeFixedSize(scheme_tag) : kQuantizationHeaderSize;
  return static_cast<size_t>(base) + extra_length;
}

absl::StatusOr<size_t> QuantizationDescriptor::EncodeInto(
    absl::Span<uint8_t> out) const {
  const size_t n = encoded_len();
  if (out.size() < n) {
    return absl::OutOfRangeError("output span is smaller than encoded_len()");
  }
  uint8_t* p = out.data();
  std::memset(p, 0, n);
  p[0] = scheme_tag;
  p[1] = scheme_version;
  wire::StoreU16(p + 2, flags);
  if (!interpreted()) return n;
  switch (scheme_tag) {
    case scheme_tag::kPerTensorAffine:
      wire::StoreF32(p + 4, scale);
      wire::StoreU32(p + 8, static_cast<uint32_t>(zero_point));
      std::memcpy(p + 12, reserved.data(), 4);
      break;
    case scheme_tag::kPerChannelAffine:
      wire::StoreU32(p + 4, axis);
      wire::StoreU32(p + 8, scale_buffer_index);
      wire::StoreU32(p + 12, zero_point_buffer_index);
      p[16] = scale_type_tag;
      std::memcpy(p + 17, reserved.data(), 3);
      break;
    case scheme_tag::kPerBlockAffine:
      wire::StoreU32(p + 4, axis);
      wire::StoreU32(p + 8, block_size);
      wire::StoreU32(p + 12, scale_buffer_index);
      wire::StoreU32(p + 16, zero_point_buffer_index);
      p[20] = scale_type_tag;
      std::memcpy(p + 21, reserved.data(), 3);
      break;
    default:  // NF4 and MXFP share one payload shape.
      wire::StoreU32(p + 4, axis);
      wire::StoreU32(p + 8, block_size);
      wire::StoreU32(p + 12, scale_buffer_index);
      break;
  }
  return n;
}

std::vector<uint8_t> QuantizationDescriptor::EncodeToVector() const {
  std::vector<uint8_t> out(encoded_len());
  (void)EncodeInto(absl::MakeSpan(out));
  return out;
}

void ParseQuantizationFields(const uint8_t* p, uint32_t length,
                             QuantizationDescriptor* q) {
  static constexpr QuantizationDescriptor kNone{};  // see ResetDescriptor()
  *q = kNone;
  q->scheme_tag = p[0];
  q->scheme_version = p[1];
  q->flags = LoadU16(p + 2);
  if (!q->interpreted()) {
    q->extra_length = length - kQuantizationHeaderSize;
    return;
  }
  switch (q->scheme_tag) {
    case scheme_tag::kPerTensorAffine:
      q->scale = wire::LoadF32(p + 4);
      q->zero_point = LoadI32(p + 8);
      std::memcpy(q->reserved.data(), p + 12, 4);
      break;
    case scheme_tag::kPerChannelAffine:
      q->axis = LoadU32(p + 4);
      q->scale_buffer_index = LoadU32(p + 8);
      q->zero_point_buffer_index = LoadU32(p + 12);
      q->scale_type_tag = p[16];
      std::memcpy(q->reserved.data(), p + 17, 3);
      break;
    case scheme_tag::kPerBlockAffine:
      q->axis = LoadU32(p + 4);
      q->block_size = LoadU32(p + 8);
      q->scale_buffer_index = LoadU32(p + 12);
      q->zero_point_buffer_index = LoadU32(p + 16);
      q->scale_type_tag = p[20];
      std::memcpy(q->reserved.data(), p + 21, 3);
      break;
    default:
      q->axis = LoadU32(p + 4);
      q->block_size = LoadU32(p + 8);
      q->scale_buffer_index = LoadU32(p + 12);
      q->zero_point_buffer_index = kNoBufferIndex;
      break;
  }
  q->extra_length = length - SchemeFixedSize(q->scheme_tag);
}

namespace {

bool FiniteNonZero(float v) { return std::isfinite(v) && v != 0.0f; }

// First non-zero reserved byte among the first `n`, or -1.
int FirstNonZero(const std::array<uint8_t, 4>& bytes, int n) {
  return wire::FirstNonZero(bytes.data(), n);
}

}  // namespace

Rejection CheckQuantizationFields(const QuantizationDescriptor& q,
                                  uint64_t base, const ParseOptions& options) {
  const Mode mode = options.mode;
  const uint8_t tag = q.scheme_tag;
  // Scheme tag space (quantization.md § Scheme Tag Space).
  if (tag == 0x00 || tag == 0xFF) {
    return {Rule::kQntHdr03, base, "scheme_tag 0x00/0xFF is invalid"};
  }
  if (tag >= 0x60 && tag <= 0xEF && Applies(Rule::kQntHdr04, mode)) {
    return {Rule::kQntHdr04, base, "scheme_tag is in a reserved range"};
  }
  if (tag >= 0x06 && tag <= 0x5F && Applies(Rule::kQntHdr05, mode)) {
    return {Rule::kQntHdr05, base, "scheme_tag is not assigned"};
  }
  if (tag >= 0xF0 && !PrivateAgreements::Has(options.agreed.scheme_tags, tag) &&
      Applies(Rule::kQntHdr06, mode)) {
    return {Rule::kQntHdr06, base, "private scheme_tag without an agreement"};
  }
  if (q.scheme_version > kCurrentSchemeVersion) {
    return {Rule::kQntHdr07, base + 1, "scheme_version is newer than 1"};
  }
  if (q.scheme_version == 0 && Applies(Rule::kQntHdr08, mode)) {
    return {Rule::kQntHdr08, base + 1, "scheme_version 0 is not defined"};
  }
  if (!q.interpreted()) return kAccepted;

  const bool has_symmetric_flag = tag == scheme_tag::kPerChannelAffine ||
                                  tag == scheme_tag::kPerBlockAffine;
  const uint16_t allowed_flags = has_symmetric_flag ? kSymmetricFlag : 0;
  if (q.flags & ~allowed_flags) {
    return {Rule::kQntHdr09, base + 2, "a reserved scheme flag bit is set"};
  }
  int r;
  switch (tag) {
    case scheme_tag::kPerTensorAffine:
      if (!FiniteNonZero(q.scale)) {
        return {Rule::kQntPta01, base + 4, "scale is zero, NaN or infinite"};
      }
      if ((r = FirstNonZero(q.reserved, 4)) >= 0) {
        return {Rule::kQntPta03, base + 12 + r, "reserved byte is not zero"};
      }
      break;
    case scheme_tag::kPerChannelAffine:
      if (q.scale_type_tag != type_tag::kFloat32) {
        return {Rule::kQntPca03, base + 16, "scale_type_tag is not float32"};
      }
      if ((r = FirstNonZero(q.reserved, 3)) >= 0) {
        return {Rule::kQntPca04, base + 17 + r, "reserved byte is not zero"};
      }
      if (q.symmetric() && q.zero_point_buffer_index != kNoBufferIndex) {
        return {Rule::kQntPca05, base + 12,
                "SYMMETRIC but zero_point_buffer_index is not 0xFFFFFFFF"};
      }
      break;
    case scheme_tag::kPerBlockAffine:
      if (!wire::IsPowerOfTwo(q.block_size) || q.block_size < 2) {
        return {Rule::kQntPba02, base + 8,
                "block_size is not a power of two ≥ 2"};
      }
      if (q.scale_type_tag != type_tag::kFloat16 &&
          q.scale_type_tag != type_tag::kBFloat16 &&
          q.scale_type_tag != type_tag::kFloat32) {
        return {Rule::kQntPba05, base + 20,
                "scale_type_tag is not float16, bfloat16 or float32"};
      }
      if ((r = FirstNonZero(q.reserved, 3)) >= 0) {
        return {Rule::kQntPba06, base + 21 + r, "reserved byte is not zero"};
      }
      if (q.symmetric() && q.zero_point_buffer_index != kNoBufferIndex &&
          Applies(Rule::kQntPba07, mode)) {
        return {Rule::kQntPba07, base + 16,
                "SYMMETRIC but zero_point_buffer_index is not 0xFFFFFFFF"};
      }
      break;
    case scheme_tag::kNf4:
      if (!wire::IsPowerOfTwo(q.block_size) || q.block_size < 8) {
        return {Rule::kQntNf402, base + 8,
                "block_size is not a power of two ≥ 8"};
      }
      break;
    case scheme_tag::kMxfp:
      if (!wire::IsPowerOfTwo(q.block_size) || q.block_size < 16 ||
          q.block_size > 2048) {
        return {Rule::kQntMx02, base + 8,
                "block_size is not a power of two in 16…2048"};
      }
      break;
  }
  return kAccepted;
}

absl::StatusOr<DecodedQuantization> DecodeQuantization(
    absl::Span<const uint8_t> bytes, const ParseOptions& options) {
  if (bytes.size() < kQuantizationHeaderSize) {
    return ToStatus(
        {Rule::kQntHdr01, 0, "fewer than 4 bytes for the quantization header"});
  }
  DecodedQuantization out;
  QuantizationDescriptor& q = out.descriptor;
  const uint32_t fixed = SchemeFixedSize(bytes[0]);
  const bool interpreted = fixed != 0 && bytes[1] == kCurrentSchemeVersion;
  if (interpreted && bytes.size() < fixed) {
    return ToStatus(
        {Rule::kQntHdr02, 0, "fewer bytes than the scheme's fixed size"});
  }
  const uint32_t used = interpreted ? fixed : kQuantizationHeaderSize;
  ParseQuantizationFields(bytes.data(), used, &q);
  const Rejection r = CheckQuantizationFields(q, 0, options);
  if (!r.ok()) return ToStatus(r);
  out.consumed = used;
  return out;
}

// --- Validating factories. ------------------------------------------------

namespace {

// Indices a scheme names must exist as buffers other than the data buffer;
// without a buffer table at hand the factories can only refuse the two
// values that are never valid (QNT-PLC-01: the 0xFFFFFFFF sentinel,
// QNT-PLC-02: index 0, the data buffer of every layout).
absl::Status CheckParamIndex(uint32_t index, uint64_t offset) {
  if (index == kNoBufferIndex) {
    return ToStatus({Rule::kQntPlc01, offset, "buffer index is 0xFFFFFFFF"});
  }
  if (index == 0) {
    return ToStatus(
        {Rule::kQntPlc02, offset, "buffer index 0 is the data buffer"});
  }
  return absl::OkStatus();
}

template <typename T>
absl::StatusOr<T> Checked(const T& value, uint64_t scale_index_offset,
                          uint32_t scale_index) {
  const QuantizationDescriptor q(value);
  const Rejection r = CheckQuantizationFields(q, 0, ParseOptions());
  if (!r.ok()) return ToStatus(r);
  if (q.scheme_tag != scheme_tag::kPerTensorAffine) {
    absl::Status s = CheckParamIndex(scale_index, scale_index_offset);
    if (!s.ok()) return s;
  }
  return value;
}

}  // namespace

absl::StatusOr<PerTensorAffine> PerTensorAffine::Create(float scale,
                                                        int32_t zero_point) {
  return Checked(PerTensorAffine{scale, zero_point}, 0, 0);
}

absl::Status PerTensorAffine::ValidateZeroPointFor(uint8_t storage) const {
  int64_t lo, hi;
  if (!IntegerStorageRange(storage, &lo, &hi)) {
    return ToStatus({Rule::kQntPta04, 0,
                     "storage type is not allowed for per-tensor affine"});
  }
  if (zero_point < lo || zero_point > hi) {
    return ToStatus(
        {Rule::kQntPta02, 8, "zero_point is outside the storage type's range"});
  }
  return absl::OkStatus();
}

absl::StatusOr<PerChannelAffine> PerChannelAffine::Symmetric(
    uint32_t axis, uint32_t scale_buffer_index) {
  return Checked(PerChannelAffine{axis, scale_buffer_index, kNoBufferIndex}, 8,
                 scale_buffer_index);
}

absl::StatusOr<PerChannelAffine> PerChannelAffine::Asymmetric(
    uint32_t axis, uint32_t scale_buffer_index,
    uint32_t zero_point_buffer_index) {
  if (zero_point_buffer_index == kNoBufferIndex) {
    return ToStatus(
        {Rule::kQntPca06, 12, "asymmetric needs a zero_point_buffer_index"});
  }
  absl::Status s = CheckParamIndex(zero_point_buffer_index, 12);
  if (!s.ok()) return s;
  return Checked(
      PerChannelAffine{axis, scale_buffer_index, zero_point_buffer_index}, 8,
      scale_buffer_index);
}

absl::StatusOr<PerBlockAffine> PerBlockAffine::Symmetric(
    uint32_t axis, uint32_t block_size, uint32_t scale_buffer_index,
    uint8_t scale_type_tag) {
  return Checked(PerBlockAffine{axis, block_size, scale_buffer_index,
                                kNoBufferIndex, scale_type_tag},
                 12, scale_buffer_index);
}

absl::StatusOr<PerBlockAffine> PerBlockAffine::Asymmetric(
    uint32_t axis, uint32_t block_size, uint32_t scale_buffer_index,
    uint32_t zero_point_buffer_index, uint8_t scale_type_tag) {
  if (zero_point_buffer_index == kNoBufferIndex) {
    return ToStatus(
        {Rule::kQntPba08, 16, "asymmetric needs a zero_point_buffer_index"});
  }
  absl::Status s = CheckParamIndex(zero_point_buffer_index, 16);
  if (!s.ok()) return s;
  return Checked(PerBlockAffine{axis, block_size, scale_buffer_index,
                                zero_point_buffer_index, scale_type_tag},
                 12, scale_buffer_index);
}

absl::StatusOr<Nf4> Nf4::Create(uint32_t axis, uint32_t block_size,
                                uint32_t scale_buffer_index) {
  return Checked(Nf4{axis, block_size, scale_buffer_index}, 12,
                 scale_buffer_index);
}

absl::StatusOr<Mxfp> Mxfp::Create(uint32_t axis, uint32_t block_size,
                                  uint32_t scale_buffer_index) {
  return Checked(Mxfp{axis, block_size, scale_buffer_index}, 12,
                 scale_buffer_index);
}

}  // namespace hurray
