#include "dequant/plan.h"

#include <cmath>
#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "parser/element_type.h"
#include "parser/quantization.h"
#include "parser/rules.h"
#include "parser/wire.h"

namespace hurray::dequant {
namespace {

using namespace type_tag;  // NOLINT

// 2^56 bytes: far beyond any buffer, and 8 · byte_offset plus any element's
// bit offset (bounded by the buffer, see ElementAddresser) fits in int64.
constexpr uint64_t kMaxByteOffset = uint64_t{1} << 56;

std::optional<Codec> IntegerCodec(uint8_t tag) {
  switch (tag) {
    case kInt8:
      return Codec::kInt8;
    case kUInt8:
      return Codec::kUInt8;
    case kInt16:
      return Codec::kInt16;
    case kUInt16:
      return Codec::kUInt16;
    case kInt32:
      return Codec::kInt32;
    case kUInt32:
      return Codec::kUInt32;
    case kInt4:
      return Codec::kInt4;
    case kUInt4:
      return Codec::kUInt4;
    case kInt2:
      return Codec::kInt2;
    case kUInt2:
      return Codec::kUInt2;
    default:
      return std::nullopt;
  }
}

// The codec of `tag` under `scheme`, or nullopt when the scheme does not
// allow that storage type (quantization/*.md § Valid Storage Types).
std::optional<Codec> CodecFor(Scheme scheme, uint8_t tag) {
  switch (scheme) {
    case Scheme::kPerTensorAffine:
    case Scheme::kPerChannelAffine:
      return IntegerCodec(tag);
    case Scheme::kPerBlockAffine:
      if (tag == kInt16 || tag == kUInt16 || tag == kInt32 || tag == kUInt32) {
        return std::nullopt;
      }
      return IntegerCodec(tag);
    case Scheme::kNf4:
      if (tag == kUInt4) return Codec::kNf4;
      return std::nullopt;
    case Scheme::kMxfp:
      switch (tag) {
        case kFloat8E4M3:
          return Codec::kFloat8E4M3;
        case kFloat8E5M2:
          return Codec::kFloat8E5M2;
        case kFloat4E2M1:
          return Codec::kFloat4E2M1;
        case kFloat6E2M3:
          return Codec::kFloat6E2M3;
        case kFloat6E3M2:
          return Codec::kFloat6E3M2;
        case kInt8:  // MXINT8: s · int_value_of(q) (quantization/mxfp.md)
          return Codec::kInt8;
        case kInt4:
          return Codec::kInt4;
        default:
          return std::nullopt;
      }
  }
  return std::nullopt;
}

bool Mul(uint64_t a, uint64_t b, uint64_t* out) {
  return !__builtin_mul_overflow(a, b, out);
}

absl::Status Invalid(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("cannot dequantize: ", what));
}

}  // namespace

const char* SchemeLabel(Scheme s) {
  switch (s) {
    case Scheme::kPerTensorAffine:
      return "per_tensor";
    case Scheme::kPerChannelAffine:
      return "per_channel";
    case Scheme::kPerBlockAffine:
      return "per_block";
    case Scheme::kNf4:
      return "nf4";
    case Scheme::kMxfp:
      return "mxfp";
  }
  return "?";
}

uint64_t Plan::LogicalBefore(uint64_t storage_index) const {
  if (padded_axis_len == axis_len || inner == 0 || padded_axis_len == 0) {
    return storage_index;
  }
  const uint64_t row = storage_index / inner;  // index over [outer, padded]
  const uint64_t i = storage_index % inner;
  const uint64_t p = row / padded_axis_len;
  const uint64_t a = row % padded_axis_len;
  if (a < axis_len) return (p * axis_len + a) * inner + i;
  return (p + 1) * axis_len * inner;
}

absl::StatusOr<Plan> MakePlan(const TensorDescriptor& d) {
  if (!d.has(flag::kHasQuantization)) {
    return absl::FailedPreconditionError(
        "cannot dequantize: the tensor has no quantization descriptor");
  }
  const QuantizationDescriptor& q = d.quantization;
  if (!q.interpreted()) {
    return absl::UnimplementedError(absl::StrFormat(
        "quantization scheme 0x%02x version %d: dequantization is not "
        "implemented",
        q.scheme_tag, q.scheme_version));
  }
  if (!layout_tag::IsDense(d.layout_tag)) {
    // Sparse (COO/CSR/CSC/CSF), block-paged, composite and extension
    // layouts carry their values through index buffers or members.
    return absl::UnimplementedError(absl::StrCat(
        "layout ", LayoutName(d.layout_tag),
        ": dequantization is implemented for dense layouts only (row-major, "
        "column-major, strided, tiled, Morton, Hilbert)"));
  }
  if (!d.layout_parsed || d.rank > kMaxRank || d.buffer_count == 0) {
    return Invalid("the descriptor's layout or buffer table is incomplete");
  }
  if (d.HasDynamicDim()) {
    return absl::FailedPreconditionError(
        "cannot dequantize: a dimension is dynamic (resolve it first)");
  }

  Plan plan;
  switch (q.scheme_tag) {
    case scheme_tag::kPerTensorAffine:
      plan.scheme = Scheme::kPerTensorAffine;
      break;
    case scheme_tag::kPerChannelAffine:
      plan.scheme = Scheme::kPerChannelAffine;
      break;
    case scheme_tag::kPerBlockAffine:
      plan.scheme = Scheme::kPerBlockAffine;
      break;
    case scheme_tag::kNf4:
      plan.scheme = Scheme::kNf4;
      break;
    default:
      plan.scheme = Scheme::kMxfp;
      break;
  }
  plan.storage_type = d.type_tag;
  plan.layout_tag = d.layout_tag;
  const std::optional<Codec> codec = CodecFor(plan.scheme, d.type_tag);
  if (!codec.has_value()) {
    return Invalid(absl::StrCat("storage type ", ElementTypeName(d.type_tag),
                                " is not allowed by ",
                                SchemeName(q.scheme_tag)));
  }
  plan.codec = *codec;
  // Decoded without the validator, an extension-type flag can ride on a
  // built-in storage tag (TYPE-EXT-01); the descriptor's element width
  // must then still be the codec's, which the reference addresses by.
  if (d.ElementBits() != PackingOf(plan.codec).bits) {
    return Invalid(absl::StrCat("the element width (", d.ElementBits(),
                                " bits) is not that of storage type ",
                                ElementTypeName(d.type_tag)));
  }

  // Exact: a zero dimension empties the tensor whatever the others multiply
  // to (wire::CheckedProduct).
  wire::CheckedProduct product;
  for (uint32_t k = 0; k < d.rank; ++k) product.Mul(d.shape[k]);
  uint64_t logical = 0;
  if (!product.Get(&logical)) return Invalid("shape overflows");
  plan.logical_elements = logical;

  if (plan.scheme == Scheme::kPerTensorAffine) {
    plan.inner = logical;
    plan.tensor_scale = q.scale;
    plan.tensor_zero_point = q.zero_point;
    plan.symmetric = q.zero_point == 0;
    plan.scale_type = kFloat32;
    if (!std::isfinite(q.scale) || q.scale == 0.0f) {
      return ToStatus(Rejection{Rule::kQntPta01, d.offsets.quantization + 8,
                                "scale is zero, NaN or infinite"});
    }
    int64_t min = 0, max = 0;
    if (!IntegerStorageRange(d.type_tag, &min, &max) || q.zero_point < min ||
        q.zero_point > max) {
      return ToStatus(Rejection{Rule::kQntPta02, d.offsets.quantization + 12,
                                "zero_point outside the storage range"});
    }
  } else {
    if (q.axis >= d.rank) return Invalid("axis is not below rank");
    plan.axis = q.axis;
    plan.axis_len = d.shape[q.axis];
    if (logical == 0) {
      // Nothing is stored; only the parameter count matters (per-channel:
      // still shape[axis], RESOLUTIONS.md 7; blocks: 0). The other
      // dimensions' product may not even fit 64 bits.
      plan.outer = 0;
    } else {  // divisors of `logical`: no overflow
      for (uint32_t k = 0; k < q.axis; ++k) plan.outer *= d.shape[k];
      for (uint32_t k = q.axis + 1; k < d.rank; ++k) {
        plan.inner *= d.shape[k];
      }
    }
    plan.padded_axis_len = plan.axis_len;
    if (plan.scheme == Scheme::kPerChannelAffine) {
      if (q.scale_type_tag != kFloat32) {
        return Invalid("per-channel scales must be float32");
      }
      plan.scale_type = kFloat32;
      plan.param_count = plan.axis_len;
      plan.symmetric = q.symmetric();
    } else {
      const uint64_t k = q.block_size;
      // A power of two (QNT-PBA-02, QNT-NF4-02, QNT-MX-02), re-checked for
      // descriptors that never met the validator: the storage walk finds a
      // block index with a shift (dequant/storage_walk.h).
      if (k == 0 || (k & (k - 1)) != 0) {
        return Invalid(
            absl::StrCat("block_size ", k, " is not a power of two"));
      }
      plan.block_size = k;
      plan.blocks_per_axis = plan.axis_len / k + (plan.axis_len % k != 0);
      if (plan.scheme == Scheme::kMxfp) {
        if (plan.axis_len % k != 0) {
          return Invalid("MXFP shape[axis] is not a multiple of block_size");
        }
        plan.scale_type = kFloat8E8M0;
        plan.symmetric = true;
      } else {
        plan.padded_axis_len = plan.blocks_per_axis * k;
        if (plan.scheme == Scheme::kNf4) {
          plan.scale_type = kFloat32;
          plan.symmetric = true;
        } else {
          if (q.scale_type_tag != kFloat16 && q.scale_type_tag != kBFloat16 &&
              q.scale_type_tag != kFloat32) {
            return Invalid("per-block scale type is not f16, bf16 or f32");
          }
          plan.scale_type = q.scale_type_tag;
          plan.symmetric = q.symmetric();
        }
      }
      uint64_t non_axis = 0;
      if (!Mul(plan.outer, plan.inner, &non_axis) ||
          !Mul(non_axis, plan.blocks_per_axis, &plan.param_count)) {
        return Invalid("block count overflows");
      }
    }
  }

  uint64_t storage = 0;
  if (!Mul(plan.outer, plan.padded_axis_len, &storage) ||
      !Mul(storage, plan.inner, &storage)) {
    return Invalid("padded storage grid overflows");
  }
  plan.storage_elements = storage;
  if (!StorageBytes(d.type_tag, storage, &plan.storage_bytes)) {
    return Invalid("storage size overflows");
  }
  plan.byte_offset = d.byte_offset;
  plan.data_buffer_size = d.buffers[0].byte_size;
  // byte_offset lies in buffer 0 (DESC-SHP-03, checked again here for
  // descriptors that never met the validator, empty tensors included), and
  // bit positions 8 · byte_offset ± element offset · bits stay inside int64.
  if (plan.byte_offset > plan.data_buffer_size) {
    return Invalid(absl::StrCat("byte_offset ", plan.byte_offset,
                                " lies beyond the data buffer's ",
                                plan.data_buffer_size, " bytes"));
  }
  if (plan.byte_offset > kMaxByteOffset) {
    return Invalid(absl::StrCat("byte_offset ", plan.byte_offset,
                                " is too large to address"));
  }
  // Row- and column-major store exactly the packed grid; the other layouts'
  // extents are checked by their ElementAddresser (dequant/storage_walk.h).
  if ((plan.layout_tag == layout_tag::kRowMajor ||
       plan.layout_tag == layout_tag::kColumnMajor) &&
      (plan.byte_offset > plan.data_buffer_size ||
       plan.data_buffer_size - plan.byte_offset < plan.storage_bytes)) {
    return Invalid(absl::StrCat("the data buffer holds ", plan.data_buffer_size,
                                " bytes, fewer than byte_offset ",
                                plan.byte_offset, " + ", plan.storage_bytes));
  }
  return plan;
}

}  // namespace hurray::dequant
