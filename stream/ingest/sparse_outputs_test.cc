// DequantSink outputs of sparse tensors (layouts/coo.md, csr.md, csc.md,
// csf.md; issue 16 part 2). Quantized ones are densified with each stored
// value dequantized by the parameters of its logical position (per-channel
// i_axis; per-block b = outer · ceil(S / K) + i_axis / K, RESOLUTIONS.md 3),
// the expected values written here from those formulas.
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "parser/element_type.h"
#include "parser/quantization.h"
#include "parser/rules.h"
#include "parser/wire.h"
#include "stream/container/crc32c.h"
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

std::vector<uint8_t> U64s(const std::vector<uint64_t>& v) {
  std::vector<uint8_t> b(v.size() * 8);
  for (size_t i = 0; i < v.size(); ++i) wire::StoreU64(&b[8 * i], v[i]);
  return b;
}

std::vector<uint8_t> I32s(const std::vector<int32_t>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  for (size_t i = 0; i < v.size(); ++i) {
    wire::StoreU32(&b[4 * i], static_cast<uint32_t>(v[i]));
  }
  return b;
}

std::vector<uint8_t> F32s(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  for (size_t i = 0; i < v.size(); ++i) wire::StoreF32(&b[4 * i], v[i]);
  return b;
}

IngestTensor Sparse(uint8_t type, uint8_t layout, std::vector<uint64_t> shape,
                    uint64_t nnz, std::vector<std::vector<uint8_t>> buffers,
                    const QuantizationDescriptor* q) {
  auto d = std::make_unique<TensorDescriptor>();
  d->type_tag = type;
  d->layout_tag = layout;
  d->rank = static_cast<uint32_t>(shape.size());
  for (size_t k = 0; k < shape.size(); ++k) d->shape[k] = shape[k];
  d->layout.nnz = nnz;
  if (layout == layout_tag::kCoo) d->layout.is_sorted = 1;
  if (q != nullptr) {
    d->flags |= flag::kHasQuantization;
    d->quantization = *q;
  }
  d->buffer_count = static_cast<uint32_t>(buffers.size());
  for (uint32_t i = 0; i < d->buffer_count; ++i) {
    d->buffers[i].byte_size = buffers[i].size();
  }
  IngestTensor t;
  t.name = "sparse";
  t.tensor.descriptor = std::move(d);
  t.tensor.buffers = std::move(buffers);
  return t;
}

struct SparseRun {
  absl::Status status;
  std::vector<TensorRecord> records;
  std::string dir;
};

// A float32 file written dense holds the values the sink writes into a
// values buffer instead (DequantSinkOptions::values).
void ExpectSameInMemory(const IngestTensor& t, const DequantSinkOptions& o,
                        absl::Span<const uint8_t> bytes, const SparseRun& r,
                        const std::string& name) {
  const TensorDescriptor& d = *t.tensor.descriptor;
  const bool f32 =
      o.dtype == OutputDtype::kFloat32 ||
      (o.dtype == OutputDtype::kAuto &&
       (d.has(flag::kHasQuantization) || d.type_tag == type_tag::kFloat32));
  if (!r.status.ok() || !f32 || o.format != OutputFormat::kF32 ||
      o.sparse != SparseOutput::kDense || r.records.size() != 1 ||
      r.records[0].output != "tensor_0.f32") {
    return;
  }
  const absl::StatusOr<std::vector<float>> mem =
      ingest::testing::ValuesInMemory(
          bytes, o, ingest::testing::FreshDir(name + "_mem"), 5);
  ASSERT_TRUE(mem.ok()) << mem.status();
  const auto* p = reinterpret_cast<const uint8_t*>(mem->data());
  EXPECT_EQ(std::vector<uint8_t>(p, p + mem->size() * 4),
            ingest::testing::ReadAll(r.dir + "/tensor_0.f32"));
}

SparseRun Ingest(const IngestTensor& t, DequantSinkOptions o,
                 const std::string& name, bool hrry = false) {
  SparseRun r;
  r.dir = ingest::testing::FreshDir(name);
  o.out_dir = r.dir;
  DequantSink sink(o);
  std::unique_ptr<container::ByteConsumer> c =
      MakeConsumer(ContainerFormat::kUnknown, container::FileOptions(), &sink,
                   nullptr, nullptr);
  LoaderOptions lo;
  lo.chunk_size = 5;
  Loader loader(lo);
  std::vector<IngestTensor> v(1);
  v[0].name = t.name;
  v[0].tensor.descriptor =
      std::make_unique<TensorDescriptor>(*t.tensor.descriptor);
  v[0].tensor.buffers = t.tensor.buffers;
  const std::vector<uint8_t> bytes =
      hrry ? ingest::testing::HrryBytes(v) : ingest::testing::StreamBytes(v);
  r.status = loader.Run(LoadSource::Memory(bytes), c.get()).status;
  r.records = sink.records();
  ExpectSameInMemory(t, o, bytes, r, name);
  return r;
}

std::vector<float> ReadF32(const std::string& path) {
  const std::vector<uint8_t> b = ingest::testing::ReadAll(path);
  std::vector<float> f(b.size() / 4);
  for (size_t i = 0; i < f.size(); ++i) f[i] = wire::LoadF32(&b[4 * i]);
  return f;
}

// COO int8 [3, 4], per-channel on axis 1, asymmetric.
TEST(SparseOutputs, QuantizedCooPerChannelDensified) {
  const std::vector<int8_t> codes = {-7, 100, 3};
  const std::vector<float> scales = {0.5f, 0.25f, 2.0f, -1.5f};
  const std::vector<int32_t> zps = {1, -2, 0, 5};
  std::vector<uint8_t> values(codes.size());
  std::memcpy(values.data(), codes.data(), codes.size());
  const QuantizationDescriptor q = *PerChannelAffine::Asymmetric(1, 2, 3);
  const IngestTensor t =
      Sparse(type_tag::kInt8, layout_tag::kCoo, {3, 4}, 3,
             {values, U64s({0, 1, 1, 3, 2, 0}), F32s(scales), I32s(zps)}, &q);
  std::vector<float> want(12, 0.0f);
  want[0 * 4 + 1] = static_cast<float>(-7 - zps[1]) * scales[1];
  want[1 * 4 + 3] = static_cast<float>(100 - zps[3]) * scales[3];
  want[2 * 4 + 0] = static_cast<float>(3 - zps[0]) * scales[0];
  for (uint64_t spool : {uint64_t{24} << 20, uint64_t{0}}) {
    DequantSinkOptions o;
    o.spool_memory_bytes = spool;
    const SparseRun r = Ingest(t, o, "coo_pca");
    ASSERT_TRUE(r.status.ok()) << r.status;
    EXPECT_EQ(r.records[0].output, "tensor_0.f32") << r.records[0].verdict;
    EXPECT_EQ(ReadF32(r.dir + "/tensor_0.f32"), want);
  }
}

// CSR int4 [3, 8], per-block affine on axis 1, block 4, symmetric: scale
// b = row · 2 + column / 4; five codes, the last byte's high nibble unused.
TEST(SparseOutputs, QuantizedCsrPerBlockSubByteDensified) {
  // (row, col, code): (0,2,-3) (0,5,7) (1,7,-8) (2,0,1) (2,4,-1)
  const std::vector<uint8_t> values = {0xD | (7 << 4), 0x8 | (1 << 4), 0xF};
  std::vector<float> scales(6);
  for (size_t i = 0; i < scales.size(); ++i) scales[i] = 0.5f * (i + 1);
  const QuantizationDescriptor q =
      *PerBlockAffine::Symmetric(1, 4, 3, type_tag::kFloat32);
  const IngestTensor t = Sparse(
      type_tag::kInt4, layout_tag::kCsr, {3, 8}, 5,
      {values, U64s({2, 5, 7, 0, 4}), U64s({0, 2, 3, 5}), F32s(scales)}, &q);
  std::vector<float> want(24, 0.0f);
  want[0 * 8 + 2] = -3 * scales[0];
  want[0 * 8 + 5] = 7 * scales[1];
  want[1 * 8 + 7] = -8 * scales[3];
  want[2 * 8 + 0] = 1 * scales[4];
  want[2 * 8 + 4] = -1 * scales[5];
  const SparseRun r = Ingest(t, DequantSinkOptions(), "csr_pba");
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(r.records[0].output, "tensor_0.f32") << r.records[0].verdict;
  EXPECT_EQ(ReadF32(r.dir + "/tensor_0.f32"), want);
}

// A zero per-channel scale of a sparse tensor is the dense rule's
// rejection (QNT-PCA-10), and nothing is published.
TEST(SparseOutputs, QuantizedZeroScaleIsRejected) {
  const QuantizationDescriptor q = *PerChannelAffine::Symmetric(1, 2);
  const IngestTensor t =
      Sparse(type_tag::kInt8, layout_tag::kCoo, {3, 4}, 1,
             {{5}, U64s({1, 2}), F32s({1.0f, 1.0f, 0.0f, 1.0f})}, &q);
  const SparseRun r = Ingest(t, DequantSinkOptions(), "coo_zero");
  ASSERT_FALSE(r.status.ok());
  EXPECT_EQ(RuleIdOf(r.status).value_or(""), "QNT-PCA-10") << r.status;
  EXPECT_TRUE(ingest::testing::ListDir(r.dir).empty());
}

// The .npy file's header text and its data bytes.
std::pair<std::string, std::vector<uint8_t>> Npy(const std::string& path) {
  const std::vector<uint8_t> b = ingest::testing::ReadAll(path);
  if (b.size() < 10) return {};
  const size_t len = b[8] | (b[9] << 8);
  return {std::string(b.begin() + 10, b.begin() + 10 + len),
          std::vector<uint8_t>(b.begin() + 10 + len, b.end())};
}

// --sparse keep: the values in stored order, the index arrays as stored.
TEST(SparseOutputs, KeepWritesTheArrays) {
  const std::vector<float> vals = {1.5f, -2.0f, 4.0f};
  const std::vector<uint8_t> idx = U64s({2, 1, 0, 3, 1, 0});  // unsorted
  IngestTensor t = Sparse(type_tag::kFloat32, layout_tag::kCoo, {3, 4}, 3,
                          {F32s(vals), idx}, nullptr);
  t.tensor.descriptor->layout.is_sorted = 0;
  DequantSinkOptions o;
  o.format = OutputFormat::kNpy;
  o.sparse = SparseOutput::kKeep;
  for (bool hrry : {false, true}) {
    SCOPED_TRACE(hrry);
    const SparseRun r = Ingest(t, o, "coo_keep", hrry);
    ASSERT_TRUE(r.status.ok()) << r.status;
    const std::string base = hrry ? "sparse" : "tensor_0";
    EXPECT_EQ(ingest::testing::ListDir(r.dir),
              (std::vector<std::string>{base + ".indices.npy",
                                        base + ".values.npy"}));
    EXPECT_EQ(r.records[0].output, base + ".values.npy");
    ASSERT_EQ(r.records[0].more.size(), 1u);
    EXPECT_EQ(r.records[0].more[0].output, base + ".indices.npy");
    EXPECT_EQ(r.records[0].more[0].part, ".indices");
    EXPECT_TRUE(r.records[0].more[0].pending.empty());
    EXPECT_NE(r.records[0].verdict.find("kept sparse"), std::string::npos)
        << r.records[0].verdict;
    const auto [vh, vd] = Npy(r.dir + "/" + base + ".values.npy");
    EXPECT_NE(vh.find("'descr': '<f4'"), std::string::npos) << vh;
    EXPECT_NE(vh.find("'shape': (3,)"), std::string::npos) << vh;
    EXPECT_EQ(vd, F32s(vals));
    const auto [ih, id] = Npy(r.dir + "/" + base + ".indices.npy");
    EXPECT_NE(ih.find("'descr': '<u8'"), std::string::npos) << ih;
    EXPECT_NE(ih.find("'shape': (3, 2)"), std::string::npos) << ih;
    EXPECT_EQ(id, idx);
  }
}

// The CRC-32C of a whole file.
uint32_t FileCrc(const std::string& path) {
  return container::Crc32c(ingest::testing::ReadAll(path));
}

// CSR above --max-dense-bytes: kept as values, indices, indptr, in a
// resumable run too (keep_unnamed_outputs: each array with its CRC-32C for
// the resume state), for a bare stream and a .hrry file alike.
TEST(SparseOutputs, AboveTheDenseLimitIsKept) {
  const IngestTensor t =
      Sparse(type_tag::kInt16, layout_tag::kCsr, {3, 4}, 2,
             {{7, 0, 0xFD, 0xFF}, U64s({1, 3}), U64s({0, 1, 1, 2})}, nullptr);
  DequantSinkOptions o;
  o.format = OutputFormat::kNpy;
  o.max_dense_bytes = 23;  // the dense int16 [3, 4] takes 24
  SparseRun r = Ingest(t, o, "csr_large");
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(
      ingest::testing::ListDir(r.dir),
      (std::vector<std::string>{"tensor_0.indices.npy", "tensor_0.indptr.npy",
                                "tensor_0.values.npy"}));
  EXPECT_EQ(Npy(r.dir + "/tensor_0.values.npy").second,
            (std::vector<uint8_t>{7, 0, 0xFD, 0xFF}));
  EXPECT_EQ(Npy(r.dir + "/tensor_0.indptr.npy").second, U64s({0, 1, 1, 2}));
  o.max_dense_bytes = 24;
  r = Ingest(t, o, "csr_fits");
  EXPECT_EQ(ingest::testing::ListDir(r.dir),
            std::vector<std::string>{"tensor_0.npy"});
  o.max_dense_bytes = 23;
  o.keep_unnamed_outputs = true;
  for (bool hrry : {false, true}) {
    SCOPED_TRACE(hrry);
    r = Ingest(t, o, "csr_resumable", hrry);
    ASSERT_TRUE(r.status.ok()) << r.status;
    const std::string base = hrry ? "sparse" : "tensor_0";
    EXPECT_EQ(
        ingest::testing::ListDir(r.dir),
        (std::vector<std::string>{base + ".indices.npy", base + ".indptr.npy",
                                  base + ".values.npy"}));
    EXPECT_NE(r.records[0].verdict.find("kept sparse"), std::string::npos)
        << r.records[0].verdict;
    EXPECT_EQ(Npy(r.dir + "/" + base + ".values.npy").second,
              (std::vector<uint8_t>{7, 0, 0xFD, 0xFF}));
    EXPECT_EQ(Npy(r.dir + "/" + base + ".indices.npy").second, U64s({1, 3}));
    EXPECT_EQ(Npy(r.dir + "/" + base + ".indptr.npy").second,
              U64s({0, 1, 1, 2}));
    const TensorRecord& rec = r.records[0];
    EXPECT_EQ(rec.output, base + ".values.npy");
    EXPECT_EQ(rec.part, ".values");
    EXPECT_EQ(rec.output_crc32c, FileCrc(r.dir + "/" + rec.output));
    ASSERT_EQ(rec.more.size(), 2u);
    EXPECT_EQ(rec.more[0].part, ".indices");
    EXPECT_EQ(rec.more[1].part, ".indptr");
    for (const TensorRecord::MoreOutput& m : rec.more) {
      EXPECT_EQ(m.output, base + m.part + ".npy");
      EXPECT_TRUE(m.pending.empty());
      EXPECT_EQ(m.crc32c, FileCrc(r.dir + "/" + m.output)) << m.part;
    }
  }
}

// Kept quantized values are dequantized in stored order, each with the
// parameters of its own position.
TEST(SparseOutputs, KeptQuantizedValuesAreDequantized) {
  const std::vector<float> scales = {0.5f, 0.25f, 2.0f, -1.5f};
  const QuantizationDescriptor q = *PerChannelAffine::Symmetric(1, 2);
  // (2, 3) code 4, (0, 1) code -6: COO need not be sorted.
  IngestTensor t = Sparse(type_tag::kInt8, layout_tag::kCoo, {3, 4}, 2,
                          {{4, 0xFA}, U64s({2, 3, 0, 1}), F32s(scales)}, &q);
  t.tensor.descriptor->layout.is_sorted = 0;
  DequantSinkOptions o;
  o.sparse = SparseOutput::kKeep;
  const SparseRun r = Ingest(t, o, "coo_keep_q");
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(ReadF32(r.dir + "/tensor_0.values.f32"),
            (std::vector<float>{4 * scales[3], -6 * scales[1]}));
  EXPECT_EQ(ingest::testing::ReadAll(r.dir + "/tensor_0.indices.u64"),
            U64s({2, 3, 0, 1}));
}

// The index data rules run where the data passes (parser/data_checks.h):
// a broken index array is its rule's rejection, at the byte of that array,
// with no output published, in validate-only runs too; permissive mode does
// not check them (they are strict-only).
TEST(SparseOutputs, IndexDataRulesAreEnforced) {
  struct Case {
    const char* rule;
    uint32_t buffer;
    uint64_t offset;
    std::vector<uint64_t> cols, ptr;
  };
  const Case cases[] = {
      {"LAY-CSR-04", 2, 0, {1, 3}, {1, 1, 1, 2}},
      {"LAY-CSR-05", 2, 24, {1, 3}, {0, 1, 1, 1}},
      {"LAY-CSR-06", 2, 16, {1, 3}, {0, 2, 1, 2}},
      {"LAY-CSR-07", 1, 8, {3, 1}, {0, 2, 2, 2}},
      {"LAY-CSR-08", 1, 8, {1, 4}, {0, 1, 1, 2}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.rule);
    const IngestTensor t =
        Sparse(type_tag::kInt16, layout_tag::kCsr, {3, 4}, 2,
               {{7, 0, 0xFD, 0xFF}, U64s(c.cols), U64s(c.ptr)}, nullptr);
    for (const bool hrry : {false, true}) {
      const SparseRun r = Ingest(t, DequantSinkOptions(), "csr_broken", hrry);
      ASSERT_FALSE(r.status.ok());
      EXPECT_EQ(RuleIdOf(r.status).value_or(""), c.rule) << r.status;
      EXPECT_EQ(OffsetOf(r.status).value_or(99), c.offset) << r.status;
      EXPECT_NE(r.status.message().find(absl::StrCat("of buffer ", c.buffer)),
                absl::string_view::npos)
          << r.status;
      EXPECT_TRUE(ingest::testing::ListDir(r.dir).empty());
    }
    ValidateSink validate;
    std::unique_ptr<container::ByteConsumer> consumer =
        MakeConsumer(ContainerFormat::kUnknown, container::FileOptions(),
                     &validate, nullptr, nullptr);
    std::vector<IngestTensor> v(1);
    v[0].tensor.descriptor =
        std::make_unique<TensorDescriptor>(*t.tensor.descriptor);
    v[0].tensor.buffers = t.tensor.buffers;
    const std::vector<uint8_t> bytes = ingest::testing::StreamBytes(v);
    Loader loader{LoaderOptions()};
    const absl::Status s =
        loader.Run(LoadSource::Memory(bytes), consumer.get()).status;
    EXPECT_EQ(RuleIdOf(s).value_or(""), c.rule) << s;
    ValidateSink permissive(Mode::kPermissive);
    std::unique_ptr<container::ByteConsumer> lenient =
        MakeConsumer(ContainerFormat::kUnknown, container::FileOptions(),
                     &permissive, nullptr, nullptr);
    Loader loader2{LoaderOptions()};
    EXPECT_TRUE(
        loader2.Run(LoadSource::Memory(bytes), lenient.get()).status.ok());
  }
  // The same tensor with a valid index passes.
  const IngestTensor ok =
      Sparse(type_tag::kInt16, layout_tag::kCsr, {3, 4}, 2,
             {{7, 0, 0xFD, 0xFF}, U64s({1, 3}), U64s({0, 1, 1, 2})}, nullptr);
  const SparseRun r = Ingest(ok, DequantSinkOptions(), "csr_ok");
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(r.records[0].output, "tensor_0.f32") << r.records[0].verdict;
}

}  // namespace
}  // namespace hurray::stream::ingest
