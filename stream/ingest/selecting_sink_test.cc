// SelectingSink (selecting_sink.h): --tensors in one forward pass keeps
// exactly what the ranged read (partial_hrry.h) reads, and publishes
// nothing else.
#include "stream/ingest/selecting_sink.h"

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "parser/rules.h"
#include "stream/container/safe_file_name.h"
#include "stream/container/testing/file_test_util.h"
#include "stream/container/testing/test_util.h"
#include "stream/ingest/consumers.h"
#include "stream/ingest/partial_hrry.h"
#include "stream/ingest/sinks.h"
#include "stream/ingest/testing/loader_test_util.h"
#include "tests/vectors.h"

namespace hurray::stream::ingest {
namespace {

using container::ContainerFormat;
using container::SafeFileName;
using resume::TensorRecord;

container::FileOptions Agreed() {
  container::FileOptions o;
  o.parse = vectors::AgreedOptions();
  return o;
}

// One forward pass of `bytes` keeping `names`.
absl::Status Forward(absl::Span<const uint8_t> bytes,
                     const std::vector<std::string>& names,
                     RecordingIngestSink* inner) {
  SelectingSink selecting(inner, names);
  auto consumer = MakeConsumer(ContainerFormat::kUnknown, Agreed(), &selecting,
                               nullptr, nullptr);
  absl::Status s = consumer->Feed(bytes);
  if (s.ok()) s = consumer->Finish();
  return s;
}

TEST(SelectingSink, KeepsWhatTheRangedReadReads) {
  container::HrryWriterOptions w;
  w.parse = vectors::AgreedOptions();
  const std::vector<uint8_t> file =
      container::testing::WriteFile(container::testing::ContainerVectors(), w);
  ValidateSink full(Mode::kPermissive);  // random data: no element rules
  auto whole =
      MakeConsumer(ContainerFormat::kHrry, Agreed(), &full, nullptr, nullptr);
  ASSERT_TRUE(whole->Feed(file).ok());
  ASSERT_TRUE(whole->Finish().ok());
  ASSERT_FALSE(full.records().empty());
  size_t with_members = 0;
  for (const TensorRecord& want : full.records()) {
    SCOPED_TRACE(want.name);
    ValidateSink forward(Mode::kPermissive), ranged(Mode::kPermissive);
    ASSERT_TRUE(Forward(file, {want.name}, &forward).ok());
    MemoryRangeSource src(file);
    auto m = ReadHrryMetadata(&src, Agreed());
    ASSERT_TRUE(m.ok());
    auto sel = ResolveNames((*m)->index, {want.name});
    ASSERT_TRUE(sel.ok());
    ASSERT_TRUE(ReadSelected(&src, (*m)->geometry, (*m)->index, (*m)->kv, *sel,
                             Agreed(), &ranged)
                    .ok());
    ASSERT_EQ(forward.records().size(), ranged.records().size());
    if (forward.records().size() > 1) ++with_members;
    for (size_t i = 0; i < forward.records().size(); ++i) {
      EXPECT_EQ(forward.records()[i].name, ranged.records()[i].name);
      EXPECT_EQ(forward.records()[i].index, i);
      EXPECT_EQ(forward.records()[i].shape, ranged.records()[i].shape);
      EXPECT_EQ(forward.records()[i].verdict, ranged.records()[i].verdict);
    }
  }
  EXPECT_GT(with_members, 0u);
}

TEST(SelectingSink, PublishesOnlyTheNamedOutputs) {
  const std::string dir = ingest::testing::FreshDir("selecting_sink_outputs");
  DequantSinkOptions o;
  o.out_dir = dir;
  DequantSink sink(o);
  const std::vector<uint8_t> file =
      ingest::testing::HrryBytes(ingest::testing::MixedTensors(3));
  const std::string name = ingest::testing::MixedTensors(3)[2].name;
  ASSERT_TRUE(Forward(file, {name}, &sink).ok());
  ASSERT_EQ(sink.records().size(), 1u);
  EXPECT_EQ(sink.records()[0].name, name);
  EXPECT_EQ(ingest::testing::ListDir(dir),
            std::vector<std::string>{SafeFileName(name, 0) + ".f32"});
}

TEST(SelectingSink, ANameNotInTheIndexPublishesNothing) {
  const std::string dir = ingest::testing::FreshDir("selecting_sink_unknown");
  DequantSinkOptions o;
  o.out_dir = dir;
  DequantSink sink(o);
  const std::vector<uint8_t> file =
      ingest::testing::HrryBytes(ingest::testing::MixedTensors(3));
  const absl::Status s =
      Forward(file, {ingest::testing::MixedTensors(3)[0].name, "nope"}, &sink);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(ingest::testing::ListDir(dir).empty());
}

TEST(SelectingSink, ABareStreamIsRefusedAtItsFirstTensor) {
  const std::string dir = ingest::testing::FreshDir("selecting_sink_stream");
  DequantSinkOptions o;
  o.out_dir = dir;
  DequantSink sink(o);
  const absl::Status s =
      Forward(ingest::testing::StreamBytes(ingest::testing::MixedTensors(3)),
              {"tensor_0"}, &sink);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(sink.records().empty());
  EXPECT_TRUE(ingest::testing::ListDir(dir).empty());
}

}  // namespace
}  // namespace hurray::stream::ingest
