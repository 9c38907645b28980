// One HTTP(S) object fetched over N connections at once (issue 47 item 2,
// `hurray ingest URL --connections N`), handed to the loader in order as a
// PullReader (stream/container/pull_reader.h), as curl's one GET would be.
//
// Open asks for the first range: `range_bytes` from byte `first` (with
// If-Range when a resumed run gives a validator; the server ends it at the
// object's end when that comes first). A 206 with the object's size starts
// the workers: the rest is cut into ranges of `range_bytes`, each fetched
// by one of `connections` workers on its own kept-alive connection
// (HttpBody::Next; worker 0 goes on on the first one) into a slot of a
// reorder window; Read hands the slots out in order, each as its bytes
// arrive. The range Read is in is not copied twice: once Read reaches it,
// its worker stops filling the slot at its next socket read and hands its
// connection over, and Read takes the range's bytes left (after those
// already in the slot) straight from that socket into the caller's
// buffer, as one connection's read would; the worker waits meanwhile and
// goes on with its next range when Read is past this one. Anything else (a 200:
// no ranges; a single range's worth) is read as the one response, exactly as
// HttpBody would; a 206 without the size is asked again for the whole rest.
//
// Memory: the window holds at most 2 x connections slots of range_bytes
// (2 x 8 x 1 MiB = 16 MiB with the defaults), one block reserved at the
// start whose pages come as first written; a worker takes range k only
// once range k - 2N has been read out.
//
// Guarantees kept from one connection:
// - Validators on every range: If-Range with the first response's strong
//   ETag (else its Last-Modified), and each 206 must give the same size
//   (and ETag, when both have one): a change is FailedPrecondition ("the
//   object changed on the server"), never bytes of two versions.
// - Each range's response is checked by HttpBody (status, a Content-Range
//   equal to the range asked for, the body's exact length); a failure is
//   reported when Read reaches that range, after every byte before it, and
//   names the range ("range bytes=A-B: ...").
// - Deadlines: every request has the HttpOptions deadlines; the total
//   timeout counts from Open for all of them.
// - Redirects and credentials: each request follows the URL's redirects
//   as HttpBody does (credentials never leave the first URL's origin).
#ifndef HURRAY_STREAM_HTTP_HTTP_PARALLEL_H_
#define HURRAY_STREAM_HTTP_HTTP_PARALLEL_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "stream/container/pull_reader.h"
#include "stream/http/http_body.h"
#include "stream/http/http_url.h"

namespace hurray::stream::http {

// The range each worker asks for at once, and the most connections.
inline constexpr uint64_t kParallelRangeBytes = 1 << 20;
inline constexpr int kMaxConnections = 32;

struct ParallelOptions {
  int connections = 2;                         // 1..kMaxConnections
  uint64_t range_bytes = kParallelRangeBytes;  // 4 KiB to 64 MiB
};

class ParallelHttpBody final : public container::PullReader {
 public:
  // `first`: the first byte wanted (a resumed run's checkpoint);
  // `if_range`: the validator its first request carries (empty: none).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<ParallelHttpBody>> Open(
      const Url& url, const HttpOptions& options,
      const ParallelOptions& parallel, uint64_t first = 0,
      const std::string& if_range = "");
  // Bytes [first, end) of an object already known (its size, the If-Range
  // validator and ETag of an earlier answer), over `connections` >= 2
  // connections without a probe: HttpRangeSource's long reads (--tensors,
  // an index-first read) with --connections. `kept`: connections of an
  // earlier read of the same URL (ReleaseConnections), asked again with
  // HttpBody::Next before any new one is made.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<ParallelHttpBody>>
  OpenKnown(const Url& url, const HttpOptions& options,
            const ParallelOptions& parallel, uint64_t first, uint64_t end,
            uint64_t size, const std::string& if_range, const std::string& etag,
            std::vector<std::unique_ptr<HttpBody>> kept = {});
  ~ParallelHttpBody() override;  // stops the workers and waits for them

  // Once Read has given every byte: stops the workers and hands their
  // connections over, each with its last response read to the end, for
  // the next OpenKnown. Empty before that, after a failure or a cancel,
  // and for one response read whole.
  [[nodiscard]] std::vector<std::unique_ptr<HttpBody>> ReleaseConnections();

  // The first response's (status 206 to `bytes=FIRST-`, or 200).
  const HttpResponseInfo& info() const { return info_; }
  // TCP connections made so far (tests).
  int connections() const;
  // The window's memory bound, in bytes (0 when read as one response).
  uint64_t window_bytes() const { return slots_.size() * range_bytes_; }

  [[nodiscard]] absl::StatusOr<size_t> Read(absl::Span<uint8_t> into) override;
  void Interrupt() override;

 private:
  // The window's memory: one block, 2 MiB-aligned when it has that much
  // (the kernel may then back it with huge pages: far fewer page faults).
  struct FreeWindow {
    size_t align;
    void operator()(uint8_t* p) const;
  };
  struct Slot {
    uint8_t* data = nullptr;      // range_bytes_ of window_
    uint64_t chunk = UINT64_MAX;  // the range it holds
    size_t filled = 0;
    bool handed = false;  // Read reads the rest from bodies_[worker]
    int worker = 0;
    bool failed = false;
    absl::Status error;
  };

  ParallelHttpBody(const Url& url, const HttpOptions& options)
      : url_(url), options_(options) {}
  // The window and the workers for [first, end); range0: range 0's answer
  // when already asked for (worker 0 reads it), else null.
  void Start(const ParallelOptions& parallel, uint64_t first, uint64_t end,
             uint64_t size, const std::string& if_range,
             const std::string& etag, std::unique_ptr<HttpBody> range0,
             std::vector<std::unique_ptr<HttpBody>> kept);
  void Work(int worker, bool preopened);
  // Fetches range `chunk` into its slot, asking for it on the worker's
  // connection (made or reused) unless `preopened`.
  absl::Status Fetch(int worker, uint64_t chunk, Slot& slot, bool preopened);
  // Read's turn in a range whose worker handed its connection over
  // (slot.handed); called and returns with `lock` held.
  absl::StatusOr<size_t> ReadHanded(Slot& slot, absl::Span<uint8_t> into,
                                    std::unique_lock<std::mutex>& lock);
  absl::Status CheckSame(const HttpResponseInfo& info) const;
  uint64_t ChunkFirst(uint64_t chunk) const {
    return first_ + chunk * range_bytes_;
  }
  uint64_t ChunkLength(uint64_t chunk) const;

  const Url url_;
  HttpOptions options_;
  std::chrono::steady_clock::time_point start_;
  HttpResponseInfo info_;
  std::unique_ptr<HttpBody> single_;  // read as one response

  uint64_t first_ = 0, end_ = 0, size_ = 0, range_bytes_ = 0, chunks_ = 0;
  std::string if_range_, etag_;

  mutable std::mutex mu_;
  std::condition_variable data_cv_;    // Read waits for its range's bytes
  std::condition_variable space_cv_;   // workers wait for a free slot
  std::condition_variable handed_cv_;  // a worker waits for Read's range
  std::vector<Slot> slots_;
  std::unique_ptr<uint8_t[], FreeWindow> window_;
  std::vector<std::unique_ptr<HttpBody>> bodies_;  // one per worker
  std::vector<std::unique_ptr<HttpBody>> spare_;   // kept, not needed now
  uint64_t next_chunk_ = 0;  // the next range a worker takes
  uint64_t read_chunk_ = 0;  // the range Read is in
  size_t read_at_ = 0;       // and where in it
  bool stop_ = false;        // a failure, Interrupt or the end
  bool interrupted_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace hurray::stream::http

#endif  // HURRAY_STREAM_HTTP_HTTP_PARALLEL_H_
