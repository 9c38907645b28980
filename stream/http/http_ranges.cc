#include "stream/http/http_ranges.h"

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "stream/http/http_parallel.h"

namespace hurray::stream::http {
namespace {

constexpr size_t kBufferBytes = 256 << 10;
// The first range asked for: the .hrry header.
constexpr uint64_t kHeadBytes = 64;

absl::Status Changed() {
  return absl::FailedPreconditionError(
      "the object changed on the server during the download (another "
      "ETag, Last-Modified or size, or HTTP 200 to a ranged If-Range "
      "request)");
}

}  // namespace

absl::StatusOr<HttpRangeSource::Opened> HttpRangeSource::Open(
    const Url& url, const HttpOptions& options, int connections) {
  std::unique_ptr<HttpRangeSource> src(
      new HttpRangeSource(url, options, connections));
  src->options_.keep_alive = true;
  src->start_ = std::chrono::steady_clock::now();
  src->buffer_.resize(kBufferBytes);
  absl::StatusOr<std::unique_ptr<HttpBody>> body =
      HttpBody::Open(url, src->options_, HttpRange{0, kHeadBytes - 1, ""});
  if (!body.ok()) return body.status();
  ++src->requests_;
  const HttpResponseInfo& info = (*body)->info();
  Opened out;
  if (info.status != 206) {
    out.whole = *std::move(body);  // no range support: one forward pass
    return out;
  }
  if (!info.object_size.has_value()) {
    return absl::UnavailableError(
        "the server answered a range request without the object's size "
        "(Content-Range: bytes .../*)");
  }
  src->size_ = *info.object_size;
  src->etag_ = info.etag;
  // RFC 9110 13.1.5: If-Range takes a strong ETag or a date.
  if (!info.etag.empty() && !absl::StartsWith(info.etag, "W/")) {
    src->if_range_ = info.etag;
  } else {
    src->if_range_ = info.last_modified;
  }
  src->head_.reserve(kHeadBytes);
  absl::Status s = src->Drain(
      body->get(), 0, kHeadBytes, [&](absl::Span<const uint8_t> piece) {
        src->head_.insert(src->head_.end(), piece.begin(), piece.end());
        return absl::OkStatus();
      });
  if (!s.ok()) return s;
  src->conn_ = *std::move(body);
  out.ranges = std::move(src);
  return out;
}

absl::Status HttpRangeSource::Drain(container::PullReader* body,
                                    uint64_t offset, uint64_t length,
                                    PieceFn feed) {
  uint64_t got = 0;
  while (got < length) {
    const size_t want =
        static_cast<size_t>(std::min<uint64_t>(buffer_.size(), length - got));
    absl::StatusOr<size_t> n = body->Read(absl::MakeSpan(buffer_.data(), want));
    if (!n.ok()) return n.status();
    if (*n == 0) {
      return absl::DataLossError(absl::StrCat("truncated: the range from byte ",
                                              offset, " ended after ", got,
                                              " of ", length, " bytes"));
    }
    got += *n;
    received_ += *n;
    absl::Status s = feed(absl::MakeConstSpan(buffer_.data(), *n));
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status HttpRangeSource::Read(uint64_t offset, uint64_t length,
                                   PieceFn feed) {
  if (offset > size_ || length > size_ - offset) {
    return absl::OutOfRangeError("the range lies outside the object");
  }
  if (length == 0) return absl::OkStatus();
  // The header came with Open.
  if (offset + length <= head_.size()) {
    return feed(absl::MakeConstSpan(head_).subspan(
        static_cast<size_t>(offset), static_cast<size_t>(length)));
  }
  if (connections_ > 1 && length >= 2 * kParallelRangeBytes) {
    return ReadParallel(offset, length, feed);
  }
  // On the kept-alive connection of the previous range when it can carry
  // it (http_body.h, Next); the total timeout counts from Open's request.
  absl::Status opened =
      conn_->Next(HttpRange{offset, offset + length - 1, if_range_});
  if (!opened.ok()) return opened;
  ++requests_;
  const HttpResponseInfo& info = conn_->info();
  if (info.status != 206 ||
      (info.object_size.has_value() && *info.object_size != size_) ||
      (!etag_.empty() && !info.etag.empty() && info.etag != etag_)) {
    return Changed();
  }
  return Drain(conn_.get(), offset, length, feed);
}

// A long range over connections_ at once, in order, with the validators
// of Open's answer (a change is refused as for one connection).
absl::Status HttpRangeSource::ReadParallel(uint64_t offset, uint64_t length,
                                           PieceFn feed) {
  HttpOptions options = options_;
  if (options.total_timeout_seconds > 0) {  // from Open, not from here
    const double left =
        options.total_timeout_seconds -
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_)
            .count();
    if (left <= 0) return absl::UnavailableError("total timeout");
    options.total_timeout_seconds = left;
  }
  ParallelOptions parallel;
  parallel.connections = connections_;
  int kept = 0;
  for (const auto& b : kept_) kept += b->connections();
  absl::StatusOr<std::unique_ptr<ParallelHttpBody>> body =
      ParallelHttpBody::OpenKnown(url_, options, parallel, offset,
                                  offset + length, size_, if_range_, etag_,
                                  std::move(kept_));
  kept_.clear();
  if (!body.ok()) {
    closed_connections_ += kept;
    return body.status();
  }
  absl::Status s = Drain(body->get(), offset, length, feed);
  // Its count includes what the kept connections had made before.
  closed_connections_ += (*body)->connections();
  if (!s.ok()) return s;
  requests_ += (length + kParallelRangeBytes - 1) / kParallelRangeBytes;
  kept_ = (*body)->ReleaseConnections();
  for (const auto& b : kept_) closed_connections_ -= b->connections();
  return absl::OkStatus();
}

int HttpRangeSource::connections() const {
  int n = conn_->connections() + closed_connections_;
  for (const auto& b : kept_) n += b->connections();
  return n;
}

}  // namespace hurray::stream::http
