#include "stream/ingest/output/sparse_dequant.h"

#include <limits>
#include <utility>

#include "parser/quantization.h"

namespace hurray::stream::ingest {

absl::StatusOr<SparseDequantizer> SparseDequantizer::Create(
    const TensorDescriptor& d, const dequant::ParameterBytes& params,
    Mode mode) {
  // The plan of the logical tensor as if it were dense: the parameters'
  // count and folding. Its data buffer is not read.
  TensorDescriptor dense = d;
  dense.layout_tag = layout_tag::kRowMajor;
  dense.layout = LayoutFields();
  dense.byte_offset = 0;
  dense.buffers[0].byte_size = std::numeric_limits<uint64_t>::max();
  absl::StatusOr<dequant::Plan> plan = dequant::MakePlan(dense);
  if (!plan.ok()) return plan.status();
  absl::StatusOr<dequant::Params> p = dequant::LoadParams(*plan, params, mode);
  if (!p.ok()) return p.status();
  SparseDequantizer q;
  q.plan_ = *plan;
  q.params_ = *std::move(p);
  q.minifloat_ = plan->scheme == dequant::Scheme::kNf4
                     ? nullptr
                     : dequant::MinifloatDecoderFor(d.type_tag);
  q.bits_ = dequant::PackingOf(plan->codec).bits;
  const dequant::Codec c = plan->codec;
  q.signed_ = c == dequant::Codec::kInt8 || c == dequant::Codec::kInt16 ||
              c == dequant::Codec::kInt32 || c == dequant::Codec::kInt4 ||
              c == dequant::Codec::kInt2;
  return q;
}

float SparseDequantizer::Value(absl::Span<const uint8_t> codes, uint64_t value,
                               uint64_t position) const {
  // Code `value` of the LSB-first bit stream (element-types.md).
  const uint64_t first = value * bits_;
  uint32_t code = 0;
  for (uint32_t k = 0; k < bits_; ++k) {
    const uint64_t bit = first + k;
    if (bit / 8 >= codes.size()) break;
    code |= static_cast<uint32_t>((codes[bit / 8] >> (bit % 8)) & 1u) << k;
  }
  uint64_t param = 0;
  const uint64_t inner = plan_.inner, len = plan_.axis_len;
  if (plan_.scheme == dequant::Scheme::kPerChannelAffine) {
    param = (position / inner) % len;
  } else if (plan_.scheme != dequant::Scheme::kPerTensorAffine) {
    const uint64_t o = position / (len * inner);
    const uint64_t a = (position / inner) % len;
    const uint64_t i = position % inner;
    param = (o * inner + i) * plan_.blocks_per_axis + a / plan_.block_size;
  }
  const float scale = params_.scales[param];
  if (plan_.scheme == dequant::Scheme::kNf4) return kNf4Lut[code & 15] * scale;
  if (minifloat_ != nullptr) {
    return minifloat_(static_cast<uint8_t>(code)) * scale;
  }
  int64_t q = code;
  if (signed_ && bits_ < 64 && ((code >> (bits_ - 1)) & 1u) != 0) {
    q -= int64_t{1} << bits_;
  }
  const int64_t zp =
      params_.zero_points.empty() ? 0 : params_.zero_points[param];
  return static_cast<float>(q - zp) * scale;
}

}  // namespace hurray::stream::ingest
