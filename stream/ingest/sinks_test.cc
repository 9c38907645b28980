// DequantSink and ValidateSink through the loader: outputs equal the scalar
// reference (dequant::DequantizeAll), names, spooling, failures.
#include "stream/ingest/sinks.h"

#include <unistd.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "parser/element_type.h"
#include "parser/rules.h"
#include "stream/container/safe_file_name.h"
#include "stream/container/stream_writer.h"
#include "stream/ingest/consumers.h"
#include "stream/ingest/loader.h"
#include "stream/ingest/testing/loader_test_util.h"

namespace hurray::stream::ingest {
namespace {

using container::ContainerFormat;
using container::SafeFileName;
using ingest::testing::IngestTensor;
using resume::TensorRecord;

struct Out {
  absl::Status status;
  std::vector<TensorRecord> records;
};

Out Dequant(absl::Span<const uint8_t> bytes, const DequantSinkOptions& o,
            size_t chunk = 4096) {
  DequantSink sink(o);
  std::unique_ptr<container::ByteConsumer> c =
      MakeConsumer(ContainerFormat::kUnknown, container::FileOptions(), &sink,
                   nullptr, nullptr);
  LoaderOptions lo;
  lo.chunk_size = chunk;
  Loader loader(lo);
  Out out;
  out.status = loader.Run(LoadSource::Memory(bytes), c.get()).status;
  out.records = sink.records();
  return out;
}

// Every tensor with an expected output has exactly that file; nothing else
// is left in the directory.
void ExpectOutputs(const std::vector<IngestTensor>& tensors, bool hrry,
                   const std::string& dir, const Out& out) {
  ASSERT_TRUE(out.status.ok()) << out.status;
  ASSERT_EQ(out.records.size(), tensors.size());
  std::vector<std::string> want;
  for (size_t i = 0; i < tensors.size(); ++i) {
    SCOPED_TRACE(tensors[i].name);
    const TensorRecord& r = out.records[i];
    EXPECT_TRUE(r.complete);
    if (tensors[i].expected.empty()) {
      EXPECT_TRUE(absl::StartsWith(r.verdict, "no output")) << r.verdict;
      EXPECT_EQ(r.output, "");
      continue;
    }
    const std::string name = hrry ? SafeFileName(tensors[i].name, i) + ".f32"
                                  : absl::StrCat("tensor_", i, ".f32");
    EXPECT_EQ(r.output, name);
    want.push_back(name);
    EXPECT_TRUE(ingest::testing::ReadAll(dir + "/" + name) ==
                tensors[i].expected)
        << "output differs from the reference";
  }
  std::sort(want.begin(), want.end());
  EXPECT_EQ(ingest::testing::ListDir(dir), want);
}

class DequantFormats : public ::testing::TestWithParam<bool> {};

TEST_P(DequantFormats, OutputsEqualTheReference) {
  const bool hrry = GetParam();
  const std::vector<IngestTensor> tensors =
      ingest::testing::MixedTensors(11, 3);
  const std::vector<uint8_t> bytes =
      hrry ? ingest::testing::HrryBytes(tensors)
           : ingest::testing::StreamBytes(tensors);
  for (size_t chunk : {size_t{1}, size_t{13}, size_t{4096}, size_t{1} << 20}) {
    for (uint64_t spool : {uint64_t{0}, uint64_t{4} << 20}) {
      SCOPED_TRACE(::testing::Message()
                   << "chunk " << chunk << " spool " << spool);
      DequantSinkOptions o;
      o.out_dir = ingest::testing::FreshDir("dequant_out");
      o.spool_memory_bytes = spool;  // 0: every spool goes to a file
      ExpectOutputs(tensors, hrry, o.out_dir, Dequant(bytes, o, chunk));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(StreamAndHrry, DequantFormats, ::testing::Bool());

// The in-memory spool keeps its buffer from one tensor to the next: a
// smaller tensor after a larger one, one spooled to a file in between, and
// memory again after it all give the reference's floats.
TEST(DequantSink, SpoolBufferKeptAcrossTensors) {
  std::vector<IngestTensor> tensors;
  for (const auto& [seed, bytes] : std::vector<std::pair<uint32_t, uint64_t>>{
           {1, 256 << 10}, {2, 8 << 10}, {3, 512 << 10}, {4, 8 << 10}}) {
    for (IngestTensor& t : ingest::testing::QuantizedTensors(seed, 2, bytes)) {
      tensors.push_back(std::move(t));
    }
  }
  for (size_t chunk : {size_t{4096}, size_t{1} << 20}) {
    SCOPED_TRACE(::testing::Message() << "chunk " << chunk);
    DequantSinkOptions o;
    o.out_dir = ingest::testing::FreshDir("spool_kept");
    o.spool_memory_bytes = 300 << 10;  // the 512 KiB tensors go to files
    ExpectOutputs(tensors, /*hrry=*/false, o.out_dir,
                  Dequant(ingest::testing::StreamBytes(tensors), o, chunk));
  }
}

// Other dense layouts are spooled and read back in row-major order
// (GatherRowMajor), and give the same floats as the reference.
TEST_P(DequantFormats, OtherDenseLayoutsEqualTheReference) {
  const bool hrry = GetParam();
  const std::vector<IngestTensor> tensors = ingest::testing::LayoutTensors(5);
  const std::vector<uint8_t> bytes =
      hrry ? ingest::testing::HrryBytes(tensors)
           : ingest::testing::StreamBytes(tensors);
  for (size_t chunk : {size_t{1}, size_t{13}, size_t{1} << 20}) {
    SCOPED_TRACE(::testing::Message() << "chunk " << chunk);
    DequantSinkOptions o;
    o.out_dir = ingest::testing::FreshDir("layout_out");
    ExpectOutputs(tensors, hrry, o.out_dir, Dequant(bytes, o, chunk));
  }
}

// Other layouts of any size: the spool goes to a file, read back in
// row-major order.
TEST(DequantSink, OtherLayoutsSpooledToFiles) {
  const std::vector<IngestTensor> tensors = ingest::testing::LayoutTensors(6);
  DequantSinkOptions o;
  o.out_dir = ingest::testing::FreshDir("layout_spool");
  o.spool_memory_bytes = 0;  // every data buffer goes to a file
  ExpectOutputs(tensors, false, o.out_dir,
                Dequant(ingest::testing::StreamBytes(tensors), o));
}

TEST(DequantSink, ParameterLimit) {
  const std::vector<IngestTensor> tensors = ingest::testing::MixedTensors(2);
  DequantSinkOptions o;
  o.out_dir = ingest::testing::FreshDir("dequant_limit");
  o.max_parameter_bytes = 1;
  const Out out = Dequant(ingest::testing::StreamBytes(tensors), o);
  EXPECT_EQ(out.status.code(), absl::StatusCode::kResourceExhausted);
  ASSERT_GE(out.records.size(), 2u);
  EXPECT_TRUE(out.records[0].complete);   // per-tensor: no parameter buffer
  EXPECT_FALSE(out.records[1].complete);  // per-channel
  EXPECT_EQ(ingest::testing::ListDir(o.out_dir),
            std::vector<std::string>{"tensor_0.f32"});
}

TEST(DequantSink, DataLevelRejectionLeavesNoOutput) {
  std::vector<IngestTensor> tensors = ingest::testing::MixedTensors(4);
  // A NaN scale of the per-channel tensor: a data-level rule.
  dequant::testing::SetScaleF32(&tensors[1].tensor, 2, NAN);
  for (bool hrry : {false, true}) {
    DequantSinkOptions o;
    o.out_dir =
        ingest::testing::FreshDir(hrry ? "reject_hrry" : "reject_stream");
    const std::vector<uint8_t> bytes =
        hrry ? ingest::testing::HrryBytes(tensors)
             : ingest::testing::StreamBytes(tensors);
    const Out out = Dequant(bytes, o);
    ASSERT_TRUE(RuleIdOf(out.status).has_value()) << out.status;
    EXPECT_TRUE(absl::StartsWith(*RuleIdOf(out.status), "QNT-PCA"))
        << out.status;
    ASSERT_EQ(out.records.size(), 2u);
    EXPECT_FALSE(out.records[1].complete);
    EXPECT_TRUE(absl::StartsWith(out.records[1].verdict, "rejected"));
    // A stream's tensor 0 passed and is there; a .hrry that did not pass
    // leaves nothing (its index never named tensor 0).
    EXPECT_EQ(ingest::testing::ListDir(o.out_dir),
              hrry ? std::vector<std::string>{}
                   : std::vector<std::string>{"tensor_0.f32"});
    EXPECT_EQ(out.records[0].complete, true);
    EXPECT_EQ(out.records[0].output, hrry ? "" : "tensor_0.f32");
  }
}

// A data-level failure of the sink and a later rejection by the reader in
// the same chunk: the sink's (earlier) verdict, whatever the chunking (found
// by //fuzz:ingest_fuzz, corpus/ingest_fuzz/regression_sink_before_reader.bin).
TEST(DequantSink, FailureBeforeALaterRejectionWinsInAnyChunking) {
  std::vector<IngestTensor> tensors = ingest::testing::MixedTensors(4);
  dequant::testing::SetScaleF32(&tensors[1].tensor, 2, NAN);
  std::vector<uint8_t> bytes = ingest::testing::StreamBytes(tensors);
  bytes.insert(bytes.end(), {'J', 'U', 'N', 'K'});  // DESC-HDR-02 at the end
  for (size_t chunk : {bytes.size(), size_t{7}}) {
    DequantSinkOptions o;
    o.out_dir = ingest::testing::FreshDir(absl::StrCat("sink_first_", chunk));
    const Out out = Dequant(bytes, o, chunk);
    ASSERT_TRUE(RuleIdOf(out.status).has_value()) << out.status;
    EXPECT_TRUE(absl::StartsWith(*RuleIdOf(out.status), "QNT-PCA"))
        << chunk << ": " << out.status;
    EXPECT_EQ(ingest::testing::ListDir(o.out_dir),
              std::vector<std::string>{"tensor_0.f32"});
  }
}

// Issue 13: symlinks planted at the names the sink used to write through
// (OUT/tensor_<i>.f32.partial, the spool OUT/.tensor_<i>.f32.spool) are
// never followed: the victims keep their bytes, the outputs are right.
TEST_P(DequantFormats, PlantedSymlinksAreNotWrittenThrough) {
  const bool hrry = GetParam();
  const std::vector<IngestTensor> tensors =
      ingest::testing::MixedTensors(12, 2);
  const std::string victims = ingest::testing::FreshDir("victims");
  DequantSinkOptions o;
  o.out_dir = ingest::testing::FreshDir("planted");
  o.spool_memory_bytes = 0;  // every spool goes to a file
  std::vector<std::string> planted;
  for (size_t i = 0; i < tensors.size(); ++i) {
    for (const std::string& name :
         {absl::StrCat("tensor_", i, ".f32.partial"),
          absl::StrCat(".tensor_", i, ".f32.spool")}) {
      const std::string victim = absl::StrCat(victims, "/", name);
      ingest::testing::WriteAll(victim, {'v', 'i', 'c'});
      ASSERT_EQ(::symlink(victim.c_str(), (o.out_dir + "/" + name).c_str()), 0);
      planted.push_back(name);
    }
  }
  const std::vector<uint8_t> bytes =
      hrry ? ingest::testing::HrryBytes(tensors)
           : ingest::testing::StreamBytes(tensors);
  const Out out = Dequant(bytes, o, 777);
  ASSERT_TRUE(out.status.ok()) << out.status;
  for (const std::string& name : planted) {
    EXPECT_EQ(ingest::testing::ReadAll(victims + "/" + name),
              (std::vector<uint8_t>{'v', 'i', 'c'}))
        << name << " was written through";
  }
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].expected.empty()) continue;
    EXPECT_TRUE(
        ingest::testing::ReadAll(o.out_dir + "/" + out.records[i].output) ==
        tensors[i].expected)
        << tensors[i].name;
  }
}

// Issue 13: a user's OUT/tensor_0.f32 survives a .hrry ingest (whose
// tensors all have index names), and no temporary file is left.
TEST(DequantSink, PreExistingFileSurvivesAHrryIngest) {
  const std::vector<IngestTensor> tensors = ingest::testing::MixedTensors(13);
  DequantSinkOptions o;
  o.out_dir = ingest::testing::FreshDir("preexisting");
  const std::vector<uint8_t> mine = {'m', 'i', 'n', 'e'};
  ingest::testing::WriteAll(o.out_dir + "/tensor_0.f32", mine);
  const Out out = Dequant(ingest::testing::HrryBytes(tensors), o);
  ASSERT_TRUE(out.status.ok()) << out.status;
  EXPECT_EQ(ingest::testing::ReadAll(o.out_dir + "/tensor_0.f32"), mine);
  std::vector<std::string> want = {"tensor_0.f32"};
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].expected.empty()) continue;
    want.push_back(SafeFileName(tensors[i].name, i) + ".f32");
    EXPECT_EQ(out.records[i].output, want.back());
  }
  std::sort(want.begin(), want.end());
  EXPECT_EQ(ingest::testing::ListDir(o.out_dir), want);
}

// Issue 13: a .hrry rejected at its end (a damaged index, a damaged
// trailer) leaves no output and no temporary file; the records still say
// which tensors were complete and valid before the rejection.
TEST(DequantSink, RejectedHrryLeavesNoOutputs) {
  const std::vector<IngestTensor> tensors = ingest::testing::MixedTensors(14);
  const std::vector<uint8_t> good = ingest::testing::HrryBytes(tensors);
  // The last byte before the 40-byte trailer (the index, CRC-checked), and
  // the trailer's last byte (its magic).
  for (size_t at : {good.size() - 41, good.size() - 1}) {
    SCOPED_TRACE(::testing::Message() << "damaged byte " << at);
    std::vector<uint8_t> bytes = good;
    bytes[at] ^= 0x20;
    DequantSinkOptions o;
    o.out_dir = ingest::testing::FreshDir("rejected_hrry");
    ingest::testing::WriteAll(o.out_dir + "/keep.f32", {1, 2, 3, 4});
    for (uint64_t spool : {uint64_t{0}, uint64_t{4} << 20}) {
      o.spool_memory_bytes = spool;
      const Out out = Dequant(bytes, o, 1000);
      ASSERT_TRUE(RuleIdOf(out.status).has_value()) << out.status;
      EXPECT_EQ(ingest::testing::ListDir(o.out_dir),
                std::vector<std::string>{"keep.f32"});
      ASSERT_EQ(out.records.size(), tensors.size());
      for (size_t i = 0; i < tensors.size(); ++i) {
        EXPECT_TRUE(out.records[i].complete) << i;
        EXPECT_EQ(out.records[i].output, "") << i;
        if (!tensors[i].expected.empty()) {
          EXPECT_TRUE(absl::StrContains(out.records[i].verdict, "not written"))
              << out.records[i].verdict;
        }
      }
    }
  }
}

TEST(DequantSink, WithoutFilesStillChecksTheData) {
  std::vector<IngestTensor> tensors = ingest::testing::MixedTensors(9);
  DequantSinkOptions o;
  o.out_dir = ingest::testing::FreshDir("dequant_nofiles");
  o.write_files = false;
  Out out = Dequant(ingest::testing::HrryBytes(tensors), o);
  ASSERT_TRUE(out.status.ok()) << out.status;
  EXPECT_TRUE(absl::StartsWith(out.records[1].verdict, "dequantized"));
  EXPECT_EQ(out.records[1].output, "");
  EXPECT_TRUE(ingest::testing::ListDir(o.out_dir).empty());
  dequant::testing::SetScaleF32(&tensors[1].tensor, 0, NAN);
  out = Dequant(ingest::testing::HrryBytes(tensors), o);
  EXPECT_TRUE(RuleIdOf(out.status).has_value()) << out.status;
}

// A bare stream of one plain row-major tensor whose data is `data`.
std::vector<uint8_t> OnePlainTensor(uint8_t type, uint64_t count,
                                    std::vector<uint8_t> data) {
  TensorDescriptor d;
  d.type_tag = type;
  d.layout_tag = layout_tag::kRowMajor;
  d.rank = 1;
  d.shape[0] = count;
  d.buffer_count = 1;
  d.buffers[0].byte_size = data.size();
  std::vector<uint8_t> out;
  container::StreamWriter w;
  const absl::Span<const uint8_t> buffers[] = {data};
  const absl::Status s = w.Write(d, buffers, [&](absl::Span<const uint8_t> b) {
    out.insert(out.end(), b.begin(), b.end());
    return absl::OkStatus();
  });
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

absl::Status ValidateAll(absl::Span<const uint8_t> bytes, Mode mode) {
  ValidateSink sink(mode);
  std::unique_ptr<container::ByteConsumer> c =
      MakeConsumer(ContainerFormat::kUnknown, container::FileOptions(), &sink,
                   nullptr, nullptr);
  Loader loader;
  return loader.Run(LoadSource::Memory(bytes), c.get()).status;
}

// Issue 13: the element rules are enforced where the data passes, by the
// validate-only and the dequantizing sinks alike (parser/element_checks.h).
TEST(Sinks, ElementRulesOfPlainTensors) {
  struct Case {
    uint8_t type;
    uint64_t count;
    std::vector<uint8_t> good, bad;
    const char* rule;
    bool strict_only;
  };
  const Case cases[] = {
      // bool [3]: one byte, bits 3..7 are padding (TYPE-PACK-01).
      {type_tag::kBool, 3, {0x05}, {0x0D}, "TYPE-PACK-01", true},
      // float8_e8m0 [2]: 0xFF (NaN) is not an element value (TYPE-PACK-05).
      {type_tag::kFloat8E8M0,
       2,
       {0x7F, 0x80},
       {0x7F, 0xFF},
       "TYPE-PACK-05",
       false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.rule);
    const std::vector<uint8_t> good = OnePlainTensor(c.type, c.count, c.good);
    const std::vector<uint8_t> bad = OnePlainTensor(c.type, c.count, c.bad);
    EXPECT_TRUE(ValidateAll(good, Mode::kStrict).ok());
    const absl::Status strict = ValidateAll(bad, Mode::kStrict);
    EXPECT_EQ(RuleIdOf(strict), c.rule) << strict;
    EXPECT_EQ(ValidateAll(bad, Mode::kPermissive).ok(), c.strict_only);
    DequantSinkOptions o;
    o.out_dir = ingest::testing::FreshDir(absl::StrCat("elements_", c.type));
    const Out out = Dequant(bad, o);
    EXPECT_EQ(RuleIdOf(out.status), c.rule) << out.status;
    EXPECT_TRUE(ingest::testing::ListDir(o.out_dir).empty());
  }
}

TEST(ValidateSink, RecordsEveryTensor) {
  const std::vector<IngestTensor> tensors = ingest::testing::MixedTensors(6);
  ValidateSink sink;
  std::unique_ptr<container::ByteConsumer> c =
      MakeConsumer(ContainerFormat::kHrry, container::FileOptions(), &sink,
                   nullptr, nullptr);
  const std::vector<uint8_t> bytes = ingest::testing::HrryBytes(tensors);
  Loader loader;
  ASSERT_TRUE(loader.Run(LoadSource::Memory(bytes), c.get()).status.ok());
  ASSERT_EQ(sink.records().size(), tensors.size());
  EXPECT_EQ(sink.records()[1].name, "layers.0.q_proj");
  EXPECT_EQ(sink.records()[1].shape, "[4, 33]");
  EXPECT_EQ(sink.records()[1].type, "int8");
  EXPECT_EQ(sink.records()[1].scheme, "per_channel_affine");
  EXPECT_EQ(sink.records()[2].scheme, "none");
  EXPECT_EQ(sink.records()[1].verdict, "valid");
}

// An empty span may carry no data pointer (absl::Span's default): neither
// SniffFormat nor the consumers may pass it to memcmp/memcpy (UBSan, found by
// //fuzz:ingest_fuzz; corpus/ingest_fuzz/regression_empty_span.bin).
TEST(Consumers, EmptySpansWithoutData) {
  const absl::Span<const uint8_t> none;
  EXPECT_EQ(SniffFormat(none), ContainerFormat::kUnknown);
  const std::vector<IngestTensor> tensors = ingest::testing::MixedTensors(6);
  const std::vector<uint8_t> bytes = ingest::testing::StreamBytes(tensors);
  for (ContainerFormat f : {ContainerFormat::kUnknown, ContainerFormat::kStream,
                            ContainerFormat::kHrry}) {
    ValidateSink sink;
    std::unique_ptr<container::ByteConsumer> c =
        MakeConsumer(f, container::FileOptions(), &sink, nullptr, nullptr);
    EXPECT_TRUE(c->Feed(none).ok());
    EXPECT_EQ(c->position(), 0u);
    if (f == ContainerFormat::kHrry) continue;
    EXPECT_TRUE(c->Feed(bytes).ok());
    EXPECT_TRUE(c->Feed(none).ok());
    EXPECT_TRUE(c->Finish().ok());
    EXPECT_EQ(sink.records().size(), tensors.size());
  }
}

}  // namespace
}  // namespace hurray::stream::ingest
