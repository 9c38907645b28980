#include "parser/validator.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "parser/element_type.h"
#include "parser/encoder.h"
#include "parser/layout_rules.h"
#include "parser/wire.h"

namespace hurray {
namespace {

using wire::CheckedAdd;
using wire::CheckedMul;

// --- Element type (element-types.md, metadata.md § Extension Type). -------

Rejection CheckTypeTag(const TensorDescriptor& d, const ParseOptions& o) {
  const uint8_t tag = d.type_tag;
  switch (ClassifyTypeTag(tag)) {
    case TypeTagClass::kInvalid:
      return {Rule::kType01, 14, "type_tag 0x00/0xFF is invalid"};
    case TypeTagClass::kReservedSpec:
      return {Rule::kType02, 14, "type_tag is reserved (0x80–0xEF)"};
    case TypeTagClass::kNeverValid:
      return {Rule::kType03, 14, "type_tag 0x47 is never valid"};
    case TypeTagClass::kUnassigned:
      if (Applies(Rule::kType04, o.mode)) {
        return {Rule::kType04, 14, "type_tag is not assigned"};
      }
      break;
    case TypeTagClass::kPrivate:
      if (!PrivateAgreements::Has(o.agreed.type_tags, tag) &&
          Applies(Rule::kType06, o.mode)) {
        return {Rule::kType06, 14, "private type_tag without an agreement"};
      }
      break;
    case TypeTagClass::kAssigned:
      break;  // TYPE-05: every Tier 2 type is implemented.
  }
  const bool is_private = tag >= 0xF0 && tag <= 0xFE;
  if (is_private != d.has(flag::kHasExtensionType)) {
    return {Rule::kTypeExt01, 10,
            "HAS_EXTENSION_TYPE must be set exactly for private type tags"};
  }
  return kAccepted;
}

// --- Rank and shape (data-model.md). --------------------------------------

Rejection CheckRank(const TensorDescriptor& d) {
  if (d.rank == 0 && d.layout_tag != layout_tag::kRowMajor) {
    return {Rule::kDescShp02, 16, "a scalar (rank 0) must be row-major"};
  }
  return kAccepted;
}

// --- Buffer handles (buffer-protocol.md). ---------------------------------

bool IsPrivate(uint8_t v) { return v >= 0xF0 && v <= 0xFE; }

// The (device, memory class) matrix of buffer-protocol.md § Per-Device
// Validity, for public memory classes 0x00–0x03.
bool PairAllowed(uint8_t device, uint8_t memory) {
  if (memory == memory_class::kStandard) return true;
  switch (device) {
    case device_tag::kCuda:
    case device_tag::kRocm:
    case device_tag::kVulkan:
    case device_tag::kLevelZero:
      return true;
    case device_tag::kCpu:
    case device_tag::kMetal:
    case device_tag::kHexagon:
    case device_tag::kOpenCl:
      return memory != memory_class::kPeer;
    default:  // WebGPU and private devices: STANDARD only.
      return false;
  }
}

Rejection CheckHandle(const BufferHandle& h, uint64_t at,
                      const ParseOptions& o) {
  if (!wire::IsPowerOfTwo(h.alignment)) {
    return {Rule::kBuf04, at + 8, "alignment is not a power of two"};
  }
  if (h.byte_size > 0 && h.alignment < kMinBufferAlignment) {
    return {Rule::kBuf05, at + 8, "alignment below 64 for a non-empty buffer"};
  }
  if (h.device_tag == 0xFF) {
    return {Rule::kBuf06, at + 12, "device_tag 0xFF is invalid"};
  }
  if (h.device_tag >= 0x09 && h.device_tag <= 0xEF) {
    return {Rule::kBuf07, at + 12, "device_tag is reserved"};
  }
  if (IsPrivate(h.device_tag) &&
      !PrivateAgreements::Has(o.agreed.device_tags, h.device_tag) &&
      Applies(Rule::kBuf08, o.mode)) {
    return {Rule::kBuf08, at + 12, "private device_tag without an agreement"};
  }
  if (h.sync_mode >= 0x03) {
    return {Rule::kBuf09, at + 13, "sync_mode is reserved or invalid"};
  }
  if (h.device_tag == device_tag::kCpu && h.sync_mode != 0) {
    return {Rule::kBuf10, at + 13, "CPU buffers must be PRODUCER_SYNCED"};
  }
  if ((h.memory_class >= 0x04 && h.memory_class <= 0xEF) ||
      h.memory_class == 0xFF) {
    return {Rule::kBuf11, at + 14, "memory_class is reserved or invalid"};
  }
  if (IsPrivate(h.memory_class)) {
    if (!IsPrivate(h.device_tag)) {
      return {Rule::kBuf12, at + 14, "private memory_class on a public device"};
    }
    if (!PrivateAgreements::Has(o.agreed.memory_classes, h.memory_class) &&
        Applies(Rule::kBuf13, o.mode)) {
      return {Rule::kBuf13, at + 14,
              "private memory_class without an agreement"};
    }
  } else if (!PairAllowed(h.device_tag, h.memory_class)) {
    return {Rule::kBuf14, at + 14,
            "memory_class is not allowed on this device"};
  }
  if (h.reserved != 0) {
    return {Rule::kBuf15, at + 15, "reserved handle byte is not zero"};
  }
  return kAccepted;
}

Rejection CheckBufferTable(const TensorDescriptor& d, const ParseOptions& o) {
  for (uint32_t i = 0; i < d.buffer_count; ++i) {
    HURRAY_RETURN_IF_REJECTED(
        CheckHandle(d.buffers[i], d.offsets.handle(i), o));
  }
  const uint32_t at = d.offsets.buffer_table;
  if (d.buffer_count == 0 && d.layout_tag != layout_tag::kComposite) {
    return {Rule::kBuf01, at, "buffer_count is 0"};
  }
  if (layout_tag::IsDense(d.layout_tag)) {
    if (!d.has(flag::kHasQuantization) && d.buffer_count != 1) {
      return {Rule::kBuf02, at,
              "an unquantized dense tensor has exactly one buffer"};
    }
    if (d.has(flag::kHasQuantization) && d.quantization.interpreted() &&
        d.buffer_count != 1 + ParameterBufferCount(d.quantization)) {
      return {Rule::kBuf03, at,
              "buffer_count is not 1 + the scheme's parameter buffers"};
    }
  }
  return kAccepted;
}

// byte_offset against buffer 0 (metadata.md § byte_offset).
Rejection CheckByteOffset(const TensorDescriptor& d, const ParseOptions& o) {
  const uint32_t at = d.offsets.byte_offset();
  const uint8_t tag = d.layout_tag;
  if (layout_tag::IsDense(tag)) {
    if (d.buffer_count > 0 && d.byte_offset > d.buffers[0].byte_size) {
      return {Rule::kDescShp03, at, "byte_offset is beyond buffer 0"};
    }
    uint64_t count = 0;
    if (d.buffer_count > 0 && d.ElementCount(&count) && count == 0 &&
        d.buffers[0].byte_size != 0 && Applies(Rule::kDescShp05, o.mode)) {
      return {Rule::kDescShp05, d.offsets.handle(0),
              "an empty tensor has a non-empty data buffer"};
    }
  } else if (tag >= layout_tag::kCoo && tag <= layout_tag::kBlockPaged &&
             d.byte_offset != 0) {
    return {Rule::kDescShp04, at,
            "sparse and block-paged layouts need byte_offset 0"};
  }
  return kAccepted;
}

// --- Quantization (quantization.md, quantization/*.md). -------------------

struct SchemeRules {
  Rule storage, axis, dynamic_axis;
};
SchemeRules RulesFor(uint8_t scheme) {
  switch (scheme) {
    case scheme_tag::kPerTensorAffine:
      return {Rule::kQntPta04, Rule::kNone, Rule::kNone};
    case scheme_tag::kPerChannelAffine:
      return {Rule::kQntPca07, Rule::kQntPca01, Rule::kQntPca02};
    case scheme_tag::kPerBlockAffine:
      return {Rule::kQntPba09, Rule::kQntPba01, Rule::kQntPba04};
    case scheme_tag::kNf4:
      return {Rule::kQntNf405, Rule::kQntNf401, Rule::kQntNf404};
    default:
      return {Rule::kQntMx05, Rule::kQntMx01, Rule::kQntMx03};
  }
}

bool StorageAllowed(uint8_t scheme, uint8_t t) {
  using namespace type_tag;  // NOLINT
  switch (scheme) {
    case scheme_tag::kPerTensorAffine:
    case scheme_tag::kPerChannelAffine:
      return (t >= kInt8 && t <= kUInt32) || (t >= kInt4 && t <= kUInt2);
    case scheme_tag::kPerBlockAffine:
      return t == kInt8 || t == kUInt8 || (t >= kInt4 && t <= kUInt2);
    case scheme_tag::kNf4:
      return t == kUInt4;
    default:  // MXFP
      return t == kFloat8E4M3 || t == kFloat8E5M2 || t == kFloat4E2M1 ||
             t == kFloat6E2M3 || t == kFloat6E3M2 || t == kInt8 || t == kInt4;
  }
}

// Product of the dimensions other than `axis`; false if one is dynamic or
// the product overflows.
bool OuterCount(const TensorDescriptor& d, uint32_t axis, uint64_t* out) {
  wire::CheckedProduct n;
  for (uint32_t k = 0; k < d.rank; ++k) {
    if (k == axis) continue;
    if (d.shape[k] == kDynamicDim) return false;
    n.Mul(d.shape[k]);
  }
  return n.Get(out);
}

// Expected byte sizes of the scale and zero-point arrays. `known` is false
// when a dimension is dynamic (size checks are then skipped) and
// `overflow` true when the arithmetic overflows (a rejection).
struct ParamSizes {
  bool known = false;
  bool overflow = false;
  uint64_t scale_bytes = 0;
  uint64_t zero_point_bytes = 0;
};

ParamSizes ExpectedParamSizes(const TensorDescriptor& d) {
  const QuantizationDescriptor& q = d.quantization;
  ParamSizes s;
  const uint64_t len = d.shape[q.axis];
  uint64_t entries = 0;
  if (q.scheme_tag == scheme_tag::kPerChannelAffine) {
    entries = len;  // one per channel, whatever the other dimensions hold
  } else {
    const uint64_t k = q.block_size;
    const uint64_t per_axis =
        q.scheme_tag == scheme_tag::kMxfp ? len / k : len / k + (len % k != 0);
    uint64_t outer = 0;
    if (!OuterCount(d, q.axis, &outer) &&
        (per_axis != 0 || d.HasDynamicDim())) {
      // Dynamic elsewhere: unknown; an overflow cannot be told apart from a
      // huge but legal count here, so both skip (the data size check
      // catches the overflow). An empty axis has no blocks, whatever the
      // other dimensions multiply to (outer is then unused).
      return s;
    }
    if (per_axis == 0) {
      entries = 0;
    } else if (!CheckedMul(per_axis, outer, &entries)) {
      s.overflow = true;
      return s;
    }
  }
  uint64_t scale_width = 4;
  if (q.scheme_tag == scheme_tag::kMxfp) scale_width = 1;
  if (q.scheme_tag == scheme_tag::kPerBlockAffine &&
      q.scale_type_tag != type_tag::kFloat32) {
    scale_width = 2;
  }
  if (!CheckedMul(entries, scale_width, &s.scale_bytes) ||
      !CheckedMul(entries, 4, &s.zero_point_bytes)) {
    s.overflow = true;
    return s;
  }
  s.known = true;
  return s;
}

Rejection CheckParamSizes(const TensorDescriptor& d) {
  const QuantizationDescriptor& q = d.quantization;
  if (q.scheme_tag == scheme_tag::kPerTensorAffine) return kAccepted;
  Rule scale_rule = Rule::kQntPca08, zp_rule = Rule::kQntPca09;
  switch (q.scheme_tag) {
    case scheme_tag::kPerBlockAffine:
      scale_rule = Rule::kQntPba10;
      zp_rule = Rule::kQntPba11;
      break;
    case scheme_tag::kNf4:
      scale_rule = Rule::kQntNf406;
      break;
    case scheme_tag::kMxfp:
      scale_rule = Rule::kQntMx06;
      break;
  }
  const ParamSizes s = ExpectedParamSizes(d);
  const uint64_t scale_at = d.offsets.handle(q.scale_buffer_index);
  if (s.overflow) {
    return {scale_rule, scale_at, "parameter array size overflows"};
  }
  if (!s.known) return kAccepted;
  const bool asymmetric = (q.scheme_tag == scheme_tag::kPerChannelAffine ||
                           q.scheme_tag == scheme_tag::kPerBlockAffine) &&
                          !q.symmetric();
  const uint64_t scale_size = d.buffers[q.scale_buffer_index].byte_size;
  if (asymmetric && q.zero_point_buffer_index == q.scale_buffer_index) {
    // One buffer holding [scales | zero_points] (RESOLUTIONS.md 9).
    uint64_t both = 0;
    if (!CheckedAdd(s.scale_bytes, s.zero_point_bytes, &both) ||
        scale_size != both) {
      return {Rule::kQntPlc04, scale_at,
              "shared buffer is not scales + zero-points exactly"};
    }
    return kAccepted;
  }
  if (scale_size != s.scale_bytes) {
    return {scale_rule, scale_at, "scale buffer byte_size is not exact"};
  }
  if (asymmetric &&
      d.buffers[q.zero_point_buffer_index].byte_size != s.zero_point_bytes) {
    return {zp_rule, d.offsets.handle(q.zero_point_buffer_index),
            "zero-point buffer byte_size is not exact"};
  }
  return kAccepted;
}

Rejection CheckQuantization(const TensorDescriptor& d, const ParseOptions& o) {
  const QuantizationDescriptor& q = d.quantization;
  const uint64_t base = d.offsets.quantization + 4;  // scheme_tag byte
  HURRAY_RETURN_IF_REJECTED(CheckQuantizationFields(q, base, o));
  if (!q.interpreted()) return kAccepted;  // permissive: never dequantized
  const SchemeRules rules = RulesFor(q.scheme_tag);
  if (!StorageAllowed(q.scheme_tag, d.type_tag)) {
    return {rules.storage, 14, "storage type is not allowed for this scheme"};
  }
  if (q.scheme_tag == scheme_tag::kPerTensorAffine) {
    int64_t lo = 0, hi = 0;
    IntegerStorageRange(d.type_tag, &lo, &hi);
    if (q.zero_point < lo || q.zero_point > hi) {
      return {Rule::kQntPta02, base + 8,
              "zero_point is outside the storage type's range"};
    }
    return kAccepted;
  }
  if (q.axis >= d.rank) {
    return {rules.axis, base + 4, "axis is not below rank"};
  }
  const uint64_t len = d.shape[q.axis];
  if (len == kDynamicDim) {
    return {rules.dynamic_axis, d.offsets.shape(q.axis),
            "the quantization axis has a dynamic size"};
  }
  switch (q.scheme_tag) {
    case scheme_tag::kPerBlockAffine:
    case scheme_tag::kNf4:
      if (len > 0 && q.block_size > len) {
        return {q.scheme_tag == scheme_tag::kNf4 ? Rule::kQntNf403
                                                 : Rule::kQntPba03,
                base + 8, "block_size exceeds shape[axis]"};
      }
      break;
    case scheme_tag::kMxfp:
      if (len == 0 || len % q.block_size != 0) {
        return {Rule::kQntMx04, base + 8,
                "shape[axis] is not a positive multiple of block_size"};
      }
      break;
  }
  HURRAY_RETURN_IF_REJECTED(CheckBufferPlacement(
      q, d.buffer_table(), LayoutBufferCount(d.layout_tag, d.rank), base,
      o.mode));
  // Block-paged tensors size their block parameters per page slot, not per
  // block (layouts/block-paged.md § Scale-buffer size; LAY-BPG-14).
  if (d.layout_tag == layout_tag::kBlockPaged &&
      q.scheme_tag != scheme_tag::kPerChannelAffine) {
    return kAccepted;
  }
  return CheckParamSizes(d);
}

// Data buffer size for the contiguous layouts (layouts/row-major.md,
// column-major.md § Buffer Size; per-block padding, per-block-affine.md
// § Padding).
Rejection CheckContiguousDataSize(const TensorDescriptor& d) {
  if (d.layout_tag != layout_tag::kRowMajor &&
      d.layout_tag != layout_tag::kColumnMajor) {
    return kAccepted;
  }
  if (d.buffer_count == 0 || d.HasDynamicDim() || d.ElementBits() == 0) {
    return kAccepted;
  }
  Rule rule = Rule::kBufSz01;
  const QuantizationDescriptor& q = d.quantization;
  const bool padded = d.has(flag::kHasQuantization) && q.interpreted() &&
                      (q.scheme_tag == scheme_tag::kPerBlockAffine ||
                       q.scheme_tag == scheme_tag::kNf4);
  // An empty dimension empties the grid, whatever the others multiply to.
  const bool empty =
      std::find(d.shape, d.shape + d.rank, uint64_t{0}) != d.shape + d.rank;
  uint64_t count = empty ? 0 : 1;
  bool ok = true;
  for (uint32_t k = 0; k < d.rank && ok && !empty; ++k) {
    uint64_t n = d.shape[k];
    if (padded && k == q.axis) {
      // The stored grid rounds the axis up to whole blocks (RESOLUTIONS.md 2).
      rule = Rule::kBufSz11;
      const uint64_t blocks = n / q.block_size + (n % q.block_size != 0);
      ok = CheckedMul(blocks, q.block_size, &n);
    }
    ok = ok && CheckedMul(count, n, &count);
  }
  uint64_t need = 0;
  ok = ok && d.StorageBytesFor(count, &need) &&
       CheckedAdd(need, d.byte_offset, &need);
  if (!ok || d.buffers[0].byte_size < need) {
    return {rule, d.offsets.handle(0),
            "buffer 0 is smaller than the tensor's elements need"};
  }
  return kAccepted;
}

// --- Colocation (buffer-protocol.md § Device Colocation). -----------------

bool IsParameterBuffer(const TensorDescriptor& d, uint32_t i) {
  if (!d.has(flag::kHasQuantization) || !d.quantization.interpreted()) {
    return false;
  }
  const QuantizationDescriptor& q = d.quantization;
  if (q.scheme_tag == scheme_tag::kPerTensorAffine) return false;
  return i == q.scale_buffer_index ||
         (!q.symmetric() && i == q.zero_point_buffer_index &&
          (q.scheme_tag == scheme_tag::kPerChannelAffine ||
           q.scheme_tag == scheme_tag::kPerBlockAffine));
}

Rejection CheckColocation(const TensorDescriptor& d) {
  for (uint32_t i = 1; i < d.buffer_count; ++i) {
    const uint64_t at = d.offsets.handle(i);
    // Parameter buffers were checked by the placement rules (QNT-PLC-05).
    if (!IsParameterBuffer(d, i) &&
        d.buffers[i].device_tag != d.buffers[0].device_tag) {
      return {Rule::kBuf16, at + 12, "buffers sit on different devices"};
    }
    if (d.buffers[i].memory_class != d.buffers[0].memory_class) {
      return {Rule::kBuf17, at + 14, "buffers have different memory classes"};
    }
  }
  return kAccepted;
}

// --- Optional sections (metadata.md). -------------------------------------

Rejection CheckShard(const TensorDescriptor& d) {
  const uint32_t at = d.offsets.shard;
  for (uint32_t k = 0; k < d.rank; ++k) {
    if (d.shard.parent_shape[k] == kDynamicDim) {
      return {Rule::kDescShd02, at + 8 * k, "parent_shape entry is dynamic"};
    }
  }
  for (uint32_t k = 0; k < d.rank; ++k) {
    const uint64_t off_at = at + 8ull * d.rank + 8 * k;
    if (d.shard.shard_offset[k] == kDynamicDim) {
      return {Rule::kDescShd02, off_at, "shard_offset entry is dynamic"};
    }
    uint64_t end = 0;
    if (!CheckedAdd(d.shard.shard_offset[k], d.shape[k], &end) ||
        end > d.shard.parent_shape[k]) {
      return {Rule::kDescShd01, off_at,
              "shard_offset + shape exceeds parent_shape"};
    }
  }
  return kAccepted;
}

Rejection CheckStatistics(const TensorDescriptor& d, const ParseOptions& o) {
  const Statistics& s = d.statistics;
  const uint32_t at = d.offsets.statistics;
  if (s.computed_mask & stat_bit::kReservedMask) {
    return {Rule::kDescStat01, at, "computed_mask has reserved bits set"};
  }
  if (s.reserved != 0) {
    return {Rule::kDescStat02, at + 4, "reserved field is not zero"};
  }
  for (int i = 0; i < 4; ++i) {
    if (s.reserved2[i] != 0) {
      return {Rule::kDescStat03, at + 68u + i, "reserved byte is not zero"};
    }
  }
  if (o.mode != Mode::kStrict) return kAccepted;  // the rest is strict-only
  const uint32_t m = s.computed_mask;
  if ((m & stat_bit::kSparsity) &&
      !(s.sparsity_ratio >= 0.0 && s.sparsity_ratio <= 1.0)) {
    return {Rule::kDescStat06, at + 16, "sparsity_ratio is outside [0, 1]"};
  }
  if ((m & stat_bit::kValueStats) && !(s.value_stddev >= 0.0)) {
    return {Rule::kDescStat04, at + 56, "value_stddev is negative or NaN"};
  }
  if ((m & stat_bit::kNmSparsity) && s.nm_n > s.nm_m) {
    return {Rule::kDescStat05, at + 64, "nm_n exceeds nm_m"};
  }
  if (m & stat_bit::kNanInf) {
    if (s.has_nan > 1) return {Rule::kDescStat07, at + 66, "has_nan not 0/1"};
    if (s.has_inf > 1) return {Rule::kDescStat07, at + 67, "has_inf not 0/1"};
  }
  const uint8_t t = d.layout_tag;
  if ((m & stat_bit::kNnz) && t >= layout_tag::kCoo && t <= layout_tag::kCsf &&
      s.nnz != d.layout.nnz) {
    return {Rule::kDescStat08, at + 8, "statistics nnz differs from layout"};
  }
  return kAccepted;
}

Rejection CheckExtensionType(const TensorDescriptor& d, const ParseOptions& o) {
  const ExtensionType& e = d.extension_type;
  const uint32_t at = d.offsets.extension_type;
  const uint32_t w = e.bit_width;
  if (w == 0) return {Rule::kTypeExt02, at, "bit_width is 0"};
  if (w < 8 && w != 1 && w != 2 && w != 4) {
    return {Rule::kTypeExt04, at, "sub-byte bit_width must be 1, 2 or 4"};
  }
  if (w >= 8 && e.packing_factor != 1) {
    return {Rule::kTypeExt03, at + 4, "packing_factor must be 1"};
  }
  if (w < 8 && e.packing_factor != 8 / w) {
    return {Rule::kTypeExt05, at + 4, "packing_factor must be 8 / bit_width"};
  }
  if (e.reserved[0] != 0 || e.reserved[1] != 0) {
    return {Rule::kTypeExt06, at + 10u + (e.reserved[0] == 0),
            "reserved byte is not zero"};
  }
  if (e.reserved2[0] != 0 || e.reserved2[1] != 0) {
    return {Rule::kTypeExt07, at + 18u + (e.reserved2[0] == 0),
            "reserved byte is not zero"};
  }
  if (e.is_float == 1) {
    if (e.is_signed != 0) {
      return {Rule::kTypeExt08, at + 6, "a float type has is_signed set"};
    }
    if (e.sign_bits > 1) {
      return {Rule::kTypeExt09, at + 7, "sign_bits must be 0 or 1"};
    }
  } else if (e.is_float == 0) {
    if (e.sign_bits != 0 || e.exponent_bits != 0 || e.mantissa_bits != 0) {
      const uint32_t off = e.sign_bits ? 7 : (e.exponent_bits ? 8 : 9);
      return {Rule::kTypeExt10, at + off,
              "an integer type has float bit counts"};
    }
    if (e.exponent_bias != 0) {
      return {Rule::kTypeExt11, at + 12, "an integer type has exponent_bias"};
    }
  }
  if (o.mode != Mode::kStrict) return kAccepted;  // the rest is strict-only
  const struct {
    uint8_t value;
    uint32_t off;
  } flags01[] = {
      {e.is_float, 5}, {e.is_signed, 6}, {e.has_nan, 16}, {e.has_inf, 17}};
  for (const auto& f : flags01) {
    if (f.value > 1) {
      return {Rule::kTypeExt12, at + f.off, "boolean byte is not 0 or 1"};
    }
  }
  if (e.is_float == 0 && (e.has_nan || e.has_inf)) {
    return {Rule::kTypeExt13, at + (e.has_nan ? 16u : 17u),
            "an integer type declares NaN or infinity"};
  }
  if (w >= 8 && w % 8 != 0) {
    return {Rule::kTypeExt14, at, "whole-byte bit_width not a multiple of 8"};
  }
  return kAccepted;
}

Rejection CheckCompositeMember(const TensorDescriptor& d) {
  const CompositeMember& m = d.composite_member;
  const uint32_t at = d.offsets.composite_member;
  if (m.member_role > 0x01) {
    return {Rule::kDescCms01, at, "member_role is not 0x00 or 0x01"};
  }
  for (uint32_t i = 0; i < 15; ++i) {
    if (m.reserved[i] != 0) {
      return {Rule::kDescCms02, at + 1 + i, "reserved byte is not zero"};
    }
  }
  return kAccepted;
}

}  // namespace

uint32_t LayoutBufferCount(uint8_t tag, uint32_t rank) {
  switch (tag) {
    case layout_tag::kCoo:
      return 2;
    case layout_tag::kCsr:
    case layout_tag::kCsc:
    case layout_tag::kBlockPaged:
      return 3;
    case layout_tag::kCsf:
      return 2 * rank + 1;
    case layout_tag::kComposite:
      return 0;
    default:
      return 1;
  }
}

uint32_t ParameterBufferCount(const QuantizationDescriptor& q) {
  switch (q.scheme_tag) {
    case scheme_tag::kPerTensorAffine:
      return 0;
    case scheme_tag::kPerChannelAffine:
    case scheme_tag::kPerBlockAffine:
      return (q.symmetric() ||
              q.zero_point_buffer_index == q.scale_buffer_index)
                 ? 1
                 : 2;
    default:
      return 1;
  }
}

Rejection CheckBufferPlacement(const QuantizationDescriptor& q,
                               absl::Span<const BufferHandle> buffers,
                               uint32_t layout_buffer_count, uint64_t base,
                               Mode mode) {
  if (!q.interpreted() || q.scheme_tag == scheme_tag::kPerTensorAffine) {
    return kAccepted;
  }
  const bool pba = q.scheme_tag == scheme_tag::kPerBlockAffine;
  const uint64_t scale_at = base + (pba || q.scheme_tag == scheme_tag::kNf4 ||
                                            q.scheme_tag == scheme_tag::kMxfp
                                        ? 12
                                        : 8);
  const uint64_t zp_at = base + (pba ? 16 : 12);
  const bool has_zp =
      (pba || q.scheme_tag == scheme_tag::kPerChannelAffine) && !q.symmetric();
  const size_t n = buffers.size();
  if (q.scale_buffer_index >= n) {
    return {Rule::kQntPlc01, scale_at, "scale_buffer_index names no buffer"};
  }
  if (has_zp && q.zero_point_buffer_index >= n) {
    return {pba ? Rule::kQntPba08 : Rule::kQntPca06, zp_at,
            "zero_point_buffer_index names no buffer"};
  }
  // Buffer 0 is the data (values) buffer of every layout.
  if (q.scale_buffer_index == 0) {
    return {Rule::kQntPlc02, scale_at, "scale buffer aliases the data buffer"};
  }
  if (has_zp && q.zero_point_buffer_index == 0) {
    return {Rule::kQntPlc02, zp_at,
            "zero-point buffer aliases the data buffer"};
  }
  if (Applies(Rule::kQntPlc03, mode)) {
    if (q.scale_buffer_index < layout_buffer_count) {
      return {Rule::kQntPlc03, scale_at,
              "scale buffer is one of the layout's own buffers"};
    }
    if (has_zp && q.zero_point_buffer_index < layout_buffer_count) {
      return {Rule::kQntPlc03, zp_at,
              "zero-point buffer is one of the layout's own buffers"};
    }
  }
  const BufferHandle& data = buffers[0];
  const uint32_t indices[2] = {
      q.scale_buffer_index,
      has_zp ? q.zero_point_buffer_index : q.scale_buffer_index};
  for (uint32_t i : indices) {
    if (buffers[i].device_tag != data.device_tag) {
      return {Rule::kQntPlc05, i == indices[0] ? scale_at : zp_at,
              "parameter buffer is on another device than the data"};
    }
  }
  return kAccepted;
}

absl::Status ValidateBufferPlacement(const QuantizationDescriptor& q,
                                     absl::Span<const BufferHandle> buffers,
                                     uint32_t layout_buffer_count, Mode mode) {
  Rejection r = CheckBufferPlacement(q, buffers, layout_buffer_count, 0, mode);
  if (r.ok()) {
    // Memory classes must match too (buffer-protocol.md § Device
    // Colocation); in a descriptor this is BUF-17 over the whole table.
    for (size_t i = 1; i < buffers.size() && r.ok(); ++i) {
      if (buffers[i].memory_class != buffers[0].memory_class) {
        r = {Rule::kBuf17, 0, "buffers have different memory classes"};
      }
    }
  }
  return ToStatus(r);
}

Rejection ValidateDescriptor(const TensorDescriptor& d, const ParseOptions& o) {
  HURRAY_RETURN_IF_REJECTED(CheckTypeTag(d, o));
  // The extension type section decides element sizes, so it is checked
  // before anything is sized, although it comes late on the wire.
  if (d.layout_parsed && d.has(flag::kHasExtensionType)) {
    HURRAY_RETURN_IF_REJECTED(CheckExtensionType(d, o));
  }
  if (!d.layout_parsed) {  // permissive, unknown layout: nothing else known
    return CheckRank(d);
  }
  // Layout-specific rank rules come first so they report their own ids;
  // DESC-SHP-02 covers the layouts that have none.
  HURRAY_RETURN_IF_REJECTED(CheckLayoutFields(d, o));
  HURRAY_RETURN_IF_REJECTED(CheckRank(d));
  HURRAY_RETURN_IF_REJECTED(CheckBufferTable(d, o));
  HURRAY_RETURN_IF_REJECTED(CheckByteOffset(d, o));
  if (d.has(flag::kHasQuantization)) {
    HURRAY_RETURN_IF_REJECTED(CheckQuantization(d, o));
  }
  HURRAY_RETURN_IF_REJECTED(CheckContiguousDataSize(d));
  HURRAY_RETURN_IF_REJECTED(CheckLayoutSizes(d, o));
  HURRAY_RETURN_IF_REJECTED(CheckColocation(d));
  if (d.has(flag::kHasShard)) HURRAY_RETURN_IF_REJECTED(CheckShard(d));
  if (d.has(flag::kHasStatistics)) {
    HURRAY_RETURN_IF_REJECTED(CheckStatistics(d, o));
  }
  if (d.has(flag::kHasCompositeMember)) {
    HURRAY_RETURN_IF_REJECTED(CheckCompositeMember(d));
  }
  if (d.trailing_length > 0 && d.version_minor <= kSupportedMinor &&
      Applies(Rule::kDescHdr08, o.mode)) {
    return {Rule::kDescHdr08, d.offsets.end,
            "bytes after the last section at a known minor version"};
  }
  return kAccepted;
}

absl::Status Validate(const TensorDescriptor& d, const ParseOptions& options) {
  absl::StatusOr<PartOffsets> offsets = ComputeOffsets(d);
  if (!offsets.ok()) return offsets.status();
  // The validator reads offsets from the descriptor; give it a copy that has
  // them, on the heap (the record is large).
  auto copy = std::make_unique<TensorDescriptor>(d);
  copy->offsets = *offsets;
  return ToStatus(ValidateDescriptor(*copy, options));
}

}  // namespace hurray
