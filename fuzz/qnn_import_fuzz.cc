// Fuzz target: QNN per-axis import (dequant/qnn_import.h) on arbitrary
// parameters and container values.
//
// The input drives a FuzzedDataProvider: container (8/16/32 bits or an
// invalid width, signed or not), bitwidth, mapping, shape (rank 0–5, or a
// rank above 64), axis, scales (one per channel, or a wrong count;
// interesting or raw float bit patterns), offsets (none, one per channel, or
// a wrong count) and the container values (one per element, or one
// container too few or too many).
//
// Properties (any violation aborts):
//   * ImportPerAxis never crashes; a failure is InvalidArgument.
//   * A success is a per-channel affine row-major descriptor whose buffer
//     table matches the returned buffers; it encodes, and decodes with the
//     validator in strict mode to an equal descriptor.
//   * Dequantizing it (the scalar reference and DequantizeAll) succeeds and
//     gives, bit for bit, the QNN formula computed here directly from the
//     containers as the import documents it: with q the low `bitwidth` bits
//     of each container (sign-extended for signed containers),
//       linear:       float32(q + offset) · scale   (offset 0 if none)
//       exclude-zero: float32(2q + 1) · (scale / 2) = scale · (q + 0.5)
//     in float32 (q + offset is exact in int64; docs/design.md §
//     Zero-point convention, RESOLUTIONS.md 1 and 11).
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "dequant/dequantizer.h"
#include "dequant/params.h"
#include "dequant/qnn_import.h"
#include "dequant/scalar.h"
#include "fuzz/fuzz_util.h"
#include "parser/decoder.h"
#include "parser/descriptor.h"
#include "parser/encoder.h"
#include "parser/quantization.h"
#include "parser/validator.h"
#include "parser/wire.h"

namespace hurray::fuzz {
namespace {

constexpr uint64_t kMaxElements = 4096;
constexpr uint64_t kMaxChannels = 512;

float PickScale(FuzzedDataProvider& in) {
  static constexpr float kInteresting[] = {
      1.0f,
      0.5f,
      0.1f,
      3.0f,
      1e-30f,
      1e30f,
      std::numeric_limits<float>::denorm_min(),
      std::numeric_limits<float>::min(),
      std::numeric_limits<float>::max(),
      0.0f,
      -1.0f,
      std::numeric_limits<float>::infinity(),
      std::numeric_limits<float>::quiet_NaN(),
  };
  if (in.ConsumeBool()) return in.PickValueInArray(kInteresting);
  const uint32_t bits = in.ConsumeIntegral<uint32_t>();
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

int32_t PickOffset(FuzzedDataProvider& in) {
  switch (in.ConsumeIntegralInRange(0, 2)) {
    case 0:
      return in.ConsumeIntegralInRange<int32_t>(-8, 8);
    case 1:
      return in.ConsumeIntegralInRange<int32_t>(-70000, 70000);
    default:
      return in.ConsumeIntegral<int32_t>();
  }
}

// The meaningful value of container `i`, as the import documents it.
int64_t ContainerValue(absl::Span<const uint8_t> values, uint64_t i,
                       qnn::Container c, uint32_t bitwidth) {
  const size_t width = c.bits / 8;
  uint64_t raw = 0;
  for (size_t b = 0; b < width; ++b) {
    raw |= uint64_t{values[i * width + b]} << (8 * b);
  }
  const uint64_t mask = (uint64_t{1} << bitwidth) - 1;  // bitwidth ≤ 32
  raw &= mask;
  if (c.is_signed && ((raw >> (bitwidth - 1)) & 1)) {
    return static_cast<int64_t>(raw | ~mask);
  }
  return static_cast<int64_t>(raw);
}

bool SameBits(float a, float b) {
  uint32_t x, y;
  std::memcpy(&x, &a, 4);
  std::memcpy(&y, &b, 4);
  return x == y;
}

void CheckImported(const qnn::PerAxisEncoding& e,
                   absl::Span<const uint64_t> shape, qnn::Container container,
                   absl::Span<const uint8_t> values,
                   const qnn::ImportedTensor& t) {
  HURRAY_FUZZ_CHECK(t.descriptor != nullptr);
  const TensorDescriptor& d = *t.descriptor;
  HURRAY_FUZZ_CHECK(d.layout_tag == layout_tag::kRowMajor);
  HURRAY_FUZZ_CHECK(d.rank == shape.size());
  for (uint32_t k = 0; k < d.rank; ++k)
    HURRAY_FUZZ_CHECK(d.shape[k] == shape[k]);
  HURRAY_FUZZ_CHECK(d.has(flag::kHasQuantization));
  HURRAY_FUZZ_CHECK(d.quantization.scheme_tag == scheme_tag::kPerChannelAffine);
  HURRAY_FUZZ_CHECK(d.quantization.axis == static_cast<uint32_t>(e.axis));
  const bool symmetric = t.zero_points.empty();
  HURRAY_FUZZ_CHECK(d.buffer_count == (symmetric ? 2u : 3u));
  HURRAY_FUZZ_CHECK(d.buffers[0].byte_size == t.data.size());
  HURRAY_FUZZ_CHECK(d.buffers[1].byte_size == t.scales.size());
  if (!symmetric)
    HURRAY_FUZZ_CHECK(d.buffers[2].byte_size == t.zero_points.size());

  // The descriptor validates, strict, and survives the wire.
  HURRAY_FUZZ_CHECK(Validate(d).ok());
  const absl::StatusOr<std::vector<uint8_t>> wire = Encode(d);
  HURRAY_FUZZ_CHECK(wire.ok());
  const OneShot decoded = DecodeOneShot(*wire, ParseOptions());
  HURRAY_FUZZ_CHECK(decoded.done());
  HURRAY_FUZZ_CHECK(decoded.descriptor() == d);

  // Dequantize and compare with the QNN formula.
  const absl::Span<const uint8_t> buffers[3] = {t.data, t.scales,
                                                t.zero_points};
  const absl::StatusOr<dequant::ParameterBytes> params =
      dequant::ParametersFromBuffers(
          d, absl::MakeConstSpan(buffers, d.buffer_count));
  HURRAY_FUZZ_CHECK(params.ok());
  std::vector<float> reference, simd;
  HURRAY_FUZZ_CHECK(
      dequant::ReferenceDequantize(d, t.data, *params, &reference).ok());
  HURRAY_FUZZ_CHECK(dequant::DequantizeAll(d, t.data, *params, &simd).ok());

  uint64_t count = 1;
  for (uint64_t n : shape) count *= n;  // checked small by the caller
  HURRAY_FUZZ_CHECK(reference.size() == count && simd.size() == count);
  // Row-major: the channel of element i is (i / inner) % channels.
  uint64_t inner = 1;
  for (size_t k = static_cast<size_t>(e.axis) + 1; k < shape.size(); ++k) {
    inner *= shape[k];
  }
  const uint64_t channels = shape[e.axis];
  const bool exclude_zero =
      e.mapping == qnn::Mapping::kLinearSymmetricExcludeZero;
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t c = (i / inner) % channels;
    const int64_t q = ContainerValue(values, i, container, e.bitwidth);
    float want;
    if (exclude_zero) {
      want = static_cast<float>(2 * q + 1) * (e.scales[c] / 2.0f);
    } else {
      const int64_t offset = e.offsets.empty() ? 0 : e.offsets[c];
      want = static_cast<float>(q + offset) * e.scales[c];
    }
    if (!SameBits(reference[i], want) || !SameBits(simd[i], want)) {
      std::fprintf(stderr,
                   "element %llu: q %lld, got %a (simd %a), want %a; "
                   "container %d%s bits, bitwidth %u, storage 0x%02x, "
                   "scale %a, offsets %zu\n",
                   static_cast<unsigned long long>(i),
                   static_cast<long long>(q), reference[i], simd[i], want,
                   container.bits, container.is_signed ? " signed" : "",
                   e.bitwidth, d.type_tag, e.scales[c], e.offsets.size());
      HURRAY_FUZZ_CHECK(false);
    }
  }
}

void Run(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  qnn::Container container;
  static constexpr uint8_t kBits[] = {8, 16, 32, 8, 16, 32, 0, 24, 64};
  container.bits = in.PickValueInArray(kBits);
  container.is_signed = in.ConsumeBool();
  qnn::PerAxisEncoding e;
  e.bitwidth = in.ConsumeIntegralInRange<uint32_t>(0, 33);
  e.mapping = in.ConsumeBool() ? qnn::Mapping::kLinearSymmetricExcludeZero
                               : qnn::Mapping::kLinear;

  // Shape: small dimensions, sometimes a dynamic or huge one, or rank > 64.
  std::vector<uint64_t> shape;
  const uint32_t rank = in.ConsumeBool() && in.ConsumeBool()
                            ? in.ConsumeIntegralInRange<uint32_t>(0, 70)
                            : in.ConsumeIntegralInRange<uint32_t>(0, 5);
  for (uint32_t k = 0; k < rank; ++k) {
    switch (in.ConsumeIntegralInRange(0, 15)) {
      case 0:
        shape.push_back(kDynamicDim);
        break;
      case 1:
        shape.push_back(in.ConsumeIntegral<uint64_t>());
        break;
      default:
        shape.push_back(in.ConsumeIntegralInRange<uint64_t>(0, 9));
        break;
    }
  }
  e.axis = in.ConsumeIntegralInRange<int32_t>(-1, static_cast<int32_t>(rank));

  // Scales and offsets: one per channel when the channel count is small,
  // sometimes one too few or too many.
  const bool axis_ok = e.axis >= 0 && static_cast<uint32_t>(e.axis) < rank;
  uint64_t channels = axis_ok ? shape[e.axis] : in.ConsumeIntegralInRange(0, 4);
  if (channels > kMaxChannels) channels = in.ConsumeIntegralInRange(0, 4);
  const int skew = in.ConsumeIntegralInRange(0, 7);
  const uint64_t n_scales =
      skew == 1 ? channels + 1
                : (skew == 2 && channels > 0 ? channels - 1 : channels);
  const bool same_scale = in.ConsumeBool();
  const float first = PickScale(in);
  for (uint64_t c = 0; c < n_scales; ++c) {
    e.scales.push_back(same_scale ? first : PickScale(in));
  }
  switch (in.ConsumeIntegralInRange(0, 3)) {
    case 0:
      break;  // symmetric
    case 1:
      e.offsets.assign(channels, 0);  // explicit zeros: still symmetric
      break;
    default:
      for (uint64_t c = 0; c < channels; ++c)
        e.offsets.push_back(PickOffset(in));
      if (skew == 3) e.offsets.push_back(0);
      break;
  }

  // Values: one container per element, from the rest of the input.
  // No dynamic dimension, and an exact product that fits (a zero dimension
  // makes it 0 whatever the others multiply to).
  bool finite = true;
  wire::CheckedProduct product;
  for (uint64_t n : shape) {
    finite &= n != kDynamicDim;
    product.Mul(n);
  }
  uint64_t count = 0;
  finite = finite && product.Get(&count);
  const bool small = finite && count <= kMaxElements;
  if (!small) count = in.ConsumeIntegralInRange(0, 8);
  const size_t width = container.bits / 8;
  size_t value_bytes = count * width;
  if (skew == 4 && value_bytes > 0) --value_bytes;
  if (skew == 5) ++value_bytes;
  std::vector<uint8_t> values = in.ConsumeBytes<uint8_t>(value_bytes);
  values.resize(value_bytes, 0xA5);

  const absl::StatusOr<qnn::ImportedTensor> imported =
      qnn::ImportPerAxis(e, shape, container, values);
  if (!imported.ok()) {
    HURRAY_FUZZ_CHECK(imported.status().code() ==
                      absl::StatusCode::kInvalidArgument);
    return;
  }
  // Success needs a finite element count matching the values.
  HURRAY_FUZZ_CHECK(small && axis_ok);
  CheckImported(e, shape, container, values, *imported);
}

}  // namespace
}  // namespace hurray::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hurray::fuzz::Run(data, size);
  return 0;
}
