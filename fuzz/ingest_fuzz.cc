// Fuzz target: the ingest edges (stream/ingest/consumers.h,
// stream/ingest/sinks.h) with arbitrary bytes: the consumers of bare streams
// and .hrry files read forward, ValidateSink and DequantSink writing into a
// fresh temporary directory, arbitrary chunking and the checkpoint/resume path.
//
// Input format (bytes missing at the end read as 0):
//   byte 0   bit 0 permissive mode (else strict)
//            bits 1-2 consumer: 0/3 sniffing (kUnknown), 1 kStream, 2 kHrry
//            bit 3 resume path (below)
//            bit 4 spool in a file (spool_memory_bytes 0, else 4 KiB)
//            bit 5 DequantSink::rename_to_names off
//            bit 6 .npy outputs (else .f32); bit 7 .npy as float16
//   byte 1   low 4 bits: largest chunk is 2^n bytes; high 4 bits: which
//            checkpoint the interrupted run stops after
//   byte 2-3 seed of the chunk sizes
//   rest     the input (a bare stream or a .hrry file).
//
// Runs: validate in one shot and in chunks, dequantize in chunks and in one
// shot, each into a fresh directory, and with bit 3 a dequantizing run
// interrupted after a checkpoint (FailSource) then resumed from it by a new
// consumer and sink in another fresh directory. Properties:
//   * one-shot and chunked runs agree (verdict, rule id, records and, when
//     dequantizing, the files);
//   * SniffFormat: "HRRYFILE" is kHrry, a proper prefix of it (or nothing)
//     kUnknown, anything else kStream;
//   * validation and dequantization agree on the verdict and rule id unless
//     the dequantizer itself failed (data-level rules, its memory caps);
//   * once the sink is gone, the directory holds exactly the outputs its
//     records name, each with the recorded CRC-32C: nothing of a rejected
//     .hrry, no temp, no half-written tensor;
//   * the interrupted run's checkpoint lies in the input, with the CRC-32C
//     of the bytes before it;
//   * a resumed run preloads the interrupted run's records, reaches the
//     straight run's verdict and, when accepted, the same records and the
//     same output files byte for byte.
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "fuzz/fuzz_util.h"
#include "parser/options.h"
#include "parser/rules.h"
#include "stream/container/checkpoint.h"
#include "stream/container/crc32c.h"
#include "stream/container/safe_output_dir.h"
#include "stream/ingest/consumers.h"
#include "stream/ingest/sinks.h"
#include "stream/resume/tensor_record.h"

namespace hurray::fuzz {
namespace {

using stream::container::Checkpoint;
using stream::container::ContainerFormat;
using stream::resume::TensorRecord;

constexpr size_t kHeaderSize = 4;

struct Config {
  stream::container::FileOptions options;
  ContainerFormat format = ContainerFormat::kUnknown;
  bool resume = false;
  bool spool_to_file = false;
  bool rename_to_names = true;
  stream::ingest::OutputFormat output = stream::ingest::OutputFormat::kF32;
  stream::ingest::OutputDtype dtype = stream::ingest::OutputDtype::kAuto;
  uint32_t max_chunk = 1;
  uint32_t stop_after = 0;  // checkpoint index (from 0)
  uint32_t seed = 0;
};

Config ParseHeader(absl::Span<const uint8_t> h) {
  Config c;
  c.options.parse.mode = (h[0] & 1) != 0 ? Mode::kPermissive : Mode::kStrict;
  const int f = (h[0] >> 1) & 3;
  c.format = f == 1   ? ContainerFormat::kStream
             : f == 2 ? ContainerFormat::kHrry
                      : ContainerFormat::kUnknown;
  c.resume = (h[0] & 8) != 0;
  c.spool_to_file = (h[0] & 16) != 0;
  c.rename_to_names = (h[0] & 32) == 0;
  if ((h[0] & 192) != 0) c.output = stream::ingest::OutputFormat::kNpy;
  if ((h[0] & 128) != 0) c.dtype = stream::ingest::OutputDtype::kFloat16;
  c.max_chunk = uint32_t{1} << (h[1] & 15);
  c.stop_after = h[1] >> 4;
  c.seed = h[2] | (uint32_t{h[3]} << 8);
  // Bounded work per input.
  c.options.limits.max_buffer_bytes = uint64_t{1} << 20;
  c.options.limits.max_total_bytes = uint64_t{4} << 20;
  c.options.limits.max_members = 64;
  c.options.limits.max_box_words = 4096;
  c.options.limits.max_overlap_work = 4096;
  c.options.max_metadata_bytes = uint64_t{64} << 10;
  return c;
}

stream::ingest::DequantSinkOptions SinkOptions(const Config& c,
                                               const std::string& dir,
                                               bool keep_unnamed) {
  stream::ingest::DequantSinkOptions o;
  o.out_dir = dir;
  o.mode = c.options.parse.mode;
  o.spool_memory_bytes = c.spool_to_file ? 0 : 4096;
  o.max_parameter_bytes = uint64_t{64} << 10;
  o.rename_to_names = c.rename_to_names;
  o.keep_unnamed_outputs = keep_unnamed;
  o.format = c.output;
  o.dtype = c.dtype;
  o.max_dense_bytes = uint64_t{1} << 20;
  return o;
}

// Chunk lengths covering `n` bytes (empty chunks included).
std::vector<size_t> Chunks(size_t n, const Config& c) {
  std::vector<size_t> out;
  std::minstd_rand rng(c.seed + 1);
  while (n > 0) {
    size_t len = rng() % (c.max_chunk + 1);
    if (len > n) len = n;
    out.push_back(len);
    n -= len;
  }
  return out;
}

// Feeds `input` in the chunks of `c` (each a heap block of exactly its size),
// stopping early when `*stop` becomes true. The first failed Feed's status.
absl::Status FeedChunked(stream::container::ByteConsumer* consumer,
                         absl::Span<const uint8_t> input, const Config& c,
                         const bool* stop) {
  size_t at = 0;
  for (size_t len : Chunks(input.size(), c)) {
    std::unique_ptr<uint8_t[]> block(new uint8_t[len == 0 ? 1 : len]);
    if (len > 0) std::memcpy(block.get(), input.data() + at, len);
    at += len;
    absl::Status s = consumer->Feed(absl::MakeConstSpan(block.get(), len));
    if (!s.ok()) return s;
    if (stop != nullptr && *stop) break;
  }
  return absl::OkStatus();
}

struct Verdict {
  absl::Status status;
  absl::Status sink_status;
  std::vector<TensorRecord> records;
};

bool SameVerdict(const absl::Status& a, const absl::Status& b) {
  return a.ok() == b.ok() && a.code() == b.code() && RuleIdOf(a) == RuleIdOf(b);
}

Verdict Validate(absl::Span<const uint8_t> input, const Config& c,
                 bool chunked) {
  // The element rules (TYPE-PACK-*) run in the sink, in the input's mode.
  stream::ingest::ValidateSink sink(c.options.parse.mode);
  std::unique_ptr<stream::container::ByteConsumer> consumer =
      stream::ingest::MakeConsumer(c.format, c.options, &sink, nullptr,
                                   nullptr);
  Verdict v;
  if (chunked) {
    FeedChunked(consumer.get(), input, c, nullptr).IgnoreError();
    v.status = consumer->Finish();
  } else {
    v.status = consumer->Feed(input);
    if (v.status.ok()) v.status = consumer->Finish();
  }
  HURRAY_FUZZ_CHECK(v.status.ok() || RuleIdOf(v.status).has_value());
  // A validating sink fails only by a data-level rule, which stops the input.
  HURRAY_FUZZ_CHECK(sink.status().ok() ||
                    (RuleIdOf(sink.status()).has_value() && !v.status.ok()));
  v.records = sink.records();
  return v;
}

// Name -> bytes of every entry of `dir` (regular files, never followed).
std::map<std::string, std::string> ListDir(const std::string& dir) {
  std::map<std::string, std::string> out;
  DIR* d = ::opendir(dir.c_str());
  HURRAY_FUZZ_CHECK(d != nullptr);
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    const int fd =
        ::openat(::dirfd(d), name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    HURRAY_FUZZ_CHECK(fd >= 0);
    std::string bytes;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof buf)) > 0) bytes.append(buf, n);
    HURRAY_FUZZ_CHECK(n == 0);
    ::close(fd);
    out[name] = std::move(bytes);
  }
  ::closedir(d);
  return out;
}

// The directory holds exactly the outputs `records` name, with their CRCs
// (plus, when `pending_ok`, the temps of pending outputs).
void CheckDir(const std::map<std::string, std::string>& files,
              const std::vector<TensorRecord>& records, bool pending_ok) {
  size_t named = 0;
  for (const TensorRecord& r : records) {
    if (!r.output.empty()) {
      HURRAY_FUZZ_CHECK(
          stream::container::SafeOutputDir::IsPlainName(r.output));
      HURRAY_FUZZ_CHECK(
          !stream::container::SafeOutputDir::IsTempName(r.output));
      auto it = files.find(r.output);
      HURRAY_FUZZ_CHECK(it != files.end());
      HURRAY_FUZZ_CHECK(stream::container::Crc32c(absl::MakeConstSpan(
                            reinterpret_cast<const uint8_t*>(it->second.data()),
                            it->second.size())) == r.output_crc32c);
      HURRAY_FUZZ_CHECK(r.complete);
      ++named;
    }
    if (!r.pending_output.empty()) {
      HURRAY_FUZZ_CHECK(pending_ok);
      HURRAY_FUZZ_CHECK(files.count(r.pending_output) == 1);
      ++named;
    }
    // A sparse tensor kept as its arrays: the index arrays' files, each
    // with its CRC.
    for (const TensorRecord::MoreOutput& m : r.more) {
      HURRAY_FUZZ_CHECK(m.output.empty() != m.pending.empty());
      const std::string& name = m.output.empty() ? m.pending : m.output;
      if (!m.output.empty()) {
        HURRAY_FUZZ_CHECK(
            stream::container::SafeOutputDir::IsPlainName(m.output));
        HURRAY_FUZZ_CHECK(r.complete && !r.output.empty());
      } else {
        HURRAY_FUZZ_CHECK(pending_ok && !r.pending_output.empty());
      }
      auto it = files.find(name);
      HURRAY_FUZZ_CHECK(it != files.end());
      HURRAY_FUZZ_CHECK(stream::container::Crc32c(absl::MakeConstSpan(
                            reinterpret_cast<const uint8_t*>(it->second.data()),
                            it->second.size())) == m.crc32c);
      ++named;
    }
  }
  HURRAY_FUZZ_CHECK(files.size() == named);
}

Verdict Dequantize(absl::Span<const uint8_t> input, const Config& c,
                   const std::string& dir, bool chunked) {
  Verdict v;
  {
    stream::ingest::DequantSink sink(SinkOptions(c, dir, false));
    std::unique_ptr<stream::container::ByteConsumer> consumer =
        stream::ingest::MakeConsumer(c.format, c.options, &sink, nullptr,
                                     nullptr);
    if (chunked) {
      FeedChunked(consumer.get(), input, c, nullptr).IgnoreError();
      v.status = consumer->Finish();
    } else {
      v.status = consumer->Feed(input);
      if (v.status.ok()) v.status = consumer->Finish();
    }
    v.sink_status = sink.status();
    v.records = sink.records();
  }
  CheckDir(ListDir(dir), v.records, false);
  return v;
}

// Interrupted after checkpoint `c.stop_after` (or the last one), then
// resumed. Returns nothing when the input has no checkpoint.
std::optional<Verdict> InterruptAndResume(absl::Span<const uint8_t> input,
                                          const Config& c,
                                          const std::string& dir) {
  std::optional<Checkpoint> cp;
  std::vector<TensorRecord> done;
  bool ended = false;
  {
    stream::ingest::DequantSink sink(SinkOptions(c, dir, true));
    uint32_t seen = 0;
    bool stop = false;
    std::unique_ptr<stream::container::ByteConsumer> consumer =
        stream::ingest::MakeConsumer(
            c.format, c.options, &sink, nullptr, [&](const Checkpoint& k) {
              if (stop) return;
              cp = k;
              HURRAY_FUZZ_CHECK(k.tensors <= sink.records().size());
              done.assign(sink.records().begin(),
                          sink.records().begin() + k.tensors);
              if (seen++ == c.stop_after) stop = true;
            });
    ended = !FeedChunked(consumer.get(), input, c, &stop).ok();
    consumer->FailSource("interrupted").IgnoreError();
  }
  // A run that reached its verdict before the interruption is not resumed
  // (`hurray ingest` removes its state).
  if (!cp.has_value() || ended) return std::nullopt;
  HURRAY_FUZZ_CHECK(cp->offset <= input.size());
  HURRAY_FUZZ_CHECK(cp->tensors == done.size());
  HURRAY_FUZZ_CHECK(cp->crc32c ==
                    stream::container::Crc32c(input.first(cp->offset)));

  Verdict v;
  {
    stream::ingest::DequantSink sink(SinkOptions(c, dir, true));
    HURRAY_FUZZ_CHECK(sink.Preload(done).ok());
    std::unique_ptr<stream::container::ByteConsumer> consumer =
        stream::ingest::MakeConsumer(c.format, c.options, &sink, &*cp,
                                     [](const Checkpoint&) {});
    FeedChunked(consumer.get(), input.subspan(cp->offset), c, nullptr)
        .IgnoreError();
    v.status = consumer->Finish();
    v.sink_status = sink.status();
    v.records = sink.records();
  }
  return v;
}

bool SameRecords(const std::vector<TensorRecord>& a,
                 const std::vector<TensorRecord>& b, bool outputs) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].name != b[i].name || a[i].shape != b[i].shape ||
        a[i].type != b[i].type || a[i].scheme != b[i].scheme ||
        a[i].bytes != b[i].bytes || a[i].complete != b[i].complete) {
      return false;
    }
    if (outputs &&
        (a[i].verdict != b[i].verdict || a[i].output != b[i].output ||
         a[i].output_crc32c != b[i].output_crc32c)) {
      return false;
    }
  }
  return true;
}

// A fresh directory for one input, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    const char* tmp = ::getenv("TMPDIR");
    std::string tmpl = absl::StrCat(tmp != nullptr && *tmp ? tmp : "/tmp",
                                    "/ingest_fuzz.XXXXXX");
    HURRAY_FUZZ_CHECK(::mkdtemp(tmpl.data()) != nullptr);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string Sub(absl::string_view name) const {
    const std::string p = absl::StrCat(path_, "/", name);
    HURRAY_FUZZ_CHECK(::mkdir(p.c_str(), 0700) == 0);
    return p;
  }

 private:
  std::string path_;
};

void CheckSniff(absl::Span<const uint8_t> input) {
  static constexpr char kMagic[] = "HRRYFILE";
  const ContainerFormat f = stream::ingest::SniffFormat(input);
  const size_t n = input.size() < 8 ? input.size() : 8;
  const bool prefix = n == 0 || std::memcmp(input.data(), kMagic, n) == 0;
  if (n == 0) {
    HURRAY_FUZZ_CHECK(f == ContainerFormat::kUnknown);
  } else if (!prefix) {
    HURRAY_FUZZ_CHECK(f == ContainerFormat::kStream);
  } else {
    HURRAY_FUZZ_CHECK(
        f == (n == 8 ? ContainerFormat::kHrry : ContainerFormat::kUnknown));
  }
}

}  // namespace
}  // namespace hurray::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hurray;
  using namespace hurray::fuzz;
  uint8_t header[kHeaderSize] = {};
  std::memcpy(header, data, size < kHeaderSize ? size : kHeaderSize);
  const Config c = ParseHeader(header);
  const absl::Span<const uint8_t> input =
      size > kHeaderSize
          ? absl::MakeConstSpan(data + kHeaderSize, size - kHeaderSize)
          : absl::Span<const uint8_t>();
  CheckSniff(input);

  const Verdict whole = Validate(input, c, false);
  const Verdict chunked = Validate(input, c, true);
  HURRAY_FUZZ_CHECK(SameVerdict(whole.status, chunked.status));
  HURRAY_FUZZ_CHECK(SameRecords(whole.records, chunked.records, true));

  TempDir tmp;
  const std::string straight_dir = tmp.Sub("straight");
  const Verdict straight = Dequantize(input, c, straight_dir, true);
  // Dequantizing in one shot: the same verdict, records and files.
  const std::string one_shot_dir = tmp.Sub("one_shot");
  const Verdict one_shot = Dequantize(input, c, one_shot_dir, false);
  HURRAY_FUZZ_CHECK(SameVerdict(one_shot.status, straight.status));
  HURRAY_FUZZ_CHECK(SameRecords(one_shot.records, straight.records, true));
  HURRAY_FUZZ_CHECK(ListDir(one_shot_dir) == ListDir(straight_dir));
  HURRAY_FUZZ_CHECK(straight.status.ok() ||
                    RuleIdOf(straight.status).has_value() ||
                    !straight.sink_status.ok());
  if (straight.sink_status.ok()) {
    HURRAY_FUZZ_CHECK(SameVerdict(straight.status, whole.status));
    HURRAY_FUZZ_CHECK(SameRecords(straight.records, whole.records, false));
  } else {
    // The dequantizer refused a tensor the reader accepted.
    HURRAY_FUZZ_CHECK(SameVerdict(straight.status, straight.sink_status));
  }

  if (c.resume) {
    const std::string dir = tmp.Sub("resumed");
    std::optional<Verdict> resumed = InterruptAndResume(input, c, dir);
    if (resumed.has_value()) {
      HURRAY_FUZZ_CHECK(SameVerdict(resumed->status, straight.status));
      if (straight.status.ok()) {
        HURRAY_FUZZ_CHECK(
            SameRecords(resumed->records, straight.records, true));
        HURRAY_FUZZ_CHECK(ListDir(dir) == ListDir(straight_dir));
      } else if (RuleIdOf(resumed->status).has_value() &&
                 resumed->sink_status.ok()) {
        // Rejected by the reader: nothing of the run left as a temp.
        for (const auto& [name, bytes] : ListDir(dir)) {
          HURRAY_FUZZ_CHECK(
              !stream::container::SafeOutputDir::IsTempName(name));
        }
      }
    }
  }
  return 0;
}
