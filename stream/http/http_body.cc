// Opening (redirects) and the response's body; the connection under it is
// in http_body_connection.cc, the class in http_body_impl.h.
#include "stream/http/http_body.h"

#include <openssl/ssl.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "stream/http/http_body_impl.h"
#include "stream/http/socket_body_reader.h"

namespace hurray::stream::http {
namespace {

namespace http = body_internal::http;
namespace ssl = body_internal::ssl;
using body_internal::Clock;
using body_internal::error_code;
using body_internal::IsRedirect;
using body_internal::Printable;
using body_internal::Sv;

}  // namespace

HttpBody::Impl::Impl(const HttpOptions& options)
    : options_(options), ssl_ctx_(ssl::context::tls_client) {
  start_ = Clock::now();
}

HttpBody::Impl::~Impl() { Close(); }

absl::Status HttpBody::Impl::Open(const Url& first_url,
                                  const std::optional<HttpRange>& range) {
  first_url_ = first_url;
  if (first_url.tls && !tls_ready_) {
    absl::Status s = SetUpTls();
    if (!s.ok()) return s;
  }
  Url url = first_url;
  for (int hop = 0;; ++hop) {
    absl::Status s = Connect(url);
    if (!s.ok()) return s;
    s = SendRequest(url, first_url, range);
    if (!s.ok()) return s;
    s = ReadFinalHeader(url, nullptr);
    if (!s.ok()) return s;
    const auto& msg = parser_->get();
    const int status = static_cast<int>(msg.result_int());
    if (!IsRedirect(status)) break;
    const auto location = msg.find(http::field::location);
    if (location == msg.end()) {
      return Error(absl::StrCat("HTTP ", status, " without a Location"));
    }
    if (hop >= options_.max_redirects) {
      return Error(
          absl::StrCat("more than ", options_.max_redirects, " redirects"));
    }
    absl::StatusOr<Url> next = ResolveLocation(url, Sv(location->value()));
    if (!next.ok()) {
      return Error(absl::StrCat("redirect: ", next.status().message()));
    }
    if (url.tls && !next->tls) {
      return Error(absl::StrCat("refusing a redirect from https to http (",
                                Printable(next->ToString()), ")"));
    }
    if (next->tls && !tls_ready_) {
      absl::Status t = SetUpTls();
      if (!t.ok()) return t;
    }
    Close();
    url = *std::move(next);
    info_.redirects = hop + 1;
  }
  info_.url = url;
  absl::Status checked = CheckResponse(range);
  if (checked.ok() && info_.status == 206) {
    // What the Content-Range promises, whatever the framing (chunked, or
    // to the end of the connection): ReadParsed holds the body to it.
    range_length_ = info_.range_last - info_.range_first + 1;
  }
  if (!checked.ok() || info_.chunked || !info_.content_length.has_value()) {
    return checked;
  }
  // A known length: the body comes straight from the socket from here on.
  const int fd = tls_ != nullptr ? tls_->lowest_layer().native_handle()
                                 : tcp_->native_handle();
  absl::StatusOr<std::unique_ptr<SocketBodyReader>> reader =
      SocketBodyReader::Create(
          fd, tls_ != nullptr ? tls_->native_handle() : nullptr);
  if (!reader.ok()) return Error(reader.status().message());
  {
    // Interrupt (another thread) sees the old reader or this one.
    std::lock_guard<std::mutex> lock(direct_mu_);
    direct_ = *std::move(reader);
    if (interrupted_) direct_->Interrupt();
  }
  return absl::OkStatus();
}

absl::StatusOr<size_t> HttpBody::Impl::Read(absl::Span<uint8_t> into) {
  if (pending_error_.has_value()) {
    absl::Status s = *pending_error_;
    pending_error_.reset();
    return s;
  }
  if (interrupted_) return Error("cancelled");
  if (parser_ == nullptr || into.empty()) return size_t{0};
  // The idle timeout counts from here: the time the consumer kept us
  // away from the socket is not the server's silence.
  last_progress_ = Clock::now();
  return direct_ != nullptr ? ReadDirect(into) : ReadParsed(into);
}

absl::Status HttpBody::Impl::Next(const std::optional<HttpRange>& range) {
  if (interrupted_) return Error("cancelled");
  if (Reusable()) {
    bool redo = false;
    absl::Status s = RequestAgain(range, &redo);
    if (s.ok() || !redo) return s;
    // Closed before any byte of the answer, or an answer this path does
    // not read (a redirect, a body without Content-Length): once more,
    // on a new connection.
  }
  Close();
  ResetResponse();
  return Open(first_url_, range);
}

// The connection can carry another request: kept alive on both sides,
// the body read to its Content-Length straight from the socket, nothing
// after it, no redirect (the connection is the first URL's origin's).
bool HttpBody::Impl::Reusable() const {
  return options_.keep_alive && !interrupted_ && direct_ != nullptr &&
         parser_ != nullptr && !pending_error_.has_value() &&
         info_.redirects == 0 && info_.content_length.has_value() &&
         received_ == *info_.content_length && buffer_.size() == 0 &&
         parser_->keep_alive();
}

// The state of one response, before the next request.
void HttpBody::Impl::ResetResponse() {
  if (watchdog_armed_) {
    watchdog_.cancel();
    io_.restart();
    io_.poll();
  }
  watchdog_armed_ = false;
  watchdog_expired_ = false;
  info_ = HttpResponseInfo{};
  received_ = 0;
  pending_error_.reset();
  range_length_.reset();
  last_progress_ = Clock::now();
}

// A request on the kept-alive connection, through the SocketBodyReader
// that owns its transport since the first body (the TLS session goes on
// through its BIO). *redo: the request can be made again on a new
// connection (the server closed this one before answering, or answered
// with a redirect or a body without Content-Length, unread).
absl::Status HttpBody::Impl::RequestAgain(const std::optional<HttpRange>& range,
                                          bool* redo) {
  ResetResponse();
  const Url& url = first_url_;
  std::ostringstream head;
  head << MakeRequest(url, first_url_, range);
  const std::string bytes = head.str();
  const SocketBodyReader::Result w = direct_->Write(
      absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(bytes.data()),
                          bytes.size()),
      IdleDeadline());
  using Outcome = SocketBodyReader::Outcome;
  switch (w.outcome) {
    case Outcome::kOk:
      break;
    case Outcome::kTimeout:
      return Error(TimeoutName("idle timeout (sending the request)"));
    case Outcome::kInterrupted:
      return Error("cancelled");
    default:
      *redo = true;
      return Error(absl::StrCat("cannot send the request: ", w.error));
  }
  absl::Status s = ReadFinalHeader(url, redo);
  if (!s.ok()) return s;
  info_.url = url;
  if (IsRedirect(static_cast<int>(parser_->get().result_int()))) {
    *redo = true;
    return Error("a redirect on a kept-alive connection");
  }
  s = CheckResponse(range);
  if (!s.ok()) return s;
  if (info_.chunked || !info_.content_length.has_value()) {
    *redo = true;
    return Error("a body without Content-Length on a kept-alive connection");
  }
  if (info_.status == 206) {
    range_length_ = info_.range_last - info_.range_first + 1;
  }
  return absl::OkStatus();
}

// A body of known length that is not chunked: Beast parsed the header,
// the rest is counted here and read straight from the socket into the
// caller's buffer (socket_body_reader.h).
absl::StatusOr<size_t> HttpBody::Impl::ReadDirect(absl::Span<uint8_t> into) {
  const uint64_t remaining = *info_.content_length - received_;
  const size_t want =
      static_cast<size_t>(std::min<uint64_t>(into.size(), remaining));
  size_t filled = 0;
  if (buffer_.size() > 0) {  // bytes that came with the header
    filled = std::min(buffer_.size(), want);
    std::memcpy(into.data(), static_cast<const uint8_t*>(buffer_.data().data()),
                filled);
    buffer_.consume(filled);
    received_ += filled;
  }
  if (filled > 0 || want == 0) return filled;
  const SocketBodyReader::Result r =
      direct_->Read(into.first(want), BodyDeadline());
  filled = r.bytes;
  received_ += r.bytes;
  using Outcome = SocketBodyReader::Outcome;
  if (r.outcome == Outcome::kOk) return filled;
  absl::Status s;
  switch (r.outcome) {
    case Outcome::kEnd:
      s = Truncated();
      break;
    case Outcome::kTimeout:
      s = Error(TimeoutName("idle timeout"));
      break;
    case Outcome::kInterrupted:
      s = Error("cancelled");
      break;
    default:
      s = Error(absl::StrCat("reading the body failed: ", r.error));
      break;
  }
  if (filled == 0) return s;
  pending_error_ = std::move(s);
  return filled;
}

// Chunked bodies (and any other framing Beast knows): through the
// parser, which copies the body out of buffer_.
absl::StatusOr<size_t> HttpBody::Impl::ReadParsed(absl::Span<uint8_t> into) {
  if (range_length_.has_value()) {
    // A 206: at most one byte past the range, to see a body that goes on.
    const uint64_t room =
        *range_length_ - std::min(received_, *range_length_) + 1;
    if (into.size() > room) into = into.first(static_cast<size_t>(room));
  }
  absl::StatusOr<size_t> n = ReadParsedSome(into);
  if (!n.ok() || !range_length_.has_value()) return n;
  return HoldToRange(*n);
}

// A 206 read through the parser (chunked, or to the end of the
// connection) has exactly the Content-Range's length: the bytes past it
// are dropped and an error follows the ones before; a body that ends
// short of it is an error too (never a quiet end).
absl::StatusOr<size_t> HttpBody::Impl::HoldToRange(size_t filled) {
  absl::Status s;
  if (received_ > *range_length_) {
    const uint64_t extra = received_ - *range_length_;
    filled -= static_cast<size_t>(extra);
    received_ = *range_length_;
    s = Error(absl::StrCat("the HTTP 206 body goes on past the ",
                           *range_length_, " bytes of its Content-Range"));
  } else if (parser_->is_done() && received_ < *range_length_) {
    s = Error(absl::StrCat("the HTTP 206 body ended after ", received_,
                           " of the ", *range_length_,
                           " bytes of its Content-Range"));
  } else {
    return filled;
  }
  if (filled == 0) return s;
  pending_error_ = std::move(s);
  return filled;
}

absl::StatusOr<size_t> HttpBody::Impl::ReadParsedSome(
    absl::Span<uint8_t> into) {
  size_t filled = 0;
  // One real wait at most: after the first bytes, only what is already
  // there is read (no byte is held back waiting for more).
  while (filled < into.size() && !parser_->is_done() &&
         (filled == 0 || MoreReady())) {
    auto& body = parser_->get().body();
    body.data = into.data() + filled;
    body.size = into.size() - filled;
    error_code ec;
    size_t parsed = 0;  // framing included (chunk headers, trailers)
    bool done = false;
    WithStream([&](auto& s) {
      http::async_read_some(s, buffer_, *parser_,
                            [&](const error_code& e, size_t n) {
                              ec = e;
                              parsed = n;
                              done = true;
                            });
    });
    const bool in_time = WaitBody(&done);
    const size_t got = into.size() - filled - body.size;
    filled += got;
    received_ += got;
    if (ec == http::error::need_buffer) ec = {};
    if (ec == http::error::end_of_stream && parser_->is_done()) ec = {};
    if (ec || !in_time) return Failed(ec, in_time, filled);
    if (got > 0 || parsed > 0) last_progress_ = Clock::now();
  }
  return filled;
}

// A failed body read: the error now, or after the `filled` bytes that
// came before it (the next Read returns it).
absl::StatusOr<size_t> HttpBody::Impl::Failed(const error_code& ec,
                                              bool in_time, size_t filled) {
  absl::Status s = BodyError(ec, in_time);
  if (filled == 0) return s;
  pending_error_ = std::move(s);
  return filled;
}

// More body bytes can be parsed without waiting (or almost: a TLS record
// that started arriving).
bool HttpBody::Impl::MoreReady() {
  if (buffer_.size() > 0) return true;
  error_code ec;
  if (tls_ != nullptr) {
    // Decrypted bytes, or (read-ahead) records not yet decrypted.
    if (SSL_has_pending(tls_->native_handle()) == 1) return true;
    return tls_->lowest_layer().available(ec) > 0 && !ec;
  }
  return tcp_ != nullptr && tcp_->available(ec) > 0 && !ec;
}

absl::StatusOr<std::unique_ptr<HttpBody>> HttpBody::Open(
    const Url& url, const HttpOptions& options,
    const std::optional<HttpRange>& range) {
  absl::StatusOr<std::unique_ptr<HttpBody>> body = Make(options);
  if (!body.ok()) return body.status();
  absl::Status s = (*body)->Start(url, range);
  if (!s.ok()) return s;
  return body;
}

absl::StatusOr<std::unique_ptr<HttpBody>> HttpBody::Make(
    const HttpOptions& options) {
  if (options.headers.size() > kMaxExtraHeaders) {
    return absl::InvalidArgumentError("too many --header options");
  }
  return std::unique_ptr<HttpBody>(
      new HttpBody(std::make_unique<Impl>(options)));
}

absl::Status HttpBody::Start(const Url& url,
                             const std::optional<HttpRange>& range) {
  return impl_->Open(url, range);
}

HttpBody::HttpBody(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpBody::~HttpBody() = default;

const HttpResponseInfo& HttpBody::info() const { return impl_->info(); }
uint64_t HttpBody::received() const { return impl_->received(); }

absl::StatusOr<size_t> HttpBody::Read(absl::Span<uint8_t> into) {
  return impl_->Read(into);
}

absl::Status HttpBody::Next(const std::optional<HttpRange>& range) {
  return impl_->Next(range);
}

int HttpBody::connections() const { return impl_->connections(); }

void HttpBody::Interrupt() { impl_->Interrupt(); }

}  // namespace hurray::stream::http
