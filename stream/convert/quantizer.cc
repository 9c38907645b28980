#include "stream/convert/quantizer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "parser/element_type.h"
#include "parser/quantization.h"

namespace hurray::stream::convert {
namespace {

bool IsPow2(uint64_t x) { return x != 0 && (x & (x - 1)) == 0; }

bool BlockScheme(uint8_t s) {
  return s == scheme_tag::kPerBlockAffine || s == scheme_tag::kNf4 ||
         s == scheme_tag::kMxfp;
}

void PutF32(float f, std::vector<uint8_t>* out) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  for (int i = 0; i < 4; ++i)
    out->push_back(static_cast<uint8_t>(b >> (8 * i)));
}
void PutI32(int32_t v, std::vector<uint8_t>* out) {
  const uint32_t b = static_cast<uint32_t>(v);
  for (int i = 0; i < 4; ++i)
    out->push_back(static_cast<uint8_t>(b >> (8 * i)));
}

}  // namespace

absl::StatusOr<QuantizeSpec> ParseQuantizeSpec(absl::string_view text) {
  QuantizeSpec q;
  q.text = std::string(text);
  std::vector<std::string> parts = absl::StrSplit(text, ':');
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("quantization scheme '", text, "': ", why));
  };
  const std::string& name = parts[0];
  size_t next = 1;
  auto storage =
      [&](std::initializer_list<std::pair<const char*, uint8_t>> allowed)
      -> bool {
    if (next >= parts.size()) return false;
    for (const auto& [n, tag] : allowed) {
      if (parts[next] == n) {
        q.storage = tag;
        ++next;
        return true;
      }
    }
    return false;
  };
  if (name == "per_tensor" || name == "per_channel") {
    q.scheme = name == "per_tensor" ? scheme_tag::kPerTensorAffine
                                    : scheme_tag::kPerChannelAffine;
    if (!storage({{"int8", type_tag::kInt8}, {"uint8", type_tag::kUInt8}}))
      return bad("wants :int8 or :uint8");
  } else if (name == "per_block") {
    q.scheme = scheme_tag::kPerBlockAffine;
    q.block = 32;
    if (!storage({{"int8", type_tag::kInt8},
                  {"uint8", type_tag::kUInt8},
                  {"int4", type_tag::kInt4},
                  {"uint4", type_tag::kUInt4}}))
      return bad("wants :int8, :uint8, :int4 or :uint4");
  } else if (name == "nf4") {
    q.scheme = scheme_tag::kNf4;
    q.storage = type_tag::kUInt4;
    q.block = 64;
  } else if (name == "mxfp") {
    q.scheme = scheme_tag::kMxfp;
    q.block = 32;
    if (!storage({{"e2m1", type_tag::kFloat4E2M1},
                  {"e4m3", type_tag::kFloat8E4M3},
                  {"e5m2", type_tag::kFloat8E5M2}}))
      return bad("wants :e2m1, :e4m3 or :e5m2");
  } else {
    return bad(
        "unknown scheme (per_tensor, per_channel, per_block, nf4, mxfp)");
  }
  if (next < parts.size()) {
    if (!BlockScheme(q.scheme) || !absl::SimpleAtoi(parts[next], &q.block))
      return bad(absl::StrCat("unexpected '", parts[next], "'"));
    ++next;
  }
  if (next < parts.size())
    return bad(absl::StrCat("unexpected '", parts[next], "'"));
  if (q.scheme == scheme_tag::kPerBlockAffine &&
      (!IsPow2(q.block) || q.block < 2))
    return bad("the block is a power of two >= 2");
  if (q.scheme == scheme_tag::kNf4 && (!IsPow2(q.block) || q.block < 8))
    return bad("the block is a power of two >= 8");
  if (q.scheme == scheme_tag::kMxfp &&
      (!IsPow2(q.block) || q.block < 16 || q.block > 2048))
    return bad("the block is a power of two in 16..2048");
  return q;
}

bool Applicable(const QuantizeSpec& spec, absl::Span<const uint64_t> shape,
                std::string* why) {
  if (shape.empty()) {
    *why = "a scalar";
    return false;
  }
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  if (n == 0) {
    *why = "no elements";
    return false;
  }
  const uint64_t s = shape.back();
  if (spec.scheme == scheme_tag::kPerChannelAffine && shape.size() < 2) {
    *why = "1-D (per_channel needs a row axis)";
    return false;
  }
  if ((spec.scheme == scheme_tag::kPerBlockAffine ||
       spec.scheme == scheme_tag::kNf4) &&
      s < spec.block) {
    *why = absl::StrCat("last axis ", s, " shorter than the block");
    return false;
  }
  if (spec.scheme == scheme_tag::kMxfp && s % spec.block != 0) {
    *why = absl::StrCat("last axis ", s, " not a multiple of the block");
    return false;
  }
  return true;
}

Quantizer::Quantizer(const QuantizeSpec& spec, std::vector<uint64_t> shape,
                     FloatRows* source, size_t chunk_bytes)
    : spec_(spec),
      shape_(std::move(shape)),
      source_(source),
      chunk_bytes_(std::max<size_t>(chunk_bytes, 4096)) {
  row_len_ = shape_.back();
  elements_ = 1;
  for (uint64_t d : shape_) elements_ *= d;
  rows_ = elements_ / row_len_;
  if (spec_.scheme == scheme_tag::kMxfp) {
    mini_.Init(spec_.storage);
  } else if (spec_.scheme != scheme_tag::kNf4) {
    IntegerStorageRange(spec_.storage, &qmin_, &qmax_);
    symmetric_ = qmin_ < 0;
    if (symmetric_) qmin_ = -qmax_;
  }
}

double Quantizer::rms_error() const {
  return measured_ == 0 ? 0 : std::sqrt(sum_sq_ / measured_);
}

absl::Status Quantizer::ForEachPiece(
    absl::FunctionRef<absl::Status(uint64_t row, const float* v, size_t n)> f) {
  const uint64_t chunk = chunk_bytes_ / 4;  // floats
  auto read = [&](uint64_t first, uint64_t n) -> absl::Status {
    buf_.resize(static_cast<size_t>(n));
    absl::Status s = source_->Read(first, n, buf_.data());
    if (!s.ok()) return s;
    for (size_t i = 0; i < buf_.size(); ++i) {
      if (!std::isfinite(buf_[i]))
        return absl::InvalidArgumentError(absl::StrCat(
            "element ", first + i,
            " is NaN or infinite: not quantized (--skip the tensor)"));
    }
    return s;
  };
  if (row_len_ <= chunk) {
    const uint64_t per = std::max<uint64_t>(1, chunk / row_len_);
    for (uint64_t r = 0; r < rows_;) {
      const uint64_t n = std::min(per, rows_ - r);
      absl::Status s = read(r * row_len_, n * row_len_);
      for (uint64_t k = 0; s.ok() && k < n; ++k)
        s = f(r + k, buf_.data() + k * row_len_, static_cast<size_t>(row_len_));
      if (!s.ok()) return s;
      r += n;
    }
    return absl::OkStatus();
  }
  // Long rows: pieces of whole blocks (and of whole ggml blocks of 32).
  const uint64_t unit = std::max<uint64_t>(32, spec_.block);
  const uint64_t piece = std::max(unit, chunk / unit * unit);
  for (uint64_t r = 0; r < rows_; ++r) {
    for (uint64_t col = 0; col < row_len_; col += piece) {
      const uint64_t n = std::min(piece, row_len_ - col);
      absl::Status s = read(r * row_len_ + col, n);
      if (s.ok()) s = f(r, buf_.data(), static_cast<size_t>(n));
      if (!s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

void Quantizer::Range(const float* v, size_t n, float* lo, float* hi) const {
  *lo = *hi = 0;
  if (n == 0) return;
  const auto [a, b] = std::minmax_element(v, v + n);
  *lo = *a;
  *hi = *b;
}

absl::Status Quantizer::Prepare() {
  if (spec_.scheme == scheme_tag::kPerTensorAffine) {
    float lo = 0, hi = 0;
    absl::Status s = ForEachPiece([&](uint64_t, const float* v, size_t n) {
      float a, b;
      Range(v, n, &a, &b);
      lo = std::min(lo, a), hi = std::max(hi, b);
      return absl::OkStatus();
    });
    if (!s.ok()) return s;
    params_ = {dequant::ChooseAffine(lo, hi, qmin_, qmax_, symmetric_)};
  } else if (spec_.scheme == scheme_tag::kPerChannelAffine) {
    const uint64_t channels = shape_[0];
    const uint64_t rows_per = rows_ / channels;
    std::vector<float> lo(channels, 0), hi(channels, 0);
    absl::Status s = ForEachPiece([&](uint64_t row, const float* v, size_t n) {
      float a, b;
      Range(v, n, &a, &b);
      const uint64_t c = row / rows_per;
      lo[c] = std::min(lo[c], a), hi[c] = std::max(hi[c], b);
      return absl::OkStatus();
    });
    if (!s.ok()) return s;
    params_.resize(channels);
    for (uint64_t c = 0; c < channels; ++c)
      params_[c] =
          dequant::ChooseAffine(lo[c], hi[c], qmin_, qmax_, symmetric_);
  }
  return absl::OkStatus();
}

absl::Status Quantizer::Describe(TensorDescriptor* d) const {
  ResetDescriptor(d);
  d->type_tag = spec_.storage;
  d->layout_tag = layout_tag::kRowMajor;
  d->rank = static_cast<uint32_t>(shape_.size());
  for (uint32_t k = 0; k < d->rank; ++k) d->shape[k] = shape_[k];
  const uint32_t axis = d->rank - 1;
  uint64_t stored = elements_;
  uint64_t groups = 0;
  if (BlockScheme(spec_.scheme)) {
    const uint64_t nb = (row_len_ + spec_.block - 1) / spec_.block;
    stored = rows_ * nb * spec_.block;
    groups = rows_ * nb;
  }
  uint64_t bytes = 0;
  if (!StorageBytes(spec_.storage, stored, &bytes))
    return absl::OutOfRangeError("the storage size overflows");
  d->buffer_count = 1;
  d->buffers[0] = BufferHandle();
  d->buffers[0].byte_size = bytes;
  d->flags |= flag::kHasQuantization;
  auto add = [d](uint64_t size) {
    d->buffers[d->buffer_count] = BufferHandle();
    d->buffers[d->buffer_count].byte_size = size;
    return d->buffer_count++;
  };
  switch (spec_.scheme) {
    case scheme_tag::kPerTensorAffine: {
      const dequant::AffineParams p =
          params_.empty() ? dequant::AffineParams() : params_[0];
      absl::StatusOr<PerTensorAffine> q =
          PerTensorAffine::Create(p.scale, p.zero_point);
      if (!q.ok()) return q.status();
      d->quantization = *q;
      return absl::OkStatus();
    }
    case scheme_tag::kPerChannelAffine: {
      const uint32_t s = add(shape_[0] * 4);
      absl::StatusOr<PerChannelAffine> q =
          symmetric_ ? PerChannelAffine::Symmetric(0, s)
                     : PerChannelAffine::Asymmetric(0, s, add(shape_[0] * 4));
      if (!q.ok()) return q.status();
      d->quantization = *q;
      return absl::OkStatus();
    }
    case scheme_tag::kPerBlockAffine: {
      const uint32_t s = add(groups * 4);
      absl::StatusOr<PerBlockAffine> q =
          symmetric_
              ? PerBlockAffine::Symmetric(axis, spec_.block, s,
                                          type_tag::kFloat32)
              : PerBlockAffine::Asymmetric(axis, spec_.block, s,
                                           add(groups * 4), type_tag::kFloat32);
      if (!q.ok()) return q.status();
      d->quantization = *q;
      return absl::OkStatus();
    }
    case scheme_tag::kNf4: {
      absl::StatusOr<Nf4> q = Nf4::Create(axis, spec_.block, add(groups * 4));
      if (!q.ok()) return q.status();
      d->quantization = *q;
      return absl::OkStatus();
    }
    default: {
      absl::StatusOr<Mxfp> q = Mxfp::Create(axis, spec_.block, add(groups));
      if (!q.ok()) return q.status();
      d->quantization = *q;
      return absl::OkStatus();
    }
  }
}

void Quantizer::QuantizeGroup(const float* v, size_t n, size_t stored,
                              const dequant::AffineParams* fixed, bool measure,
                              float* scale_out, int32_t* zp_out,
                              uint8_t* e_out) {
  const size_t first = codes_.size();
  codes_.resize(first + stored, 0);
  int64_t* q = codes_.data() + first;
  auto measure_one = [&](float x, float back) {
    const double e = std::fabs(static_cast<double>(x) - back);
    max_err_ = std::max(max_err_, e);
    sum_sq_ += e * e;
    ++measured_;
  };
  if (spec_.scheme == scheme_tag::kNf4) {
    float absmax = 0;
    for (size_t i = 0; i < n; ++i) absmax = std::max(absmax, std::fabs(v[i]));
    *scale_out = absmax;
    for (size_t i = 0; i < n; ++i) {
      q[i] = absmax == 0 ? 7 : dequant::QuantizeNf4(v[i] / absmax);
      if (measure) measure_one(v[i], kNf4Lut[q[i]] * absmax);
    }
    return;
  }
  if (spec_.scheme == scheme_tag::kMxfp) {
    float absmax = 0;
    for (size_t i = 0; i < n; ++i) absmax = std::max(absmax, std::fabs(v[i]));
    *e_out = dequant::MxfpScaleByte(absmax, mini_.emax());
    const float scale = dequant::MxfpScale(*e_out);
    for (size_t i = 0; i < n; ++i) {
      q[i] = mini_.Quantize(v[i] / scale);
      if (measure)
        measure_one(v[i], mini_.Value(static_cast<uint8_t>(q[i])) * scale);
    }
    return;
  }
  dequant::AffineParams p;
  if (fixed != nullptr) {
    p = *fixed;
  } else {
    float lo, hi;
    Range(v, n, &lo, &hi);
    p = dequant::ChooseAffine(lo, hi, qmin_, qmax_, symmetric_);
  }
  *scale_out = p.scale;
  *zp_out = p.zero_point;
  for (size_t i = 0; i < n; ++i) {
    q[i] = dequant::QuantizeAffine(v[i], p, qmin_, qmax_);
    if (measure) measure_one(v[i], dequant::DequantizeAffine(q[i], p));
  }
}

void Quantizer::EmitCodes(std::vector<uint8_t>* out) const {
  const uint32_t bits = FindElementType(spec_.storage)->bits;
  if (bits == 8) {
    for (int64_t q : codes_) out->push_back(static_cast<uint8_t>(q));
    return;
  }
  // 4-bit, LSB first (element-types.md § 4-bit packing); rows are even.
  for (size_t i = 0; i < codes_.size(); i += 2) {
    const uint8_t lo = static_cast<uint8_t>(codes_[i]) & 0xF;
    const uint8_t hi =
        i + 1 < codes_.size() ? static_cast<uint8_t>(codes_[i + 1]) & 0xF : 0;
    out->push_back(static_cast<uint8_t>(lo | (hi << 4)));
  }
}

absl::Status Quantizer::WriteBuffer(uint32_t index,
                                    stream::container::ByteSink out) {
  std::vector<uint8_t> bytes;
  // Parameters held from Prepare(): no source pass.
  if (index > 0 && !BlockScheme(spec_.scheme)) {
    for (const dequant::AffineParams& p : params_) {
      if (index == 1)
        PutF32(p.scale, &bytes);
      else
        PutI32(p.zero_point, &bytes);
    }
    return out(bytes);
  }
  const bool block = BlockScheme(spec_.scheme);
  const uint64_t rows_per =
      spec_.scheme == scheme_tag::kPerChannelAffine ? rows_ / shape_[0] : 0;
  return ForEachPiece([&](uint64_t row, const float* v, size_t count) {
    bytes.clear();
    codes_.clear();
    // Groups: the piece's blocks, or the whole piece (one set of
    // parameters for the tensor or the row's channel).
    const uint64_t k = block ? spec_.block : count;
    for (uint64_t at = 0; at < count; at += k) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(k, count - at));
      const dequant::AffineParams* fixed = nullptr;
      if (spec_.scheme == scheme_tag::kPerTensorAffine) fixed = &params_[0];
      if (spec_.scheme == scheme_tag::kPerChannelAffine) {
        fixed = &params_[row / rows_per];
      }
      float scale = 0;
      int32_t zp = 0;
      uint8_t e = 0;
      QuantizeGroup(v + at, n, block ? k : n, fixed, index == 0, &scale, &zp,
                    &e);
      if (index == 1) {
        if (spec_.scheme == scheme_tag::kMxfp)
          bytes.push_back(e);
        else
          PutF32(scale, &bytes);
      } else if (index == 2) {
        PutI32(zp, &bytes);
      }
    }
    if (index == 0) EmitCodes(&bytes);
    return out(bytes);
  });
}

}  // namespace hurray::stream::convert
