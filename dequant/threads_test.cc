// DequantizeAll with several threads (DequantOptions::threads): the same
// floats, bit for bit, the same warnings and the same rejections as one
// thread, for every scheme × storage type, with cuts falling inside blocks,
// rows and padding.
#include <cstdint>
#include <random>
#include <vector>

#include "absl/status/status.h"
#include "dequant/dequantizer.h"
#include "dequant/testing/test_tensor.h"
#include "gtest/gtest.h"
#include "parser/element_type.h"
#include "parser/rules.h"

namespace hurray::dequant {
namespace {

using namespace type_tag;  // NOLINT
using testing::FirstBitDifference;
using testing::MakeTensor;
using testing::TensorSpec;
using testing::TestTensor;

struct Shape {
  std::vector<uint64_t> dims;
  uint32_t axis;
  uint32_t block_size;
};

std::vector<Shape> ShapesFor(Scheme scheme) {
  switch (scheme) {
    case Scheme::kPerTensorAffine:
      return {{{37, 1001}, 0, 0}, {{65537}, 0, 0}};
    case Scheme::kPerChannelAffine:
      return {{{37, 1001}, 0, 0}, {{37, 1001}, 1, 0}, {{3, 129, 77}, 1, 0}};
    case Scheme::kPerBlockAffine:
      return {{{37, 1001}, 1, 16}, {{1001, 37}, 0, 8}, {{3, 77, 129}, 1, 32}};
    case Scheme::kNf4:
      return {{{37, 1001}, 1, 64}, {{201, 65}, 0, 8}};
    case Scheme::kMxfp:
      return {{{37, 1024}, 1, 32}, {{1024, 37}, 0, 16}};
  }
  return {};
}

void Compare(const TestTensor& t, const DequantOptions& base) {
  std::vector<float> one;
  DequantWarnings one_w;
  const absl::Status s1 =
      DequantizeAll(*t.descriptor, t.data(), t.params(), &one, base, &one_w);
  for (int threads : {2, 3, 8}) {
    DequantOptions o = base;
    o.threads = threads;
    o.min_elements_per_thread = 0;  // split these small tensors all the same
    std::vector<float> many;
    DequantWarnings many_w;
    const absl::Status s =
        DequantizeAll(*t.descriptor, t.data(), t.params(), &many, o, &many_w);
    EXPECT_EQ(s.code(), s1.code()) << threads << ": " << s;
    EXPECT_EQ(RuleIdOf(s), RuleIdOf(s1));
    EXPECT_EQ(OffsetOf(s), OffsetOf(s1));
    EXPECT_EQ(FirstBitDifference(many, one), -1) << threads << " threads";
    EXPECT_EQ(many_w.nonzero_padding, one_w.nonzero_padding);
    EXPECT_EQ(many_w.first_nonzero_padding, one_w.first_nonzero_padding);
  }
}

// No thread for a part of fewer than min_elements_per_thread outputs (its
// start costs more than the work), nor of fewer than 64 groups.
TEST(ThreadsTest, SmallTensorsStayOnOneThread) {
  const uint64_t kMin = DequantOptions().min_elements_per_thread;
  EXPECT_EQ(kMin, uint64_t{1} << 20);
  EXPECT_EQ(ThreadParts(65536, 65536, 2, kMin), 1u);  // 64 Ki elements
  EXPECT_EQ(ThreadParts(uint64_t{1} << 26, uint64_t{1} << 26, 2, kMin), 2u);
  EXPECT_EQ(ThreadParts(uint64_t{3} << 20, uint64_t{3} << 20, 8, kMin), 3u);
  EXPECT_EQ(ThreadParts(uint64_t{2} << 20, (uint64_t{2} << 20) - 1, 2, kMin),
            1u);
  EXPECT_EQ(ThreadParts(100, uint64_t{1} << 26, 2, kMin), 1u);  // < 64 groups
  EXPECT_EQ(ThreadParts(65536, 65536, 2, 0), 2u);               // 0: any size
  EXPECT_EQ(ThreadParts(65536, 65536, 0, 0), 1u);
}

TEST(ThreadsTest, EverySchemeAndTypeMatchesOneThread) {
  std::mt19937_64 rng(17);
  int n = 0;
  for (Scheme scheme : {Scheme::kPerTensorAffine, Scheme::kPerChannelAffine,
                        Scheme::kPerBlockAffine, Scheme::kNf4, Scheme::kMxfp}) {
    for (uint8_t type : testing::StorageTypes(scheme)) {
      for (const Shape& shape : ShapesFor(scheme)) {
        ++n;
        TensorSpec spec;
        spec.scheme = scheme;
        spec.storage_type = type;
        spec.shape = shape.dims;
        spec.axis = shape.axis;
        spec.block_size = shape.block_size;
        spec.symmetric = n % 3 == 0;
        spec.byte_offset = n % 4 == 0 ? 3 : 0;
        spec.zero_padding = n % 2 == 0;
        SCOPED_TRACE(spec.Name());
        const TestTensor t = MakeTensor(spec, rng);
        Compare(t, DequantOptions());
        DequantOptions nt;
        nt.stores = StoreMode::kNonTemporal;
        Compare(t, nt);
      }
    }
  }
}

TEST(ThreadsTest, RejectionsAndShortDataMatchOneThread) {
  std::mt19937_64 rng(19);
  for (uint8_t type : {kInt4, kUInt2}) {
    TensorSpec spec;
    spec.scheme = Scheme::kPerTensorAffine;
    spec.storage_type = type;
    spec.shape = {40001};
    SCOPED_TRACE(spec.Name());
    TestTensor t = MakeTensor(spec, rng);
    testing::SetCode(&t, 40001 + (type == kInt4 ? 0 : 2), 1);  // unused slot
    Compare(t, DequantOptions());
    std::vector<float> out;
    DequantOptions o;
    o.threads = 2;
    const absl::Status s =
        DequantizeAll(*t.descriptor, t.data(), t.params(), &out, o);
    EXPECT_EQ(RuleIdOf(s), type == kInt4 ? "TYPE-PACK-02" : "TYPE-PACK-03")
        << s;
    // Data shorter than the tensor: OutOfRange, as one thread.
    const absl::Span<const uint8_t> half =
        t.data().subspan(0, t.data().size() / 2);
    std::vector<float> one;
    const absl::Status s1 =
        DequantizeAll(*t.descriptor, half, t.params(), &one);
    const absl::Status s2 =
        DequantizeAll(*t.descriptor, half, t.params(), &out, o);
    EXPECT_EQ(s1.code(), absl::StatusCode::kOutOfRange);
    EXPECT_EQ(s2.code(), s1.code());
    EXPECT_EQ(FirstBitDifference(out, one), -1);
  }
}

}  // namespace
}  // namespace hurray::dequant
