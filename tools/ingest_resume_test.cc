// `hurray ingest --resume` against a replaced source and a crafted state
// (issue 13 item 2), end to end through RunIngest. The interrupted run is a
// real one: a file-size limit (RLIMIT_FSIZE) makes the output of a large
// tensor fail to write after smaller ones were checkpointed, an I/O error
// (exit 2) that keeps the state file.
#include <signal.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gtest/gtest.h"
#include "stream/ingest/testing/loader_test_util.h"
#include "tools/command_util.h"
#include "tools/ingest_command.h"

namespace hurray::tools {
namespace {

namespace t = stream::ingest::testing;

struct Outcome {
  int code;
  std::string out, err;
};

Outcome Ingest(std::vector<std::string> args) {
  std::ostringstream out, err;
  const int code = RunIngest(args, out, err);
  return {code, out.str(), err.str()};
}

// Small tensors (with `sparse`, a COO and a CSR tensor among them), then
// one whose float32 output passes `limit` bytes.
std::vector<t::IngestTensor> Tensors(uint64_t* limit, bool sparse = false) {
  std::vector<t::IngestTensor> tensors = t::MixedTensors(31);
  if (sparse) {
    std::vector<t::IngestTensor> s = t::SparseTensors();
    tensors.insert(tensors.begin() + 1, std::move(s[0]));
    tensors.insert(tensors.begin() + 3, std::move(s[1]));
  }
  std::vector<t::IngestTensor> large = t::MixedTensors(32, 128);
  size_t small_max = 0;
  for (const t::IngestTensor& x : tensors) {
    small_max = std::max(small_max, x.expected.size());
  }
  const auto big = std::max_element(
      large.begin(), large.end(), [](const auto& a, const auto& b) {
        return a.expected.size() < b.expected.size();
      });
  big->name = "zz.large";
  *limit = std::max<uint64_t>(small_max + 1, 16 << 10);
  EXPECT_GT(big->expected.size(), *limit);
  tensors.push_back(std::move(*big));
  return tensors;
}

struct Interrupted {
  std::string input, out, state;
  Outcome first;
};

// Runs `hurray ingest INPUT --dequant OUT --resume STATE [extra...]` under
// the file size limit: it fails writing the large tensor's output.
Interrupted RunInterrupted(const std::string& name, bool hrry,
                           const std::vector<std::string>& extra = {}) {
  uint64_t limit = 0;
  const std::vector<t::IngestTensor> tensors = Tensors(&limit, !extra.empty());
  Interrupted it;
  const std::string base = t::FreshDir(name);
  it.input = base + (hrry ? "/in.hrry" : "/in.hrs");
  it.out = base + "/out";
  it.state = base + "/state";
  t::WriteAll(it.input, hrry ? t::HrryBytes(tensors) : t::StreamBytes(tensors));
  struct rlimit old_limit;
  EXPECT_EQ(::getrlimit(RLIMIT_FSIZE, &old_limit), 0);
  struct rlimit small = old_limit;
  small.rlim_cur = limit;
  // A write past the limit fails with EFBIG instead of killing the test.
  void (*old_handler)(int) = ::signal(SIGXFSZ, SIG_IGN);
  EXPECT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  std::vector<std::string> args = {it.input, "--dequant", it.out, "--resume",
                                   it.state};
  args.insert(args.end(), extra.begin(), extra.end());
  it.first = Ingest(args);
  ::setrlimit(RLIMIT_FSIZE, &old_limit);
  ::signal(SIGXFSZ, old_handler);
  EXPECT_EQ(it.first.code, kExitError) << it.first.err << it.first.out;
  std::ifstream probe(it.state);
  EXPECT_TRUE(probe.good()) << "the interrupted run left no state";
  return it;
}

std::vector<std::vector<uint8_t>> Contents(const std::string& dir) {
  std::vector<std::vector<uint8_t>> c;
  for (const std::string& f : t::ListDir(dir))
    c.push_back(t::ReadAll(dir + "/" + f));
  return c;
}

// Issue 13: the source replaced between the interrupted run and --resume
// (same size, a byte the first run consumed differs) is refused with exit 2
// and OUT does not change.
TEST(IngestResume, ReplacedSourceIsRefused) {
  for (bool hrry : {false, true}) {
    SCOPED_TRACE(hrry ? ".hrry" : "stream");
    Interrupted it =
        RunInterrupted(hrry ? "replaced_hrry" : "replaced_hrs", hrry);
    std::vector<uint8_t> bytes = t::ReadAll(it.input);
    bytes[hrry ? 200 : 100] ^= 0x01;  // inside the first tensor
    t::WriteAll(it.input + ".new", bytes);
    ASSERT_EQ(std::rename((it.input + ".new").c_str(), it.input.c_str()), 0);
    const std::vector<std::string> files = t::ListDir(it.out);
    const std::vector<std::vector<uint8_t>> contents = Contents(it.out);
    const std::vector<uint8_t> state = t::ReadAll(it.state);
    const Outcome second =
        Ingest({it.input, "--dequant", it.out, "--resume", it.state});
    EXPECT_EQ(second.code, kExitError) << second.out << second.err;
    EXPECT_NE(second.err.find("refusing to resume"), std::string::npos)
        << second.err;
    EXPECT_EQ(t::ListDir(it.out), files);
    EXPECT_TRUE(Contents(it.out) == contents) << "OUT changed";
    EXPECT_EQ(t::ReadAll(it.state), state);
  }
}

// Issue 13: a crafted record whose output is "../victim" is refused (exit
// 2): the victim stays where it is, OUT does not change.
TEST(IngestResume, CraftedOutsideRecordIsRefused) {
  Interrupted it = RunInterrupted("crafted", /*hrry=*/true);
  const std::string victim = it.out + "/../victim";
  t::WriteAll(victim, {'v', 'i', 'c'});
  const std::vector<uint8_t> raw = t::ReadAll(it.state);
  std::string text(raw.begin(), raw.end());
  // Record 0's output: its final name, or the temp that waits for it.
  const std::string hex_victim = absl::BytesToHexString("../victim");
  std::string crafted = absl::StrReplaceAll(
      text, {{absl::BytesToHexString("tensor_0.f32"), hex_victim}});
  if (crafted == text) {
    const std::string temp_prefix = absl::BytesToHexString(".hurray-");
    const size_t at = text.find(temp_prefix);
    ASSERT_NE(at, std::string::npos) << text;
    const size_t end = text.find(' ', at);
    crafted = text.substr(0, at) + hex_victim + text.substr(end);
  }
  t::WriteAll(it.state, std::vector<uint8_t>(crafted.begin(), crafted.end()));
  const std::vector<std::string> files = t::ListDir(it.out);
  const Outcome second =
      Ingest({it.input, "--dequant", it.out, "--resume", it.state});
  EXPECT_EQ(second.code, kExitError) << second.out << second.err;
  EXPECT_EQ(t::ReadAll(victim), (std::vector<uint8_t>{'v', 'i', 'c'}));
  EXPECT_EQ(t::ListDir(it.out), files);
}

// The same interrupted run, resumed untouched, finishes with the outputs of
// an uninterrupted one (and the checks above do not refuse it).
TEST(IngestResume, UntouchedResumeFinishes) {
  for (bool hrry : {false, true}) {
    SCOPED_TRACE(hrry ? ".hrry" : "stream");
    Interrupted it = RunInterrupted(hrry ? "ok_hrry" : "ok_hrs", hrry);
    const Outcome second =
        Ingest({it.input, "--dequant", it.out, "--resume", it.state});
    EXPECT_EQ(second.code, kExitOk) << second.out << second.err;
    const std::string ref = t::FreshDir(hrry ? "ref_hrry" : "ref_hrs");
    const Outcome whole = Ingest({it.input, "--dequant", ref});
    ASSERT_EQ(whole.code, kExitOk) << whole.err;
    EXPECT_EQ(t::ListDir(it.out), t::ListDir(ref));
    EXPECT_TRUE(Contents(it.out) == Contents(ref));
  }
}

// Issue 16: sparse tensors kept as their arrays (above --max-dense-bytes,
// or --sparse keep) in a resumable run: the interrupted run wrote them and
// its state names each array; resumed, the run ends with the files and
// bytes of a one-shot run.
TEST(IngestResume, KeptSparseArraysResume) {
  const std::vector<std::vector<std::string>> modes = {
      {"--max-dense-bytes", "23"},  // the dense int16 [3, 4] takes 24
      {"--sparse", "keep"}};
  for (const std::vector<std::string>& mode : modes) {
    for (bool hrry : {false, true}) {
      SCOPED_TRACE(absl::StrCat(hrry ? ".hrry " : "stream ", mode[0]));
      Interrupted it =
          RunInterrupted(hrry ? "kept_hrry" : "kept_hrs", hrry, mode);
      const std::vector<uint8_t> raw = t::ReadAll(it.state);
      const std::string state(raw.begin(), raw.end());
      // Record 3 (csr) has its values, indices and indptr arrays.
      EXPECT_NE(state.find(absl::StrCat(
                    "more ", absl::BytesToHexString(".indptr"), " ")),
                std::string::npos)
          << state;
      std::vector<std::string> args = {it.input, "--dequant", it.out,
                                       "--resume", it.state};
      args.insert(args.end(), mode.begin(), mode.end());
      const Outcome second = Ingest(args);
      EXPECT_EQ(second.code, kExitOk) << second.out << second.err;
      const std::string ref = t::FreshDir(hrry ? "kept_ref_hrry" : "kept_ref");
      std::vector<std::string> whole_args = {it.input, "--dequant", ref};
      whole_args.insert(whole_args.end(), mode.begin(), mode.end());
      const Outcome whole = Ingest(whole_args);
      ASSERT_EQ(whole.code, kExitOk) << whole.err;
      const std::string csr = hrry ? "csr" : "tensor_3";
      for (const std::string& f :
           {csr + ".values.npy", csr + ".indices.npy", csr + ".indptr.npy"}) {
        const std::vector<std::string> files = t::ListDir(ref);
        EXPECT_NE(std::find(files.begin(), files.end(), f), files.end()) << f;
      }
      EXPECT_EQ(t::ListDir(it.out), t::ListDir(ref));
      EXPECT_TRUE(Contents(it.out) == Contents(ref));
    }
  }
}

}  // namespace
}  // namespace hurray::tools
