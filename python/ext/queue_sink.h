// The queue between a loader thread and Python's (net_bindings.cc,
// http_bindings.cc): completed tensors wait in a queue of bounded size for
// Python to take them, and a full queue holds the reader back (so the
// source is read no faster than Python consumes).
#ifndef HURRAY_PYTHON_EXT_QUEUE_SINK_H_
#define HURRAY_PYTHON_EXT_QUEUE_SINK_H_

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "parser/descriptor.h"
#include "stream/container/tensor_sink.h"

namespace hurray::python {

// One tensor as it arrived: its key, descriptor and buffers.
struct Arrived {
  std::string key;
  std::unique_ptr<TensorDescriptor> descriptor;
  std::vector<std::string> buffers;
  size_t bytes = 0;
};

// Collects tensors on the loader's thread; hands them to Python's.
class QueueSink : public stream::TensorSink {
 public:
  explicit QueueSink(size_t max_queued_bytes)
      : max_queued_bytes_(max_queued_bytes) {}

  [[nodiscard]] absl::Status OnTensorKey(absl::string_view key) override {
    current_.key = std::string(key);
    return absl::OkStatus();
  }
  [[nodiscard]] absl::Status OnDescriptor(const TensorDescriptor& d) override {
    current_.descriptor = std::make_unique<TensorDescriptor>(d);
    current_.buffers.assign(d.buffer_count, std::string());
    current_.bytes = 0;
    return absl::OkStatus();
  }
  [[nodiscard]] absl::Status OnBufferPiece(
      uint32_t index, uint64_t /*offset*/,
      absl::Span<const uint8_t> piece) override {
    current_.buffers[index].append(reinterpret_cast<const char*>(piece.data()),
                                   piece.size());
    current_.bytes += piece.size();
    return absl::OkStatus();
  }
  [[nodiscard]] absl::Status OnTensorEnd() override {
    std::unique_lock<std::mutex> lock(mu_);
    // Back-pressure: wait while the queue is full (one tensor always fits).
    room_.wait(lock, [&] {
      return stopped_ || queue_.empty() ||
             queued_bytes_ + current_.bytes <= max_queued_bytes_;
    });
    // Python is gone: the reader stops here.
    if (stopped_) return absl::CancelledError("cancelled");
    queued_bytes_ += current_.bytes;
    queue_.push_back(std::move(current_));
    current_ = Arrived();
    ready_.notify_all();
    return absl::OkStatus();
  }

  // The loader finished with `status`.
  void End(absl::Status status) {
    std::lock_guard<std::mutex> lock(mu_);
    ended_ = true;
    status_ = std::move(status);
    ready_.notify_all();
  }
  // Python is gone: release a waiting loader thread.
  void Stop() {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
    room_.notify_all();
  }
  // Waits for the next tensor: true with `out` filled, or false at the end
  // (`status` says how it ended).
  bool Next(Arrived* out, absl::Status* status) {
    std::unique_lock<std::mutex> lock(mu_);
    ready_.wait(lock, [&] { return !queue_.empty() || ended_; });
    if (queue_.empty()) {
      *status = status_;
      return false;
    }
    *out = std::move(queue_.front());
    queue_.pop_front();
    queued_bytes_ -= out->bytes;
    room_.notify_all();
    return true;
  }

 private:
  const size_t max_queued_bytes_;
  Arrived current_;  // the loader thread's only
  std::mutex mu_;
  std::condition_variable ready_, room_;
  std::deque<Arrived> queue_;
  size_t queued_bytes_ = 0;
  bool ended_ = false, stopped_ = false;
  absl::Status status_;
};

}  // namespace hurray::python

#endif  // HURRAY_PYTHON_EXT_QUEUE_SINK_H_
