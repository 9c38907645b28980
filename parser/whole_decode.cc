#include "parser/whole_decode.h"

#include <algorithm>
#include <cstring>

#include "parser/quantization.h"
#include "parser/section_fields.h"
#include "parser/wire.h"

namespace hurray {
namespace {

using wire::LoadI64;
using wire::LoadU32;
using wire::LoadU64;

// Reads field groups front to back from p[0, length); each group is checked
// to lie inside length before it is read (the state machine's DESC-HDR-06,
// here a "not sure").
class Reader {
 public:
  Reader(const uint8_t* p, uint32_t length, uint32_t pos)
      : p_(p), length_(length), pos_(pos) {}
  // The next `n` bytes, or null when they cross descriptor_length.
  const uint8_t* Take(uint64_t n) {
    if (pos_ + n > length_) return nullptr;
    const uint8_t* at = p_ + pos_;
    pos_ += n;
    return at;
  }
  uint32_t pos() const { return static_cast<uint32_t>(pos_); }
  uint32_t length() const { return length_; }

 private:
  const uint8_t* p_;
  uint32_t length_;
  uint64_t pos_;
};

void LoadU64s(const uint8_t* p, uint32_t n, uint64_t* out) {
  for (uint32_t k = 0; k < n; ++k) out[k] = LoadU64(p + 8 * k);
}
void LoadI64s(const uint8_t* p, uint32_t n, int64_t* out) {
  for (uint32_t k = 0; k < n; ++k) out[k] = LoadI64(p + 8 * k);
}
void LoadU32s(const uint8_t* p, uint32_t n, uint32_t* out) {
  for (uint32_t k = 0; k < n; ++k) out[k] = LoadU32(p + 4 * k);
}

// The levels of a tiled layout (layouts/tiled.md), as the state machine's
// tile stages read them: tile_shape, the enums, outer strides when
// outer_layout is strided, then inner strides, a nested level or the end.
bool ReadTiled(Reader& r, uint32_t rank, const ParseOptions& o,
               LayoutFields* lay) {
  lay->tiled_depth = 0;
  // (The decoder's options are clamped already; a direct caller's may not
  // be, and `tiled` holds kMaxTiledDepth levels.)
  const uint32_t max_depth = std::min(o.limits.max_tiled_depth, kMaxTiledDepth);
  for (;;) {
    if (lay->tiled_depth >= max_depth) return false;  // LAY-TIL-05
    TiledLevel& level = lay->tiled[lay->tiled_depth++];
    const uint8_t* p = r.Take(8ull * rank + 4);
    if (p == nullptr) return false;
    LoadU64s(p, rank, level.tile_shape);
    p += 8 * rank;
    level.outer_layout = p[0];
    level.inner_layout = p[1];
    level.reserved = {p[2], p[3]};
    if (level.outer_layout < 0x01 || level.outer_layout > 0x03 ||
        level.inner_layout < 0x01 || level.inner_layout > 0x04) {
      return false;  // LAY-TIL-02/03
    }
    if (level.outer_layout == layout_tag::kStrided && rank > 0) {
      if ((p = r.Take(8ull * rank)) == nullptr) return false;
      LoadI64s(p, rank, level.outer_strides);
    }
    if (level.inner_layout == layout_tag::kStrided && rank > 0) {
      if ((p = r.Take(8ull * rank)) == nullptr) return false;
      LoadI64s(p, rank, level.inner_strides);
      return true;
    }
    if (level.inner_layout != layout_tag::kTiled) return true;
  }
}

// The layout-specific fields (metadata.md § Layout-Specific Fields); false
// for an unassigned public tag or anything the state machine would refuse.
bool ReadLayout(Reader& r, const ParseOptions& o, TensorDescriptor* d) {
  LayoutFields& lay = d->layout;
  const uint32_t rank = d->rank;
  const uint8_t* p = nullptr;
  switch (d->layout_tag) {
    case layout_tag::kRowMajor:
    case layout_tag::kColumnMajor:
      return true;
    case layout_tag::kStrided:
      if ((p = r.Take(8ull * rank)) == nullptr) return false;
      LoadI64s(p, rank, lay.strides);
      return true;
    case layout_tag::kTiled:
      return ReadTiled(r, rank, o, &lay);
    case layout_tag::kMorton:
      if ((p = r.Take(4ull * rank)) == nullptr) return false;
      LoadU32s(p, rank, lay.morton_bits);
      return true;
    case layout_tag::kCoo:
    case layout_tag::kCsr:
    case layout_tag::kCsc:
      if ((p = r.Take(16)) == nullptr) return false;
      lay.nnz = LoadU64(p);
      if (d->layout_tag == layout_tag::kCoo) {
        lay.is_sorted = p[8];
        std::memcpy(lay.sparse_reserved.data(), p + 9, 7);
        lay.sparse_reserved[7] = 0;  // COO has 7 reserved bytes
      } else {
        std::memcpy(lay.sparse_reserved.data(), p + 8, 8);
      }
      return true;
    case layout_tag::kCsf:
      if ((p = r.Take(8ull + 4ull * rank + 8)) == nullptr) return false;
      lay.nnz = LoadU64(p);
      LoadU32s(p + 8, rank, lay.mode_order);
      std::memcpy(lay.sparse_reserved.data(), p + 8 + 4 * rank, 8);
      return true;
    case layout_tag::kBlockPaged:
      if ((p = r.Take(32)) == nullptr) return false;
      section_fields::LoadBlockPagedFields(p, &lay);
      return true;
    case layout_tag::kComposite:
      if ((p = r.Take(8)) == nullptr) return false;
      lay.composition_rule = p[0];
      lay.combine_op = p[1];
      lay.composite_reserved = {p[2], p[3]};
      lay.member_count = LoadU32(p + 4);
      return true;
    case layout_tag::kHilbert:
      if ((p = r.Take(8)) == nullptr) return false;
      lay.hilbert_order = LoadU32(p);
      lay.hilbert_rank = LoadU32(p + 4);
      return true;
    default:
      break;
  }
  if (!layout_tag::IsExtension(d->layout_tag)) return false;  // LAY-TAG-02
  if ((p = r.Take(12)) == nullptr) return false;
  lay.extension_layout_id = LoadU64(p);
  lay.extension_data_length = LoadU32(p + 8);
  lay.extension_data_offset = r.pos();
  return lay.extension_data_length <=
             o.limits.max_extension_data_bytes &&  // LIMIT-EXT-DATA
         r.Take(lay.extension_data_length) != nullptr;
}

// The quantization section (quantization.md § Descriptor Header): length,
// header, the scheme's fixed fields when interpreted, skipped extra bytes.
bool ReadQuantization(Reader& r, const ParseOptions& o, TensorDescriptor* d) {
  const uint32_t at = r.pos();
  const uint8_t* p = r.Take(4);
  if (p == nullptr) return false;
  const uint32_t length = LoadU32(p);
  if (length < kQuantizationHeaderSize ||          // QNT-HDR-01
      length > o.limits.max_quantization_bytes) {  // LIMIT-QNT-BYTES
    return false;
  }
  if ((p = r.Take(length)) == nullptr) return false;  // DESC-HDR-06
  const uint32_t fixed = SchemeFixedSize(p[0]);
  if (fixed != 0 && p[1] == kCurrentSchemeVersion && length < fixed) {
    return false;  // QNT-HDR-02
  }
  d->offsets.quantization = at;
  ParseQuantizationFields(p, length, &d->quantization);
  return true;
}

}  // namespace

bool DecodeWhole(const uint8_t* p, size_t size, const ParseOptions& o,
                 TensorDescriptor* d) {
  // Fixed header (metadata.md § Fixed Header) and its framing rules.
  if (size < kFixedHeaderSize ||
      std::memcmp(p, kDescriptorMagic.data(), 4) != 0 ||
      p[4] != kSupportedMajor) {
    return false;  // DESC-HDR-02/03/04
  }
  const uint32_t length = LoadU32(p + 6);
  const uint32_t flags = LoadU32(p + 10);
  const uint8_t layout = p[15];
  const uint32_t rank = LoadU32(p + 16);
  if (length < kFixedHeaderSize || length > size ||
      length > o.limits.max_descriptor_bytes ||  // DESC-HDR-05, LIMIT
      (flags & flag::kReservedMask) != 0 ||      // DESC-HDR-07
      layout == 0x00 || layout == 0xFF ||        // LAY-TAG-01
      rank > kMaxRank || rank > o.limits.max_rank) {
    return false;
  }
  d->version_major = p[4];
  d->version_minor = p[5];
  d->descriptor_length = length;
  d->flags = flags;
  d->type_tag = p[14];
  d->layout_tag = layout;
  d->rank = rank;

  Reader r(p, length, kFixedHeaderSize);
  const uint8_t* q = r.Take(8ull * rank + 8);  // shape, byte_offset
  if (q == nullptr) return false;
  LoadU64s(q, rank, d->shape);
  d->byte_offset = LoadU64(q + 8 * rank);
  d->offsets.layout = r.pos();
  if (!ReadLayout(r, o, d)) return false;

  // Buffer table (metadata.md § Buffer Table).
  d->offsets.buffer_table = r.pos();
  if ((q = r.Take(1)) == nullptr) return false;
  const uint32_t count = q[0];
  d->buffer_count = count;
  if ((q = r.Take(uint64_t{kBufferHandleSize} * count)) == nullptr) {
    return false;
  }
  for (uint32_t i = 0; i < count; ++i, q += kBufferHandleSize) {
    BufferHandle& h = d->buffers[i];
    h.byte_size = LoadU64(q);
    h.alignment = LoadU32(q + 8);
    h.device_tag = q[12];
    h.sync_mode = q[13];
    h.memory_class = q[14];
    h.reserved = q[15];
  }

  // Optional sections in wire order (metadata.md § Overall Descriptor
  // Structure): statistics before the extension type.
  if ((flags & flag::kHasQuantization) && !ReadQuantization(r, o, d)) {
    return false;
  }
  if (flags & flag::kHasShard) {
    d->offsets.shard = r.pos();
    if ((q = r.Take(16ull * rank)) == nullptr) return false;
    LoadU64s(q, rank, d->shard.parent_shape);
    LoadU64s(q + 8 * rank, rank, d->shard.shard_offset);
  }
  if (flags & flag::kHasStatistics) {
    d->offsets.statistics = r.pos();
    if ((q = r.Take(kStatisticsSize)) == nullptr) return false;
    section_fields::LoadStatistics(q, &d->statistics);
  }
  if (flags & flag::kHasExtensionType) {
    d->offsets.extension_type = r.pos();
    if ((q = r.Take(kExtensionTypeSize)) == nullptr) return false;
    section_fields::LoadExtensionType(q, &d->extension_type);
  }
  if (flags & flag::kHasCompositeMember) {
    d->offsets.composite_member = r.pos();
    if ((q = r.Take(kCompositeMemberSize)) == nullptr) return false;
    section_fields::LoadCompositeMember(q, &d->composite_member);
  }
  // Bytes a newer minor version may have added; whether they are allowed is
  // the validator's call (DESC-HDR-08).
  d->offsets.end = r.pos();
  d->trailing_length = length - r.pos();
  return true;
}

}  // namespace hurray
