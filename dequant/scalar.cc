#include "dequant/scalar.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "dequant/codec.h"
#include "dequant/minifloat.h"
#include "dequant/params.h"
#include "dequant/plan.h"
#include "dequant/storage_walk.h"
#include "parser/addressing.h"
#include "parser/element_type.h"
#include "parser/quantization.h"

namespace hurray::dequant {
namespace {

// Bits [index · bits, (index + 1) · bits) of the little-endian bit stream,
// one bit at a time.
uint32_t ReadBits(const uint8_t* base, uint64_t index, uint32_t bits) {
  const uint64_t first_bit = index * bits;
  uint32_t value = 0;
  for (uint32_t k = 0; k < bits; ++k) {
    const uint64_t bit = first_bit + k;
    value |= static_cast<uint32_t>((base[bit / 8] >> (bit % 8)) & 1u) << k;
  }
  return value;
}

// `bits` bits from bit `first_bit` of the little-endian bit stream.
uint32_t ReadBitsAt(const uint8_t* base, uint64_t first_bit, uint32_t bits) {
  uint32_t value = 0;
  for (uint32_t k = 0; k < bits; ++k) {
    const uint64_t bit = first_bit + k;
    value |= static_cast<uint32_t>((base[bit / 8] >> (bit % 8)) & 1u) << k;
  }
  return value;
}

bool IsSigned(Codec c) {
  return c == Codec::kInt8 || c == Codec::kInt16 || c == Codec::kInt32 ||
         c == Codec::kInt4 || c == Codec::kInt2;
}

// Two's complement value of a `bits`-wide integer code.
int64_t IntegerValue(uint32_t code, uint32_t bits, bool is_signed) {
  const int64_t v = code;
  if (is_signed && (code >> (bits - 1)) & 1u) return v - (int64_t{1} << bits);
  return v;
}

Rule PackRule(uint32_t bits) {
  return bits == 4   ? Rule::kTypePack02
         : bits == 2 ? Rule::kTypePack03
                     : Rule::kTypePack04;
}

}  // namespace

absl::Status ReferenceDequantize(const TensorDescriptor& d,
                                 absl::Span<const uint8_t> data,
                                 const ParameterBytes& params,
                                 std::vector<float>* out,
                                 const DequantOptions& options,
                                 DequantWarnings* warnings) {
  out->clear();
  if (warnings != nullptr) *warnings = DequantWarnings();
  absl::StatusOr<Plan> plan = MakePlan(d);
  if (!plan.ok()) return plan.status();
  absl::StatusOr<Params> p = LoadParams(*plan, params, options.mode);
  if (!p.ok()) return p.status();
  if (data.size() > plan->data_buffer_size) {
    return absl::OutOfRangeError("data runs past the data buffer");
  }
  // Where each element of the stored grid lives: the layout's addresser over
  // the padded shape (RESOLUTIONS.md 2: the layout applies to the padded
  // grid). Row-major: the row-major index.
  const TensorDescriptor stored_d = StoredGridDescriptor(d, *plan);
  absl::StatusOr<ElementAddresser> addresser =
      ElementAddresser::Create(stored_d);
  if (!addresser.ok()) return addresser.status();
  const bool packed_grid = d.layout_tag == layout_tag::kRowMajor ||
                           d.layout_tag == layout_tag::kColumnMajor;
  const uint64_t needed_bits =
      addresser->empty() ? 0
                         : addresser->BitOffsetOf(addresser->max_offset()) +
                               PackingOf(plan->codec).bits;
  if (data.size() * 8 < needed_bits ||
      (packed_grid &&
       data.size() - std::min<uint64_t>(data.size(), plan->byte_offset) <
           plan->storage_bytes)) {
    return absl::OutOfRangeError("the data ended before the last element");
  }
  const uint8_t* base = data.data() + plan->byte_offset;
  const Codec codec = plan->codec;
  const uint32_t bits = PackingOf(codec).bits;
  // Code of the stored-grid element at `idx`.
  auto code_at = [&](const std::vector<uint64_t>& idx) {
    return ReadBitsAt(data.data(), addresser->BitOffset(idx), bits);
  };
  const QuantizationDescriptor& q = d.quantization;
  const bool per_tensor = plan->scheme == Scheme::kPerTensorAffine;
  const uint32_t axis = per_tensor ? 0 : q.axis;
  const uint64_t k = plan->block_size;
  const uint64_t blocks_per_axis = plan->blocks_per_axis;

  // The stored grid: shape[axis] padded to whole blocks for PBA and NF4.
  std::vector<uint64_t> shape(d.shape, d.shape + d.rank);
  std::vector<uint64_t> stored(stored_d.shape, stored_d.shape + d.rank);
  const bool padded =
      plan->scheme == Scheme::kPerBlockAffine || plan->scheme == Scheme::kNf4;
  uint64_t stored_count = 1;
  for (uint64_t n : stored) stored_count *= n;

  // element-types.md: unused bits after the last element must be zero (row-
  // and column-major, which store the packed grid).
  const uint64_t per_byte_group = bits == 6 ? 4 : (bits < 8 ? 8 / bits : 1);
  if (packed_grid && per_byte_group > 1 && stored_count % per_byte_group != 0 &&
      Applies(PackRule(bits), options.mode)) {
    const uint64_t group_end =
        (stored_count / per_byte_group + 1) * per_byte_group;
    for (uint64_t slot = stored_count; slot < group_end; ++slot) {
      if (ReadBits(base, slot, bits) != 0) {
        return ToStatus(Rejection{PackRule(bits), slot,
                                  "unused bits after the last element",
                                  OffsetUnit::kElement});
      }
    }
  }

  // Padding of partial trailing blocks: a warning (RESOLUTIONS.md 2); the
  // lowest element offset of a non-zero one.
  if (padded && stored[axis] != shape[axis] && stored_count != 0) {
    std::vector<uint64_t> idx(d.rank, 0);
    for (uint64_t s = 0; s < stored_count; ++s) {
      if (idx[axis] >= shape[axis] && code_at(idx) != 0 &&
          warnings != nullptr) {
        const uint64_t at = static_cast<uint64_t>(addresser->Offset(idx));
        if (warnings->nonzero_padding == 0 ||
            at < warnings->first_nonzero_padding) {
          warnings->first_nonzero_padding = at;
        }
        ++warnings->nonzero_padding;
      }
      for (int64_t j = static_cast<int64_t>(d.rank) - 1; j >= 0; --j) {
        if (++idx[j] < stored[j]) break;
        idx[j] = 0;
      }
    }
  }

  const MinifloatDecoder minifloat = MinifloatDecoderFor(plan->storage_type);
  out->reserve(plan->logical_elements);
  std::vector<uint64_t> idx(d.rank, 0);
  for (uint64_t n = 0; n < plan->logical_elements; ++n) {
    const uint32_t code = code_at(idx);

    // Parameter index.
    uint64_t param = 0;
    if (plan->scheme == Scheme::kPerChannelAffine) {
      param = idx[axis];
    } else if (!per_tensor) {
      uint64_t outer = 0;  // row-major over every dimension but the axis
      for (uint32_t j = 0; j < d.rank; ++j) {
        if (j != axis) outer = outer * shape[j] + idx[j];
      }
      param = outer * blocks_per_axis + idx[axis] / k;
    }
    const float scale = p->scales[param];
    float value = 0;
    if (plan->scheme == Scheme::kNf4) {
      value = kNf4Lut[code] * scale;
    } else if (minifloat != nullptr) {
      value = minifloat(code) * scale;
    } else {
      // MXINT8 / MXINT4 too: s · int_value_of(q), no further scaling
      // (quantization/mxfp.md § Dequantization Formula).
      const int64_t qv = IntegerValue(code, bits, IsSigned(codec));
      const int64_t zp = p->zero_points.empty() ? 0 : p->zero_points[param];
      value = static_cast<float>(qv - zp) * scale;
    }
    out->push_back(value);

    for (int64_t j = static_cast<int64_t>(d.rank) - 1; j >= 0; --j) {
      if (++idx[j] < shape[j]) break;
      idx[j] = 0;
    }
  }
  return absl::OkStatus();
}

}  // namespace hurray::dequant
