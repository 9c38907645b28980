// DequantSink outputs of block-paged tensors (layouts/block-paged.md, issue
// 16 part 2): the logical dense tensor in row-major order. The expected
// values follow the spec's § Element Lookup formula, written out here
//   flat = ((block_table[seq_ptr[s] + t / P] · P + t mod P) · H + h) · D + d
// with the per-page-slot scales of § Per-page-slot parameters,
// independently of the sink's page copies.
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "parser/element_type.h"
#include "parser/quantization.h"
#include "parser/rules.h"
#include "parser/wire.h"
#include "stream/ingest/consumers.h"
#include "stream/ingest/loader.h"
#include "stream/ingest/sinks.h"
#include "stream/ingest/testing/loader_test_util.h"
#include "stream/ingest/testing/values_test_util.h"

namespace hurray::stream::ingest {
namespace {

using container::ContainerFormat;
using ingest::testing::IngestTensor;
using resume::TensorRecord;

struct Paged {
  uint8_t type = type_tag::kFloat32;
  uint64_t heads = 2, dims = 3;
  uint32_t page = 4;
  uint64_t pages = 5;
  std::vector<uint32_t> seq_ptr;
  std::vector<uint32_t> block_table;
  // Tokens of each sequence (the writer's truth; only their sum is stored).
  std::vector<uint64_t> tokens;
};

std::vector<uint8_t> U32s(const std::vector<uint32_t>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  for (size_t i = 0; i < v.size(); ++i) wire::StoreU32(&b[4 * i], v[i]);
  return b;
}

std::vector<uint8_t> F32s(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  for (size_t i = 0; i < v.size(); ++i) wire::StoreF32(&b[4 * i], v[i]);
  return b;
}

// The tensor with a pool of `pool` (already packed) and parameter buffers.
IngestTensor Make(const Paged& p, std::vector<uint8_t> pool,
                  const QuantizationDescriptor* q,
                  std::vector<std::vector<uint8_t>> params) {
  uint64_t total = 0;
  for (uint64_t t : p.tokens) total += t;
  auto d = std::make_unique<TensorDescriptor>();
  d->type_tag = p.type;
  d->layout_tag = layout_tag::kBlockPaged;
  d->rank = 3;
  d->shape[0] = total;
  d->shape[1] = p.heads;
  d->shape[2] = p.dims;
  d->layout.page_size = p.page;
  d->layout.num_pages = p.pages;
  d->layout.num_seqs = static_cast<uint32_t>(p.seq_ptr.size() - 1);
  d->layout.kv_role = 0x01;
  d->layout.layer_index = 3;
  IngestTensor it;
  it.name = "paged";
  it.tensor.buffers = {std::move(pool), U32s(p.block_table), U32s(p.seq_ptr)};
  for (auto& b : params) it.tensor.buffers.push_back(std::move(b));
  if (q != nullptr) {
    d->flags |= flag::kHasQuantization;
    d->quantization = *q;
  }
  d->buffer_count = static_cast<uint32_t>(it.tensor.buffers.size());
  for (uint32_t i = 0; i < d->buffer_count; ++i) {
    d->buffers[i].byte_size = it.tensor.buffers[i].size();
  }
  it.tensor.descriptor = std::move(d);
  return it;
}

// value(flat pool index, page slot p · P + i, dim index h, d) → float: the
// expected output, sequence by sequence, by the lookup formula; `padded`:
// every slot of every page a sequence owns.
template <typename Value>
std::vector<float> Expected(const Paged& p, bool padded, Value value) {
  std::vector<float> out;
  for (size_t s = 0; s + 1 < p.seq_ptr.size(); ++s) {
    const uint64_t n =
        padded ? (p.seq_ptr[s + 1] - p.seq_ptr[s]) * p.page : p.tokens[s];
    for (uint64_t t = 0; t < n; ++t) {
      const uint64_t phys = p.block_table[p.seq_ptr[s] + t / p.page];
      const uint64_t slot = phys * p.page + t % p.page;
      for (uint64_t h = 0; h < p.heads; ++h) {
        for (uint64_t d = 0; d < p.dims; ++d) {
          out.push_back(value((slot * p.heads + h) * p.dims + d, slot, h, d));
        }
      }
    }
  }
  return out;
}

struct PagedRun {
  absl::Status status;
  std::vector<TensorRecord> records;
  std::string dir;
};

PagedRun Ingest(const IngestTensor& t, OutputFormat format,
                uint64_t spool_bytes, const std::string& name,
                Mode mode = Mode::kStrict) {
  PagedRun r;
  r.dir = ingest::testing::FreshDir(name);
  DequantSinkOptions o;
  o.out_dir = r.dir;
  o.format = format;
  o.spool_memory_bytes = spool_bytes;
  o.mode = mode;
  DequantSink sink(o);
  container::FileOptions fo;
  fo.parse.mode = mode;
  std::unique_ptr<container::ByteConsumer> c =
      MakeConsumer(ContainerFormat::kUnknown, fo, &sink, nullptr, nullptr);
  LoaderOptions lo;
  lo.chunk_size = 7;
  Loader loader(lo);
  std::vector<IngestTensor> v;
  v.push_back(IngestTensor{t.name, {}, {}});
  v.back().tensor.descriptor =
      std::make_unique<TensorDescriptor>(*t.tensor.descriptor);
  v.back().tensor.buffers = t.tensor.buffers;
  const std::vector<uint8_t> bytes = ingest::testing::StreamBytes(v);
  r.status = loader.Run(LoadSource::Memory(bytes), c.get()).status;
  r.records = sink.records();
  // A float32 file holds the values the sink writes into a values buffer
  // instead (DequantSinkOptions::values).
  const TensorDescriptor& d = *t.tensor.descriptor;
  if (r.status.ok() && format == OutputFormat::kF32 &&
      (d.has(flag::kHasQuantization) || d.type_tag == type_tag::kFloat32) &&
      r.records.size() == 1 && r.records[0].output == "tensor_0.f32") {
    const absl::StatusOr<std::vector<float>> mem =
        ingest::testing::ValuesInMemory(
            bytes, o, ingest::testing::FreshDir(name + "_mem"), 7);
    EXPECT_TRUE(mem.ok()) << mem.status();
    if (mem.ok()) {
      const auto* p = reinterpret_cast<const uint8_t*>(mem->data());
      EXPECT_EQ(std::vector<uint8_t>(p, p + mem->size() * 4),
                ingest::testing::ReadAll(r.dir + "/tensor_0.f32"));
    }
  }
  return r;
}

std::vector<float> ReadF32(const std::string& path) {
  const std::vector<uint8_t> b = ingest::testing::ReadAll(path);
  std::vector<float> f(b.size() / 4);
  for (size_t i = 0; i < f.size(); ++i) f[i] = wire::LoadF32(&b[4 * i]);
  return f;
}

std::vector<float> RandomFloats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-8, 8);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

// Every spool in memory, and every spool in a file.
const uint64_t kSpoolSizes[] = {uint64_t{24} << 20, 0};

void ExpectOutput(const IngestTensor& t, const std::vector<float>& want,
                  const std::string& name) {
  for (uint64_t spool : kSpoolSizes) {
    SCOPED_TRACE(absl::StrCat(name, " spool ", spool));
    const PagedRun r = Ingest(t, OutputFormat::kF32, spool, name);
    ASSERT_TRUE(r.status.ok()) << r.status;
    ASSERT_EQ(r.records.size(), 1u);
    EXPECT_EQ(r.records[0].output, "tensor_0.f32") << r.records[0].verdict;
    EXPECT_EQ(ReadF32(r.dir + "/tensor_0.f32"), want);
    EXPECT_EQ(ingest::testing::ListDir(r.dir),
              std::vector<std::string>{"tensor_0.f32"});
  }
}

TEST(BlockPagedOutputs, FullPagesInSequenceOrder) {
  Paged p;
  p.seq_ptr = {0, 2, 3};
  p.block_table = {3, 1, 0};
  p.tokens = {8, 4};
  const std::vector<float> pool = RandomFloats(5 * 4 * 2 * 3, 1);
  const IngestTensor t = Make(p, F32s(pool), nullptr, {});
  ExpectOutput(t,
               Expected(p, false,
                        [&](uint64_t flat, uint64_t, uint64_t, uint64_t) {
                          return pool[flat];
                        }),
               "full");
}

TEST(BlockPagedOutputs, OneSequenceWithAPartialLastPage) {
  Paged p;
  p.seq_ptr = {0, 0, 3, 3};  // two sequences without pages
  p.block_table = {4, 2, 0};
  p.tokens = {0, 10, 0};
  const std::vector<float> pool = RandomFloats(5 * 4 * 2 * 3, 2);
  const IngestTensor t = Make(p, F32s(pool), nullptr, {});
  ExpectOutput(t,
               Expected(p, false,
                        [&](uint64_t flat, uint64_t, uint64_t, uint64_t) {
                          return pool[flat];
                        }),
               "one_seq");
}

// The spec's own example (6 and 3 tokens, page 0 shared): the token counts
// are not in the file, so every slot of each owned page is written, in
// block-table order, and the .npy says [12, 2, 8].
TEST(BlockPagedOutputs, UndeterminedTokenCountsGiveEveryPageSlot) {
  Paged p;
  p.heads = 2;
  p.dims = 8;
  p.seq_ptr = {0, 2, 3};
  p.block_table = {0, 1, 0};
  p.tokens = {6, 3};
  const std::vector<float> pool = RandomFloats(5 * 4 * 2 * 8, 3);
  const IngestTensor t = Make(p, F32s(pool), nullptr, {});
  const std::vector<float> want = Expected(
      p, true,
      [&](uint64_t flat, uint64_t, uint64_t, uint64_t) { return pool[flat]; });
  ASSERT_EQ(want.size(), 12u * 2 * 8);
  ExpectOutput(t, want, "padded");
  const PagedRun r = Ingest(t, OutputFormat::kNpy, 0, "padded_npy");
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_NE(r.records[0].verdict.find("every slot of its 3 logical pages"),
            std::string::npos)
      << r.records[0].verdict;
  const std::vector<uint8_t> npy =
      ingest::testing::ReadAll(r.dir + "/tensor_0.npy");
  const std::string head(npy.begin(), npy.begin() + 128);
  EXPECT_NE(head.find("'shape': (12, 2, 8)"), std::string::npos) << head;
  EXPECT_NE(head.find("'descr': '<f4'"), std::string::npos) << head;
}

// int4 with pages of 3 · 1 · 3 = 9 elements: half the pages start inside a
// byte (LSB-first nibbles, element-types.md).
TEST(BlockPagedOutputs, SubByteElementsAcrossBytes) {
  Paged p;
  p.type = type_tag::kInt4;
  p.heads = 1;
  p.dims = 3;
  p.page = 3;
  p.pages = 4;
  p.seq_ptr = {0, 1, 4};
  p.block_table = {1, 3, 0, 2};
  p.tokens = {3, 9};
  std::mt19937 rng(4);
  std::vector<uint8_t> pool((4 * 3 * 3 + 1) / 2);
  for (uint8_t& b : pool) b = static_cast<uint8_t>(rng());
  pool.back() &= 0x0F;  // the unused high nibble (TYPE-PACK-02)
  const IngestTensor t = Make(p, pool, nullptr, {});
  ExpectOutput(t,
               Expected(p, false,
                        [&](uint64_t flat, uint64_t, uint64_t, uint64_t) {
                          const uint8_t nib =
                              (pool[flat / 2] >> (4 * (flat % 2))) & 15;
                          return static_cast<float>(nib >= 8 ? nib - 16 : nib);
                        }),
               "int4");
}

// Per-block affine on axis 0 with block_size = page_size: one scale and
// zero point per page slot, paged through the same block table.
TEST(BlockPagedOutputs, PerPageSlotScalesDequantize) {
  Paged p;
  p.type = type_tag::kInt8;
  p.seq_ptr = {0, 2, 3};
  p.block_table = {4, 2, 4};  // page 4 shared
  p.tokens = {8, 4};
  std::mt19937 rng(5);
  std::vector<uint8_t> codes(5 * 4 * 2 * 3);
  for (uint8_t& c : codes) c = static_cast<uint8_t>(rng());
  std::vector<float> scales(5 * 4);
  std::vector<uint32_t> zps(5 * 4);
  for (size_t i = 0; i < scales.size(); ++i) {
    scales[i] = 0.25f * static_cast<float>(i + 1);
    zps[i] = static_cast<uint32_t>(static_cast<int32_t>(i % 7) - 3);
  }
  const QuantizationDescriptor q =
      *PerBlockAffine::Asymmetric(0, 4, 3, 4, type_tag::kFloat32);
  const IngestTensor t = Make(p, codes, &q, {F32s(scales), U32s(zps)});
  ExpectOutput(
      t,
      Expected(p, false,
               [&](uint64_t flat, uint64_t slot, uint64_t, uint64_t) {
                 const int32_t c = static_cast<int8_t>(codes[flat]);
                 return static_cast<float>(
                     (c - static_cast<int32_t>(zps[slot])) * scales[slot]);
               }),
      "pba");
}

TEST(BlockPagedOutputs, PerChannelOnHeadDimDequantizes) {
  Paged p;
  p.type = type_tag::kInt8;
  p.seq_ptr = {0, 3};
  p.block_table = {2, 0, 1};
  p.tokens = {12};
  std::mt19937 rng(6);
  std::vector<uint8_t> codes(5 * 4 * 2 * 3);
  for (uint8_t& c : codes) c = static_cast<uint8_t>(rng());
  const std::vector<float> scales = {0.5f, 2.0f, 0.125f};
  const QuantizationDescriptor q = *PerChannelAffine::Symmetric(2, 3);
  const IngestTensor t = Make(p, codes, &q, {F32s(scales)});
  ExpectOutput(t,
               Expected(p, false,
                        [&](uint64_t flat, uint64_t, uint64_t, uint64_t d) {
                          return static_cast<int8_t>(codes[flat]) * scales[d];
                        }),
               "pca");
}

// A per-page-slot scale of zero is the per-block rule's rejection, and
// nothing is left in OUT.
TEST(BlockPagedOutputs, ZeroScaleIsQntPba12) {
  Paged p;
  p.type = type_tag::kInt8;
  p.seq_ptr = {0, 3};
  p.block_table = {2, 0, 1};
  p.tokens = {12};
  std::vector<uint8_t> codes(5 * 4 * 2 * 3, 1);
  std::vector<float> scales(5 * 4, 1.0f);
  scales[9] = 0.0f;
  const QuantizationDescriptor q =
      *PerBlockAffine::Symmetric(0, 4, 3, type_tag::kFloat32);
  const IngestTensor t = Make(p, codes, &q, {F32s(scales)});
  const PagedRun r = Ingest(t, OutputFormat::kNpy, 0, "pba_zero");
  ASSERT_FALSE(r.status.ok());
  EXPECT_EQ(RuleIdOf(r.status).value_or(""), "QNT-PBA-12") << r.status;
  EXPECT_TRUE(ingest::testing::ListDir(r.dir).empty());
}

// A page id past the pool: LAY-BPG-18, a strict-only data rule the ingest
// sinks run as the block table passes (the tensor is rejected at its byte);
// in permissive mode the tensor is accepted and gets no output. Nothing is
// left in OUT either way.
TEST(BlockPagedOutputs, PageIdPastThePool) {
  Paged p;
  p.seq_ptr = {0, 2};
  p.block_table = {1, 5};  // num_pages 5
  p.tokens = {8};
  const IngestTensor t =
      Make(p, F32s(RandomFloats(5 * 4 * 2 * 3, 7)), nullptr, {});
  const PagedRun strict =
      Ingest(t, OutputFormat::kNpy, 0, "bad_page", Mode::kStrict);
  EXPECT_EQ(RuleIdOf(strict.status).value_or(""), "LAY-BPG-18")
      << strict.status;
  EXPECT_TRUE(ingest::testing::ListDir(strict.dir).empty());
  const PagedRun r =
      Ingest(t, OutputFormat::kNpy, 0, "bad_page", Mode::kPermissive);
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_NE(r.records[0].verdict.find("no output: block-paged index"),
            std::string::npos)
      << r.records[0].verdict;
  EXPECT_TRUE(ingest::testing::ListDir(r.dir).empty());
}

}  // namespace
}  // namespace hurray::stream::ingest
