#include "dequant/testing/test_tensor.h"

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
#include "dequant/storage_walk.h"
#include "parser/addressing.h"
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

// Bits [first_bit, first_bit + bits) of a little-endian bit stream.
void SetBitsAt(uint8_t* base, uint64_t first_bit, uint32_t bits,
               uint32_t value) {
  for (uint32_t k = 0; k < bits; ++k) {
    const uint64_t bit = first_bit + k;
    const uint8_t mask = static_cast<uint8_t>(1u << (bit % 8));
    if ((value >> k) & 1u) {
      base[bit / 8] |= mask;
    } else {
      base[bit / 8] &= static_cast<uint8_t>(~mask);
    }
  }
}

uint32_t BitLength(uint64_t v) { return v == 0 ? 0 : 64 - __builtin_clzll(v); }

// Contiguous strides of `shape` taken in the order `perm` (perm[0] slowest),
// each optionally widened by a gap.
std::vector<int64_t> PermutedStrides(const std::vector<uint64_t>& shape,
                                     std::mt19937_64& rng, bool gaps) {
  std::vector<uint32_t> perm(shape.size());
  for (uint32_t k = 0; k < perm.size(); ++k) perm[k] = k;
  std::shuffle(perm.begin(), perm.end(), rng);
  std::vector<int64_t> strides(shape.size());
  int64_t acc = 1;
  for (size_t i = perm.size(); i-- > 0;) {
    const uint32_t k = perm[i];
    if (gaps && rng() % 3 == 0) acc *= 2;
    strides[k] = acc;
    acc *= static_cast<int64_t>(std::max<uint64_t>(shape[k], 1));
  }
  return strides;
}

uint8_t ContiguousKind(std::mt19937_64& rng, bool strided_ok) {
  switch (rng() % (strided_ok ? 3 : 2)) {
    case 0:
      return layout_tag::kRowMajor;
    case 1:
      return layout_tag::kColumnMajor;
    default:
      return layout_tag::kStrided;
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
  if (layout.tag != layout_tag::kRowMajor) {
    absl::StrAppend(&name, "/", layout.Name());
  }
  return name;
}

std::string LayoutSpec::Name() const {
  std::string name = LayoutName(tag);
  switch (tag) {
    case layout_tag::kStrided:
      absl::StrAppend(&name, "[", absl::StrJoin(strides, ","), "]");
      break;
    case layout_tag::kTiled:
      for (const TiledLevelSpec& l : levels) {
        absl::StrAppend(&name, "(", LayoutName(l.outer), " ",
                        absl::StrJoin(l.tile, "x"));
        if (!l.outer_strides.empty()) {
          absl::StrAppend(&name, " o[", absl::StrJoin(l.outer_strides, ","),
                          "]");
        }
        absl::StrAppend(&name, " ", LayoutName(l.inner));
        if (!l.inner_strides.empty()) {
          absl::StrAppend(&name, "[", absl::StrJoin(l.inner_strides, ","), "]");
        }
        absl::StrAppend(&name, ")");
      }
      break;
    case layout_tag::kMorton:
      absl::StrAppend(&name, "[", absl::StrJoin(morton_bits, ","), "]");
      break;
    case layout_tag::kHilbert:
      absl::StrAppend(&name, hilbert_order);
      break;
    default:
      break;
  }
  return name;
}

std::vector<uint64_t> StoredShape(const TensorSpec& spec) {
  std::vector<uint64_t> shape = spec.shape;
  if ((spec.scheme == Scheme::kPerBlockAffine || spec.scheme == Scheme::kNf4) &&
      spec.block_size != 0) {
    const uint64_t k = spec.block_size;
    shape[spec.axis] = (shape[spec.axis] + k - 1) / k * k;
  }
  return shape;
}

LayoutSpec RandomLayout(uint8_t tag, const std::vector<uint64_t>& shape,
                        std::mt19937_64& rng, bool interleaved) {
  LayoutSpec l;
  l.tag = tag;
  const size_t r = shape.size();
  switch (tag) {
    case layout_tag::kStrided:
      if (interleaved) {
        for (size_t k = 0; k < r; ++k) {
          l.strides.push_back(static_cast<int64_t>(rng() % 7) - 3);
        }
        break;
      }
      l.strides = PermutedStrides(shape, rng, true);
      for (int64_t& s : l.strides) {
        if (rng() % 4 == 0) s = -s;
        if (rng() % 8 == 0) s = 0;  // broadcast
      }
      break;
    case layout_tag::kTiled: {
      const size_t depth = rng() % 3 == 0 ? 2 : 1;
      std::vector<uint64_t> extent = shape;
      for (size_t level = 0; level < depth; ++level) {
        TiledLevelSpec t;
        std::vector<uint64_t> grid(r);
        for (size_t k = 0; k < r; ++k) {
          uint64_t tile = 1;
          if (level == 0) {
            tile = 1 + rng() % std::min<uint64_t>(extent[k] + 1, 5);
          } else {  // a divisor of the enclosing tile
            std::vector<uint64_t> divisors;
            for (uint64_t v = 1; v <= extent[k]; ++v) {
              if (extent[k] % v == 0) divisors.push_back(v);
            }
            tile = divisors[rng() % divisors.size()];
          }
          t.tile.push_back(tile);
          grid[k] = (extent[k] + tile - 1) / tile;
        }
        t.outer = ContiguousKind(rng, true);
        if (t.outer == layout_tag::kStrided) {
          t.outer_strides = PermutedStrides(grid, rng, false);
        }
        extent = t.tile;
        if (level + 1 < depth) {
          t.inner = layout_tag::kTiled;
        } else {
          t.inner = ContiguousKind(rng, true);
          if (t.inner == layout_tag::kStrided) {
            t.inner_strides = PermutedStrides(t.tile, rng, false);
          }
        }
        l.levels.push_back(t);
      }
      break;
    }
    case layout_tag::kMorton:
      for (size_t k = 0; k < r; ++k) {
        l.morton_bits.push_back(
            std::max<uint32_t>(1, BitLength(shape[k] - 1) + rng() % 2));
      }
      break;
    case layout_tag::kHilbert:
      l.hilbert_order = BitLength(shape[0]) - 1;
      break;
    default:
      break;
  }
  return l;
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
  d.layout_tag = spec.layout.tag;
  d.rank = static_cast<uint32_t>(spec.shape.size());
  const LayoutSpec& ls = spec.layout;
  switch (ls.tag) {
    case layout_tag::kStrided:
      std::copy(ls.strides.begin(), ls.strides.end(), d.layout.strides);
      break;
    case layout_tag::kTiled:
      d.layout.tiled_depth = static_cast<uint32_t>(ls.levels.size());
      for (size_t l = 0; l < ls.levels.size(); ++l) {
        TiledLevel& t = d.layout.tiled[l];
        t.outer_layout = ls.levels[l].outer;
        t.inner_layout = ls.levels[l].inner;
        std::copy(ls.levels[l].tile.begin(), ls.levels[l].tile.end(),
                  t.tile_shape);
        std::copy(ls.levels[l].outer_strides.begin(),
                  ls.levels[l].outer_strides.end(), t.outer_strides);
        std::copy(ls.levels[l].inner_strides.begin(),
                  ls.levels[l].inner_strides.end(), t.inner_strides);
      }
      break;
    case layout_tag::kMorton:
      std::copy(ls.morton_bits.begin(), ls.morton_bits.end(),
                d.layout.morton_bits);
      break;
    case layout_tag::kHilbert:
      d.layout.hilbert_order = ls.hilbert_order;
      d.layout.hilbert_rank = d.rank;
      break;
    default:
      break;
  }
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
  const uint32_t bits = d.ElementBits();
  const bool packed_grid =
      ls.tag == layout_tag::kRowMajor || ls.tag == layout_tag::kColumnMajor;
  uint64_t bytes = 0;
  StorageBytes(spec.storage_type, stored, &bytes);
  // An empty tensor must have an empty data buffer (DESC-SHP-05).
  d.byte_offset = bytes == 0 ? 0 : spec.byte_offset;
  if (!packed_grid && bytes != 0) {
    // The stored grid's addresses, with a buffer large enough for any.
    d.buffers[0].byte_size = uint64_t{1} << 50;
    d.byte_offset = uint64_t{1} << 40;  // room for negative strides
    const Plan plan = Must(MakePlan(d));
    const ElementAddresser a =
        Must(ElementAddresser::Create(StoredGridDescriptor(d, plan)));
    int64_t max = a.max_offset();
    if (ls.tag == layout_tag::kMorton) {  // BUF-SZ-04: 2^Σbits elements
      uint32_t sum = 0;
      for (uint32_t b : ls.morton_bits) sum += b;
      max = std::max<int64_t>(max, (int64_t{1} << sum) - 1);
    }
    const uint64_t before =
        a.min_offset() < 0 ? static_cast<uint64_t>(-a.min_offset()) * bits : 0;
    d.byte_offset = spec.byte_offset + (before + 7) / 8;
    // Generous: the validator sizes 6-bit ranges in whole 3-byte groups.
    uint64_t range = 0;
    StorageBytes(
        spec.storage_type,
        static_cast<uint64_t>(max - std::min<int64_t>(a.min_offset(), 0)) + 1,
        &range);
    bytes = (static_cast<uint64_t>(max + 1) * bits + 7) / 8 + range;
  }
  data.resize(d.byte_offset + bytes);
  for (uint8_t& b : data) b = static_cast<uint8_t>(rng());
  uint8_t* base = data.data() + d.byte_offset;
  if (bits < 8 && packed_grid) {
    const uint64_t per_group = bits == 6 ? 4 : 8 / bits;
    const uint64_t end = (stored + per_group - 1) / per_group * per_group;
    for (uint64_t e = stored; e < end; ++e) SetBits(base, e, bits, 0);
  }
  d.buffers[0].byte_size = data.size();
  if (padded && sp != s && spec.zero_padding && stored != 0) {
    const Plan plan = Must(MakePlan(d));
    const ElementAddresser a =
        Must(ElementAddresser::Create(StoredGridDescriptor(d, plan)));
    const std::vector<uint64_t> grid = StoredShape(spec);
    std::vector<uint64_t> idx(grid.size(), 0);
    for (uint64_t e = 0; e < stored; ++e) {
      if (idx[spec.axis] >= s)
        SetBitsAt(data.data(), a.BitOffset(idx), bits, 0);
      for (size_t j = grid.size(); j-- > 0;) {
        if (++idx[j] < grid[j]) break;
        idx[j] = 0;
      }
    }
  }
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
  SetBitsAt(t->buffers[0].data(), d.byte_offset * 8 + index * d.ElementBits(),
            d.ElementBits(), code);
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
