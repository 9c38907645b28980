#include "parser/fast_path.h"

#include <cmath>
#include <cstring>

#include "parser/element_type.h"
#include "parser/quantization.h"
#include "parser/wire.h"

namespace hurray {
namespace {

using wire::CheckedAdd;
using wire::CheckedMul;
using wire::CheckedProduct;
using wire::IsPowerOfTwo;
using wire::LoadU32;
using wire::LoadU64;

// Public (device, memory class) pairs of buffer-protocol.md § Per-Device
// Validity: bit m of kPairs[device] allows memory class m (0x00–0x03).
// STANDARD everywhere; PEER not on CPU, Metal, Hexagon, OpenCL; WebGPU
// STANDARD only.
constexpr uint8_t kPairs[9] = {0x7, 0xF, 0xF, 0x7, 0xF, 0x1, 0x7, 0xF, 0x7};

// Every handle rule (BUF-04…15) for a public device and memory class, plus
// colocation with buffer 0 (BUF-16/17, QNT-PLC-05): all buffers of a fast
// shape are the data buffer or its parameters, so all sit with buffer 0.
bool HandleAccepted(const BufferHandle& h, const BufferHandle& data) {
  return IsPowerOfTwo(h.alignment) &&
         (h.byte_size == 0 || h.alignment >= kMinBufferAlignment) &&
         h.device_tag <= device_tag::kOpenCl &&
         h.memory_class <= memory_class::kPeer &&
         ((kPairs[h.device_tag] >> h.memory_class) & 1) != 0 &&
         h.sync_mode < 3 &&
         (h.device_tag != device_tag::kCpu || h.sync_mode == 0) &&
         h.reserved == 0 && h.device_tag == data.device_tag &&
         h.memory_class == data.memory_class;
}

// CheckQuantizationFields (quantization.cc) and the storage types of each
// scheme (quantization/*.md § Storage), strict reading.
bool QuantizationFieldsAccepted(const QuantizationDescriptor& q,
                                uint8_t storage) {
  using namespace type_tag;  // NOLINT
  if (q.scheme_version != kCurrentSchemeVersion) return false;
  const bool zero_reserved3 =
      q.reserved[0] == 0 && q.reserved[1] == 0 && q.reserved[2] == 0;
  const bool symmetric_ok =
      !q.symmetric() || q.zero_point_buffer_index == kNoBufferIndex;
  switch (q.scheme_tag) {
    case scheme_tag::kPerTensorAffine: {
      int64_t lo = 0, hi = 0;
      return q.flags == 0 && std::isfinite(q.scale) && q.scale != 0.0f &&
             zero_reserved3 && q.reserved[3] == 0 &&
             IntegerStorageRange(storage, &lo, &hi) &&
             ((storage >= kInt8 && storage <= kUInt32) ||
              (storage >= kInt4 && storage <= kUInt2)) &&
             q.zero_point >= lo && q.zero_point <= hi;
    }
    case scheme_tag::kPerChannelAffine:
      return (q.flags & ~kSymmetricFlag) == 0 && q.scale_type_tag == kFloat32 &&
             zero_reserved3 && symmetric_ok &&
             ((storage >= kInt8 && storage <= kUInt32) ||
              (storage >= kInt4 && storage <= kUInt2));
    case scheme_tag::kPerBlockAffine:
      return (q.flags & ~kSymmetricFlag) == 0 && IsPowerOfTwo(q.block_size) &&
             q.block_size >= 2 &&
             (q.scale_type_tag == kFloat16 || q.scale_type_tag == kBFloat16 ||
              q.scale_type_tag == kFloat32) &&
             zero_reserved3 && symmetric_ok &&
             (storage == kInt8 || storage == kUInt8 ||
              (storage >= kInt4 && storage <= kUInt2));
    case scheme_tag::kNf4:
      return q.flags == 0 && IsPowerOfTwo(q.block_size) && q.block_size >= 8 &&
             storage == kUInt4;
    case scheme_tag::kMxfp:
      return q.flags == 0 && IsPowerOfTwo(q.block_size) && q.block_size >= 16 &&
             q.block_size <= 2048 &&
             (storage == kFloat8E4M3 || storage == kFloat8E5M2 ||
              storage == kFloat4E2M1 || storage == kFloat6E2M3 ||
              storage == kFloat6E3M2 || storage == kInt8 || storage == kInt4);
    default:
      return false;
  }
}

}  // namespace

bool FastDecodeFields(const uint8_t* p, size_t size, const ParseOptions& o,
                      TensorDescriptor* d) {
  // Fixed header (metadata.md § Fixed Header): every framing rule the
  // decoder applies to it, as a condition for staying on the fast path.
  if (size < kFixedHeaderSize ||
      std::memcmp(p, kDescriptorMagic.data(), 4) != 0 ||
      p[4] != kSupportedMajor) {
    return false;
  }
  const uint32_t length = LoadU32(p + 6);
  const uint32_t flags = LoadU32(p + 10);
  const uint8_t layout = p[15];
  const uint32_t rank = LoadU32(p + 16);
  if (length > size || length > o.limits.max_descriptor_bytes ||
      (flags & ~flag::kHasQuantization) != 0 ||
      (layout != layout_tag::kRowMajor && layout != layout_tag::kColumnMajor) ||
      rank > kFastPathMaxRank || rank > o.limits.max_rank) {
    return false;
  }
  // Fixed offsets: shape, byte_offset, then the buffer table (row- and
  // column-major have no layout-specific fields), then the quantization
  // section, which must end the descriptor. Every offset below is < 200.
  const uint32_t table = kFixedHeaderSize + 8 * rank + 8;
  if (table >= length) return false;
  const uint32_t count = p[table];
  if (count == 0 || count > kFastPathMaxBuffers) return false;
  const uint32_t quant_at = table + 1 + kBufferHandleSize * count;
  uint32_t end = quant_at;
  uint32_t quant_length = 0;
  const bool quantized = (flags & flag::kHasQuantization) != 0;
  if (quantized) {
    if (quant_at + 4 + kQuantizationHeaderSize > length) return false;
    quant_length = LoadU32(p + quant_at);
    const uint32_t fixed = SchemeFixedSize(p[quant_at + 4]);
    if (fixed == 0 || p[quant_at + 5] != kCurrentSchemeVersion ||
        quant_length != fixed ||
        quant_length > o.limits.max_quantization_bytes) {
      return false;
    }
    end += 4 + quant_length;
  }
  if (end != length) return false;

  // (Nothing is written to `d` before this point: see the header.)
  d->version_major = p[4];
  d->version_minor = p[5];
  d->descriptor_length = length;
  d->flags = flags;
  d->type_tag = p[14];
  d->layout_tag = layout;
  d->rank = rank;
  for (uint32_t k = 0; k < rank; ++k) {
    d->shape[k] = LoadU64(p + kFixedHeaderSize + 8 * k);
  }
  d->byte_offset = LoadU64(p + table - 8);
  d->offsets.layout = table;
  d->offsets.buffer_table = table;
  d->buffer_count = count;
  for (uint32_t i = 0; i < count; ++i) {
    const uint8_t* h = p + table + 1 + kBufferHandleSize * i;
    BufferHandle& b = d->buffers[i];
    b.byte_size = LoadU64(h);
    b.alignment = LoadU32(h + 8);
    b.device_tag = h[12];
    b.sync_mode = h[13];
    b.memory_class = h[14];
    b.reserved = h[15];
  }
  if (quantized) {
    d->offsets.quantization = quant_at;
    ParseQuantizationFields(p + quant_at + 4, quant_length, &d->quantization);
  }
  d->offsets.end = length;
  d->trailing_length = 0;
  return true;
}

// ValidateDescriptor (validator.cc) narrowed to the fast shapes, in the
// order of its checks; each test is the acceptance side of the rule named
// beside it. Anything the general validator would need to look at more
// closely (a dynamic dimension, an overflowing product, a private value,
// permissive-only leniency) answers "not sure".
bool FastAccepts(const TensorDescriptor& d, const ParseOptions& o) {
  const uint8_t layout = d.layout_tag;
  const uint32_t rank = d.rank;
  const uint32_t count = d.buffer_count;
  if ((layout != layout_tag::kRowMajor && layout != layout_tag::kColumnMajor) ||
      !d.layout_parsed || (d.flags & ~flag::kHasQuantization) != 0 ||
      d.trailing_length != 0 ||                          // DESC-HDR-08
      rank > kFastPathMaxRank ||                         //
      (rank == 0 && layout != layout_tag::kRowMajor) ||  // DESC-SHP-02
      count == 0 || count > kFastPathMaxBuffers ||       // BUF-01
      o.disabled_layouts.test(layout)) {                 // LAY-TAG-03
    return false;
  }
  // TYPE-01…06: an assigned tag (never private, so no extension section,
  // TYPE-EXT-01).
  const ElementTypeInfo* type = FindElementType(d.type_tag);
  if (type == nullptr) return false;
  const BufferHandle& data = d.buffers[0];
  for (uint32_t i = 0; i < count; ++i) {
    if (!HandleAccepted(d.buffers[i], data)) return false;
  }
  if (d.byte_offset > data.byte_size) return false;  // DESC-SHP-03

  // Element count over static dimensions, without overflow.
  uint64_t elements = 0;
  if (!d.ElementCount(&elements)) return false;
  if (elements == 0 && data.byte_size != 0) return false;  // DESC-SHP-05

  uint64_t stored = elements;  // elements buffer 0 holds (padded grid)
  if (!d.has(flag::kHasQuantization)) {
    if (count != 1) return false;  // BUF-02
  } else {
    const QuantizationDescriptor& q = d.quantization;
    if (!QuantizationFieldsAccepted(q, d.type_tag)) return false;
    const uint8_t scheme = q.scheme_tag;
    if (scheme == scheme_tag::kPerTensorAffine) {
      if (count != 1) return false;  // BUF-03: no parameter buffer
    } else {
      if (q.axis >= rank) return false;  // QNT-*-01
      const uint64_t len = d.shape[q.axis];
      const uint64_t k = q.block_size;
      const bool blocked =
          scheme == scheme_tag::kPerBlockAffine || scheme == scheme_tag::kNf4;
      if (blocked && len > 0 && k > len) return false;  // QNT-PBA/NF4-03
      if (scheme == scheme_tag::kMxfp && (len == 0 || len % k != 0)) {
        return false;  // QNT-MX-04
      }
      // Placement (QNT-PLC-01…03, QNT-PCA-06, QNT-PBA-08) and BUF-03.
      const bool has_zero_point = (scheme == scheme_tag::kPerChannelAffine ||
                                   scheme == scheme_tag::kPerBlockAffine) &&
                                  !q.symmetric();
      const uint32_t s = q.scale_buffer_index;
      const uint32_t z = q.zero_point_buffer_index;
      if (s == 0 || s >= count) return false;
      if (has_zero_point && (z == 0 || z >= count)) return false;
      if (count != (has_zero_point && z != s ? 3u : 2u)) return false;
      // Parameter array sizes (QNT-*-size rules, QNT-PLC-04).
      uint64_t entries = len;  // per-channel: one per channel
      if (scheme != scheme_tag::kPerChannelAffine) {
        const uint64_t per_axis =
            scheme == scheme_tag::kMxfp ? len / k : len / k + (len % k != 0);
        CheckedProduct product;
        product.Mul(per_axis);
        for (uint32_t j = 0; j < rank; ++j) {
          if (j != q.axis) product.Mul(d.shape[j]);
        }
        if (!product.Get(&entries)) return false;
      }
      const uint64_t width = scheme == scheme_tag::kMxfp ? 1
                             : (scheme == scheme_tag::kPerBlockAffine &&
                                q.scale_type_tag != type_tag::kFloat32)
                                 ? 2
                                 : 4;
      uint64_t scale_bytes = 0, zero_point_bytes = 0;
      if (!CheckedMul(entries, width, &scale_bytes) ||
          !CheckedMul(entries, 4, &zero_point_bytes)) {
        return false;
      }
      const uint64_t scale_size = d.buffers[s].byte_size;
      if (has_zero_point && z == s) {
        uint64_t both = 0;
        if (!CheckedAdd(scale_bytes, zero_point_bytes, &both) ||
            scale_size != both) {
          return false;
        }
      } else if (scale_size != scale_bytes ||
                 (has_zero_point &&
                  d.buffers[z].byte_size != zero_point_bytes)) {
        return false;
      }
      // The stored grid rounds the axis up to whole blocks (RESOLUTIONS.md
      // 2, BUF-SZ-11).
      if (blocked && elements != 0) {
        uint64_t padded = 0;
        if (!CheckedMul(len / k + (len % k != 0), k, &padded) ||
            !CheckedMul(elements / len, padded, &stored)) {
          return false;
        }
      }
    }
  }
  // BUF-SZ-01/11: buffer 0 holds byte_offset + the elements.
  uint64_t need = 0;
  return StorageBytesOfBits(type->bits, stored, &need) &&
         CheckedAdd(need, d.byte_offset, &need) && data.byte_size >= need;
}

}  // namespace hurray
