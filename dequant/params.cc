#include "dequant/params.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "dequant/minifloat.h"
#include "parser/element_type.h"
#include "parser/quantization.h"

namespace hurray::dequant {
namespace {

uint32_t LoadLe32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

uint16_t LoadLe16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] | p[1] << 8);
}

uint32_t ScaleBytes(uint8_t scale_type) {
  switch (scale_type) {
    case type_tag::kFloat16:
    case type_tag::kBFloat16:
      return 2;
    case type_tag::kFloat8E8M0:
      return 1;
    default:
      return 4;
  }
}

absl::Status SizeMismatch(const char* which, size_t got, uint64_t want) {
  return absl::InvalidArgumentError(absl::StrCat(
      "the ", which, " buffer holds ", got, " bytes, expected ", want));
}

Rejection ScaleRejection(Scheme scheme, uint64_t index) {
  switch (scheme) {
    case Scheme::kPerChannelAffine:
      return {Rule::kQntPca10, index,
              "a per-channel scale is zero, NaN or infinite (the offset is "
              "its entry in the scale buffer)",
              OffsetUnit::kEntry};
    case Scheme::kPerBlockAffine:
      return {Rule::kQntPba12, index,
              "a per-block scale is zero, NaN or infinite", OffsetUnit::kBlock};
    case Scheme::kNf4:
      return {Rule::kQntNf407, index,
              "an NF4 absmax is negative, NaN or infinite", OffsetUnit::kBlock};
    default:
      return {Rule::kQntMx07, index, "an MXFP scale byte is 0x00 or 0xFF",
              OffsetUnit::kBlock};
  }
}

}  // namespace

absl::StatusOr<ParameterBytes> ParametersFromBuffers(
    const TensorDescriptor& d,
    absl::Span<const absl::Span<const uint8_t>> buffers) {
  ParameterBytes out;
  const QuantizationDescriptor& q = d.quantization;
  if (!d.has(flag::kHasQuantization) ||
      q.scheme_tag == scheme_tag::kPerTensorAffine) {
    return out;
  }
  auto buffer =
      [&](uint32_t index) -> absl::StatusOr<absl::Span<const uint8_t>> {
    if (index == 0 || index >= buffers.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("parameter buffer ", index, " is not among the ",
                       buffers.size(), " buffers given"));
    }
    return buffers[index];
  };
  absl::StatusOr<absl::Span<const uint8_t>> scales =
      buffer(q.scale_buffer_index);
  if (!scales.ok()) return scales.status();
  out.scales = *scales;
  const bool affine = q.scheme_tag == scheme_tag::kPerChannelAffine ||
                      q.scheme_tag == scheme_tag::kPerBlockAffine;
  if (!affine || q.symmetric()) return out;
  if (q.zero_point_buffer_index == q.scale_buffer_index) {
    // [scales | zero_points], n entries each: n · (scale size + 4) bytes.
    const uint32_t s = q.scheme_tag == scheme_tag::kPerBlockAffine
                           ? ScaleBytes(q.scale_type_tag)
                           : 4;
    const size_t n = out.scales.size() / (s + 4);
    if (n * (s + 4) != out.scales.size()) {
      return absl::InvalidArgumentError(
          "the shared scale/zero-point buffer does not split into whole "
          "entries");
    }
    out.zero_points = out.scales.subspan(n * s);
    out.scales = out.scales.subspan(0, n * s);
    return out;
  }
  absl::StatusOr<absl::Span<const uint8_t>> zero_points =
      buffer(q.zero_point_buffer_index);
  if (!zero_points.ok()) return zero_points.status();
  out.zero_points = *zero_points;
  return out;
}

absl::StatusOr<Params> LoadParams(const Plan& plan, const ParameterBytes& bytes,
                                  Mode mode) {
  Params params;
  if (plan.scheme == Scheme::kPerTensorAffine) {
    // Inline and already checked with the descriptor (QNT-PTA-01/02).
    params.scales.push_back(plan.tensor_scale);
    if (plan.tensor_zero_point != 0) {
      params.zero_points.push_back(plan.tensor_zero_point);
    }
    return params;
  }
  const uint64_t n = plan.param_count;
  const uint32_t size = ScaleBytes(plan.scale_type);
  if (bytes.scales.size() / size != n || bytes.scales.size() % size != 0) {
    return SizeMismatch("scale", bytes.scales.size(), n * size);
  }
  const bool has_zero_points = !plan.symmetric;
  if (has_zero_points && (bytes.zero_points.size() / 4 != n ||
                          bytes.zero_points.size() % 4 != 0)) {
    return SizeMismatch("zero-point", bytes.zero_points.size(), n * 4);
  }

  params.scales.resize(n);
  const uint8_t* s = bytes.scales.data();
  for (uint64_t b = 0; b < n; ++b) {
    float scale = 0;
    bool ok = true;
    switch (plan.scale_type) {
      case type_tag::kFloat8E8M0: {
        const std::optional<float> v = Float8E8M0ToF32(s[b]);
        ok = v.has_value();  // QNT-MX-07: 0x00 and 0xFF are never values
        scale = v.value_or(0.0f);
        break;
      }
      case type_tag::kFloat16:
        scale = F16ToF32(LoadLe16(s + 2 * b));
        break;
      case type_tag::kBFloat16:
        scale = Bf16ToF32(LoadLe16(s + 2 * b));
        break;
      default: {
        const uint32_t bits = LoadLe32(s + 4 * b);
        std::memcpy(&scale, &bits, 4);
        break;
      }
    }
    if (plan.scheme == Scheme::kNf4) {
      // Finite and non-negative; -0.0 >= 0 holds (RESOLUTIONS.md 5).
      ok = std::isfinite(scale) && scale >= 0.0f;
    } else if (plan.scheme != Scheme::kMxfp) {
      ok = std::isfinite(scale) && scale != 0.0f;
    }
    if (!ok) return ToStatus(ScaleRejection(plan.scheme, b));
    params.scales[b] = scale;
  }

  if (!has_zero_points) return params;
  params.zero_points.resize(n);
  int64_t min = 0, max = 0;
  IntegerStorageRange(plan.storage_type, &min, &max);
  const Rule rule = plan.scheme == Scheme::kPerChannelAffine ? Rule::kQntPca11
                                                             : Rule::kQntPba13;
  const bool check = Applies(rule, mode);
  for (uint64_t b = 0; b < n; ++b) {
    const int32_t zp =
        static_cast<int32_t>(LoadLe32(bytes.zero_points.data() + 4 * b));
    if (check && (zp < min || zp > max)) {
      return rule == Rule::kQntPca11
                 ? ToStatus(Rejection{rule, b,
                                      "a per-channel zero point is outside "
                                      "the storage type's range (the offset "
                                      "is its entry in the zero-point buffer)",
                                      OffsetUnit::kEntry})
                 : ToStatus(Rejection{rule, b,
                                      "a per-block zero point is outside the "
                                      "storage type's range",
                                      OffsetUnit::kBlock});
    }
    params.zero_points[b] = zp;
  }
  return params;
}

}  // namespace hurray::dequant
