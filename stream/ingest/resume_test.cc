// Resume equivalence: a run interrupted after tensor k and resumed from its
// state file (stream/resume/ingest_state.h) gives the same output files (byte
// for byte), records and verdict as an uninterrupted run; a state whose
// extents or records were edited, or whose outputs changed, is refused and
// leaves OUT alone.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gtest/gtest.h"
#include "parser/rules.h"
#include "stream/container/checkpoint.h"
#include "stream/container/crc32c.h"
#include "stream/ingest/consumers.h"
#include "stream/ingest/loader.h"
#include "stream/ingest/sinks.h"
#include "stream/ingest/testing/loader_test_util.h"
#include "stream/resume/ingest_state.h"
#include "stream/resume/tensor_record.h"

namespace hurray::stream::ingest {
namespace {

using resume::IngestState;
using resume::LoadState;
using resume::ParseState;
using resume::SaveState;
using resume::SerializeState;

struct Outcome {
  absl::Status status;
  std::vector<resume::TensorRecord> records;
  std::vector<std::string> files;
  std::vector<std::vector<uint8_t>> contents;
};

// One `hurray ingest --dequant DIR --resume STATE` run over `path`, as
// Ingest() (stream/ingest/ingest.cc) does it; `stop_after` > 0 cancels once the
// checkpoint after that many tensors was saved (an interruption).
Outcome RunResumable(
    const std::string& path, const std::string& dir, const std::string& state,
    uint64_t stop_after, bool* stopped = nullptr,
    ingest::SparseOutput sparse = ingest::SparseOutput::kDense) {
  ingest::DequantSinkOptions o;
  o.out_dir = dir;
  o.sparse = sparse;
  o.spool_memory_bytes = 64;  // spool files too
  o.keep_unnamed_outputs = true;
  ingest::DequantSink sink(o);
  absl::StatusOr<IngestState> resumed = LoadState(state);
  if (resumed.ok()) {
    EXPECT_TRUE(sink.Preload(resumed->records).ok());
  }
  ingest::LoaderOptions lo;
  lo.chunk_size = 512;
  ingest::Loader loader(lo);
  const std::vector<uint8_t> source = ingest::testing::ReadAll(path);
  CheckpointFn fn = [&](const container::Checkpoint& c) {
    // The CRC of the bytes before the checkpoint, computed as they passed
    // (and continued from a resumed checkpoint).
    EXPECT_LE(c.offset, source.size());
    EXPECT_EQ(c.crc32c, container::Crc32c(absl::MakeConstSpan(source).first(
                            std::min<size_t>(c.offset, source.size()))));
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
  const container::Checkpoint* resume =
      resumed.ok() ? &resumed->checkpoint : nullptr;
  std::unique_ptr<container::ByteConsumer> c =
      ingest::MakeConsumer(container::ContainerFormat::kUnknown,
                           container::FileOptions(), &sink, resume, fn);
  Outcome out;
  out.status =
      loader
          .Run(ingest::LoadSource::File(path, resume ? resume->offset : 0),
               c.get())
          .status;
  out.records = sink.records();
  return out;
}

void Collect(const std::string& dir, Outcome* out) {
  out->files = ingest::testing::ListDir(dir);
  for (const std::string& f : out->files) {
    out->contents.push_back(ingest::testing::ReadAll(dir + "/" + f));
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
    ASSERT_EQ(a.records[i].more.size(), b.records[i].more.size());
    for (size_t j = 0; j < a.records[i].more.size(); ++j) {
      EXPECT_EQ(a.records[i].more[j].output, b.records[i].more[j].output);
      EXPECT_EQ(a.records[i].more[j].crc32c, b.records[i].more[j].crc32c);
    }
  }
}

// Variants: format (.hrry or bare stream) x fault (none, or a damaged byte
// near the end).
class Resume : public ::testing::TestWithParam<std::tuple<bool, bool>> {};

TEST_P(Resume, InterruptedAfterTensorKEqualsUninterrupted) {
  const auto [hrry, damaged] = GetParam();
  const std::vector<ingest::testing::IngestTensor> tensors =
      ingest::testing::MixedTensors(21, 2);
  std::vector<uint8_t> bytes = hrry ? ingest::testing::HrryBytes(tensors)
                                    : ingest::testing::StreamBytes(tensors);
  if (damaged) {
    // .hrry: the trailer magic; stream: cut inside the last tensor.
    if (hrry) {
      bytes[bytes.size() - 1] ^= 0x20;
    } else {
      bytes.resize(bytes.size() - 3);
    }
  }
  const std::string base = ingest::testing::FreshDir("resume");
  const std::string path = base + "/input";
  ingest::testing::WriteAll(path, bytes);

  Outcome reference = RunResumable(
      path, ingest::testing::FreshDir("resume_ref"), base + "/unused_state", 0);
  Collect(base + "/../resume_ref", &reference);
  EXPECT_EQ(reference.status.ok(), !damaged) << reference.status;

  int interrupted = 0;
  for (uint64_t k = 1; k < tensors.size(); ++k) {
    SCOPED_TRACE(::testing::Message() << "interrupted after tensor " << k);
    const std::string dir =
        ingest::testing::FreshDir(absl::StrCat("resume_", k));
    const std::string state = dir + ".state";
    std::remove(state.c_str());
    bool stopped = false;
    const Outcome first = RunResumable(path, dir, state, k, &stopped);
    if (!stopped) continue;  // no checkpoint after tensor k
    ++interrupted;
    EXPECT_EQ(RuleIdOf(first.status), "STREAM-IO");
    Outcome second = RunResumable(path, dir, state, 0);
    Collect(dir, &second);
    ExpectSame(second, reference);
  }
  EXPECT_GE(interrupted, 4);
}

INSTANTIATE_TEST_SUITE_P(Variants, Resume,
                         ::testing::Combine(::testing::Bool(),
                                            ::testing::Bool()));

// Mixed tensors with a COO and a CSR tensor among them, kept as their
// arrays (--sparse keep; issue 16).
std::vector<ingest::testing::IngestTensor> WithSparse(uint32_t seed) {
  std::vector<ingest::testing::IngestTensor> tensors =
      ingest::testing::MixedTensors(seed, 2);
  std::vector<ingest::testing::IngestTensor> sparse =
      ingest::testing::SparseTensors();
  tensors.insert(tensors.begin() + 1, std::move(sparse[0]));
  tensors.insert(tensors.begin() + 3, std::move(sparse[1]));
  return tensors;
}

// Issue 16: a resumable run keeps sparse tensors as their arrays like any
// other output; interrupted after any tensor k and resumed, it ends with
// the files, bytes and records of an uninterrupted run.
class KeptSparseResume : public ::testing::TestWithParam<bool> {};

TEST_P(KeptSparseResume, InterruptedAfterTensorKEqualsUninterrupted) {
  const bool hrry = GetParam();
  const std::vector<ingest::testing::IngestTensor> tensors = WithSparse(41);
  const std::string base = ingest::testing::FreshDir("kept_resume");
  const std::string path = base + "/input";
  ingest::testing::WriteAll(path, hrry ? ingest::testing::HrryBytes(tensors)
                                       : ingest::testing::StreamBytes(tensors));
  const std::string ref_dir = ingest::testing::FreshDir("kept_resume_ref");
  Outcome reference = RunResumable(path, ref_dir, base + "/unused_state", 0,
                                   nullptr, ingest::SparseOutput::kKeep);
  Collect(ref_dir, &reference);
  ASSERT_TRUE(reference.status.ok()) << reference.status;
  // Both sparse tensors are kept: values, and 1 + 2 index arrays.
  const std::string coo = hrry ? "coo" : "tensor_1";
  const std::string csr = hrry ? "csr" : "tensor_3";
  for (const std::string& f :
       {coo + ".values.f32", coo + ".indices.u64", csr + ".values.f32",
        csr + ".indices.u64", csr + ".indptr.u64"}) {
    EXPECT_NE(std::find(reference.files.begin(), reference.files.end(), f),
              reference.files.end())
        << f;
  }
  ASSERT_EQ(reference.records[3].more.size(), 2u);

  int interrupted = 0;
  for (uint64_t k = 1; k < tensors.size(); ++k) {
    SCOPED_TRACE(::testing::Message() << "interrupted after tensor " << k);
    const std::string dir =
        ingest::testing::FreshDir(absl::StrCat("kept_resume_", k));
    const std::string state = dir + ".state";
    std::remove(state.c_str());
    bool stopped = false;
    const Outcome first = RunResumable(path, dir, state, k, &stopped,
                                       ingest::SparseOutput::kKeep);
    if (!stopped) continue;  // no checkpoint after tensor k
    ++interrupted;
    EXPECT_EQ(RuleIdOf(first.status), "STREAM-IO");
    // The state names the kept arrays written so far.
    const absl::StatusOr<IngestState> st = LoadState(state);
    ASSERT_TRUE(st.ok()) << st.status();
    if (k >= 4) {
      EXPECT_EQ(st->records[3].more.size(), 2u);
    }
    Outcome second =
        RunResumable(path, dir, state, 0, nullptr, ingest::SparseOutput::kKeep);
    Collect(dir, &second);
    ExpectSame(second, reference);
  }
  EXPECT_GE(interrupted, 4);
}

INSTANTIATE_TEST_SUITE_P(Formats, KeptSparseResume, ::testing::Bool());

// Issue 16: a kept index array changed since the interrupted run is
// refused like a changed main output, and nothing in OUT changes.
TEST(IngestState, ChangedKeptIndexArrayIsRefused) {
  const std::string base = ingest::testing::FreshDir("kept_changed");
  const std::string path = base + "/input.hrry";
  ingest::testing::WriteAll(path, ingest::testing::HrryBytes(WithSparse(43)));
  const std::string dir = base + "/out";
  ::mkdir(dir.c_str(), 0755);
  const std::string state = base + "/state";
  bool stopped = false;
  RunResumable(path, dir, state, 4, &stopped, ingest::SparseOutput::kKeep);
  ASSERT_TRUE(stopped);
  const absl::StatusOr<IngestState> st = LoadState(state);
  ASSERT_TRUE(st.ok()) << st.status();
  const resume::TensorRecord& csr = st->records[3];
  ASSERT_EQ(csr.more.size(), 2u);
  ASSERT_FALSE(csr.more[1].pending.empty());
  {
    ingest::DequantSinkOptions o;
    o.out_dir = dir;
    o.keep_unnamed_outputs = true;
    ingest::DequantSink sink(o);
    EXPECT_TRUE(sink.Preload(st->records).ok());
  }
  const std::string indptr = dir + "/" + csr.more[1].pending;
  std::vector<uint8_t> bytes = ingest::testing::ReadAll(indptr);
  ASSERT_FALSE(bytes.empty());
  bytes.back() ^= 1;
  ingest::testing::WriteAll(indptr, bytes);
  const std::vector<std::string> before = ingest::testing::ListDir(dir);
  ingest::DequantSinkOptions o;
  o.out_dir = dir;
  o.keep_unnamed_outputs = true;
  ingest::DequantSink sink(o);
  const absl::Status s = sink.Preload(st->records);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(s.message(), "changed")) << s;
  EXPECT_EQ(ingest::testing::ListDir(dir), before);
}

// An interrupted .hrry run (after tensor 2): its directory, state and the
// state's text.
struct Interrupted {
  std::string input, dir, state, text;
};

Interrupted InterruptHrry(const std::string& name) {
  Interrupted it;
  const std::string base = ingest::testing::FreshDir(name);
  it.input = base + "/input.hrry";
  ingest::testing::WriteAll(it.input, ingest::testing::HrryBytes(
                                          ingest::testing::MixedTensors(3, 2)));
  it.dir = base + "/out";
  ::mkdir(it.dir.c_str(), 0755);
  it.state = base + "/state";
  bool stopped = false;
  RunResumable(it.input, it.dir, it.state, 2, &stopped);
  EXPECT_TRUE(stopped);
  absl::StatusOr<IngestState> st = LoadState(it.state);
  EXPECT_TRUE(st.ok()) << st.status();
  it.text = SerializeState(*st);
  return it;
}

TEST(IngestState, RefusesExtentsOutOfOrder) {
  const Interrupted it = InterruptHrry("state_extents");
  IngestState st = *ParseState(it.text);
  ASSERT_GE(st.checkpoint.extents.size(), 2u);
  IngestState bad = st;
  std::swap(bad.checkpoint.extents[0], bad.checkpoint.extents[1]);
  EXPECT_FALSE(ParseState(SerializeState(bad)).ok());
  bad = st;
  bad.checkpoint.offset += 1;  // not the end of the last tensor
  EXPECT_FALSE(ParseState(SerializeState(bad)).ok());
  bad = st;
  bad.checkpoint.extents[0].data_length = UINT64_MAX;  // overflows
  EXPECT_FALSE(ParseState(SerializeState(bad)).ok());
  bad = st;
  bad.checkpoint.last.pop_back();
  EXPECT_FALSE(ParseState(SerializeState(bad)).ok());
}

// Issue 13: a crafted record naming "../victim" (as its output, or as the
// temp a resumed run would take over) is refused: nothing outside OUT is
// moved in, nothing in OUT changes.
TEST(IngestState, CraftedRecordOutsideOutIsRefused) {
  const Interrupted it = InterruptHrry("state_victim");
  const std::string victim = it.dir + "/../victim";
  ingest::testing::WriteAll(victim, {'v'});
  const std::vector<std::string> before = ingest::testing::ListDir(it.dir);
  IngestState st = *ParseState(it.text);
  ASSERT_FALSE(st.records.empty());
  ASSERT_FALSE(st.records[0].pending_output.empty());
  for (bool pending : {false, true}) {
    IngestState crafted = st;
    if (pending) {
      crafted.records[0].pending_output = "../victim";
    } else {
      crafted.records[0].pending_output.clear();
      crafted.records[0].output = "../victim";
    }
    ingest::testing::WriteAll(it.state, {});
    {
      const std::string text = SerializeState(crafted);
      ingest::testing::WriteAll(
          it.state,
          absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(text.data()),
                              text.size()));
    }
    const absl::StatusOr<IngestState> loaded = LoadState(it.state);
    EXPECT_EQ(loaded.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(absl::StrContains(loaded.status().message(), "../victim"))
        << loaded.status();
    // Even a sink handed the records directly refuses them.
    ingest::DequantSinkOptions o;
    o.out_dir = it.dir;
    ingest::DequantSink sink(o);
    EXPECT_FALSE(sink.Preload(crafted.records).ok());
  }
  EXPECT_EQ(ingest::testing::ReadAll(victim), std::vector<uint8_t>{'v'});
  EXPECT_EQ(ingest::testing::ListDir(it.dir), before);
}

// takes the records over; a changed output is refused and left alone.
TEST(IngestState, ChangedOutputIsRefused) {
  const Interrupted it = InterruptHrry("state_output");
  IngestState st = *ParseState(it.text);
  ASSERT_FALSE(st.records[0].pending_output.empty());
  const std::string out = it.dir + "/" + st.records[0].pending_output;
  std::vector<uint8_t> bytes = ingest::testing::ReadAll(out);
  ASSERT_FALSE(bytes.empty());
  {
    ingest::DequantSinkOptions o;
    o.out_dir = it.dir;
    o.keep_unnamed_outputs = true;
    ingest::DequantSink sink(o);
    EXPECT_TRUE(sink.Preload(st.records).ok());
  }
  bytes[0] ^= 1;
  ingest::testing::WriteAll(out, bytes);
  const std::vector<std::string> before = ingest::testing::ListDir(it.dir);
  {
    ingest::DequantSinkOptions o;
    o.out_dir = it.dir;
    o.keep_unnamed_outputs = true;
    ingest::DequantSink sink(o);
    const absl::Status s = sink.Preload(st.records);
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_TRUE(absl::StrContains(s.message(), "changed")) << s;
  }
  EXPECT_EQ(ingest::testing::ListDir(it.dir), before);
  EXPECT_EQ(ingest::testing::ReadAll(out), bytes);
}

}  // namespace
}  // namespace hurray::stream::ingest
