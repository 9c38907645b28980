#include "dequant/qnn_import.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "parser/element_type.h"
#include "parser/quantization.h"
#include "parser/wire.h"

namespace hurray::qnn {
namespace {

absl::Status Invalid(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("QNN import: ", what));
}

// The narrowest storage type with at least `bits` bits.
uint8_t StorageFor(uint32_t bits, bool is_signed) {
  using namespace type_tag;  // NOLINT
  if (bits <= 2) return is_signed ? kInt2 : kUInt2;
  if (bits <= 4) return is_signed ? kInt4 : kUInt4;
  if (bits <= 8) return is_signed ? kInt8 : kUInt8;
  if (bits <= 16) return is_signed ? kInt16 : kUInt16;
  return is_signed ? kInt32 : kUInt32;
}

// The meaningful value of one container: its low `bitwidth` bits, sign
// extended from bit bitwidth−1 for signed containers.
int64_t ContainerValue(const uint8_t* p, Container c, uint32_t bitwidth) {
  uint64_t raw = 0;
  std::memcpy(&raw, p, c.bits / 8);  // little-endian host (wire.h assumes)
  const uint64_t mask =
      bitwidth >= 64 ? ~uint64_t{0} : (uint64_t{1} << bitwidth) - 1;
  raw &= mask;
  if (c.is_signed && (raw >> (bitwidth - 1)) & 1) {
    return static_cast<int64_t>(raw | ~mask);
  }
  return static_cast<int64_t>(raw);
}

// Appends one storage value (its low `bits` bits) to a packed buffer:
// sub-byte types LSB-first (element-types.md § packing), others
// little-endian.
void PutValue(std::vector<uint8_t>* out, uint64_t index, uint32_t bits,
              int64_t value) {
  if (bits < 8) {
    const uint64_t bit = index * bits;
    const uint8_t field = static_cast<uint8_t>(value & ((1u << bits) - 1))
                          << (bit % 8);
    (*out)[bit / 8] |= field;
    return;
  }
  const uint64_t v = static_cast<uint64_t>(value);
  for (uint32_t b = 0; b < bits / 8; ++b) {
    (*out)[index * (bits / 8) + b] = static_cast<uint8_t>(v >> (8 * b));
  }
}

}  // namespace

absl::StatusOr<ImportedTensor> ImportPerAxis(const PerAxisEncoding& e,
                                             absl::Span<const uint64_t> shape,
                                             Container container,
                                             absl::Span<const uint8_t> values) {
  if (container.bits != 8 && container.bits != 16 && container.bits != 32) {
    return Invalid("container must be 8, 16 or 32 bits");
  }
  if (e.bitwidth == 0 || e.bitwidth > container.bits) {
    return Invalid("bitwidth must be 1 … the container's bits");
  }
  if (shape.size() > kMaxRank) return Invalid("rank exceeds 64");
  if (e.axis < 0 || static_cast<size_t>(e.axis) >= shape.size()) {
    return Invalid("axis is outside the shape");
  }
  const uint64_t channels = shape[e.axis];
  if (channels == kDynamicDim || e.scales.size() != channels) {
    return Invalid("scales must hold one entry per slice along axis");
  }
  if (!e.offsets.empty() && e.offsets.size() != channels) {
    return Invalid("offsets must match scales, or be empty (symmetric)");
  }
  const bool exclude_zero = e.mapping == Mapping::kLinearSymmetricExcludeZero;
  if (exclude_zero && !container.is_signed) {
    return Invalid("the exclude-zero mapping needs signed values");
  }
  bool symmetric = true;
  for (int32_t offset : e.offsets) symmetric &= offset == 0;
  if (exclude_zero && !symmetric) {
    return Invalid("the exclude-zero mapping is symmetric: offsets must be 0");
  }
  wire::CheckedProduct product;  // exact: a zero dimension gives 0
  for (uint64_t n : shape) {
    if (n == kDynamicDim) {
      return Invalid("the shape has no finite element count");
    }
    product.Mul(n);
  }
  uint64_t count = 0;
  if (!product.Get(&count)) {
    return Invalid("the shape has no finite element count");
  }
  uint64_t value_bytes = 0;
  if (!wire::CheckedMul(count, container.bits / 8, &value_bytes) ||
      values.size() != value_bytes) {
    return Invalid("values must hold one container per element");
  }

  // Codes 2q + 1 need one more bit than q, and Hurray's widest integer
  // storage is 32 bits (quantization/per-channel-affine.md § Valid Storage
  // Types; found by qnn_import_fuzz).
  const uint32_t storage_bits = e.bitwidth + (exclude_zero ? 1 : 0);
  if (storage_bits > 32) {
    return Invalid(
        "the exclude-zero mapping needs bitwidth + 1 bits, more than the 32 "
        "of the widest storage type");
  }
  const uint8_t storage = StorageFor(storage_bits, container.is_signed);
  const ElementTypeInfo& info = *FindElementType(storage);
  int64_t lo = 0, hi = 0;
  IntegerStorageRange(storage, &lo, &hi);

  ImportedTensor out;
  out.scales.resize(channels * 4);
  for (uint64_t c = 0; c < channels; ++c) {
    float scale = e.scales[c];
    if (!std::isfinite(scale) || !(scale > 0.0f)) {
      return Invalid(absl::StrCat("scale ", c, " is not finite and positive"));
    }
    if (exclude_zero) {
      // scale · (q + 0.5) = (scale / 2) · (2q + 1); halving must be exact.
      const float half = scale / 2.0f;
      if (half * 2.0f != scale || half == 0.0f) {
        return Invalid(absl::StrCat("scale ", c, " cannot be halved exactly"));
      }
      scale = half;
    }
    wire::StoreF32(out.scales.data() + 4 * c, scale);
  }
  if (!symmetric) {
    out.zero_points.resize(channels * 4);
    for (uint64_t c = 0; c < channels; ++c) {
      // zero_point = −offset (RESOLUTIONS.md 11).
      const int64_t zp = -static_cast<int64_t>(e.offsets[c]);
      if (zp < lo || zp > hi) {
        return Invalid(absl::StrCat("offset ", c, " negated leaves the ",
                                    info.name, " range"));
      }
      wire::StoreU32(out.zero_points.data() + 4 * c,
                     static_cast<uint32_t>(static_cast<int32_t>(zp)));
    }
  }

  uint64_t data_bytes = 0;
  StorageBytes(storage, count, &data_bytes);
  out.data.assign(data_bytes, 0);
  const size_t width = container.bits / 8;
  for (uint64_t i = 0; i < count; ++i) {
    int64_t q =
        ContainerValue(values.data() + i * width, container, e.bitwidth);
    if (exclude_zero) q = 2 * q + 1;
    PutValue(&out.data, i, info.bits, q);
  }

  auto d = std::make_unique<TensorDescriptor>();
  d->type_tag = storage;
  d->layout_tag = layout_tag::kRowMajor;
  d->rank = static_cast<uint32_t>(shape.size());
  for (uint32_t k = 0; k < d->rank; ++k) d->shape[k] = shape[k];
  d->flags = flag::kHasQuantization;
  const uint32_t axis = static_cast<uint32_t>(e.axis);
  d->quantization =
      symmetric
          ? QuantizationDescriptor(PerChannelAffine{axis, 1, kNoBufferIndex})
          : QuantizationDescriptor(PerChannelAffine{axis, 1, 2});
  d->buffer_count = symmetric ? 2 : 3;
  d->buffers[0].byte_size = out.data.size();
  d->buffers[1].byte_size = out.scales.size();
  if (!symmetric) d->buffers[2].byte_size = out.zero_points.size();
  out.descriptor = std::move(d);
  return out;
}

}  // namespace hurray::qnn
