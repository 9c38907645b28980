// The re-blocking pipelined (ConvertOptions::rewrite_thread,
// chunk_pipeline.h) against the serial loop over tensors of many chunks:
// the same output bytes and error reports, the same refusal of a bad block
// in a middle chunk with nothing after it written, a failing sink's status
// returned with the reads stopped, and cancellation mid-tensor.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "stream/convert/byte_source.h"
#include "stream/convert/convert.h"
#include "stream/convert/convert_file.h"
#include "stream/convert/gguf.h"
#include "stream/convert/testing/source_builders.h"
#include "stream/convert/testing/temp_files.h"

namespace hurray::stream::convert {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kRow = 2048, kRows = 64;  // 512 K-quant blocks

size_t BlockBytes(uint32_t type) {
  return type == ggml_type::kQ4_K   ? 144
         : type == ggml_type::kQ6_K ? 210
                                    : 34;  // Q8_0
}
uint64_t BlockCount(uint32_t type) {
  return kRow * kRows / (type == ggml_type::kQ8_0 ? 32 : 256);
}

// Random blocks every conversion takes: finite nonzero float16 scales,
// Q6_K sub-block scales in [1, 127], Q4_K sub-block scales in [32, 63] with
// minimums below them (zero points within the compact form's uint4).
std::vector<uint8_t> Blocks(uint32_t type, uint32_t seed) {
  std::mt19937 rng(seed);
  const size_t bs = BlockBytes(type);
  std::vector<uint8_t> raw(BlockCount(type) * bs);
  for (uint8_t& b : raw) b = static_cast<uint8_t>(rng());
  for (size_t at = 0; at < raw.size(); at += bs) {
    uint8_t* x = &raw[at];
    auto half = [&](uint8_t* p) {  // 0x2C00 (1/16) with a random mantissa
      p[0] = static_cast<uint8_t>(rng());
      p[1] = static_cast<uint8_t>(0x2C | (rng() & 3));
    };
    if (type == ggml_type::kQ8_0) {
      half(x);
    } else if (type == ggml_type::kQ6_K) {
      for (int j = 0; j < 16; ++j) x[192 + j] = 1 + rng() % 127;
      half(x + 208);
    } else {  // Q4_K: d, dmin, scales[12] (ggml's get_scale_min_k4), qs
      half(x);
      half(x + 2);
      for (int j = 0; j < 4; ++j) {
        x[4 + j] = static_cast<uint8_t>(0xE0 | (rng() & 0x1F));  // sc >= 32
        x[8 + j] = static_cast<uint8_t>(rng() & 0x1F);           // m < 32
      }
    }
  }
  return raw;
}

std::vector<uint8_t> Gguf(uint32_t type, const std::vector<uint8_t>& raw) {
  testing::GgufBuilder g;
  g.Tensor("w", {kRow, kRows}, type, raw);
  return g.Build();
}

// Counts the source's reads (from either thread).
class CountingSource : public ByteSource {
 public:
  explicit CountingSource(const std::vector<uint8_t>& bytes) : inner_(bytes) {}
  uint64_t size() const override { return inner_.size(); }
  uint64_t reads() const { return reads_; }

 private:
  absl::Status DoRead(uint64_t offset, absl::Span<uint8_t> out) const override {
    ++reads_;
    return inner_.ReadAt(offset, out, "bytes");
  }
  MemorySource inner_;
  mutable std::atomic<uint64_t> reads_{0};
};

struct Outcome {
  absl::StatusOr<ConvertReport> report;
  std::vector<uint8_t> out;  // the bytes the sink took
  uint64_t writes = 0;       // sink calls, the failing one included
  uint64_t reads = 0;
};

// Converts with 4 KiB chunks (19 to 121 chunks a pass); the sink fails at
// its call `fail_at` (0-based).
Outcome Converted(const std::vector<uint8_t>& gguf, bool threaded,
                  bool compact = false, uint64_t spool = uint64_t{32} << 20,
                  uint64_t fail_at = ~uint64_t{0}) {
  CountingSource src(gguf);
  ConvertOptions o;
  o.chunk_bytes = 4096;
  o.scale_spool_bytes = spool;
  o.kquant_compact = compact;
  o.rewrite_thread = threaded;
  Outcome r;
  r.report = Convert(src, o, [&](absl::Span<const uint8_t> b) {
    if (r.writes++ == fail_at) return absl::DataLossError("the disk is full");
    r.out.insert(r.out.end(), b.begin(), b.end());
    return absl::OkStatus();
  });
  r.reads = src.reads();
  return r;
}

TEST(Pipeline, SameBytesAndReportsAsTheSerialLoop) {
  struct Case {
    uint32_t type;
    bool compact;
    uint64_t spool;
  };
  for (const Case& c : {Case{ggml_type::kQ4_K, false, uint64_t{32} << 20},
                        Case{ggml_type::kQ4_K, true, uint64_t{32} << 20},
                        Case{ggml_type::kQ4_K, false, 0},
                        Case{ggml_type::kQ6_K, false, uint64_t{32} << 20},
                        Case{ggml_type::kQ6_K, false, 0},
                        Case{ggml_type::kQ8_0, false, uint64_t{32} << 20},
                        Case{ggml_type::kQ8_0, false, 0}}) {
    SCOPED_TRACE(::testing::Message() << "type " << c.type << " compact "
                                      << c.compact << " spool " << c.spool);
    const std::vector<uint8_t> gguf = Gguf(c.type, Blocks(c.type, c.type));
    const Outcome serial = Converted(gguf, false, c.compact, c.spool);
    const Outcome piped = Converted(gguf, true, c.compact, c.spool);
    ASSERT_TRUE(serial.report.ok()) << serial.report.status();
    ASSERT_TRUE(piped.report.ok()) << piped.report.status();
    EXPECT_TRUE(piped.out == serial.out);
    EXPECT_EQ(piped.writes, serial.writes);
    ASSERT_EQ(piped.report->tensors.size(), 1u);
    const ConvertedTensor &a = serial.report->tensors[0],
                          &b = piped.report->tensors[0];
    // The error sums added in the same order: equal, not merely close.
    EXPECT_EQ(b.max_abs_error, a.max_abs_error);
    EXPECT_EQ(b.rms_error, a.rms_error);
    EXPECT_EQ(b.exact, a.exact);
    EXPECT_EQ(b.note, a.note);
    if (c.type == ggml_type::kQ4_K) {
      EXPECT_GT(b.rms_error, 0);
    }
  }
}

// Block 300's float16 d is NaN: in a middle chunk of every pass.
TEST(Pipeline, RefusalInAMiddleChunkNamedAndNothingAfterItWritten) {
  for (uint32_t type : {ggml_type::kQ4_K, ggml_type::kQ6_K, ggml_type::kQ8_0}) {
    SCOPED_TRACE(type);
    std::vector<uint8_t> raw = Blocks(type, 3);
    const std::vector<uint8_t> good = Gguf(type, raw);
    uint8_t* d =
        &raw[300 * BlockBytes(type) + (type == ggml_type::kQ6_K ? 208 : 0)];
    d[0] = 0x00, d[1] = 0x7E;
    const std::vector<uint8_t> bad = Gguf(type, raw);
    const Outcome serial = Converted(bad, false);
    const Outcome piped = Converted(bad, true);
    ASSERT_FALSE(piped.report.ok());
    EXPECT_EQ(piped.report.status(), serial.report.status());
    EXPECT_THAT(std::string(piped.report.status().message()),
                HasSubstr("tensor 'w': "));
    EXPECT_THAT(std::string(piped.report.status().message()),
                HasSubstr(" block 300: "));
    // What was written is the serial loop's: the good file's bytes up to
    // the chunk before the bad block's.
    EXPECT_TRUE(piped.out == serial.out);
    EXPECT_EQ(piped.writes, serial.writes);
    const Outcome whole = Converted(good, true);
    ASSERT_TRUE(whole.report.ok());
    ASSERT_LT(piped.out.size(), whole.out.size());
    EXPECT_TRUE(
        std::equal(piped.out.begin(), piped.out.end(), whole.out.begin()));
  }
}

TEST(Pipeline, AFailingSinkStopsThePassAndItsStatusIsReturned) {
  const std::vector<uint8_t> gguf =
      Gguf(ggml_type::kQ4_K, Blocks(ggml_type::kQ4_K, 9));
  const Outcome all = Converted(gguf, true);
  ASSERT_TRUE(all.report.ok());
  // Calls in the codes pass (19 chunks after the header's few).
  for (uint64_t k : {3, 9, 15}) {
    SCOPED_TRACE(k);
    const Outcome serial = Converted(gguf, false, false, uint64_t{32} << 20, k);
    const Outcome piped = Converted(gguf, true, false, uint64_t{32} << 20, k);
    EXPECT_EQ(piped.report.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(std::string(piped.report.status().message()),
                HasSubstr("the disk is full"));
    EXPECT_EQ(piped.report.status(), serial.report.status());
    EXPECT_EQ(piped.writes, k + 1);  // none after the failure
    EXPECT_TRUE(piped.out == serial.out);
    // The worker reads at most the ring's depth of chunks ahead.
    EXPECT_LE(piped.reads, serial.reads + 3);
    EXPECT_LT(piped.reads, all.reads);
  }
}

TEST(Pipeline, CancelledMidTensor) {
  const std::string dir = testing::NewTempDir("pipeline_test");
  const std::string in = dir + "/q4k.gguf", out = dir + "/q4k.hrry";
  testing::WriteFile(in, Gguf(ggml_type::kQ4_K, Blocks(ggml_type::kQ4_K, 5)));
  for (bool threaded : {false, true}) {
    ConvertOptions o;
    o.chunk_bytes = 4096;
    o.rewrite_thread = threaded;
    int polls = 0;
    absl::StatusOr<ConvertReport> r =
        ConvertFile(in, out, o, nullptr, [&] { return ++polls > 10; });
    EXPECT_EQ(r.status().code(), absl::StatusCode::kCancelled);
    EXPECT_EQ(polls, 11);  // no write after the one cancelled
    EXPECT_NE(access(out.c_str(), F_OK), 0);  // nothing published
  }
}

}  // namespace
}  // namespace hurray::stream::convert
