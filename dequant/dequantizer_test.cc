// The streaming API: pieces, output sizing, byte_offset and trailing bytes,
// errors that consume nothing, the layouts and tensors it refuses, and the
// library's own quantized vectors (tests/vectors.h).
#include "dequant/dequantizer.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "dequant/output.h"
#include "dequant/scalar.h"
#include "dequant/testing/test_tensor.h"
#include "gtest/gtest.h"
#include "parser/element_type.h"
#include "parser/quantization.h"
#include "tests/vectors.h"

namespace hurray::dequant {
namespace {

using namespace type_tag;  // NOLINT
using testing::FirstBitDifference;
using testing::MakeTensor;
using testing::TensorSpec;
using testing::TestTensor;

TensorSpec Int6Spec() {  // 6-bit groups of 3 bytes, 20 elements = 15 bytes
  TensorSpec spec;
  spec.scheme = Scheme::kMxfp;
  spec.storage_type = kFloat6E2M3;
  spec.shape = {20, 16};
  spec.axis = 1;
  spec.block_size = 16;
  return spec;
}

std::vector<float> Reference(const TestTensor& t) {
  std::vector<float> out;
  EXPECT_TRUE(
      ReferenceDequantize(*t.descriptor, t.data(), t.params(), &out).ok());
  return out;
}

class DequantizerTest : public ::testing::Test {
 protected:
  std::mt19937_64 rng_{5};
};

TEST_F(DequantizerTest, ByteAtATime) {
  TensorSpec spec = Int6Spec();
  spec.byte_offset = 5;
  const TestTensor t = MakeTensor(spec, rng_);
  absl::StatusOr<Dequantizer> dq =
      Dequantizer::Create(*t.descriptor, t.params());
  ASSERT_TRUE(dq.ok()) << dq.status();
  std::vector<float> out;
  for (size_t i = 0; i < t.data().size(); ++i) {
    const uint64_t n = dq->OutputCountFor(1);
    // Only the third byte of a 6-bit group completes elements (four).
    EXPECT_EQ(n, i >= 5 && (i - 5) % 3 == 2 ? 4u : 0u) << i;
    std::vector<float> piece(n);
    size_t written = 99;
    ASSERT_TRUE(
        dq->Consume(t.data().subspan(i, 1), absl::MakeSpan(piece), &written)
            .ok());
    EXPECT_EQ(written, n);
    out.insert(out.end(), piece.begin(), piece.end());
    EXPECT_EQ(dq->elements_written(), out.size());
  }
  EXPECT_TRUE(dq->done());
  EXPECT_TRUE(dq->Finish().ok());
  EXPECT_EQ(FirstBitDifference(out, Reference(t)), -1);
}

TEST_F(DequantizerTest, MultiByteValuesCutAnywhere) {
  for (uint8_t type : {kInt16, kUInt16, kInt32, kUInt32}) {
    TensorSpec spec;
    spec.scheme = Scheme::kPerChannelAffine;
    spec.storage_type = type;
    spec.shape = {3, 5};
    spec.axis = 1;
    spec.byte_offset = 3;  // misaligned values
    const TestTensor t = MakeTensor(spec, rng_);
    const std::vector<float> want = Reference(t);
    for (size_t cut = 0; cut <= t.data().size(); ++cut) {
      absl::StatusOr<Dequantizer> dq =
          Dequantizer::Create(*t.descriptor, t.params());
      ASSERT_TRUE(dq.ok());
      std::vector<float> out(want.size());
      size_t a = 0, b = 0;
      ASSERT_TRUE(
          dq->Consume(t.data().subspan(0, cut), absl::MakeSpan(out), &a).ok());
      ASSERT_TRUE(
          dq->Consume(t.data().subspan(cut), absl::MakeSpan(out).subspan(a), &b)
              .ok());
      EXPECT_EQ(a + b, want.size());
      EXPECT_EQ(FirstBitDifference(out, want), -1)
          << ElementTypeName(type) << " cut " << cut;
    }
  }
}

TEST_F(DequantizerTest, RestartRewindsTheStream) {
  TensorSpec spec = Int6Spec();
  spec.byte_offset = 2;
  const TestTensor t = MakeTensor(spec, rng_);
  absl::StatusOr<Dequantizer> dq =
      Dequantizer::Create(*t.descriptor, t.params());
  ASSERT_TRUE(dq.ok());
  std::vector<float> out(320);
  size_t written = 0;
  ASSERT_TRUE(
      dq->Consume(t.data().subspan(0, 50), absl::MakeSpan(out), &written).ok());
  dq->Restart();
  EXPECT_EQ(dq->elements_written(), 0u);
  ASSERT_TRUE(dq->Consume(t.data(), absl::MakeSpan(out), &written).ok());
  EXPECT_EQ(written, 320u);
  EXPECT_TRUE(dq->Finish().ok());
  EXPECT_EQ(FirstBitDifference(out, Reference(t)), -1);
}

TEST_F(DequantizerTest, TrailingBytesAfterTheTensorAreIgnored) {
  TensorSpec spec;
  spec.scheme = Scheme::kPerBlockAffine;
  spec.storage_type = kUInt2;
  spec.shape = {9};
  spec.block_size = 4;
  TestTensor t = MakeTensor(spec, rng_);
  const std::vector<float> want = Reference(t);
  t.buffers[0].insert(t.buffers[0].end(), {0xAB, 0xCD, 0xEF});
  t.descriptor->buffers[0].byte_size += 3;
  std::vector<float> out;
  ASSERT_TRUE(DequantizeAll(*t.descriptor, t.data(), t.params(), &out).ok());
  EXPECT_EQ(FirstBitDifference(out, want), -1);
}

// A descriptor that never met the validator is refused by Create, with
// `what` in the message, and by the reference alike.
void ExpectUnvalidatedRefused(const TestTensor& t, absl::string_view what) {
  const absl::StatusOr<Dequantizer> dq =
      Dequantizer::Create(*t.descriptor, t.params());
  EXPECT_EQ(dq.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(dq.status().message(), what)) << dq.status();
  std::vector<float> out;
  EXPECT_EQ(
      ReferenceDequantize(*t.descriptor, t.data(), t.params(), &out).code(),
      absl::StatusCode::kInvalidArgument);
}

// Descriptors that never met the validator (DESC-SHP-03 unchecked): a
// byte_offset past the data buffer, or one so large that its bit position
// would overflow, is refused by Create and by the reference alike, before
// any arithmetic on it (found by dequant_fuzz).
TEST_F(DequantizerTest, UnvalidatedByteOffsetIsRefused) {
  for (const uint8_t tag : {layout_tag::kRowMajor, layout_tag::kStrided}) {
    TensorSpec spec;
    spec.scheme = Scheme::kPerTensorAffine;
    spec.storage_type = kInt8;
    spec.shape = {3, 4};
    spec.layout.tag = tag;
    if (tag == layout_tag::kStrided) spec.layout.strides = {1, 3};
    TestTensor t = MakeTensor(spec, rng_);
    const uint64_t size = t.descriptor->buffers[0].byte_size;
    for (const uint64_t offset : {size + 1, uint64_t{1} << 62, ~uint64_t{0}}) {
      t.descriptor->byte_offset = offset;
      if (offset > size + 1) {
        t.descriptor->buffers[0].byte_size = ~uint64_t{0};  // claims it all
      }
      SCOPED_TRACE(offset);
      ExpectUnvalidatedRefused(t, "byte_offset");
    }
  }
}

// Four rows of `row` int4 codes in per-block blocks of k along the rows,
// row-major or strided (one column after the other).
TensorSpec PerBlockInt4Rows(uint8_t layout, uint64_t row, uint32_t k) {
  TensorSpec spec;
  spec.scheme = Scheme::kPerBlockAffine;
  spec.storage_type = kInt4;
  spec.shape = {4, row};
  spec.axis = 1;
  spec.block_size = k;
  spec.layout.tag = layout;
  if (layout == layout_tag::kStrided) spec.layout.strides = {1, 4};
  return spec;
}

// Descriptors that never met the validator (QNT-PBA-02/NF4-02/MX-02
// unchecked): a block_size that is not a power of two would make the storage
// walk's shift-based block index run past the scale array, so Create and the
// reference refuse it (found by dequant_fuzz as a heap overflow in
// ScatterElements<4>; seed corpus/dequant_fuzz/
// regression_scatter_param_overflow.bin).
TEST_F(DequantizerTest, UnvalidatedNonPowerOfTwoBlockSizeIsRefused) {
  for (const uint8_t tag : {layout_tag::kRowMajor, layout_tag::kStrided}) {
    TestTensor t = MakeTensor(PerBlockInt4Rows(tag, 12, 4), rng_);
    ASSERT_TRUE(Dequantizer::Create(*t.descriptor, t.params()).ok());
    // 6 divides 12: the parameter count (2 blocks per row) and the buffer
    // sizes still agree, only the power-of-two rule is broken.
    for (const uint32_t k : {3u, 6u}) {
      t.descriptor->quantization.block_size = k;
      SCOPED_TRACE(k);
      ExpectUnvalidatedRefused(t, "power of two");
    }
  }
}

// Descriptors that never met the validator (TYPE-EXT-01 unchecked): the
// extension-type flag on a built-in storage tag makes the descriptor's
// element width that of its (here empty) extension type, so the reference
// could not address the elements while the row-major kernels, which go by
// the storage tag, dequantized them; both refuse it now (found by
// dequant_fuzz; seed corpus/dequant_fuzz/regression_extension_flag.bin).
TEST_F(DequantizerTest, UnvalidatedExtensionFlagOnABuiltInTypeIsRefused) {
  for (const uint8_t tag : {layout_tag::kRowMajor, layout_tag::kStrided}) {
    TestTensor t = MakeTensor(PerBlockInt4Rows(tag, 32, 32), rng_);
    ASSERT_TRUE(Dequantizer::Create(*t.descriptor, t.params()).ok());
    t.descriptor->flags |= flag::kHasExtensionType;
    SCOPED_TRACE(tag);
    ExpectUnvalidatedRefused(t, "element width");
  }
}

TEST_F(DequantizerTest, ShortOutputConsumesNothing) {
  const TestTensor t = MakeTensor(Int6Spec(), rng_);
  absl::StatusOr<Dequantizer> dq =
      Dequantizer::Create(*t.descriptor, t.params());
  ASSERT_TRUE(dq.ok());
  std::vector<float> out(dq->OutputCountFor(t.data().size()));
  ASSERT_EQ(out.size(), 320u);
  size_t written = 0;
  const absl::Status s = dq->Consume(
      t.data(), absl::MakeSpan(out).subspan(0, out.size() - 1), &written);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(written, 0u);
  EXPECT_EQ(dq->elements_written(), 0u);
  ASSERT_TRUE(dq->Consume(t.data(), absl::MakeSpan(out), &written).ok());
  EXPECT_EQ(written, 320u);
  EXPECT_EQ(FirstBitDifference(out, Reference(t)), -1);
}

// Feed, the streaming entry point: row-major storage writes through a
// reused window in order, committing exactly what each piece completes.
TEST_F(DequantizerTest, FeedWritesRowMajorThroughAWindow) {
  TensorSpec spec = Int6Spec();
  spec.byte_offset = 3;
  const TestTensor t = MakeTensor(spec, rng_);
  absl::StatusOr<Dequantizer> dq =
      Dequantizer::Create(*t.descriptor, t.params());
  ASSERT_TRUE(dq.ok()) << dq.status();
  std::vector<float> got;
  WindowOutput out([&](uint64_t first, absl::Span<const float> f) {
    EXPECT_EQ(first, got.size());
    got.insert(got.end(), f.begin(), f.end());
    return absl::OkStatus();
  });
  for (size_t at = 0; at < t.data().size(); at += 4) {
    const size_t n = std::min<size_t>(4, t.data().size() - at);
    ASSERT_TRUE(dq->Feed(t.data().subspan(at, n), out).ok()) << at;
  }
  ASSERT_TRUE(dq->Finish().ok());
  EXPECT_EQ(FirstBitDifference(got, Reference(t)), -1);
}

// Other layouts need the whole tensor: an output that cannot lend it is
// refused before anything is consumed; a whole-tensor output then works.
TEST_F(DequantizerTest, FeedAsksForTheWholeTensorOutOfOrder) {
  TensorSpec spec = Int6Spec();
  spec.layout.tag = layout_tag::kColumnMajor;
  const TestTensor t = MakeTensor(spec, rng_);
  absl::StatusOr<Dequantizer> dq =
      Dequantizer::Create(*t.descriptor, t.params());
  ASSERT_TRUE(dq.ok()) << dq.status();
  ASSERT_FALSE(dq->in_order());
  WindowOutput window(
      [](uint64_t, absl::Span<const float>) { return absl::OkStatus(); });
  EXPECT_EQ(dq->Feed(t.data(), window).code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(dq->elements_written(), 0u);
  std::vector<float> tensor(dq->plan().logical_elements);
  TensorOutput whole(absl::MakeSpan(tensor));
  ASSERT_TRUE(dq->Feed(t.data(), whole).ok());
  ASSERT_TRUE(dq->Finish().ok());
  EXPECT_EQ(FirstBitDifference(tensor, Reference(t)), -1);
}

// A failing Commit stops that Feed with the output's status.
TEST_F(DequantizerTest, FeedReturnsTheCommitStatus) {
  const TestTensor t = MakeTensor(Int6Spec(), rng_);
  absl::StatusOr<Dequantizer> dq =
      Dequantizer::Create(*t.descriptor, t.params());
  ASSERT_TRUE(dq.ok());
  WindowOutput out([](uint64_t, absl::Span<const float>) {
    return absl::DataLossError("disk full");
  });
  const absl::Status s = dq->Feed(t.data(), out);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(s.message(), "disk full");
}

TEST_F(DequantizerTest, DataPastTheBufferIsRefused) {
  const TestTensor t = MakeTensor(Int6Spec(), rng_);
  absl::StatusOr<Dequantizer> dq =
      Dequantizer::Create(*t.descriptor, t.params());
  ASSERT_TRUE(dq.ok());
  std::vector<uint8_t> more(t.data().begin(), t.data().end());
  more.push_back(0);
  std::vector<float> out(400);
  size_t written = 0;
  EXPECT_EQ(dq->Consume(more, absl::MakeSpan(out), &written).code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_EQ(written, 0u);
  EXPECT_TRUE(dq->Consume(t.data(), absl::MakeSpan(out), &written).ok());
  EXPECT_EQ(dq->Consume(absl::MakeConstSpan(more).subspan(0, 1),
                        absl::MakeSpan(out), &written)
                .code(),
            absl::StatusCode::kOutOfRange);
}

TEST_F(DequantizerTest, FinishReportsMissingData) {
  const TestTensor t = MakeTensor(Int6Spec(), rng_);
  absl::StatusOr<Dequantizer> dq =
      Dequantizer::Create(*t.descriptor, t.params());
  ASSERT_TRUE(dq.ok());
  std::vector<float> out(400);
  size_t written = 0;
  ASSERT_TRUE(
      dq->Consume(t.data().subspan(0, 100), absl::MakeSpan(out), &written)
          .ok());
  EXPECT_FALSE(dq->done());
  const absl::Status s = dq->Finish();
  EXPECT_EQ(s.code(), absl::StatusCode::kOutOfRange);
  EXPECT_TRUE(absl::StrContains(s.message(), "132 of 320")) << s;
  std::vector<float> all;
  EXPECT_EQ(
      DequantizeAll(*t.descriptor, t.data().subspan(0, 100), t.params(), &all)
          .code(),
      absl::StatusCode::kOutOfRange);
}

TEST_F(DequantizerTest, SparseLayoutsAreNotImplemented) {
  TensorSpec spec;
  spec.scheme = Scheme::kPerTensorAffine;
  spec.storage_type = kInt8;
  spec.shape = {4, 4};
  TestTensor t = MakeTensor(spec, rng_);
  t.descriptor->layout_tag = layout_tag::kCsr;
  const absl::Status s =
      Dequantizer::Create(*t.descriptor, t.params()).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(s.message(),
            "layout csr: dequantization is implemented for dense layouts only "
            "(row-major, column-major, strided, tiled, Morton, Hilbert)");
  // Column-major is dense: it goes through ConsumeScattered.
  t.descriptor->layout_tag = layout_tag::kColumnMajor;
  absl::StatusOr<Dequantizer> dq =
      Dequantizer::Create(*t.descriptor, t.params());
  ASSERT_TRUE(dq.ok()) << dq.status();
  EXPECT_FALSE(dq->in_order());
}

TEST_F(DequantizerTest, RefusesUnquantizedAndDynamicTensors) {
  std::unique_ptr<TensorDescriptor> plain = vectors::Dense(kFloat32, {4});
  EXPECT_EQ(Dequantizer::Create(*plain, {}).status().code(),
            absl::StatusCode::kFailedPrecondition);
  TensorSpec spec;
  spec.scheme = Scheme::kPerTensorAffine;
  spec.storage_type = kInt8;
  spec.shape = {4, 4};
  TestTensor t = MakeTensor(spec, rng_);
  t.descriptor->shape[0] = kDynamicDim;
  EXPECT_EQ(Dequantizer::Create(*t.descriptor, t.params()).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

// An empty tensor whose other dimensions multiply past 64 bits, with the
// zero anywhere: the element count is exactly 0 (wire::CheckedProduct). The
// zero last used to fail as "shape overflows" (gguf_fuzz found it through a
// GGUF tensor converted as is).
TEST_F(DequantizerTest, EmptyTensorWithHugeDimensions) {
  constexpr uint64_t kHuge = uint64_t{1} << 40;
  const std::vector<std::vector<uint64_t>> shapes = {
      {0, kHuge, kHuge, 4}, {kHuge, 0, kHuge, 4}, {kHuge, kHuge, 4, 0}};
  for (Scheme scheme : {Scheme::kPerChannelAffine, Scheme::kPerBlockAffine}) {
    for (const std::vector<uint64_t>& shape : shapes) {
      TensorSpec spec;
      spec.scheme = scheme;
      spec.storage_type = kInt8;
      spec.shape = shape;
      // The axis is the dimension of 4 (per-channel: 4 parameters).
      spec.axis = static_cast<uint32_t>(
          std::find(shape.begin(), shape.end(), 4) - shape.begin());
      spec.block_size = scheme == Scheme::kPerBlockAffine ? 2 : 0;
      const TestTensor t = MakeTensor(spec, rng_);
      SCOPED_TRACE(::testing::PrintToString(shape));
      std::vector<float> out = {1.0f};
      const absl::Status s =
          DequantizeAll(*t.descriptor, t.data(), t.params(), &out);
      EXPECT_TRUE(s.ok()) << s;
      EXPECT_TRUE(out.empty());
      out = {1.0f};
      const absl::Status r =
          ReferenceDequantize(*t.descriptor, t.data(), t.params(), &out);
      EXPECT_TRUE(r.ok()) << r;
      EXPECT_TRUE(out.empty());
    }
  }
}

TEST_F(DequantizerTest, ParameterBuffersOfTheWrongSize) {
  TensorSpec spec;
  spec.scheme = Scheme::kPerChannelAffine;
  spec.storage_type = kInt8;
  spec.shape = {4, 4};
  const TestTensor t = MakeTensor(spec, rng_);
  ParameterBytes p = t.params();
  p.scales = p.scales.subspan(0, p.scales.size() - 4);
  const absl::Status s = Dequantizer::Create(*t.descriptor, p).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(RuleIdOf(s).has_value());
}

TEST_F(DequantizerTest, SharedScaleAndZeroPointBuffer) {
  TensorSpec spec;
  spec.scheme = Scheme::kPerBlockAffine;
  spec.storage_type = kInt4;
  spec.shape = {3, 10};
  spec.axis = 1;
  spec.block_size = 4;
  spec.scale_type = kFloat16;
  spec.shared_buffer = true;
  const TestTensor t = MakeTensor(spec, rng_);
  const QuantizationDescriptor& q = t.descriptor->quantization;
  ASSERT_EQ(q.scale_buffer_index, q.zero_point_buffer_index);
  const ParameterBytes p = t.params();
  EXPECT_EQ(p.scales.size(), 9u * 2);
  EXPECT_EQ(p.zero_points.size(), 9u * 4);
  std::vector<float> out;
  ASSERT_TRUE(DequantizeAll(*t.descriptor, t.data(), p, &out).ok());
  EXPECT_EQ(FirstBitDifference(out, Reference(t)), -1);
}

// Parameter bytes for a descriptor of tests/vectors.h: valid values of the
// right type (scale 1.5 or e8m0 2^1, zero point 1).
std::vector<std::vector<uint8_t>> BuffersFor(const TensorDescriptor& d,
                                             std::mt19937_64& rng) {
  std::vector<std::vector<uint8_t>> buffers(d.buffer_count);
  for (uint32_t i = 0; i < d.buffer_count; ++i) {
    buffers[i].resize(d.buffers[i].byte_size);
  }
  for (uint8_t& b : buffers[0]) b = static_cast<uint8_t>(rng());
  const QuantizationDescriptor& q = d.quantization;
  if (q.scheme_tag == scheme_tag::kPerTensorAffine) return buffers;
  std::vector<uint8_t>& s = buffers[q.scale_buffer_index];
  const bool shared = q.zero_point_buffer_index == q.scale_buffer_index;
  uint32_t entry = 4;
  if (q.scheme_tag == scheme_tag::kMxfp) entry = 1;
  if (q.scheme_tag == scheme_tag::kPerBlockAffine &&
      q.scale_type_tag != kFloat32) {
    entry = 2;
  }
  const size_t n = s.size() / (shared ? entry + 4 : entry);
  for (size_t k = 0; k < n; ++k) {
    if (entry == 1) {
      s[k] = 128;
    } else if (entry == 2) {
      const uint16_t bits = q.scale_type_tag == kFloat16 ? 0x3E00 : 0x3FC0;
      std::memcpy(&s[2 * k], &bits, 2);
    } else {
      const float f = 1.5f;
      std::memcpy(&s[4 * k], &f, 4);
    }
  }
  if (q.zero_point_buffer_index != kNoBufferIndex) {
    std::vector<uint8_t>& z = buffers[q.zero_point_buffer_index];
    const size_t start = shared ? n * entry : 0;
    for (size_t k = 0; k < n; ++k) z[start + 4 * k] = 1;
  }
  return buffers;
}

TEST_F(DequantizerTest, LibraryVectorsDequantize) {
  std::unique_ptr<TensorDescriptor> all[] = {vectors::PerTensorInt8(),
                                             vectors::PerChannelAsymInt8(),
                                             vectors::PerChannelSymInt4(),
                                             vectors::PerChannelShared(),
                                             vectors::PerBlockAsymUInt4(),
                                             vectors::PerBlockSymInt8Bf16(),
                                             vectors::Nf4UInt4(),
                                             vectors::MxfpE4m3(),
                                             vectors::MxfpFp4()};
  for (const auto& d : all) {
    std::vector<std::vector<uint8_t>> buffers = BuffersFor(*d, rng_);
    // Unused nibbles after an odd count of 4-bit elements must be zero.
    uint64_t count = 0;
    if (d->ElementBits() == 4 && d->ElementCount(&count) && count % 2 == 1) {
      buffers[0].back() &= 0x0F;
    }
    std::vector<absl::Span<const uint8_t>> spans(buffers.begin(),
                                                 buffers.end());
    absl::StatusOr<ParameterBytes> p = ParametersFromBuffers(*d, spans);
    ASSERT_TRUE(p.ok()) << p.status();
    std::vector<float> got, want;
    DequantWarnings w;
    ASSERT_TRUE(DequantizeAll(*d, buffers[0], *p, &got, {}, &w).ok());
    ASSERT_TRUE(ReferenceDequantize(*d, buffers[0], *p, &want).ok());
    uint64_t logical = 0;
    ASSERT_TRUE(d->ElementCount(&logical));
    EXPECT_EQ(got.size(), logical);
    EXPECT_EQ(FirstBitDifference(got, want), -1);
  }
}

}  // namespace
}  // namespace hurray::dequant
