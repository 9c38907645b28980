#include "stream/convert/chunk_pipeline.h"

#include <condition_variable>
#include <mutex>
#include <thread>

namespace hurray::stream::convert {
namespace {

// What the two threads share, under `mu`.
struct Ring {
  std::mutex mu;
  std::condition_variable cv;
  uint64_t made = 0;    // chunks [0, made) are filled
  uint64_t taken = 0;   // chunks [0, taken) are put: their slots are free
  bool stop = false;    // put failed: make no more
  bool ended = false;   // the worker made its last chunk or failed
  absl::Status failed;  // make's error, for chunk `made`
};

absl::Status Threaded(uint64_t chunks, MakeChunk make, PutChunk put) {
  Ring r;
  std::vector<std::vector<uint8_t>> slots(kPipelineDepth);
  std::thread worker([&] {
    absl::Status s;
    for (uint64_t i = 0; i < chunks && s.ok(); ++i) {
      {
        std::unique_lock<std::mutex> lock(r.mu);
        // Chunk i - kPipelineDepth, the slot's last, must have been put.
        r.cv.wait(lock, [&] { return r.stop || i < r.taken + kPipelineDepth; });
        if (r.stop) break;
      }
      s = make(i, &slots[i % kPipelineDepth]);
      std::lock_guard<std::mutex> lock(r.mu);
      if (s.ok()) {
        r.made = i + 1;
      } else {
        r.failed = s;
      }
      r.cv.notify_all();
    }
    std::lock_guard<std::mutex> lock(r.mu);
    r.ended = true;
    r.cv.notify_all();
  });
  absl::Status result;
  for (uint64_t i = 0; i < chunks; ++i) {
    {
      std::unique_lock<std::mutex> lock(r.mu);
      r.cv.wait(lock, [&] { return r.made > i || r.ended; });
      if (r.made <= i) {  // make(i) failed
        result = r.failed;
        break;
      }
    }
    result = put(slots[i % kPipelineDepth]);
    std::lock_guard<std::mutex> lock(r.mu);
    r.taken = i + 1;
    if (!result.ok()) r.stop = true;
    r.cv.notify_all();
    if (!result.ok()) break;
  }
  worker.join();
  return result;
}

}  // namespace

absl::Status RunChunks(uint64_t chunks, bool threaded, MakeChunk make,
                       PutChunk put, std::vector<uint8_t>* scratch) {
  if (threaded && chunks >= 2) return Threaded(chunks, make, put);
  for (uint64_t i = 0; i < chunks; ++i) {
    absl::Status s = make(i, scratch);
    if (s.ok()) s = put(*scratch);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace hurray::stream::convert
