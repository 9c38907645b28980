// ReadSelected (partial_hrry.h): the named tensors of a .hrry, and only
// them, with the verdicts of a full forward read.
#include "stream/ingest/partial_hrry.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "parser/rules.h"
#include "stream/container/file_format.h"
#include "stream/container/testing/file_test_util.h"
#include "stream/container/testing/test_util.h"
#include "stream/ingest/consumers.h"
#include "stream/ingest/sinks.h"
#include "tests/vectors.h"

namespace hurray::stream::ingest {
namespace {

using container::ContainerFormat;
using container::testing::EditableFile;
using resume::TensorRecord;

container::FileOptions Agreed() {
  container::FileOptions o;
  o.parse = vectors::AgreedOptions();
  return o;
}

// Reads `names` of `file`: OK or the status; the records in `sink`.
absl::Status Partial(absl::Span<const uint8_t> file,
                     const std::vector<std::string>& names, IngestSink* sink,
                     PartialReadStats* stats = nullptr,
                     const container::FileOptions& options = Agreed()) {
  MemoryRangeSource src(file);
  absl::StatusOr<std::unique_ptr<HrryMetadata>> m =
      ReadHrryMetadata(&src, options);
  if (!m.ok()) return m.status();
  absl::StatusOr<std::vector<const container::IndexEntry*>> sel =
      ResolveNames((*m)->index, names);
  if (!sel.ok()) return sel.status();
  return ReadSelected(&src, (*m)->geometry, (*m)->index, (*m)->kv, *sel,
                      options, sink, stats);
}

std::string RuleOf(const absl::Status& s) {
  return std::string(RuleIdOf(s).value_or("none"));
}

TEST(PartialHrry, EachTensorAloneAsInAFullRead) {
  container::HrryWriterOptions w;
  w.parse = vectors::AgreedOptions();
  w.sorted_index = true;
  const std::vector<uint8_t> file =
      container::testing::WriteFile(container::testing::ContainerVectors(), w);
  ValidateSink full(Mode::kPermissive);  // random data: no element rules
  auto consumer =
      MakeConsumer(ContainerFormat::kHrry, Agreed(), &full, nullptr, nullptr);
  ASSERT_TRUE(consumer->Feed(file).ok()) << consumer->Feed({});
  ASSERT_TRUE(consumer->Finish().ok());
  std::map<std::string, size_t> at;
  for (size_t i = 0; i < full.records().size(); ++i) {
    at[full.records()[i].name] = i;
  }
  size_t composites = 0;
  for (const TensorRecord& want : full.records()) {
    SCOPED_TRACE(want.name);
    ValidateSink sink(Mode::kPermissive);
    const absl::Status s = Partial(file, {want.name}, &sink);
    ASSERT_TRUE(s.ok()) << s;
    ASSERT_FALSE(sink.records().empty());
    // The tensor, then (a composite head) its members: the records that
    // follow it in the full read.
    const size_t first = at[want.name];
    if (sink.records().size() > 1) ++composites;
    for (size_t k = 0; k < sink.records().size(); ++k) {
      const TensorRecord& got = sink.records()[k];
      const TensorRecord& ref = full.records()[first + k];
      EXPECT_EQ(got.name, ref.name);
      EXPECT_EQ(got.shape, ref.shape);
      EXPECT_EQ(got.type, ref.type);
      EXPECT_EQ(got.bytes, ref.bytes);
      EXPECT_EQ(got.verdict, ref.verdict);
      EXPECT_TRUE(got.complete);
    }
  }
  EXPECT_GT(composites, 0u);  // the heads brought their members
}

TEST(PartialHrry, NeighboursShareOneRange) {
  const std::vector<uint8_t> file = container::testing::SmallFile();
  ValidateSink sink;
  PartialReadStats stats;
  ASSERT_TRUE(Partial(file, {"b", "a"}, &sink, &stats).ok());
  ASSERT_EQ(sink.records().size(), 2u);
  EXPECT_EQ(sink.records()[0].name, "a");  // file order
  EXPECT_EQ(sink.records()[1].name, "b");
  EXPECT_EQ(stats.ranges, 1u);
  EXPECT_EQ(stats.tensors, 2u);
}

TEST(PartialHrry, UnknownNameIsNotFound) {
  ValidateSink sink;
  const absl::Status s =
      Partial(container::testing::SmallFile(), {"a", "zz"}, &sink);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(sink.records().empty());
}

// A broken tensor that is not named is not read.
TEST(PartialHrry, OtherTensorsAreNotRead) {
  std::vector<uint8_t> file = container::testing::SmallFile();
  const EditableFile f = EditableFile::From(file);
  file[f.entries[0].descriptor_offset] ^= 0xff;  // "a"'s descriptor magic
  ValidateSink sink;
  EXPECT_TRUE(Partial(file, {"b"}, &sink).ok());
  ValidateSink broken;
  EXPECT_FALSE(Partial(file, {"a"}, &broken).ok());
}

// FILE-IDX-12: the index's data range of a named tensor ends before its
// buffers do.
TEST(PartialHrry, ShortDataLengthIsFileIdx12) {
  EditableFile f = EditableFile::From(container::testing::SmallFile());
  f.entries[0].data_length -= 1;
  const EditableFile::Built b = f.Build();
  ValidateSink sink;
  const absl::Status s = Partial(b.bytes, {"a"}, &sink);
  EXPECT_EQ(RuleOf(s), "FILE-IDX-12");
  EXPECT_EQ(OffsetOf(s).value_or(0),
            b.field_at(0, f, container::testing::kDataLengthField));
}

// FILE-TRL-03 still applies: the index CRC is checked before any tensor.
TEST(PartialHrry, IndexCrcIsChecked) {
  EditableFile f = EditableFile::From(container::testing::SmallFile());
  f.fix_crc = false;
  f.entries[1].flags = 0;  // unchanged bytes...
  EditableFile::Built b = f.Build();
  // ...and one flipped index byte.
  b.bytes[b.name_at(1)] ^= 0x01;
  ValidateSink sink;
  const absl::Status s = Partial(b.bytes, {"a"}, &sink);
  EXPECT_EQ(RuleOf(s), "FILE-TRL-03");
  EXPECT_TRUE(sink.records().empty());
}

}  // namespace
}  // namespace hurray::stream::ingest
