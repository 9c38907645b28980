// ResumeCheckSink: a resumed network ingest fetches the last completed key
// again and goes on only when the server still has the same tensors
// (issue 13 item 2).
#include "stream/ingest/resume_check_sink.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "stream/container/hrry_mmap.h"
#include "stream/ingest/sinks.h"
#include "stream/net/testing/net_test_util.h"
#include "stream/resume/network_records.h"

namespace hurray::stream::ingest {
namespace {

const std::vector<std::string> kKeys = {"dense", "partition", "quant"};

// The records of a first run over `file` that completed the first `keys`
// keys of kKeys.
std::vector<resume::TensorRecord> FirstRun(const container::HrryFile& file,
                                           size_t keys) {
  ValidateSink sink;
  sink.set_record_data_crc(true);
  const net::testing::InMemoryRun r = net::testing::RunInMemory(
      file,
      net::testing::ClientOptions(
          std::vector<std::string>(kKeys.begin(), kKeys.begin() + keys)),
      &sink);
  EXPECT_TRUE(r.status.ok()) << r.status;
  return sink.records();
}

struct Resumed {
  absl::Status status;
  bool checked = false;
  std::vector<resume::TensorRecord> inner;  // what reached the real sink
};

// Resumes after `keys` keys: the last of them again, then the rest.
Resumed Resume(const container::HrryFile& server,
               const std::vector<resume::TensorRecord>& done, size_t keys) {
  const size_t from = resume::LastKeyStart(done);
  EXPECT_LT(from, done.size());
  ValidateSink inner;
  ResumeCheckSink check(
      std::vector<resume::TensorRecord>(done.begin() + from, done.end()),
      &inner);
  std::vector<std::string> names = {kKeys[keys - 1]};
  names.insert(names.end(), kKeys.begin() + keys, kKeys.end());
  const net::testing::InMemoryRun r = net::testing::RunInMemory(
      server, net::testing::ClientOptions(names), &check);
  // A sink failure stops the session: its status is the run's.
  return {r.status, check.checked(), inner.records()};
}

TEST(ResumeCheckSink, TheSameServerGoesOn) {
  const std::vector<uint8_t> bytes = net::testing::NetTestFile();
  const std::unique_ptr<container::HrryFile> file =
      net::testing::OpenTestFile(bytes);
  ASSERT_NE(file, nullptr);
  const std::vector<resume::TensorRecord> all = FirstRun(*file, 3);
  for (size_t keys : {size_t{1}, size_t{2}}) {
    SCOPED_TRACE(keys);
    const std::vector<resume::TensorRecord> done = FirstRun(*file, keys);
    const Resumed r = Resume(*file, done, keys);
    ASSERT_TRUE(r.status.ok()) << r.status;
    EXPECT_TRUE(r.checked);
    // Only the keys after the one fetched again reach the real sink.
    ASSERT_EQ(done.size() + r.inner.size(), all.size());
    for (size_t i = 0; i < r.inner.size(); ++i) {
      EXPECT_EQ(r.inner[i].name, all[done.size() + i].name);
    }
  }
}

// Issue 13: the server's file replaced between the interrupted run and the
// resumed one (same names and shapes, other data) is refused before any
// tensor reaches the real sink.
TEST(ResumeCheckSink, AChangedServerIsRefused) {
  const std::vector<uint8_t> bytes = net::testing::NetTestFile();
  const std::unique_ptr<container::HrryFile> file =
      net::testing::OpenTestFile(bytes);
  ASSERT_NE(file, nullptr);
  for (size_t keys : {size_t{1}, size_t{2}}) {
    SCOPED_TRACE(keys);
    // The data of the last completed key's (last) tensor, one byte changed.
    const std::string& key = kKeys[keys - 1];
    const std::string changed_name = keys == 1 ? "dense" : "partition_bottom";
    std::vector<uint8_t> other = bytes;
    const container::IndexEntry* e = file->Find(changed_name);
    ASSERT_NE(e, nullptr) << changed_name;
    auto d = std::make_unique<TensorDescriptor>();
    ASSERT_TRUE(file->ReadDescriptor(*e, d.get()).ok());
    absl::StatusOr<absl::Span<const uint8_t>> data = file->Buffer(*e, *d, 0);
    ASSERT_TRUE(data.ok()) << data.status();
    ASSERT_FALSE(data->empty());
    // The file holds an aligned copy of `bytes` (OpenTestFile): offsets count
    // from its first byte.
    other[data->data() - file->bytes().data()] ^= 0x40;
    const std::unique_ptr<container::HrryFile> changed =
        net::testing::OpenTestFile(other);
    ASSERT_NE(changed, nullptr);

    const std::vector<resume::TensorRecord> done = FirstRun(*file, keys);
    const Resumed r = Resume(*changed, done, keys);
    EXPECT_EQ(r.status.code(), absl::StatusCode::kFailedPrecondition)
        << r.status;
    EXPECT_TRUE(absl::StrContains(r.status.message(), key)) << r.status;
    EXPECT_TRUE(absl::StrContains(r.status.message(), "CRC-32C")) << r.status;
    EXPECT_FALSE(r.checked);
    EXPECT_TRUE(r.inner.empty());
  }
}

// Another tensor under the same key (another type or shape) is refused too.
TEST(ResumeCheckSink, AnotherTensorUnderTheKeyIsRefused) {
  const std::vector<uint8_t> bytes = net::testing::NetTestFile();
  const std::unique_ptr<container::HrryFile> file =
      net::testing::OpenTestFile(bytes);
  ASSERT_NE(file, nullptr);
  std::vector<resume::TensorRecord> done = FirstRun(*file, 1);
  done.back().shape = "[4, 3]";
  const Resumed r = Resume(*file, done, 1);
  EXPECT_EQ(r.status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(r.inner.empty());
}

}  // namespace
}  // namespace hurray::stream::ingest
