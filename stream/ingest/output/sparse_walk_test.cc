#include "stream/ingest/output/sparse_walk.h"

#include <cstdint>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "parser/descriptor.h"
#include "parser/wire.h"

namespace hurray::stream::ingest {
namespace {

std::vector<uint8_t> U64(std::vector<uint64_t> v) {
  std::vector<uint8_t> b(8 * v.size());
  for (size_t i = 0; i < v.size(); ++i) wire::StoreU64(&b[8 * i], v[i]);
  return b;
}

TensorDescriptor Desc(uint8_t layout, std::vector<uint64_t> shape,
                      uint64_t nnz) {
  TensorDescriptor d;
  d.layout_tag = layout;
  d.rank = static_cast<uint32_t>(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) d.shape[i] = shape[i];
  d.layout.nnz = nnz;
  return d;
}

using Placed = std::vector<std::pair<uint64_t, uint64_t>>;

absl::Status Walk(const TensorDescriptor& d,
                  const std::vector<std::vector<uint8_t>>& buffers,
                  Placed* out) {
  std::vector<absl::Span<const uint8_t>> views(buffers.begin(), buffers.end());
  return ForEachSparseElement(
      d, views, [out](uint64_t v, uint64_t p) { out->emplace_back(v, p); });
}

TEST(SparseWalk, CooCsrCscPositions) {
  Placed got;
  // COO [3, 4]: (2, 1), (0, 3).
  ASSERT_TRUE(
      Walk(Desc(layout_tag::kCoo, {3, 4}, 2), {{}, U64({2, 1, 0, 3})}, &got)
          .ok());
  EXPECT_EQ(got, (Placed{{0, 9}, {1, 3}}));
  // CSR [2, 3]: row 0 col 2, row 1 cols 0, 1.
  got.clear();
  ASSERT_TRUE(Walk(Desc(layout_tag::kCsr, {2, 3}, 3),
                   {{}, U64({2, 0, 1}), U64({0, 1, 3})}, &got)
                  .ok());
  EXPECT_EQ(got, (Placed{{0, 2}, {1, 3}, {2, 4}}));
  // CSC [2, 3]: column 1 rows 0, 1; column 2 row 1.
  got.clear();
  ASSERT_TRUE(Walk(Desc(layout_tag::kCsc, {2, 3}, 3),
                   {{}, U64({0, 1, 1}), U64({0, 0, 2, 3})}, &got)
                  .ok());
  EXPECT_EQ(got, (Placed{{0, 1}, {1, 4}, {2, 5}}));
}

TEST(SparseWalk, CsfWithModeOrder) {
  // [2, 2, 3], mode order [1, 2, 0]: elements (i0, i1, i2) = (1, 0, 2) and
  // (0, 1, 0), (1, 1, 0). Level 0 (dim 1): 0, 1; level 1 (dim 2): under 0:
  // 2; under 1: 0; level 2 (dim 0): under (0,2): 1; under (1,0): 0, 1.
  TensorDescriptor d = Desc(layout_tag::kCsf, {2, 2, 3}, 3);
  d.layout.mode_order[0] = 1;
  d.layout.mode_order[1] = 2;
  d.layout.mode_order[2] = 0;
  Placed got;
  ASSERT_TRUE(Walk(d,
                   {{},
                    U64({0, 2}),
                    U64({0, 1}),
                    U64({0, 1, 2}),
                    U64({2, 0}),
                    U64({0, 1, 3}),
                    U64({1, 0, 1})},
                   &got)
                  .ok());
  EXPECT_EQ(got, (Placed{{0, 6 + 2}, {1, 3}, {2, 6 + 3}}));
}

TEST(SparseWalk, BrokenIndicesAreErrorsNotReads) {
  Placed got;
  EXPECT_FALSE(
      Walk(Desc(layout_tag::kCoo, {3, 4}, 1), {{}, U64({3, 0})}, &got).ok());
  EXPECT_FALSE(
      Walk(Desc(layout_tag::kCoo, {3, 4}, 2), {{}, U64({0, 0})}, &got).ok());
  EXPECT_FALSE(Walk(Desc(layout_tag::kCsr, {2, 3}, 1),
                    {{}, U64({0}), U64({0, 2, 1})}, &got)
                   .ok());  // pointer past nnz
  EXPECT_FALSE(Walk(Desc(layout_tag::kCsr, {2, 3}, 1),
                    {{}, U64({3}), U64({0, 1, 1})}, &got)
                   .ok());  // column past the shape
  // CSF whose top range runs past crd_0, or a leaf past nnz.
  TensorDescriptor d = Desc(layout_tag::kCsf, {2, 2, 2}, 1);
  d.layout.mode_order[1] = 1;
  d.layout.mode_order[2] = 2;
  EXPECT_FALSE(Walk(d,
                    {{},
                     U64({0, 5}),
                     U64({0, 1}),
                     U64({0, 1, 1}),
                     U64({0}),
                     U64({0, 1}),
                     U64({0})},
                    &got)
                   .ok());
  EXPECT_FALSE(Walk(d,
                    {{},
                     U64({0, 1}),
                     U64({0}),
                     U64({0, 1}),
                     U64({0}),
                     U64({0, 2}),
                     U64({0, 1})},
                    &got)
                   .ok());
}

}  // namespace
}  // namespace hurray::stream::ingest
