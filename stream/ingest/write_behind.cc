#include "stream/ingest/write_behind.h"

#include <utility>

#include "absl/types/span.h"
#include "stream/container/crc32c.h"
#include "stream/container/safe_output_dir.h"

namespace hurray::stream::ingest {

WriteBehind::WriteBehind(size_t max_buffers)
    : max_buffers_(max_buffers == 0 ? 1 : max_buffers) {}

WriteBehind::~WriteBehind() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void WriteBehind::Recycle(std::vector<uint8_t> bytes) {
  --in_flight_;
  bytes.clear();
  if (free_.size() < max_buffers_) free_.push_back(std::move(bytes));
}

void WriteBehind::Run() {
  for (;;) {
    Job job;
    bool skip = false;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stop_ || !queue_.empty();
      };
      mu_.Await(absl::Condition(&ready));
      if (queue_.empty()) return;  // stopped, all written
      job = std::move(queue_.front());
      queue_.pop_front();
      skip = !job.file->error_.ok();  // a failed file's later bytes
    }
    absl::Status s;
    if (!skip) {
      File& f = *job.file;
      s = container::WriteAllFd(f.fd_, job.bytes.data(), job.bytes.size(),
                                f.what_);
    }
    absl::MutexLock lock(&mu_);
    if (!s.ok() && job.file->error_.ok()) job.file->error_ = std::move(s);
    --job.file->pending_;
    Recycle(std::move(job.bytes));
  }
}

absl::Status WriteBehind::File::Write(std::vector<uint8_t>* buf) {
  // The CRC-32C here, on the producer, while the bytes are hot in its cache:
  // the writer thread is the slower side (its write(2) alone takes what dd
  // of the same bytes takes).
  crc_ = container::Crc32cExtend(crc_, *buf);
  WriteBehind& o = *owner_;
  absl::MutexLock lock(&o.mu_);
  auto room = [&o]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(o.mu_) {
    return o.in_flight_ < o.max_buffers_;
  };
  if (error_.ok() && !buf->empty()) o.mu_.Await(absl::Condition(&room));
  if (!error_.ok()) {
    buf->clear();
    return error_;
  }
  if (buf->empty()) return absl::OkStatus();
  const size_t capacity = buf->capacity();
  o.queue_.push_back(Job{this, std::move(*buf)});
  ++pending_;
  ++o.in_flight_;
  if (o.free_.empty()) {  // at most max_buffers_ times per run
    *buf = std::vector<uint8_t>();
    buf->reserve(capacity);
  } else {
    *buf = std::move(o.free_.back());
    o.free_.pop_back();
  }
  if (!o.thread_.joinable()) o.thread_ = std::thread([&o] { o.Run(); });
  return absl::OkStatus();
}

absl::Status WriteBehind::File::Wait() {
  absl::MutexLock lock(&owner_->mu_);
  auto written = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(owner_->mu_) {
    return pending_ == 0;
  };
  owner_->mu_.Await(absl::Condition(&written));
  return error_;
}

void WriteBehind::File::Cancel() {
  WriteBehind& o = *owner_;
  absl::MutexLock lock(&o.mu_);
  for (auto it = o.queue_.begin(); it != o.queue_.end();) {
    if (it->file != this) {
      ++it;
      continue;
    }
    --pending_;
    o.Recycle(std::move(it->bytes));
    it = o.queue_.erase(it);
  }
  auto written = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(owner_->mu_) {
    return pending_ == 0;
  };
  o.mu_.Await(absl::Condition(&written));  // the one being written
}

}  // namespace hurray::stream::ingest
