// Loader: moves bytes from a source into a ByteConsumer
// (stream/container/byte_consumer.h) with reading and consuming overlapped, in
// bounded memory.
//
// Sources: a local file (from an offset, for --resume), a file descriptor
// (stdin, a pipe, a socket), bytes in memory, and a TCP peer ("host",
// "port": connect, write the consumer's PendingOutput(), read), and a
// container::PullReader (stream/container/pull_reader.h: e.g. the body of an
// HTTP(S) response, stream/http/http_body.h) read by the reader thread.
//
// Reads go into a ring of `ring_slots` buffers of `chunk_size` bytes,
// allocated once per Run as one block (on huge pages from 2 MiB on,
// dequant/large_buffer.h, which rounds it up to whole 2 MiB pages; for a
// stream, with room to grow). The consumer runs on the caller's thread while
// a reader fills the next slots: a reader thread with read() for regular
// files, memory and pull readers, or a Boost.Asio io_context thread for
// pipes, FIFOs, terminals, devices and sockets, whether given as a path or a
// descriptor (non-blocking, with the idle timer). A regular file starts
// without the thread: the caller's thread reads each chunk and feeds it,
// until the consumer's time per chunk (its CPU time, or its wall time when
// it waited) reaches a quarter of the read's (stream/ingest/loader.cc,
// StartInline); then the reader thread takes over, overlapped as above. When
// every slot is full the reader waits for the consumer (backpressure); a
// stream's reader (everything read on the io thread, and pull readers) first
// grows the ring by a slot, up to `max_ring_bytes` (see there). Memory stays at
// ring_slots × chunk_size for files and memory, at most the larger of that and
// max_ring_bytes for streams (so rounded), whatever the input size. Files
// use a thread, not asio::stream_file: this Boost build has no io_uring
// (BOOST_ASIO_HAS_IO_URING needs liburing, which is not installed).
//
// Ending: the source's EOF → consumer Finish(); a read error, the idle
// timeout ("idle timeout": no byte for idle_timeout_seconds while a read was
// waiting) or Cancel() → consumer FailSource(why), i.e. STREAM-IO at the
// current offset with the reason in the message; consumer Satisfied() →
// the loader stops reading and calls Finish(). The result carries the
// consumer's final status (rule id and offset, rules.h RuleIdOf/OffsetOf).
//
// Tensors are reported complete by the consumer's sink only (OnTensorEnd
// fires once every byte of a tensor arrived and passed); the loader adds
// nothing of its own.
#ifndef HURRAY_STREAM_INGEST_LOADER_H_
#define HURRAY_STREAM_INGEST_LOADER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "stream/container/byte_consumer.h"
#include "stream/container/pull_reader.h"

namespace hurray::stream::ingest {

struct LoadSource {
  enum class Kind : uint8_t { kFile, kFd, kMemory, kTcp, kReader };
  Kind kind = Kind::kMemory;
  std::string path;                         // kFile
  uint64_t start_offset = 0;                // kFile: first byte to read
  int fd = -1;                              // kFd: not closed by the loader
  absl::Span<const uint8_t> bytes;          // kMemory: kept alive by the caller
  std::string host, port;                   // kTcp
  container::PullReader* reader = nullptr;  // kReader: kept alive by the caller

  static LoadSource File(std::string path, uint64_t start_offset = 0);
  static LoadSource Fd(int fd);
  static LoadSource Memory(absl::Span<const uint8_t> bytes);
  static LoadSource Tcp(std::string host, std::string port);
  static LoadSource Reader(container::PullReader* reader);
};

struct LoadProgress {
  uint64_t bytes = 0;    // fed to the consumer in this run
  uint64_t tensors = 0;  // ByteConsumer::tensors_completed
  double elapsed_seconds = 0;
};

// The most slots a ring grows to, whatever LoaderOptions::max_ring_bytes
// and chunk_size allow (its bookkeeping is sized for them up front).
inline constexpr size_t kMaxGrownRingSlots = 4096;

struct LoaderOptions {
  size_t chunk_size = size_t{1} << 20;
  size_t ring_slots = 4;
  // Streams (pipes, FIFOs, terminals, character devices, sockets, TCP, and
  // pull readers): when the reader finds every slot full, the ring gains a
  // slot instead of waiting, while its slots hold at most this many bytes
  // in all (and number at most kMaxGrownRingSlots; a ring of ring_slots
  // slots that holds more never grows). A full ring stalls a stream's
  // sender, and TCP takes time to open its window again: a consumer that
  // works in bursts then wastes the transport's time. DequantSink is one:
  // it dequantizes a tensor with parameter buffers at the tensor's end,
  // from its in-memory spool (sinks.h, up to 24 MiB), and the ring must
  // hold what arrives meanwhile, about as much as the tensor's data; 16 MiB
  // keeps that sink's worst case under 64 MiB (sinks.h). Over loopback TCP
  // with 16 MiB tensors a fixed 4-slot ring took 1.30-1.34 x the time of
  // the slower of the transport and the dequantization alone, one growing
  // to 16 MiB 1.03-1.05 x (bench/RESULTS.md, issue 18, "the ring grows for
  // streams"). A consumer that keeps up seldom grows the ring. Files and
  // memory never grow it: their reads resume at full speed.
  size_t max_ring_bytes = size_t{16} << 20;
  // No byte for this long while reading a pipe, FIFO, device or socket
  // (whether it came as a path or a descriptor; also while a FIFO waits for
  // its writer): STREAM-IO "idle timeout". 0: no timeout. Regular files
  // and memory never wait.
  double idle_timeout_seconds = 0;
  // Resolving and connecting a TCP peer: STREAM-IO "connect timeout" after
  // this long (or after the idle timeout, when shorter). 0: none.
  double connect_timeout_seconds = 10;
  // Called on the consumer's thread after each chunk.
  std::function<void(const LoadProgress&)> on_progress;
};

// [[nodiscard]]: status is the outcome of the whole load.
struct [[nodiscard]] LoadResult {
  absl::Status status;  // the consumer's final status
  uint64_t bytes = 0;   // fed to the consumer
  double elapsed_seconds = 0;
  bool cancelled = false;
  bool timed_out = false;
};

class Loader {
 public:
  explicit Loader(const LoaderOptions& options = LoaderOptions());
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  // Runs until the input ended, failed or was cancelled. One Run at a time.
  LoadResult Run(const LoadSource& source, container::ByteConsumer* consumer);

  // Thread-safe, from any thread, any time: the current (or next) Run stops
  // with STREAM-IO "cancelled". Sticky.
  void Cancel();

 private:
  class Session;
  // What tests and benchmarks set and read, through LoaderTestPeer
  // (stream/ingest/testing/loader_test_peer.h) only.
  struct TestHooks {
    // The reader delivers at most this many bytes per second (0: no limit).
    double throttle_bytes_per_second = 0;
    // Of the last Run: the slots its ring had at the end (ring_slots, and
    // those it grew by), most slots ever filled and not yet consumed.
    size_t ring_slots = 0;
    size_t max_slots_in_flight = 0;
    // Sockets and pipes: each wait for input reads at most this many bytes
    // (0: a whole slot), so the slot's top-up (reading what else is there
    // without waiting) has something to read; and the bytes the last Run's
    // top-ups read.
    size_t first_read_cap = 0;
    uint64_t topped_up_bytes = 0;
    // Of the last Run: slots fed to the consumer; and, for sockets and
    // pipes, times the reader found the ring full and a freed slot resumed
    // it (the only times a freed slot wakes the io thread).
    uint64_t slots_fed = 0;
    uint64_t reader_resumes = 0;
    // Of the last Run: times the consumer found the ring empty and slept.
    uint64_t consumer_waits = 0;
    // Of the last Run: slots a regular file fed read on the consumer's
    // thread, before (if ever) its reader thread took over.
    uint64_t inline_slots = 0;
  };
  friend class LoaderTestPeer;

  LoaderOptions options_;
  TestHooks hooks_;
  // Cancel() may come from any thread at any time; Run publishes its
  // session under the same lock (the session's own state has its own).
  absl::Mutex mu_;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  Session* session_ ABSL_GUARDED_BY(mu_) = nullptr;
};

}  // namespace hurray::stream::ingest

#endif  // HURRAY_STREAM_INGEST_LOADER_H_
