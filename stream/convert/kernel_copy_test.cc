// Kernel copies of unchanged data spans (fd_copy.h, ConvertOptions::
// direct_output; issue 47 item 3): the output is byte for byte the one the
// sink alone writes, whether the kernel copies everything, gives up midway
// (an injected EXDEV / EINVAL) or cannot write to the output (a pipe); a
// source that shrinks while read is an error naming the tensor.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "stream/convert/byte_source.h"
#include "stream/convert/convert.h"
#include "stream/convert/fd_copy.h"
#include "stream/convert/shards.h"
#include "stream/convert/testing/source_builders.h"
#include "stream/convert/testing/temp_files.h"

namespace hurray::stream::convert {
namespace {

using ::testing::HasSubstr;
using testing::NewTempDir;
using testing::ReadFile;
using testing::WriteFile;

std::vector<uint8_t> Pattern(size_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = static_cast<uint8_t>((i * 2654435761u + seed) >> 13);
  return v;
}

// Three tensors of odd sizes (copies of several chunks, and a BOOL tensor,
// which is rewritten, between them).
std::vector<uint8_t> Model() {
  std::vector<uint8_t> bools(1000);
  for (size_t i = 0; i < bools.size(); ++i) bools[i] = (i * 7) % 3 == 0;
  return testing::BuildSafetensors({
      {"a", "F32", {300001}, Pattern(1200004, 1)},
      {"b", "BOOL", {1000}, bools},
      {"c", "U8", {777777}, Pattern(777777, 2)},
  });
}

// The reference: every byte through the sink (no kernel copies).
std::vector<uint8_t> ThroughSink(const ByteSource& src) {
  std::vector<uint8_t> out;
  ConvertOptions o;
  o.chunk_bytes = 64 << 10;
  absl::StatusOr<ConvertReport> r =
      Convert(src, o, [&out](absl::Span<const uint8_t> b) {
        out.insert(out.end(), b.begin(), b.end());
        return absl::OkStatus();
      });
  EXPECT_TRUE(r.ok()) << r.status();
  return out;
}

// Converts to a file through a buffering sink on `fd` with kernel copies.
absl::StatusOr<ConvertReport> ToFd(const ByteSource& src, int fd,
                                   CopyFileRangeFn copy = nullptr) {
  std::vector<uint8_t> buffer;
  auto flush = [&buffer, fd]() -> absl::Status {
    size_t done = 0;
    while (done < buffer.size()) {
      const ssize_t n = ::write(fd, buffer.data() + done, buffer.size() - done);
      if (n <= 0) return absl::DataLossError("write failed");
      done += static_cast<size_t>(n);
    }
    buffer.clear();
    return absl::OkStatus();
  };
  ConvertOptions o;
  o.chunk_bytes = 64 << 10;
  o.direct_output.fd = fd;
  o.direct_output.flush = flush;
  o.direct_output.copy = copy;
  absl::StatusOr<ConvertReport> r =
      Convert(src, o, [&](absl::Span<const uint8_t> b) -> absl::Status {
        buffer.insert(buffer.end(), b.begin(), b.end());
        return buffer.size() >= (256 << 10) ? flush() : absl::OkStatus();
      });
  if (!r.ok()) return r;
  absl::Status s = flush();
  if (!s.ok()) return s;
  return r;
}

// Converts `src` into the file `path` (created or truncated) with kernel
// copies.
absl::StatusOr<ConvertReport> ToFile(const ByteSource& src,
                                     const std::string& path,
                                     CopyFileRangeFn copy = nullptr) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return absl::InternalError(absl::StrCat("cannot create ", path));
  absl::StatusOr<ConvertReport> r = ToFd(src, fd, copy);
  ::close(fd);
  return r;
}

// `bytes` written as DIR/NAME in a fresh directory and opened as a source.
struct InputFile {
  std::string dir;
  std::unique_ptr<FileSource> src;
};
InputFile WriteAndOpen(const std::vector<uint8_t>& bytes,
                       const std::string& name = "m.safetensors") {
  InputFile f{NewTempDir("kcopy"), nullptr};
  WriteFile(f.dir + "/" + name, bytes);
  absl::StatusOr<std::unique_ptr<FileSource>> src =
      FileSource::Open(f.dir + "/" + name);
  EXPECT_TRUE(src.ok()) << src.status();
  if (src.ok()) f.src = *std::move(src);
  return f;
}

TEST(KernelCopy, OutputIsByteIdenticalToTheSinkPath) {
  const InputFile in = WriteAndOpen(Model());
  ASSERT_NE(in.src, nullptr);
  const std::string& dir = in.dir;
  const ByteSource* src = in.src.get();
  const std::vector<uint8_t> want = ThroughSink(*src);
  absl::StatusOr<ConvertReport> r = ToFile(*src, dir + "/out");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->kernel_copied_bytes, 1200004u + 777777u);
  EXPECT_EQ(r->bytes_written, want.size());
  EXPECT_TRUE(ReadFile(dir + "/out") == want);
}

// An injected copy_file_range that copies `budget` bytes in small pieces,
// then fails with `err` (as across file systems, EXDEV, or on a file
// system without it, EINVAL / EOPNOTSUPP / ENOSYS).
int64_t g_budget = 0;
int g_err = 0;
int g_calls_after_failure = 0;
ssize_t FailingCopy(int in, off64_t* off_in, int out, off64_t* off_out,
                    size_t len, unsigned flags) {
  if (g_budget <= 0) {
    ++g_calls_after_failure;
    errno = g_err;
    return -1;
  }
  len = std::min<size_t>({len, static_cast<size_t>(g_budget), 100000});
  const ssize_t n = ::copy_file_range(in, off_in, out, off_out, len, flags);
  if (n > 0) g_budget -= n;
  return n;
}

TEST(KernelCopy, FallsBackMidwayWhenTheKernelCannotCopy) {
  const InputFile in = WriteAndOpen(Model());
  ASSERT_NE(in.src, nullptr);
  const std::string& dir = in.dir;
  const ByteSource* src = in.src.get();
  const std::vector<uint8_t> want = ThroughSink(*src);
  for (int err : {EXDEV, EINVAL, ENOSYS, EOPNOTSUPP}) {
    for (int64_t budget : {0, 300000}) {
      SCOPED_TRACE(absl::StrCat("errno ", err, ", budget ", budget));
      g_budget = budget;
      g_err = err;
      g_calls_after_failure = 0;
      const std::string out = absl::StrCat(dir, "/out", err, "_", budget);
      absl::StatusOr<ConvertReport> r = ToFile(*src, out, FailingCopy);
      ASSERT_TRUE(r.ok()) << r.status();
      EXPECT_EQ(r->kernel_copied_bytes, static_cast<uint64_t>(budget));
      // Given up for good: tensor c is not tried again.
      EXPECT_EQ(g_calls_after_failure, 1);
      EXPECT_TRUE(ReadFile(out) == want);
    }
  }
}

TEST(KernelCopy, AnotherErrorIsAnErrorNamingTheTensor) {
  const InputFile in = WriteAndOpen(Model());
  ASSERT_NE(in.src, nullptr);
  const std::string& dir = in.dir;
  const ByteSource* src = in.src.get();
  g_budget = 0;
  g_err = EIO;
  absl::StatusOr<ConvertReport> r = ToFile(*src, dir + "/out", FailingCopy);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::IsDataLoss(r.status())) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("tensor 'a'"));
}

TEST(KernelCopy, APipeOutputTakesTheSinkPath) {
  const InputFile in = WriteAndOpen(Model());
  ASSERT_NE(in.src, nullptr);
  const ByteSource* src = in.src.get();
  const std::vector<uint8_t> want = ThroughSink(*src);
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  EXPECT_FALSE(IsRegularFile(p[1]));
  std::vector<uint8_t> got;
  std::thread reader([&got, fd = p[0]] {
    uint8_t buf[65536];
    for (ssize_t n; (n = ::read(fd, buf, sizeof(buf))) > 0;)
      got.insert(got.end(), buf, buf + n);
  });
  absl::StatusOr<ConvertReport> r = ToFd(*src, p[1]);
  ::close(p[1]);
  reader.join();
  ::close(p[0]);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->kernel_copied_bytes, 0u);
  EXPECT_TRUE(got == want);
}

TEST(KernelCopy, ASourceThatShrinksIsAnErrorNamingTheTensor) {
  const std::string dir = NewTempDir("kcopy");
  const std::vector<uint8_t> model = Model();
  for (bool kernel : {true, false}) {
    SCOPED_TRACE(kernel ? "kernel copies" : "sink");
    WriteFile(dir + "/m.safetensors", model);
    absl::StatusOr<std::unique_ptr<FileSource>> src =
        FileSource::Open(dir + "/m.safetensors");
    ASSERT_TRUE(src.ok()) << src.status();
    // Cut inside tensor c (the last 777777 bytes) after the size was taken.
    ASSERT_EQ(::truncate((dir + "/m.safetensors").c_str(),
                         static_cast<off_t>(model.size() - 1000)),
              0);
    absl::StatusOr<ConvertReport> r;
    if (kernel) {
      r = ToFile(**src, dir + "/out");
    } else {
      r = Convert(**src, ConvertOptions(),
                  [](absl::Span<const uint8_t>) { return absl::OkStatus(); });
    }
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(absl::IsDataLoss(r.status())) << r.status();
    EXPECT_THAT(r.status().message(), HasSubstr("tensor 'c'"));
    EXPECT_THAT(r.status().message(), HasSubstr("shrank"));
  }
}

TEST(KernelCopy, ShardsAreCopiedFromTheirFiles) {
  const std::string dir = NewTempDir("kcopy");
  WriteFile(
      dir + "/model-00001-of-00002.safetensors",
      testing::BuildSafetensors({{"a.0", "U8", {70001}, Pattern(70001, 3)},
                                 {"a.1", "F32", {9}, Pattern(36, 4)}}));
  WriteFile(
      dir + "/model-00002-of-00002.safetensors",
      testing::BuildSafetensors({{"b.0", "U8", {500000}, Pattern(500000, 5)}}));
  const std::string index =
      R"({"weight_map": {"a.0": "model-00001-of-00002.safetensors", )"
      R"("a.1": "model-00001-of-00002.safetensors", )"
      R"("b.0": "model-00002-of-00002.safetensors"}})";
  WriteFile(dir + "/model.safetensors.index.json",
            std::vector<uint8_t>(index.begin(), index.end()));
  absl::StatusOr<ShardedModel> m =
      OpenShardedSafetensors(dir + "/model.safetensors.index.json");
  ASSERT_TRUE(m.ok()) << m.status();
  const std::vector<uint8_t> want = ThroughSink(*m->source);
  absl::StatusOr<ConvertReport> r = ToFile(*m->source, dir + "/out");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->kernel_copied_bytes, 70001u + 36u + 500000u);
  EXPECT_TRUE(ReadFile(dir + "/out") == want);
}

TEST(KernelCopy, GgufPlainTensorsAreCopiedAndQ8_0IsRewritten) {
  testing::GgufBuilder g;
  g.KvString("general.name", "m");
  g.Tensor("f", {1000, 3}, 0 /* F32 */, Pattern(12000, 6));
  std::vector<uint8_t> q8(34 * 64);  // 64 Q8_0 blocks, scale 1.0 (0x3C00)
  for (size_t b = 0; b < 64; ++b) {
    q8[34 * b + 1] = 0x3C;
    for (size_t j = 0; j < 32; ++j) q8[34 * b + 2 + j] = (b + j) & 0x7F;
  }
  g.Tensor("q", {64, 32}, 8 /* Q8_0 */, q8);
  g.Tensor("i", {4097}, 24 /* I8 */, Pattern(4097, 7));
  const InputFile in = WriteAndOpen(g.Build(), "m.gguf");
  ASSERT_NE(in.src, nullptr);
  const std::vector<uint8_t> want = ThroughSink(*in.src);
  absl::StatusOr<ConvertReport> r = ToFile(*in.src, in.dir + "/out");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->kernel_copied_bytes, 12000u + 4097u);
  EXPECT_TRUE(ReadFile(in.dir + "/out") == want);
}

TEST(KernelCopy, MemorySourcesTakeTheSinkPath) {
  const std::vector<uint8_t> model = Model();
  MemorySource src(model);
  const std::string dir = NewTempDir("kcopy");
  absl::StatusOr<ConvertReport> r = ToFile(src, dir + "/out");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->kernel_copied_bytes, 0u);
  EXPECT_TRUE(ReadFile(dir + "/out") == ThroughSink(src));
}

}  // namespace
}  // namespace hurray::stream::convert
