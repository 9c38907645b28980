#include "parser/encoder.h"

#include <algorithm>
#include <cstring>

#include "absl/status/status.h"
#include "parser/wire.h"

namespace hurray {
namespace {

uint64_t TiledBlockSize(const LayoutFields& lay, uint32_t rank) {
  uint64_t n = 0;
  for (uint32_t i = 0; i < lay.tiled_depth; ++i) {
    const TiledLevel& level = lay.tiled[i];
    n += 8ull * rank + 4;
    if (level.outer_layout == layout_tag::kStrided) n += 8ull * rank;
    if (level.inner_layout == layout_tag::kStrided) n += 8ull * rank;
  }
  return n;
}

absl::StatusOr<uint64_t> LayoutBlockSize(const TensorDescriptor& d) {
  const uint64_t r = d.rank;
  const LayoutFields& lay = d.layout;
  switch (d.layout_tag) {
    case layout_tag::kRowMajor:
    case layout_tag::kColumnMajor:
      return 0;
    case layout_tag::kStrided:
      return 8 * r;
    case layout_tag::kTiled: {
      if (lay.tiled_depth == 0 || lay.tiled_depth > kMaxTiledDepth) {
        return absl::InvalidArgumentError("tiled depth must be 1…8");
      }
      // Every level but the last must nest (inner 0x04), the last must not.
      for (uint32_t i = 0; i < lay.tiled_depth; ++i) {
        const bool nests = lay.tiled[i].inner_layout == layout_tag::kTiled;
        if (nests != (i + 1 < lay.tiled_depth)) {
          return absl::InvalidArgumentError(
              "tiled levels disagree with tiled_depth");
        }
      }
      return TiledBlockSize(lay, d.rank);
    }
    case layout_tag::kMorton:
      return 4 * r;
    case layout_tag::kCoo:
    case layout_tag::kCsr:
    case layout_tag::kCsc:
      return 16;
    case layout_tag::kCsf:
      return 16 + 4 * r;
    case layout_tag::kBlockPaged:
      return 32;
    case layout_tag::kComposite:
    case layout_tag::kHilbert:
      return 8;
    default:
      if (layout_tag::IsExtension(d.layout_tag)) {
        return 12 + static_cast<uint64_t>(lay.extension_data_length);
      }
      return absl::InvalidArgumentError(
          "cannot encode an unassigned layout tag");
  }
}

class Writer {
 public:
  explicit Writer(uint8_t* p) : p_(p) {}
  void U8(uint8_t v) { *p_++ = v; }
  void U32(uint32_t v) { wire::StoreU32(p_, v), p_ += 4; }
  void U64(uint64_t v) { wire::StoreU64(p_, v), p_ += 8; }
  void F64(double v) { wire::StoreF64(p_, v), p_ += 8; }
  void Bytes(const uint8_t* b, size_t n) {
    if (n) std::memcpy(p_, b, n);
    p_ += n;
  }
  void Zeros(size_t n) {
    std::memset(p_, 0, n);
    p_ += n;
  }
  template <typename T>
  void Array(const T* values, uint32_t n) {
    for (uint32_t i = 0; i < n; ++i) {
      if constexpr (sizeof(T) == 8) {
        U64(static_cast<uint64_t>(values[i]));
      } else {
        U32(static_cast<uint32_t>(values[i]));
      }
    }
  }
  uint8_t* p() const { return p_; }
  void Advance(size_t n) { p_ += n; }

 private:
  uint8_t* p_;
};

void WriteLayout(const TensorDescriptor& d, Writer& w,
                 absl::Span<const uint8_t> extension_data) {
  const LayoutFields& lay = d.layout;
  const uint32_t r = d.rank;
  switch (d.layout_tag) {
    case layout_tag::kStrided:
      w.Array(lay.strides, r);
      return;
    case layout_tag::kTiled:
      for (uint32_t i = 0; i < lay.tiled_depth; ++i) {
        const TiledLevel& level = lay.tiled[i];
        w.Array(level.tile_shape, r);
        w.U8(level.outer_layout);
        w.U8(level.inner_layout);
        w.Bytes(level.reserved.data(), 2);
        if (level.outer_layout == layout_tag::kStrided) {
          w.Array(level.outer_strides, r);
        }
        if (level.inner_layout == layout_tag::kStrided) {
          w.Array(level.inner_strides, r);
        }
      }
      return;
    case layout_tag::kMorton:
      w.Array(lay.morton_bits, r);
      return;
    case layout_tag::kCoo:
      w.U64(lay.nnz);
      w.U8(lay.is_sorted);
      w.Bytes(lay.sparse_reserved.data(), 7);
      return;
    case layout_tag::kCsr:
    case layout_tag::kCsc:
      w.U64(lay.nnz);
      w.Bytes(lay.sparse_reserved.data(), 8);
      return;
    case layout_tag::kCsf:
      w.U64(lay.nnz);
      w.Array(lay.mode_order, r);
      w.Bytes(lay.sparse_reserved.data(), 8);
      return;
    case layout_tag::kBlockPaged:
      w.U32(lay.page_size);
      w.U64(lay.num_pages);
      w.U32(lay.paged_axis);
      w.U32(lay.num_seqs);
      w.U8(lay.kv_role);
      w.U32(lay.layer_index);
      w.U8(lay.block_table_index_type);
      w.Bytes(lay.paged_reserved.data(), 6);
      return;
    case layout_tag::kComposite:
      w.U8(lay.composition_rule);
      w.U8(lay.combine_op);
      w.Bytes(lay.composite_reserved.data(), 2);
      w.U32(lay.member_count);
      return;
    case layout_tag::kHilbert:
      w.U32(lay.hilbert_order);
      w.U32(lay.hilbert_rank);
      return;
    default:
      if (layout_tag::IsExtension(d.layout_tag)) {
        w.U64(lay.extension_layout_id);
        w.U32(lay.extension_data_length);
        const size_t n =
            std::min<size_t>(extension_data.size(), lay.extension_data_length);
        w.Bytes(extension_data.data(), n);
        w.Zeros(lay.extension_data_length - n);
      }
      return;
  }
}

}  // namespace

absl::StatusOr<PartOffsets> ComputeOffsets(const TensorDescriptor& d) {
  if (d.rank > kMaxRank) return absl::InvalidArgumentError("rank exceeds 64");
  if (d.buffer_count > kMaxBuffers) {
    return absl::InvalidArgumentError("buffer_count exceeds 255");
  }
  if (!d.layout_parsed) {
    return absl::InvalidArgumentError("layout fields were not decoded");
  }
  absl::StatusOr<uint64_t> layout_size = LayoutBlockSize(d);
  if (!layout_size.ok()) return layout_size.status();
  PartOffsets o;
  uint64_t at = kFixedHeaderSize + 8ull * d.rank + 8;
  o.layout = static_cast<uint32_t>(at);
  at += *layout_size;
  o.buffer_table = static_cast<uint32_t>(at);
  at += 1 + 16ull * d.buffer_count;
  o.quantization = static_cast<uint32_t>(at);
  if (d.has(flag::kHasQuantization)) at += 4 + d.quantization.encoded_len();
  o.shard = static_cast<uint32_t>(at);
  if (d.has(flag::kHasShard)) at += 16ull * d.rank;
  o.statistics = static_cast<uint32_t>(at);
  if (d.has(flag::kHasStatistics)) at += kStatisticsSize;
  o.extension_type = static_cast<uint32_t>(at);
  if (d.has(flag::kHasExtensionType)) at += kExtensionTypeSize;
  o.composite_member = static_cast<uint32_t>(at);
  if (d.has(flag::kHasCompositeMember)) at += kCompositeMemberSize;
  o.end = static_cast<uint32_t>(at);
  if (at + d.trailing_length > 0xFFFFFFFFull) {
    return absl::InvalidArgumentError("descriptor longer than 4 GiB");
  }
  return o;
}

absl::StatusOr<size_t> EncodeInto(const TensorDescriptor& d,
                                  absl::Span<uint8_t> out,
                                  absl::Span<const uint8_t> extension_data) {
  absl::StatusOr<PartOffsets> offsets = ComputeOffsets(d);
  if (!offsets.ok()) return offsets.status();
  const size_t length = static_cast<size_t>(offsets->end) + d.trailing_length;
  if (out.size() < length) {
    return absl::OutOfRangeError("output span is too small");
  }
  Writer w(out.data());
  w.Bytes(kDescriptorMagic.data(), 4);
  w.U8(d.version_major);
  w.U8(d.version_minor);
  w.U32(static_cast<uint32_t>(length));
  w.U32(d.flags);
  w.U8(d.type_tag);
  w.U8(d.layout_tag);
  w.U32(d.rank);
  w.Array(d.shape, d.rank);
  w.U64(d.byte_offset);
  WriteLayout(d, w, extension_data);
  w.U8(static_cast<uint8_t>(d.buffer_count));
  for (uint32_t i = 0; i < d.buffer_count; ++i) {
    const BufferHandle& h = d.buffers[i];
    w.U64(h.byte_size);
    w.U32(h.alignment);
    w.U8(h.device_tag);
    w.U8(h.sync_mode);
    w.U8(h.memory_class);
    w.U8(h.reserved);
  }
  if (d.has(flag::kHasQuantization)) {
    const size_t qlen = d.quantization.encoded_len();
    w.U32(static_cast<uint32_t>(qlen));
    absl::StatusOr<size_t> n =
        d.quantization.EncodeInto(absl::MakeSpan(w.p(), qlen));
    if (!n.ok()) return n.status();
    w.Advance(qlen);
  }
  if (d.has(flag::kHasShard)) {
    w.Array(d.shard.parent_shape, d.rank);
    w.Array(d.shard.shard_offset, d.rank);
  }
  if (d.has(flag::kHasStatistics)) {
    const Statistics& s = d.statistics;
    w.U32(s.computed_mask);
    w.U32(s.reserved);
    w.U64(s.nnz);
    w.F64(s.sparsity_ratio);
    w.F64(s.value_min);
    w.F64(s.value_max);
    w.F64(s.value_abs_max);
    w.F64(s.value_mean);
    w.F64(s.value_stddev);
    w.U8(s.nm_n);
    w.U8(s.nm_m);
    w.U8(s.has_nan);
    w.U8(s.has_inf);
    w.Bytes(s.reserved2.data(), 4);
  }
  if (d.has(flag::kHasExtensionType)) {
    const ExtensionType& e = d.extension_type;
    w.U32(e.bit_width);
    w.U8(e.packing_factor);
    w.U8(e.is_float);
    w.U8(e.is_signed);
    w.U8(e.sign_bits);
    w.U8(e.exponent_bits);
    w.U8(e.mantissa_bits);
    w.Bytes(e.reserved.data(), 2);
    w.U32(e.exponent_bias);
    w.U8(e.has_nan);
    w.U8(e.has_inf);
    w.Bytes(e.reserved2.data(), 2);
  }
  if (d.has(flag::kHasCompositeMember)) {
    w.U8(d.composite_member.member_role);
    w.Bytes(d.composite_member.reserved.data(), 15);
  }
  w.Zeros(d.trailing_length);
  return length;
}

absl::StatusOr<std::vector<uint8_t>> Encode(
    const TensorDescriptor& d, absl::Span<const uint8_t> extension_data) {
  absl::StatusOr<PartOffsets> offsets = ComputeOffsets(d);
  if (!offsets.ok()) return offsets.status();
  std::vector<uint8_t> out(static_cast<size_t>(offsets->end) +
                           d.trailing_length);
  absl::StatusOr<size_t> n = EncodeInto(d, absl::MakeSpan(out), extension_data);
  if (!n.ok()) return n.status();
  return out;
}

}  // namespace hurray
