// The resume state file, and resume equivalence: a run interrupted after
// tensor k and resumed from its state file gives the same output files
// (byte for byte), records and verdict as an uninterrupted run.
#include "stream/resume/ingest_state.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gtest/gtest.h"
#include "parser/rules.h"
#include "stream/container/crc32c.h"
#include "stream/ingest/consumers.h"
#include "stream/ingest/loader.h"
#include "stream/ingest/sinks.h"
#include "stream/ingest/testing/loader_test_util.h"
#include "stream/resume/resume_source.h"

namespace hurray::stream::resume {
namespace {

TEST(IngestState, RoundTrip) {
  IngestState st;
  st.source = "some file";
  st.out_dir = "out dir";
  st.checkpoint.format = ingest::ContainerFormat::kHrry;
  st.identity = SourceIdentity{1, 2, 3, -4};
  st.checkpoint.offset = 13096;
  st.checkpoint.crc32c = 0xDEADBEEF;
  st.checkpoint.tensors = 1;
  st.checkpoint.header.assign(64, 7);
  st.checkpoint.last.assign(40, 9);
  container::TensorExtent e;
  e.descriptor_offset = 64;
  e.descriptor_length = 200;
  e.buffer_count = 2;
  e.data_offset = 4096;
  e.data_length = 9000;
  st.checkpoint.extents.push_back(e);
  st.remaining_names = {"a b", ""};
  ingest::TensorRecord r;
  r.name = "x/y";
  r.shape = "[3, 4]";
  r.type = "int8";
  r.scheme = "nf4";
  r.bytes = 99;
  r.complete = true;
  r.verdict = "dequantized (12 values)";
  r.output = "x%2Fy.f32";
  r.output_crc32c = 77;
  st.records.push_back(r);
  r.name = "z";
  r.output.clear();
  r.pending_output = ".hurray-1-0123456789abcdef-2.tmp";
  st.records.push_back(r);
  st.checkpoint.tensors = 2;
  e.descriptor_offset = 13096;
  e.data_offset = 13500;
  e.data_length = 4;
  st.checkpoint.extents.push_back(e);
  st.checkpoint.offset = 13504;
  const std::string path = ingest::testing::FreshDir("state") + "/s";
  ASSERT_TRUE(SaveState(path, st).ok());
  absl::StatusOr<IngestState> back = LoadState(path);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->source, st.source);
  EXPECT_EQ(back->out_dir, st.out_dir);
  EXPECT_EQ(back->checkpoint.offset, 13504u);
  EXPECT_EQ(back->checkpoint.crc32c, 0xDEADBEEFu);
  ASSERT_TRUE(back->identity.has_value());
  EXPECT_EQ(*back->identity, *st.identity);
  EXPECT_EQ(SerializeState(*back), SerializeState(st));
  EXPECT_EQ(back->checkpoint.header, st.checkpoint.header);
  EXPECT_EQ(back->checkpoint.last, st.checkpoint.last);
  ASSERT_EQ(back->checkpoint.extents.size(), 2u);
  EXPECT_EQ(back->checkpoint.extents[0].data_length, 9000u);
  EXPECT_EQ(back->remaining_names, st.remaining_names);
  ASSERT_EQ(back->records.size(), 2u);
  EXPECT_EQ(back->records[0].output, "x%2Fy.f32");
  EXPECT_EQ(back->records[0].output_crc32c, 77u);
  EXPECT_EQ(back->records[1].pending_output, r.pending_output);
  EXPECT_EQ(back->records[1].verdict, r.verdict);

  EXPECT_EQ(LoadState(path + ".missing").status().code(),
            absl::StatusCode::kNotFound);
  // Truncated or edited files are refused.
  std::vector<uint8_t> bytes = ingest::testing::ReadAll(path);
  ingest::testing::WriteAll(path,
                            absl::MakeConstSpan(bytes).first(bytes.size() - 4));
  EXPECT_EQ(LoadState(path).status().code(),
            absl::StatusCode::kInvalidArgument);
  bytes[30] = 'Z';
  ingest::testing::WriteAll(path, bytes);
  EXPECT_EQ(LoadState(path).status().code(),
            absl::StatusCode::kInvalidArgument);
}

struct Outcome {
  absl::Status status;
  std::vector<ingest::TensorRecord> records;
  std::vector<std::string> files;
  std::vector<std::vector<uint8_t>> contents;
};

// One `hurray ingest --dequant DIR --resume STATE` run over `path`, as
// tools/ingest_command.cc does it; `stop_after` > 0 cancels once the
// checkpoint after that many tensors was saved (an interruption).
Outcome Ingest(const std::string& path, const std::string& dir,
               const std::string& state, uint64_t stop_after,
               bool* stopped = nullptr,
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
  ingest::CheckpointFn fn = [&](const ingest::Checkpoint& c) {
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
  const ingest::Checkpoint* resume =
      resumed.ok() ? &resumed->checkpoint : nullptr;
  std::unique_ptr<container::ByteConsumer> c =
      ingest::MakeConsumer(ingest::ContainerFormat::kUnknown,
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

  Outcome reference = Ingest(path, ingest::testing::FreshDir("resume_ref"),
                             base + "/unused_state", 0);
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
  Outcome reference = Ingest(path, ref_dir, base + "/unused_state", 0, nullptr,
                             ingest::SparseOutput::kKeep);
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
    const Outcome first =
        Ingest(path, dir, state, k, &stopped, ingest::SparseOutput::kKeep);
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
        Ingest(path, dir, state, 0, nullptr, ingest::SparseOutput::kKeep);
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
  Ingest(path, dir, state, 4, &stopped, ingest::SparseOutput::kKeep);
  ASSERT_TRUE(stopped);
  const absl::StatusOr<IngestState> st = LoadState(state);
  ASSERT_TRUE(st.ok()) << st.status();
  const ingest::TensorRecord& csr = st->records[3];
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

// Issue 16: the "part" and "more" lines of a kept sparse tensor round-trip;
// every forged name or order of them is refused; a version 2 state (no such
// lines) is still read.
TEST(IngestState, KeptSparseLinesAreCheckedStrictly) {
  IngestState st;
  st.source = "in";
  st.checkpoint.format = ingest::ContainerFormat::kStream;
  st.checkpoint.offset = 100;
  st.checkpoint.tensors = 2;
  ingest::TensorRecord r;
  r.name = "w";
  r.complete = true;
  r.output = "w.values.npy";
  r.part = ".values";
  r.output_crc32c = 5;
  r.more = {{".indices", "w.indices.npy", "", 6},
            {".indptr", "w.indptr.npy", "", 7}};
  st.records.push_back(r);
  ingest::TensorRecord p;  // pending, waiting for the index to name it
  p.name = "";
  p.complete = true;
  p.pending_output = ".hurray-1-0123456789abcdef-0.kept";
  p.part = ".values";
  p.output_crc32c = 8;
  p.more = {{".pos_0", "", ".hurray-1-0123456789abcdef-1.kept", 9},
            {".crd_0", "", ".hurray-1-0123456789abcdef-2.kept", 10}};
  st.records.push_back(p);
  const std::string good = SerializeState(st);
  ASSERT_TRUE(absl::StartsWith(good, "hurray-ingest-state 4\n"));
  const absl::StatusOr<IngestState> back = ParseState(good);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(SerializeState(*back), good);
  ASSERT_EQ(back->records[0].more.size(), 2u);
  EXPECT_EQ(back->records[0].part, ".values");
  EXPECT_EQ(back->records[0].more[1].output, "w.indptr.npy");
  EXPECT_EQ(back->records[0].more[1].crc32c, 7u);
  EXPECT_EQ(back->records[1].more[0].pending, p.more[0].pending);
  EXPECT_EQ(back->records[1].more[0].part, ".pos_0");
  // f32 outputs: .values.f32 and .u64 index arrays; unnamed: tensor_<i>.
  {
    IngestState f32 = st;
    f32.records[0].output = "tensor_0.values.f32";
    f32.records[0].more[0].output = "tensor_0.indices.u64";
    f32.records[0].more[1].output = "tensor_0.indptr.u64";
    EXPECT_TRUE(ParseState(SerializeState(f32)).ok());
  }

  // Each edit names something our mapping never gives this record.
  using Edit = std::function<void(IngestState*)>;
  const std::vector<std::pair<std::string, Edit>> forged = {
      {"more ../x",
       [](IngestState* s) { s->records[0].more[0].output = "../x"; }},
      {"more with a slash",
       [](IngestState* s) {
         s->records[0].more[0].output = "a/w.indices.npy";
       }},
      {"more absolute",
       [](IngestState* s) { s->records[0].more[0].output = "/etc/passwd"; }},
      {"more ..", [](IngestState* s) { s->records[0].more[0].output = ".."; }},
      {"another tensor's base",
       [](IngestState* s) { s->records[0].more[0].output = "v.indices.npy"; }},
      {"a base other than the values'",
       [](IngestState* s) {
         s->records[0].more[0].output = "tensor_0.indices.npy";
       }},
      {"a part not its own",
       [](IngestState* s) { s->records[0].more[0].output = "w.indptr.npy"; }},
      {"f32 index array as .npy with .f32 values",
       [](IngestState* s) { s->records[0].output = "w.values.f32"; }},
      {"the values without their part",
       [](IngestState* s) { s->records[0].output = "w.npy"; }},
      {"part .values for an index array",
       [](IngestState* s) {
         s->records[0].more[0] = {".values", "w.values.npy", "", 6};
       }},
      {"part with a slash",
       [](IngestState* s) {
         s->records[0].more[0] = {"/../x", "w/../x.npy", "", 6};
       }},
      {"part .pos_01",
       [](IngestState* s) {
         s->records[0].more[0] = {".pos_01", "w.pos_01.npy", "", 6};
       }},
      {"part past the rank bound",
       [](IngestState* s) {
         s->records[0].more[0] = {".crd_64", "w.crd_64.npy", "", 6};
       }},
      {"part twice",
       [](IngestState* s) {
         s->records[0].more[1] = {".indices", "w.indices.npy", "", 7};
       }},
      {"record part other than .values",
       [](IngestState* s) {
         s->records[0].part = ".indices";
         s->records[0].output = "w.indices.npy";
       }},
      {"part without index arrays",
       [](IngestState* s) { s->records[0].more.clear(); }},
      {"index arrays without a part",
       [](IngestState* s) { s->records[0].part.clear(); }},
      {"index array pending, values published",
       [](IngestState* s) {
         s->records[0].more[0].output.clear();
         s->records[0].more[0].pending = ".hurray-1-0123456789abcdef-5.kept";
       }},
      {"index array published, values pending",
       [](IngestState* s) {
         s->records[1].more[0].pending.clear();
         s->records[1].more[0].output = "tensor_1.pos_0.npy";
       }},
      {"pending index array not a temp",
       [](IngestState* s) { s->records[1].more[0].pending = "../x"; }},
      {"index array with no file",
       [](IngestState* s) { s->records[0].more[0].output.clear(); }},
      {"index array with two files",
       [](IngestState* s) {
         s->records[0].more[0].pending = ".hurray-1-0123456789abcdef-5.kept";
       }},
      {"another record's temp",
       [](IngestState* s) {
         s->records[1].more[1].pending = s->records[1].pending_output;
       }},
      {"the index arrays of no output",
       [](IngestState* s) {
         s->records[1].pending_output.clear();
         s->records[1].output_crc32c = 0;
         s->records[1].more.clear();
         s->records[0].output.clear();
         s->records[0].output_crc32c = 0;
         for (auto& m : s->records[0].more) m.output.clear();
       }},
  };
  for (const auto& [why, edit] : forged) {
    IngestState bad = st;
    edit(&bad);
    const std::string text = SerializeState(bad);
    ASSERT_NE(text, good) << why;
    EXPECT_EQ(ParseState(text).status().code(),
              absl::StatusCode::kInvalidArgument)
        << why;
  }
  // Lines out of place, or malformed.
  const std::string part_line =
      absl::StrCat("part ", absl::BytesToHexString(".values"), "\n");
  const std::string more_line =
      absl::StrCat("more ", absl::BytesToHexString(".indices"), " ",
                   absl::BytesToHexString("w.indices.npy"), " - 6\n");
  ASSERT_NE(good.find(part_line + more_line), std::string::npos) << good;
  const std::vector<std::pair<std::string, std::string>> bad_text = {
      {"more before part",
       absl::StrReplaceAll(good,
                           {{part_line + more_line, more_line + part_line}})},
      {"part twice",
       absl::StrReplaceAll(
           good, {{part_line + more_line, part_line + part_line + more_line}})},
      {"part before any record",
       absl::StrReplaceAll(good, {{"crc 0\n", "crc 0\n" + part_line}})},
      {"more CRC above 32 bits",
       absl::StrReplaceAll(good, {{" - 6\n", " - 4294967296\n"}})},
      {"more field missing", absl::StrReplaceAll(good, {{" - 6\n", " 6\n"}})},
      {"empty part", absl::StrReplaceAll(good, {{part_line, "part -\n"}})},
      {"part and more in a version 2 file",
       absl::StrReplaceAll(
           good, {{"hurray-ingest-state 4", "hurray-ingest-state 2"}})},
  };
  for (const auto& [why, text] : bad_text) {
    ASSERT_NE(text, good) << why;
    EXPECT_EQ(ParseState(text).status().code(),
              absl::StatusCode::kInvalidArgument)
        << why;
  }
  // A version 2 state (before issue 16: one output per record) is read as
  // it is.
  IngestState v2 = st;
  v2.records[0] = ingest::TensorRecord();
  v2.records[0].name = "w";
  v2.records[0].complete = true;
  v2.records[0].output = "w.npy";
  v2.records[0].output_crc32c = 5;
  v2.records[1] = v2.records[0];
  v2.records[1].name.clear();
  v2.records[1].output = "tensor_1.npy";
  const std::string v2_text = absl::StrReplaceAll(
      SerializeState(v2), {{"hurray-ingest-state 4", "hurray-ingest-state 2"}});
  ASSERT_TRUE(absl::StartsWith(v2_text, "hurray-ingest-state 2\n"));
  const absl::StatusOr<IngestState> old = ParseState(v2_text);
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_EQ(old->records[1].output, "tensor_1.npy");
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
  Ingest(it.input, it.dir, it.state, 2, &stopped);
  EXPECT_TRUE(stopped);
  absl::StatusOr<IngestState> st = LoadState(it.state);
  EXPECT_TRUE(st.ok()) << st.status();
  it.text = SerializeState(*st);
  return it;
}

// Issue 13: the state file is hostile input. Each edit of a valid state
// below is one our SaveState never writes, and is refused.
TEST(IngestState, RefusesWhatSaveStateWouldNotWrite) {
  IngestState st;
  st.source = "in";
  st.checkpoint.format = ingest::ContainerFormat::kStream;
  st.checkpoint.offset = 100;
  st.checkpoint.tensors = 1;
  ingest::TensorRecord r;
  r.name = "w";
  r.complete = true;
  r.output = "w.f32";
  r.output_crc32c = 5;
  st.records.push_back(r);
  const std::string good = SerializeState(st);
  ASSERT_TRUE(ParseState(good).ok()) << ParseState(good).status();
  const std::string w = absl::BytesToHexString("w.f32");
  const std::string record_w = absl::StrCat(" ", w, " - 5 0\n");
  auto with_output = [&](absl::string_view output) {
    return absl::StrReplaceAll(
        good, {{record_w, absl::StrCat(" ", absl::BytesToHexString(output),
                                       " - 5 0\n")}});
  };
  auto with_pending = [&](absl::string_view pending) {
    return absl::StrReplaceAll(
        good, {{record_w, absl::StrCat(" - ", absl::BytesToHexString(pending),
                                       " 5 0\n")}});
  };
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"output ../victim", with_output("../victim")},
      {"output ..", with_output("..")},
      {"output with a slash", with_output("a/w.f32")},
      {"absolute output", with_output("/etc/passwd")},
      {"another tensor's name", with_output("v.f32")},
      {"a temp name as output",
       with_output(".hurray-1-0123456789abcdef-0.tmp")},
      {"pending ../x", with_pending("../x")},
      {"pending plain name", with_pending("w.f32")},
      {"two outputs",
       absl::StrReplaceAll(
           good,
           {{record_w, absl::StrCat(" ", w, " ",
                                    absl::BytesToHexString(".hurray-1-"
                                                           "0123456789abcdef"
                                                           "-0.tmp"),
                                    " 5 0\n")}})},
      {"incomplete record", absl::StrReplaceAll(good, {{" 0 1 ", " 0 0 "}})},
      {"CRC above 32 bits",
       absl::StrReplaceAll(good, {{" - 5 0\n", " - 4294967296 0\n"}})},
      {"data CRC above 32 bits",
       absl::StrReplaceAll(good, {{" - 5 0\n", " - 5 4294967296\n"}})},
      {"a record field missing",
       absl::StrReplaceAll(good, {{" - 5 0\n", " - 5\n"}})},
      {"a key twice",
       absl::StrReplaceAll(good,
                           {{"offset 100\n", "offset 100\noffset 100\n"}})},
      {"an unknown key",
       absl::StrReplaceAll(good, {{"end\n", "rm -rf\nend\n"}})},
      {"bytes after end", good + "x"},
      {"no end", good.substr(0, good.size() - 4)},
      {"no newline at the end", good.substr(0, good.size() - 1)},
      {"no crc line", absl::StrReplaceAll(good, {{"crc 0\n", ""}})},
      {"format unknown",
       absl::StrReplaceAll(good, {{"format 1\n", "format 0\n"}})},
      {"format 3", absl::StrReplaceAll(good, {{"format 1\n", "format 3\n"}})},
      {"leading zero",
       absl::StrReplaceAll(good, {{"offset 100\n", "offset 0100\n"}})},
      {"sign", absl::StrReplaceAll(good, {{"offset 100\n", "offset +100\n"}})},
      {"number past 64 bits",
       absl::StrReplaceAll(
           good, {{"offset 100\n", "offset 18446744073709551616\n"}})},
      {"record count",
       absl::StrReplaceAll(good, {{"tensors 1\n", "tensors 2\n"}})},
      {"odd hex",
       absl::StrReplaceAll(good, {{"source 696e\n", "source 696\n"}})},
      {"file fields in a stream",
       absl::StrReplaceAll(good, {{"header -\n", "header 00\n"}})},
      {"string over its bound",
       absl::StrReplaceAll(
           good,
           {{"source 696e\n",
             absl::StrCat("source ", std::string(2 * kMaxStateString + 2, 'a'),
                          "\n")}})},
      {"version 1", absl::StrReplaceAll(good, {{"hurray-ingest-state 4",
                                                "hurray-ingest-state 1"}})},
  };
  for (const auto& [why, text] : bad) {
    ASSERT_NE(text, good) << why << ": the edit did not apply";
    const absl::StatusOr<IngestState> parsed = ParseState(text);
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument)
        << why;
  }
  // Two records, one output file.
  {
    IngestState two = st;
    two.records.push_back(r);
    two.records[1].name.clear();
    two.records[1].output = "tensor_1.f32";
    two.checkpoint.tensors = 2;
    ASSERT_TRUE(ParseState(SerializeState(two)).ok());
    two.records[0].output.clear();
    two.records[1].output.clear();
    two.records[0].pending_output = ".hurray-1-0123456789abcdef-0.tmp";
    two.records[1].pending_output = ".hurray-1-0123456789abcdef-0.tmp";
    EXPECT_EQ(ParseState(SerializeState(two)).status().code(),
              absl::StatusCode::kInvalidArgument);
  }
  // The name our mapping gives an unnamed tensor is accepted.
  EXPECT_TRUE(ParseState(with_output("tensor_0.f32")).ok());
  // .npy outputs (issue 16) too, and nothing else of the kind.
  EXPECT_TRUE(ParseState(with_output("w.npy")).ok());
  EXPECT_TRUE(ParseState(with_output("tensor_0.npy")).ok());
  EXPECT_FALSE(ParseState(with_output("w.safetensors")).ok());
  EXPECT_FALSE(ParseState(with_output("w.npy.f32")).ok());
}

TEST(IngestState, OutputsLineRoundTripsAndIsOptional) {
  IngestState st;
  st.source = "in";
  st.checkpoint.format = ingest::ContainerFormat::kStream;
  st.checkpoint.offset = 100;
  const std::string old_state = SerializeState(st);
  EXPECT_EQ(old_state.find("outputs"), std::string::npos);
  ASSERT_TRUE(ParseState(old_state).ok());
  EXPECT_EQ(ParseState(old_state)->outputs, "");
  st.outputs = "npy/float16";
  const std::string text = SerializeState(st);
  absl::StatusOr<IngestState> back = ParseState(text);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->outputs, "npy/float16");
  // Once only, and never empty.
  const std::string line =
      absl::StrCat("outputs ", absl::BytesToHexString("npy/float16"), "\n");
  EXPECT_FALSE(
      ParseState(absl::StrReplaceAll(text, {{line, line + line}})).ok());
  EXPECT_FALSE(
      ParseState(absl::StrReplaceAll(text, {{line, "outputs \n"}})).ok());
}

TEST(IngestState, HttpValidatorRoundTripsAndIsPrintableOnly) {
  IngestState st;
  st.source = "https://h/m.hrry";
  st.checkpoint.format = ingest::ContainerFormat::kStream;
  st.http = HttpValidator{"\"5f1-abc\"", 123456789};
  const std::string good = SerializeState(st);
  absl::StatusOr<IngestState> back = ParseState(good);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_TRUE(back->http.has_value());
  EXPECT_EQ(*back->http, *st.http);
  EXPECT_EQ(SerializeState(*back), good);
  // The validator becomes an If-Range header: no CR, LF or other control
  // bytes, not empty, bounded; the line appears once.
  const std::string line = absl::StrCat(
      "http ", absl::BytesToHexString(st.http->validator), " 123456789\n");
  ASSERT_NE(good.find(line), std::string::npos);
  for (const std::string& bad_line :
       {absl::StrCat("http ", absl::BytesToHexString("\"a\"\r\nX: y"), " 1\n"),
        absl::StrCat("http ", absl::BytesToHexString(std::string("\0", 1)),
                     " 1\n"),
        std::string("http - 1\n"),
        absl::StrCat(
            "http ",
            absl::BytesToHexString(std::string(kMaxValidatorBytes + 1, 'a')),
            " 1\n"),
        absl::StrCat("http ", absl::BytesToHexString("\"a\""), " -1\n"),
        absl::StrCat("http ", absl::BytesToHexString("\"a\""), "\n"),
        absl::StrCat(line, line)}) {
    EXPECT_EQ(ParseState(absl::StrReplaceAll(good, {{line, bad_line}}))
                  .status()
                  .code(),
              absl::StatusCode::kInvalidArgument)
        << absl::CHexEscape(bad_line);
  }
}

TEST(IngestState, ServerIdentityRoundTripsAndIsCheckedStrictly) {
  IngestState st;
  st.source = "tcp://127.0.0.1:7420/a,b";
  st.checkpoint.format = ingest::ContainerFormat::kStream;
  st.server = "hrry dev=2049 ino=77 size=4096 mtime_ns=1 index_crc32c=0badf00d";
  const std::string good = SerializeState(st);
  ASSERT_TRUE(absl::StartsWith(good, "hurray-ingest-state 4\n"));
  absl::StatusOr<IngestState> back = ParseState(good);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_TRUE(back->server.has_value());
  EXPECT_EQ(*back->server, *st.server);
  EXPECT_EQ(SerializeState(*back), good);
  // Optional: a server that did not say.
  st.server.reset();
  back = ParseState(SerializeState(st));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_FALSE(back->server.has_value());
  // A version 3 state (before the line existed) is read as it is.
  back = ParseState(absl::StrReplaceAll(
      SerializeState(st),
      {{"hurray-ingest-state 4", "hurray-ingest-state 3"}}));
  ASSERT_TRUE(back.ok()) << back.status();

  const std::string line = absl::StrCat(
      "server ",
      absl::BytesToHexString("hrry dev=2049 ino=77 size=4096 mtime_ns=1 "
                             "index_crc32c=0badf00d"),
      "\n");
  ASSERT_NE(good.find(line), std::string::npos);
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"control byte (it is printed in errors)",
       absl::StrReplaceAll(
           good,
           {{line, absl::StrCat("server ", absl::BytesToHexString("a\x1b[2Jb"),
                                "\n")}})},
      {"empty", absl::StrReplaceAll(good, {{line, "server -\n"}})},
      {"over the bound",
       absl::StrReplaceAll(
           good, {{line, absl::StrCat("server ",
                                      absl::BytesToHexString(std::string(
                                          kMaxServerIdentityBytes + 1, 'a')),
                                      "\n")}})},
      {"twice", absl::StrReplaceAll(good, {{line, line + line}})},
      {"in a version 3 state",
       absl::StrReplaceAll(
           good, {{"hurray-ingest-state 4", "hurray-ingest-state 3"}})},
      {"for a file source",
       absl::StrReplaceAll(
           good,
           {{absl::StrCat("source ", absl::BytesToHexString(st.source)),
             absl::StrCat("source ", absl::BytesToHexString("m.hrry"))}})},
  };
  for (const auto& [why, text] : bad) {
    ASSERT_NE(text, good) << why << ": the edit did not apply";
    EXPECT_EQ(ParseState(text).status().code(),
              absl::StatusCode::kInvalidArgument)
        << why;
  }
  EXPECT_TRUE(IsServerIdentity("x"));
  EXPECT_FALSE(IsServerIdentity(""));
  EXPECT_FALSE(IsServerIdentity("a\nb"));
  EXPECT_FALSE(IsServerIdentity("\xc3\xa9"));
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

TEST(IngestState, StateFileSymlinksAreNeverFollowed) {
  const std::string dir = ingest::testing::FreshDir("state_links");
  ingest::testing::WriteAll(dir + "/victim", {'v'});
  ASSERT_EQ(::symlink((dir + "/victim").c_str(), (dir + "/state").c_str()), 0);
  // Reading: refused, not followed.
  EXPECT_NE(LoadState(dir + "/state").status().code(), absl::StatusCode::kOk);
  // Writing, at the state and at its old temporary name.
  ASSERT_EQ(::symlink((dir + "/victim").c_str(), (dir + "/state.tmp").c_str()),
            0);
  IngestState st;
  st.records.clear();
  ASSERT_TRUE(SaveState(dir + "/state", st).ok());
  EXPECT_EQ(ingest::testing::ReadAll(dir + "/victim"),
            std::vector<uint8_t>{'v'});
  ASSERT_TRUE(LoadState(dir + "/state").ok());
}

// Issue 13: a source replaced (another file), rewritten (size, mtime) or
// changed in place behind a restored mtime is refused; the same file is
// accepted.
TEST(ResumeSource, ReplacedSourceIsRefused) {
  const std::string dir = ingest::testing::FreshDir("resume_source");
  const std::string path = dir + "/input";
  std::vector<uint8_t> bytes(5000);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i);
  ingest::testing::WriteAll(path, bytes);
  const SourceIdentity id = *IdentifyFile(path);
  const uint32_t crc =
      container::Crc32c(absl::MakeConstSpan(bytes).first(3000));
  EXPECT_TRUE(CheckResumeSource(path, id, 3000, crc).ok());
  EXPECT_FALSE(CheckResumeSource(path, id, 3000, crc ^ 1).ok());
  EXPECT_FALSE(CheckResumeSource(path, id, 6000, crc).ok());

  // Same bytes before the checkpoint, another file: the inode differs.
  std::vector<uint8_t> other = bytes;
  other[4000] ^= 1;
  ingest::testing::WriteAll(dir + "/other", other);
  ASSERT_EQ(std::rename((dir + "/other").c_str(), path.c_str()), 0);
  absl::Status s = CheckResumeSource(path, id, 3000, crc);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(s.message(), "refusing to resume")) << s;

  // Changed in place (same inode, same size) with its mtime put back: the
  // CRC of the consumed bytes differs.
  const SourceIdentity id2 = *IdentifyFile(path);
  const uint32_t crc2 =
      container::Crc32c(absl::MakeConstSpan(other).first(3000));
  ASSERT_TRUE(CheckResumeSource(path, id2, 3000, crc2).ok());
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  {
    FILE* f = std::fopen(path.c_str(), "r+b");
    ASSERT_NE(f, nullptr);
    std::fseek(f, 10, SEEK_SET);
    std::fputc(0x55, f);
    std::fclose(f);
  }
  const struct timespec times[2] = {st.st_atim, st.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
  ASSERT_EQ(*IdentifyFile(path), id2);
  s = CheckResumeSource(path, id2, 3000, crc2);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(s.message(), "CRC-32C")) << s;

  // Not a regular file.
  EXPECT_FALSE(IdentifyFile(dir).ok());
}

// Issue 13: each completed output's CRC-32C is checked when a resumed run
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
}  // namespace hurray::stream::resume
