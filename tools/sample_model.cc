#include "tools/sample_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include "dequant/minifloat.h"
#include "parser/element_type.h"
#include "parser/quantization.h"
#include "stream/container/hrry_writer.h"

namespace hurray::tools {
namespace {

using type_tag::kFloat16;
using type_tag::kFloat32;
using type_tag::kFloat4E2M1;
using type_tag::kFloat8E4M3;
using type_tag::kInt8;
using type_tag::kUInt4;
using type_tag::kUInt8;

// Deterministic weights: a splitmix64 stream mapped to a rough bell shape.
class Weights {
 public:
  float Next() {
    float sum = 0;
    for (int i = 0; i < 4; ++i) sum += Uniform();
    return (sum - 2.0f) * 0.05f;
  }

 private:
  float Uniform() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return static_cast<float>(z >> 40) / static_cast<float>(1 << 24);
  }
  uint64_t state_ = 0x48525259;  // "HRRY"
};

void PutLe16(std::vector<uint8_t>* out, uint16_t v) {
  out->push_back(static_cast<uint8_t>(v));
  out->push_back(static_cast<uint8_t>(v >> 8));
}
void PutLe32(std::vector<uint8_t>* out, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    out->push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void PutF32(std::vector<uint8_t>* out, float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  PutLe32(out, bits);
}

// float32 → float16 bits, round to nearest even; normal results only (the
// sample's scales are far from the float16 limits).
uint16_t ToF16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const int exp = static_cast<int>((bits >> 23) & 0xFF) - 127 + 15;
  uint32_t mant = bits & 0x7FFFFFu;
  uint32_t half = (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  const uint32_t rest = mant & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1))) ++half;
  return static_cast<uint16_t>(sign | half);
}
float FromF16(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1F;
  const uint32_t mant = h & 0x3FFu;
  const uint32_t bits = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// The code of `decode` nearest to x among `count` codes (ties: lower code).
uint8_t Nearest(float x, int count, float (*decode)(uint8_t)) {
  uint8_t best = 0;
  float best_err = std::numeric_limits<float>::infinity();
  for (int c = 0; c < count; ++c) {
    const float v = decode(static_cast<uint8_t>(c));
    if (!std::isfinite(v)) continue;
    const float err = std::fabs(v - x);
    if (err < best_err) best = static_cast<uint8_t>(c), best_err = err;
  }
  return best;
}

// Packs 4-bit codes two per byte, element 0 in the low nibble
// (element-types.md § Sub-byte Packing).
std::vector<uint8_t> Pack4(const std::vector<uint8_t>& codes) {
  std::vector<uint8_t> out((codes.size() + 1) / 2, 0);
  for (size_t i = 0; i < codes.size(); ++i)
    out[i / 2] |= static_cast<uint8_t>((codes[i] & 0xF) << (4 * (i & 1)));
  return out;
}

struct Builder {
  SampleTensor t;

  Builder(std::string name, uint8_t type, std::vector<uint64_t> shape,
          Weights* w) {
    t.name = std::move(name);
    t.descriptor = std::make_unique<TensorDescriptor>();
    TensorDescriptor& d = *t.descriptor;
    d.type_tag = type;
    d.layout_tag = layout_tag::kRowMajor;
    d.rank = static_cast<uint32_t>(shape.size());
    uint64_t n = 1;
    for (uint32_t k = 0; k < d.rank; ++k) d.shape[k] = shape[k], n *= shape[k];
    t.original.resize(n);
    for (float& x : t.original) x = w->Next();
  }
  uint32_t AddBuffer(std::vector<uint8_t> bytes) {
    TensorDescriptor& d = *t.descriptor;
    BufferHandle h;
    h.byte_size = bytes.size();
    d.buffers[d.buffer_count] = h;
    t.buffers.push_back(std::move(bytes));
    return d.buffer_count++;
  }
  void Quantized(const QuantizationDescriptor& q) {
    t.descriptor->flags |= flag::kHasQuantization;
    t.descriptor->quantization = q;
  }
};

// Blocks of `k` consecutive elements along the last axis: the sample's
// block schemes all quantize along the last (contiguous) axis, so block b
// holds elements [b*k, (b+1)*k) and parameters are in the same order.
float MaxAbs(const float* x, size_t n) {
  float m = 0;
  for (size_t i = 0; i < n; ++i) m = std::max(m, std::fabs(x[i]));
  return m;
}

absl::StatusOr<SampleTensor> PerTensorUint8(Weights* w) {
  Builder b("layers.0.attn.q_proj.weight", kUInt8, {32, 32}, w);
  const auto [lo, hi] =
      std::minmax_element(b.t.original.begin(), b.t.original.end());
  const float scale = (*hi - *lo) / 255.0f;
  const int32_t zp = static_cast<int32_t>(std::lround(-*lo / scale));
  std::vector<uint8_t> data;
  for (float x : b.t.original) {
    const long q = std::lround(x / scale) + zp;
    data.push_back(static_cast<uint8_t>(std::clamp<long>(q, 0, 255)));
  }
  b.AddBuffer(std::move(data));
  absl::StatusOr<PerTensorAffine> q = PerTensorAffine::Create(scale, zp);
  if (!q.ok()) return q.status();
  b.Quantized(*q);
  b.t.tolerance = scale;
  return std::move(b.t);
}

absl::StatusOr<SampleTensor> PerChannelInt8(Weights* w) {
  Builder b("layers.0.attn.k_proj.weight", kInt8, {32, 32}, w);
  std::vector<uint8_t> data, scales;
  float worst = 0;
  for (size_t row = 0; row < 32; ++row) {
    const float* x = &b.t.original[row * 32];
    const float scale = std::max(MaxAbs(x, 32), 1e-6f) / 127.0f;
    worst = std::max(worst, scale);
    PutF32(&scales, scale);
    for (size_t i = 0; i < 32; ++i) {
      const long q = std::clamp<long>(std::lround(x[i] / scale), -127, 127);
      data.push_back(static_cast<uint8_t>(static_cast<int8_t>(q)));
    }
  }
  b.AddBuffer(std::move(data));
  const uint32_t s = b.AddBuffer(std::move(scales));
  absl::StatusOr<PerChannelAffine> q = PerChannelAffine::Symmetric(0, s);
  if (!q.ok()) return q.status();
  b.Quantized(*q);
  b.t.tolerance = worst;
  return std::move(b.t);
}

absl::StatusOr<SampleTensor> PerBlockUint4(Weights* w) {
  constexpr size_t kBlock = 16;
  Builder b("layers.0.mlp.up_proj.weight", kUInt4, {64, 32}, w);
  std::vector<uint8_t> codes, scales, zero_points;
  float worst = 0;
  for (size_t at = 0; at < b.t.original.size(); at += kBlock) {
    const float* x = &b.t.original[at];
    const auto [lo, hi] = std::minmax_element(x, x + kBlock);
    const uint16_t h = ToF16(std::max((*hi - *lo) / 15.0f, 1e-4f));
    const float scale = FromF16(h);
    const int32_t zp = std::clamp<int32_t>(
        static_cast<int32_t>(std::lround(-*lo / scale)), 0, 15);
    worst = std::max(worst, scale);
    PutLe16(&scales, h);
    PutLe32(&zero_points, static_cast<uint32_t>(zp));
    for (size_t i = 0; i < kBlock; ++i) {
      const long q = std::clamp<long>(std::lround(x[i] / scale) + zp, 0, 15);
      codes.push_back(static_cast<uint8_t>(q));
    }
  }
  b.AddBuffer(Pack4(codes));
  const uint32_t s = b.AddBuffer(std::move(scales));
  const uint32_t z = b.AddBuffer(std::move(zero_points));
  absl::StatusOr<PerBlockAffine> q =
      PerBlockAffine::Asymmetric(1, kBlock, s, z, kFloat16);
  if (!q.ok()) return q.status();
  b.Quantized(*q);
  b.t.tolerance = worst;
  return std::move(b.t);
}

float Nf4Code(uint8_t c) { return kNf4Lut[c & 0xF]; }

absl::StatusOr<SampleTensor> Nf4Tensor(Weights* w) {
  constexpr size_t kBlock = 64;
  Builder b("layers.0.mlp.down_proj.weight", kUInt4, {32, 64}, w);
  std::vector<uint8_t> codes, scales;
  float worst = 0;
  for (size_t at = 0; at < b.t.original.size(); at += kBlock) {
    const float* x = &b.t.original[at];
    const float absmax = std::max(MaxAbs(x, kBlock), 1e-6f);
    worst = std::max(worst, absmax);
    PutF32(&scales, absmax);
    for (size_t i = 0; i < kBlock; ++i)
      codes.push_back(Nearest(x[i] / absmax, 16, Nf4Code));
  }
  b.AddBuffer(Pack4(codes));
  const uint32_t s = b.AddBuffer(std::move(scales));
  absl::StatusOr<Nf4> q = Nf4::Create(1, kBlock, s);
  if (!q.ok()) return q.status();
  b.Quantized(*q);
  // The widest gap between neighbouring NF4 levels is about 0.28.
  b.t.tolerance = worst * 0.15f;
  return std::move(b.t);
}

// MXFP (OCP Microscaling): a shared power-of-two scale per block of 32,
// 2^(floor(log2(absmax)) - emax) with emax the element type's largest
// exponent, then each element rounded to the nearest code.
absl::StatusOr<SampleTensor> MxfpTensor(std::string name, uint8_t type,
                                        int emax, int codes_count,
                                        float (*decode)(uint8_t),
                                        float relative_step, Weights* w) {
  constexpr size_t kBlock = 32;
  Builder b(std::move(name), type, {64, 32}, w);
  std::vector<uint8_t> codes, scales;
  float worst = 0;
  for (size_t at = 0; at < b.t.original.size(); at += kBlock) {
    const float* x = &b.t.original[at];
    const float absmax = std::max(MaxAbs(x, kBlock), 1e-30f);
    const int e = static_cast<int>(std::floor(std::log2(absmax))) - emax;
    const float scale = std::ldexp(1.0f, e);
    scales.push_back(static_cast<uint8_t>(e + 127));
    worst = std::max(worst, absmax);
    for (size_t i = 0; i < kBlock; ++i)
      codes.push_back(Nearest(x[i] / scale, codes_count, decode));
  }
  b.AddBuffer(codes_count == 16 ? Pack4(codes) : codes);
  const uint32_t s = b.AddBuffer(std::move(scales));
  absl::StatusOr<Mxfp> q = Mxfp::Create(1, kBlock, s);
  if (!q.ok()) return q.status();
  b.Quantized(*q);
  b.t.tolerance = worst * relative_step;
  return std::move(b.t);
}

SampleTensor Float32Tensor(Weights* w) {
  Builder b("norm.weight", kFloat32, {32}, w);
  std::vector<uint8_t> data;
  for (float x : b.t.original) PutF32(&data, x);
  b.AddBuffer(std::move(data));
  return std::move(b.t);
}

}  // namespace

absl::StatusOr<std::vector<SampleTensor>> BuildSampleTensors() {
  Weights w;
  std::vector<SampleTensor> out;
  for (auto make : {PerTensorUint8, PerChannelInt8, PerBlockUint4, Nf4Tensor}) {
    absl::StatusOr<SampleTensor> t = make(&w);
    if (!t.ok()) return t.status();
    out.push_back(*std::move(t));
  }
  // Bounds relative to the block's absmax: values above the element type's
  // largest code (448 of [256, 512) for e4m3, 6 of [4, 8) for e2m1) are
  // clamped to it.
  absl::StatusOr<SampleTensor> fp8 =
      MxfpTensor("lm_head.weight", kFloat8E4M3, 8, 256,
                 dequant::Float8E4M3ToF32, 0.25f, &w);
  if (!fp8.ok()) return fp8.status();
  out.push_back(*std::move(fp8));
  absl::StatusOr<SampleTensor> fp4 =
      MxfpTensor("layers.0.attn.o_proj.weight", kFloat4E2M1, 2, 16,
                 dequant::Float4E2M1ToF32, 0.5f, &w);
  if (!fp4.ok()) return fp4.status();
  out.push_back(*std::move(fp4));
  out.push_back(Float32Tensor(&w));
  return out;
}

absl::Status WriteSampleModel(stream::container::ByteSink sink) {
  absl::StatusOr<std::vector<SampleTensor>> tensors = BuildSampleTensors();
  if (!tensors.ok()) return tensors.status();
  stream::container::HrryWriterOptions options;
  options.with_kv = true;
  options.sorted_index = true;
  options.tensor_count_hint = tensors->size();
  stream::container::HrryWriter writer(options);
  if (absl::Status s = writer.Begin(sink); !s.ok()) return s;
  for (const SampleTensor& t : *tensors) {
    std::vector<absl::Span<const uint8_t>> views(t.buffers.begin(),
                                                 t.buffers.end());
    if (absl::Status s = writer.Add(t.name, *t.descriptor, views, sink);
        !s.ok())
      return s;
  }
  if (absl::Status s = writer.kv().AddString("model.name", "hurray-sample");
      !s.ok())
    return s;
  if (absl::Status s = writer.kv().AddString(
          "model.note", "five quantization schemes, deterministic weights");
      !s.ok())
    return s;
  return writer.Finish(sink);
}

}  // namespace hurray::tools
