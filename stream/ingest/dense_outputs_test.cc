// DequantSink outputs of plain tensors in every dense layout and of every
// integer type (issue 16 part 2): the values in logical row-major order,
// against the scalar dequantization reference of the same codes stored as a
// per-tensor affine tensor with scale 1 and zero point 0 (q as a float);
// and the .npy files: numpy's header, the tensor's own dtype.
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "dequant/scalar.h"
#include "dequant/testing/test_tensor.h"
#include "gtest/gtest.h"
#include "parser/decoder.h"
#include "parser/element_type.h"
#include "parser/encoder.h"
#include "parser/wire.h"
#include "stream/ingest/consumers.h"
#include "stream/ingest/loader.h"
#include "stream/ingest/output/npy.h"
#include "stream/ingest/sinks.h"
#include "stream/ingest/testing/loader_test_util.h"

namespace hurray::stream::ingest {
namespace {

using container::ContainerFormat;
using dequant::Scheme;
using dequant::testing::TensorSpec;
using dequant::testing::TestTensor;
using ingest::testing::IngestTensor;
using resume::TensorRecord;

// A plain tensor of `type` in a random layout `layout`, and its values as
// float32 in logical row-major order.
IngestTensor PlainInLayout(uint8_t type, uint8_t layout, bool interleaved,
                           const std::vector<uint64_t>& shape,
                           std::mt19937_64& rng) {
  TensorSpec s;
  s.scheme = Scheme::kPerTensorAffine;
  s.storage_type = type;
  s.shape = shape;
  s.layout = dequant::testing::RandomLayout(layout, shape, rng, interleaved);
  TestTensor t = dequant::testing::MakeTensor(s, rng);
  t.descriptor->quantization.scale = 1.0f;
  t.descriptor->quantization.zero_point = 0;
  std::vector<float> ref;
  EXPECT_TRUE(
      dequant::ReferenceDequantize(*t.descriptor, t.data(), t.params(), &ref)
          .ok());
  // The same bytes as a plain tensor.
  TensorDescriptor d = *t.descriptor;
  d.flags &= ~flag::kHasQuantization;
  d.quantization = QuantizationDescriptor();
  absl::StatusOr<std::vector<uint8_t>> wire = Encode(d);
  EXPECT_TRUE(wire.ok()) << wire.status();
  absl::StatusOr<TensorDescriptor> back = Decode(*wire);
  EXPECT_TRUE(back.ok()) << back.status();
  *t.descriptor = *back;
  IngestTensor it;
  it.name = absl::StrCat(ElementTypeName(type), "_", s.layout.Name());
  it.tensor = std::move(t);
  it.expected.resize(ref.size() * 4);
  for (size_t i = 0; i < ref.size(); ++i) {
    wire::StoreF32(&it.expected[4 * i], ref[i]);
  }
  return it;
}

struct IngestRun {
  absl::Status status;
  std::vector<TensorRecord> records;
};

IngestRun Ingest(const std::vector<IngestTensor>& tensors, DequantSinkOptions o,
                 size_t chunk) {
  DequantSink sink(o);
  std::unique_ptr<container::ByteConsumer> c =
      MakeConsumer(ContainerFormat::kUnknown, container::FileOptions(), &sink,
                   nullptr, nullptr);
  LoaderOptions lo;
  lo.chunk_size = chunk;
  Loader loader(lo);
  const std::vector<uint8_t> bytes = ingest::testing::StreamBytes(tensors);
  IngestRun r;
  r.status = loader.Run(LoadSource::Memory(bytes), c.get()).status;
  r.records = sink.records();
  return r;
}

const uint8_t kIntTypes[] = {
    type_tag::kInt8,  type_tag::kUInt8,  type_tag::kInt16, type_tag::kUInt16,
    type_tag::kInt32, type_tag::kUInt32, type_tag::kInt4,  type_tag::kUInt4,
    type_tag::kInt2,  type_tag::kUInt2};

std::vector<IngestTensor> AllLayouts(uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<IngestTensor> out;
  for (uint8_t type : kIntTypes) {
    struct L {
      uint8_t tag;
      bool interleaved;
      std::vector<uint64_t> shape;
    };
    const L layouts[] = {
        {layout_tag::kRowMajor, false, {3, 5}},
        {layout_tag::kColumnMajor, false, {5, 7}},
        {layout_tag::kStrided, false, {4, 3, 2}},
        {layout_tag::kStrided, true, {4, 3}},
        {layout_tag::kTiled, false, {5, 13}},
        {layout_tag::kMorton, false, {3, 6}},
        {layout_tag::kHilbert, false, {8, 8}},
    };
    for (const L& l : layouts) {
      out.push_back(PlainInLayout(type, l.tag, l.interleaved, l.shape, rng));
    }
  }
  return out;
}

TEST(DenseOutputs, EveryLayoutAndIntegerTypeInRowMajorOrder) {
  const std::vector<IngestTensor> tensors = AllLayouts(3);
  for (size_t chunk : {size_t{1}, size_t{7}, size_t{1} << 20}) {
    for (uint64_t spool : {uint64_t{0}, uint64_t{1} << 20}) {
      SCOPED_TRACE(::testing::Message()
                   << "chunk " << chunk << " spool " << spool);
      DequantSinkOptions o;
      o.out_dir = ingest::testing::FreshDir("dense_f32");
      o.format = OutputFormat::kF32;
      o.spool_memory_bytes = spool;
      const IngestRun r = Ingest(tensors, o, chunk);
      ASSERT_TRUE(r.status.ok()) << r.status;
      ASSERT_EQ(r.records.size(), tensors.size());
      for (size_t i = 0; i < tensors.size(); ++i) {
        SCOPED_TRACE(tensors[i].name);
        EXPECT_EQ(r.records[i].output, absl::StrCat("tensor_", i, ".f32"))
            << r.records[i].verdict;
        EXPECT_TRUE(
            ingest::testing::ReadAll(o.out_dir + "/" + r.records[i].output) ==
            tensors[i].expected);
      }
      // Nothing but the outputs: the spools are gone.
      EXPECT_EQ(ingest::testing::ListDir(o.out_dir).size(), tensors.size());
    }
  }
}

// .npy: numpy's header with the tensor's own integer dtype, then the values.
TEST(DenseOutputs, NpyKeepsTheIntegerTypes) {
  const std::vector<IngestTensor> tensors = AllLayouts(4);
  DequantSinkOptions o;
  o.out_dir = ingest::testing::FreshDir("dense_npy");
  o.format = OutputFormat::kNpy;
  const IngestRun r = Ingest(tensors, o, 4096);
  ASSERT_TRUE(r.status.ok()) << r.status;
  for (size_t i = 0; i < tensors.size(); ++i) {
    SCOPED_TRACE(tensors[i].name);
    const TensorDescriptor& d = *tensors[i].tensor.descriptor;
    const std::string descr = [&]() -> std::string {
      switch (d.type_tag) {
        case type_tag::kInt8:
          return "|i1";
        case type_tag::kUInt8:
          return "|u1";
        case type_tag::kInt16:
          return "<i2";
        case type_tag::kUInt16:
          return "<u2";
        case type_tag::kInt32:
          return "<i4";
        case type_tag::kUInt32:
          return "<u4";
        default:
          return "<f4";  // the sub-byte integers
      }
    }();
    const std::string header = NpyHeader(descr, d.dims());
    ASSERT_EQ(r.records[i].output, absl::StrCat("tensor_", i, ".npy"));
    const std::vector<uint8_t> got =
        ingest::testing::ReadAll(o.out_dir + "/" + r.records[i].output);
    ASSERT_GE(got.size(), header.size());
    EXPECT_EQ(std::string(got.begin(), got.begin() + header.size()), header);
    const size_t n = tensors[i].expected.size() / 4;
    const size_t width = (got.size() - header.size()) / n;
    ASSERT_EQ(header.size() + n * width, got.size());
    for (size_t k = 0; k < n; ++k) {
      const uint8_t* p = got.data() + header.size() + k * width;
      double v = 0;
      switch (d.type_tag) {
        case type_tag::kInt8:
          v = static_cast<int8_t>(p[0]);
          break;
        case type_tag::kUInt8:
          v = p[0];
          break;
        case type_tag::kInt16:
          v = static_cast<int16_t>(wire::LoadU16(p));
          break;
        case type_tag::kUInt16:
          v = wire::LoadU16(p);
          break;
        case type_tag::kInt32:
          v = wire::LoadI32(p);
          break;
        case type_tag::kUInt32:
          v = wire::LoadU32(p);
          break;
        default:
          v = wire::LoadF32(p);
      }
      ASSERT_EQ(static_cast<float>(v),
                wire::LoadF32(&tensors[i].expected[4 * k]))
          << "element " << k;
    }
  }
}

// --dtype float16: every value rounded once, from the exact value.
TEST(DenseOutputs, DtypeFloat16) {
  std::mt19937_64 rng(5);
  std::vector<IngestTensor> tensors;
  tensors.push_back(PlainInLayout(type_tag::kInt32, layout_tag::kColumnMajor,
                                  false, {4, 6}, rng));
  DequantSinkOptions o;
  o.out_dir = ingest::testing::FreshDir("dense_f16");
  o.format = OutputFormat::kNpy;
  o.dtype = OutputDtype::kFloat16;
  const IngestRun r = Ingest(tensors, o, 4096);
  ASSERT_TRUE(r.status.ok()) << r.status;
  const std::vector<uint8_t> got =
      ingest::testing::ReadAll(o.out_dir + "/" + r.records[0].output);
  const std::string header = NpyHeader("<f2", std::vector<uint64_t>{4, 6});
  ASSERT_EQ(got.size(), header.size() + 2 * 24);
  for (size_t k = 0; k < 24; ++k) {
    // int32 codes: the float32 expected value is rounded already, so take
    // the exact code from the stored bytes through the float's sign/size:
    // float16 overflows to infinity for any |q| >= 65520.
    const float want = wire::LoadF32(&tensors[0].expected[4 * k]);
    const uint16_t bits = wire::LoadU16(&got[header.size() + 2 * k]);
    if (std::abs(want) >= 65520.0f) {
      EXPECT_EQ(bits & 0x7FFF, 0x7C00) << k;
    } else {
      EXPECT_EQ(bits, DoubleToF16Bits(want)) << k;
    }
  }
}

}  // namespace
}  // namespace hurray::stream::ingest
