// The resume state file, and resume equivalence: a run interrupted after
// tensor k and resumed from its state file gives the same output files
// (byte for byte), records and verdict as an uninterrupted run.
#include "stream/ingest_state.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "parser/rules.h"
#include "stream/consumers.h"
#include "stream/loader.h"
#include "stream/loader_test_util.h"
#include "stream/sinks.h"

namespace hurray::stream {
namespace {

TEST(IngestState, RoundTrip) {
  IngestState st;
  st.source = "some file";
  st.out_dir = "out dir";
  st.checkpoint.format = SourceFormat::kHrry;
  st.checkpoint.offset = 12345;
  st.checkpoint.tensors = 1;
  st.checkpoint.header.assign(64, 7);
  st.checkpoint.last.assign(40, 9);
  TensorExtent e;
  e.descriptor_offset = 64;
  e.descriptor_length = 200;
  e.buffer_count = 2;
  e.data_offset = 4096;
  e.data_length = 9000;
  st.checkpoint.extents.push_back(e);
  st.remaining_names = {"a b", ""};
  TensorRecord r;
  r.name = "x/y";
  r.shape = "[3, 4]";
  r.type = "int8";
  r.scheme = "nf4";
  r.bytes = 99;
  r.complete = true;
  r.verdict = "dequantized (12 values)";
  r.output = "x%2Fy.f32";
  st.records.push_back(r);
  const std::string path = testing::FreshDir("state") + "/s";
  ASSERT_TRUE(SaveState(path, st).ok());
  absl::StatusOr<IngestState> back = LoadState(path);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->source, st.source);
  EXPECT_EQ(back->out_dir, st.out_dir);
  EXPECT_EQ(back->checkpoint.offset, 12345u);
  EXPECT_EQ(back->checkpoint.header, st.checkpoint.header);
  EXPECT_EQ(back->checkpoint.last, st.checkpoint.last);
  ASSERT_EQ(back->checkpoint.extents.size(), 1u);
  EXPECT_EQ(back->checkpoint.extents[0].data_length, 9000u);
  EXPECT_EQ(back->remaining_names, st.remaining_names);
  ASSERT_EQ(back->records.size(), 1u);
  EXPECT_EQ(back->records[0].output, r.output);
  EXPECT_EQ(back->records[0].verdict, r.verdict);

  EXPECT_EQ(LoadState(path + ".missing").status().code(),
            absl::StatusCode::kNotFound);
  // Truncated or edited files are refused.
  std::vector<uint8_t> bytes = testing::ReadAll(path);
  testing::WriteAll(path, absl::MakeConstSpan(bytes).first(bytes.size() - 4));
  EXPECT_EQ(LoadState(path).status().code(),
            absl::StatusCode::kInvalidArgument);
  bytes[30] = 'Z';
  testing::WriteAll(path, bytes);
  EXPECT_EQ(LoadState(path).status().code(),
            absl::StatusCode::kInvalidArgument);
}

struct Outcome {
  absl::Status status;
  std::vector<TensorRecord> records;
  std::vector<std::string> files;
  std::vector<std::vector<uint8_t>> contents;
};

// One `hurray ingest --dequant DIR --resume STATE` run over `path`, as
// tools/ingest_command.cc does it; `stop_after` > 0 cancels once the
// checkpoint after that many tensors was saved (an interruption).
Outcome Ingest(const std::string& path, const std::string& dir,
               const std::string& state, uint64_t stop_after,
               bool* stopped = nullptr) {
  DequantSinkOptions o;
  o.out_dir = dir;
  o.spool_memory_bytes = 64;  // spool files too
  o.keep_unnamed_outputs = true;
  DequantSink sink(o);
  absl::StatusOr<IngestState> resumed = LoadState(state);
  if (resumed.ok()) EXPECT_TRUE(sink.Preload(resumed->records).ok());
  LoaderOptions lo;
  lo.chunk_size = 512;
  Loader loader(lo);
  CheckpointFn fn = [&](const Checkpoint& c) {
    if (stop_after > 0 && c.tensors > stop_after) return;  // "crashed"
    IngestState st;
    st.source = path;
    st.out_dir = dir;
    st.checkpoint = c;
    st.records.assign(sink.records().begin(),
                      sink.records().begin() + c.tensors);
    EXPECT_TRUE(SaveState(state, st).ok());
    if (c.tensors == stop_after) {
      if (stopped != nullptr) *stopped = true;
      loader.Cancel();
    }
  };
  const Checkpoint* resume = resumed.ok() ? &resumed->checkpoint : nullptr;
  std::unique_ptr<ByteConsumer> c =
      MakeConsumer(SourceFormat::kUnknown, FileOptions(), &sink, resume, fn);
  Outcome out;
  out.status =
      loader.Run(LoadSource::File(path, resume ? resume->offset : 0), c.get())
          .status;
  out.records = sink.records();
  return out;
}

void Collect(const std::string& dir, Outcome* out) {
  out->files = testing::ListDir(dir);
  for (const std::string& f : out->files) {
    out->contents.push_back(testing::ReadAll(dir + "/" + f));
  }
}

void ExpectSame(const Outcome& a, const Outcome& b) {
  EXPECT_EQ(a.status.code(), b.status.code()) << a.status << " / " << b.status;
  EXPECT_EQ(RuleIdOf(a.status), RuleIdOf(b.status));
  EXPECT_EQ(OffsetOf(a.status), OffsetOf(b.status));
  EXPECT_EQ(a.files, b.files);
  EXPECT_TRUE(a.contents == b.contents) << "output bytes differ";
  ASSERT_EQ(a.records.size(), b.records.size());
  for (size_t i = 0; i < a.records.size(); ++i) {
    EXPECT_EQ(a.records[i].name, b.records[i].name);
    EXPECT_EQ(a.records[i].verdict, b.records[i].verdict);
    EXPECT_EQ(a.records[i].output, b.records[i].output);
    EXPECT_EQ(a.records[i].complete, b.records[i].complete);
  }
}

// Variants: format (.hrry or bare stream) x fault (none, or a damaged byte
// near the end).
class Resume : public ::testing::TestWithParam<std::tuple<bool, bool>> {};

TEST_P(Resume, InterruptedAfterTensorKEqualsUninterrupted) {
  const auto [hrry, damaged] = GetParam();
  const std::vector<testing::IngestTensor> tensors =
      testing::MixedTensors(21, 2);
  std::vector<uint8_t> bytes =
      hrry ? testing::HrryBytes(tensors) : testing::StreamBytes(tensors);
  if (damaged) {
    // .hrry: the trailer magic; stream: cut inside the last tensor.
    if (hrry) {
      bytes[bytes.size() - 1] ^= 0x20;
    } else {
      bytes.resize(bytes.size() - 3);
    }
  }
  const std::string base = testing::FreshDir("resume");
  const std::string path = base + "/input";
  testing::WriteAll(path, bytes);

  Outcome reference =
      Ingest(path, testing::FreshDir("resume_ref"), base + "/unused_state", 0);
  Collect(base + "/../resume_ref", &reference);
  EXPECT_EQ(reference.status.ok(), !damaged) << reference.status;

  int interrupted = 0;
  for (uint64_t k = 1; k < tensors.size(); ++k) {
    SCOPED_TRACE(::testing::Message() << "interrupted after tensor " << k);
    const std::string dir = testing::FreshDir(absl::StrCat("resume_", k));
    const std::string state = dir + ".state";
    std::remove(state.c_str());
    bool stopped = false;
    const Outcome first = Ingest(path, dir, state, k, &stopped);
    if (!stopped) continue;  // no checkpoint after tensor k
    ++interrupted;
    EXPECT_EQ(RuleIdOf(first.status), "STREAM-IO");
    Outcome second = Ingest(path, dir, state, 0);
    Collect(dir, &second);
    ExpectSame(second, reference);
  }
  EXPECT_GE(interrupted, 4);
}

INSTANTIATE_TEST_SUITE_P(Variants, Resume,
                         ::testing::Combine(::testing::Bool(),
                                            ::testing::Bool()));

}  // namespace
}  // namespace hurray::stream
