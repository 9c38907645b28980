#include "stream/ingest/loader.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <new>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/config.h"
#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "dequant/large_buffer.h"

#ifdef ABSL_HAVE_ADDRESS_SANITIZER
#include <sanitizer/asan_interface.h>
#endif

namespace hurray::stream::ingest {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

LoadSource LoadSource::File(std::string path, uint64_t start_offset) {
  LoadSource s;
  s.kind = Kind::kFile;
  s.path = std::move(path);
  s.start_offset = start_offset;
  return s;
}

LoadSource LoadSource::Fd(int fd) {
  LoadSource s;
  s.kind = Kind::kFd;
  s.fd = fd;
  return s;
}

LoadSource LoadSource::Memory(absl::Span<const uint8_t> bytes) {
  LoadSource s;
  s.kind = Kind::kMemory;
  s.bytes = bytes;
  return s;
}

LoadSource LoadSource::Tcp(std::string host, std::string port) {
  LoadSource s;
  s.kind = Kind::kTcp;
  s.host = std::move(host);
  s.port = std::move(port);
  return s;
}

LoadSource LoadSource::Reader(container::PullReader* reader) {
  LoadSource s;
  s.kind = Kind::kReader;
  s.reader = reader;
  return s;
}

namespace {

// Under AddressSanitizer the ring's slots are kept apart by poisoned gaps;
// without it these do nothing.
#ifdef ABSL_HAVE_ADDRESS_SANITIZER
constexpr bool kRingRedzones = true;
void PoisonRingGap(const uint8_t* p, size_t n) {
  __asan_poison_memory_region(p, n);
}
void UnpoisonRing(const uint8_t* p, size_t n) {
  __asan_unpoison_memory_region(p, n);
}
#else
constexpr bool kRingRedzones = false;
void PoisonRingGap(const uint8_t*, size_t) {}
void UnpoisonRing(const uint8_t*, size_t) {}
#endif

}  // namespace

// One Run: the ring, the reader (thread or io_context) and the consumer
// loop.
class Loader::Session {
 public:
  Session(const LoaderOptions& options, TestHooks* hooks,
          const LoadSource& source, container::ByteConsumer* consumer)
      : options_(options), hooks_(hooks), source_(source), consumer_(consumer) {
    chunk_ = std::max<size_t>(options_.chunk_size, 1);
  }

  ~Session() {
    StopReader();
    if (own_fd_ >= 0) ::close(own_fd_);
    if (kRingRedzones) UnpoisonRing(ring_.data(), ring_.size());
  }

  LoadResult Run() {
    LoadResult result;
    hooks_->topped_up_bytes = 0;
    hooks_->slots_fed = 0;
    hooks_->reader_resumes = 0;
    hooks_->consumer_waits = 0;
    hooks_->inline_slots = 0;
    start_ = Clock::now();
    absl::Status opened = StartReader();
    if (!opened.ok()) {
      result.status = consumer_->FailSource(opened.message());
      return Done(std::move(result));
    }
    SendOutput();
    absl::Status status;
    while (true) {
      Filled item;
      End end = End::kNone;
      std::string why;
      if (inline_fd_ >= 0) {
        ReadInline(&item, &end, &why);
      } else {
        absl::MutexLock lock(&mu_);
        if (!cancelled_ && full_count_ == 0 && end_ == End::kNone) {
          ++hooks_->consumer_waits;
          do {
            cv_.Wait(&mu_);
          } while (!cancelled_ && full_count_ == 0 && end_ == End::kNone);
        }
        if (cancelled_) {
          end = End::kCancelled;
        } else if (full_count_ > 0) {
          item = full_[full_head_];
          full_head_ = (full_head_ + 1) % full_.size();
          --full_count_;
        } else {
          end = end_;
          why = why_;
        }
      }
      if (end == End::kCancelled) {
        result.cancelled = true;
        status = consumer_->FailSource("cancelled");
        break;
      }
      if (end == End::kEof) {
        status = consumer_->Finish();
        break;
      }
      if (end == End::kError) {
        result.timed_out = timed_out_.load();
        status = consumer_->FailSource(why);
        break;
      }
      const bool read_inline = inline_fd_ >= 0;
      status = consumer_->Feed(absl::MakeConstSpan(Slot(item.slot), item.n));
      result.bytes += item.n;
      ++hooks_->slots_fed;
      if (read_inline) {
        ++hooks_->inline_slots;  // slot 0 never left the free list
      } else {
        Release(item.slot);
      }
      if (status.ok()) SendOutput();
      if (options_.on_progress) {
        LoadProgress p;
        p.bytes = result.bytes;
        p.tensors = consumer_->tensors_completed();
        p.elapsed_seconds = Elapsed();
        options_.on_progress(p);
      }
      if (!status.ok()) break;
      if (read_inline) WeighInline();
      if (consumer_->Satisfied()) {
        status = consumer_->Finish();
        break;
      }
    }
    result.status = std::move(status);
    return Done(std::move(result));
  }

  // Thread-safe.
  void Cancel() ABSL_LOCKS_EXCLUDED(mu_) {
    asio::io_context* io = nullptr;
    {
      absl::MutexLock lock(&mu_);
      cancelled_ = true;
      stop_ = true;
      io = io_.get();
      cv_.SignalAll();
    }
    if (io != nullptr) asio::post(*io, [this] { CloseStream(); });
    if (source_.kind == LoadSource::Kind::kReader &&
        source_.reader != nullptr) {
      source_.reader->Interrupt();
    }
  }

 private:
  enum class End : uint8_t { kNone, kEof, kError, kCancelled };
  struct Filled {
    int slot = 0;
    size_t n = 0;
  };

  double Elapsed() const {
    return std::chrono::duration<double>(Clock::now() - start_).count();
  }

  LoadResult Done(LoadResult result) {
    StopReader();
    result.elapsed_seconds = Elapsed();
    absl::MutexLock lock(&mu_);
    if (hooks_->inline_slots > 0)
      max_in_flight_ = std::max<size_t>(max_in_flight_, 1);
    hooks_->max_slots_in_flight = max_in_flight_;
    hooks_->ring_slots = slot_count_;
    return result;
  }

  // --- The ring. -------------------------------------------------------------

  // Reader side: a free slot, waiting for one; -1 once stopped.
  int AcquireFree() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    while (!stop_) {
      const int slot = TakeFreeLocked();
      if (slot >= 0) return slot;
      cv_.Wait(&mu_);
    }
    return -1;
  }
  // The io thread's reader, without waiting: -1 when stopped, or when no
  // slot is free and the ring cannot grow, and then the next Release posts
  // StartRead to resume it.
  int TryAcquireFree() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    if (stop_) return -1;
    const int slot = TakeFreeLocked();
    if (slot < 0) reader_awaits_slot_ = true;
    return slot;
  }
  // A free slot; else, while a stream's ring is under its limit, a slot
  // not used before (LoaderOptions::max_ring_bytes); else -1.
  int TakeFreeLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    int slot;
    if (!free_.empty()) {
      slot = free_.back();
      free_.pop_back();
    } else if (slot_count_ < slot_limit_) {
      slot = static_cast<int>(slot_count_++);
      UnpoisonRing(Slot(slot), chunk_);
    } else {
      return -1;
    }
    max_in_flight_ = std::max(max_in_flight_, slot_count_ - free_.size());
    return slot;
  }
  void PushFull(int slot, size_t n) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    full_[(full_head_ + full_count_) % full_.size()] = Filled{slot, n};
    ++full_count_;
    cv_.SignalAll();
  }
  void PushEnd(End end, std::string why, int slot = -1)
      ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    if (slot >= 0) free_.push_back(slot);
    if (end_ == End::kNone) {
      end_ = end;
      why_ = std::move(why);
    }
    cv_.SignalAll();
  }
  // Consumer side: the slot was fed. An io thread that waits for a slot is
  // told, as Cancel tells it, through the io_context read under mu_; one
  // that does not is left alone: a post wakes it from epoll_wait for
  // nothing, a system call and a wake-up per slot (bench/RESULTS.md,
  // issue 18).
  void Release(int slot) ABSL_LOCKS_EXCLUDED(mu_) {
    asio::io_context* io = nullptr;
    {
      absl::MutexLock lock(&mu_);
      free_.push_back(slot);
      if (reader_awaits_slot_) {
        reader_awaits_slot_ = false;
        io = io_.get();
      }
      cv_.SignalAll();
    }
    if (io == nullptr) return;
    ++hooks_->reader_resumes;  // this thread's; read after Run
    asio::post(*io, [this] { StartRead(); });
  }

  // --- Readers. --------------------------------------------------------------

  // The ring, once the reader is known: ring_slots slots, and for a stream
  // (`grows`: a reader that would stall its sender) room for those the
  // ring may grow to (LoaderOptions::max_ring_bytes), whose pages are
  // touched only once a slot is in use. One block on huge pages
  // (dequant/large_buffer.h): 4 MiB of fresh 4 KiB pages were 1024 faults
  // per run. Not zeroed: the reader writes every byte the consumer is
  // given. Slots start on cache lines; under AddressSanitizer a poisoned
  // gap follows each, so that a read past a slot is caught as it was when
  // each slot was its own heap block, and a slot not yet in use is
  // poisoned whole. Then the reader's thread runs `body`. A ring that
  // cannot be had (options asking for more memory than there is) is
  // ResourceExhausted, not an exception out of Run.
  template <typename Body>
  absl::Status StartThread(bool grows, Body body) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::Status ring = AllocateRing(grows);
    if (!ring.ok()) return ring;
    thread_ = std::thread(std::move(body));
    return absl::OkStatus();
  }

  absl::Status AllocateRing(bool grows) ABSL_LOCKS_EXCLUDED(mu_) {
    const size_t n = std::max<size_t>(options_.ring_slots, 1);
    const size_t limit =
        grows ? std::max(n, std::min(options_.max_ring_bytes / chunk_,
                                     kMaxGrownRingSlots))
              : n;
    const absl::Status too_large = absl::ResourceExhaustedError(
        absl::StrCat("cannot allocate a read ring of ", limit, " slots of ",
                     chunk_, " bytes"));
    if (chunk_ > SIZE_MAX - 2 * kSlotAlign) return too_large;
    stride_ = (chunk_ + kSlotAlign - 1) / kSlotAlign * kSlotAlign;
    if (kRingRedzones) stride_ += kSlotAlign;
    if (stride_ > SIZE_MAX / limit) return too_large;
    {
      absl::MutexLock lock(&mu_);
      try {
        free_.reserve(limit);
        full_.assign(limit, Filled());
        ring_ = dequant::LargeBytes(limit * stride_);
      } catch (const std::bad_alloc&) {
        return too_large;
      } catch (const std::length_error&) {
        return too_large;
      }
      slot_limit_ = limit;
      slot_count_ = n;
      for (size_t i = 0; i < limit; ++i) {
        uint8_t* slot = Slot(static_cast<int>(i));
        if (i < n) {
          PoisonRingGap(slot + chunk_, stride_ - chunk_);
        } else {
          PoisonRingGap(slot, stride_);
        }
      }
      for (size_t i = 0; i < n; ++i) {
        free_.push_back(static_cast<int>(n - 1 - i));
      }
    }
    return absl::OkStatus();
  }

  // --- A regular file read on the consumer's thread. -------------------------
  //
  // A regular file's reads never stall, and handing each chunk from a
  // reader thread to the consumer costs two wake-ups and a second busy
  // thread on cores the machine may share; when the consumer's work per
  // chunk is small (validate-only ingest parses a few descriptors per MiB)
  // overlapping it with the read cannot save more than that work, and the
  // hand-offs cost more. So a regular file starts inline: the consumer's
  // thread read()s each chunk into slot 0 and feeds it, the loop of a plain
  // read() of the file. After each chunk (later, one in
  // kInlineSampleEvery) it weighs the consumer's time against the read's
  // (WorkClock), both decayed over about kInlineWindow chunks; once the
  // consumer's reaches 1/kInlineShare of the read's, the reader thread
  // takes over from the current offset and the run continues overlapped,
  // as before, to its end. Inline, the run loses at most the consumer's
  // time (under a fifth of the run at the threshold); threaded, each chunk
  // pays the hand-offs, which on the shared 2-vCPU VM of bench/RESULTS.md
  // (issue 47 item 6) cost about a fifth of a 1 MiB read from the page
  // cache (validate-only ingest took 1.17-1.26 x read() threaded).
  static constexpr double kInlineShare = 4;
  static constexpr uint64_t kInlineWindow = 8;
  static constexpr uint64_t kInlineSampleEvery = 16;

  absl::Status StartInline(int fd) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::Status ring = AllocateRing(/*grows=*/false);
    if (!ring.ok()) return ring;
    inline_fd_ = fd;
    return absl::OkStatus();
  }

  // What a read or the consumer's work on a chunk took: the thread's CPU
  // time, or, when the thread waited of its own accord meanwhile (a
  // voluntary context switch: a sleep, a lock, a read or a write that
  // blocked on a disk), the wall time, which overlapping could hide. Time
  // the thread was preempted counts on neither side: on a shared machine it
  // would weigh one at random.
  // (The CPU time from the thread's CPU clock: getrusage's advances in
  // steps of up to a scheduler tick, 4 ms here; its count of voluntary
  // switches is exact.)
  struct WorkClock {
    Clock::time_point wall;
    double cpu = 0;
    long voluntary = 0;
    static WorkClock Now() {
      WorkClock c;
      struct rusage ru {};
      ::getrusage(RUSAGE_THREAD, &ru);
      c.voluntary = ru.ru_nvcsw;
      timespec ts{};
      ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
      c.cpu = static_cast<double>(ts.tv_sec) +
              static_cast<double>(ts.tv_nsec) * 1e-9;
      c.wall = Clock::now();
      return c;
    }
    double Since(const WorkClock& before) const {
      return voluntary != before.voluntary
                 ? std::chrono::duration<double>(wall - before.wall).count()
                 : cpu - before.cpu;
    }
  };

  // The next chunk, read on this thread into slot 0 (the consumer is done
  // with it: Feed returned); or the end, as the reader would push it.
  void ReadInline(Filled* item, End* end, std::string* why)
      ABSL_LOCKS_EXCLUDED(mu_) {
    {
      absl::MutexLock lock(&mu_);
      if (cancelled_) {
        *end = End::kCancelled;
        return;
      }
    }
    const bool was_weighed = inline_weighed_;
    inline_weighed_ = inline_chunks_ <= kInlineWindow ||
                      inline_chunks_ % kInlineSampleEvery == 0;
    ++inline_chunks_;
    // The last chunk's end, when weighed, is this read's start.
    if (inline_weighed_ && !was_weighed) inline_mark_ = WorkClock::Now();
    ssize_t n;
    do {
      n = ::read(inline_fd_, Slot(0), chunk_);
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
      *end = End::kError;
      *why = absl::StrCat("read failed: ", std::strerror(errno));
      return;
    }
    if (n == 0) {
      *end = End::kEof;
      return;
    }
    inline_delivered_ += static_cast<uint64_t>(n);
    Throttle(inline_delivered_);
    if (inline_weighed_) {
      const WorkClock now = WorkClock::Now();
      inline_last_read_ = now.Since(inline_mark_);
      inline_mark_ = now;
    }
    *item = Filled{0, static_cast<size_t>(n)};
  }

  // After the consumer's work on an inline chunk (since the read's end):
  // hands the file to the reader thread once that work is worth
  // overlapping. The first chunk is not counted: its costs are the run's
  // first (the consumer's first touches of its memory, its code's first
  // calls), and they made a validate-only run leave the inline path at
  // once. Chunks are weighed one by one up to kInlineWindow, then one in
  // kInlineSampleEvery: a WorkClock reading is two system calls, 3.3 us on
  // this VM, and four a chunk cost 6 % of a validate-only run.
  void WeighInline() {
    if (!inline_weighed_) return;
    const WorkClock now = WorkClock::Now();
    const double consumed = now.Since(inline_mark_);
    inline_mark_ = now;
    if (inline_chunks_ == 1) return;
    constexpr double kWindow = kInlineWindow;
    inline_read_ += inline_last_read_ - inline_read_ / kWindow;
    inline_consume_ += consumed - inline_consume_ / kWindow;
    if (inline_consume_ * kInlineShare < inline_read_) return;
    const int fd = inline_fd_;
    const uint64_t delivered = inline_delivered_;
    inline_fd_ = -1;
    thread_ =
        std::thread([this, fd, delivered] { BlockingLoop(fd, delivered); });
  }

  absl::Status StartReader() {
    switch (source_.kind) {
      case LoadSource::Kind::kMemory:
        return StartThread(/*grows=*/false, [this] { BlockingLoop(-1); });
      case LoadSource::Kind::kFile: {
        // O_NONBLOCK: opening a FIFO that has no writer yet must not block
        // (the idle timeout covers the wait for one).
        own_fd_ =
            ::open(source_.path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        if (own_fd_ < 0) {
          return absl::NotFoundError(absl::StrCat("cannot open ", source_.path,
                                                  ": ", std::strerror(errno)));
        }
        struct stat st;
        if (::fstat(own_fd_, &st) != 0) {
          return absl::DataLossError(absl::StrCat("cannot stat ", source_.path,
                                                  ": ", std::strerror(errno)));
        }
        if (S_ISDIR(st.st_mode)) {
          return absl::FailedPreconditionError(
              absl::StrCat(source_.path, " is a directory"));
        }
        if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) {
          // A FIFO, a socket, a terminal, a device: the io_context reader,
          // with the idle timer. It cannot be resumed (no seek).
          if (source_.start_offset > 0) {
            return absl::FailedPreconditionError(absl::StrCat(
                "cannot resume ", source_.path, ": it is not a regular file"));
          }
          const int fd = own_fd_;
          own_fd_ = -1;  // the stream_descriptor owns it now
          return StartDescriptor(fd, S_ISFIFO(st.st_mode));
        }
        const int flags = ::fcntl(own_fd_, F_GETFL);
        if (flags >= 0) ::fcntl(own_fd_, F_SETFL, flags & ~O_NONBLOCK);
        if (source_.start_offset > 0 &&
            ::lseek(own_fd_, static_cast<off_t>(source_.start_offset),
                    SEEK_SET) < 0) {
          return absl::DataLossError(absl::StrCat(
              "cannot seek in ", source_.path, ": ", std::strerror(errno)));
        }
        return StartInline(own_fd_);
      }
      case LoadSource::Kind::kFd: {
        struct stat st;
        if (::fstat(source_.fd, &st) != 0) {
          return absl::DataLossError(
              absl::StrCat("cannot stat the input: ", std::strerror(errno)));
        }
        if (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode)) {
          // epoll refuses regular files; reading them never stalls.
          return StartInline(source_.fd);
        }
        const int dup_fd = ::fcntl(source_.fd, F_DUPFD_CLOEXEC, 0);
        if (dup_fd < 0) {
          return absl::DataLossError(
              absl::StrCat("cannot use the input: ", std::strerror(errno)));
        }
        saved_flags_ = ::fcntl(source_.fd, F_GETFL);
        return StartDescriptor(dup_fd, /*fifo=*/false);
      }
      case LoadSource::Kind::kReader:
        if (source_.reader == nullptr) {
          return absl::InvalidArgumentError("no reader");
        }
        return StartThread(/*grows=*/true, [this] { BlockingLoop(-1); });
      case LoadSource::Kind::kTcp: {
        SetIo();
        socket_ = std::make_unique<asio::ip::tcp::socket>(*io_);
        timer_ = std::make_unique<asio::steady_timer>(*io_);
        resolver_ = std::make_unique<asio::ip::tcp::resolver>(*io_);
        asio::post(*io_, [this] { Connect(); });
        return StartThread(/*grows=*/true, [this] { io_->run(); });
      }
    }
    return absl::InternalError("unknown source kind");
  }

  // Reads `fd` (owned from here on) on the io thread, with the idle timer.
  // A FIFO opened before its writer: wait until it is readable first (a
  // read would report end of input while no writer ever came).
  absl::Status StartDescriptor(int fd, bool fifo) {
    SetIo();
    descriptor_ = std::make_unique<asio::posix::stream_descriptor>(*io_, fd);
    boost::system::error_code nb;
    descriptor_->non_blocking(true, nb);
    can_top_up_ = !nb;
    timer_ = std::make_unique<asio::steady_timer>(*io_);
    if (fifo) {
      asio::post(*io_, [this] {
        ArmTimer(options_.idle_timeout_seconds);
        descriptor_->async_wait(asio::posix::stream_descriptor::wait_read,
                                [this](const boost::system::error_code& ec) {
                                  DisarmTimer();
                                  if (ec) return Failed(ec, "cannot read");
                                  StartRead();
                                });
      });
    } else {
      asio::post(*io_, [this] { StartRead(); });
    }
    return StartThread(/*grows=*/true, [this] { io_->run(); });
  }

  void SetIo() {
    auto io = std::make_unique<asio::io_context>(1);
    // run() must not return while the reader waits for a free slot.
    work_ = std::make_unique<Work>(io->get_executor());
    absl::MutexLock lock(&mu_);
    io_ = std::move(io);
  }

  void StopReader() ABSL_LOCKS_EXCLUDED(mu_) {
    {
      absl::MutexLock lock(&mu_);
      stop_ = true;
      cv_.SignalAll();
    }
    if (source_.kind == LoadSource::Kind::kReader && thread_.joinable()) {
      source_.reader->Interrupt();
    }
    if (io_ != nullptr && thread_.joinable()) {
      asio::post(*io_, [this] {
        CloseStream();
        io_->stop();
      });
    }
    if (thread_.joinable()) thread_.join();
    if (saved_flags_ >= 0) {
      ::fcntl(source_.fd, F_SETFL, saved_flags_);  // Asio set O_NONBLOCK
      saved_flags_ = -1;
    }
  }

  // Regular files, memory and pull readers (fd < 0): read() into free
  // slots; `delivered`: bytes already read inline (the throttle's count).
  void BlockingLoop(int fd, uint64_t delivered = 0) {
    size_t mem_at = 0;
    while (true) {
      const int slot = AcquireFree();
      if (slot < 0) return;
      ssize_t n;
      if (source_.kind == LoadSource::Kind::kReader) {
        absl::StatusOr<size_t> got =
            source_.reader->Read(absl::MakeSpan(Slot(slot), chunk_));
        if (!got.ok()) {
          return PushEnd(End::kError, std::string(got.status().message()),
                         slot);
        }
        n = static_cast<ssize_t>(*got);
      } else if (fd < 0) {
        n = static_cast<ssize_t>(
            std::min(chunk_, source_.bytes.size() - mem_at));
        if (n > 0) {
          std::memcpy(Slot(slot), source_.bytes.data() + mem_at,
                      static_cast<size_t>(n));
        }
        mem_at += static_cast<size_t>(n);
      } else {
        do {
          n = ::read(fd, Slot(slot), chunk_);
        } while (n < 0 && errno == EINTR);
      }
      if (n < 0) {
        return PushEnd(End::kError,
                       absl::StrCat("read failed: ", std::strerror(errno)),
                       slot);
      }
      if (n == 0) return PushEnd(End::kEof, "", slot);
      delivered += static_cast<uint64_t>(n);
      Throttle(delivered);
      PushFull(slot, static_cast<size_t>(n));
    }
  }

  void Throttle(uint64_t delivered) {
    if (hooks_->throttle_bytes_per_second <= 0) return;
    const auto due =
        start_ +
        std::chrono::duration_cast<Clock::duration>(
            std::chrono::duration<double>(static_cast<double>(delivered) /
                                          hooks_->throttle_bytes_per_second));
    const absl::Time deadline =
        absl::Now() + absl::FromChrono(due - Clock::now());
    absl::MutexLock lock(&mu_);
    while (!stop_) {
      if (cv_.WaitWithDeadline(&mu_, deadline)) break;  // timed out
    }
  }

  // --- Asio (io thread only from here on). -----------------------------------

  // Closes the stream after `seconds` (no timer when <= 0) unless disarmed.
  void ArmTimer(double seconds) {
    if (seconds <= 0) return;
    const uint64_t generation = ++timer_generation_;
    timer_->expires_after(std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(seconds)));
    timer_->async_wait([this, generation](const boost::system::error_code& ec) {
      if (ec || generation != timer_generation_) return;
      timed_out_ = true;
      CloseStream();
    });
  }

  void DisarmTimer() {
    ++timer_generation_;
    if (timer_ != nullptr) timer_->cancel();
  }

  void CloseStream() {
    boost::system::error_code ignored;
    if (descriptor_ != nullptr) descriptor_->close(ignored);
    if (socket_ != nullptr) socket_->close(ignored);
    if (resolver_ != nullptr) resolver_->cancel();
    DisarmTimer();
  }

  // Resolving and connecting have their own deadline, connect_timeout
  // (the idle timeout when that is shorter).
  void Connect() {
    connecting_ = true;
    double limit = options_.connect_timeout_seconds;
    if (options_.idle_timeout_seconds > 0 &&
        (limit <= 0 || options_.idle_timeout_seconds < limit)) {
      limit = options_.idle_timeout_seconds;
    }
    ArmTimer(limit);
    resolver_->async_resolve(
        source_.host, source_.port,
        [this](const boost::system::error_code& ec,
               asio::ip::tcp::resolver::results_type results) {
          if (ec) return Failed(ec, "cannot resolve the host");
          asio::async_connect(*socket_, results,
                              [this](const boost::system::error_code& ec2,
                                     const asio::ip::tcp::endpoint&) {
                                DisarmTimer();
                                if (ec2) return Failed(ec2, "cannot connect");
                                connecting_ = false;
                                connected_ = true;
                                boost::system::error_code nb;
                                socket_->non_blocking(true, nb);
                                can_top_up_ = !nb;
                                DoWrite();
                                StartRead();
                              });
        });
  }

  void Failed(const boost::system::error_code& ec, const char* what) {
    DisarmTimer();
    bool cancelled;
    {
      absl::MutexLock lock(&mu_);
      cancelled = cancelled_;
    }
    std::string why = timed_out_ && connecting_ ? "connect timeout"
                      : timed_out_              ? "idle timeout"
                      : cancelled               ? "cancelled"
                                  : absl::StrCat(what, ": ", ec.message());
    PushEnd(End::kError, std::move(why));
  }

  template <typename Handler>
  void ReadSome(uint8_t* data, Handler&& h) {
    const size_t cap = hooks_->first_read_cap;
    const auto buf =
        asio::buffer(data, cap > 0 ? std::min(cap, chunk_) : chunk_);
    if (descriptor_ != nullptr) {
      descriptor_->async_read_some(buf, std::forward<Handler>(h));
    } else {
      socket_->async_read_some(buf, std::forward<Handler>(h));
    }
  }

  // After a read of part of a slot: what else the socket or pipe holds
  // right now, without waiting, up to `room` bytes. Full slots mean fewer
  // hand-offs to the consumer and fewer wake-ups of both threads when the
  // consumer is the slower side (the ring then holds whole chunks, not a
  // socket buffer's worth each). An error or the end of input stops it
  // here; the next read reports it.
  size_t TopUp(uint8_t* data, size_t room) {
    // A blocking read here would wait past the idle timer, which runs on
    // this same thread: top up only from a non-blocking stream.
    if (!can_top_up_) return 0;
    size_t got = 0;
    boost::system::error_code ec;
    while (got < room) {
      const auto buf = asio::buffer(data + got, room - got);
      const size_t k = descriptor_ != nullptr ? descriptor_->read_some(buf, ec)
                                              : socket_->read_some(buf, ec);
      if (ec || k == 0) break;
      got += k;
    }
    hooks_->topped_up_bytes += got;  // the io thread's; read after Run
    return got;
  }

  void StartRead() {
    if (reading_) return;
    const int slot = TryAcquireFree();
    if (slot < 0) return;  // backpressure: the next Release resumes
    reading_ = true;
    ArmTimer(options_.idle_timeout_seconds);
    ReadSome(Slot(slot), [this, slot](const boost::system::error_code& ec,
                                      size_t n) {
      reading_ = false;
      DisarmTimer();
      if (n > 0 && !ec) n += TopUp(Slot(slot) + n, chunk_ - n);
      if (n > 0) PushFull(slot, n);
      if (ec == asio::error::eof)
        return PushEnd(End::kEof, "", n > 0 ? -1 : slot);
      if (ec)
        return PushEnd(End::kError,
                       timed_out_ ? std::string("idle timeout")
                                  : absl::StrCat("read failed: ", ec.message()),
                       n > 0 ? -1 : slot);
      if (n == 0) {
        absl::MutexLock lock(&mu_);
        free_.push_back(slot);
      }
      StartRead();
    });
  }

  // Consumer thread: hands the consumer's pending output to the io thread.
  void SendOutput() {
    const absl::Span<const uint8_t> out = consumer_->PendingOutput();
    if (out.empty()) return;
    std::vector<uint8_t> copy(out.begin(), out.end());
    consumer_->ConsumeOutput(out.size());
    if (socket_ == nullptr) return;  // files and pipes take no output
    asio::post(*io_, [this, bytes = std::move(copy)]() mutable {
      writes_.push_back(std::move(bytes));
      if (connected_) DoWrite();
    });
  }

  void DoWrite() {
    if (writing_ || writes_.empty()) return;
    writing_ = true;
    asio::async_write(*socket_, asio::buffer(writes_.front()),
                      [this](const boost::system::error_code& ec, size_t) {
                        writing_ = false;
                        writes_.pop_front();
                        if (ec) return Failed(ec, "write failed");
                        DoWrite();
                      });
  }

  const LoaderOptions& options_;
  TestHooks* const hooks_;
  const LoadSource& source_;
  container::ByteConsumer* consumer_;
  size_t chunk_;
  Clock::time_point start_;

  // The ring (StartThread): room for slot_limit_ slots of chunk_ bytes,
  // stride_ apart, fixed before the reader starts; the first slot_count_ of
  // them in use. Files and memory: slot_limit_ == slot_count_.
  static constexpr size_t kSlotAlign = 64;
  uint8_t* Slot(int i) const { return ring_.data() + size_t(i) * stride_; }
  dequant::LargeBytes ring_;
  size_t slot_limit_ = 0;
  size_t stride_ = 0;

  // The ring's state, shared by the consumer (Run), the reader (io thread
  // or reader thread) and Cancel (any thread). cv_ is signalled on every
  // change a waiter may wait for.
  absl::Mutex mu_;
  absl::CondVar cv_;
  std::vector<int> free_ ABSL_GUARDED_BY(mu_);
  std::vector<Filled> full_ ABSL_GUARDED_BY(mu_);  // circular
  size_t full_head_ ABSL_GUARDED_BY(mu_) = 0;
  size_t full_count_ ABSL_GUARDED_BY(mu_) = 0;
  End end_ ABSL_GUARDED_BY(mu_) = End::kNone;
  std::string why_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  size_t slot_count_ ABSL_GUARDED_BY(mu_) = 0;  // grows up to slot_limit_
  size_t max_in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  bool reader_awaits_slot_ ABSL_GUARDED_BY(mu_) = false;  // TryAcquireFree
  std::atomic<bool> timed_out_{false};

  // A regular file read inline (StartInline) until WeighInline starts the
  // reader thread; -1 otherwise. The consumer's thread alone uses these.
  int inline_fd_ = -1;
  uint64_t inline_delivered_ = 0;
  double inline_read_ = 0, inline_consume_ = 0;  // decayed sums, seconds
  double inline_last_read_ = 0;
  uint64_t inline_chunks_ = 0;   // read inline so far
  bool inline_weighed_ = false;  // the last chunk read is weighed
  WorkClock inline_mark_;        // a weighed read's start or end

  std::thread thread_;
  int own_fd_ = -1;
  int saved_flags_ = -1;
  // Set by SetIo (under mu_) before the reader starts and kept until the
  // session ends: Cancel and Release read it under mu_ from other threads.
  std::unique_ptr<asio::io_context> io_;
  using Work = asio::executor_work_guard<asio::io_context::executor_type>;
  std::unique_ptr<Work> work_;
  std::unique_ptr<asio::posix::stream_descriptor> descriptor_;
  std::unique_ptr<asio::ip::tcp::socket> socket_;
  std::unique_ptr<asio::ip::tcp::resolver> resolver_;
  std::unique_ptr<asio::steady_timer> timer_;
  uint64_t timer_generation_ = 0;
  bool reading_ = false;
  bool can_top_up_ = false;  // the stream is non-blocking (TopUp)
  bool connecting_ = false, connected_ = false, writing_ = false;
  std::deque<std::vector<uint8_t>> writes_;
};

Loader::Loader(const LoaderOptions& options) : options_(options) {}

Loader::~Loader() = default;

LoadResult Loader::Run(const LoadSource& source,
                       container::ByteConsumer* consumer) {
  auto session = std::make_unique<Session>(options_, &hooks_, source, consumer);
  {
    // Published under mu_, with the cancelled_ check: a Cancel() before this
    // point is seen here, one after it finds session_ (never both missed).
    absl::MutexLock lock(&mu_);
    session_ = session.get();
    if (cancelled_) session->Cancel();
  }
  LoadResult result = session->Run();
  {
    absl::MutexLock lock(&mu_);
    session_ = nullptr;
  }
  return result;
}

void Loader::Cancel() {
  absl::MutexLock lock(&mu_);
  cancelled_ = true;
  if (session_ != nullptr) session_->Cancel();
}

}  // namespace hurray::stream::ingest
