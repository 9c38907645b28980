#include "dequant/testing.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "parser/element_type.h"
#include "parser/quantization.h"
#include "parser/validator.h"

namespace hurray::dequant::testing {
namespace {

using namespace type_tag;  // NOLINT

template <typename T>
T Must(absl::StatusOr<T> v) {
  if (!v.ok()) {
    std::fprintf(stderr, "testing: %s\n", v.status().ToString().c_str());
    std::abort();
  }
  return *std::move(v);
}

void PutLe32(std::vector<uint8_t>* out, uint32_t v) {
  for (int k = 0; k < 4; ++k)
    out->push_back(static_cast<uint8_t>(v >> (8 * k)));
}

void PutLe16(std::vector<uint8_t>* out, uint16_t v) {
  out->push_back(static_cast<uint8_t>(v));
  out->push_back(static_cast<uint8_t>(v >> 8));
}

// Bits [index · bits, (index + 1) · bits) of a little-endian bit stream.
void SetBits(uint8_t* base, uint64_t index, uint32_t bits, uint32_t value) {
  for (uint32_t k = 0; k < bits; ++k) {
    const uint64_t bit = index * bits + k;
    const uint8_t mask = static_cast<uint8_t>(1u << (bit % 8));
    if ((value >> k) & 1u) {
      base[bit / 8] |= mask;
    } else {
      base[bit / 8] &= static_cast<uint8_t>(~mask);
    }
  }
}

// A finite non-zero float32 of every kind: ordinary, negative, subnormal,
// huge, a power of two, or any finite bit pattern.
float AffineScale(std::mt19937_64& rng) {
  std::uniform_int_distribution<int> kind(0, 5);
  for (;;) {
    float f = 0;
    switch (kind(rng)) {
      case 0:
        f = std::uniform_real_distribution<float>(-2.0f, 2.0f)(rng);
        break;
      case 1: {  // subnormal
        const uint32_t bits = static_cast<uint32_t>(rng()) & 0x807FFFFFu;
        std::memcpy(&f, &bits, 4);
        break;
      }
      case 2:
        f = std::uniform_real_distribution<float>(1e30f, 3e38f)(rng);
        if (rng() & 1) f = -f;
        break;
      case 3:
        f = std::ldexp(1.0f,
                       std::uniform_int_distribution<int>(-149, 127)(rng));
        break;
      default: {
        const uint32_t bits = static_cast<uint32_t>(rng());
        std::memcpy(&f, &bits, 4);
        break;
      }
    }
    if (std::isfinite(f) && f != 0.0f) return f;
  }
}

float Nf4Absmax(std::mt19937_64& rng) {
  switch (rng() % 6) {
    case 0:
      return 0.0f;
    case 1:
      return -0.0f;  // RESOLUTIONS.md 5: counts as non-negative
    default:
      return std::fabs(AffineScale(rng));
  }
}

uint16_t F16Scale(std::mt19937_64& rng) {
  for (;;) {
    const uint16_t b = static_cast<uint16_t>(rng());
    if ((b & 0x7C00) != 0x7C00 && (b & 0x7FFF) != 0) return b;
  }
}

uint16_t Bf16Scale(std::mt19937_64& rng) {
  for (;;) {
    const uint16_t b = static_cast<uint16_t>(rng());
    if ((b & 0x7F80) != 0x7F80 && (b & 0x7FFF) != 0) return b;
  }
}

int32_t ZeroPoint(uint8_t storage, bool wild, std::mt19937_64& rng) {
  if (wild) {
    switch (rng() % 4) {
      case 0:
        return INT32_MIN;
      case 1:
        return INT32_MAX;
      default:
        return static_cast<int32_t>(rng());
    }
  }
  int64_t min = 0, max = 0;
  IntegerStorageRange(storage, &min, &max);
  switch (rng() % 4) {
    case 0:
      return static_cast<int32_t>(min);
    case 1:
      return static_cast<int32_t>(max);
    default:
      return static_cast<int32_t>(
          std::uniform_int_distribution<int64_t>(min, max)(rng));
  }
}

uint8_t DefaultScaleType(const TensorSpec& s) {
  return s.scale_type != 0 ? s.scale_type : kFloat32;
}

}  // namespace

std::string TensorSpec::Name() const {
  std::string name =
      absl::StrCat(SchemeLabel(scheme), "/", ElementTypeName(storage_type),
                   "/[", absl::StrJoin(shape, ","), "]");
  if (scheme != Scheme::kPerTensorAffine) absl::StrAppend(&name, "/axis", axis);
  if (block_size != 0) absl::StrAppend(&name, "/K", block_size);
  if (scheme == Scheme::kPerBlockAffine) {
    absl::StrAppend(&name, "/", ElementTypeName(DefaultScaleType(*this)));
  }
  if (scheme == Scheme::kPerChannelAffine ||
      scheme == Scheme::kPerBlockAffine) {
    absl::StrAppend(&name, symmetric ? "/sym" : "/asym");
    if (shared_buffer) absl::StrAppend(&name, "/shared");
  }
  if (byte_offset != 0) absl::StrAppend(&name, "/off", byte_offset);
  if (wild_zero_points) absl::StrAppend(&name, "/wild");
  if (!zero_padding) absl::StrAppend(&name, "/dirty-padding");
  return name;
}

std::vector<uint8_t> StorageTypes(Scheme scheme) {
  switch (scheme) {
    case Scheme::kPerTensorAffine:
    case Scheme::kPerChannelAffine:
      return {kInt8,   kUInt8, kInt16, kUInt16, kInt32,
              kUInt32, kInt4,  kUInt4, kInt2,   kUInt2};
    case Scheme::kPerBlockAffine:
      return {kInt8, kUInt8, kInt4, kUInt4, kInt2, kUInt2};
    case Scheme::kNf4:
      return {kUInt4};
    case Scheme::kMxfp:
      return {kFloat8E4M3, kFloat8E5M2, kFloat4E2M1, kFloat6E2M3,
              kFloat6E3M2, kInt8,       kInt4};
  }
  return {};
}

ParameterBytes TestTensor::params() const {
  std::vector<absl::Span<const uint8_t>> spans(buffers.begin(), buffers.end());
  return Must(ParametersFromBuffers(*descriptor, spans));
}

TestTensor MakeTensor(const TensorSpec& spec, std::mt19937_64& rng) {
  TestTensor t;
  std::vector<uint8_t> scales, zero_points, data;
  t.descriptor = std::make_unique<TensorDescriptor>();
  TensorDescriptor& d = *t.descriptor;
  d.type_tag = spec.storage_type;
  d.layout_tag = layout_tag::kRowMajor;
  d.rank = static_cast<uint32_t>(spec.shape.size());
  for (uint32_t k = 0; k < d.rank; ++k) d.shape[k] = spec.shape[k];
  d.flags |= flag::kHasQuantization;

  // Folded shape [outer, S, inner] and the parameter count.
  uint64_t outer = 1, inner = 1, s = 1, logical = 1;
  for (uint64_t n : spec.shape) logical *= n;
  if (spec.scheme != Scheme::kPerTensorAffine) {
    for (uint32_t k = 0; k < spec.axis; ++k) outer *= spec.shape[k];
    s = spec.shape[spec.axis];
    for (uint32_t k = spec.axis + 1; k < d.rank; ++k) inner *= spec.shape[k];
  } else {
    inner = logical;
  }
  const uint64_t k = spec.block_size;
  const uint64_t blocks = k == 0 ? 0 : (s + k - 1) / k;
  const bool padded =
      spec.scheme == Scheme::kPerBlockAffine || spec.scheme == Scheme::kNf4;
  const uint64_t sp = padded ? blocks * k : s;
  const uint64_t params =
      spec.scheme == Scheme::kPerChannelAffine ? s : outer * inner * blocks;

  const uint8_t scale_type = DefaultScaleType(spec);
  const bool asym = (spec.scheme == Scheme::kPerChannelAffine ||
                     spec.scheme == Scheme::kPerBlockAffine) &&
                    !spec.symmetric;
  for (uint64_t b = 0; b < params && spec.scheme != Scheme::kPerTensorAffine;
       ++b) {
    switch (spec.scheme) {
      case Scheme::kNf4: {
        const float f = Nf4Absmax(rng);
        uint32_t bits = 0;
        std::memcpy(&bits, &f, 4);
        PutLe32(&scales, bits);
        break;
      }
      case Scheme::kMxfp:
        scales.push_back(static_cast<uint8_t>(1 + rng() % 254));
        break;
      default:
        if (scale_type == kFloat16) {
          PutLe16(&scales, F16Scale(rng));
        } else if (scale_type == kBFloat16) {
          PutLe16(&scales, Bf16Scale(rng));
        } else {
          const float f = AffineScale(rng);
          uint32_t bits = 0;
          std::memcpy(&bits, &f, 4);
          PutLe32(&scales, bits);
        }
        break;
    }
    if (asym) {
      PutLe32(&zero_points,
              static_cast<uint32_t>(
                  ZeroPoint(spec.storage_type, spec.wild_zero_points, rng)));
    }
  }

  auto add_buffer = [&d, &t](std::vector<uint8_t> bytes) {
    BufferHandle h;
    h.byte_size = bytes.size();
    d.buffers[d.buffer_count++] = h;
    t.buffers.push_back(std::move(bytes));
    return d.buffer_count - 1;
  };
  add_buffer({});  // data, filled below
  switch (spec.scheme) {
    case Scheme::kPerTensorAffine: {
      const int32_t zp = ZeroPoint(spec.storage_type, false, rng);
      d.quantization = Must(PerTensorAffine::Create(AffineScale(rng), zp));
      break;
    }
    case Scheme::kPerChannelAffine:
    case Scheme::kPerBlockAffine: {
      uint32_t scale_index = 0, zp_index = kNoBufferIndex;
      if (asym && spec.shared_buffer) {
        std::vector<uint8_t> both = scales;
        both.insert(both.end(), zero_points.begin(), zero_points.end());
        scale_index = zp_index = add_buffer(std::move(both));
      } else {
        scale_index = add_buffer(scales);
        if (asym) zp_index = add_buffer(zero_points);
      }
      if (spec.scheme == Scheme::kPerChannelAffine) {
        d.quantization =
            asym ? Must(PerChannelAffine::Asymmetric(spec.axis, scale_index,
                                                     zp_index))
                 : Must(PerChannelAffine::Symmetric(spec.axis, scale_index));
      } else {
        d.quantization =
            asym ? Must(PerBlockAffine::Asymmetric(spec.axis, spec.block_size,
                                                   scale_index, zp_index,
                                                   scale_type))
                 : Must(PerBlockAffine::Symmetric(spec.axis, spec.block_size,
                                                  scale_index, scale_type));
      }
      break;
    }
    case Scheme::kNf4:
      d.quantization =
          Must(Nf4::Create(spec.axis, spec.block_size, add_buffer(scales)));
      break;
    case Scheme::kMxfp:
      d.quantization =
          Must(Mxfp::Create(spec.axis, spec.block_size, add_buffer(scales)));
      break;
  }

  // Data: random codes on the stored grid, zero bits after the last element,
  // padding zeroed when asked.
  const uint64_t stored = outer * sp * inner;
  uint64_t bytes = 0;
  StorageBytes(spec.storage_type, stored, &bytes);
  // An empty tensor must have an empty data buffer (DESC-SHP-05).
  d.byte_offset = bytes == 0 ? 0 : spec.byte_offset;
  data.resize(d.byte_offset + bytes);
  for (uint8_t& b : data) b = static_cast<uint8_t>(rng());
  uint8_t* base = data.data() + d.byte_offset;
  const uint32_t bits = d.ElementBits();
  if (bits < 8) {
    const uint64_t per_group = bits == 6 ? 4 : 8 / bits;
    const uint64_t end = (stored + per_group - 1) / per_group * per_group;
    for (uint64_t e = stored; e < end; ++e) SetBits(base, e, bits, 0);
  }
  if (padded && sp != s && spec.zero_padding) {
    for (uint64_t e = 0; e < stored; ++e) {
      if ((e / inner) % sp >= s) SetBits(base, e, bits, 0);
    }
  }
  d.buffers[0].byte_size = data.size();
  t.buffers[0] = std::move(data);

  const absl::Status valid = Validate(d);
  if (!valid.ok()) {
    std::fprintf(stderr, "testing: %s is invalid: %s\n", spec.Name().c_str(),
                 valid.ToString().c_str());
    std::abort();
  }
  return t;
}

void SetCode(TestTensor* t, uint64_t index, uint32_t code) {
  const TensorDescriptor& d = *t->descriptor;
  SetBits(t->buffers[0].data() + d.byte_offset, index, d.ElementBits(), code);
}

void SetScaleF32(TestTensor* t, uint64_t index, float scale) {
  std::vector<uint8_t>& b =
      t->buffers[t->descriptor->quantization.scale_buffer_index];
  std::memcpy(b.data() + 4 * index, &scale, 4);
}

void SetScale16(TestTensor* t, uint64_t index, uint16_t bits) {
  std::vector<uint8_t>& b =
      t->buffers[t->descriptor->quantization.scale_buffer_index];
  b[2 * index] = static_cast<uint8_t>(bits);
  b[2 * index + 1] = static_cast<uint8_t>(bits >> 8);
}

void SetScaleByte(TestTensor* t, uint64_t index, uint8_t e8m0) {
  t->buffers[t->descriptor->quantization.scale_buffer_index][index] = e8m0;
}

void SetZeroPoint(TestTensor* t, uint64_t index, int32_t zero_point) {
  std::vector<uint8_t>& b =
      t->buffers[t->descriptor->quantization.zero_point_buffer_index];
  std::memcpy(b.data() + 4 * index, &zero_point, 4);
}

int64_t FirstBitDifference(absl::Span<const float> a,
                           absl::Span<const float> b) {
  if (a.size() != b.size())
    return static_cast<int64_t>(std::min(a.size(), b.size()));
  for (size_t i = 0; i < a.size(); ++i) {
    if (Bits(a[i]) != Bits(b[i])) return static_cast<int64_t>(i);
  }
  return -1;
}

uint32_t Bits(float f) {
  uint32_t b = 0;
  std::memcpy(&b, &f, 4);
  return b;
}

}  // namespace hurray::dequant::testing
