#include "tests/vectors.h"

#include <cstdlib>
#include <utility>

#include "parser/element_type.h"
#include "parser/encoder.h"

namespace hurray::vectors {
namespace {

using namespace type_tag;  // NOLINT

BufferHandle Buffer(uint64_t size) {
  BufferHandle h;
  h.byte_size = size;
  return h;
}

std::unique_ptr<TensorDescriptor> Quantized(uint8_t type,
                                            std::vector<uint64_t> shape,
                                            const QuantizationDescriptor& q,
                                            std::vector<uint64_t> params) {
  auto d = Dense(type, std::move(shape));
  d->flags |= flag::kHasQuantization;
  d->quantization = q;
  for (uint64_t size : params) d->buffers[d->buffer_count++] = Buffer(size);
  return d;
}

template <typename T>
T Must(absl::StatusOr<T> v) {
  if (!v.ok()) std::abort();
  return *std::move(v);
}

}  // namespace

std::unique_ptr<TensorDescriptor> Dense(uint8_t type_tag,
                                        std::vector<uint64_t> shape,
                                        uint8_t layout) {
  auto d = std::make_unique<TensorDescriptor>();
  d->type_tag = type_tag;
  d->layout_tag = layout;
  d->rank = static_cast<uint32_t>(shape.size());
  uint64_t count = 1;
  bool dynamic = false;
  for (uint32_t k = 0; k < d->rank; ++k) {
    d->shape[k] = shape[k];
    if (shape[k] == kDynamicDim) {
      dynamic = true;
    } else {
      count *= shape[k];
    }
  }
  uint64_t bytes = 0;
  if (!dynamic) StorageBytes(type_tag, count, &bytes);
  d->buffer_count = 1;
  d->buffers[0] = Buffer(dynamic ? 0 : bytes);
  return d;
}

std::unique_ptr<TensorDescriptor> PerTensorInt8() {
  return Quantized(kInt8, {4, 8}, Must(PerTensorAffine::Create(0.05f, -3)), {});
}

std::unique_ptr<TensorDescriptor> PerChannelAsymInt8() {
  return Quantized(kInt8, {4, 8}, Must(PerChannelAffine::Asymmetric(0, 1, 2)),
                   {16, 16});
}

std::unique_ptr<TensorDescriptor> PerChannelSymInt4() {
  return Quantized(kInt4, {6, 5}, Must(PerChannelAffine::Symmetric(1, 1)),
                   {20});
}

std::unique_ptr<TensorDescriptor> PerChannelShared() {
  return Quantized(kUInt8, {3, 2}, Must(PerChannelAffine::Asymmetric(0, 1, 1)),
                   {24});
}

std::unique_ptr<TensorDescriptor> PerBlockAsymUInt4() {
  // 100 columns in blocks of 32: 4 blocks per row, the last partial; the
  // data buffer holds the padded grid (RESOLUTIONS.md 2).
  auto d = Quantized(kUInt4, {8, 100},
                     Must(PerBlockAffine::Asymmetric(1, 32, 1, 2, kFloat16)),
                     {8 * 4 * 2, 8 * 4 * 4});
  d->buffers[0].byte_size = 8 * 128 / 2;
  return d;
}

std::unique_ptr<TensorDescriptor> PerBlockSymInt8Bf16() {
  return Quantized(kInt8, {64, 64},
                   Must(PerBlockAffine::Symmetric(0, 16, 1, kBFloat16)),
                   {4 * 64 * 2});
}

std::unique_ptr<TensorDescriptor> Nf4UInt4() {
  return Quantized(kUInt4, {128, 64}, Must(Nf4::Create(1, 64, 1)), {128 * 4});
}

std::unique_ptr<TensorDescriptor> MxfpE4m3() {
  return Quantized(kFloat8E4M3, {4, 64},
                   Must(Mxfp::Create(1, kMxfpCanonicalBlockSize, 1)), {8});
}

std::unique_ptr<TensorDescriptor> MxfpFp4() {
  return Quantized(kFloat4E2M1, {2, 64}, Must(Mxfp::Create(1, 32, 1)), {4});
}

std::unique_ptr<TensorDescriptor> WithShard() {
  auto d = Dense(kFloat32, {8, 4});
  d->flags |= flag::kHasShard;
  d->shard.parent_shape[0] = 8;
  d->shard.parent_shape[1] = 8;
  d->shard.shard_offset[0] = 0;
  d->shard.shard_offset[1] = 4;
  return d;
}

std::unique_ptr<TensorDescriptor> WithStatistics() {
  auto d = Dense(kFloat32, {16});
  d->flags |= flag::kHasStatistics;
  Statistics& s = d->statistics;
  s.computed_mask = 0x3F;
  s.nnz = 12;
  s.sparsity_ratio = 0.25;
  s.value_min = -2.5;
  s.value_max = 4.0;
  s.value_abs_max = 4.0;
  s.value_mean = 0.5;
  s.value_stddev = 1.25;
  s.nm_n = 2;
  s.nm_m = 4;
  s.has_nan = 0;
  s.has_inf = 1;
  return d;
}

std::unique_ptr<TensorDescriptor> WithExtensionType() {
  auto d = Dense(kUInt8, {10});
  d->type_tag = 0xF3;
  d->flags |= flag::kHasExtensionType;
  ExtensionType& e = d->extension_type;
  e.bit_width = 4;
  e.packing_factor = 2;
  e.is_float = 1;
  e.sign_bits = 1;
  e.exponent_bits = 2;
  e.mantissa_bits = 1;
  e.exponent_bias = 1;
  d->buffers[0].byte_size = 5;
  return d;
}

std::unique_ptr<TensorDescriptor> WithCompositeMember() {
  auto d = Dense(kFloat32, {2, 2});
  d->flags |= flag::kHasCompositeMember;
  d->composite_member.member_role = 0x01;
  return d;
}

std::unique_ptr<TensorDescriptor> Everything() {
  auto d = PerChannelAsymInt8();
  d->flags |=
      flag::kHasShard | flag::kHasStatistics | flag::kHasCompositeMember;
  d->shard.parent_shape[0] = 8;
  d->shard.parent_shape[1] = 8;
  d->shard.shard_offset[0] = 4;
  d->shard.shard_offset[1] = 0;
  d->statistics.computed_mask = stat_bit::kValueRange;
  d->statistics.value_min = -1;
  d->statistics.value_max = 1;
  d->statistics.value_abs_max = 1;
  d->composite_member.member_role = 0x00;
  d->quantization.extra_length = 4;  // writer padding
  return d;
}

std::unique_ptr<TensorDescriptor> StridedNegative() {
  // Rows reversed: element [i, j] at (i·-4 + j) from byte_offset 32.
  auto d = Dense(kFloat32, {3, 4}, layout_tag::kStrided);
  d->layout.strides[0] = -4;
  d->layout.strides[1] = 1;
  d->byte_offset = 8 * 4;
  return d;
}

std::unique_ptr<TensorDescriptor> TiledNested() {
  // [6, 8] in 2×4 tiles, each tile in 1×2 row-major sub-tiles.
  auto d = Dense(kInt8, {6, 8}, layout_tag::kTiled);
  LayoutFields& l = d->layout;
  l.tiled_depth = 2;
  l.tiled[0].tile_shape[0] = 2;
  l.tiled[0].tile_shape[1] = 4;
  l.tiled[0].outer_layout = layout_tag::kRowMajor;
  l.tiled[0].inner_layout = layout_tag::kTiled;
  l.tiled[1].tile_shape[0] = 1;
  l.tiled[1].tile_shape[1] = 2;
  l.tiled[1].outer_layout = layout_tag::kColumnMajor;
  l.tiled[1].inner_layout = layout_tag::kRowMajor;
  return d;
}

std::unique_ptr<TensorDescriptor> TiledStrided() {
  // [4, 4] in 2×2 tiles; tiles column-major by strides, elements strided.
  auto d = Dense(kFloat16, {4, 4}, layout_tag::kTiled);
  LayoutFields& l = d->layout;
  l.tiled_depth = 1;
  l.tiled[0].tile_shape[0] = 2;
  l.tiled[0].tile_shape[1] = 2;
  l.tiled[0].outer_layout = layout_tag::kStrided;
  l.tiled[0].outer_strides[0] = 1;
  l.tiled[0].outer_strides[1] = 2;
  l.tiled[0].inner_layout = layout_tag::kStrided;
  l.tiled[0].inner_strides[0] = 1;
  l.tiled[0].inner_strides[1] = 2;
  return d;
}

std::unique_ptr<TensorDescriptor> Morton() {
  auto d = Dense(kFloat32, {3, 4}, layout_tag::kMorton);
  d->layout.morton_bits[0] = 2;
  d->layout.morton_bits[1] = 2;
  d->buffers[0].byte_size = 16 * 4;
  return d;
}

std::unique_ptr<TensorDescriptor> Hilbert() {
  auto d = Dense(kUInt4, {4, 4}, layout_tag::kHilbert);
  d->layout.hilbert_order = 2;
  d->layout.hilbert_rank = 2;
  return d;
}

std::unique_ptr<TensorDescriptor> Coo() {
  auto d = Dense(kFloat32, {5, 5, 5}, layout_tag::kCoo);
  d->layout.nnz = 3;
  d->layout.is_sorted = 1;
  d->buffer_count = 2;
  d->buffers[0] = Buffer(3 * 4);
  d->buffers[1] = Buffer(3 * 3 * 8);
  return d;
}

std::unique_ptr<TensorDescriptor> Csr() {
  auto d = Dense(kFloat64, {3, 4}, layout_tag::kCsr);
  d->layout.nnz = 5;
  d->buffer_count = 3;
  d->buffers[0] = Buffer(5 * 8);
  d->buffers[1] = Buffer(5 * 8);
  d->buffers[2] = Buffer(4 * 8);
  return d;
}

std::unique_ptr<TensorDescriptor> Csc() {
  auto d = Dense(kInt8, {3, 4}, layout_tag::kCsc);
  d->layout.nnz = 2;
  d->buffer_count = 3;
  d->buffers[0] = Buffer(2);
  d->buffers[1] = Buffer(2 * 8);
  d->buffers[2] = Buffer(5 * 8);
  return d;
}

std::unique_ptr<TensorDescriptor> Csf() {
  // Levels in mode order [2, 0, 1]: 2 roots, 3 middle nodes, 4 leaves.
  auto d = Dense(kFloat32, {2, 3, 4}, layout_tag::kCsf);
  d->layout.nnz = 4;
  d->layout.mode_order[0] = 2;
  d->layout.mode_order[1] = 0;
  d->layout.mode_order[2] = 1;
  d->buffer_count = 7;
  d->buffers[0] = Buffer(4 * 4);  // values
  d->buffers[1] = Buffer(2 * 8);  // pos_0
  d->buffers[2] = Buffer(2 * 8);  // crd_0
  d->buffers[3] = Buffer(3 * 8);  // pos_1
  d->buffers[4] = Buffer(3 * 8);  // crd_1
  d->buffers[5] = Buffer(4 * 8);  // pos_2
  d->buffers[6] = Buffer(4 * 8);  // crd_2 (leaf: nnz entries)
  return d;
}

std::unique_ptr<TensorDescriptor> BlockPaged() {
  // 40 tokens, 2 heads × 8 dims, pages of 16 tokens, 4 pages in the pool,
  // 2 sequences; per-block scales per page slot (block_size = page_size).
  auto d = Dense(kInt8, {40, 2, 8}, layout_tag::kBlockPaged);
  LayoutFields& l = d->layout;
  l.page_size = 16;
  l.num_pages = 4;
  l.num_seqs = 2;
  l.kv_role = 0x01;
  l.layer_index = 7;
  l.block_table_index_type = 0x00;
  d->flags |= flag::kHasQuantization;
  d->quantization = Must(PerBlockAffine::Symmetric(0, 16, 3, kFloat16));
  d->buffer_count = 4;
  d->buffers[0] = Buffer(4 * 16 * 2 * 8);
  d->buffers[1] = Buffer(3 * 4);  // block table: 3 logical pages
  d->buffers[2] = Buffer(3 * 4);  // seq_ptr: num_seqs + 1
  d->buffers[3] = Buffer(4 * 16 * 2);
  return d;
}

std::unique_ptr<TensorDescriptor> CompositePartition() {
  auto d = Dense(kFloat32, {8, 8}, layout_tag::kComposite);
  d->layout.composition_rule = 0x01;
  d->layout.member_count = 2;
  d->buffer_count = 0;
  return d;
}

std::unique_ptr<TensorDescriptor> CompositeOverlay() {
  auto d = Dense(kFloat16, {4, 4}, layout_tag::kComposite);
  d->layout.composition_rule = 0x02;
  d->layout.combine_op = 0x02;
  d->layout.member_count = 2;
  d->buffer_count = 0;
  return d;
}

std::unique_ptr<TensorDescriptor> ExtensionLayout() {
  auto d = Dense(kUInt8, {16}, 0xF7);
  d->layout.extension_layout_id = kAgreedLayoutId;
  d->layout.extension_data_length = 5;
  return d;
}

std::vector<Named> AllValid() {
  std::vector<Named> v;
  v.push_back({"dense_f32_3x4", Dense(kFloat32, {3, 4})});
  v.push_back({"dense_scalar_f64", Dense(kFloat64, {})});
  v.push_back({"dense_empty_f32_0x4", Dense(kFloat32, {0, 4})});
  v.push_back({"dense_dynamic_f16", Dense(kFloat16, {kDynamicDim, 8})});
  v.push_back({"column_major_bf16_5x3",
               Dense(kBFloat16, {5, 3}, layout_tag::kColumnMajor)});
  v.push_back({"dense_bool_13", Dense(kBool, {13})});
  v.push_back({"dense_fp6_e2m3_7", Dense(kFloat6E2M3, {7})});
  v.push_back({"dense_int2_3x3", Dense(kInt2, {3, 3})});
  v.push_back({"dense_complex128_2", Dense(kComplex128, {2})});
  v.push_back({"per_tensor_int8", PerTensorInt8()});
  v.push_back({"per_channel_asym_int8", PerChannelAsymInt8()});
  v.push_back({"per_channel_sym_int4", PerChannelSymInt4()});
  v.push_back({"per_channel_shared_uint8", PerChannelShared()});
  v.push_back({"per_block_asym_uint4", PerBlockAsymUInt4()});
  v.push_back({"per_block_sym_int8_bf16", PerBlockSymInt8Bf16()});
  v.push_back({"nf4_uint4", Nf4UInt4()});
  v.push_back({"mxfp_e4m3", MxfpE4m3()});
  v.push_back({"mxfp_fp4", MxfpFp4()});
  v.push_back({"shard_f32_8x4", WithShard()});
  v.push_back({"statistics_f32_16", WithStatistics()});
  v.push_back({"extension_type_f3", WithExtensionType()});
  v.push_back({"composite_member_base", WithCompositeMember()});
  v.push_back({"everything", Everything()});
  v.push_back({"strided_negative_f32", StridedNegative()});
  v.push_back({"tiled_nested_int8", TiledNested()});
  v.push_back({"tiled_strided_f16", TiledStrided()});
  v.push_back({"morton_f32_3x4", Morton()});
  v.push_back({"hilbert_uint4_4x4", Hilbert()});
  v.push_back({"coo_f32", Coo()});
  v.push_back({"csr_f64", Csr()});
  v.push_back({"csc_int8", Csc()});
  v.push_back({"csf_f32", Csf()});
  v.push_back({"block_paged_int8_pba", BlockPaged()});
  v.push_back({"composite_partition", CompositePartition()});
  v.push_back({"composite_overlay", CompositeOverlay()});
  v.push_back({"extension_layout_f7", ExtensionLayout()});
  return v;
}

ParseOptions AgreedOptions(Mode mode) {
  ParseOptions o;
  o.mode = mode;
  o.agreed.type_tags = 1u << (0xF3 - 0xF0);
  o.agreed.layout_ids[0] = kAgreedLayoutId;
  o.agreed.layout_id_count = 1;
  return o;
}

std::vector<uint8_t> Bytes(const TensorDescriptor& d) {
  absl::StatusOr<std::vector<uint8_t>> bytes = Encode(d);
  if (!bytes.ok()) std::abort();
  return *std::move(bytes);
}

}  // namespace hurray::vectors
