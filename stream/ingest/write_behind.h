// WriteBehind: the write(2) calls of DequantSink's output files
// (stream/ingest/output_file.h) on a thread of their own, so that the
// dequantization of the next buffer overlaps the system time of writing the
// last one (issue 47 item 1: they used to run one after the other on the
// thread that dequantizes).
//
// One WriteBehind per sink (one ingest run), reached through
// WriterContext::write_behind; its thread starts at the first write and is
// joined when it is destroyed. A file's buffers go to a File, which queues
// them in one FIFO for all files (so each file's bytes keep their order),
// from which the thread writes them; their CRC-32C is computed by Write, on
// the producer (the writer's write(2) alone is the slower side). At most
// `max_buffers` (kWriteBehindBuffers) buffers are queued or being written at
// once: the producer waits for a free one, and gets back an emptied buffer
// (its capacity kept), so the memory is bounded by max_buffers buffers of
// kOutBufferBytes (512 KiB) plus one Emit slice's output (at most 256 KiB)
// each, plus the one each open file fills (stream/ingest/output_file.h). A
// write's first error is latched in its File and returned by the next Write or
// Wait of that file, with the text WriteAllFd gives it; later buffers of that
// file are dropped. Destroying a File (or Cancel) drops its queued buffers and
// waits for the one being written, so no write is left in flight on an fd that
// is then closed or a file that is removed.
#ifndef HURRAY_STREAM_INGEST_WRITE_BEHIND_H_
#define HURRAY_STREAM_INGEST_WRITE_BEHIND_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace hurray::stream::ingest {

// Buffers queued or being written at once, over all files of a run.
inline constexpr size_t kWriteBehindBuffers = 3;

class WriteBehind {
 public:
  explicit WriteBehind(size_t max_buffers = kWriteBehindBuffers);
  WriteBehind(const WriteBehind&) = delete;
  WriteBehind& operator=(const WriteBehind&) = delete;
  // Every File must be gone; writes what is still queued and joins the
  // thread.
  ~WriteBehind();

  // The writes of one open file `fd` (not owned: close it after Wait or
  // Cancel). Used from one thread at a time (the producer's).
  class File {
   public:
    // `what` names the file in errors (SafeOutputDir::Describe).
    File(WriteBehind* owner, int fd, std::string what)
        : owner_(owner), fd_(fd), what_(std::move(what)) {}
    File(const File&) = delete;
    File& operator=(const File&) = delete;
    ~File() { Cancel(); }

    // Queues *buf (emptied: it gets a free buffer of the pool, or an empty
    // one); waits while max_buffers are queued. The first error of this
    // file's earlier writes, if any (then *buf is cleared, not queued).
    [[nodiscard]] absl::Status Write(std::vector<uint8_t>* buf);
    // Waits until this file's queued buffers are written: their first
    // error, if any.
    [[nodiscard]] absl::Status Wait();
    // Drops the queued buffers and waits for the one being written.
    void Cancel();
    // The CRC-32C of the bytes queued by Write (computed there, on the
    // producer's thread), or as set.
    uint32_t crc() const { return crc_; }
    void set_crc(uint32_t crc) { crc_ = crc; }

   private:
    friend class WriteBehind;
    WriteBehind* const owner_;
    const int fd_;
    const std::string what_;
    // Buffers of this file queued or being written; guarded by owner_->mu_.
    size_t pending_ = 0;
    // The first failed write's error; guarded by owner_->mu_.
    absl::Status error_;
    // The producer's alone (Write, crc, set_crc).
    uint32_t crc_ = 0;
  };

 private:
  struct Job {
    File* file = nullptr;
    std::vector<uint8_t> bytes;
  };
  void Run();
  // A written (or dropped) buffer: back to the pool.
  void Recycle(std::vector<uint8_t> bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const size_t max_buffers_;
  absl::Mutex mu_;
  std::deque<Job> queue_ ABSL_GUARDED_BY(mu_);
  std::vector<std::vector<uint8_t>> free_ ABSL_GUARDED_BY(mu_);
  size_t in_flight_ ABSL_GUARDED_BY(mu_) = 0;  // queued or being written
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;  // started by the first Write
};

}  // namespace hurray::stream::ingest

#endif  // HURRAY_STREAM_INGEST_WRITE_BEHIND_H_
