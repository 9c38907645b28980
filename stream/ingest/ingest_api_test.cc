// Ingest() itself (ingest.h): a file source, the selection, index_first, a
// reader source, a rejection's rule id and offset, values handed to the
// observer, cancel, and the resume checkpoint.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "parser/rules.h"
#include "stream/ingest/ingest.h"
#include "stream/ingest/loader.h"
#include "stream/ingest/testing/loader_test_util.h"
#include "stream/net/server.h"
#include "stream/net/testing/net_test_util.h"
#include "tests/vectors.h"

namespace hurray::stream::ingest {
namespace {

using ingest::testing::FreshDir;
using ingest::testing::HrryBytes;
using ingest::testing::IngestTensor;
using ingest::testing::MixedTensors;
using ingest::testing::StreamBytes;
using ingest::testing::WriteAll;

// Records what Ingest() hands over.
class Recorder : public IngestObserver {
 public:
  struct Seen {
    std::string name;
    std::vector<uint64_t> shape;
    std::string verdict;
    bool has_values = false;
    std::vector<uint8_t> values;  // as bytes, little-endian float32
    std::vector<size_t> buffer_sizes;
    uint32_t descriptor_buffers = 0;  // kRaw: the descriptor's buffer_count
  };
  absl::Status OnTensor(const IngestedTensor& t) override {
    Seen s;
    s.name = t.record->name;
    s.shape.assign(t.shape.begin(), t.shape.end());
    s.verdict = t.record->verdict;
    s.has_values = t.has_values;
    const auto* p = reinterpret_cast<const uint8_t*>(t.values.data());
    s.values.assign(p, p + t.values.size() * sizeof(float));
    for (absl::Span<const uint8_t> b : t.buffers) {
      s.buffer_sizes.push_back(b.size());
    }
    if (t.descriptor != nullptr) {
      s.descriptor_buffers = t.descriptor->buffer_count;
    }
    seen.push_back(std::move(s));
    return absl::OkStatus();
  }
  void OnProgress(const IngestProgress& p) override {
    ++progress_calls;
    last_bytes = p.bytes;
  }
  bool Cancelled() override {
    return cancel_after >= 0 &&
           static_cast<int>(seen.size()) + checkpoints >= cancel_after &&
           (cancel_after_checkpoint ? checkpoints > 0 : true);
  }
  void OnCheckpoint(const IngestCheckpoint& c) override {
    ++checkpoints;
    checkpoint_tensors.push_back(c.tensors);
  }

  std::vector<Seen> seen;
  int progress_calls = 0;
  uint64_t last_bytes = 0;
  int cancel_after = -1;
  bool cancel_after_checkpoint = false;
  int checkpoints = 0;
  std::vector<uint64_t> checkpoint_tensors;
};

std::string WriteInput(const std::string& dir, const std::string& name,
                       const std::vector<uint8_t>& bytes) {
  const std::string path = dir + "/" + name;
  WriteAll(path, bytes);
  return path;
}

IngestRequest RequestFor(const std::string& source) {
  absl::StatusOr<IngestSource> s = ParseSource(source);
  EXPECT_TRUE(s.ok()) << s.status();
  IngestRequest r;
  r.source = *s;
  return r;
}

TEST(ParseSourceTest, EveryKind) {
  absl::StatusOr<IngestSource> s = ParseSource("-");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->kind, IngestSource::Kind::kStdin);
  EXPECT_EQ(s->fd, 0);
  s = ParseSource("tcp://[::1]:7420/a,b,,c");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->kind, IngestSource::Kind::kTcp);
  EXPECT_EQ(s->host, "::1");
  EXPECT_EQ(s->port, "7420");
  EXPECT_THAT(s->keys, ::testing::ElementsAre("a", "b", "c"));
  s = ParseSource("tcp://host:1");
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s->keys.empty());
  EXPECT_FALSE(ParseSource("tcp://host").ok());
  EXPECT_FALSE(ParseSource("tcp://:80").ok());
  s = ParseSource("https://example.com/m.hrry");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->kind, IngestSource::Kind::kHttp);
  EXPECT_TRUE(s->is_network());
  s = ParseSource("dir/model.hrry");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->kind, IngestSource::Kind::kFile);
  EXPECT_EQ(s->path, "dir/model.hrry");
  EXPECT_EQ(IngestSource::Fd(7).text, "fd:7");
}

TEST(IngestTest, MissingFileFailsBeforeAnything) {
  IngestRequest r = RequestFor(FreshDir("ingest_missing") + "/none.hrry");
  absl::StatusOr<IngestReport> report = Ingest(r, nullptr);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().message(),
            "cannot open: No such file or directory");
}

TEST(IngestTest, FileSourceReportsEveryTensor) {
  const std::string dir = FreshDir("ingest_file");
  const std::vector<IngestTensor> tensors = MixedTensors(1);
  IngestRequest r = RequestFor(WriteInput(dir, "m.hrry", HrryBytes(tensors)));
  Recorder rec;
  absl::StatusOr<IngestReport> report = Ingest(r, &rec);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->status.ok()) << report->status;
  ASSERT_EQ(report->tensors.size(), tensors.size());
  ASSERT_EQ(rec.seen.size(), tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    EXPECT_EQ(report->tensors[i].name, tensors[i].name);
    EXPECT_TRUE(report->tensors[i].complete);
    EXPECT_EQ(rec.seen[i].name, tensors[i].name);
    EXPECT_FALSE(rec.seen[i].has_values);
  }
  EXPECT_GT(rec.progress_calls, 0);
  EXPECT_EQ(report->bytes, HrryBytes(tensors).size());
  EXPECT_FALSE(report->rule_id().has_value());
}

TEST(IngestTest, ObserverGetsDequantizedValues) {
  const std::string dir = FreshDir("ingest_values");
  const std::vector<IngestTensor> tensors = MixedTensors(2);
  for (const char* kind : {"stream", "hrry"}) {
    SCOPED_TRACE(kind);
    const std::vector<uint8_t> bytes =
        std::string(kind) == "hrry" ? HrryBytes(tensors) : StreamBytes(tensors);
    IngestRequest r = RequestFor(WriteInput(dir, kind, bytes));
    r.data = TensorData::kDequantized;
    r.scratch_dir = dir;
    r.chunk_size = 4096;
    Recorder rec;
    absl::StatusOr<IngestReport> report = Ingest(r, &rec);
    ASSERT_TRUE(report.ok()) << report.status();
    ASSERT_TRUE(report->status.ok()) << report->status;
    ASSERT_EQ(rec.seen.size(), tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) {
      if (tensors[i].expected.empty()) continue;
      EXPECT_TRUE(rec.seen[i].has_values) << i;
      EXPECT_EQ(rec.seen[i].values, tensors[i].expected) << i;
    }
    // The staged values are gone with the run.
    EXPECT_EQ(ingest::testing::ListDir(dir).size(),
              std::string(kind) == "hrry" ? 2u : 1u);
  }
}

// The values of every tensor of `tensors` Ingest() handed over, as expected.
void ExpectValues(const std::vector<IngestTensor>& tensors,
                  const Recorder& rec) {
  ASSERT_EQ(rec.seen.size(), tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].expected.empty()) continue;
    EXPECT_TRUE(rec.seen[i].has_values) << i;
    EXPECT_EQ(rec.seen[i].values, tensors[i].expected) << i;
  }
}

// The values are handed over from memory: a scratch directory that cannot
// be created does not matter to a stream or a .hrry read by ranges, only to
// a .hrry read forward (its values wait for the index's names in files).
TEST(IngestTest, DequantizedValuesNeedNoScratchDirectory) {
  const std::string dir = FreshDir("ingest_values_memory");
  const std::vector<IngestTensor> tensors = MixedTensors(8);
  for (const char* kind : {"stream", "ranges", "forward"}) {
    SCOPED_TRACE(kind);
    const bool hrry = std::string(kind) != "stream";
    IngestRequest r = RequestFor(WriteInput(
        dir, kind, hrry ? HrryBytes(tensors) : StreamBytes(tensors)));
    r.data = TensorData::kDequantized;
    r.scratch_dir = dir + "/absent/below";
    r.index_first = std::string(kind) == "ranges";
    r.chunk_size = 4096;
    Recorder rec;
    absl::StatusOr<IngestReport> report = Ingest(r, &rec);
    ASSERT_TRUE(report.ok()) << report.status();
    if (std::string(kind) == "forward") {
      EXPECT_FALSE(report->status.ok());
      EXPECT_TRUE(rec.seen.empty());
      continue;
    }
    ASSERT_TRUE(report->status.ok()) << report->status;
    ExpectValues(tensors, rec);
  }
}

// A tensor whose values are over max_values_bytes is staged in a file of
// the scratch directory (removed with the run); without one it fails the
// run, naming the limit.
TEST(IngestTest, DequantizedValuesOverTheLimit) {
  const std::string dir = FreshDir("ingest_values_limit");
  const std::vector<IngestTensor> tensors = MixedTensors(9);
  for (const char* kind : {"stream", "ranges"}) {
    SCOPED_TRACE(kind);
    const bool hrry = std::string(kind) == "ranges";
    IngestRequest r = RequestFor(WriteInput(
        dir, kind, hrry ? HrryBytes(tensors) : StreamBytes(tensors)));
    r.data = TensorData::kDequantized;
    r.scratch_dir = dir;
    r.index_first = hrry;
    r.max_values_bytes = 16;
    Recorder rec;
    absl::StatusOr<IngestReport> report = Ingest(r, &rec);
    ASSERT_TRUE(report.ok()) << report.status();
    ASSERT_TRUE(report->status.ok()) << report->status;
    ExpectValues(tensors, rec);
    EXPECT_EQ(ingest::testing::ListDir(dir).size(), hrry ? 2u : 1u);

    r.scratch_dir = dir + "/absent";
    report = Ingest(r, &rec);
    ASSERT_TRUE(report.ok()) << report.status();
    EXPECT_EQ(report->status.code(), absl::StatusCode::kResourceExhausted)
        << report->status;
    EXPECT_THAT(std::string(report->status.message()),
                ::testing::HasSubstr("max_values_bytes"));
  }
}

TEST(IngestTest, ObserverGetsRawBuffers) {
  const std::string dir = FreshDir("ingest_raw");
  const std::vector<IngestTensor> tensors = MixedTensors(3);
  IngestRequest r = RequestFor(WriteInput(dir, "s", StreamBytes(tensors)));
  r.data = TensorData::kRaw;
  r.dequantize = false;
  r.chunk_size = 100;
  Recorder rec;
  absl::StatusOr<IngestReport> report = Ingest(r, &rec);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_TRUE(report->status.ok()) << report->status;
  ASSERT_EQ(rec.seen.size(), tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    uint64_t total = 0;
    for (size_t n : rec.seen[i].buffer_sizes) total += n;
    EXPECT_EQ(total, report->tensors[i].bytes) << i;
    EXPECT_FALSE(rec.seen[i].buffer_sizes.empty()) << i;
  }
  // Over the bound: the run fails, and says why.
  r.max_raw_tensor_bytes = 8;
  report = Ingest(r, &rec);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->status.code(), absl::StatusCode::kResourceExhausted);
}

TEST(IngestTest, IndexFirstNamesRawTensorsOfAHrryAsTheyEnd) {
  const std::string dir = FreshDir("ingest_index_first");
  const std::vector<IngestTensor> tensors = MixedTensors(5);
  for (const char* kind : {"hrry", "stream"}) {
    SCOPED_TRACE(kind);
    const bool hrry = std::string(kind) == "hrry";
    IngestRequest r = RequestFor(WriteInput(
        dir, kind, hrry ? HrryBytes(tensors) : StreamBytes(tensors)));
    r.data = TensorData::kRaw;
    r.dequantize = false;
    for (bool index_first : {false, true}) {
      r.index_first = index_first;
      Recorder rec;
      absl::StatusOr<IngestReport> report = Ingest(r, &rec);
      ASSERT_TRUE(report.ok()) << report.status();
      ASSERT_TRUE(report->status.ok()) << report->status;
      ASSERT_EQ(rec.seen.size(), tensors.size());
      for (size_t i = 0; i < tensors.size(); ++i) {
        // Read forward, a .hrry names its tensors only after the last one.
        EXPECT_EQ(rec.seen[i].name, hrry && index_first ? tensors[i].name : "")
            << i;
        EXPECT_EQ(rec.seen[i].descriptor_buffers,
                  rec.seen[i].buffer_sizes.size())
            << i;
      }
    }
  }
}

// An embedder's own byte source, handing out a few bytes per Read.
class PiecesReader final : public container::PullReader {
 public:
  explicit PiecesReader(std::vector<uint8_t> bytes)
      : bytes_(std::move(bytes)) {}
  absl::StatusOr<size_t> Read(absl::Span<uint8_t> into) override {
    const size_t n = std::min<size_t>({into.size(), 7, bytes_.size() - at_});
    std::memcpy(into.data(), bytes_.data() + at_, n);
    at_ += n;
    return n;
  }
  void Interrupt() override {}

 private:
  std::vector<uint8_t> bytes_;
  size_t at_ = 0;
};

TEST(IngestTest, ReaderSourceIsReadForward) {
  const std::vector<IngestTensor> tensors = MixedTensors(6);
  PiecesReader reader(StreamBytes(tensors));
  IngestRequest r;
  r.source = IngestSource::Reader(&reader, "pieces");
  r.data = TensorData::kDequantized;
  r.scratch_dir = FreshDir("ingest_reader");
  Recorder rec;
  absl::StatusOr<IngestReport> report = Ingest(r, &rec);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_TRUE(report->status.ok()) << report->status;
  EXPECT_EQ(report->source, "pieces");
  EXPECT_EQ(report->bytes, StreamBytes(tensors).size());
  ASSERT_EQ(rec.seen.size(), tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (!tensors[i].expected.empty()) {
      EXPECT_EQ(rec.seen[i].values, tensors[i].expected) << i;
    }
  }
  // Read once, forward: it cannot be resumed, and it needs a reader.
  r.resume_file = r.scratch_dir + "/state";
  EXPECT_EQ(CheckRequest(r).code(), absl::StatusCode::kInvalidArgument);
  r.resume_file.clear();
  r.source.reader = nullptr;
  EXPECT_EQ(CheckRequest(r).code(), absl::StatusCode::kInvalidArgument);
}

TEST(IngestTest, CancellerStopsARunWaitingForBytes) {
  // A pipe that never sends: without the canceller the run would wait for
  // ever (no idle timeout for a descriptor).
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  IngestCanceller canceller;
  IngestRequest r;
  r.source = IngestSource::Fd(fds[0]);
  r.canceller = &canceller;
  absl::StatusOr<IngestReport> report;
  std::thread run([&] { report = Ingest(r, nullptr); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  canceller.Cancel();
  run.join();
  ::close(fds[0]);
  ::close(fds[1]);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(RuleIdOf(report->status), "STREAM-IO") << report->status;
  EXPECT_TRUE(canceller.cancelled());
  // Sticky: a run started after Cancel() stops at once.
  const std::string dir = FreshDir("ingest_cancelled");
  r = RequestFor(WriteInput(dir, "s", StreamBytes(MixedTensors(7))));
  r.canceller = &canceller;
  report = Ingest(r, nullptr);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(RuleIdOf(report->status), "STREAM-IO") << report->status;
}

TEST(IngestTest, SelectionReadsOnlyTheNamedTensors) {
  const std::string dir = FreshDir("ingest_select");
  const std::vector<IngestTensor> tensors = MixedTensors(4);
  IngestRequest r = RequestFor(WriteInput(dir, "m.hrry", HrryBytes(tensors)));
  r.tensors = {tensors[2].name, tensors[0].name};
  r.data = TensorData::kDequantized;
  r.scratch_dir = dir;
  Recorder rec;
  absl::StatusOr<IngestReport> report = Ingest(r, &rec);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_TRUE(report->status.ok()) << report->status;
  ASSERT_EQ(report->tensors.size(), 2u);
  ASSERT_EQ(rec.seen.size(), 2u);
  for (const Recorder::Seen& s : rec.seen) {
    const IngestTensor& t = s.name == tensors[0].name ? tensors[0] : tensors[2];
    EXPECT_EQ(s.values, t.expected) << s.name;
  }
  r.tensors = {"no such tensor"};
  report = Ingest(r, &rec);
  EXPECT_FALSE(report.ok());
}

TEST(IngestTest, RejectionCarriesRuleIdAndOffset) {
  const std::string dir = FreshDir("ingest_reject");
  const std::vector<IngestTensor> tensors = MixedTensors(5);
  std::vector<uint8_t> bytes = StreamBytes(tensors);
  bytes.resize(bytes.size() - 3);  // the last buffer ends early
  IngestRequest r = RequestFor(WriteInput(dir, "cut", bytes));
  Recorder rec;
  absl::StatusOr<IngestReport> report = Ingest(r, &rec);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->rejected()) << report->status;
  ASSERT_TRUE(report->rule_id().has_value());
  EXPECT_NE(*report->rule_id(), "STREAM-IO");
  EXPECT_EQ(report->offset(), bytes.size());
  EXPECT_EQ(rec.seen.size(), tensors.size() - 1);
  ASSERT_EQ(report->tensors.size(), tensors.size());
  EXPECT_FALSE(report->tensors.back().complete);
}

TEST(IngestTest, CancelStopsTheRun) {
  const std::string dir = FreshDir("ingest_cancel");
  const std::vector<IngestTensor> tensors = MixedTensors(6, 4);
  IngestRequest r = RequestFor(WriteInput(dir, "s", StreamBytes(tensors)));
  r.chunk_size = 64;
  Recorder rec;
  rec.cancel_after = 1;
  absl::StatusOr<IngestReport> report = Ingest(r, &rec);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(RuleIdOf(report->status), "STREAM-IO") << report->status;
  EXPECT_LT(rec.seen.size(), tensors.size());
  EXPECT_FALSE(report->rejected());
}

TEST(IngestTest, ResumeCheckpointContinuesWhereTheRunStopped) {
  const std::string dir = FreshDir("ingest_resume");
  const std::vector<IngestTensor> tensors = MixedTensors(7, 4);
  IngestRequest r = RequestFor(WriteInput(dir, "m.hrry", HrryBytes(tensors)));
  r.resume_file = dir + "/state";
  r.out_dir = dir + "/out";
  r.chunk_size = 64;
  Recorder first;
  first.cancel_after = 0;
  first.cancel_after_checkpoint = true;
  absl::StatusOr<IngestReport> report = Ingest(r, &first);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(RuleIdOf(report->status), "STREAM-IO") << report->status;
  ASSERT_GE(first.checkpoints, 1);
  EXPECT_FALSE(report->resume_state_removed);
  EXPECT_EQ(::access(r.resume_file.c_str(), F_OK), 0);
  const uint64_t done = first.checkpoint_tensors.back();
  ASSERT_LT(done, tensors.size());

  Recorder second;
  report = Ingest(r, &second);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_TRUE(report->status.ok()) << report->status;
  EXPECT_EQ(report->tensors.size(), tensors.size());
  EXPECT_EQ(report->bytes, HrryBytes(tensors).size());
  // Checkpoints come after each resumable tensor, counting the earlier run's.
  ASSERT_FALSE(second.checkpoint_tensors.empty());
  EXPECT_GT(second.checkpoint_tensors.front(), done);
  EXPECT_TRUE(report->resume_state_removed);
  EXPECT_NE(::access(r.resume_file.c_str(), F_OK), 0);
}

// A `hurray serve` NetServer over the network test file, on its own thread.
class Served {
 public:
  Served()
      : bytes_(net::testing::NetTestFile()),
        file_(net::testing::OpenTestFile(bytes_)) {
    net::NetServerConfig c;
    c.port = 0;
    c.read_buffer_bytes = 4096;
    server_ = std::make_unique<net::NetServer>(file_.get(), c);
    EXPECT_TRUE(server_->Listen().ok());
    thread_ = std::thread([this] { server_->Run(); });
  }
  ~Served() {
    server_->Stop();
    thread_.join();
  }
  uint16_t port() const { return server_->port(); }

 private:
  std::vector<uint8_t> bytes_;
  std::unique_ptr<container::HrryFile> file_;
  std::unique_ptr<net::NetServer> server_;
  std::thread thread_;
};

// Network resume saves its state from the checkpoint callback after each
// completed key (NetClientOptions::on_keys_completed), not from polling.
TEST(IngestTest, NetworkResumeCheckpointsEachKey) {
  Served served;
  const std::string dir = FreshDir("ingest_net_resume");
  IngestRequest r = RequestFor(
      absl::StrCat("tcp://127.0.0.1:", served.port(), "/dense,quant,empty"));
  r.parse = vectors::AgreedOptions();
  r.dequantize = false;  // the test file's data is framing only
  r.resume_file = dir + "/state";
  r.chunk_size = 64;
  Recorder first;
  first.cancel_after = 0;
  first.cancel_after_checkpoint = true;
  absl::StatusOr<IngestReport> report = Ingest(r, &first);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(RuleIdOf(report->status), "STREAM-IO") << report->status;
  ASSERT_GE(first.checkpoints, 1);
  EXPECT_EQ(::access(r.resume_file.c_str(), F_OK), 0);

  Recorder second;
  report = Ingest(r, &second);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_TRUE(report->status.ok()) << report->status;
  ASSERT_EQ(report->tensors.size(), 3u);
  EXPECT_EQ(report->tensors[0].name, "dense");
  EXPECT_EQ(report->tensors[2].name, "empty");
  // The keys the first run completed are not handed over again.
  EXPECT_LT(second.seen.size(), 3u);
  ASSERT_FALSE(second.checkpoint_tensors.empty());
  EXPECT_EQ(second.checkpoint_tensors.back(), 3u);
  EXPECT_TRUE(report->resume_state_removed);
}

TEST(IngestTest, RequestChecks) {
  IngestRequest r = RequestFor("-");
  r.resume_file = "state";
  EXPECT_EQ(CheckRequest(r).code(), absl::StatusCode::kInvalidArgument);
  r = RequestFor("model.hrry");
  r.insecure = true;
  EXPECT_EQ(CheckRequest(r).code(), absl::StatusCode::kInvalidArgument);
  r = RequestFor("tcp://h:1/a");
  r.tensors = {"b"};
  EXPECT_EQ(CheckRequest(r).code(), absl::StatusCode::kInvalidArgument);
  r = RequestFor("model.hrry");
  r.dequantize = false;
  r.data = TensorData::kDequantized;
  EXPECT_EQ(CheckRequest(r).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace hurray::stream::ingest
