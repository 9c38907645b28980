// The body of one HTTP(S) GET as a loader source (issue 15): Open connects,
// negotiates TLS, sends the request, follows redirects and reads the
// response header; the loader then pulls the body through Read (a
// PullReader, stream/container/pull_reader.h) into its ring, so decoding
// overlaps the download and memory stays bounded whatever the size.
//
// Boost.Beast parses HTTP/1.1 (the response header with its size limit,
// chunked bodies) over Boost.Asio with OpenSSL; a body with a
// Content-Length is counted here and read straight from the socket into the
// caller's buffer (socket_body_reader.h: no copy through the parser's, no
// BIO pair). Rules:
// - TLS: TLS 1.2 or later, SNI, the peer's certificate verified against the
//   system store plus --ca-file, and its name against the URL's host (an
//   IP literal against the certificate's IP addresses). `insecure` turns
//   verification off (the CLI warns).
// - Redirects (301, 302, 303, 307, 308): at most max_redirects, never from
//   https to http, and every credential the caller gave (Authorization,
//   Cookie, Proxy-Authorization: IsCredentialField) is dropped when the
//   origin (scheme, host, port) differs from the first URL's, as curl does
//   since CVE-2022-27776.
// - Interim responses (1xx, RFC 9110 15.2: 100 Continue, 103 Early Hints)
//   are skipped, at most kMaxInterimResponses per request; 101 Switching
//   Protocols is refused (we never ask for an upgrade).
// - Deadlines: every wait has one. Resolving, connecting and the TLS
//   handshake: connect_timeout; each read and write (including the response
//   header): idle_timeout; everything together: total_timeout (0: none).
// - The response: 200, or 206 to a range request (Content-Range checked
//   against the range asked for); anything else is an error naming the
//   status. A Content-Encoding other than identity is refused (we ask for
//   identity and decode nothing); so is a Transfer-Encoding other than
//   chunked.
// - The body: a connection that ends before Content-Length bytes, or before
//   the last chunk, is a truncation error; a 206's body has exactly the
//   length of its Content-Range whatever its framing (a chunked one that
//   goes on past it, or ends short of it, is an error). The loader reports
//   these as STREAM-IO at the byte offset reached.
#ifndef HURRAY_STREAM_HTTP_HTTP_BODY_H_
#define HURRAY_STREAM_HTTP_HTTP_BODY_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "stream/container/pull_reader.h"
#include "stream/http/http_fields.h"
#include "stream/http/http_url.h"

namespace hurray::stream::http {

inline constexpr size_t kMaxHttpHeaderBytes = 64 << 10;
inline constexpr int kMaxRedirects = 5;
inline constexpr size_t kMaxExtraHeaders = 64;
// Interim (1xx) responses skipped before the final one, per request.
inline constexpr int kMaxInterimResponses = 16;

struct HttpOptions {
  // Extra request headers ("Name", "value"), checked by CheckHeader.
  std::vector<std::pair<std::string, std::string>> headers;
  std::string ca_file;    // a PEM trust anchor added to the system store
  bool insecure = false;  // no certificate or host name verification
  double connect_timeout_seconds = 10;
  double idle_timeout_seconds = 60;
  double total_timeout_seconds = 0;  // 0: none
  int max_redirects = kMaxRedirects;
  size_t max_header_bytes = kMaxHttpHeaderBytes;
  std::string user_agent = "hurray";
  // HTTP/1.1 persistent connections (issue 47): no `Connection: close` in
  // the request, so that Next can send the following request on the same
  // connection. Off for one whole-object GET (nothing would reuse it).
  bool keep_alive = false;
  // Tests and fuzzing only (the CLI never sets it): when set, every
  // connection goes to this host and port instead of the URL's, as curl's
  // --connect-to; the Host header, the TLS name and the origin stay the
  // URL's.
  std::string connect_to_host;
  std::string connect_to_port;
};

class HttpBody final : public container::PullReader {
 public:
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<HttpBody>> Open(
      const Url& url, const HttpOptions& options,
      const std::optional<HttpRange>& range = std::nullopt);
  // Open in two steps, for a caller that may Interrupt the connecting
  // from another thread (ParallelHttpBody's workers): Make checks the
  // options and does no I/O; Start, called once before anything else, is
  // Open's connecting, request and response header. Interrupted before or
  // during Start, Start ends at once as "cancelled".
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<HttpBody>> Make(
      const HttpOptions& options);
  [[nodiscard]] absl::Status Start(
      const Url& url, const std::optional<HttpRange>& range = std::nullopt);
  ~HttpBody() override;

  // Another request for the same URL (its redirects followed again), in
  // place of this one (issue 47). With `keep_alive` it goes on the same
  // connection when that can carry it: the previous body read to its end
  // (a Content-Length, no redirect), the server did not answer
  // `Connection: close` (or speak HTTP/1.0 without keep-alive). Otherwise,
  // and when the kept-alive connection turns out closed before any byte of
  // the answer came, or answers with a redirect or a body without a
  // Content-Length, the request is made once more on a new connection
  // (nothing of its body was read). A request whose body was partly read
  // is never made again: a failure there is the caller's error.
  [[nodiscard]] absl::Status Next(const std::optional<HttpRange>& range);

  const HttpResponseInfo& info() const;
  // Body bytes of the current response delivered by Read so far.
  uint64_t received() const;
  // TCP connections made (Open's and Next's): tests count them.
  int connections() const;

  [[nodiscard]] absl::StatusOr<size_t> Read(absl::Span<uint8_t> into) override;
  void Interrupt() override;

 private:
  class Impl;
  explicit HttpBody(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace hurray::stream::http

#endif  // HURRAY_STREAM_HTTP_HTTP_BODY_H_
