// Which records of a network ingest belong to which key.
#include "stream/resume/network_records.h"

#include <vector>

#include "gtest/gtest.h"

namespace hurray::stream::resume {
namespace {

TEST(NetworkRecords, KeysAndRecords) {
  std::vector<TensorRecord> records(5);
  records[0].name = "a";
  records[1].name = "b";  // a composite head, two members
  records[4].name = "c";
  EXPECT_EQ(LastKeyStart(records), 4u);
  EXPECT_EQ(CountKeys(records), 3u);
  EXPECT_EQ(RecordsOfKeys(records, 0), 0u);
  EXPECT_EQ(RecordsOfKeys(records, 1), 1u);
  EXPECT_EQ(RecordsOfKeys(records, 2), 4u);
  EXPECT_EQ(RecordsOfKeys(records, 3), 5u);
  EXPECT_EQ(LastKeyStart({}), 0u);
}

}  // namespace
}  // namespace hurray::stream::resume
