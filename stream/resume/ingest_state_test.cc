// The resume state file: what SaveState writes, ParseState reads back, and
// everything else it refuses (the state file is hostile input, issue 13);
// the binding of a state to its source file. Resume equivalence (a run
// interrupted and resumed gives what an uninterrupted one gives) is tested
// with the sinks and the loader, in stream/ingest/resume_test.cc.
#include "stream/resume/ingest_state.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/types/span.h"
#include "gtest/gtest.h"
#include "stream/container/checkpoint.h"
#include "stream/container/crc32c.h"
#include "stream/container/testing/temp_dir.h"
#include "stream/resume/resume_source.h"
#include "stream/resume/tensor_record.h"

namespace hurray::stream::resume {
namespace {

using container::testing::FreshDir;

// The bytes of a file; empty when it cannot be read.
std::vector<uint8_t> ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

void WriteAll(const std::string& path, absl::Span<const uint8_t> bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

TEST(IngestState, RoundTrip) {
  IngestState st;
  st.source = "some file";
  st.out_dir = "out dir";
  st.checkpoint.format = container::ContainerFormat::kHrry;
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
  TensorRecord r;
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
  const std::string path = FreshDir("state") + "/s";
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
  std::vector<uint8_t> bytes = ReadAll(path);
  WriteAll(path, absl::MakeConstSpan(bytes).first(bytes.size() - 4));
  EXPECT_EQ(LoadState(path).status().code(),
            absl::StatusCode::kInvalidArgument);
  bytes[30] = 'Z';
  WriteAll(path, bytes);
  EXPECT_EQ(LoadState(path).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// Issue 16: the "part" and "more" lines of a kept sparse tensor round-trip;
// every forged name or order of them is refused; a version 2 state (no such
// lines) is still read.
TEST(IngestState, KeptSparseLinesAreCheckedStrictly) {
  IngestState st;
  st.source = "in";
  st.checkpoint.format = container::ContainerFormat::kStream;
  st.checkpoint.offset = 100;
  st.checkpoint.tensors = 2;
  TensorRecord r;
  r.name = "w";
  r.complete = true;
  r.output = "w.values.npy";
  r.part = ".values";
  r.output_crc32c = 5;
  r.more = {{".indices", "w.indices.npy", "", 6},
            {".indptr", "w.indptr.npy", "", 7}};
  st.records.push_back(r);
  TensorRecord p;  // pending, waiting for the index to name it
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
  v2.records[0] = TensorRecord();
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

// Issue 13: the state file is hostile input. Each edit of a valid state
// below is one our SaveState never writes, and is refused.
TEST(IngestState, RefusesWhatSaveStateWouldNotWrite) {
  IngestState st;
  st.source = "in";
  st.checkpoint.format = container::ContainerFormat::kStream;
  st.checkpoint.offset = 100;
  st.checkpoint.tensors = 1;
  TensorRecord r;
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
  st.checkpoint.format = container::ContainerFormat::kStream;
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
  st.checkpoint.format = container::ContainerFormat::kStream;
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
  st.checkpoint.format = container::ContainerFormat::kStream;
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

TEST(IngestState, StateFileSymlinksAreNeverFollowed) {
  const std::string dir = FreshDir("state_links");
  WriteAll(dir + "/victim", {'v'});
  ASSERT_EQ(::symlink((dir + "/victim").c_str(), (dir + "/state").c_str()), 0);
  // Reading: refused, not followed.
  EXPECT_NE(LoadState(dir + "/state").status().code(), absl::StatusCode::kOk);
  // Writing, at the state and at its old temporary name.
  ASSERT_EQ(::symlink((dir + "/victim").c_str(), (dir + "/state.tmp").c_str()),
            0);
  IngestState st;
  st.records.clear();
  ASSERT_TRUE(SaveState(dir + "/state", st).ok());
  EXPECT_EQ(ReadAll(dir + "/victim"), std::vector<uint8_t>{'v'});
  ASSERT_TRUE(LoadState(dir + "/state").ok());
}

// Issue 13: a source replaced (another file), rewritten (size, mtime) or
// changed in place behind a restored mtime is refused; the same file is
// accepted.
TEST(ResumeSource, ReplacedSourceIsRefused) {
  const std::string dir = FreshDir("resume_source");
  const std::string path = dir + "/input";
  std::vector<uint8_t> bytes(5000);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i);
  WriteAll(path, bytes);
  const SourceIdentity id = *IdentifyFile(path);
  const uint32_t crc =
      container::Crc32c(absl::MakeConstSpan(bytes).first(3000));
  EXPECT_TRUE(CheckResumeSource(path, id, 3000, crc).ok());
  EXPECT_FALSE(CheckResumeSource(path, id, 3000, crc ^ 1).ok());
  EXPECT_FALSE(CheckResumeSource(path, id, 6000, crc).ok());

  // Same bytes before the checkpoint, another file: the inode differs.
  std::vector<uint8_t> other = bytes;
  other[4000] ^= 1;
  WriteAll(dir + "/other", other);
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

}  // namespace
}  // namespace hurray::stream::resume
