#include "stream/ingest/values_buffer.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace hurray::stream::ingest {
namespace {

TEST(ValuesBuffer, RefusesATensorOverItsLimit) {
  ValuesBuffer b(64);
  EXPECT_EQ(b.Start(65).code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(b.Next(4).empty());
  EXPECT_TRUE(b.Start(64).ok());
}

TEST(ValuesBuffer, HoldsExactlyTheAnnouncedBytes) {
  ValuesBuffer b(64);
  ASSERT_TRUE(b.Start(8).ok());
  const std::vector<uint8_t> four = {0, 0, 128, 63};  // 1.0f
  ASSERT_TRUE(b.Append(four).ok());
  EXPECT_FALSE(b.complete());
  b.Close();
  EXPECT_FALSE(b.complete());  // 4 of 8 bytes
  ASSERT_TRUE(b.Start(8).ok());
  ASSERT_TRUE(b.Append(four).ok());
  ASSERT_TRUE(b.Append(four).ok());
  EXPECT_EQ(b.Append(four).code(), absl::StatusCode::kDataLoss);
  EXPECT_TRUE(b.Next(1).empty());
  b.Close();
  ASSERT_TRUE(b.complete());
  b.set_tensor(3);
  ASSERT_EQ(b.floats().size(), 2u);
  EXPECT_EQ(b.floats()[1], 1.0f);
  b.Reset();
  EXPECT_EQ(b.tensor(), ValuesBuffer::kNone);
  EXPECT_FALSE(b.complete());
}

TEST(ValuesBuffer, KeepsItsBlockForTensorsNoLarger) {
  ValuesBuffer b(uint64_t{8} << 20);
  ASSERT_TRUE(b.Start(uint64_t{4} << 20).ok());
  const uint8_t* first = b.Next(4).data();
  ASSERT_TRUE(b.Start(uint64_t{1} << 20).ok());
  EXPECT_EQ(b.Next(4).data(), first);
  ASSERT_TRUE(b.Start(uint64_t{4} << 20).ok());
  EXPECT_EQ(b.Next(4).data(), first);
}

TEST(ValuesBuffer, ZeroFilledCountsEveryByte) {
  ValuesBuffer b(64);
  ASSERT_TRUE(b.Start(12).ok());
  const absl::Span<uint8_t> all = b.ZeroFilled();
  ASSERT_EQ(all.size(), 12u);
  for (uint8_t x : all) EXPECT_EQ(x, 0);
  b.Close();
  EXPECT_TRUE(b.complete());
}

TEST(ValuesBuffer, AbandonedIsNotComplete) {
  ValuesBuffer b(64);
  ASSERT_TRUE(b.Start(0).ok());
  b.Abandon();
  b.Close();
  EXPECT_FALSE(b.complete());
}

}  // namespace
}  // namespace hurray::stream::ingest
