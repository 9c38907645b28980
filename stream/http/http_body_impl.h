// HttpBody's implementation (http_body.h), private to the http_body
// library: the class HttpBody::Impl and the helpers its two source files
// share. http_body.cc opens (redirects) and reads the response's body;
// http_body_connection.cc holds the connection: TLS, connecting, sending a
// request, reading the final header, deadlines and errors.
#ifndef HURRAY_STREAM_HTTP_HTTP_BODY_IMPL_H_
#define HURRAY_STREAM_HTTP_HTTP_BODY_IMPL_H_

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "stream/http/http_body.h"
#include "stream/http/http_fields.h"
#include "stream/http/http_url.h"
#include "stream/http/socket_body_reader.h"

namespace hurray::stream::http {
namespace body_internal {

namespace asio = boost::asio;
namespace ssl = boost::asio::ssl;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using boost::system::error_code;

// Read buffer of the connection (the parser's input); the body itself goes
// straight to the loader's slot.
inline constexpr size_t kReadBufferBytes = 256 << 10;

inline Clock::duration Seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(s));
}

inline bool IsRedirect(int status) {
  return status == 301 || status == 302 || status == 303 || status == 307 ||
         status == 308;
}

inline std::string Printable(absl::string_view s, size_t max = 120) {
  return PrintableAscii(s, max);
}

inline absl::string_view Sv(boost::beast::string_view s) {
  return absl::string_view(s.data(), s.size());
}

}  // namespace body_internal

class HttpBody::Impl {
 public:
  Impl(const HttpOptions& options);
  ~Impl();
  absl::Status Open(const Url& first_url,
                    const std::optional<HttpRange>& range);
  absl::StatusOr<size_t> Read(absl::Span<uint8_t> into);
  absl::Status Next(const std::optional<HttpRange>& range);
  void Interrupt();

  const HttpResponseInfo& info() const { return info_; }
  uint64_t received() const { return received_; }
  int connections() const { return connections_; }

 private:
  // The response's body and the requests after the first (http_body.cc).
  bool Reusable() const;
  void ResetResponse();
  absl::Status RequestAgain(const std::optional<HttpRange>& range, bool* redo);
  absl::StatusOr<size_t> ReadDirect(absl::Span<uint8_t> into);
  absl::StatusOr<size_t> ReadParsed(absl::Span<uint8_t> into);
  absl::StatusOr<size_t> HoldToRange(size_t filled);
  absl::StatusOr<size_t> ReadParsedSome(absl::Span<uint8_t> into);
  absl::StatusOr<size_t> Failed(const body_internal::error_code& ec,
                                bool in_time, size_t filled);
  bool MoreReady();

  // Deadlines, waits, errors and closing (http_body_connection.cc).
  body_internal::Clock::time_point BodyDeadline() const;
  void ArmWatchdog(body_internal::Clock::time_point at);
  bool WaitBody(bool* done);
  absl::Status Error(absl::string_view why);
  body_internal::Clock::time_point Deadline(double limit) const;
  body_internal::Clock::time_point IdleDeadline() const;
  bool TotalExpired() const;
  std::string TimeoutName(const char* idle_name) const;
  bool Wait(bool* done, body_internal::Clock::time_point deadline);
  void Abort();
  void Close();

  template <typename F>
  void WithStream(F&& f) {
    if (tls_ != nullptr) {
      f(*tls_);
    } else {
      f(*tcp_);
    }
  }

  // The connection, the request and the final header
  // (http_body_connection.cc).
  absl::Status SetUpTls();
  absl::Status Connect(const Url& url);
  body_internal::http::request<body_internal::http::empty_body> MakeRequest(
      const Url& url, const Url& first_url,
      const std::optional<HttpRange>& range) const;
  absl::Status SendRequest(const Url& url, const Url& first_url,
                           const std::optional<HttpRange>& range);
  absl::Status ReadFinalHeader(const Url& url, bool* closed);
  absl::Status ReadHeader(const Url& url);
  absl::Status ReadHeaderDirect(const Url& url, bool* closed);
  absl::Status CheckResponse(const std::optional<HttpRange>& range);
  absl::Status BodyError(const body_internal::error_code& ec, bool in_time);
  absl::Status Truncated();

  const HttpOptions options_;
  Url first_url_;  // Open's: Next asks for it again
  int connections_ = 0;
  body_internal::Clock::time_point start_;
  body_internal::asio::io_context io_{1};
  body_internal::asio::steady_timer timer_{io_};
  body_internal::asio::steady_timer watchdog_{io_};
  body_internal::Clock::time_point last_progress_;
  bool watchdog_armed_ = false;
  bool watchdog_expired_ = false;
  body_internal::ssl::context ssl_ctx_;
  bool tls_ready_ = false;
  std::unique_ptr<body_internal::tcp::resolver> resolver_;
  std::unique_ptr<body_internal::tcp::socket> tcp_;
  std::unique_ptr<body_internal::ssl::stream<body_internal::tcp::socket>> tls_;
  std::unique_ptr<
      body_internal::http::response_parser<body_internal::http::buffer_body>>
      parser_;
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

}  // namespace hurray::stream::http

#endif  // HURRAY_STREAM_HTTP_HTTP_BODY_IMPL_H_
