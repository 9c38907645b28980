// The loader over memory, files and pipes (and a loopback TCP peer), with
// the ingest consumers and sinks: chunk sizes, backpressure, cancellation,
// the idle timeout, truncation at structural boundaries.
#include "stream/ingest/loader.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/config.h"
#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "parser/rules.h"
#include "stream/container/hrry_file.h"
#include "stream/container/stream_reader.h"
#include "stream/ingest/consumers.h"
#include "stream/ingest/sinks.h"
#include "stream/ingest/testing/full_listener.h"
#include "stream/ingest/testing/loader_test_peer.h"
#include "stream/ingest/testing/loader_test_util.h"

namespace hurray::stream::ingest {
namespace {

using container::ContainerFormat;
using ingest::testing::HrryBytes;
using ingest::testing::IngestTensor;
using ingest::testing::MixedTensors;
using ingest::testing::StreamBytes;
using resume::TensorRecord;

struct Loaded {
  LoadResult result;
  size_t ring_slots = 0;
  size_t max_slots_in_flight = 0;
  std::vector<TensorRecord> records;
  uint64_t tensors = 0;
};

Loaded Load(const LoadSource& source, ContainerFormat format,
            const LoaderOptions& options = LoaderOptions()) {
  ValidateSink sink;
  std::unique_ptr<container::ByteConsumer> c =
      MakeConsumer(format, container::FileOptions(), &sink, nullptr, nullptr);
  Loader loader(options);
  Loaded r;
  r.result = loader.Run(source, c.get());
  r.ring_slots = LoaderTestPeer::RingSlots(loader);
  r.max_slots_in_flight = LoaderTestPeer::MaxSlotsInFlight(loader);
  r.records = sink.records();
  r.tensors = c->tensors_completed();
  return r;
}

// A pipe whose write end a thread feeds with `bytes`, then keeps open for
// `hold` before closing (a stalled peer when long).
struct Pipe {
  int read_fd = -1, write_fd = -1;
  std::thread writer;
  std::atomic<bool> release{false};

  Pipe(std::vector<uint8_t> bytes, bool stall_after) {
    int fds[2];
    if (::pipe(fds) != 0) std::abort();
    read_fd = fds[0];
    write_fd = fds[1];
    writer = std::thread([this, bytes = std::move(bytes), stall_after] {
      size_t at = 0;
      while (at < bytes.size()) {
        const ssize_t w = ::write(write_fd, bytes.data() + at,
                                  std::min<size_t>(bytes.size() - at, 3001));
        if (w <= 0) break;
        at += static_cast<size_t>(w);
      }
      while (stall_after && !release) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      ::close(write_fd);
    });
  }
  ~Pipe() {
    release = true;
    writer.join();
    ::close(read_fd);
  }
};

class LoaderFormats : public ::testing::TestWithParam<bool> {
 protected:
  std::vector<uint8_t> Bytes() const {
    return GetParam() ? HrryBytes(tensors_) : StreamBytes(tensors_);
  }
  ContainerFormat Format() const {
    return GetParam() ? ContainerFormat::kHrry : ContainerFormat::kStream;
  }
  std::vector<IngestTensor> tensors_ = MixedTensors(7);
};

TEST_P(LoaderFormats, EverySourceAndChunkSize) {
  const std::vector<uint8_t> bytes = Bytes();
  const std::string path = ingest::testing::FreshDir("loader_src") + "/input";
  ingest::testing::WriteAll(path, bytes);
  for (size_t chunk :
       {size_t{1}, size_t{7}, size_t{64}, size_t{4093}, size_t{1} << 20}) {
    LoaderOptions o;
    o.chunk_size = chunk;
    o.ring_slots = chunk == 1 ? 2 : 4;
    for (int kind = 0; kind < 3; ++kind) {
      SCOPED_TRACE(::testing::Message()
                   << "chunk " << chunk << " kind " << kind);
      std::unique_ptr<Pipe> pipe;
      LoadSource src;
      if (kind == 0) src = LoadSource::Memory(bytes);
      if (kind == 1) src = LoadSource::File(path);
      if (kind == 2) {
        pipe = std::make_unique<Pipe>(bytes, false);
        src = LoadSource::Fd(pipe->read_fd);
      }
      // The sniffing consumer too, on the pipe.
      const Loaded r =
          Load(src, kind == 2 ? ContainerFormat::kUnknown : Format(), o);
      EXPECT_TRUE(r.result.status.ok()) << r.result.status;
      EXPECT_EQ(r.result.bytes, bytes.size());
      EXPECT_EQ(r.tensors, tensors_.size());
      ASSERT_EQ(r.records.size(), tensors_.size());
      for (size_t i = 0; i < tensors_.size(); ++i) {
        EXPECT_TRUE(r.records[i].complete);
        EXPECT_EQ(r.records[i].verdict, "valid");
        if (GetParam()) {
          EXPECT_EQ(r.records[i].name, tensors_[i].name);
        }
      }
      // The pipe's ring may have grown; the others' may not.
      if (kind == 2) {
        EXPECT_GE(r.ring_slots, o.ring_slots);
        EXPECT_LE(r.ring_slots,
                  std::max(o.ring_slots, std::min(o.max_ring_bytes / chunk,
                                                  kMaxGrownRingSlots)));
      } else {
        EXPECT_EQ(r.ring_slots, o.ring_slots);
      }
      EXPECT_LE(r.max_slots_in_flight, r.ring_slots);
    }
  }
}

// A read that returns part of what a pipe holds is topped up from it
// without waiting: the slot carries the rest, every byte arrives once, in
// order. (The first read of each slot is capped at 100 bytes; the whole
// input is in the pipe before the loader starts.)
TEST_P(LoaderFormats, ShortReadsAreToppedUpFromThePipe) {
  const std::vector<uint8_t> bytes = Bytes();
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  ASSERT_GE(::fcntl(fds[1], F_SETPIPE_SZ, 1 << 20),
            static_cast<int>(bytes.size()));
  ASSERT_EQ(::write(fds[1], bytes.data(), bytes.size()),
            static_cast<ssize_t>(bytes.size()));
  ::close(fds[1]);  // everything is in the pipe; then its end
  LoaderOptions o;
  o.chunk_size = 4096;
  ValidateSink sink;
  std::unique_ptr<container::ByteConsumer> c =
      MakeConsumer(Format(), container::FileOptions(), &sink, nullptr, nullptr);
  Loader loader(o);
  LoaderTestPeer::SetFirstReadCap(loader, 100);
  const LoadResult r = loader.Run(LoadSource::Fd(fds[0]), c.get());
  ::close(fds[0]);
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(r.bytes, bytes.size());
  EXPECT_EQ(c->tensors_completed(), tensors_.size());
  ASSERT_EQ(sink.records().size(), tensors_.size());
  for (const TensorRecord& t : sink.records()) EXPECT_EQ(t.verdict, "valid");
  // Each slot: 100 bytes read, up to 3996 topped up.
  const uint64_t slots = (bytes.size() + o.chunk_size - 1) / o.chunk_size;
  EXPECT_GE(LoaderTestPeer::ToppedUpBytes(loader), bytes.size() - 100 * slots);
}

// A container::PullReader over bytes in memory: `piece` bytes a Read, then
// `error` (when set) instead of the end, or it blocks until Interrupt.
class FakeReader : public container::PullReader {
 public:
  FakeReader(std::vector<uint8_t> bytes, size_t piece)
      : bytes_(std::move(bytes)), piece_(piece) {}
  absl::StatusOr<size_t> Read(absl::Span<uint8_t> into) override {
    if (at_ == bytes_.size()) {
      if (block_at_end) {
        while (!interrupted_) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        return absl::UnavailableError("interrupted");
      }
      if (!error.ok()) return error;
      return size_t{0};
    }
    const size_t n = std::min({into.size(), piece_, bytes_.size() - at_});
    std::copy_n(bytes_.data() + at_, n, into.data());
    at_ += n;
    return n;
  }
  void Interrupt() override { interrupted_ = true; }

  absl::Status error;
  bool block_at_end = false;
  std::atomic<bool> interrupted_{false};

 private:
  std::vector<uint8_t> bytes_;
  size_t piece_;
  size_t at_ = 0;
};

// A sink slower than the reader: the reader waits for free slots, so the
// memory in flight stays at the ring, whatever the input size.
class SlowSink : public ValidateSink {
 public:
  absl::Status OnBufferPiece(uint32_t, uint64_t,
                             absl::Span<const uint8_t>) override {
    std::this_thread::sleep_for(std::chrono::microseconds(300));
    return absl::OkStatus();
  }
};

// Over memory, a file and a pull reader (the reader thread waits on the
// ring's condition variable) and over a pipe (the io thread stops reading,
// and a freed slot resumes it): no byte is lost or left behind on the way (a
// lost resume would stall the run forever). The streams' ring (the pipe's,
// the pull reader's) first grows to its limit and no further; memory's and
// the file's never grow.
TEST_P(LoaderFormats, BackpressureKeepsTheRing) {
  tensors_ = MixedTensors(3, /*scale=*/400);
  const std::vector<uint8_t> bytes = Bytes();
  LoaderOptions o;
  o.chunk_size = 4096;
  o.ring_slots = 3;
  o.idle_timeout_seconds = 60;
  ASSERT_GT(bytes.size(), 8 * o.chunk_size * 5);
  const std::string path =
      ingest::testing::FreshDir("loader_backpressure") + "/in";
  ingest::testing::WriteAll(path, bytes);
  enum Source { kMemory, kFile, kPipe, kPull };
  struct Case {
    Source source;
    size_t max_ring_slots;  // LoaderOptions::max_ring_bytes / chunk_size
    size_t slots;           // the ring's at the end
  };
  for (const Case& k : {Case{kMemory, 5, 3}, Case{kFile, 5, 3},
                        Case{kPipe, 5, 5}, Case{kPipe, 0, 3}, Case{kPipe, 2, 3},
                        Case{kPull, 5, 5}, Case{kPull, 0, 3}}) {
    o.max_ring_bytes = k.max_ring_slots * o.chunk_size;
    SCOPED_TRACE(::testing::Message()
                 << "source " << k.source << ", max_ring_slots "
                 << k.max_ring_slots);
    std::unique_ptr<Pipe> pipe;
    FakeReader pull(bytes, bytes.size());
    LoadSource src = LoadSource::Memory(bytes);
    if (k.source == kPipe) {
      pipe = std::make_unique<Pipe>(bytes, false);
      src = LoadSource::Fd(pipe->read_fd);
    }
    if (k.source == kFile) src = LoadSource::File(path);
    if (k.source == kPull) src = LoadSource::Reader(&pull);
    SlowSink sink;
    std::unique_ptr<container::ByteConsumer> c = MakeConsumer(
        Format(), container::FileOptions(), &sink, nullptr, nullptr);
    Loader loader(o);
    const LoadResult r = loader.Run(src, c.get());
    ASSERT_TRUE(r.status.ok()) << r.status;
    EXPECT_EQ(r.bytes, bytes.size());
    EXPECT_EQ(c->tensors_completed(), tensors_.size());
    EXPECT_EQ(LoaderTestPeer::RingSlots(loader), k.slots);
    EXPECT_LE(LoaderTestPeer::MaxSlotsInFlight(loader), k.slots);
    EXPECT_GE(LoaderTestPeer::MaxSlotsInFlight(loader), 1u);
    if (k.source != kPipe) {
      EXPECT_EQ(LoaderTestPeer::ReaderResumes(loader), 0u);
      continue;
    }
    EXPECT_GE(LoaderTestPeer::ReaderResumes(loader), 1u);
    // A resume per wait, not per freed slot: the first slots filled waited
    // for nothing, and the reader may wait once more before the end.
    EXPECT_LE(LoaderTestPeer::ReaderResumes(loader),
              LoaderTestPeer::SlotsFed(loader) - k.slots + 1);
  }
}

INSTANTIATE_TEST_SUITE_P(StreamAndHrry, LoaderFormats, ::testing::Bool());

// A ring larger than the address space (options, not input) is a STREAM-IO
// failure with the reason, never an exception out of Run or an abort, for
// every kind of reader: sizes that overflow, and (but under
// AddressSanitizer, whose allocator aborts on such a request) 128 PiB that
// no allocator can give.
TEST(Loader, AnImpossibleRingIsAnError) {
  const std::vector<uint8_t> bytes = StreamBytes(MixedTensors(1));
  const std::string path = ingest::testing::FreshDir("loader_ring") + "/in";
  ingest::testing::WriteAll(path, bytes);
  LoaderOptions huge_chunk;
  huge_chunk.chunk_size = SIZE_MAX;
  LoaderOptions huge_count;
  huge_count.chunk_size = 4096;
  huge_count.ring_slots = SIZE_MAX / 2;
  std::vector<LoaderOptions> cases = {huge_chunk, huge_count};
#ifndef ABSL_HAVE_ADDRESS_SANITIZER
  LoaderOptions no_memory;
  no_memory.chunk_size = size_t{1} << 55;  // × 4 slots: 128 PiB
  cases.push_back(no_memory);
#endif
  for (const LoaderOptions& o : cases) {
    for (int kind = 0; kind < 3; ++kind) {
      SCOPED_TRACE(::testing::Message()
                   << "chunk " << o.chunk_size << ", slots " << o.ring_slots
                   << ", source " << kind);
      std::unique_ptr<Pipe> pipe;
      LoadSource src = LoadSource::Memory(bytes);
      if (kind == 1) src = LoadSource::File(path);
      if (kind == 2) {
        pipe = std::make_unique<Pipe>(bytes, false);
        src = LoadSource::Fd(pipe->read_fd);
      }
      const Loaded r = Load(src, ContainerFormat::kStream, o);
      EXPECT_EQ(RuleIdOf(r.result.status), "STREAM-IO") << r.result.status;
      EXPECT_TRUE(absl::StrContains(r.result.status.message(),
                                    "cannot allocate a read ring"))
          << r.result.status;
      EXPECT_EQ(r.result.bytes, 0u);
    }
  }
}

TEST(Loader, CancelStopsAStalledPipe) {
  const std::vector<uint8_t> bytes = StreamBytes(MixedTensors(1));
  Pipe pipe(std::vector<uint8_t>(bytes.begin(), bytes.begin() + 100), true);
  LoaderOptions o;
  o.chunk_size = 16;
  Loader loader(o);
  std::atomic<bool> fed{false};
  o.on_progress = [&fed](const LoadProgress&) { fed = true; };
  Loader loader2(o);
  std::thread canceller([&] {
    while (!fed) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    loader2.Cancel();
  });
  ValidateSink sink;
  StreamConsumer c(container::StreamOptions(), &sink);
  const LoadResult r = loader2.Run(LoadSource::Fd(pipe.read_fd), &c);
  canceller.join();
  EXPECT_TRUE(r.cancelled);
  EXPECT_EQ(RuleIdOf(r.status), "STREAM-IO");
  EXPECT_TRUE(absl::StrContains(r.status.message(), "cancelled")) << r.status;
  EXPECT_EQ(c.tensors_completed(), 0u);
}

TEST(Loader, CancelBeforeRun) {
  const std::vector<uint8_t> bytes = StreamBytes(MixedTensors(1));
  Loader loader;
  loader.Cancel();
  ValidateSink sink;
  StreamConsumer c(container::StreamOptions(), &sink);
  const LoadResult r = loader.Run(LoadSource::Memory(bytes), &c);
  EXPECT_TRUE(r.cancelled);
  EXPECT_EQ(RuleIdOf(r.status), "STREAM-IO");
}

TEST(Loader, IdleTimeoutOnAStalledPipe) {
  const std::vector<uint8_t> bytes = HrryBytes(MixedTensors(1));
  Pipe pipe(std::vector<uint8_t>(bytes.begin(), bytes.begin() + 5000), true);
  LoaderOptions o;
  o.idle_timeout_seconds = 0.2;
  ValidateSink sink;
  HrryConsumer c(container::FileOptions(), &sink);
  Loader loader(o);
  const LoadResult r = loader.Run(LoadSource::Fd(pipe.read_fd), &c);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(RuleIdOf(r.status), "STREAM-IO");
  EXPECT_EQ(OffsetOf(r.status), 5000u);
  EXPECT_TRUE(absl::StrContains(r.status.message(), "idle timeout"))
      << r.status;
  EXPECT_EQ(r.bytes, 5000u);
}

TEST_P(LoaderFormats, PullReaderLikeMemory) {
  const std::vector<uint8_t> bytes = Bytes();
  const Loaded want = Load(LoadSource::Memory(bytes), Format());
  ASSERT_TRUE(want.result.status.ok()) << want.result.status;
  for (size_t piece : {size_t{1}, size_t{777}, bytes.size()}) {
    FakeReader reader(bytes, piece);
    LoaderOptions o;
    o.chunk_size = 4096;
    const Loaded got = Load(LoadSource::Reader(&reader), Format(), o);
    ASSERT_TRUE(got.result.status.ok()) << got.result.status;
    EXPECT_EQ(got.result.bytes, bytes.size());
    EXPECT_EQ(got.tensors, want.tensors);
    ASSERT_EQ(got.records.size(), want.records.size());
    for (size_t i = 0; i < got.records.size(); ++i) {
      EXPECT_EQ(got.records[i].verdict, want.records[i].verdict);
    }
  }
}

TEST(Loader, PullReaderErrorIsStreamIoAtTheOffset) {
  const std::vector<uint8_t> bytes = HrryBytes(MixedTensors(1));
  FakeReader reader(std::vector<uint8_t>(bytes.begin(), bytes.begin() + 5000),
                    1000);
  reader.error = absl::UnavailableError("truncated: 5000 of 9999 bytes");
  const Loaded r = Load(LoadSource::Reader(&reader), ContainerFormat::kHrry);
  EXPECT_EQ(RuleIdOf(r.result.status), "STREAM-IO");
  EXPECT_EQ(OffsetOf(r.result.status), 5000u);
  EXPECT_TRUE(absl::StrContains(r.result.status.message(), "5000 of 9999"))
      << r.result.status;
}

TEST(Loader, CancelInterruptsAPullReader) {
  const std::vector<uint8_t> bytes = StreamBytes(MixedTensors(1));
  FakeReader reader(std::vector<uint8_t>(bytes.begin(), bytes.begin() + 100),
                    10);
  reader.block_at_end = true;
  LoaderOptions o;
  std::atomic<bool> fed{false};
  o.on_progress = [&fed](const LoadProgress&) { fed = true; };
  Loader loader(o);
  std::thread canceller([&] {
    while (!fed) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    loader.Cancel();
  });
  ValidateSink sink;
  StreamConsumer c(container::StreamOptions(), &sink);
  const LoadResult r = loader.Run(LoadSource::Reader(&reader), &c);
  canceller.join();
  EXPECT_TRUE(r.cancelled);
  EXPECT_TRUE(reader.interrupted_);
  EXPECT_EQ(RuleIdOf(r.status), "STREAM-IO");
}

// A consumer with next to no work per chunk: it counts the bytes and
// checks each chunk's first bytes against the file at that offset (every
// chunk in its place).
class CountingConsumer : public container::ByteConsumer {
 public:
  explicit CountingConsumer(std::vector<uint8_t> want)
      : want_(std::move(want)) {}
  absl::Status Feed(absl::Span<const uint8_t> chunk) override {
    const size_t n = std::min<size_t>(chunk.size(), 8);
    if (at_ + chunk.size() > want_.size() ||
        !std::equal(chunk.begin(), chunk.begin() + n, want_.begin() + at_)) {
      ++misplaced_;
    }
    at_ += chunk.size();
    return absl::OkStatus();
  }
  absl::Status Finish() override { return absl::OkStatus(); }
  absl::Status FailSource(absl::string_view why) override {
    return absl::DataLossError(why);
  }
  uint64_t position() const override { return at_; }
  uint64_t misplaced() const { return misplaced_; }

 private:
  std::vector<uint8_t> want_;
  uint64_t at_ = 0, misplaced_ = 0;
};

// A sink that burns `cpu` of its thread's CPU time on every buffer piece
// (a consumer whose work is worth overlapping with the reads).
class BusySink : public ValidateSink {
 public:
  explicit BusySink(std::chrono::microseconds cpu) : cpu_(cpu) {}
  absl::Status OnBufferPiece(uint32_t, uint64_t,
                             absl::Span<const uint8_t>) override {
    const auto until = ThreadCpu() + cpu_;
    while (ThreadCpu() < until) {
    }
    return absl::OkStatus();
  }

 private:
  static std::chrono::nanoseconds ThreadCpu() {
    timespec ts{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return std::chrono::seconds(ts.tv_sec) +
           std::chrono::nanoseconds(ts.tv_nsec);
  }
  std::chrono::microseconds cpu_;
};

// 10 MiB of quantized tensors in a file, read in 1 MiB chunks.
class LoaderInline : public ::testing::Test {
 protected:
  void SetUp() override {
    tensors_ = ingest::testing::QuantizedTensors(3, 2, 5 << 20);
    path_ = ingest::testing::FreshDir("loader_inline") + "/in.hrry";
    ASSERT_TRUE(ingest::testing::WriteHrryFile(path_, tensors_).ok());
    struct stat st {};
    ASSERT_EQ(::stat(path_.c_str(), &st), 0);
    size_ = static_cast<uint64_t>(st.st_size);
    ASSERT_GT(size_, 8 * (uint64_t{1} << 20));
    options_.chunk_size = 1 << 20;
  }
  std::vector<IngestTensor> tensors_;
  std::string path_;
  uint64_t size_ = 0;
  LoaderOptions options_;
};

// A consumer that barely touches the bytes: a regular file is read on the
// consumer's thread, every chunk, with no reader thread and no hand-off, as
// a plain read() loop would; a file given as a descriptor too. (Up to three
// runs each: on a VM whose host is busy, the thread's CPU clock also counts
// time the host took the vCPU away, and one run in tens measured a chunk's
// few microseconds of work as more.)
TEST_F(LoaderInline, ACheapConsumerReadsTheFileItself) {
  for (const bool as_fd : {false, true}) {
    SCOPED_TRACE(as_fd ? "descriptor" : "path");
    bool inline_throughout = false;
    for (int attempt = 0; attempt < 3 && !inline_throughout; ++attempt) {
      const int fd = as_fd ? ::open(path_.c_str(), O_RDONLY | O_CLOEXEC) : -1;
      CountingConsumer c(ingest::testing::ReadAll(path_));
      Loader loader(options_);
      const LoadResult r =
          loader.Run(as_fd ? LoadSource::Fd(fd) : LoadSource::File(path_), &c);
      if (fd >= 0) ::close(fd);
      ASSERT_TRUE(r.status.ok()) << r.status;
      EXPECT_EQ(r.bytes, size_);
      EXPECT_EQ(c.position(), size_);
      EXPECT_EQ(c.misplaced(), 0u);
      EXPECT_GE(LoaderTestPeer::SlotsFed(loader), 8u);
      inline_throughout = LoaderTestPeer::InlineSlots(loader) ==
                              LoaderTestPeer::SlotsFed(loader) &&
                          LoaderTestPeer::ConsumerWaits(loader) == 0 &&
                          LoaderTestPeer::MaxSlotsInFlight(loader) == 1;
    }
    EXPECT_TRUE(inline_throughout);
  }
}

// A consumer whose work per chunk outweighs a quarter of the read hands
// the file to the reader thread, which reads the rest from where the
// consumer's thread stopped: every byte once, in order, every tensor valid.
TEST_F(LoaderInline, ABusyConsumerHandsTheFileToTheReaderThread) {
  BusySink sink(std::chrono::microseconds(2000));
  HrryConsumer c(container::FileOptions(), &sink);
  Loader loader(options_);
  const LoadResult r = loader.Run(LoadSource::File(path_), &c);
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(r.bytes, size_);
  EXPECT_EQ(c.tensors_completed(), tensors_.size());
  ASSERT_EQ(sink.records().size(), tensors_.size());
  for (size_t i = 0; i < tensors_.size(); ++i) {
    EXPECT_EQ(sink.records()[i].name, tensors_[i].name);
    EXPECT_EQ(sink.records()[i].verdict, "valid");
  }
  EXPECT_GE(LoaderTestPeer::InlineSlots(loader), 1u);
  EXPECT_LT(LoaderTestPeer::InlineSlots(loader),
            LoaderTestPeer::SlotsFed(loader));
}

// A consumer that waits rather than computes (it sleeps 3 ms a chunk, a
// few tens of microseconds of CPU against the hundreds a 4 MiB read takes)
// is weighed by its wall time: the reader thread takes over too.
TEST_F(LoaderInline, AWaitingConsumerHandsTheFileToTheReaderThread) {
  class Napping : public CountingConsumer {
   public:
    using CountingConsumer::CountingConsumer;
    absl::Status Feed(absl::Span<const uint8_t> chunk) override {
      std::this_thread::sleep_for(std::chrono::milliseconds(3));
      return CountingConsumer::Feed(chunk);
    }
  };
  Napping c(ingest::testing::ReadAll(path_));
  LoaderOptions o = options_;
  o.chunk_size = 4 << 20;
  Loader loader(o);
  const LoadResult r = loader.Run(LoadSource::File(path_), &c);
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(c.position(), size_);
  EXPECT_EQ(c.misplaced(), 0u);
  EXPECT_GE(LoaderTestPeer::InlineSlots(loader), 1u);
  EXPECT_LT(LoaderTestPeer::InlineSlots(loader),
            LoaderTestPeer::SlotsFed(loader));
}

// Cancel() reaches a file read inline: the run stops before its end with
// STREAM-IO "cancelled".
TEST_F(LoaderInline, CancelStopsAnInlineRead) {
  LoaderOptions o = options_;
  Loader* loader_ptr = nullptr;
  o.on_progress = [&loader_ptr](const LoadProgress&) { loader_ptr->Cancel(); };
  Loader loader(o);
  loader_ptr = &loader;
  ValidateSink sink;
  HrryConsumer c(container::FileOptions(), &sink);
  const LoadResult r = loader.Run(LoadSource::File(path_), &c);
  EXPECT_TRUE(r.cancelled);
  EXPECT_EQ(RuleIdOf(r.status), "STREAM-IO");
  EXPECT_TRUE(absl::StrContains(r.status.message(), "cancelled")) << r.status;
  EXPECT_EQ(r.bytes, options_.chunk_size);
  EXPECT_EQ(LoaderTestPeer::InlineSlots(loader), 1u);
}

TEST(Loader, MissingFileIsStreamIo) {
  ValidateSink sink;
  StreamConsumer c(container::StreamOptions(), &sink);
  Loader loader;
  const LoadResult r = loader.Run(LoadSource::File("/nonexistent/x"), &c);
  EXPECT_EQ(RuleIdOf(r.status), "STREAM-IO");
}

// Cut the input at every structural boundary (and around it): the loader
// gives the verdict of the one-shot reader, and no tensor whose bytes were
// cut is reported complete.
TEST_P(LoaderFormats, TruncatedAtEveryBoundary) {
  const std::vector<uint8_t> bytes = Bytes();
  // Boundaries from a full read.
  std::vector<uint64_t> cuts = {0, 1, 4, 8, 63, 64, 65};
  std::vector<uint64_t> ends;  // tensor ends, in order
  if (GetParam()) {
    container::HrryForwardReader reader;
    ASSERT_NE(reader.Feed(bytes), container::FileState::kRejected);
    ASSERT_EQ(reader.Finish(), container::FileState::kDone);
    for (const container::TensorExtent& e : reader.tensors()) {
      for (uint64_t at : {e.descriptor_offset, e.descriptor_offset + 4,
                          e.descriptor_offset + e.descriptor_length,
                          e.data_offset, e.data_offset + e.data_length}) {
        cuts.insert(cuts.end(), {at - 1, at, at + 1});
      }
      ends.push_back(e.data_offset + e.data_length);
    }
    const container::FileGeometry& g = reader.geometry();
    for (uint64_t at :
         {g.region_limit, g.trailer.index_offset, g.file_size - 40}) {
      cuts.insert(cuts.end(), {at - 1, at, at + 1});
    }
  } else {
    // Bare stream: descriptor starts from a recording pass.
    struct Ends : container::TensorSink {
      container::StreamReader* r = nullptr;
      std::vector<uint64_t> starts, ends;
      absl::Status OnDescriptor(const TensorDescriptor& d) override {
        starts.push_back(r->position() - d.descriptor_length);
        return absl::OkStatus();
      }
      absl::Status OnTensorEnd() override {
        ends.push_back(r->position());
        return absl::OkStatus();
      }
    } rec;
    container::StreamReader reader(container::StreamOptions(), &rec);
    rec.r = &reader;
    // Feed byte by byte so position() is exact at each event.
    for (size_t i = 0; i < bytes.size(); ++i) {
      ASSERT_NE(reader.Feed({&bytes[i], 1}), container::StreamState::kRejected)
          << i;
    }
    ASSERT_EQ(reader.Finish(), container::StreamState::kDone);
    for (uint64_t at : rec.starts)
      cuts.insert(cuts.end(), {at, at + 1, at + 4});
    for (uint64_t at : rec.ends) cuts.insert(cuts.end(), {at - 1, at, at + 1});
    ends = rec.ends;
  }
  for (uint64_t cut : cuts) {
    if (cut >= bytes.size()) continue;
    SCOPED_TRACE(::testing::Message() << "cut at " << cut);
    const absl::Span<const uint8_t> part =
        absl::MakeConstSpan(bytes).first(cut);
    const Rejection want =
        GetParam()
            ? container::ReadHrry(part, container::FileOptions(), nullptr)
            : container::ReadStream(part, container::StreamOptions(), nullptr);
    LoaderOptions o;
    o.chunk_size = 97;
    const Loaded r = Load(LoadSource::Memory(part), Format(), o);
    EXPECT_EQ(RuleIdOf(r.result.status), RuleIdOf(ToStatus(want)));
    EXPECT_EQ(OffsetOf(r.result.status), OffsetOf(ToStatus(want)));
    // No tensor reported complete unless it ended before the cut.
    size_t whole = 0;
    while (whole < ends.size() && ends[whole] <= cut) ++whole;
    EXPECT_LE(r.tensors, whole);
    for (size_t i = 0; i < r.records.size(); ++i) {
      if (r.records[i].complete) {
        EXPECT_LE(ends[i], cut);
      }
    }
    if (GetParam()) {
      EXPECT_FALSE(r.result.status.ok());
    } else {
      // A bare stream cut between tensors is valid.
      EXPECT_EQ(r.result.status.ok(), want.ok());
    }
  }
}

// A consumer that asks the peer for the stream first (exercises the TCP
// transport: connect, write PendingOutput, read).
class AskingConsumer : public StreamConsumer {
 public:
  using StreamConsumer::StreamConsumer;
  absl::Span<const uint8_t> PendingOutput() const override {
    return sent_ ? absl::Span<const uint8_t>()
                 : absl::MakeConstSpan(reinterpret_cast<const uint8_t*>("GIVE"),
                                       4);
  }
  void ConsumeOutput(size_t n) override { sent_ = sent_ || n == 4; }

 private:
  bool sent_ = false;
};

// A source that pauses leaves the consumer with an empty ring: it sleeps
// until the next slot (counted for ingest_bench), then takes every byte.
TEST_P(LoaderFormats, TheConsumerWaitsThroughAPause) {
  const std::vector<uint8_t> bytes = Bytes();
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  std::thread writer([&] {
    const size_t half = bytes.size() / 2;
    size_t at = 0;
    for (const size_t until : {half, bytes.size()}) {
      while (at < until) {
        const ssize_t w = ::write(fds[1], bytes.data() + at, until - at);
        if (w <= 0) break;
        at += static_cast<size_t>(w);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    ::close(fds[1]);
  });
  ValidateSink sink;
  std::unique_ptr<container::ByteConsumer> c =
      MakeConsumer(Format(), container::FileOptions(), &sink, nullptr, nullptr);
  Loader loader;
  const LoadResult r = loader.Run(LoadSource::Fd(fds[0]), c.get());
  writer.join();
  ::close(fds[0]);
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(r.bytes, bytes.size());
  EXPECT_EQ(c->tensors_completed(), tensors_.size());
  EXPECT_GE(LoaderTestPeer::ConsumerWaits(loader), 2u);  // both pauses
  EXPECT_LE(LoaderTestPeer::ConsumerWaits(loader),
            LoaderTestPeer::SlotsFed(loader) + 1);
}

TEST(Loader, TcpLoopback) {
  namespace asio = boost::asio;
  const std::vector<uint8_t> bytes = StreamBytes(MixedTensors(5));
  asio::io_context io;
  asio::ip::tcp::acceptor acceptor(
      io, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  const uint16_t port = acceptor.local_endpoint().port();
  std::string asked;
  std::thread server([&] {
    asio::ip::tcp::socket s(io);
    acceptor.accept(s);
    char req[4];
    asio::read(s, asio::buffer(req, 4));
    asked.assign(req, 4);
    asio::write(s, asio::buffer(bytes));
  });
  ValidateSink sink;
  AskingConsumer c(container::StreamOptions(), &sink);
  LoaderOptions o;
  o.chunk_size = 1000;
  o.idle_timeout_seconds = 30;
  Loader loader(o);
  // Short reads, topped up with whatever else has arrived.
  LoaderTestPeer::SetFirstReadCap(loader, 100);
  const LoadResult r =
      loader.Run(LoadSource::Tcp("127.0.0.1", std::to_string(port)), &c);
  server.join();
  EXPECT_EQ(asked, "GIVE");
  EXPECT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(r.bytes, bytes.size());
  EXPECT_EQ(c.tensors_completed(), 7u);
}

TEST(Loader, TcpIdleTimeout) {
  namespace asio = boost::asio;
  asio::io_context io;
  asio::ip::tcp::acceptor acceptor(
      io, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  const uint16_t port = acceptor.local_endpoint().port();
  std::atomic<bool> done{false};
  std::thread server([&] {
    asio::ip::tcp::socket s(io);
    acceptor.accept(s);
    while (!done) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  });
  ValidateSink sink;
  AskingConsumer c(container::StreamOptions(), &sink);
  LoaderOptions o;
  o.idle_timeout_seconds = 0.2;
  Loader loader(o);
  const LoadResult r =
      loader.Run(LoadSource::Tcp("127.0.0.1", std::to_string(port)), &c);
  done = true;
  server.join();
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(RuleIdOf(r.status), "STREAM-IO");
}

// --- Every source honours the idle timeout; connect has one (issue 13). ---

// Runs `loader` on another thread; if it is not done within `bound`, calls
// `unblock` (which must make the old blocking code return) and waits.
// `finished_in_time` tells which happened.
struct Bounded {
  LoadResult result;
  bool finished_in_time = false;
};
Bounded RunBounded(Loader* loader, const LoadSource& source,
                   container::ByteConsumer* consumer,
                   std::function<void()> unblock,
                   std::chrono::seconds bound = std::chrono::seconds(10)) {
  Bounded b;
  std::atomic<bool> done{false};
  std::thread t([&] {
    b.result = loader->Run(source, consumer);
    done = true;
  });
  const auto until = std::chrono::steady_clock::now() + bound;
  while (!done && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  b.finished_in_time = done;
  if (!done) unblock();
  t.join();
  return b;
}

std::string TempFifo(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  const std::string path = std::string(dir ? dir : "/tmp") + "/" + name;
  ::unlink(path.c_str());
  if (::mkfifo(path.c_str(), 0600) != 0) std::abort();
  return path;
}

// `ingest FIFO --idle-timeout` with a writer that never writes: it was read
// with a blocking read() and hung.
TEST(Loader, FifoPathWithASilentWriterHitsTheIdleTimeout) {
  const std::string path = TempFifo("silent_writer.fifo");
  // O_RDWR: a writer that is there and never writes (and never blocks on
  // open).
  const int writer = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(writer, 0);
  LoaderOptions o;
  o.idle_timeout_seconds = 0.3;
  ValidateSink sink;
  HrryConsumer c(container::FileOptions(), &sink);
  Loader loader(o);
  const Bounded b = RunBounded(&loader, LoadSource::File(path), &c, [&] {
    const uint8_t junk[8] = {};
    (void)!::write(writer, junk, sizeof(junk));
    loader.Cancel();
  });
  ::close(writer);
  EXPECT_TRUE(b.finished_in_time);
  EXPECT_TRUE(b.result.timed_out);
  EXPECT_TRUE(absl::StrContains(b.result.status.message(), "idle timeout"))
      << b.result.status;
}

// No writer at all: open() itself used to block forever.
TEST(Loader, FifoPathWithNoWriterHitsTheIdleTimeout) {
  const std::string path = TempFifo("no_writer.fifo");
  LoaderOptions o;
  o.idle_timeout_seconds = 0.3;
  ValidateSink sink;
  HrryConsumer c(container::FileOptions(), &sink);
  Loader loader(o);
  const Bounded b = RunBounded(&loader, LoadSource::File(path), &c, [&] {
    loader.Cancel();
    const int w = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (w >= 0) ::close(w);
  });
  EXPECT_TRUE(b.finished_in_time);
  EXPECT_TRUE(b.result.timed_out);
  EXPECT_EQ(RuleIdOf(b.result.status), "STREAM-IO");
}

// A FIFO whose writer comes after the loader opened it, writes everything
// in pieces and closes: every byte arrives, as from a file.
TEST(Loader, FifoPathDeliversEveryByte) {
  const std::string path = TempFifo("late_writer.fifo");
  const std::vector<uint8_t> bytes = HrryBytes(MixedTensors(3));
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const int w = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (w < 0) return;
    for (size_t at = 0; at < bytes.size();) {
      const ssize_t n = ::write(w, bytes.data() + at,
                                std::min<size_t>(bytes.size() - at, 999));
      if (n <= 0) break;
      at += static_cast<size_t>(n);
    }
    ::close(w);
  });
  LoaderOptions o;
  o.idle_timeout_seconds = 20;
  const Loaded r = Load(LoadSource::File(path), ContainerFormat::kHrry, o);
  writer.join();
  EXPECT_TRUE(r.result.status.ok()) << r.result.status;
  EXPECT_EQ(r.result.bytes, bytes.size());
  EXPECT_EQ(r.tensors, 7u);
}

// A peer whose accept queue is full drops the SYN: connect waits until the
// connect timeout (it had no deadline without an idle timeout).
TEST(Loader, TcpConnectTimeout) {
  ingest::testing::FullListener full;
  ASSERT_TRUE(full.ok());
  ValidateSink sink;
  AskingConsumer c(container::StreamOptions(), &sink);
  LoaderOptions o;
  o.connect_timeout_seconds = 0.5;  // and no idle timeout
  Loader loader(o);
  const Bounded b = RunBounded(
      &loader, LoadSource::Tcp("127.0.0.1", std::to_string(full.port())), &c,
      [&] { loader.Cancel(); });
  EXPECT_TRUE(b.finished_in_time);
  EXPECT_TRUE(b.result.timed_out);
  EXPECT_TRUE(absl::StrContains(b.result.status.message(), "connect timeout"))
      << b.result.status;
}

}  // namespace
}  // namespace hurray::stream::ingest
