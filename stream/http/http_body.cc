#include "stream/http/http_body.h"

#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstring>
#include <functional>
#include <mutex>
#include <sstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "stream/http/socket_body_reader.h"

namespace hurray::stream::http {
namespace {

namespace asio = boost::asio;
namespace ssl = boost::asio::ssl;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using boost::system::error_code;

// Read buffer of the connection (the parser's input); the body itself goes
// straight to the loader's slot.
constexpr size_t kReadBufferBytes = 256 << 10;

Clock::duration Seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(s));
}

bool IsRedirect(int status) {
  return status == 301 || status == 302 || status == 303 || status == 307 ||
         status == 308;
}

std::string Printable(absl::string_view s, size_t max = 120) {
  return PrintableAscii(s, max);
}

absl::string_view Sv(boost::beast::string_view s) {
  return absl::string_view(s.data(), s.size());
}

}  // namespace

class HttpBody::Impl {
 public:
  Impl(const HttpOptions& options)
      : options_(options), ssl_ctx_(ssl::context::tls_client) {
    start_ = Clock::now();
  }

  ~Impl() { Close(); }

  absl::Status Open(const Url& first_url,
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

  absl::StatusOr<size_t> Read(absl::Span<uint8_t> into) {
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

  absl::Status Next(const std::optional<HttpRange>& range) {
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

  void Interrupt() {
    interrupted_ = true;
    {
      std::lock_guard<std::mutex> lock(direct_mu_);
      if (direct_ != nullptr) direct_->Interrupt();
    }
    asio::post(io_, [this] { Abort(); });
  }

  const HttpResponseInfo& info() const { return info_; }
  uint64_t received() const { return received_; }
  int connections() const { return connections_; }

 private:
  // The connection can carry another request: kept alive on both sides,
  // the body read to its Content-Length straight from the socket, nothing
  // after it, no redirect (the connection is the first URL's origin's).
  bool Reusable() const {
    return options_.keep_alive && !interrupted_ && direct_ != nullptr &&
           parser_ != nullptr && !pending_error_.has_value() &&
           info_.redirects == 0 && info_.content_length.has_value() &&
           received_ == *info_.content_length && buffer_.size() == 0 &&
           parser_->keep_alive();
  }

  // The state of one response, before the next request.
  void ResetResponse() {
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
  absl::Status RequestAgain(const std::optional<HttpRange>& range, bool* redo) {
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
  absl::StatusOr<size_t> ReadDirect(absl::Span<uint8_t> into) {
    const uint64_t remaining = *info_.content_length - received_;
    const size_t want =
        static_cast<size_t>(std::min<uint64_t>(into.size(), remaining));
    size_t filled = 0;
    if (buffer_.size() > 0) {  // bytes that came with the header
      filled = std::min(buffer_.size(), want);
      std::memcpy(into.data(),
                  static_cast<const uint8_t*>(buffer_.data().data()), filled);
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
  absl::StatusOr<size_t> ReadParsed(absl::Span<uint8_t> into) {
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
  absl::StatusOr<size_t> HoldToRange(size_t filled) {
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

  absl::StatusOr<size_t> ReadParsedSome(absl::Span<uint8_t> into) {
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
  absl::StatusOr<size_t> Failed(const error_code& ec, bool in_time,
                                size_t filled) {
    absl::Status s = BodyError(ec, in_time);
    if (filled == 0) return s;
    pending_error_ = std::move(s);
    return filled;
  }

  // The body's deadline: idle_timeout after the last progress, capped by
  // the total timeout; max() when neither is set.
  Clock::time_point BodyDeadline() const {
    Clock::time_point d = Clock::time_point::max();
    if (options_.idle_timeout_seconds > 0) {
      d = last_progress_ + Seconds(options_.idle_timeout_seconds);
    }
    if (options_.total_timeout_seconds > 0) {
      d = std::min(d, start_ + Seconds(options_.total_timeout_seconds));
    }
    return d;
  }

  // Parsed (chunked) body reads are timed by one watchdog, armed once and
  // moved forward only when it fires early, instead of a timer set and
  // cancelled around every read: a TLS record is 16 KiB, so a GiB is 65,536
  // reads, and each timer change is a timerfd_settime system call.
  void ArmWatchdog(Clock::time_point at) {
    watchdog_armed_ = true;
    watchdog_.expires_at(at);
    watchdog_.async_wait([this](const error_code& ec) {
      if (ec) return;  // cancelled
      const Clock::time_point due = BodyDeadline();
      if (Clock::now() < due) {
        ArmWatchdog(due);
        return;
      }
      watchdog_armed_ = false;
      watchdog_expired_ = true;
      Abort();
    });
  }

  // Runs the io_context until *done; false if the watchdog expired.
  bool WaitBody(bool* done) {
    if (!watchdog_armed_ && !watchdog_expired_) {
      const Clock::time_point due = BodyDeadline();
      if (due != Clock::time_point::max()) ArmWatchdog(due);
    }
    io_.restart();
    while (!*done) io_.run_one();
    return !watchdog_expired_;
  }

  absl::Status Error(absl::string_view why) {
    return absl::UnavailableError(why);
  }

  // The first deadline among `limit` from now and the total timeout.
  Clock::time_point Deadline(double limit) const {
    Clock::time_point d = Clock::time_point::max();
    if (limit > 0) d = Clock::now() + Seconds(limit);
    if (options_.total_timeout_seconds > 0) {
      d = std::min(d, start_ + Seconds(options_.total_timeout_seconds));
    }
    return d;
  }
  Clock::time_point IdleDeadline() const {
    return Deadline(options_.idle_timeout_seconds);
  }
  bool TotalExpired() const {
    return options_.total_timeout_seconds > 0 &&
           Clock::now() >= start_ + Seconds(options_.total_timeout_seconds);
  }
  // What a missed deadline is called.
  std::string TimeoutName(const char* idle_name) const {
    return TotalExpired() ? "total timeout" : idle_name;
  }

  // Runs the io_context until *done; past `deadline` the connection is
  // aborted (the pending operation completes with an error) and false is
  // returned.
  bool Wait(bool* done, Clock::time_point deadline) {
    bool expired = false;
    const bool timed = deadline != Clock::time_point::max();
    if (timed) {
      timer_.expires_at(deadline);
      timer_.async_wait([this, done, &expired](const error_code& ec) {
        if (ec || *done) return;
        expired = true;
        Abort();
      });
    }
    io_.restart();
    while (!*done) io_.run_one();
    if (timed) {
      // Let the cancelled timer's handler run (it refers to `expired`).
      timer_.cancel();
      io_.restart();
      io_.poll();
    }
    return !expired;
  }

  // More body bytes can be parsed without waiting (or almost: a TLS record
  // that started arriving).
  bool MoreReady() {
    if (buffer_.size() > 0) return true;
    error_code ec;
    if (tls_ != nullptr) {
      // Decrypted bytes, or (read-ahead) records not yet decrypted.
      if (SSL_has_pending(tls_->native_handle()) == 1) return true;
      return tls_->lowest_layer().available(ec) > 0 && !ec;
    }
    return tcp_ != nullptr && tcp_->available(ec) > 0 && !ec;
  }

  void Abort() {
    error_code ignored;
    if (resolver_ != nullptr) resolver_->cancel();
    if (tls_ != nullptr) tls_->lowest_layer().close(ignored);
    if (tcp_ != nullptr) tcp_->close(ignored);
  }

  void Close() {
    {
      // Next may close while another thread interrupts (http_parallel.h).
      std::lock_guard<std::mutex> lock(direct_mu_);
      direct_.reset();  // before the SSL object its BIO belongs to
    }
    Abort();
    tls_.reset();
    tcp_.reset();
    resolver_.reset();
    parser_.reset();
    buffer_.clear();
  }

  template <typename F>
  void WithStream(F&& f) {
    if (tls_ != nullptr) {
      f(*tls_);
    } else {
      f(*tcp_);
    }
  }

  absl::Status SetUpTls() {
    tls_ready_ = true;
    SSL_CTX* ctx = ssl_ctx_.native_handle();
    if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1) {
      return Error("cannot require TLS 1.2");
    }
    // A TLS 1.2 server asking to renegotiate gets a no_renegotiation alert
    // instead of a full handshake inside a body read (a hostile server could
    // ask again and again).
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
    if (options_.insecure) {
      ssl_ctx_.set_verify_mode(ssl::verify_none);
      return absl::OkStatus();
    }
    ssl_ctx_.set_verify_mode(ssl::verify_peer |
                             ssl::verify_fail_if_no_peer_cert);
    error_code ec;
    ssl_ctx_.set_default_verify_paths(ec);
    if (ec) {
      return Error(
          absl::StrCat("cannot load the system's trust store: ", ec.message()));
    }
    if (!options_.ca_file.empty()) {
      ssl_ctx_.load_verify_file(options_.ca_file, ec);
      if (ec) {
        return absl::InvalidArgumentError(
            absl::StrCat("--ca-file ", Printable(options_.ca_file),
                         ": not a PEM certificate file (", ec.message(), ")"));
      }
    }
    return absl::OkStatus();
  }

  absl::Status Connect(const Url& url) {
    if (interrupted_) return Error("cancelled");
    const Clock::time_point deadline =
        Deadline(options_.connect_timeout_seconds);
    resolver_ = std::make_unique<tcp::resolver>(io_);
    tcp_ = std::make_unique<tcp::socket>(io_);
    ++connections_;
    error_code ec;
    bool done = false;
    tcp::resolver::results_type results;
    const bool redirected = !options_.connect_to_host.empty();
    resolver_->async_resolve(
        redirected ? options_.connect_to_host : url.host,
        redirected ? options_.connect_to_port : url.port,
        [&](const error_code& e, tcp::resolver::results_type r) {
          ec = e;
          results = std::move(r);
          done = true;
        });
    bool in_time = Wait(&done, deadline);
    if (!in_time) return Error(TimeoutName("connect timeout"));
    if (ec) {
      return Error(absl::StrCat("cannot resolve ", Printable(url.host), ": ",
                                ec.message()));
    }
    done = false;
    asio::async_connect(*tcp_, results,
                        [&](const error_code& e, const tcp::endpoint&) {
                          ec = e;
                          done = true;
                        });
    in_time = Wait(&done, deadline);
    if (!in_time) return Error(TimeoutName("connect timeout"));
    if (interrupted_) return Error("cancelled");
    if (ec) {
      return Error(absl::StrCat("cannot connect to ", Printable(url.host), ":",
                                url.port, ": ", ec.message()));
    }
    tcp_->set_option(tcp::no_delay(true), ec);
    if (!url.tls) return absl::OkStatus();

    tls_ =
        std::make_unique<ssl::stream<tcp::socket>>(std::move(*tcp_), ssl_ctx_);
    tcp_.reset();
    SSL* ssl = tls_->native_handle();
    // The body's reads (SocketBodyReader) take up to this much ciphertext
    // per recv; the buffer is made at the handshake's first read.
    SSL_set_read_ahead(ssl, 1);
    SSL_set_default_read_buffer_len(ssl, kTlsReadAheadBytes);
    if (!url.host_is_ip &&
        SSL_set_tlsext_host_name(ssl, url.host.c_str()) != 1) {
      return Error("cannot set the TLS server name");
    }
    if (!options_.insecure) {
      X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
      X509_VERIFY_PARAM_set_hostflags(param,
                                      X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
      const int ok =
          url.host_is_ip
              ? X509_VERIFY_PARAM_set1_ip_asc(param, url.host.c_str())
              : X509_VERIFY_PARAM_set1_host(param, url.host.c_str(), 0);
      if (ok != 1) return Error("cannot set the host name to verify");
    }
    done = false;
    tls_->async_handshake(ssl::stream_base::client, [&](const error_code& e) {
      ec = e;
      done = true;
    });
    in_time = Wait(&done, deadline);
    if (!in_time) return Error(TimeoutName("connect timeout (TLS handshake)"));
    if (interrupted_) return Error("cancelled");
    if (ec) {
      const long verify = SSL_get_verify_result(ssl);
      if (verify != X509_V_OK) {
        return Error(absl::StrCat(
            "TLS: the server's certificate is not trusted for ",
            Printable(url.host), ": ", X509_verify_cert_error_string(verify)));
      }
      return Error(absl::StrCat("TLS handshake failed: ", ec.message()));
    }
    return absl::OkStatus();
  }

  http::request<http::empty_body> MakeRequest(
      const Url& url, const Url& first_url,
      const std::optional<HttpRange>& range) const {
    http::request<http::empty_body> req{http::verb::get, url.target, 11};
    req.set(http::field::host, url.HostHeader());
    req.set(http::field::user_agent, options_.user_agent);
    req.set(http::field::accept_encoding, "identity");
    if (!options_.keep_alive) req.set(http::field::connection, "close");
    const bool same_origin = url.SameOrigin(first_url);
    for (const auto& [name, value] : options_.headers) {
      // Credentials stay with the origin they were given for.
      if (!same_origin && IsCredentialField(name)) continue;
      req.insert(name, value);
    }
    if (range.has_value()) {
      req.set(http::field::range,
              range->last.has_value()
                  ? absl::StrCat("bytes=", range->first, "-", *range->last)
                  : absl::StrCat("bytes=", range->first, "-"));
      if (!range->if_range.empty()) {
        req.set(http::field::if_range, range->if_range);
      }
    }
    return req;
  }

  absl::Status SendRequest(const Url& url, const Url& first_url,
                           const std::optional<HttpRange>& range) {
    http::request<http::empty_body> req = MakeRequest(url, first_url, range);
    error_code ec;
    bool done = false;
    WithStream([&](auto& s) {
      http::async_write(s, req, [&](const error_code& e, size_t) {
        ec = e;
        done = true;
      });
    });
    if (!Wait(&done, IdleDeadline())) {
      return Error(TimeoutName("idle timeout (sending the request)"));
    }
    if (interrupted_) return Error("cancelled");
    if (ec) {
      return Error(absl::StrCat("cannot send the request: ", ec.message()));
    }
    return absl::OkStatus();
  }

  // The header of the final response: interim (1xx) responses before it
  // are skipped (RFC 9110 15.2: 100 Continue, 102, 103 Early Hints, ...),
  // at most kMaxInterimResponses of them, each within the idle timeout; a
  // 101 (Switching Protocols) is refused, as we never ask for an upgrade.
  // *closed (a kept-alive connection only, else null): set when the
  // connection ended before any byte of the answer.
  absl::Status ReadFinalHeader(const Url& url, bool* closed) {
    if (direct_ == nullptr) {
      buffer_ = boost::beast::flat_buffer(kReadBufferBytes);
      // Beast reads at most the free capacity (512 bytes when none): make
      // room for large reads once.
      buffer_.reserve(kReadBufferBytes);
    }
    for (int interim = 0;; ++interim) {
      // A new parser for each response; what the server sent after an
      // interim response stays in buffer_ for the next.
      absl::Status s =
          direct_ != nullptr
              ? ReadHeaderDirect(url, interim == 0 ? closed : nullptr)
              : ReadHeader(url);
      if (!s.ok()) return s;
      const int status = static_cast<int>(parser_->get().result_int());
      if (status < 100 || status > 199) return absl::OkStatus();
      if (status == 101) {
        return Error(absl::StrCat(
            "HTTP 101 (Switching Protocols) from ", Printable(url.host),
            ": refused, this client never asks to switch protocols"));
      }
      if (interim >= kMaxInterimResponses) {
        return Error(
            absl::StrCat("more than ", kMaxInterimResponses,
                         " interim (1xx) responses from ", Printable(url.host),
                         " before the final one (limit kMaxInterimResponses)"));
      }
    }
  }

  absl::Status ReadHeader(const Url& url) {
    parser_ = std::make_unique<http::response_parser<http::buffer_body>>();
    parser_->header_limit(static_cast<uint32_t>(options_.max_header_bytes));
    parser_->body_limit(boost::none);  // streamed, never held
    error_code ec;
    bool done = false;
    WithStream([&](auto& s) {
      http::async_read_header(s, buffer_, *parser_,
                              [&](const error_code& e, size_t) {
                                ec = e;
                                done = true;
                              });
    });
    // The whole header within one idle timeout: a server dripping it
    // byte by byte does not keep us forever.
    if (!Wait(&done, IdleDeadline())) {
      return Error(
          TimeoutName("idle timeout (waiting for the response header)"));
    }
    if (interrupted_) return Error("cancelled");
    if (ec == http::error::header_limit || ec == http::error::buffer_overflow) {
      return Error(absl::StrCat("the response header from ",
                                Printable(url.host), " is larger than ",
                                options_.max_header_bytes, " bytes"));
    }
    if (ec) {
      return Error(absl::StrCat("no valid HTTP response header from ",
                                Printable(url.host), ": ", ec.message()));
    }
    return absl::OkStatus();
  }

  // ReadHeader on a kept-alive connection: the bytes come through direct_
  // into buffer_ and Beast's parser is fed from there, the whole header
  // within one idle timeout.
  absl::Status ReadHeaderDirect(const Url& url, bool* closed) {
    parser_ = std::make_unique<http::response_parser<http::buffer_body>>();
    parser_->header_limit(static_cast<uint32_t>(options_.max_header_bytes));
    parser_->body_limit(boost::none);
    const Clock::time_point deadline = IdleDeadline();
    bool seen = buffer_.size() > 0;
    for (;;) {
      if (buffer_.size() > 0) {
        error_code ec;
        const size_t used = parser_->put(buffer_.data(), ec);
        buffer_.consume(used);
        if (parser_->is_header_done()) return absl::OkStatus();
        if (ec == http::error::header_limit ||
            ec == http::error::buffer_overflow) {
          return Error(absl::StrCat("the response header from ",
                                    Printable(url.host), " is larger than ",
                                    options_.max_header_bytes, " bytes"));
        }
        if (ec && ec != http::error::need_more) {
          return Error(absl::StrCat("no valid HTTP response header from ",
                                    Printable(url.host), ": ", ec.message()));
        }
      }
      const size_t room = buffer_.max_size() - buffer_.size();
      if (room == 0) {
        return Error(absl::StrCat("the response header from ",
                                  Printable(url.host), " is larger than ",
                                  buffer_.max_size(), " bytes"));
      }
      const auto space = buffer_.prepare(room);
      const SocketBodyReader::Result r = direct_->Read(
          absl::MakeSpan(static_cast<uint8_t*>(space.data()), space.size()),
          deadline);
      buffer_.commit(r.bytes);
      // Bytes first: an end or error after them is met again by the next
      // read if the header is still incomplete (the body reader meets it
      // otherwise).
      if (r.bytes > 0) {
        seen = true;
        continue;
      }
      using Outcome = SocketBodyReader::Outcome;
      switch (r.outcome) {
        case Outcome::kOk:
          continue;
        case Outcome::kTimeout:
          return Error(
              TimeoutName("idle timeout (waiting for the response header)"));
        case Outcome::kInterrupted:
          return Error("cancelled");
        default:
          if (!seen && closed != nullptr) *closed = true;
          return Error(absl::StrCat(
              "no valid HTTP response header from ", Printable(url.host), ": ",
              r.outcome == Outcome::kEnd ? "the connection ended" : r.error));
      }
    }
  }

  absl::Status CheckResponse(const std::optional<HttpRange>& range) {
    const auto& msg = parser_->get();
    info_.status = static_cast<int>(msg.result_int());
    if (info_.status != 200 && !(info_.status == 206 && range.has_value())) {
      return Error(absl::StrCat("HTTP ", info_.status, " ",
                                Printable(Sv(msg.reason()), 60), " from ",
                                Printable(info_.url.ToString())));
    }
    std::vector<HeaderField> fields;
    for (const auto& f : msg) {
      fields.push_back({Sv(f.name_string()), Sv(f.value())});
    }
    if (const auto cl = parser_->content_length(); cl.has_value()) {
      info_.content_length = *cl;
    }
    info_.chunked = parser_->chunked();
    return InterpretResponse(fields, range, &info_);
  }

  absl::Status BodyError(const error_code& ec, bool in_time) {
    if (interrupted_) return Error("cancelled");
    if (!in_time) return Error(TimeoutName("idle timeout"));
    if (ec == http::error::partial_message || ec == asio::error::eof ||
        ec == ssl::error::stream_truncated ||
        ec == http::error::end_of_stream) {
      return Truncated();
    }
    return Error(absl::StrCat("reading the body failed: ", ec.message()));
  }

  absl::Status Truncated() {
    if (info_.content_length.has_value()) {
      return Error(absl::StrCat("truncated: the connection ended after ",
                                received_, " of ", *info_.content_length,
                                " body bytes"));
    }
    return Error(absl::StrCat("truncated: the connection ended after ",
                              received_, " body bytes, before the last chunk"));
  }

  const HttpOptions options_;
  Url first_url_;  // Open's: Next asks for it again
  int connections_ = 0;
  Clock::time_point start_;
  asio::io_context io_{1};
  asio::steady_timer timer_{io_};
  asio::steady_timer watchdog_{io_};
  Clock::time_point last_progress_;
  bool watchdog_armed_ = false;
  bool watchdog_expired_ = false;
  ssl::context ssl_ctx_;
  bool tls_ready_ = false;
  std::unique_ptr<tcp::resolver> resolver_;
  std::unique_ptr<tcp::socket> tcp_;
  std::unique_ptr<ssl::stream<tcp::socket>> tls_;
  std::unique_ptr<http::response_parser<http::buffer_body>> parser_;
  // ReadDirect (Content-Length, not chunked) when set; after tls_, so that
  // it goes first.
  std::unique_ptr<SocketBodyReader> direct_;
  std::mutex direct_mu_;  // direct_'s replacement against Interrupt
  boost::beast::flat_buffer buffer_;
  HttpResponseInfo info_;
  uint64_t received_ = 0;
  std::optional<absl::Status> pending_error_;
  // A 206's length from its Content-Range (ReadParsed holds the body to it).
  std::optional<uint64_t> range_length_;
  std::atomic<bool> interrupted_{false};
};

absl::StatusOr<std::unique_ptr<HttpBody>> HttpBody::Open(
    const Url& url, const HttpOptions& options,
    const std::optional<HttpRange>& range) {
  if (options.headers.size() > kMaxExtraHeaders) {
    return absl::InvalidArgumentError("too many --header options");
  }
  auto impl = std::make_unique<Impl>(options);
  absl::Status s = impl->Open(url, range);
  if (!s.ok()) return s;
  return std::unique_ptr<HttpBody>(new HttpBody(std::move(impl)));
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
