// HttpBody::Impl's connection (http_body_impl.h): TLS set-up, connecting,
// sending a request, reading the final response's header (interim 1xx
// responses skipped), deadlines and errors.
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/post.hpp>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "stream/http/http_body.h"
#include "stream/http/http_body_impl.h"
#include "stream/http/http_fields.h"
#include "stream/http/socket_body_reader.h"

namespace hurray::stream::http {
namespace {

namespace asio = body_internal::asio;
namespace http = body_internal::http;
namespace ssl = body_internal::ssl;
using body_internal::Clock;
using body_internal::error_code;
using body_internal::kReadBufferBytes;
using body_internal::Printable;
using body_internal::Seconds;
using body_internal::Sv;
using body_internal::tcp;

}  // namespace

void HttpBody::Impl::Interrupt() {
  interrupted_ = true;
  {
    std::lock_guard<std::mutex> lock(direct_mu_);
    if (direct_ != nullptr) direct_->Interrupt();
  }
  asio::post(io_, [this] { Abort(); });
}

// The body's deadline: idle_timeout after the last progress, capped by
// the total timeout; max() when neither is set.
Clock::time_point HttpBody::Impl::BodyDeadline() const {
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
void HttpBody::Impl::ArmWatchdog(Clock::time_point at) {
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
bool HttpBody::Impl::WaitBody(bool* done) {
  if (!watchdog_armed_ && !watchdog_expired_) {
    const Clock::time_point due = BodyDeadline();
    if (due != Clock::time_point::max()) ArmWatchdog(due);
  }
  io_.restart();
  while (!*done) io_.run_one();
  return !watchdog_expired_;
}

absl::Status HttpBody::Impl::Error(absl::string_view why) {
  return absl::UnavailableError(why);
}

// The first deadline among `limit` from now and the total timeout.
Clock::time_point HttpBody::Impl::Deadline(double limit) const {
  Clock::time_point d = Clock::time_point::max();
  if (limit > 0) d = Clock::now() + Seconds(limit);
  if (options_.total_timeout_seconds > 0) {
    d = std::min(d, start_ + Seconds(options_.total_timeout_seconds));
  }
  return d;
}

Clock::time_point HttpBody::Impl::IdleDeadline() const {
  return Deadline(options_.idle_timeout_seconds);
}

bool HttpBody::Impl::TotalExpired() const {
  return options_.total_timeout_seconds > 0 &&
         Clock::now() >= start_ + Seconds(options_.total_timeout_seconds);
}

// What a missed deadline is called.
std::string HttpBody::Impl::TimeoutName(const char* idle_name) const {
  return TotalExpired() ? "total timeout" : idle_name;
}

// Runs the io_context until *done; past `deadline` the connection is
// aborted (the pending operation completes with an error) and false is
// returned.
bool HttpBody::Impl::Wait(bool* done, Clock::time_point deadline) {
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

void HttpBody::Impl::Abort() {
  error_code ignored;
  if (resolver_ != nullptr) resolver_->cancel();
  if (tls_ != nullptr) tls_->lowest_layer().close(ignored);
  if (tcp_ != nullptr) tcp_->close(ignored);
}

void HttpBody::Impl::Close() {
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

absl::Status HttpBody::Impl::SetUpTls() {
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
  ssl_ctx_.set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
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

absl::Status HttpBody::Impl::Connect(const Url& url) {
  if (interrupted_) return Error("cancelled");
  const Clock::time_point deadline = Deadline(options_.connect_timeout_seconds);
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
  if (interrupted_) return Error("cancelled");
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

  tls_ = std::make_unique<ssl::stream<tcp::socket>>(std::move(*tcp_), ssl_ctx_);
  tcp_.reset();
  SSL* ssl = tls_->native_handle();
  // The body's reads (SocketBodyReader) take up to this much ciphertext
  // per recv; the buffer is made at the handshake's first read.
  SSL_set_read_ahead(ssl, 1);
  SSL_set_default_read_buffer_len(ssl, kTlsReadAheadBytes);
  if (!url.host_is_ip && SSL_set_tlsext_host_name(ssl, url.host.c_str()) != 1) {
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

http::request<http::empty_body> HttpBody::Impl::MakeRequest(
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

absl::Status HttpBody::Impl::SendRequest(
    const Url& url, const Url& first_url,
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
absl::Status HttpBody::Impl::ReadFinalHeader(const Url& url, bool* closed) {
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

absl::Status HttpBody::Impl::ReadHeader(const Url& url) {
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
    return Error(TimeoutName("idle timeout (waiting for the response header)"));
  }
  if (interrupted_) return Error("cancelled");
  if (ec == http::error::header_limit || ec == http::error::buffer_overflow) {
    return Error(absl::StrCat("the response header from ", Printable(url.host),
                              " is larger than ", options_.max_header_bytes,
                              " bytes"));
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
absl::Status HttpBody::Impl::ReadHeaderDirect(const Url& url, bool* closed) {
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

absl::Status HttpBody::Impl::CheckResponse(
    const std::optional<HttpRange>& range) {
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

absl::Status HttpBody::Impl::BodyError(const error_code& ec, bool in_time) {
  if (interrupted_) return Error("cancelled");
  if (!in_time) return Error(TimeoutName("idle timeout"));
  if (ec == http::error::partial_message || ec == asio::error::eof ||
      ec == ssl::error::stream_truncated || ec == http::error::end_of_stream) {
    return Truncated();
  }
  return Error(absl::StrCat("reading the body failed: ", ec.message()));
}

absl::Status HttpBody::Impl::Truncated() {
  if (info_.content_length.has_value()) {
    return Error(absl::StrCat("truncated: the connection ended after ",
                              received_, " of ", *info_.content_length,
                              " body bytes"));
  }
  return Error(absl::StrCat("truncated: the connection ended after ", received_,
                            " body bytes, before the last chunk"));
}

}  // namespace hurray::stream::http
