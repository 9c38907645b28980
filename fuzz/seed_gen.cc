// Writes the generated seeds (seed_*.bin) of the fuzz targets added for
// issue 5 into CORPUS_ROOT/<target>/, replacing earlier seed_*.bin files;
// other files there (regression_*, inputs merged by fuzz/campaign.sh) are
// left alone.
//
//   bazel run //fuzz:seed_gen -- "$PWD/corpus"
//
// Reads CORPUS_ROOT/descriptors/*.bin (//tools/testing:corpus_gen's vectors,
// valid and broken one rule at a time) and CORPUS_ROOT/golden/files/basic.hrry.
//
// Seeds per target (each input format is described in its fuzz/*_fuzz.cc):
//   quant_roundtrip_fuzz     every scheme of every valid vector, and one
//                            quantization descriptor per QNT-HDR/PTA/PCA/
//                            PBA/NF4/MX rule, in both modes
//   descriptor_struct_fuzz   every base descriptor unchanged, and each field
//                            mutation on a few bases
//   stream_reader_fuzz       every container vector with its buffers, whole
//                            container streams, composites, truncations,
//                            tight limits, every corpus descriptor
//   hrry_file_fuzz           the golden file and written files (KV of every
//                            type, sorted, no CRC, composites, empty), each
//                            whole and with one fault at structural places
//                            (every buffer is 4096-aligned: files are kept
//                            to a few tensors so inputs stay small)
//   qnn_import_fuzz          each container width, signedness, bitwidth,
//                            mapping, with and without offsets, and errors
//   data_checks_fuzz         COO (sorted, unsorted), CSR, CSC, CSF and
//                            block-paged (u32, u64) with valid index data,
//                            and each with one index entry broken per rule
#include <dirent.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "parser/descriptor.h"
#include "parser/element_type.h"
#include "parser/quantization.h"
#include "parser/wire.h"
#include "stream/container/hrry_writer.h"
#include "stream/container/kv_builder.h"
#include "stream/container/testing/file_test_util.h"
#include "stream/container/testing/test_util.h"
#include "tests/vectors.h"

namespace hurray::fuzz {
namespace {

using Bytes = std::vector<uint8_t>;

std::string root;  // CORPUS_ROOT
int written = 0;

void Die(const std::string& what) {
  std::fprintf(stderr, "seed_gen: %s\n", what.c_str());
  std::exit(1);
}

std::vector<std::string> List(const std::string& dir, const char* suffix) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() > std::strlen(suffix) &&
        name.compare(name.size() - std::strlen(suffix), std::string::npos,
                     suffix) == 0) {
      out.push_back(name);
    }
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

Bytes ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) Die("cannot read " + path);
  return Bytes(std::istreambuf_iterator<char>(in), {});
}

void Clear(const std::string& target) {
  const std::string dir = root + "/" + target;
  for (const std::string& f : List(dir, ".bin")) {
    if (f.rfind("seed_", 0) == 0) std::remove((dir + "/" + f).c_str());
  }
}

void Write(const std::string& target, const std::string& name,
           const Bytes& header, const Bytes& body) {
  const std::string path = root + "/" + target + "/seed_" + name + ".bin";
  std::ofstream out(path, std::ios::binary);
  if (!out) Die("cannot write " + path);
  out.write(reinterpret_cast<const char*>(header.data()), header.size());
  out.write(reinterpret_cast<const char*>(body.data()), body.size());
  ++written;
}

Bytes Cat(Bytes a, const Bytes& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// --- quant_roundtrip_fuzz ---------------------------------------------------

void QuantSeeds() {
  const std::string t = "quant_roundtrip_fuzz";
  Clear(t);
  // Headers: options, extra length, storage tag, base.
  const Bytes headers[] = {{0x00, 0x00, type_tag::kInt8, 0x00},
                           {0x01, 0x04, type_tag::kUInt4, 0x21},
                           {0x02, 0x10, type_tag::kInt16, 0x07},
                           {0x03, 0xFF, 0x55, 0xFF}};
  int h = 0;
  for (const vectors::Named& v : vectors::AllValid()) {
    if (!v.descriptor->has(flag::kHasQuantization)) continue;
    QuantizationDescriptor q = v.descriptor->quantization;
    q.extra_length = 0;
    Write(t, v.name, headers[h++ % 4], q.EncodeToVector());
  }
  // One per rule, from a valid descriptor of the scheme.
  auto pta = [] { return QuantizationDescriptor(PerTensorAffine{0.5f, 3}); };
  auto pca = [] {
    return QuantizationDescriptor(PerChannelAffine{1, 1, kNoBufferIndex});
  };
  auto pca_asym = [] {
    return QuantizationDescriptor(PerChannelAffine{0, 1, 2});
  };
  auto pba = [] {
    return QuantizationDescriptor(
        PerBlockAffine{1, 32, 1, 2, type_tag::kFloat16});
  };
  auto pba_sym = [] {
    return QuantizationDescriptor(
        PerBlockAffine{0, 16, 1, kNoBufferIndex, type_tag::kBFloat16});
  };
  auto nf4 = [] { return QuantizationDescriptor(Nf4{1, 64, 1}); };
  auto mx = [] { return QuantizationDescriptor(Mxfp{1, 32, 1}); };
  struct Case {
    const char* name;
    QuantizationDescriptor q;
  };
  std::vector<Case> cases;
  auto add = [&cases](const char* name, QuantizationDescriptor q) {
    cases.push_back({name, q});
  };
  add("valid_pca_asym", pca_asym());
  add("valid_pba_sym", pba_sym());
  {
    auto q = pta();
    q.scheme_tag = 0x00;
    add("hdr03_tag0", q);
  }
  {
    auto q = pta();
    q.scheme_tag = 0xFF;
    add("hdr03_tagff", q);
  }
  {
    auto q = pta();
    q.scheme_tag = 0x70;
    add("hdr04_reserved", q);
  }
  {
    auto q = pta();
    q.scheme_tag = 0x10;
    add("hdr05_unassigned", q);
  }
  {
    auto q = pta();
    q.scheme_tag = 0xF5;
    add("hdr06_private", q);
  }
  {
    auto q = pca();
    q.scheme_version = 2;
    add("hdr07_version2", q);
  }
  {
    auto q = pba();
    q.scheme_version = 0;
    add("hdr08_version0", q);
  }
  {
    auto q = nf4();
    q.flags = 0x8000;
    add("hdr09_flags", q);
  }
  {
    auto q = pca();
    q.flags = 0x0003;
    add("hdr09_pca_flags", q);
  }
  {
    auto q = pta();
    q.scale = 0.0f;
    add("pta01_zero_scale", q);
  }
  {
    auto q = pta();
    q.scale = -1.0f / 0.0f;
    add("pta01_inf_scale", q);
  }
  {
    auto q = pta();
    q.reserved[2] = 1;
    add("pta03_reserved", q);
  }
  {
    auto q = pta();
    q.zero_point = -200;
    add("pta_zp_out_of_int8", q);
  }
  {
    auto q = pca();
    q.scale_type_tag = type_tag::kFloat16;
    add("pca03_scale_type", q);
  }
  {
    auto q = pca();
    q.reserved[1] = 9;
    add("pca04_reserved", q);
  }
  {
    auto q = pca();
    q.zero_point_buffer_index = 2;
    add("pca05_sym_zp", q);
  }
  {
    auto q = pca_asym();
    q.zero_point_buffer_index = kNoBufferIndex;
    add("pca06_asym_no_zp", q);
  }
  {
    auto q = pca_asym();
    q.scale_buffer_index = 0;
    add("plc02_scale_index0", q);
  }
  {
    auto q = pca_asym();
    q.scale_buffer_index = kNoBufferIndex;
    add("plc01_scale_sentinel", q);
  }
  {
    auto q = pba();
    q.block_size = 3;
    add("pba02_block3", q);
  }
  {
    auto q = pba();
    q.block_size = 1;
    add("pba02_block1", q);
  }
  {
    auto q = pba();
    q.scale_type_tag = type_tag::kInt8;
    add("pba05_scale_type", q);
  }
  {
    auto q = pba();
    q.reserved[0] = 1;
    add("pba06_reserved", q);
  }
  {
    auto q = pba_sym();
    q.zero_point_buffer_index = 3;
    add("pba07_sym_zp", q);
  }
  {
    auto q = pba();
    q.zero_point_buffer_index = 0;
    add("plc02_zp_index0", q);
  }
  {
    auto q = nf4();
    q.block_size = 4;
    add("nf402_block4", q);
  }
  {
    auto q = nf4();
    q.block_size = 48;
    add("nf402_block48", q);
  }
  {
    auto q = mx();
    q.block_size = 8;
    add("mx02_block8", q);
  }
  {
    auto q = mx();
    q.block_size = 4096;
    add("mx02_block4096", q);
  }
  {
    auto q = mx();
    q.scale_buffer_index = 0;
    add("mx_plc02", q);
  }
  for (const Case& c : cases) {
    Write(t, c.name, headers[h++ % 4], c.q.EncodeToVector());
    Write(t, std::string(c.name) + "_permissive", {0x01, 0x00, 0x10, 0x03},
          c.q.EncodeToVector());
  }
  Write(t, "private_agreed", {0x02, 0, 0, 0}, {0xF5, 0x01, 0x00, 0x00});
  // Truncated: QNT-HDR-01 and QNT-HDR-02.
  Write(t, "hdr01_short", {0, 0, 0, 0}, {0x01, 0x01, 0x00});
  Bytes short_pca = pca().EncodeToVector();
  short_pca.resize(10);
  Write(t, "hdr02_short_payload", {0, 0, 0, 0}, short_pca);
  Write(t, "empty", {0, 0, 0, 0}, {});
}

// --- descriptor_struct_fuzz -------------------------------------------------
// FuzzedDataProvider reads integers from the end of the input: the seed is
// `front` followed by the integer bytes in reverse order of consumption.

Bytes Provider(const Bytes& front, const Bytes& integers) {
  Bytes out = front;
  out.insert(out.end(), integers.rbegin(), integers.rend());
  return out;
}

void StructSeeds() {
  const std::string t = "descriptor_struct_fuzz";
  Clear(t);
  const std::vector<vectors::Named> bases = vectors::AllValid();
  const uint8_t n = static_cast<uint8_t>(bases.size());
  // Unchanged bases (pick, mutate = false).
  for (uint8_t i = 0; i < n; ++i) {
    Write(t, "base_" + bases[i].name, {}, Provider({}, {i, 0}));
  }
  // Dense from the provider (pick = n), and factory-quantized (n + 1):
  // rank, dims, type, layout; then the factory's choices.
  for (uint8_t type : {type_tag::kFloat32, type_tag::kInt8, type_tag::kUInt4,
                       type_tag::kFloat8E4M3, type_tag::kInt4}) {
    for (uint8_t scheme = 0; scheme < 7; ++scheme) {
      // pick, rank 2, dim (not dynamic) 8, dim 64, type, layout, then
      // QuantizeFrom: axis 1, block (interesting value 32), scale type,
      // scheme, ...
      const Bytes ints = {static_cast<uint8_t>(n + 1),
                          2,
                          1,
                          8,
                          1,
                          64,
                          type,
                          0,
                          1,
                          0,
                          10,
                          0,
                          scheme,
                          1,
                          0,
                          1,
                          0,
                          0,
                          0};
      Write(t,
            "quantized_type" + std::to_string(type) + "_scheme" +
                std::to_string(scheme),
            {}, Provider({}, ints));
    }
  }
  Write(
      t, "dense_from_input", {},
      Provider({}, {static_cast<uint8_t>(n), 3, 1, 2, 1, 3, 1, 4, 0x03, 1, 0}));
  // Morton and Hilbert of rank 3 and 4 (layout index 2 and 3).
  const struct {
    const char* name;
    uint8_t type, layout;
    std::vector<uint8_t> dims;
  } curves[] = {{"morton_rank3", type_tag::kFloat32, 2, {3, 5, 2}},
                {"morton_rank4", type_tag::kInt8, 2, {2, 3, 2, 2}},
                {"hilbert_rank3", type_tag::kUInt8, 3, {4, 4, 3}},
                {"hilbert_rank4", type_tag::kInt4, 3, {2, 2, 2, 2}},
                {"hilbert_rank2", type_tag::kFloat16, 3, {5, 7}}};
  for (const auto& c : curves) {
    Bytes ints = {n, static_cast<uint8_t>(c.dims.size())};
    for (uint8_t d : c.dims) {
      ints.push_back(1);
      ints.push_back(d);
    }
    ints.push_back(c.type);
    ints.push_back(c.layout);
    ints.push_back(0);  // no mutation
    Write(t, c.name, {}, Provider({}, ints));
  }
  // One field mutation per case, each on a few bases: pick, mutate, k,
  // level, buffer, case, then the value's bytes.
  uint32_t rng = 12345;
  auto next = [&rng] {
    rng = rng * 1103515245u + 12345u;
    return static_cast<uint8_t>(rng >> 16);
  };
  for (uint8_t field = 0; field < 80; ++field) {
    for (int variant = 0; variant < 2; ++variant) {
      const uint8_t base = static_cast<uint8_t>((field * 7 + variant * 13) % n);
      Bytes ints = {base,
                    1,
                    static_cast<uint8_t>(variant),
                    0,
                    static_cast<uint8_t>(variant),
                    field};
      for (int i = 0; i < 12; ++i) ints.push_back(next());
      Write(t,
            "mutate_" + std::to_string(field) + "_" + std::to_string(variant) +
                "_" + bases[base].name,
            {}, Provider({}, ints));
    }
  }
}

// --- stream_reader_fuzz -----------------------------------------------------

// A float32 shard of `parent` at `offset`; a composite member section with
// `role` unless it is negative.
std::unique_ptr<TensorDescriptor> Shard(std::vector<uint64_t> shape,
                                        std::vector<uint64_t> parent,
                                        std::vector<uint64_t> offset, int role,
                                        uint8_t type = type_tag::kFloat32) {
  auto d = vectors::Dense(type, shape);
  d->flags |= flag::kHasShard;
  for (size_t k = 0; k < parent.size(); ++k) {
    d->shard.parent_shape[k] = parent[k];
    d->shard.shard_offset[k] = offset[k];
  }
  if (role >= 0) {
    d->flags |= flag::kHasCompositeMember;
    d->composite_member.member_role = static_cast<uint8_t>(role);
  }
  return d;
}

Bytes Tensor(const TensorDescriptor& d, uint32_t seed) {
  Bytes out = vectors::Bytes(d);
  for (const Bytes& b : stream::container::testing::BuffersFor(d, seed)) {
    out.insert(out.end(), b.begin(), b.end());
  }
  return out;
}

void StreamSeeds() {
  const std::string t = "stream_reader_fuzz";
  Clear(t);
  // options (bit 2: agreed), cuts, seed.
  const Bytes agreed_headers[] = {{0x04, 0x03, 0x11, 0x00},
                                  {0x05, 0x10, 0x22, 0x00},
                                  {0x14, 0x00, 0x00, 0x00},
                                  {0x0C, 0x07, 0x33, 0x01},
                                  {0x06, 0x1F, 0x44, 0x02}};
  const std::vector<vectors::Named> container =
      stream::container::testing::ContainerVectors();
  Bytes all;
  uint32_t seed = 1;
  int h = 0;
  for (const vectors::Named& v : container) {
    const Bytes one = Tensor(*v.descriptor, seed++);
    all = Cat(all, one);
    Write(t, "tensor_" + v.name, agreed_headers[h++ % 5], one);
  }
  Write(t, "container_all", {0x04, 0x08, 0x01, 0x00}, all);
  Write(t, "container_all_permissive_fail", {0x0D, 0x05, 0x02, 0x00}, all);
  // Unbound members are CMP-MEM-11 in strict mode only.
  Bytes unbound;
  for (const vectors::Named& v :
       stream::container::testing::ContainerVectors(true)) {
    unbound = Cat(unbound, Tensor(*v.descriptor, seed++));
  }
  Write(t, "container_unbound_strict", {0x04, 0x02, 0x03, 0x00}, unbound);
  Write(t, "container_unbound_permissive", {0x05, 0x02, 0x03, 0x00}, unbound);

  // Small streams: two tensors, truncated inside the descriptor and inside a
  // buffer; tight limits.
  const Bytes a = Tensor(*vectors::Dense(type_tag::kFloat32, {3, 4}), 7);
  const Bytes b = Tensor(*vectors::PerChannelAsymInt8(), 8);
  const Bytes two = Cat(a, b);
  Write(t, "two", {0x10, 0x04, 0x05, 0x00}, two);
  Write(t, "two_fail_source", {0x18, 0x02, 0x05, 0x00}, two);
  Write(t, "two_tight_limits", {0x02, 0x02, 0x06, 0x00}, two);
  Bytes cut = two;
  cut.resize(a.size() + 30);
  Write(t, "cut_in_descriptor", {0x10, 0x03, 0x07, 0x00}, cut);
  cut = two;
  cut.resize(two.size() - 5);
  Write(t, "cut_in_buffer", {0x10, 0x03, 0x08, 0x00}, cut);
  Write(t, "cut_in_buffer_fail_source", {0x08, 0x03, 0x08, 0x00}, cut);
  Bytes big;
  for (int i = 0; i < 8; ++i) {
    big = Cat(big, Tensor(*vectors::Dense(type_tag::kInt8, {60}), 20 + i));
  }
  Write(t, "total_limit", {0x02, 0x01, 0x09, 0x00}, big);
  Write(t, "buffer_limit", {0x02, 0x01, 0x09, 0x00},
        Tensor(*vectors::Dense(type_tag::kInt8, {65}), 30));
  // Composite heads: nested three deep (CMP-MEM-10 with tight limits), too
  // many members, and a head left without members (CMP-CLS-03).
  Bytes nested;
  nested =
      Cat(nested, vectors::Bytes(*stream::container::testing::GroupHead(1)));
  nested =
      Cat(nested, vectors::Bytes(*stream::container::testing::GroupHead(1)));
  nested =
      Cat(nested, vectors::Bytes(*stream::container::testing::GroupHead(1)));
  nested = Cat(nested, Tensor(*vectors::Dense(type_tag::kInt8, {3}), 40));
  Write(t, "nested_heads", {0x00, 0x02, 0x0A, 0x00}, nested);
  Write(t, "nested_heads_tight", {0x02, 0x02, 0x0A, 0x00}, nested);
  Bytes many = vectors::Bytes(*stream::container::testing::GroupHead(6));
  for (int i = 0; i < 6; ++i) {
    many = Cat(many, Tensor(*vectors::Dense(type_tag::kInt8, {3}), 50 + i));
  }
  Write(t, "group_of_six", {0x00, 0x04, 0x0B, 0x00}, many);
  Write(t, "group_of_six_tight", {0x02, 0x04, 0x0B, 0x00}, many);
  Write(t, "lone_head", {0x00, 0x00, 0x00, 0x00},
        vectors::Bytes(*stream::container::testing::GroupHead(2)));
  Write(t, "lone_head_permissive", {0x01, 0x00, 0x00, 0x00},
        vectors::Bytes(*stream::container::testing::GroupHead(2)));
  // Composites the composite validator refuses (CMP-MEM-*, CMP-CLS-*):
  // overlapping, uncovered and out-of-bounds partition shards, a member
  // without a shard section, a wrong parent shape, two overlay bases, a
  // correction before its base.
  // Partition heads are f32 [8, 8], overlay heads f16 [4, 4].
  const auto head = [](uint8_t rule, uint32_t members) {
    auto d = rule == 0x02 ? vectors::CompositeOverlay()
                          : vectors::CompositePartition();
    d->layout.composition_rule = rule;
    d->layout.member_count = members;
    return vectors::Bytes(*d);
  };
  struct Member {
    std::vector<uint64_t> shape, parent, offset;
    int role;
  };
  const auto composite = [&](uint8_t rule, std::vector<Member> members) {
    Bytes out = head(rule, static_cast<uint32_t>(members.size()));
    uint32_t s = 60;
    for (const Member& m : members) {
      out = Cat(out, Tensor(*Shard(m.shape, m.parent, m.offset, m.role,
                                   rule == 0x02 ? type_tag::kFloat16
                                                : type_tag::kFloat32),
                            s++));
    }
    return out;
  };
  Write(t, "partition_overlap", {0x00, 0x02, 0x0C, 0x00},
        composite(0x01, {{{4, 8}, {8, 8}, {0, 0}, -1},
                         {{4, 8}, {8, 8}, {2, 0}, -1}}));
  Write(t, "partition_gap", {0x00, 0x02, 0x0D, 0x00},
        composite(0x01, {{{4, 8}, {8, 8}, {0, 0}, -1},
                         {{2, 8}, {8, 8}, {6, 0}, -1}}));
  Write(t, "partition_out_of_bounds", {0x01, 0x02, 0x0E, 0x00},
        composite(0x01, {{{4, 8}, {8, 8}, {0, 0}, -1},
                         {{4, 8}, {8, 8}, {6, 0}, -1}}));
  Write(t, "partition_wrong_parent", {0x00, 0x01, 0x0F, 0x00},
        composite(0x01, {{{4, 8}, {8, 8}, {0, 0}, -1},
                         {{4, 8}, {8, 9}, {4, 0}, -1}}));
  {
    Bytes no_shard = head(0x01, 2);
    no_shard =
        Cat(no_shard, Tensor(*vectors::Dense(type_tag::kFloat32, {4, 8}), 70));
    no_shard =
        Cat(no_shard, Tensor(*vectors::Dense(type_tag::kFloat32, {4, 8}), 71));
    Write(t, "partition_no_shard", {0x00, 0x02, 0x10, 0x00}, no_shard);
  }
  Write(t, "overlay_two_bases", {0x00, 0x02, 0x11, 0x00},
        composite(0x02, {{{4, 4}, {4, 4}, {0, 0}, 0x01},
                         {{4, 4}, {4, 4}, {0, 0}, 0x01}}));
  Write(t, "overlay_correction_first", {0x00, 0x02, 0x12, 0x00},
        composite(0x02, {{{2, 2}, {4, 4}, {1, 1}, 0x00},
                         {{4, 4}, {4, 4}, {0, 0}, 0x01}}));
  Write(t, "partition_rank_differs", {0x00, 0x02, 0x14, 0x00},
        composite(0x01, {{{64}, {64}, {0}, -1}, {{4, 8}, {8, 8}, {4, 0}, -1}}));
  Write(t, "partition_parent_larger", {0x00, 0x02, 0x15, 0x00},
        composite(0x01, {{{8, 8}, {8, 16}, {0, 8}, -1},
                         {{4, 8}, {8, 8}, {4, 0}, -1}}));
  Write(t, "partition_member_role", {0x00, 0x02, 0x16, 0x00},
        composite(0x01, {{{4, 8}, {8, 8}, {0, 0}, 0x01},
                         {{4, 8}, {8, 8}, {4, 0}, -1}}));
  Write(t, "overlay_no_member_section", {0x00, 0x02, 0x17, 0x00},
        composite(0x02, {{{4, 4}, {4, 4}, {0, 0}, -1},
                         {{2, 2}, {4, 4}, {1, 1}, 0x00}}));
  Write(t, "overlay_base_not_at_origin", {0x00, 0x02, 0x18, 0x00},
        composite(0x02, {{{2, 2}, {4, 4}, {1, 1}, 0x01},
                         {{2, 2}, {4, 4}, {1, 1}, 0x00}}));
  Write(t, "overlay_valid", {0x00, 0x02, 0x19, 0x00},
        composite(0x02, {{{4, 4}, {4, 4}, {0, 0}, 0x01},
                         {{2, 2}, {4, 4}, {1, 1}, 0x00}}));
  {
    std::vector<Member> six;
    for (uint64_t r = 0; r < 8; r += 2) {
      six.push_back({{2, 4}, {8, 8}, {r, 0}, -1});
      six.push_back({{2, 4}, {8, 8}, {r, 4}, -1});
    }
    Write(t, "partition_eight", {0x00, 0x03, 0x1A, 0x00}, composite(0x01, six));
    Write(t, "partition_eight_tight", {0x02, 0x03, 0x1A, 0x00},
          composite(0x01, six));
  }
  Write(t, "overlay_bad_role", {0x01, 0x02, 0x13, 0x00},
        composite(0x02, {{{4, 4}, {4, 4}, {0, 0}, 0x01},
                         {{2, 2}, {4, 4}, {1, 1}, 0x07}}));
  Write(t, "empty", {0x00, 0x00, 0x00, 0x00}, {});
  // Every corpus descriptor (valid and broken), behind a valid tensor.
  int i = 0;
  for (const std::string& f : List(root + "/descriptors", ".bin")) {
    const Bytes d = ReadFile(root + "/descriptors/" + f);
    const uint8_t opts =
        static_cast<uint8_t>(0x04 | (i & 1) | (i & 2 ? 0x10 : 0));
    Write(t, "desc_" + f.substr(0, f.size() - 4),
          {opts, static_cast<uint8_t>(i % 5), static_cast<uint8_t>(i), 0},
          Cat(a, d));
    ++i;
  }
}

// --- hrry_file_fuzz ---------------------------------------------------------

void EveryKvType(stream::container::KvBuilder* kv) {
  static const uint8_t kBlob[] = {0, 1, 0, 0xFF};
  (void)kv->AddString("string", "h\xC3\xA9llo \xE2\x82\xAC \xF0\x9F\x98\x80");
  (void)kv->AddString("empty", "");
  (void)kv->AddInt64("int64", -42);
  (void)kv->AddUInt64("uint64", ~uint64_t{0});
  (void)kv->AddFloat64("float64", -0.5);
  (void)kv->AddBool("bool", true);
  (void)kv->AddBytes("bytes", kBlob);
  const absl::string_view strings[] = {"a", "", "\xC3\xBC"};
  (void)kv->AddStringArray("strings", strings);
  const int64_t ints[] = {-1, 0, 1};
  (void)kv->AddInt64Array("int64s", ints);
  const uint64_t uints[] = {7};
  (void)kv->AddUInt64Array("uint64s", uints);
  const double floats[] = {1.5, 2.5};
  (void)kv->AddFloat64Array("float64s", floats);
  const bool bools[] = {true, false};
  (void)kv->AddBoolArray("bools", bools);
  const absl::Span<const uint8_t> blobs[] = {kBlob, {}};
  (void)kv->AddBytesArray("blobs", blobs);
}

// Header: options, fault position (LE), XOR mask, chunk seed.
Bytes FileHeader(uint8_t options, uint32_t at, uint8_t mask, uint16_t seed) {
  return {options,
          static_cast<uint8_t>(at),
          static_cast<uint8_t>(at >> 8),
          static_cast<uint8_t>(at >> 16),
          static_cast<uint8_t>(at >> 24),
          mask,
          static_cast<uint8_t>(seed),
          static_cast<uint8_t>(seed >> 8)};
}

void FileSeeds(const std::string& t, const std::string& name, const Bytes& f,
               uint8_t base_options, int faults) {
  Write(t, name, FileHeader(base_options | 0x40, 0, 0, 1), f);  // + Open
  Write(t, name + "_chunks1", FileHeader(base_options, 0, 0, 0x100), f);
  // One fault at structural places: the header, the first descriptor, the
  // end of the region, the index, the trailer; XOR and cuts.
  const uint64_t size = f.size();
  std::vector<uint64_t> places = {0,  8,  9,  12, 16, 20, 28,
                                  36, 64, 68, 72, 80, 96, 100};
  for (uint64_t back : {1, 4, 8, 12, 16, 24, 28, 32, 36, 40, 48, 64, 80}) {
    if (back <= size) places.push_back(size - back);
  }
  // The KV section and the index, from the trailer.
  if (size >= 40) {
    const uint64_t index_at = wire::LoadU64(f.data() + size - 40);
    const uint64_t index_len = wire::LoadU64(f.data() + size - 32);
    const uint64_t kv_at = wire::LoadU64(f.data() + size - 24);
    for (uint64_t d : {0, 2, 3, 8, 10, 11, 12, 20, 28, 36, 40, 44}) {
      if (index_at + d < size && d < index_len) places.push_back(index_at + d);
    }
    for (uint64_t d : {0, 1, 4, 5, 6, 8, 12}) {
      if (kv_at != 0 && kv_at + d < size) places.push_back(kv_at + d);
    }
  }
  int n = 0;
  for (uint64_t at : places) {
    if (at >= size || n >= faults) continue;
    const uint8_t mask = n % 3 == 0 ? 0x01 : (n % 3 == 1 ? 0x80 : 0xFF);
    Write(t, name + "_xor_" + std::to_string(at),
          FileHeader(base_options | 0x10, static_cast<uint32_t>(at), mask,
                     static_cast<uint16_t>(n + 2)),
          f);
    if (n % 2 == 0) {
      Write(t, name + "_cut_" + std::to_string(at),
            FileHeader(base_options | 0x30, static_cast<uint32_t>(at), 0,
                       static_cast<uint16_t>(n + 3)),
            f);
    }
    ++n;
  }
}

void HrrySeeds() {
  const std::string t = "hrry_file_fuzz";
  Clear(t);
  FileSeeds(t, "golden_basic", ReadFile(root + "/golden/files/basic.hrry"),
            0x00, 40);
  FileSeeds(t, "small_kv", stream::container::testing::SmallFile(true), 0x00,
            40);
  FileSeeds(t, "small_no_kv", stream::container::testing::SmallFile(false),
            0x04, 20);

  std::vector<vectors::Named> composite;
  composite.push_back({"head", stream::container::testing::GroupHead(2)});
  composite.push_back({"m0", vectors::Dense(type_tag::kInt8, {5})});
  composite.push_back({"m1", vectors::PerChannelAsymInt8()});
  const Bytes comp = stream::container::testing::WriteFile(composite);
  FileSeeds(t, "composite", comp, 0x00, 30);
  FileSeeds(t, "composite_reg04", comp, 0x08, 4);
  {
    // The reference writer's padding after a composite head (accepted;
    // FILE-REG-04 when asked, REJECT-RULES.md §4 item 4).
    stream::container::testing::EditableFile e =
        stream::container::testing::EditableFile::From(comp);
    const uint64_t head_end =
        e.entries[0].descriptor_offset + e.entries[0].descriptor_length;
    const uint64_t next = (head_end + 7) / 8 * 8;
    const uint64_t pad = (4096 - next % 4096) % 4096;
    if (pad != 0) {
      e.InsertZeros(next, pad);
      e.entries[0].data_offset = head_end;
    }
    const Bytes padded = e.Build().bytes;
    FileSeeds(t, "composite_padded_head", padded, 0x80, 10);
    FileSeeds(t, "composite_padded_head_reg04", padded, 0x08, 2);
  }

  std::vector<vectors::Named> nested;
  nested.push_back({"outer", stream::container::testing::GroupHead(2)});
  nested.push_back({"z_inner", stream::container::testing::GroupHead(2)});
  nested.push_back({"y", vectors::Dense(type_tag::kInt8, {3})});
  nested.push_back({"x", vectors::Dense(type_tag::kInt8, {3})});
  nested.push_back({"a_last", vectors::Dense(type_tag::kInt8, {3})});
  stream::container::HrryWriterOptions sorted;
  sorted.sorted_index = true;
  FileSeeds(t, "nested_sorted",
            stream::container::testing::WriteFile(nested, sorted), 0x01, 10);

  stream::container::HrryWriterOptions every;
  every.with_kv = true;
  every.index_crc = false;
  every.tensor_count_hint = 3;
  std::vector<vectors::Named> three;
  three.push_back({"empty", vectors::Dense(type_tag::kFloat32, {0, 4})});
  three.push_back({"ext", vectors::WithExtensionType()});
  three.push_back({"q", vectors::Nf4UInt4()});
  every.parse = vectors::AgreedOptions();
  FileSeeds(t, "kv_every_type_no_crc",
            stream::container::testing::WriteFile(three, every, EveryKvType),
            0x02, 30);

  stream::container::HrryWriterOptions far;
  far.first_descriptor_offset = 128;
  far.data_buffer_alignment = 8192;
  std::vector<vectors::Named> one;
  one.push_back({"only", vectors::Dense(type_tag::kInt8, {7})});
  FileSeeds(t, "far_first_descriptor",
            stream::container::testing::WriteFile(one, far), 0x00, 12);

  // No index CRC: faults in the index and KV section reach their own rules
  // (FILE-IDX-*, FILE-KV-*) instead of FILE-TRL-03. Names and keys with 2-,
  // 3- and 4-byte UTF-8.
  stream::container::HrryWriterOptions no_crc;
  no_crc.with_kv = true;
  no_crc.index_crc = false;
  std::vector<vectors::Named> named;
  named.push_back({"a", vectors::Dense(type_tag::kInt8, {3})});
  named.push_back({"h\xC3\xA9", vectors::Dense(type_tag::kInt8, {2})});
  named.push_back(
      {"\xE6\x97\xA5\xF0\x9F\x98\x80", vectors::Dense(type_tag::kInt8, {1})});
  FileSeeds(t, "no_crc_utf8",
            stream::container::testing::WriteFile(named, no_crc, EveryKvType),
            0x00, 60);
  no_crc.sorted_index = true;
  FileSeeds(t, "no_crc_sorted",
            stream::container::testing::WriteFile(named, no_crc, EveryKvType),
            0x00, 30);

  FileSeeds(t, "no_tensors", stream::container::testing::WriteFile({}), 0x00,
            12);
  stream::container::HrryWriterOptions kv_only;
  kv_only.with_kv = true;
  FileSeeds(t, "no_tensors_kv",
            stream::container::testing::WriteFile({}, kv_only), 0x00, 12);

  Write(t, "empty", FileHeader(0, 0, 0, 0), {});
  Write(t, "short", FileHeader(0, 0, 0, 0), {'H', 'R', 'R', 'Y'});
}

// --- qnn_import_fuzz --------------------------------------------------------
// Mirrors the order in which fuzz/qnn_import_fuzz.cc consumes the provider:
// integers (single bytes, for ranges below 256) from the end, value bytes
// from the front.

struct QnnSeed {
  uint8_t bits_pick;  // index into {8, 16, 32, 8, 16, 32, 0, 24, 64}
  bool is_signed;
  uint8_t bitwidth;
  bool exclude_zero;
  std::vector<uint8_t> shape;  // small dimensions only
  uint8_t axis;                // + 1 is the byte (range starts at -1)
  uint8_t skew;
  bool same_scale;
  uint8_t offsets;  // 0 none, 1 zeros, 2 per channel
  int8_t offset;    // per-channel offsets (small range)
};

Bytes QnnInput(const QnnSeed& s) {
  Bytes ints;
  ints.push_back(s.bits_pick);
  ints.push_back(s.is_signed);
  ints.push_back(s.bitwidth);
  ints.push_back(s.exclude_zero);
  ints.push_back(0);  // rank: not the rare branch (ConsumeBool false)
  ints.push_back(static_cast<uint8_t>(s.shape.size()));
  for (uint8_t n : s.shape) {
    ints.push_back(2);  // a small dimension
    ints.push_back(n);
  }
  ints.push_back(static_cast<uint8_t>(s.axis + 1));
  ints.push_back(s.skew);
  ints.push_back(s.same_scale);
  // First scale: an interesting value (index 0: 1.0, 1: 0.5, 2: 0.1).
  ints.push_back(1);
  ints.push_back(s.skew % 3);
  const uint64_t channels = s.shape.empty() ? 0 : s.shape[s.axis];
  if (!s.same_scale) {
    for (uint64_t c = 0; c < channels; ++c) {
      ints.push_back(1);
      ints.push_back(static_cast<uint8_t>(c % 4));
    }
  }
  ints.push_back(s.offsets);
  if (s.offsets >= 2) {
    for (uint64_t c = 0; c < channels; ++c) {
      ints.push_back(0);  // small range: -8 … 8
      ints.push_back(static_cast<uint8_t>(s.offset + 8 + c % 2));
    }
  }
  uint64_t count = 1;
  for (uint8_t n : s.shape) count *= n;
  static constexpr uint8_t kBits[] = {8, 16, 32, 8, 16, 32, 0, 24, 64};
  Bytes values(count * (kBits[s.bits_pick] / 8));
  for (size_t i = 0; i < values.size(); ++i) {
    values[i] = static_cast<uint8_t>(i * 37 + 11);
  }
  return Provider(values, ints);
}

void QnnSeeds() {
  const std::string t = "qnn_import_fuzz";
  Clear(t);
  int i = 0;
  for (uint8_t bits_pick : {0, 1, 2}) {
    const uint8_t bits = bits_pick == 0 ? 8 : (bits_pick == 1 ? 16 : 32);
    for (bool is_signed : {false, true}) {
      for (uint8_t bitwidth : {1, 2, 3, 4, 7, 8, 12, 16, 20, 31}) {
        if (bitwidth > bits) continue;
        for (bool exclude_zero : {false, true}) {
          if (exclude_zero && (!is_signed || bitwidth >= bits)) continue;
          for (uint8_t offsets : {0, 2}) {
            if (exclude_zero && offsets != 0) continue;
            QnnSeed s{bits_pick, is_signed,
                      bitwidth,  exclude_zero,
                      {3, 4},    static_cast<uint8_t>(i % 2),
                      0,         (i % 3) == 0,
                      offsets,   static_cast<int8_t>(is_signed ? -2 : -3)};
            Write(t,
                  "c" + std::to_string(bits) + (is_signed ? "s" : "u") + "_w" +
                      std::to_string(bitwidth) + (exclude_zero ? "_excl" : "") +
                      (offsets ? "_offsets" : ""),
                  {}, QnnInput(s));
            ++i;
          }
        }
      }
    }
  }
  // Shapes: scalar axis error, rank 3, empty dimension.
  Write(t, "rank0", {}, QnnInput({0, true, 8, false, {}, 0, 0, true, 0, 0}));
  Write(t, "rank3", {},
        QnnInput({0, true, 4, false, {2, 3, 2}, 2, 0, false, 2, 1}));
  Write(t, "empty_dim", {},
        QnnInput({1, false, 9, false, {0, 5}, 1, 0, true, 1, 0}));
  // Errors: container width, bitwidth 0 and too wide, wrong scale/offset
  // counts, value size one off.
  Write(t, "err_container", {},
        QnnInput({6, true, 8, false, {2}, 0, 0, true, 0, 0}));
  Write(t, "err_bitwidth0", {},
        QnnInput({0, true, 0, false, {2}, 0, 0, true, 0, 0}));
  Write(t, "err_bitwidth9", {},
        QnnInput({0, true, 9, false, {2}, 0, 0, true, 0, 0}));
  Write(t, "err_scales_plus", {},
        QnnInput({0, true, 8, false, {2}, 0, 1, true, 0, 0}));
  Write(t, "err_scales_minus", {},
        QnnInput({0, true, 8, false, {2}, 0, 2, true, 0, 0}));
  Write(t, "err_offsets_plus", {},
        QnnInput({0, true, 8, false, {2}, 0, 3, true, 2, 0}));
  Write(t, "err_values_short", {},
        QnnInput({0, true, 8, false, {2}, 0, 4, true, 0, 0}));
  Write(t, "err_values_long", {},
        QnnInput({0, true, 8, false, {2}, 0, 5, true, 0, 0}));
  Write(t, "err_excl_unsigned", {},
        QnnInput({0, false, 4, true, {2}, 0, 0, true, 0, 0}));
  Write(t, "err_excl_offsets", {},
        QnnInput({0, true, 4, true, {2}, 0, 0, true, 2, 3}));
  Write(t, "err_offset_range", {},
        QnnInput({0, false, 8, false, {2}, 0, 0, true, 2, 5}));
}

// --- data_checks_fuzz --------------------------------------------------------

Bytes Words(const std::vector<uint64_t>& v, uint32_t width) {
  Bytes b(width * v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    if (width == 8) {
      wire::StoreU64(b.data() + 8 * i, v[i]);
    } else {
      wire::StoreU32(b.data() + 4 * i, static_cast<uint32_t>(v[i]));
    }
  }
  return b;
}

struct IndexCase {
  std::string name;
  std::unique_ptr<TensorDescriptor> d;
  std::vector<Bytes> buffers;  // in table order
  uint32_t width = 8;          // of the index entries
  uint32_t last_index = 0;     // the last buffer the checker reads; 0: the last
};

// The valid index data of tests/data_checks_test.cc's cases.
std::vector<IndexCase> IndexCases() {
  std::vector<IndexCase> v;
  v.push_back({"coo",
               vectors::Coo(),
               {Bytes(12, 0xAB), Words({0, 1, 2, 1, 0, 4, 4, 4, 4}, 8)}});
  {
    IndexCase c{"coo_unsorted",
                vectors::Coo(),
                {Bytes(12, 0xAB), Words({4, 4, 4, 0, 1, 2, 1, 0, 4}, 8)}};
    c.d->layout.is_sorted = 0;
    v.push_back(std::move(c));
  }
  v.push_back(
      {"csr",
       vectors::Csr(),
       {Bytes(40, 0xCD), Words({0, 3, 2, 1, 3}, 8), Words({0, 2, 3, 5}, 8)}});
  v.push_back({"csc",
               vectors::Csc(),
               {Bytes(2, 0x11), Words({0, 2}, 8), Words({0, 0, 0, 2, 2}, 8)}});
  v.push_back({"csf",
               vectors::Csf(),
               {Bytes(16, 0x22), Words({0, 2}, 8), Words({1, 3}, 8),
                Words({0, 1, 3}, 8), Words({0, 0, 1}, 8),
                Words({0, 1, 2, 4}, 8), Words({2, 0, 1, 2}, 8)}});
  v.push_back({"block_paged",
               vectors::BlockPaged(),
               {Bytes(4 * 16 * 2 * 8, 0x33), Words({3, 0, 2}, 4),
                Words({0, 2, 3}, 4), Bytes(4 * 16 * 2, 0x44)},
               4,
               2});
  {
    IndexCase c{"block_paged_u64",
                vectors::BlockPaged(),
                {Bytes(4 * 16 * 2 * 8, 0x33), Words({3, 0, 2}, 8),
                 Words({0, 2, 3}, 8), Bytes(4 * 16 * 2, 0x44)},
                8,
                2};
    c.d->layout.block_table_index_type = 0x01;
    c.d->buffers[1].byte_size = 24;
    c.d->buffers[2].byte_size = 24;
    v.push_back(std::move(c));
  }
  {  // 40 rows of two columns: longer than the small order windows.
    const uint64_t rows = 40;
    IndexCase c{"csr_40_rows", vectors::Csr(), {}};
    c.d->shape[0] = rows;
    c.d->layout.nnz = 2 * rows;
    c.d->buffers[0].byte_size = 8 * 2 * rows;
    c.d->buffers[1].byte_size = 8 * 2 * rows;
    c.d->buffers[2].byte_size = 8 * (rows + 1);
    std::vector<uint64_t> col, ptr;
    for (uint64_t r = 0; r <= rows; ++r) ptr.push_back(2 * r);
    for (uint64_t r = 0; r < rows; ++r) {
      col.push_back(r % 3);
      col.push_back(3);
    }
    c.buffers = {Bytes(8 * 2 * rows, 0x5A), Words(col, 8), Words(ptr, 8)};
    v.push_back(std::move(c));
  }
  return v;
}

void DataCheckSeeds() {
  const std::string t = "data_checks_fuzz";
  Clear(t);
  // Headers: window/budget, largest chunk, seed.
  const Bytes headers[] = {{0x07, 0x00, 0x00, 0x00},   // window 1024, 1 byte
                           {0x00, 0x04, 0x13, 0x37},   // window 1, 16 bytes
                           {0x0B, 0x03, 0x42, 0x00},   // window 4, budget
                           {0x05, 0x0C, 0x99, 0x01}};  // window 16, 4 KiB
  // One broken entry per case and rule: buffer, entry, value.
  struct Break {
    const char* name;
    uint32_t buffer;
    size_t entry;                  // the first entry changed
    std::vector<uint64_t> values;  // its new value and the next ones'
  };
  const std::vector<std::pair<std::string, std::vector<Break>>> breaks = {
      {"coo",
       {{"coo05", 1, 5, {5}},
        {"coo06", 1, 6, {1, 0, 4}},
        {"coo07", 1, 6, {0}}}},
      {"coo_unsorted", {{"coo06", 1, 6, {4, 4, 4}}}},
      {"csr",
       {{"csr04", 2, 0, {1}},
        {"csr05", 2, 3, {4}},
        {"csr06", 2, 2, {1}},
        {"csr07", 1, 4, {1}},
        {"csr08", 1, 1, {4}}}},
      {"csc",
       {{"csc04", 2, 0, {1}},
        {"csc05", 2, 4, {3}},
        {"csc06", 2, 2, {3}},
        {"csc07", 1, 1, {0}},
        {"csc08", 1, 1, {3}}}},
      {"csf",
       {{"csf06", 1, 0, {1}},
        {"csf07", 3, 1, {4}},
        {"csf08", 5, 3, {3}},
        {"csf09", 6, 3, {1}},
        {"csf10", 2, 1, {4}}}},
      {"block_paged",
       {{"bpg15", 2, 0, {1}},
        {"bpg16", 2, 1, {4}},
        {"bpg17", 2, 2, {2}},
        {"bpg18", 1, 1, {4}}}},
      {"block_paged_u64", {{"bpg18", 1, 2, {9}}}},
      {"csr_40_rows", {{"csr07", 1, 61, {0}}}},
  };
  int h = 0;
  auto write = [&](const std::string& name, const IndexCase& c,
                   const std::vector<Bytes>& buffers) {
    Bytes body = vectors::Bytes(*c.d);
    for (const Bytes& b : buffers) body = Cat(std::move(body), b);
    Write(t, name, headers[h++ % 4], body);
  };
  for (const IndexCase& c : IndexCases()) {
    write(c.name, c, c.buffers);
    // Cut short inside the last index buffer (the buffers after it go).
    const size_t last = c.last_index != 0 ? c.last_index : c.buffers.size() - 1;
    std::vector<Bytes> cut(c.buffers.begin(), c.buffers.begin() + last + 1);
    cut.back().resize(cut.back().size() / 2);
    write(c.name + "_cut", c, cut);
    for (const auto& [case_name, list] : breaks) {
      if (case_name != c.name) continue;
      for (const Break& b : list) {
        std::vector<Bytes> broken = c.buffers;
        const bool u64 = c.width == 8 || b.buffer == 0;
        Bytes& buf = broken[b.buffer];
        for (size_t k = 0; k < b.values.size(); ++k) {
          if (u64) {
            wire::StoreU64(buf.data() + 8 * (b.entry + k), b.values[k]);
          } else {
            wire::StoreU32(buf.data() + 4 * (b.entry + k),
                           static_cast<uint32_t>(b.values[k]));
          }
        }
        write(c.name + "_" + b.name, c, broken);
      }
    }
  }
}

}  // namespace
}  // namespace hurray::fuzz

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_ROOT\n", argv[0]);
    return 2;
  }
  hurray::fuzz::root = argv[1];
  hurray::fuzz::QuantSeeds();
  hurray::fuzz::StructSeeds();
  hurray::fuzz::StreamSeeds();
  hurray::fuzz::HrrySeeds();
  hurray::fuzz::QnnSeeds();
  hurray::fuzz::DataCheckSeeds();
  std::printf("seed_gen: wrote %d seeds under %s\n", hurray::fuzz::written,
              argv[1]);
  return 0;
}
