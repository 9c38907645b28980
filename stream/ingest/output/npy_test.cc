#include "stream/ingest/output/npy.h"

#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace hurray::stream::ingest {
namespace {

TEST(Npy, ShapeTuples) {
  EXPECT_EQ(NpyShapeTuple({}), "()");
  EXPECT_EQ(NpyShapeTuple({5}), "(5,)");
  EXPECT_EQ(NpyShapeTuple({3, 4}), "(3, 4)");
  EXPECT_EQ(NpyShapeTuple({0, 1, 2}), "(0, 1, 2)");
}

TEST(Npy, Version1HeaderIsExactAndAligned) {
  // What numpy 1.24's numpy.save writes for zeros((3, 4), '<f4').
  const std::string dict =
      "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }";
  const std::string want = std::string("\x93NUMPY\x01\x00v\x00", 10) + dict +
                           std::string(128 - 11 - dict.size(), ' ') + "\n";
  EXPECT_EQ(NpyHeader("<f4", std::vector<uint64_t>{3, 4}), want);
}

TEST(Npy, AlreadyAlignedGetsAWholeBlockOfPadding) {
  // 10 + dict + 21 - 1 growth + '\n' lands on 64 bytes exactly for some
  // first dimension; numpy then adds 64 spaces. Find such a case by length.
  for (uint64_t d = 1; d < 100000000000ull; d *= 10) {
    const std::string h = NpyHeader("<f4", std::vector<uint64_t>{d});
    EXPECT_EQ(h.size() % 64, 0u);
    EXPECT_GE(h.size(), 128u);
  }
}

TEST(Npy, ZeroDimensionalAndOneDimensional) {
  const std::string h0 = NpyHeader("<f2", {});
  EXPECT_EQ(h0.size() % 64, 0u);
  EXPECT_NE(h0.find("'shape': (), }"), std::string::npos);
  const std::string h1 = NpyHeader("|b1", std::vector<uint64_t>{7});
  EXPECT_EQ(h1.size() % 64, 0u);
  EXPECT_NE(h1.find("'descr': '|b1'"), std::string::npos);
  EXPECT_NE(h1.find("'shape': (7,), }"), std::string::npos);
}

TEST(Npy, LongShapeGrowsInSteps) {
  // Rank 64 with large dimensions: still version 1.0 (under 65535 bytes),
  // the header a multiple of 64 and longer than one block.
  const std::vector<uint64_t> shape(64, uint64_t{1} << 40);
  const std::string h = NpyHeader("<u8", shape);
  EXPECT_EQ(h.size() % 64, 0u);
  EXPECT_GT(h.size(), 64u);
  EXPECT_EQ(h[6], 1);
  const size_t len = static_cast<uint8_t>(h[8]) | static_cast<uint8_t>(h[9])
                                                      << 8;
  EXPECT_EQ(len + 10, h.size());
}

}  // namespace
}  // namespace hurray::stream::ingest
