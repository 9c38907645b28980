// corpus_gen: writes our own descriptor vectors, the checked-in
// corpus/descriptors/ (and, through corpus/regenerate.sh, the fuzz seeds).
//
//   corpus_gen OUTDIR   writes OUTDIR/<name>.bin for every vector below and
//                       OUTDIR/MANIFEST.tsv (name, intended strict outcome,
//                       intended permissive outcome, what was changed).
//                       Output depends only on the vectors and the encoder;
//                       //corpus:corpus_fresh_test diffs it against the
//                       checked-in copy.
//   corpus_gen --check  decodes every vector in strict and permissive mode
//                       (vectors::AgreedOptions) and exits 1 unless each one
//                       gives its intended outcome
//                       (//corpus:corpus_rules_test).
//
// The vectors:
//   <name>.bin          every entry of vectors::AllValid() (valid, strict)
//   minor1_trailing_bytes.bin  valid: minor version 1 with 8 trailing bytes
//   layout_<x>.bin      more shapes of the non-row-major layouts (negative
//                       strides, 8-level tiling, rank-3 Morton, ...), valid
//                       except layout_extension_f0 (unknown id, LAY-TAG-04).
//   broken_<x>.bin      a valid vector with exactly one field broken (or its
//                       bytes cut short), and the rule that must reject it.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "parser/decoder.h"
#include "parser/descriptor.h"
#include "parser/element_type.h"
#include "parser/encoder.h"
#include "parser/options.h"
#include "parser/quantization.h"
#include "parser/rules.h"
#include "parser/wire.h"
#include "tests/vectors.h"

namespace hurray {
namespace {

namespace tt = type_tag;
using Bytes = std::vector<uint8_t>;
using DescriptorPtr = std::unique_ptr<TensorDescriptor>;

constexpr char kAccept[] = "accept";

struct Entry {
  std::string name;
  Bytes bytes;
  std::string strict;      // rule id or kAccept
  std::string permissive;  // rule id or kAccept
  std::string what;        // one line for MANIFEST.tsv
};

PartOffsets Offsets(const TensorDescriptor& d) {
  absl::StatusOr<PartOffsets> o = ComputeOffsets(d);
  if (!o.ok()) {
    std::fprintf(stderr, "corpus_gen: %s\n", o.status().ToString().c_str());
    std::abort();
  }
  return *o;
}

DescriptorPtr DenseF32() { return vectors::Dense(tt::kFloat32, {3, 4}); }

BufferHandle Handle(uint64_t size) {
  BufferHandle h;
  h.byte_size = size;
  return h;
}

// --- The other layouts (spec-valid; structure exercised in permissive). ---

DescriptorPtr StridedNegative() {
  // float32 [3, 4], strides [-4, 1]: element offsets -8…3, so byte_offset
  // 32 puts the range at bytes [0, 48).
  auto d = DenseF32();
  d->layout_tag = layout_tag::kStrided;
  d->layout.strides[0] = -4;
  d->layout.strides[1] = 1;
  d->byte_offset = 32;
  return d;
}

DescriptorPtr TiledTwoLevels() {
  // float32 [8, 8]: 4x4 tiles in a row-major grid, each tile made of 2x2
  // tiles addressed by strides (outer in tiles, inner in elements).
  auto d = vectors::Dense(tt::kFloat32, {8, 8});
  d->layout_tag = layout_tag::kTiled;
  LayoutFields& lay = d->layout;
  lay.tiled_depth = 2;
  lay.tiled[0].tile_shape[0] = 4;
  lay.tiled[0].tile_shape[1] = 4;
  lay.tiled[0].outer_layout = layout_tag::kRowMajor;
  lay.tiled[0].inner_layout = layout_tag::kTiled;
  lay.tiled[1].tile_shape[0] = 2;
  lay.tiled[1].tile_shape[1] = 2;
  lay.tiled[1].outer_layout = layout_tag::kStrided;
  lay.tiled[1].outer_strides[0] = 2;
  lay.tiled[1].outer_strides[1] = 1;
  lay.tiled[1].inner_layout = layout_tag::kStrided;
  lay.tiled[1].inner_strides[0] = 2;
  lay.tiled[1].inner_strides[1] = 1;
  return d;
}

DescriptorPtr TiledDepth8() {
  // float32 [256], eight nested 1-D tiled levels with tiles of 128, 64, …,
  // 1 elements, each level tiling the enclosing tile.
  auto d = vectors::Dense(tt::kFloat32, {256});
  d->layout_tag = layout_tag::kTiled;
  LayoutFields& lay = d->layout;
  lay.tiled_depth = kMaxTiledDepth;
  for (uint32_t i = 0; i < kMaxTiledDepth; ++i) {
    lay.tiled[i].tile_shape[0] = 128u >> i;
    lay.tiled[i].outer_layout = layout_tag::kRowMajor;
    lay.tiled[i].inner_layout =
        i + 1 < kMaxTiledDepth ? layout_tag::kTiled : layout_tag::kRowMajor;
  }
  return d;
}

DescriptorPtr Coo() {
  // float32 [4, 4] with 3 entries: values (3 floats), indices (3 x 2 u64).
  auto d = vectors::Dense(tt::kFloat32, {4, 4});
  d->layout_tag = layout_tag::kCoo;
  d->layout.nnz = 3;
  d->layout.is_sorted = 1;
  d->buffer_count = 2;
  d->buffers[0] = Handle(3 * 4);
  d->buffers[1] = Handle(3 * 2 * 8);
  return d;
}

DescriptorPtr Csc() {
  // float32 [3, 3] with 2 entries: values, row_indices, col_ptr (4 u64).
  auto d = vectors::Dense(tt::kFloat32, {3, 3});
  d->layout_tag = layout_tag::kCsc;
  d->layout.nnz = 2;
  d->buffer_count = 3;
  d->buffers[0] = Handle(2 * 4);
  d->buffers[1] = Handle(2 * 8);
  d->buffers[2] = Handle(4 * 8);
  return d;
}

DescriptorPtr Csf() {
  // float32 [2, 3, 4] with 2 entries in mode order (2, 0, 1): values, then
  // pos/crd per level (pos_0 = [0, 2]; two chains of one node each).
  auto d = vectors::Dense(tt::kFloat32, {2, 3, 4});
  d->layout_tag = layout_tag::kCsf;
  d->layout.nnz = 2;
  d->layout.mode_order[0] = 2;
  d->layout.mode_order[1] = 0;
  d->layout.mode_order[2] = 1;
  d->buffer_count = 7;
  d->buffers[0] = Handle(2 * 4);
  d->buffers[1] = Handle(2 * 8);  // pos_0
  d->buffers[2] = Handle(2 * 8);  // crd_0
  d->buffers[3] = Handle(3 * 8);  // pos_1
  d->buffers[4] = Handle(2 * 8);  // crd_1
  d->buffers[5] = Handle(3 * 8);  // pos_2
  d->buffers[6] = Handle(2 * 8);  // crd_2
  return d;
}

DescriptorPtr BlockPaged() {
  // float16 [16 tokens, 2 heads, 8 dims], 4 pages of 4 tokens, one sequence,
  // u32 block table.
  auto d = vectors::Dense(tt::kFloat16, {16, 2, 8});
  d->layout_tag = layout_tag::kBlockPaged;
  LayoutFields& lay = d->layout;
  lay.page_size = 4;
  lay.num_pages = 4;
  lay.paged_axis = 0;
  lay.num_seqs = 1;
  lay.kv_role = 0x01;
  lay.layer_index = 0xFFFFFFFF;
  lay.block_table_index_type = 0x00;
  d->buffer_count = 3;
  d->buffers[0] = Handle(4 * 4 * 2 * 8 * 2);
  d->buffers[1] = Handle(4 * 4);
  d->buffers[2] = Handle(2 * 4);
  return d;
}

DescriptorPtr CompositeOverlay() {
  // Overlay head [4, 4] (combine: add) with two members; owns no buffer.
  auto d = vectors::Dense(tt::kFloat32, {4, 4});
  d->layout_tag = layout_tag::kComposite;
  d->layout.composition_rule = 0x02;
  d->layout.combine_op = 0x02;
  d->layout.member_count = 2;
  d->buffer_count = 0;
  return d;
}

DescriptorPtr Hilbert() {
  auto d = vectors::Dense(tt::kFloat32, {4, 4});
  d->layout_tag = layout_tag::kHilbert;
  d->layout.hilbert_order = 2;
  d->layout.hilbert_rank = 2;
  return d;
}

DescriptorPtr MortonRank3() {
  auto d = vectors::Dense(tt::kInt8, {2, 4, 8});
  d->layout_tag = layout_tag::kMorton;
  d->layout.morton_bits[0] = 1;
  d->layout.morton_bits[1] = 2;
  d->layout.morton_bits[2] = 3;
  // With unequal morton_bits the codes of layouts/morton.md reach
  // 0b100110111 = 311 for [1, 3, 7]: more than 2^Σbits = 64 elements.
  d->buffers[0].byte_size = 312;
  return d;
}

DescriptorPtr ExtensionLayout() {
  // Private layout 0xF0 with 8 bytes of opaque data (zeros); no agreement
  // on its id, so strict mode refuses it (LAY-TAG-04).
  auto d = DenseF32();
  d->layout_tag = 0xF0;
  d->layout.extension_layout_id = 0x0123456789ABCDEFull;
  d->layout.extension_data_length = 8;
  return d;
}

// --- Builders. -------------------------------------------------------------

class Corpus {
 public:
  const std::vector<Entry>& entries() const { return entries_; }

  void Add(std::string name, Bytes bytes, std::string strict,
           std::string permissive, std::string what) {
    entries_.push_back({std::move(name), std::move(bytes), std::move(strict),
                        std::move(permissive), std::move(what)});
  }

  // `base` with one field changed through the descriptor, then encoded.
  void Field(const std::string& name, DescriptorPtr base,
             const std::function<void(TensorDescriptor&)>& change,
             const std::string& rule, const std::string& permissive,
             const std::string& what) {
    change(*base);
    Add("broken_" + name, vectors::Bytes(*base), rule, permissive, what);
  }

  // `base` encoded, then its bytes patched (for values the encoder cannot
  // produce: wrong lengths, rank 65, unassigned layout tags, ...).
  void Patch(const std::string& name, DescriptorPtr base,
             const std::function<void(const PartOffsets&, Bytes&)>& change,
             const std::string& rule, const std::string& permissive,
             const std::string& what) {
    Bytes bytes = vectors::Bytes(*base);
    change(Offsets(*base), bytes);
    Add("broken_" + name, std::move(bytes), rule, permissive, what);
  }

  void Always(const std::string& name, DescriptorPtr base,
              const std::function<void(TensorDescriptor&)>& change,
              const std::string& rule, const std::string& what) {
    Field(name, std::move(base), change, rule, rule, what);
  }
  void StrictOnly(const std::string& name, DescriptorPtr base,
                  const std::function<void(TensorDescriptor&)>& change,
                  const std::string& rule, const std::string& what) {
    Field(name, std::move(base), change, rule, kAccept, what);
  }
  void AlwaysPatch(
      const std::string& name, DescriptorPtr base,
      const std::function<void(const PartOffsets&, Bytes&)>& change,
      const std::string& rule, const std::string& what) {
    Patch(name, std::move(base), change, rule, rule, what);
  }

 private:
  std::vector<Entry> entries_;
};

void Put32(Bytes& b, size_t at, uint32_t v) { wire::StoreU32(&b[at], v); }

void AddValid(Corpus& c) {
  for (vectors::Named& v : vectors::AllValid()) {
    c.Add(v.name, vectors::Bytes(*v.descriptor), kAccept, kAccept,
          "vectors::AllValid()");
  }
  auto minor1 = DenseF32();
  minor1->version_minor = 1;
  minor1->trailing_length = 8;
  c.Add("minor1_trailing_bytes", vectors::Bytes(*minor1), kAccept, kAccept,
        "dense_f32_3x4 at minor version 1 with 8 trailing bytes (skipped)");
}

void AddLayouts(Corpus& c) {
  const struct {
    const char* name;
    DescriptorPtr (*make)();
    const char* strict;
    const char* what;
  } layouts[] = {
      {"layout_strided_neg_f32_3x4", StridedNegative, kAccept,
       "strided, strides [-4, 1], byte_offset 32"},
      {"layout_tiled_2level_f32_8x8", TiledTwoLevels, kAccept,
       "tiled 4x4 of strided 2x2 tiles with inner strides"},
      {"layout_tiled_depth8_f32_256", TiledDepth8, kAccept,
       "tiled, 8 nested levels (the default depth limit)"},
      {"layout_morton_int8_2x4x8", MortonRank3, kAccept,
       "Morton, morton_bits [1, 2, 3], 312-byte buffer"},
      {"layout_coo_f32_4x4", Coo, kAccept, "COO, nnz 3, sorted"},
      {"layout_csc_f32_3x3", Csc, kAccept, "CSC, nnz 2"},
      {"layout_csf_f32_2x3x4", Csf, kAccept, "CSF, mode_order [2, 0, 1]"},
      {"layout_block_paged_f16_16x2x8", BlockPaged, kAccept,
       "block-paged, 4 pages of 4 tokens"},
      {"layout_composite_overlay_4x4", CompositeOverlay, kAccept,
       "composite overlay head, 2 members"},
      {"layout_hilbert_f32_4x4", Hilbert, kAccept, "Hilbert order 2"},
      {"layout_extension_f0", ExtensionLayout, "LAY-TAG-04",
       "private layout 0xF0, unknown id, 8 data bytes"},
  };
  for (const auto& l : layouts) {
    c.Add(l.name, vectors::Bytes(*l.make()), l.strict, kAccept, l.what);
  }
}

void AddBrokenHeader(Corpus& c) {
  c.AlwaysPatch(
      "magic", DenseF32(), [](const PartOffsets&, Bytes& b) { b[3] = 'X'; },
      "DESC-HDR-02", "magic \"HRRX\"");
  c.Always(
      "version_major_2", DenseF32(),
      [](TensorDescriptor& d) { d.version_major = 2; }, "DESC-HDR-03",
      "version_major 2");
  c.Always(
      "version_major_0", DenseF32(),
      [](TensorDescriptor& d) { d.version_major = 0; }, "DESC-HDR-04",
      "version_major 0");
  c.AlwaysPatch(
      "length_19", DenseF32(),
      [](const PartOffsets&, Bytes& b) { Put32(b, 6, 19); }, "DESC-HDR-05",
      "descriptor_length 19");
  c.AlwaysPatch(
      "length_beyond_input", DenseF32(),
      [](const PartOffsets&, Bytes& b) {
        Put32(b, 6, static_cast<uint32_t>(b.size() + 8));
      },
      "DESC-HDR-01", "descriptor_length 8 bytes longer than the input");
  c.AlwaysPatch(
      "length_cuts_handle", DenseF32(),
      [](const PartOffsets& o, Bytes& b) { Put32(b, 6, o.handle(0) + 8); },
      "DESC-HDR-06", "descriptor_length ends inside buffer handle 0");
  c.AlwaysPatch(
      "length_over_limit", DenseF32(),
      [](const PartOffsets&, Bytes& b) { Put32(b, 6, (16u << 20) + 1); },
      "LIMIT-DESC-BYTES", "descriptor_length 16 MiB + 1");
  c.Always(
      "reserved_flag_bit5", DenseF32(),
      [](TensorDescriptor& d) { d.flags |= 1u << 5; }, "DESC-HDR-07",
      "flags bit 5 (reserved)");
  c.AlwaysPatch(
      "rank_65", DenseF32(),
      [](const PartOffsets&, Bytes& b) { Put32(b, 16, 65); }, "DESC-SHP-01",
      "rank 65");
  c.AlwaysPatch(
      "layout_tag_00", DenseF32(),
      [](const PartOffsets&, Bytes& b) { b[15] = 0x00; }, "LAY-TAG-01",
      "layout_tag 0x00");
  c.Patch(
      "layout_tag_0c", DenseF32(),
      [](const PartOffsets&, Bytes& b) { b[15] = 0x0C; }, "LAY-TAG-02", kAccept,
      "layout_tag 0x0C (unassigned)");
  c.Always(
      "scalar_column_major", vectors::Dense(tt::kFloat64, {}),
      [](TensorDescriptor& d) { d.layout_tag = layout_tag::kColumnMajor; },
      "DESC-SHP-02", "rank 0 with layout column-major");
  c.Always(
      "type_tag_00", DenseF32(), [](TensorDescriptor& d) { d.type_tag = 0; },
      "TYPE-01", "type_tag 0x00");
  c.Always(
      "type_tag_90", DenseF32(), [](TensorDescriptor& d) { d.type_tag = 0x90; },
      "TYPE-02", "type_tag 0x90 (reserved)");
  c.Always(
      "type_tag_47", DenseF32(), [](TensorDescriptor& d) { d.type_tag = 0x47; },
      "TYPE-03", "type_tag 0x47");
  c.StrictOnly(
      "type_tag_05", DenseF32(), [](TensorDescriptor& d) { d.type_tag = 0x05; },
      "TYPE-04", "type_tag 0x05 (unassigned)");
  c.Always(
      "private_type_without_section", DenseF32(),
      [](TensorDescriptor& d) { d.type_tag = 0xF3; }, "TYPE-EXT-01",
      "type_tag 0xF3 (agreed) without HAS_EXTENSION_TYPE");
  c.StrictOnly(
      "trailing_bytes_minor0", DenseF32(),
      [](TensorDescriptor& d) { d.trailing_length = 8; }, "DESC-HDR-08",
      "8 undeclared trailing bytes at minor version 0");
}

void AddBrokenBuffers(Corpus& c) {
  auto handle = [&c](const std::string& name,
                     const std::function<void(BufferHandle&)>& change,
                     const std::string& rule, const std::string& permissive,
                     const std::string& what) {
    c.Field(
        name, DenseF32(), [&](TensorDescriptor& d) { change(d.buffers[0]); },
        rule, permissive, what);
  };
  handle(
      "alignment_48", [](BufferHandle& h) { h.alignment = 48; }, "BUF-04",
      "BUF-04", "alignment 48 (not a power of two)");
  handle(
      "alignment_32", [](BufferHandle& h) { h.alignment = 32; }, "BUF-05",
      "BUF-05", "alignment 32 for a non-empty buffer");
  handle(
      "device_tag_ff", [](BufferHandle& h) { h.device_tag = 0xFF; }, "BUF-06",
      "BUF-06", "device_tag 0xFF");
  handle(
      "device_tag_09", [](BufferHandle& h) { h.device_tag = 0x09; }, "BUF-07",
      "BUF-07", "device_tag 0x09 (reserved)");
  handle(
      "device_tag_f0", [](BufferHandle& h) { h.device_tag = 0xF0; }, "BUF-08",
      kAccept, "device_tag 0xF0 (private, no agreement)");
  handle(
      "sync_mode_03", [](BufferHandle& h) { h.sync_mode = 0x03; }, "BUF-09",
      "BUF-09", "sync_mode 0x03 (reserved)");
  handle(
      "cpu_sync_event", [](BufferHandle& h) { h.sync_mode = 0x01; }, "BUF-10",
      "BUF-10", "CPU buffer with sync_mode EVENT");
  handle(
      "memory_class_04", [](BufferHandle& h) { h.memory_class = 0x04; },
      "BUF-11", "BUF-11", "memory_class 0x04 (reserved)");
  handle(
      "cpu_memory_peer", [](BufferHandle& h) { h.memory_class = 0x03; },
      "BUF-14", "BUF-14", "CPU buffer with memory_class PEER");
  handle(
      "handle_reserved", [](BufferHandle& h) { h.reserved = 0x01; }, "BUF-15",
      "BUF-15", "handle byte 15 = 0x01");
  handle(
      "buffer_too_small", [](BufferHandle& h) { h.byte_size = 47; },
      "BUF-SZ-01", "BUF-SZ-01", "buffer 0 holds 47 of 48 bytes");
  c.Always(
      "buffer_count_0", DenseF32(),
      [](TensorDescriptor& d) { d.buffer_count = 0; }, "BUF-01",
      "buffer_count 0");
  c.Always(
      "two_buffers_unquantized", DenseF32(),
      [](TensorDescriptor& d) { d.buffers[d.buffer_count++] = Handle(0); },
      "BUF-02", "unquantized dense tensor with 2 buffers");
  c.Always(
      "byte_offset_past_buffer", DenseF32(),
      [](TensorDescriptor& d) { d.byte_offset = 49; }, "DESC-SHP-03",
      "byte_offset 49 > byte_size 48");
  c.StrictOnly(
      "empty_nonempty_buffer", vectors::Dense(tt::kFloat32, {0, 4}),
      [](TensorDescriptor& d) { d.buffers[0].byte_size = 16; }, "DESC-SHP-05",
      "[0, 4] tensor with a 16-byte buffer");
}

void AddBrokenQuantization(Corpus& c) {
  // Header bytes, patched in place (one field, same length). `o.quantization`
  // is the quantization_length prefix; the scheme header follows it.
  auto header = [&c](const std::string& name, size_t field, uint8_t value,
                     const std::string& rule, const std::string& permissive,
                     const std::string& what) {
    c.Patch(
        name, vectors::PerTensorInt8(),
        [=](const PartOffsets& o, Bytes& b) {
          b[o.quantization + 4 + field] = value;
        },
        rule, permissive, what);
  };
  header("scheme_tag_00", 0, 0x00, "QNT-HDR-03", "QNT-HDR-03",
         "per_tensor_int8, scheme_tag 0x00");
  header("scheme_tag_60", 0, 0x60, "QNT-HDR-04", kAccept,
         "per_tensor_int8, scheme_tag 0x60 (reserved)");
  header("scheme_tag_06", 0, 0x06, "QNT-HDR-05", kAccept,
         "per_tensor_int8, scheme_tag 0x06 (unassigned)");
  header("scheme_tag_f0", 0, 0xF0, "QNT-HDR-06", kAccept,
         "per_tensor_int8, scheme_tag 0xF0 (private, no agreement)");
  header("scheme_version_2", 1, 0x02, "QNT-HDR-07", "QNT-HDR-07",
         "per_tensor_int8, scheme_version 2");
  header("scheme_version_0", 1, 0x00, "QNT-HDR-08", kAccept,
         "per_tensor_int8, scheme_version 0");
  header("scheme_flags_01", 2, 0x01, "QNT-HDR-09", "QNT-HDR-09",
         "per_tensor_int8, scheme flags 0x0001");

  auto length =
      [&c](const std::string& name,
           const std::function<uint32_t(const PartOffsets&, const Bytes&)>&
               value,
           const std::string& rule, const std::string& what) {
        c.AlwaysPatch(
            name, vectors::PerTensorInt8(),
            [=](const PartOffsets& o, Bytes& b) {
              Put32(b, o.quantization, value(o, b));
            },
            rule, what);
      };
  length(
      "quant_length_3", [](const PartOffsets&, const Bytes&) { return 3u; },
      "QNT-HDR-01", "quantization_length 3");
  length(
      "quant_length_12", [](const PartOffsets&, const Bytes&) { return 12u; },
      "QNT-HDR-02", "quantization_length 12 for a 16-byte scheme");
  length(
      "quant_length_4097",
      [](const PartOffsets&, const Bytes&) { return 4097u; }, "LIMIT-QNT-BYTES",
      "quantization_length 4097");
  length(
      "quant_length_past_end",
      [](const PartOffsets& o, const Bytes& b) {
        return static_cast<uint32_t>(b.size() - o.quantization);
      },
      "DESC-HDR-06", "quantization section ends beyond descriptor_length");

  // Per-tensor affine.
  c.Always(
      "pta_scale_zero", vectors::PerTensorInt8(),
      [](TensorDescriptor& d) { d.quantization.scale = 0.0f; }, "QNT-PTA-01",
      "per-tensor scale 0");
  c.Always(
      "pta_scale_nan", vectors::PerTensorInt8(),
      [](TensorDescriptor& d) {
        d.quantization.scale = std::numeric_limits<float>::quiet_NaN();
      },
      "QNT-PTA-01", "per-tensor scale NaN");
  c.Always(
      "pta_zero_point_200", vectors::PerTensorInt8(),
      [](TensorDescriptor& d) { d.quantization.zero_point = 200; },
      "QNT-PTA-02", "int8 zero_point 200");
  c.Always(
      "pta_reserved", vectors::PerTensorInt8(),
      [](TensorDescriptor& d) { d.quantization.reserved[3] = 0x01; },
      "QNT-PTA-03", "per-tensor reserved byte 15 = 0x01");
  c.Always(
      "pta_storage_f32", vectors::PerTensorInt8(),
      [](TensorDescriptor& d) { d.type_tag = tt::kFloat32; }, "QNT-PTA-04",
      "per-tensor affine on float32 storage");

  // Per-channel affine.
  c.Always(
      "pca_axis_2", vectors::PerChannelAsymInt8(),
      [](TensorDescriptor& d) { d.quantization.axis = 2; }, "QNT-PCA-01",
      "per-channel axis 2 of rank 2");
  c.Always(
      "pca_scale_type_f16", vectors::PerChannelAsymInt8(),
      [](TensorDescriptor& d) { d.quantization.scale_type_tag = tt::kFloat16; },
      "QNT-PCA-03", "per-channel scale_type_tag float16");
  c.Always(
      "pca_reserved", vectors::PerChannelAsymInt8(),
      [](TensorDescriptor& d) { d.quantization.reserved[1] = 0x01; },
      "QNT-PCA-04", "per-channel reserved byte 18 = 0x01");
  c.Always(
      "pca_symmetric_with_zp", vectors::PerChannelSymInt4(),
      [](TensorDescriptor& d) { d.quantization.zero_point_buffer_index = 1; },
      "QNT-PCA-05", "SYMMETRIC with zero_point_buffer_index 1");
  c.Always(
      "pca_zp_index_7", vectors::PerChannelAsymInt8(),
      [](TensorDescriptor& d) { d.quantization.zero_point_buffer_index = 7; },
      "QNT-PCA-06", "zero_point_buffer_index 7 of 3 buffers");
  c.Always(
      "pca_scale_index_0", vectors::PerChannelAsymInt8(),
      [](TensorDescriptor& d) { d.quantization.scale_buffer_index = 0; },
      "QNT-PLC-02", "scale_buffer_index 0 (the data buffer)");
  c.Always(
      "pca_scale_size", vectors::PerChannelAsymInt8(),
      [](TensorDescriptor& d) { d.buffers[1].byte_size = 12; }, "QNT-PCA-08",
      "scale buffer 12 bytes for 4 channels");
  c.Always(
      "pca_zp_size", vectors::PerChannelAsymInt8(),
      [](TensorDescriptor& d) { d.buffers[2].byte_size = 12; }, "QNT-PCA-09",
      "zero-point buffer 12 bytes for 4 channels");
  c.Always(
      "pca_param_on_cuda", vectors::PerChannelAsymInt8(),
      [](TensorDescriptor& d) { d.buffers[1].device_tag = device_tag::kCuda; },
      "QNT-PLC-05", "scale buffer on CUDA, data on CPU");
  c.Always(
      "pca_shared_size", vectors::PerChannelShared(),
      [](TensorDescriptor& d) { d.buffers[1].byte_size = 20; }, "QNT-PLC-04",
      "shared [scales | zero-points] buffer 20 of 24 bytes");

  // Per-block affine.
  c.Always(
      "pba_block_size_3", vectors::PerBlockAsymUInt4(),
      [](TensorDescriptor& d) { d.quantization.block_size = 3; }, "QNT-PBA-02",
      "per-block block_size 3");
  c.Always(
      "pba_block_size_128", vectors::PerBlockAsymUInt4(),
      [](TensorDescriptor& d) { d.quantization.block_size = 128; },
      "QNT-PBA-03", "block_size 128 > shape[axis] 100");
  c.Always(
      "pba_scale_type_u8", vectors::PerBlockAsymUInt4(),
      [](TensorDescriptor& d) { d.quantization.scale_type_tag = tt::kUInt8; },
      "QNT-PBA-05", "per-block scale_type_tag uint8");
  c.Always(
      "pba_storage_int16", vectors::PerBlockAsymUInt4(),
      [](TensorDescriptor& d) { d.type_tag = tt::kInt16; }, "QNT-PBA-09",
      "per-block affine on int16 storage");
  c.Always(
      "pba_scale_size", vectors::PerBlockAsymUInt4(),
      [](TensorDescriptor& d) { d.buffers[1].byte_size -= 2; }, "QNT-PBA-10",
      "per-block scale buffer one float16 short");
  c.Always(
      "pba_data_unpadded", vectors::PerBlockAsymUInt4(),
      [](TensorDescriptor& d) { d.buffers[0].byte_size = 8 * 100 / 2; },
      "BUF-SZ-11", "data buffer sized for 100 columns, not the padded 128");

  // NF4 and MXFP.
  c.Always(
      "nf4_int4_storage", vectors::Nf4UInt4(),
      [](TensorDescriptor& d) { d.type_tag = tt::kInt4; }, "QNT-NF4-05",
      "NF4 on int4 storage (uint4 only)");
  c.Always(
      "nf4_block_size_4", vectors::Nf4UInt4(),
      [](TensorDescriptor& d) { d.quantization.block_size = 4; }, "QNT-NF4-02",
      "NF4 block_size 4");
  c.Always(
      "mxfp_block_size_8", vectors::MxfpE4m3(),
      [](TensorDescriptor& d) { d.quantization.block_size = 8; }, "QNT-MX-02",
      "MXFP block_size 8");
  c.Always(
      "mxfp_axis_not_multiple", vectors::MxfpE4m3(),
      [](TensorDescriptor& d) { d.quantization.block_size = 128; }, "QNT-MX-04",
      "MXFP shape[axis] 64, block_size 128");
  c.Always(
      "mxfp_scale_size", vectors::MxfpE4m3(),
      [](TensorDescriptor& d) { d.buffers[1].byte_size = 7; }, "QNT-MX-06",
      "MXFP scale buffer 7 of 8 bytes");
}

void AddBrokenSections(Corpus& c) {
  c.Always(
      "shard_offset_exceeds", vectors::WithShard(),
      [](TensorDescriptor& d) { d.shard.shard_offset[1] = 5; }, "DESC-SHD-01",
      "shard_offset[1] 5 + shape 4 > parent 8");
  c.Always(
      "shard_parent_dynamic", vectors::WithShard(),
      [](TensorDescriptor& d) { d.shard.parent_shape[0] = kDynamicDim; },
      "DESC-SHD-02", "parent_shape[0] dynamic");
  c.Always(
      "stats_mask_bit6", vectors::WithStatistics(),
      [](TensorDescriptor& d) { d.statistics.computed_mask |= 1u << 6; },
      "DESC-STAT-01", "computed_mask bit 6");
  c.Always(
      "stats_reserved", vectors::WithStatistics(),
      [](TensorDescriptor& d) { d.statistics.reserved = 1; }, "DESC-STAT-02",
      "statistics reserved u32 = 1");
  c.StrictOnly(
      "stats_sparsity_2", vectors::WithStatistics(),
      [](TensorDescriptor& d) { d.statistics.sparsity_ratio = 2.0; },
      "DESC-STAT-06", "sparsity_ratio 2.0");
  c.Always(
      "ext_bit_width_0", vectors::WithExtensionType(),
      [](TensorDescriptor& d) { d.extension_type.bit_width = 0; },
      "TYPE-EXT-02", "extension bit_width 0");
  c.Always(
      "ext_bit_width_3", vectors::WithExtensionType(),
      [](TensorDescriptor& d) { d.extension_type.bit_width = 3; },
      "TYPE-EXT-04", "extension bit_width 3");
  c.Always(
      "composite_role_02", vectors::WithCompositeMember(),
      [](TensorDescriptor& d) { d.composite_member.member_role = 0x02; },
      "DESC-CMS-01", "member_role 0x02");
  c.Always(
      "composite_reserved", vectors::WithCompositeMember(),
      [](TensorDescriptor& d) { d.composite_member.reserved[14] = 0x01; },
      "DESC-CMS-02", "composite member reserved byte 15 = 0x01");
}

void AddBrokenLayouts(Corpus& c) {
  c.Always(
      "tiled_outer_04", TiledTwoLevels(),
      [](TensorDescriptor& d) { d.layout.tiled[0].outer_layout = 0x04; },
      "LAY-TIL-02", "tiled outer_layout 0x04");
  c.AlwaysPatch(
      "tiled_depth_9", TiledDepth8(),
      [](const PartOffsets& o, Bytes& b) {
        // Level 8's inner_layout (the last byte but two of the layout block,
        // which ends at the buffer table) asks for a ninth level.
        b[o.buffer_table - 3] = layout_tag::kTiled;
      },
      "LAY-TIL-05", "tiled nesting 9 levels deep");
  c.Always(
      "tiled_tile_shape_0", TiledTwoLevels(),
      [](TensorDescriptor& d) { d.layout.tiled[1].tile_shape[0] = 0; },
      "LAY-TIL-01", "tiled level 2 tile_shape[0] 0");
  c.Always(
      "tiled_reserved", TiledTwoLevels(),
      [](TensorDescriptor& d) { d.layout.tiled[0].reserved[1] = 0x01; },
      "LAY-TIL-04", "tiled level 1 reserved byte = 0x01");
  c.Always(
      "strided_before_buffer", StridedNegative(),
      [](TensorDescriptor& d) { d.byte_offset = 24; }, "BUF-SZ-02",
      "strides [-4, 1] with byte_offset 24: first element at byte -8");
  c.Always(
      "morton_codes_past_2_pow_bits", MortonRank3(),
      [](TensorDescriptor& d) { d.buffers[0].byte_size = 64; }, "BUF-SZ-04",
      "Morton bits [1, 2, 3] with 2^6 elements: codes reach 311");
  c.Always(
      "morton_bits_0", MortonRank3(),
      [](TensorDescriptor& d) { d.layout.morton_bits[1] = 0; }, "LAY-MOR-01",
      "morton_bits[1] 0");
  c.Always(
      "hilbert_order_0", Hilbert(),
      [](TensorDescriptor& d) { d.layout.hilbert_order = 0; }, "LAY-HIL-01",
      "hilbert_order 0");
  c.StrictOnly(
      "coo_is_sorted_02", Coo(),
      [](TensorDescriptor& d) { d.layout.is_sorted = 0x02; }, "LAY-COO-02",
      "COO is_sorted 0x02");
  c.Always(
      "coo_reserved", Coo(),
      [](TensorDescriptor& d) { d.layout.sparse_reserved[6] = 0x01; },
      "LAY-COO-03", "COO reserved byte 15 = 0x01");
  c.Always(
      "csc_reserved", Csc(),
      [](TensorDescriptor& d) { d.layout.sparse_reserved[7] = 0x01; },
      "LAY-CSC-02", "CSC reserved byte 15 = 0x01");
  c.StrictOnly(
      "csf_mode_order_repeated", Csf(),
      [](TensorDescriptor& d) { d.layout.mode_order[2] = 2; }, "LAY-CSF-02",
      "CSF mode_order [2, 0, 2]");
  c.Always(
      "paged_kv_role_03", BlockPaged(),
      [](TensorDescriptor& d) { d.layout.kv_role = 0x03; }, "LAY-BPG-04",
      "block-paged kv_role 0x03");
  c.Always(
      "composite_rule_00", CompositeOverlay(),
      [](TensorDescriptor& d) { d.layout.composition_rule = 0x00; },
      "LAY-CMP-01", "composition_rule 0x00");
  // Extents whose arithmetic overflowed 128 bits or was truncated to 64
  // (found by fuzzing; fixed in 723db71).
  c.Always(
      "strided_extent_past_2_64", StridedNegative(),
      [](TensorDescriptor& d) {
        d.layout.strides[0] = INT64_MAX;  // highest element 2^64 + 3
        d.layout.strides[1] = 5;
        d.shape[1] = 2;
        d.byte_offset = 0;
        d.buffers[0].byte_size = 16;
      },
      "BUF-SZ-02", "strides [2^63-1, 5] on [3, 2]: element 2^64+3, 16 bytes");
  c.Always(
      "strided_extent_sum_overflow", StridedNegative(),
      [](TensorDescriptor& d) {
        d.shape[0] = d.shape[1] = 0xFFFFFFFFFFFFFFFEull;
        d.layout.strides[0] = d.layout.strides[1] = INT64_MAX;
        d.byte_offset = 0;
        d.buffers[0].byte_size = 64;
      },
      "BUF-SZ-02",
      "[2^64-2, 2^64-2] with strides 2^63-1: spans sum past 2^127");
  c.Always(
      "strided_extent_wide_extension_type", vectors::WithExtensionType(),
      [](TensorDescriptor& d) {
        d.layout_tag = layout_tag::kStrided;
        d.shape[0] = uint64_t{1} << 36;
        d.layout.strides[0] = -INT64_MAX;
        d.extension_type.bit_width = 0x80000000u;
        d.extension_type.packing_factor = 1;
        d.buffers[0].byte_size = uint64_t{1} << 40;
      },
      "BUF-SZ-02",
      "2^31-bit extension type, stride -(2^63-1): starts 2^99 "
      "elements before the buffer");
  c.Always(
      "tiled_extent_overflow", DenseF32(),
      [](TensorDescriptor& d) {
        d.layout_tag = layout_tag::kTiled;
        d.shape[0] = d.shape[1] = 4;
        d.buffers[0].byte_size = 64;
        d.layout.tiled_depth = 1;
        TiledLevel& level = d.layout.tiled[0];
        level.tile_shape[0] = 0xFFFFFC0000000001ull;
        level.tile_shape[1] = 0xCC00000000000002ull;
        level.outer_layout = layout_tag::kRowMajor;
        level.inner_layout = layout_tag::kRowMajor;
      },
      "BUF-SZ-03", "tile_shape [~2^64, ~2^63.7]: tile size past 2^127");
  c.AlwaysPatch(
      "ext_layout_data_limit", ExtensionLayout(),
      [](const PartOffsets& o, Bytes& b) { Put32(b, o.layout + 8, 16385); },
      "LIMIT-EXT-DATA", "extension_data_length 16385");
}

void AddTruncated(Corpus& c) {
  const struct {
    const char* name;
    DescriptorPtr (*make)();
  } bases[] = {
      {"dense_f32_3x4", DenseF32},
      {"per_block_asym_uint4", vectors::PerBlockAsymUInt4},
      {"everything", vectors::Everything},
  };
  for (const auto& base : bases) {
    Bytes b = vectors::Bytes(*base.make());
    b.resize(b.size() / 2);
    c.Add(std::string("broken_truncated_half_") + base.name, std::move(b),
          "DESC-HDR-01", "DESC-HDR-01",
          std::string(base.name) + ", first half of its bytes");
  }
  Bytes header = vectors::Bytes(*DenseF32());
  header.resize(10);
  c.Add("broken_truncated_10", std::move(header), "DESC-HDR-01", "DESC-HDR-01",
        "dense_f32_3x4, first 10 bytes");
  c.Add("broken_empty", {}, "DESC-HDR-01", "DESC-HDR-01", "no bytes at all");
}

Corpus Build() {
  Corpus c;
  AddValid(c);
  AddLayouts(c);
  AddBrokenHeader(c);
  AddBrokenBuffers(c);
  AddBrokenQuantization(c);
  AddBrokenSections(c);
  AddBrokenLayouts(c);
  AddTruncated(c);
  return c;
}

// --- Output and checks. ----------------------------------------------------

bool WriteFile(const std::filesystem::path& path, absl::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) {
    std::fprintf(stderr, "corpus_gen: cannot write %s\n", path.c_str());
    return false;
  }
  return true;
}

absl::string_view AsText(const Bytes& b) {
  return absl::string_view(reinterpret_cast<const char*>(b.data()), b.size());
}

int Write(const std::filesystem::path& dir, const Corpus& corpus) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    std::fprintf(stderr, "corpus_gen: cannot create %s: %s\n", dir.c_str(),
                 ec.message().c_str());
    return 1;
  }
  std::string manifest =
      "# Written by //tools/testing:corpus_gen; do not edit. Outcomes are "
      "for vectors::AgreedOptions(mode):\n"
      "# the rule id that rejects the file, or accept.\n"
      "# file\tstrict\tpermissive\twhat\n";
  bool ok = true;
  for (const Entry& e : corpus.entries()) {
    ok &= WriteFile(dir / (e.name + ".bin"), AsText(e.bytes));
    manifest += e.name + ".bin\t" + e.strict + "\t" + e.permissive + "\t" +
                e.what + "\n";
  }
  ok &= WriteFile(dir / "MANIFEST.tsv", manifest);
  return ok ? 0 : 1;
}

std::string Outcome(const Bytes& bytes, Mode mode) {
  absl::StatusOr<TensorDescriptor> d =
      Decode(bytes, vectors::AgreedOptions(mode));
  if (d.ok()) return kAccept;
  std::optional<absl::string_view> id = RuleIdOf(d.status());
  return id ? std::string(*id) : d.status().ToString();
}

int Check(const Corpus& corpus) {
  int bad = 0;
  for (const Entry& e : corpus.entries()) {
    const std::pair<Mode, const std::string*> modes[] = {
        {Mode::kStrict, &e.strict}, {Mode::kPermissive, &e.permissive}};
    for (const auto& [mode, want] : modes) {
      const std::string got = Outcome(e.bytes, mode);
      if (got != *want) {
        std::fprintf(stderr, "%s (%s): want %s, got %s\n", e.name.c_str(),
                     mode == Mode::kStrict ? "strict" : "permissive",
                     want->c_str(), got.c_str());
        ++bad;
      }
    }
  }
  std::fprintf(stderr, "corpus_gen --check: %zu vectors, %d mismatches\n",
               corpus.entries().size(), bad);
  return bad == 0 ? 0 : 1;
}

}  // namespace
}  // namespace hurray

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: corpus_gen OUTDIR | corpus_gen --check\n");
    return 2;
  }
  const hurray::Corpus corpus = hurray::Build();
  if (std::string(argv[1]) == "--check") return hurray::Check(corpus);
  return hurray::Write(argv[1], corpus);
}
