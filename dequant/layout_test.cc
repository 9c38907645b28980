// Dequantization of the dense layouts other than row-major (column-major,
// strided, tiled, Morton, Hilbert): the storage walk visits exactly the
// addresser's elements in storage order, and DequantizeAll and
// ConsumeScattered (pieces cut at every offset, or at random) match the
// brute-force reference (dequant/scalar.h, which reads each logical element
// at its ElementAddresser offset over the padded grid) bit for bit, with
// the same warnings and rejections.
#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "dequant/dequantizer.h"
#include "dequant/plan.h"
#include "dequant/scalar.h"
#include "dequant/storage_walk.h"
#include "dequant/testing/test_tensor.h"
#include "gtest/gtest.h"
#include "parser/addressing.h"
#include "parser/element_type.h"
#include "parser/rules.h"

namespace hurray::dequant {
namespace {

using namespace type_tag;  // NOLINT
using testing::FirstBitDifference;
using testing::LayoutSpec;
using testing::MakeTensor;
using testing::RandomLayout;
using testing::StoredShape;
using testing::TensorSpec;
using testing::TestTensor;
namespace lt = layout_tag;

struct Shape {
  std::vector<uint64_t> dims;
  uint32_t axis;
  uint32_t block_size;
};

// Odd sizes, every axis, partial blocks.
std::vector<Shape> ShapesFor(Scheme scheme) {
  switch (scheme) {
    case Scheme::kPerTensorAffine:
      return {{{7}, 0, 0}, {{5, 7}, 0, 0}, {{3, 2, 5}, 0, 0}};
    case Scheme::kPerChannelAffine:
      return {
          {{5, 7}, 0, 0}, {{5, 7}, 1, 0}, {{3, 2, 5}, 1, 0}, {{3, 2, 5}, 2, 0}};
    case Scheme::kPerBlockAffine:
      return {
          {{5, 7}, 1, 4}, {{5, 7}, 0, 2}, {{3, 5, 3}, 1, 2}, {{3, 2, 5}, 2, 4}};
    case Scheme::kNf4:
      return {{{3, 13}, 1, 8}, {{9, 4}, 0, 8}};
    case Scheme::kMxfp:
      return {{{3, 32}, 1, 16}, {{16, 3}, 0, 16}};
  }
  return {};
}

// Hilbert needs equal power-of-two dimensions.
std::vector<Shape> HilbertShapesFor(Scheme scheme) {
  switch (scheme) {
    case Scheme::kPerTensorAffine:
      return {{{4, 4}, 0, 0}, {{2, 2, 2}, 0, 0}};
    case Scheme::kPerChannelAffine:
      return {{{4, 4}, 1, 0}, {{2, 2, 2}, 0, 0}};
    case Scheme::kPerBlockAffine:
      return {{{8, 8}, 0, 4}, {{4, 4}, 1, 2}};
    case Scheme::kNf4:
      return {{{8, 8}, 1, 8}};
    case Scheme::kMxfp:
      return {{{16, 16}, 0, 16}};
  }
  return {};
}

constexpr Scheme kSchemes[] = {
    Scheme::kPerTensorAffine, Scheme::kPerChannelAffine,
    Scheme::kPerBlockAffine, Scheme::kNf4, Scheme::kMxfp};
constexpr uint8_t kLayouts[] = {lt::kColumnMajor, lt::kStrided, lt::kTiled,
                                lt::kMorton, lt::kHilbert};

// Every layout × scheme × storage type × shape, with random layout fields
// (several draws each) and parameters varied by position.
std::vector<TensorSpec> AllSpecs(std::mt19937_64& rng) {
  std::vector<TensorSpec> specs;
  int n = 0;
  for (uint8_t layout : kLayouts) {
    for (Scheme scheme : kSchemes) {
      for (uint8_t type : testing::StorageTypes(scheme)) {
        const std::vector<Shape> shapes = layout == lt::kHilbert
                                              ? HilbertShapesFor(scheme)
                                              : ShapesFor(scheme);
        for (const Shape& shape : shapes) {
          const int draws = layout == lt::kColumnMajor ? 1 : 2;
          for (int draw = 0; draw < draws; ++draw) {
            ++n;
            TensorSpec s;
            s.scheme = scheme;
            s.storage_type = type;
            s.shape = shape.dims;
            s.axis = shape.axis;
            s.block_size = shape.block_size;
            s.symmetric = n % 3 == 0;
            s.shared_buffer = !s.symmetric && n % 4 == 1;
            s.byte_offset = n % 5 == 0 ? n % 7 + 1 : 0;
            if (scheme == Scheme::kPerBlockAffine) {
              const uint8_t scale_types[] = {kFloat32, kFloat16, kBFloat16};
              s.scale_type = scale_types[n % 3];
            }
            if (scheme == Scheme::kPerBlockAffine || scheme == Scheme::kNf4) {
              s.zero_padding = n % 2 == 0;
            }
            s.layout = RandomLayout(layout, StoredShape(s), rng);
            specs.push_back(s);
          }
        }
      }
    }
  }
  return specs;
}

void ExpectSame(const std::vector<float>& got, const std::vector<float>& want,
                const std::string& what) {
  const int64_t diff = FirstBitDifference(got, want);
  EXPECT_EQ(diff, -1) << what << ": first difference at element " << diff
                      << " of " << want.size();
}

// Dequantizes `t` through ConsumeScattered with pieces ending at `cuts`.
absl::Status Scattered(const TestTensor& t, const std::vector<size_t>& cuts,
                       std::vector<float>* out, DequantWarnings* warnings) {
  absl::StatusOr<Dequantizer> dq =
      Dequantizer::Create(*t.descriptor, t.params());
  if (!dq.ok()) return dq.status();
  out->assign(static_cast<size_t>(dq->plan().logical_elements), 0.0f);
  size_t at = 0;
  for (size_t cut : cuts) {
    const absl::Status s = dq->ConsumeScattered(t.data().subspan(at, cut - at),
                                                absl::MakeSpan(*out));
    if (!s.ok()) return s;
    at = cut;
  }
  *warnings = dq->warnings();
  return dq->Finish();
}

TEST(StorageWalkTest, VisitsTheAddressersElementsInStorageOrder) {
  std::mt19937_64 rng(7);
  int unordered = 0;
  for (const TensorSpec& spec : AllSpecs(rng)) {
    SCOPED_TRACE(spec.Name());
    const TestTensor t = MakeTensor(spec, rng);
    const TensorDescriptor& d = *t.descriptor;
    const absl::StatusOr<Plan> plan = MakePlan(d);
    ASSERT_TRUE(plan.ok()) << plan.status();
    absl::StatusOr<std::unique_ptr<StorageWalk>> walk =
        StorageWalk::Create(d, *plan);
    ASSERT_TRUE(walk.ok()) << walk.status();
    const ElementAddresser a =
        *ElementAddresser::Create(StoredGridDescriptor(d, *plan));
    // Every stored-grid element by the addresser: offset → logical index
    // (or padding) and parameter index.
    std::multimap<int64_t, std::pair<int64_t, uint64_t>> want;
    const std::vector<uint64_t> grid = StoredShape(spec);
    for (RowMajorWalker r(a); !r.done(); r.Next()) {
      const auto idx = r.index();
      int64_t logical = 0;
      bool pad = false;
      uint64_t outer = 0;
      for (size_t k = 0; k < idx.size(); ++k) {
        logical = logical * static_cast<int64_t>(spec.shape[k]) +
                  static_cast<int64_t>(idx[k]);
        if (spec.scheme != Scheme::kPerTensorAffine && k == spec.axis) {
          pad = idx[k] >= spec.shape[k];
        } else {
          outer = outer * spec.shape[k] + idx[k];
        }
      }
      uint64_t param = 0;
      if (spec.scheme == Scheme::kPerChannelAffine) param = idx[spec.axis];
      if (spec.block_size != 0) {
        param =
            outer * plan->blocks_per_axis + idx[spec.axis] / spec.block_size;
      }
      want.emplace(r.offset(), std::make_pair(pad ? -1 : logical, param));
    }
    std::multimap<int64_t, std::pair<int64_t, uint64_t>> got;
    StorageWalk& w = **walk;
    int64_t last = INT64_MIN;
    bool monotone = true;
    for (w.Reset(); !w.done(); w.Next()) {
      monotone &= w.offset() >= last;
      last = w.offset();
      got.emplace(
          w.offset(),
          std::make_pair(w.padding() ? -1 : static_cast<int64_t>(w.logical()),
                         w.param()));
      ASSERT_LE(got.size(), want.size());
    }
    if (w.ordered()) {
      EXPECT_TRUE(monotone);
    } else {
      ++unordered;
    }
    // Compare as sorted multisets (aliasing: equal offsets in any order).
    std::vector<std::pair<int64_t, std::pair<int64_t, uint64_t>>> g(got.begin(),
                                                                    got.end()),
        e(want.begin(), want.end());
    std::sort(g.begin(), g.end());
    std::sort(e.begin(), e.end());
    EXPECT_EQ(g, e);
  }
  // Interleaved strides appear only in the dedicated test below.
  EXPECT_EQ(unordered, 0);
}

TEST(LayoutDequantTest, EveryLayoutSchemeAndTypeMatchesTheReference) {
  std::mt19937_64 rng(11);
  int cases = 0;
  for (const TensorSpec& spec : AllSpecs(rng)) {
    SCOPED_TRACE(spec.Name());
    const TestTensor t = MakeTensor(spec, rng);
    std::vector<float> want, got;
    DequantWarnings want_w, got_w;
    const absl::Status ref = ReferenceDequantize(
        *t.descriptor, t.data(), t.params(), &want, DequantOptions(), &want_w);
    ASSERT_TRUE(ref.ok()) << ref;
    const absl::Status all = DequantizeAll(*t.descriptor, t.data(), t.params(),
                                           &got, DequantOptions(), &got_w);
    ASSERT_TRUE(all.ok()) << all;
    ExpectSame(got, want, "DequantizeAll");
    EXPECT_EQ(got_w.nonzero_padding, want_w.nonzero_padding);
    EXPECT_EQ(got_w.first_nonzero_padding, want_w.first_nonzero_padding);
    if (!spec.zero_padding && spec.shape[spec.axis] % spec.block_size != 0) {
      // Random padding codes: almost surely some are non-zero.
      EXPECT_GT(want_w.nonzero_padding, 0u);
    }

    // Two pieces cut at every offset (small buffers), then random pieces.
    const size_t size = t.data().size();
    for (size_t cut = 0; cut <= size; cut += size <= 160 ? 1 : 7) {
      const absl::Status s = Scattered(t, {cut, size}, &got, &got_w);
      ASSERT_TRUE(s.ok()) << "cut " << cut << ": " << s;
      ExpectSame(got, want, absl::StrCat("cut at ", cut));
      EXPECT_EQ(got_w.first_nonzero_padding, want_w.first_nonzero_padding);
    }
    for (int round = 0; round < 4; ++round) {
      std::vector<size_t> cuts;
      for (size_t at = 0; at < size;) {
        at = std::min(size, at + 1 + rng() % 9);
        cuts.push_back(at);
      }
      if (cuts.empty()) cuts.push_back(0);
      const absl::Status s = Scattered(t, cuts, &got, &got_w);
      ASSERT_TRUE(s.ok()) << s;
      ExpectSame(got, want, "random pieces");
    }
    ++cases;
  }
  EXPECT_GT(cases, 300);
}

TEST(LayoutDequantTest, InterleavedStridesNeedTheWholeBuffer) {
  std::mt19937_64 rng(5);
  int unordered = 0;
  for (int n = 0; n < 400; ++n) {
    TensorSpec spec;
    const Scheme scheme = kSchemes[n % 4];  // MXFP needs 16-element blocks
    spec.scheme = scheme;
    const std::vector<uint8_t> types = testing::StorageTypes(scheme);
    spec.storage_type = types[n % types.size()];
    const std::vector<Shape> shapes = ShapesFor(scheme);
    const Shape& shape = shapes[n % shapes.size()];
    spec.shape = shape.dims;
    spec.axis = shape.axis;
    spec.block_size = shape.block_size;
    spec.symmetric = n % 2 == 0;
    spec.layout = RandomLayout(lt::kStrided, StoredShape(spec), rng, true);
    SCOPED_TRACE(spec.Name());
    const TestTensor t = MakeTensor(spec, rng);
    std::vector<float> want, got;
    DequantWarnings want_w, got_w;
    ASSERT_TRUE(ReferenceDequantize(*t.descriptor, t.data(), t.params(), &want,
                                    DequantOptions(), &want_w)
                    .ok());
    ASSERT_TRUE(DequantizeAll(*t.descriptor, t.data(), t.params(), &got,
                              DequantOptions(), &got_w)
                    .ok());
    ExpectSame(got, want, "DequantizeAll");
    EXPECT_EQ(got_w.nonzero_padding, want_w.nonzero_padding);
    EXPECT_EQ(got_w.first_nonzero_padding, want_w.first_nonzero_padding);
    absl::StatusOr<Dequantizer> dq =
        Dequantizer::Create(*t.descriptor, t.params());
    ASSERT_TRUE(dq.ok());
    if (dq->streamable()) {
      ASSERT_TRUE(
          Scattered(t, {t.data().size() / 2, t.data().size()}, &got, &got_w)
              .ok());
      ExpectSame(got, want, "halves");
      continue;
    }
    ++unordered;
    std::vector<float> out(static_cast<size_t>(dq->plan().logical_elements));
    const absl::Status s = dq->ConsumeScattered(
        t.data().subspan(0, t.data().size() / 2), absl::MakeSpan(out));
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  }
  EXPECT_GT(unordered, 50);
}

TEST(LayoutDequantTest, ColumnMajorUnusedBitsAreRejectedLikeTheReference) {
  std::mt19937_64 rng(3);
  // (6-bit types are MXFP only, whose element counts are multiples of 16:
  // never a partial group.)
  for (uint8_t type : {kInt4, kUInt2, kInt2}) {
    TensorSpec spec;
    spec.scheme =
        type == kInt2 ? Scheme::kPerChannelAffine : Scheme::kPerTensorAffine;
    spec.storage_type = type;
    spec.shape = {3, 5};
    spec.axis = 1;
    spec.layout.tag = lt::kColumnMajor;
    SCOPED_TRACE(spec.Name());
    TestTensor t = MakeTensor(spec, rng);
    // The last unused slot of the last group.
    const uint64_t count = spec.shape[0] * spec.shape[1];
    const uint64_t per_group = type == kInt4 ? 2 : 4;
    auto same = [](const absl::Status& a, const absl::Status& b) {
      return a.code() == b.code() &&
             a.GetPayload(kRulePayloadUrl) == b.GetPayload(kRulePayloadUrl) &&
             a.GetPayload(kOffsetPayloadUrl) == b.GetPayload(kOffsetPayloadUrl);
    };
    const uint64_t slot = (count / per_group + 1) * per_group - 1;
    testing::SetCode(&t, slot, 1);
    std::vector<float> want, got;
    const absl::Status ref =
        ReferenceDequantize(*t.descriptor, t.data(), t.params(), &want);
    ASSERT_FALSE(ref.ok());
    const absl::Status all =
        DequantizeAll(*t.descriptor, t.data(), t.params(), &got);
    EXPECT_TRUE(same(all, ref)) << all << " vs " << ref;
    for (size_t cut = 0; cut <= t.data().size(); ++cut) {
      DequantWarnings w;
      const absl::Status s = Scattered(t, {cut, t.data().size()}, &got, &w);
      EXPECT_TRUE(same(s, ref)) << cut << ": " << s;
    }
    // Permissive mode ignores them.
    DequantOptions permissive;
    permissive.mode = Mode::kPermissive;
    EXPECT_TRUE(
        DequantizeAll(*t.descriptor, t.data(), t.params(), &got, permissive)
            .ok());
  }
}

TEST(LayoutDequantTest, ApiErrors) {
  std::mt19937_64 rng(9);
  TensorSpec spec;
  spec.scheme = Scheme::kPerChannelAffine;
  spec.storage_type = kInt8;
  spec.shape = {4, 6};
  spec.axis = 1;
  spec.layout = RandomLayout(lt::kTiled, spec.shape, rng);
  const TestTensor t = MakeTensor(spec, rng);
  absl::StatusOr<Dequantizer> dq =
      Dequantizer::Create(*t.descriptor, t.params());
  ASSERT_TRUE(dq.ok()) << dq.status();
  EXPECT_FALSE(dq->in_order());
  EXPECT_TRUE(dq->streamable());
  EXPECT_EQ(dq->OutputCountFor(t.data().size()), 0u);
  std::vector<float> out(24);
  size_t written = 7;
  EXPECT_EQ(dq->Consume(t.data(), absl::MakeSpan(out), &written).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(written, 0u);
  std::vector<float> small(23);
  EXPECT_EQ(dq->ConsumeScattered(t.data(), absl::MakeSpan(small)).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(dq->Finish().code(), absl::StatusCode::kOutOfRange);
  std::vector<uint8_t> longer(t.data().begin(), t.data().end());
  longer.push_back(0);
  EXPECT_EQ(dq->ConsumeScattered(longer, absl::MakeSpan(out)).code(),
            absl::StatusCode::kOutOfRange);
  ASSERT_TRUE(dq->ConsumeScattered(t.data(), absl::MakeSpan(out)).ok());
  EXPECT_TRUE(dq->Finish().ok());
  EXPECT_EQ(dq->elements_written(), 24u);
  // Restart: the same values again.
  std::vector<float> again(24);
  dq->Restart();
  EXPECT_FALSE(dq->done());
  ASSERT_TRUE(dq->ConsumeScattered(t.data(), absl::MakeSpan(again)).ok());
  EXPECT_TRUE(dq->Finish().ok());
  ExpectSame(again, out, "after Restart");

  // Row-major through ConsumeScattered: the in-order fast path.
  TensorSpec rm = spec;
  rm.layout = LayoutSpec();
  const TestTensor r = MakeTensor(rm, rng);
  absl::StatusOr<Dequantizer> rdq =
      Dequantizer::Create(*r.descriptor, r.params());
  ASSERT_TRUE(rdq.ok());
  EXPECT_TRUE(rdq->in_order());
  std::vector<float> want, got(24);
  ASSERT_TRUE(
      ReferenceDequantize(*r.descriptor, r.data(), r.params(), &want).ok());
  for (size_t at = 0; at < r.data().size(); at += 5) {
    const size_t n = std::min<size_t>(5, r.data().size() - at);
    ASSERT_TRUE(
        rdq->ConsumeScattered(r.data().subspan(at, n), absl::MakeSpan(got))
            .ok());
  }
  EXPECT_TRUE(rdq->Finish().ok());
  ExpectSame(got, want, "row-major scattered");
}

TEST(LayoutDequantTest, BroadcastOutputOfDequantizeAllIsBounded) {
  std::mt19937_64 rng(2);
  TensorSpec spec;
  spec.scheme = Scheme::kPerTensorAffine;
  spec.storage_type = kInt8;
  spec.shape = {uint64_t{1} << 25};  // one stored byte, 32 Mi elements
  spec.layout.tag = lt::kStrided;
  spec.layout.strides = {0};
  const TestTensor t = MakeTensor(spec, rng);
  ASSERT_LE(t.data().size(), 8u);
  std::vector<float> out;
  EXPECT_EQ(DequantizeAll(*t.descriptor, t.data(), t.params(), &out).code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(out.empty());
  // 16 Mi elements are still fine.
  spec.shape = {uint64_t{1} << 24};
  const TestTensor small = MakeTensor(spec, rng);
  ASSERT_TRUE(
      DequantizeAll(*small.descriptor, small.data(), small.params(), &out)
          .ok());
  ASSERT_EQ(out.size(), size_t{1} << 24);
  EXPECT_EQ(testing::Bits(out[0]), testing::Bits(out.back()));
}

// A tile far larger than the shape, its inner strides 0 along the big
// dimension (found by fuzzing: the walk used to visit 2^56 holes).
TEST(LayoutDequantTest, HugeTilesWalkOnlyTheShape) {
  std::mt19937_64 rng(4);
  TensorSpec spec;
  spec.scheme = Scheme::kPerTensorAffine;
  spec.storage_type = kUInt4;
  spec.shape = {3, 16};
  spec.layout.tag = lt::kTiled;
  testing::TiledLevelSpec level;
  level.outer = lt::kRowMajor;
  level.inner = lt::kStrided;
  level.tile = {3, uint64_t{1} << 56};
  level.inner_strides = {1, 0};
  spec.layout.levels = {level};
  const TestTensor t = MakeTensor(spec, rng);
  std::vector<float> want, got;
  ASSERT_TRUE(
      ReferenceDequantize(*t.descriptor, t.data(), t.params(), &want).ok());
  ASSERT_TRUE(DequantizeAll(*t.descriptor, t.data(), t.params(), &got).ok());
  ExpectSame(got, want, "huge tile");
  DequantWarnings w;
  ASSERT_TRUE(Scattered(t, {1, t.data().size()}, &got, &w).ok());
  ExpectSame(got, want, "huge tile, two pieces");
}

TEST(LayoutDequantTest, SparseLayoutsAreUnimplemented) {
  std::mt19937_64 rng(1);
  TensorSpec spec;
  spec.scheme = Scheme::kPerTensorAffine;
  spec.storage_type = kInt8;
  spec.shape = {4, 4};
  TestTensor t = MakeTensor(spec, rng);
  for (uint8_t tag :
       {lt::kCoo, lt::kCsr, lt::kCsc, lt::kCsf, lt::kBlockPaged}) {
    t.descriptor->layout_tag = tag;
    const absl::StatusOr<Dequantizer> dq =
        Dequantizer::Create(*t.descriptor, t.params());
    EXPECT_EQ(dq.status().code(), absl::StatusCode::kUnimplemented);
    EXPECT_NE(dq.status().message().find("dense layouts only"),
              absl::string_view::npos)
        << dq.status();
  }
}

}  // namespace
}  // namespace hurray::dequant
