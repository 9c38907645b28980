// An HTTP(S) object read by byte ranges (`hurray ingest --tensors` over
// HTTP, issue 15 § 2): a RangeSource (stream/container/range_source.h)
// whose Read asks the server for `Range: bytes=FIRST-LAST` (http_body.h
// checks the 206's Content-Range against it).
//
// Open asks for the object's first 64 bytes (the .hrry header). A 206 with
// the object's size means the server serves ranges: the source is ready,
// and every later range carries If-Range with the object's strong ETag (or
// Last-Modified), so an object that changes between two ranges answers 200
// and is refused ("changed on the server") instead of being spliced. A 200
// means no range support: Open hands that response's body back for one
// forward pass instead.
//
// The requests share one persistent connection while the server keeps it
// (issue 47: HttpBody::Next), instead of a TCP (and TLS) handshake each;
// the long reads' `connections` are kept too, from one read to the next.
// Every request has the HttpOptions deadlines; the total timeout counts
// from Open for all the requests together. Memory: one 256 KiB read
// buffer, and with `connections` > 1 the window of a long read
// (http_parallel.h: at most 2 x connections x kParallelRangeBytes).
#ifndef HURRAY_STREAM_HTTP_HTTP_RANGES_H_
#define HURRAY_STREAM_HTTP_HTTP_RANGES_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "stream/container/range_source.h"
#include "stream/http/http_body.h"
#include "stream/http/http_url.h"

namespace hurray::stream::http {

class HttpRangeSource final : public container::RangeSource {
 public:
  struct Opened {
    std::unique_ptr<HttpRangeSource> ranges;  // the server serves ranges
    std::unique_ptr<HttpBody> whole;          // or: the whole object (200)
  };
  // `connections` > 1: a Read of at least 2 x kParallelRangeBytes goes
  // over that many connections at once (http_parallel.h OpenKnown).
  [[nodiscard]] static absl::StatusOr<Opened> Open(const Url& url,
                                                   const HttpOptions& options,
                                                   int connections = 1);

  uint64_t size() const override { return size_; }
  [[nodiscard]] absl::Status Read(uint64_t offset, uint64_t length,
                                  PieceFn feed) override;

  // Requests made (Open's included), body bytes received, TCP connections.
  uint64_t requests() const { return requests_; }
  uint64_t bytes_received() const { return received_; }
  int connections() const;

 private:
  HttpRangeSource(const Url& url, const HttpOptions& options, int connections)
      : url_(url), options_(options), connections_(connections) {}
  [[nodiscard]] absl::Status ReadParallel(uint64_t offset, uint64_t length,
                                          PieceFn feed);
  // Reads `length` bytes of the range from `offset` out of `body` (one
  // connection's or the parallel reader's) into `feed`; short is an error.
  [[nodiscard]] absl::Status Drain(container::PullReader* body, uint64_t offset,
                                   uint64_t length, PieceFn feed);

  Url url_;
  HttpOptions options_;
  int connections_ = 1;
  // The latest request and its connection; each request asks for the URL
  // Open was given and follows its redirects again.
  std::unique_ptr<HttpBody> conn_;
  // The long reads' connections, kept alive for the next one
  // (ParallelHttpBody::ReleaseConnections), and the count of those closed.
  std::vector<std::unique_ptr<HttpBody>> kept_;
  int closed_connections_ = 0;
  std::chrono::steady_clock::time_point start_;  // Open's
  uint64_t size_ = 0;
  std::string if_range_;       // strong ETag or Last-Modified; may be empty
  std::string etag_;           // as first sent
  std::vector<uint8_t> head_;  // the first bytes, from Open's request
  std::vector<uint8_t> buffer_;
  uint64_t requests_ = 0, received_ = 0;
};

}  // namespace hurray::stream::http

#endif  // HURRAY_STREAM_HTTP_HTTP_RANGES_H_
