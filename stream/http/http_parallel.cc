#include "stream/http/http_parallel.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace hurray::stream::http {
namespace {

using Clock = std::chrono::steady_clock;

absl::Status Changed(uint64_t first, uint64_t last) {
  return absl::FailedPreconditionError(absl::StrCat(
      "range bytes=", first, "-", last,
      ": the object changed on the server during the download (another "
      "ETag, Last-Modified or size, or HTTP 200 to a ranged If-Range "
      "request)"));
}

// `s` with the range it happened in before its message.
absl::Status InRange(const absl::Status& s, uint64_t first, uint64_t last) {
  if (absl::StartsWith(s.message(), "range bytes=")) return s;
  return absl::Status(s.code(), absl::StrCat("range bytes=", first, "-", last,
                                             ": ", s.message()));
}

}  // namespace

absl::StatusOr<std::unique_ptr<ParallelHttpBody>> ParallelHttpBody::Open(
    const Url& url, const HttpOptions& options, const ParallelOptions& parallel,
    uint64_t first, const std::string& if_range) {
  if (parallel.connections < 1 || parallel.connections > kMaxConnections) {
    return absl::InvalidArgumentError(
        absl::StrCat("--connections must be from 1 to ", kMaxConnections,
                     ", not ", parallel.connections));
  }
  if (parallel.range_bytes < (4 << 10) ||
      parallel.range_bytes > (uint64_t{64} << 20)) {
    return absl::InvalidArgumentError(
        "the range size must be from 4 KiB to 64 MiB");
  }
  std::unique_ptr<ParallelHttpBody> p(new ParallelHttpBody(url, options));
  p->options_.keep_alive = true;
  p->start_ = Clock::now();
  // Range 0 (a server ends it at the object's end when shorter); one
  // connection asks for the whole rest at once.
  std::optional<uint64_t> last;
  if (parallel.connections > 1) last = first + parallel.range_bytes - 1;
  absl::StatusOr<std::unique_ptr<HttpBody>> body =
      HttpBody::Open(url, p->options_, HttpRange{first, last, if_range});
  if (!body.ok()) return body.status();
  p->info_ = (*body)->info();
  if (p->info_.status == 206 && !p->info_.object_size.has_value()) {
    // No size (bytes A-B/*): the rest as one response after all.
    absl::Status s = (*body)->Next(HttpRange{first, std::nullopt, if_range});
    if (!s.ok()) return s;
    p->info_ = (*body)->info();
  }
  const HttpResponseInfo& info = p->info_;
  const uint64_t rest =
      info.object_size.has_value() && *info.object_size > first
          ? *info.object_size - first
          : 0;
  if (info.status != 206 || !info.object_size.has_value() ||
      parallel.connections == 1 || rest <= parallel.range_bytes) {
    p->single_ = *std::move(body);  // one response, read as it comes
    return p;
  }
  // RFC 9110 13.1.5: If-Range takes a strong ETag or a date.
  std::string validator = if_range;
  if (validator.empty()) {
    validator = !info.etag.empty() && !absl::StartsWith(info.etag, "W/")
                    ? info.etag
                    : info.last_modified;
  }
  p->Start(parallel, first, *info.object_size, *info.object_size, validator,
           info.etag, *std::move(body), {});
  return p;
}

absl::StatusOr<std::unique_ptr<ParallelHttpBody>> ParallelHttpBody::OpenKnown(
    const Url& url, const HttpOptions& options, const ParallelOptions& parallel,
    uint64_t first, uint64_t end, uint64_t size, const std::string& if_range,
    const std::string& etag, std::vector<std::unique_ptr<HttpBody>> kept) {
  if (parallel.connections < 2 || parallel.connections > kMaxConnections ||
      parallel.range_bytes < (4 << 10) || first >= end || end > size) {
    return absl::InvalidArgumentError("ParallelHttpBody::OpenKnown");
  }
  std::unique_ptr<ParallelHttpBody> p(new ParallelHttpBody(url, options));
  p->options_.keep_alive = true;
  p->start_ = Clock::now();
  p->info_.status = 206;
  p->info_.object_size = size;
  p->info_.etag = etag;
  p->Start(parallel, first, end, size, if_range, etag, nullptr,
           std::move(kept));
  return p;
}

void ParallelHttpBody::Start(const ParallelOptions& parallel, uint64_t first,
                             uint64_t end, uint64_t size,
                             const std::string& if_range,
                             const std::string& etag,
                             std::unique_ptr<HttpBody> range0,
                             std::vector<std::unique_ptr<HttpBody>> kept) {
  first_ = first;
  end_ = end;
  size_ = size;
  range_bytes_ = parallel.range_bytes;
  chunks_ = (end - first + range_bytes_ - 1) / range_bytes_;
  if_range_ = if_range;
  etag_ = etag;
  const int n =
      static_cast<int>(std::min<uint64_t>(parallel.connections, chunks_));
  slots_.resize(std::min<uint64_t>(2 * static_cast<uint64_t>(n), chunks_));
  // Untouched until a worker fills a slot: pages come as first written.
  constexpr size_t kHugePage = size_t{2} << 20;
  const size_t bytes = slots_.size() * static_cast<size_t>(range_bytes_);
  const size_t align = bytes >= kHugePage ? kHugePage : 64;
  const size_t rounded = (bytes + align - 1) / align * align;
  window_ = std::unique_ptr<uint8_t[], FreeWindow>(
      static_cast<uint8_t*>(::operator new[](rounded, std::align_val_t(align))),
      FreeWindow{align});
  if (align == kHugePage) {
    (void)::madvise(window_.get(), rounded, MADV_HUGEPAGE);  // a hint
  }
  for (size_t i = 0; i < slots_.size(); ++i) {
    slots_[i].data = window_.get() + i * range_bytes_;
  }
  bodies_.resize(n);
  const bool preopened = range0 != nullptr;
  if (preopened) {
    bodies_[0] = std::move(range0);  // worker 0 reads range 0 from it
    next_chunk_ = 1;
    slots_[0].chunk = 0;
  }
  for (auto& b : kept) {  // workers without a connection take these
    if (b == nullptr) continue;
    auto free = std::find(bodies_.begin(), bodies_.end(), nullptr);
    if (free != bodies_.end()) {
      *free = std::move(b);
    } else {
      spare_.push_back(std::move(b));
    }
  }
  workers_.reserve(n);
  for (int w = 0; w < n; ++w) {
    workers_.emplace_back(
        [this, w, preopened] { Work(w, w == 0 && preopened); });
  }
}

ParallelHttpBody::~ParallelHttpBody() {
  Interrupt();
  for (std::thread& t : workers_) t.join();
}

int ParallelHttpBody::connections() const {
  if (single_ != nullptr) return single_->connections();
  std::lock_guard<std::mutex> lock(mu_);
  int n = 0;
  for (const auto& b : bodies_) {
    if (b != nullptr) n += b->connections();
  }
  for (const auto& b : spare_) n += b->connections();
  return n;
}

std::vector<std::unique_ptr<HttpBody>> ParallelHttpBody::ReleaseConnections() {
  std::vector<std::unique_ptr<HttpBody>> out;
  if (single_ != nullptr) return out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Every range read out means every request made was answered in full
    // (a failed one stops Read at its range).
    if (interrupted_ || read_chunk_ < chunks_) return out;
    stop_ = true;
    space_cv_.notify_all();
    handed_cv_.notify_all();
  }
  for (std::thread& t : workers_) t.join();
  workers_.clear();
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& b : bodies_) {
    if (b != nullptr) out.push_back(std::move(b));
  }
  for (auto& b : spare_) out.push_back(std::move(b));
  spare_.clear();
  return out;
}

void ParallelHttpBody::FreeWindow::operator()(uint8_t* p) const {
  ::operator delete[](p, std::align_val_t(align));
}

uint64_t ParallelHttpBody::ChunkLength(uint64_t chunk) const {
  return std::min<uint64_t>(range_bytes_, end_ - ChunkFirst(chunk));
}

void ParallelHttpBody::Interrupt() {
  if (single_ != nullptr) {
    single_->Interrupt();
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  interrupted_ = true;
  stop_ = true;
  for (auto& b : bodies_) {
    if (b != nullptr) b->Interrupt();
  }
  data_cv_.notify_all();
  space_cv_.notify_all();
  handed_cv_.notify_all();
}

void ParallelHttpBody::Work(int worker, bool preopened) {
  bool first = preopened;  // range 0 is already asked for
  for (;;) {
    uint64_t chunk = 0;
    Slot* slot = nullptr;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (first) {
        chunk = 0;
      } else {
        space_cv_.wait(lock, [&] {
          return stop_ || next_chunk_ >= chunks_ ||
                 next_chunk_ < read_chunk_ + slots_.size();
        });
        if (stop_ || next_chunk_ >= chunks_) return;
        chunk = next_chunk_++;
        Slot& s = slots_[chunk % slots_.size()];
        s.chunk = chunk;
        s.filled = 0;
        s.handed = false;
        s.failed = false;
        s.error = absl::OkStatus();
      }
      slot = &slots_[chunk % slots_.size()];
    }
    const bool pre = first;
    first = false;
    absl::Status s = Fetch(worker, chunk, *slot, pre);
    std::lock_guard<std::mutex> lock(mu_);
    if (!s.ok()) {
      slot->failed = true;
      slot->error = InRange(s, ChunkFirst(chunk),
                            ChunkFirst(chunk) + ChunkLength(chunk) - 1);
      stop_ = true;  // no more ranges; Read reports this one in its turn
      data_cv_.notify_one();  // Read may be waiting for it
      space_cv_.notify_all();
    }
  }
}

absl::Status ParallelHttpBody::CheckSame(const HttpResponseInfo& info) const {
  if (info.status != 206 ||
      (info.object_size.has_value() && *info.object_size != size_) ||
      (!etag_.empty() && !info.etag.empty() && info.etag != etag_)) {
    return absl::FailedPreconditionError("changed");
  }
  return absl::OkStatus();
}

absl::Status ParallelHttpBody::Fetch(int worker, uint64_t chunk, Slot& slot,
                                     bool preopened) {
  const uint64_t first = ChunkFirst(chunk);
  const uint64_t length = ChunkLength(chunk);
  const uint64_t last = first + length - 1;
  // Only this worker replaces bodies_[worker]; the others read it under mu_.
  HttpBody* body = bodies_[worker].get();
  if (!preopened) {
    const HttpRange range{first, last, if_range_};
    if (body != nullptr) {
      absl::Status s = body->Next(range);
      if (!s.ok()) return s;
    } else {
      HttpOptions o = options_;
      if (o.total_timeout_seconds > 0) {
        const double left =
            o.total_timeout_seconds -
            std::chrono::duration<double>(Clock::now() - start_).count();
        if (left <= 0) return absl::UnavailableError("total timeout");
        o.total_timeout_seconds = left;
      }
      absl::StatusOr<std::unique_ptr<HttpBody>> b = HttpBody::Make(o);
      if (!b.ok()) return b.status();
      {
        // Seen by Interrupt before it connects: a cancel ends the
        // connecting and the wait for the header at once, not at their
        // timeouts.
        std::lock_guard<std::mutex> lock(mu_);
        bodies_[worker] = *std::move(b);
        body = bodies_[worker].get();
        if (interrupted_) body->Interrupt();
      }
      absl::Status s = body->Start(url_, range);
      if (!s.ok()) return s;
    }
    if (!CheckSame(body->info()).ok()) return Changed(first, last);
  }
  size_t filled = 0;
  while (filled < length) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (chunk == read_chunk_) {
        // Read is in this range: it reads the rest from this connection
        // into its caller's buffer (and reports its failure itself).
        slot.handed = true;
        slot.worker = worker;
        data_cv_.notify_one();
        handed_cv_.wait(lock, [&] { return stop_ || !slot.handed; });
        return absl::OkStatus();
      }
    }
    absl::StatusOr<size_t> n = body->Read(absl::MakeSpan(
        slot.data + filled, static_cast<size_t>(length - filled)));
    if (!n.ok()) return n.status();
    if (*n == 0) {
      return absl::DataLossError(
          absl::StrCat("truncated: the range ended after ", filled, " of ",
                       length, " bytes"));
    }
    filled += *n;
    std::lock_guard<std::mutex> lock(mu_);
    slot.filled = filled;
    // Read waits only for the range it is in.
    if (chunk == read_chunk_) data_cv_.notify_one();
  }
  return absl::OkStatus();
}

absl::StatusOr<size_t> ParallelHttpBody::Read(absl::Span<uint8_t> into) {
  if (single_ != nullptr) return single_->Read(into);
  if (into.empty()) return size_t{0};
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (interrupted_) return absl::UnavailableError("cancelled");
    if (read_chunk_ >= chunks_) return size_t{0};
    Slot& slot = slots_[read_chunk_ % slots_.size()];
    if (slot.chunk == read_chunk_ && slot.filled > read_at_) {
      const size_t n = std::min(into.size(), slot.filled - read_at_);
      const uint8_t* from = slot.data + read_at_;
      // The bytes [read_at_, filled) stay put until this range is read
      // out: copy them without the lock.
      lock.unlock();
      std::memcpy(into.data(), from, n);
      lock.lock();
      read_at_ += n;
      if (read_at_ == ChunkLength(read_chunk_)) {
        ++read_chunk_;
        read_at_ = 0;
        space_cv_.notify_one();  // a slot is free
      }
      return n;
    }
    if (slot.chunk == read_chunk_ && slot.failed) return slot.error;
    if (slot.chunk == read_chunk_ && slot.handed)
      return ReadHanded(slot, into, lock);
    data_cv_.wait(lock);
  }
}

absl::StatusOr<size_t> ParallelHttpBody::ReadHanded(
    Slot& slot, absl::Span<uint8_t> into, std::unique_lock<std::mutex>& lock) {
  const uint64_t first = ChunkFirst(read_chunk_);
  const uint64_t length = ChunkLength(read_chunk_);
  // The worker waits until the range is read out (or stop_): only Read
  // uses its connection meanwhile.
  HttpBody* body = bodies_[slot.worker].get();
  const size_t want =
      static_cast<size_t>(std::min<uint64_t>(into.size(), length - read_at_));
  lock.unlock();
  absl::StatusOr<size_t> n = body->Read(into.first(want));
  lock.lock();
  if (interrupted_) return absl::UnavailableError("cancelled");
  absl::Status error;
  if (!n.ok()) {
    error = n.status();
  } else if (*n == 0) {
    error =
        absl::DataLossError(absl::StrCat("truncated: the range ended after ",
                                         read_at_, " of ", length, " bytes"));
  }
  if (!error.ok()) {
    slot.failed = true;
    slot.error = InRange(error, first, first + length - 1);
    slot.handed = false;
    stop_ = true;
    space_cv_.notify_all();
    handed_cv_.notify_all();
    return slot.error;
  }
  read_at_ += *n;
  if (read_at_ == length) {
    slot.handed = false;
    ++read_chunk_;
    read_at_ = 0;
    handed_cv_.notify_all();  // its worker goes on
    space_cv_.notify_one();   // a slot is free
  }
  return *n;
}

}  // namespace hurray::stream::http
