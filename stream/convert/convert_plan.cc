#include "stream/convert/convert_plan.h"

#include <fnmatch.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "parser/decoder.h"
#include "parser/element_type.h"
#include "parser/quantization.h"
#include "stream/container/utf8.h"

namespace hurray::stream::convert::internal {

absl::Status ForTensor(absl::string_view name, const absl::Status& s) {
  return absl::Status(s.code(),
                      absl::StrCat("tensor '", name, "': ", s.message()));
}

bool Quantized(Kind k) {
  return k == Kind::kQ8_0 || k == Kind::kQ4_0 || k == Kind::kMxfp4 ||
         k == Kind::kQ6_K || k == Kind::kQ3_K;
}

bool IsKMin(Kind k) {
  return k == Kind::kQ4_K || k == Kind::kQ5_K || k == Kind::kQ2_K;
}
KMinType KMinOf(Kind k) {
  return k == Kind::kQ4_K   ? KMinType::kQ4_K
         : k == Kind::kQ5_K ? KMinType::kQ5_K
                            : KMinType::kQ2_K;
}

GgmlBlockType BlockType(Kind k) {
  switch (k) {
    case Kind::kQ8_0:
      return GgmlBlockType::kQ8_0;
    case Kind::kQ4_0:
      return GgmlBlockType::kQ4_0;
    case Kind::kQ6_K:
      return GgmlBlockType::kQ6_K;
    case Kind::kQ3_K:
      return GgmlBlockType::kQ3_K;
    default:
      return GgmlBlockType::kMxfp4;
  }
}

absl::Status Describe(const Plan& p, TensorDescriptor* d) {
  ResetDescriptor(d);
  d->type_tag = p.type_tag;
  d->layout_tag = layout_tag::kRowMajor;
  d->rank = static_cast<uint32_t>(p.shape.size());
  for (uint32_t k = 0; k < d->rank; ++k) d->shape[k] = p.shape[k];
  uint64_t bytes = 0;
  if (!StorageBytes(p.type_tag, p.elements, &bytes))
    return absl::OutOfRangeError("the storage size overflows");
  d->buffer_count = 1;
  d->buffers[0] = BufferHandle();
  d->buffers[0].byte_size = bytes;
  if (IsKMin(p.kind)) {
    // uint8 codes, float32 scales, int32 zero points: a block per ggml
    // sub-block along the last axis.
    const uint32_t sub = KMinSubBlock(KMinOf(p.kind));
    d->buffer_count = 3;
    for (uint32_t i = 1; i < 3; ++i) {
      d->buffers[i] = BufferHandle();
      d->buffers[i].byte_size = p.elements / sub * 4;
    }
    d->flags |= flag::kHasQuantization;
    absl::StatusOr<PerBlockAffine> q =
        PerBlockAffine::Asymmetric(d->rank - 1, sub, 1, 2, type_tag::kFloat32);
    if (!q.ok()) return q.status();
    d->quantization = *q;
    return absl::OkStatus();
  }
  if (!Quantized(p.kind)) return absl::OkStatus();
  const GgmlBlockType type = BlockType(p.kind);
  const uint64_t blocks = p.elements / SourceBlockElements(type);
  d->buffer_count = 2;
  d->buffers[1] = BufferHandle();
  d->buffers[1].byte_size = blocks * ScaleBytes(type);
  d->flags |= flag::kHasQuantization;
  const uint32_t axis = d->rank - 1;  // ggml blocks run along ne[0]
  if (p.kind == Kind::kMxfp4) {
    absl::StatusOr<Mxfp> q = Mxfp::Create(axis, kGgmlBlock, 1);
    if (!q.ok()) return q.status();
    d->quantization = *q;
  } else {
    // K-quants: a Hurray block per sub-block of 16, float32 scales.
    const bool k = p.kind == Kind::kQ6_K || p.kind == Kind::kQ3_K;
    absl::StatusOr<PerBlockAffine> q =
        PerBlockAffine::Symmetric(axis, HurrayBlockElements(type), 1,
                                  k ? type_tag::kFloat32 : type_tag::kFloat16);
    if (!q.ok()) return q.status();
    d->quantization = *q;
  }
  return absl::OkStatus();
}

// The tensors' names and shapes move into the plans.
absl::StatusOr<std::vector<Plan>> PlanSafetensors(SafetensorsFile& f) {
  std::vector<Plan> plans;
  plans.reserve(f.tensors.size());
  for (SafetensorsTensor& t : f.tensors) {
    Plan p;
    p.name = std::move(t.name);
    p.type_tag = t.type_tag;
    p.kind = t.type_tag == type_tag::kBool         ? Kind::kBool
             : t.type_tag == type_tag::kFloat8E8M0 ? Kind::kE8M0
                                                   : Kind::kCopy;
    p.source_type = t.dtype;
    p.shape = std::move(t.shape);
    p.elements = t.elements;
    p.begin = t.begin;
    p.source_bytes = t.end - t.begin;
    p.floats = t.type_tag == type_tag::kFloat32    ? Floats::kF32
               : t.type_tag == type_tag::kFloat16  ? Floats::kF16
               : t.type_tag == type_tag::kBFloat16 ? Floats::kBF16
               : t.type_tag == type_tag::kFloat64  ? Floats::kF64
                                                   : Floats::kNone;
    plans.push_back(std::move(p));
  }
  return plans;
}

absl::StatusOr<std::vector<Plan>> PlanGguf(GgufFile& f) {
  std::vector<Plan> plans;
  plans.reserve(f.tensors.size());
  for (GgufTensor& t : f.tensors) {
    Plan p;
    p.name = std::move(t.name);
    p.source_type = FindGgmlType(t.type)->name;
    p.shape.assign(t.ne.rbegin(), t.ne.rend());
    p.elements = t.elements;
    p.begin = t.begin;
    p.source_bytes = t.byte_size;
    switch (t.type) {
      case ggml_type::kF32:
        p.type_tag = type_tag::kFloat32;
        p.floats = Floats::kF32;
        break;
      case ggml_type::kF16:
        p.type_tag = type_tag::kFloat16;
        p.floats = Floats::kF16;
        break;
      case ggml_type::kBF16:
        p.type_tag = type_tag::kBFloat16;
        p.floats = Floats::kBF16;
        break;
      case ggml_type::kF64:
        p.type_tag = type_tag::kFloat64;
        p.floats = Floats::kF64;
        break;
      case ggml_type::kI8:
        p.type_tag = type_tag::kInt8;
        break;
      case ggml_type::kI16:
        p.type_tag = type_tag::kInt16;
        break;
      case ggml_type::kI32:
        p.type_tag = type_tag::kInt32;
        break;
      case ggml_type::kI64:
        p.type_tag = type_tag::kInt64;
        break;
      case ggml_type::kQ8_0:
        p.kind = Kind::kQ8_0;
        p.type_tag = type_tag::kInt8;
        break;
      case ggml_type::kQ4_0:
        p.kind = Kind::kQ4_0;
        p.type_tag = type_tag::kInt4;
        break;
      case ggml_type::kMxfp4:
        p.kind = Kind::kMxfp4;
        p.type_tag = type_tag::kFloat4E2M1;
        break;
      case ggml_type::kQ6_K:
        p.kind = Kind::kQ6_K;
        p.type_tag = type_tag::kInt8;
        break;
      case ggml_type::kQ3_K:
        p.kind = Kind::kQ3_K;
        p.type_tag = type_tag::kInt4;
        break;
      case ggml_type::kQ4_K:
      case ggml_type::kQ5_K:
      case ggml_type::kQ2_K:
        p.kind = t.type == ggml_type::kQ4_K   ? Kind::kQ4_K
                 : t.type == ggml_type::kQ5_K ? Kind::kQ5_K
                                              : Kind::kQ2_K;
        p.type_tag = type_tag::kUInt8;
        p.floats = t.type == ggml_type::kQ4_K   ? Floats::kQ4_K
                   : t.type == ggml_type::kQ5_K ? Floats::kQ5_K
                                                : Floats::kQ2_K;
        break;
      case ggml_type::kQ4_1:
      case ggml_type::kQ5_0:
      case ggml_type::kQ5_1:
      case ggml_type::kQ8_1:
        p.needs_requantize = true;
        p.floats = t.type == ggml_type::kQ4_1   ? Floats::kQ4_1
                   : t.type == ggml_type::kQ5_0 ? Floats::kQ5_0
                   : t.type == ggml_type::kQ5_1 ? Floats::kQ5_1
                                                : Floats::kQ8_1;
        break;
      default:
        return absl::UnimplementedError(absl::StrCat(
            "tensor '", p.name, "': ggml type ", p.source_type,
            " has no exact Hurray form and cannot be re-quantized yet "
            "(lossless: F32, F16, BF16, F64, I8-I64, Q8_0, Q4_0, MXFP4, "
            "Q6_K, Q3_K; near-lossless: Q4_K, Q5_K, Q2_K; "
            "--requantize: Q4_1, Q5_0, Q5_1, Q8_1, Q4_K, Q5_K, Q2_K)"));
    }
    plans.push_back(std::move(p));
  }
  return plans;
}

// GGUF metadata → KV (README.md § Metadata): integers widen to int64 or
// uint64, floats to float64, strings stay strings (bytes when not UTF-8),
// arrays become arrays of the same kind.
absl::Status AddGgufKv(const GgufKv& kv, stream::container::KvBuilder* out) {
  const std::string& k = kv.key;
  if (!kv.uints.empty() ||
      (kv.is_array &&
       (kv.type == gguf_type::kUInt8 || kv.type == gguf_type::kUInt16 ||
        kv.type == gguf_type::kUInt32 || kv.type == gguf_type::kUInt64))) {
    return kv.is_array ? out->AddUInt64Array(k, kv.uints)
                       : out->AddUInt64(k, kv.uints[0]);
  }
  switch (kv.type) {
    case gguf_type::kInt8:
    case gguf_type::kInt16:
    case gguf_type::kInt32:
    case gguf_type::kInt64:
      return kv.is_array ? out->AddInt64Array(k, kv.ints)
                         : out->AddInt64(k, kv.ints[0]);
    case gguf_type::kFloat32:
    case gguf_type::kFloat64:
      return kv.is_array ? out->AddFloat64Array(k, kv.floats)
                         : out->AddFloat64(k, kv.floats[0]);
    case gguf_type::kBool: {
      if (!kv.is_array) return out->AddBool(k, kv.bools[0] != 0);
      std::unique_ptr<bool[]> b(new bool[kv.bools.size()]);
      for (size_t i = 0; i < kv.bools.size(); ++i) b[i] = kv.bools[i] != 0;
      return out->AddBoolArray(k,
                               absl::MakeConstSpan(b.get(), kv.bools.size()));
    }
    case gguf_type::kString: {
      bool utf8 = true;
      const size_t n = kv.string_count();
      for (size_t i = 0; i < n; ++i)
        utf8 = utf8 && stream::container::IsValidUtf8(kv.string(i));
      auto bytes = [](absl::string_view s) {
        return absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(s.data()),
                                   s.size());
      };
      if (!kv.is_array)
        return utf8 ? out->AddString(k, kv.string(0))
                    : out->AddBytes(k, bytes(kv.string(0)));
      if (utf8) {
        std::vector<absl::string_view> v(n);
        for (size_t i = 0; i < n; ++i) v[i] = kv.string(i);
        return out->AddStringArray(k, v);
      }
      std::vector<absl::Span<const uint8_t>> v;
      v.reserve(n);
      for (size_t i = 0; i < n; ++i) v.push_back(bytes(kv.string(i)));
      return out->AddBytesArray(k, v);
    }
    default:
      return absl::InternalError("unexpected GGUF value type");
  }
}

// Decides which tensors --quantize and --requantize take.
absl::Status ChooseQuantized(const ConvertOptions& o,
                             std::vector<Plan>* plans) {
  for (Plan& p : *plans) {
    std::string why;
    if (p.needs_requantize) {
      if (!o.requantize.has_value())
        return absl::UnimplementedError(absl::StrCat(
            "tensor '", p.name, "': ggml type ", p.source_type,
            " has no exact Hurray form (--requantize SCHEME re-quantizes "
            "it)"));
      if (!Applicable(*o.requantize, p.shape, &why))
        return absl::InvalidArgumentError(
            absl::StrCat("tensor '", p.name, "': --requantize ",
                         o.requantize->text, " does not fit: ", why));
      p.kind = Kind::kQuantize;
      p.spec = *o.requantize;
      continue;
    }
    if (IsKMin(p.kind)) {
      // Approximate either way: --requantize takes them into its scheme
      // (ggml's values quantized), else the near-lossless form.
      if (!o.requantize.has_value()) continue;
      if (!Applicable(*o.requantize, p.shape, &why))
        return absl::InvalidArgumentError(
            absl::StrCat("tensor '", p.name, "': --requantize ",
                         o.requantize->text, " does not fit: ", why));
      p.kind = Kind::kQuantize;
      p.spec = *o.requantize;
      continue;
    }
    if (!o.quantize.has_value() || p.floats == Floats::kNone) continue;
    if (p.shape.size() < 2) {
      p.note = "kept: 1-D";
      continue;
    }
    bool skipped = false;
    for (const std::string& pattern : o.skip)
      skipped = skipped || fnmatch(pattern.c_str(), p.name.c_str(), 0) == 0;
    if (skipped) {
      p.note = "kept: --skip";
      continue;
    }
    if (!Applicable(*o.quantize, p.shape, &why)) {
      p.note = "kept: " + why;
      continue;
    }
    p.kind = Kind::kQuantize;
    p.spec = *o.quantize;
  }
  return absl::OkStatus();
}

}  // namespace hurray::stream::convert::internal
