// Fuzz target: the HTTP client as a whole (issue 46 item 3). The fuzzed
// bytes are what a hostile server answers; they are played to the real
// client (stream/http/http_body.h HttpBody, http_ranges.h
// HttpRangeSource) over loopback by a server thread of this harness, so the
// status line, interim (1xx) responses, redirects, Content-Length and
// chunked framing, Content-Range and the body readers (Beast's parser and
// socket_body_reader.h) all see them. Plain HTTP only: TLS is OpenSSL's to
// fuzz, and what comes out of it is the same byte stream.
//
// Input: a 6-byte header, then the responses of successive connections,
// separated by "#NEXT#" (at most kMaxResponses; a connection past the last
// is closed without an answer). Within one connection's, "#SAME#"
// separates the answers to successive requests on it (issue 47: a range
// source keeps its connection alive): after each but the last the server
// waits for another request there, and closes when none comes.
//   byte 0  mode: % 3 = 0 one GET; 1 one GET with a Range; 2 a range
//           source (HttpRangeSource::Open, then up to 3 ranges read)
//   byte 1  the size of each Read (1 + byte; 0xff: 64 KiB)
//   2..3    range first (big endian); 4..5 range length - 1
// Every connection goes to the harness's server whatever the URL
// (HttpOptions::connect_to_*), so a redirect to any host or port comes
// back here; https redirects meet a plain server and fail their handshake.
//
// Properties:
//  - credentials (Authorization, Cookie, Proxy-Authorization given as
//    options) reach only requests whose Host is the first URL's origin;
//    a request to that origin carries them all;
//  - at most max_redirects redirects followed;
//  - Read never fills more than asked; received() counts what Read gave;
//  - a body that ended without error has its Content-Length, and a 206 the
//    length of the range asked for; a body read straight from the socket
//    (not chunked) is bytes the server sent, in order;
//  - a range read that succeeds hands over exactly its length.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "fuzz/fuzz_util.h"
#include "stream/http/http_body.h"
#include "stream/http/http_ranges.h"
#include "stream/http/http_url.h"

namespace hurray::fuzz {
namespace {

using stream::http::HttpBody;
using stream::http::HttpOptions;
using stream::http::HttpRange;
using stream::http::HttpRangeSource;
using stream::http::Url;

constexpr size_t kMaxResponses = 16;
constexpr size_t kMaxRequestBytes = 16 << 10;

// Waits up to `ms` for `events` on `fd`.
bool PollFor(int fd, short events, int ms) {
  pollfd p{fd, events, 0};
  return ::poll(&p, 1, ms) == 1;
}

// The harness's server: 127.0.0.1 on a free port; connection i of the
// current input gets the responses of responses[i], one per request (each
// request head is recorded), then is closed.
class Server {
 public:
  Server() {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    HURRAY_FUZZ_CHECK(listen_fd_ >= 0);
    const int one = 1;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    HURRAY_FUZZ_CHECK(
        ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0);
    HURRAY_FUZZ_CHECK(::listen(listen_fd_, 64) == 0);
    socklen_t len = sizeof(a);
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    std::thread([this] { Run(); }).detach();  // lives as long as the process
  }

  uint16_t port() const { return port_; }

  // The responses of the next input's connections.
  void Start(std::vector<std::vector<std::string>> responses) {
    std::lock_guard<std::mutex> lock(mu_);
    responses_ = std::move(responses);
    connections_ = 0;
    requests_.clear();
    served_.clear();
  }

  // After the client is done: waits for the connection being served, then
  // returns the requests received and the responses sent, in order.
  void Finish(std::vector<std::string>* requests,
              std::vector<std::string>* served) {
    std::unique_lock<std::mutex> lock(mu_);
    idle_.wait(lock, [this] { return !busy_; });
    *requests = std::move(requests_);
    *served = std::move(served_);
    responses_.clear();
    connections_ = 0;
    requests_.clear();
    served_.clear();
  }

 private:
  void Run() {
    while (true) {
      if (!PollFor(listen_fd_, POLLIN, 1000)) continue;
      std::unique_lock<std::mutex> lock(mu_);
      const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      busy_ = true;
      const size_t i = connections_++;
      std::vector<std::string> answers;
      if (i < responses_.size()) answers = responses_[i];
      if (answers.empty()) answers.emplace_back();
      lock.unlock();
      for (size_t k = 0; k < answers.size(); ++k) {
        std::string request = ReadRequest(fd);
        // After the first: the client asked again on this connection, or
        // closed it (then nothing more is served here).
        if (k > 0 && request.empty()) break;
        SendAll(fd, answers[k]);
        lock.lock();
        requests_.push_back(std::move(request));
        served_.push_back(answers[k]);
        lock.unlock();
      }
      ::close(fd);
      lock.lock();
      busy_ = false;
      idle_.notify_all();
    }
  }

  // The request head (up to CR LF CR LF), within 2 s.
  static std::string ReadRequest(int fd) {
    std::string head;
    char buf[4096];
    while (head.find("\r\n\r\n") == std::string::npos &&
           head.size() < kMaxRequestBytes && PollFor(fd, POLLIN, 2000)) {
      const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) break;
      head.append(buf, static_cast<size_t>(n));
      // A TLS hello (an https redirect) gets its answer at once.
      if (head[0] == 0x16) break;
    }
    return head;
  }

  static void SendAll(int fd, absl::string_view s) {
    while (!s.empty() && PollFor(fd, POLLOUT, 2000)) {
      const ssize_t n = ::send(fd, s.data(), s.size(), MSG_NOSIGNAL);
      if (n <= 0) return;
      s.remove_prefix(static_cast<size_t>(n));
    }
  }

  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::mutex mu_;
  std::condition_variable idle_;
  bool busy_ = false;
  std::vector<std::vector<std::string>> responses_;
  size_t connections_ = 0;
  std::vector<std::string> requests_, served_;
};

// The Host field of a request head ("" when none: a TLS hello).
std::string HostOf(absl::string_view request) {
  for (absl::string_view line : absl::StrSplit(request, "\r\n")) {
    if (absl::StartsWithIgnoreCase(line, "host: ")) {
      return std::string(line.substr(6));
    }
  }
  return "";
}

// The names of the header fields of a request head (its request line
// left out), lower case.
std::vector<std::string> FieldNames(absl::string_view request) {
  std::vector<std::string> names;
  bool first = true;
  for (absl::string_view line : absl::StrSplit(request, "\r\n")) {
    if (first) {
      first = false;
      continue;
    }
    const size_t colon = line.find(':');
    if (colon != absl::string_view::npos) {
      names.push_back(absl::AsciiStrToLower(line.substr(0, colon)));
    }
  }
  return names;
}

// A request to the first URL's origin carries every credential given; one
// to another origin none of them (by field name: the server's redirect
// targets and ETags may well contain "s3cret" themselves).
void CheckCredentials(const std::vector<std::string>& requests) {
  for (const std::string& request : requests) {
    const std::string host = HostOf(request);
    if (host.empty()) continue;  // not an HTTP request head (TLS)
    const std::vector<std::string> names = FieldNames(request);
    int credentials = 0;
    for (const std::string& name : names) {
      if (name == "authorization" || name == "cookie" ||
          name == "proxy-authorization") {
        ++credentials;
      }
    }
    // Same origin (the server is plain HTTP: the scheme is http).
    HURRAY_FUZZ_CHECK(credentials == (host == "origin.test" ? 3 : 0));
    HURRAY_FUZZ_CHECK(absl::c_linear_search(names, "x-trace"));
  }
}

struct Drained {
  absl::Status status;
  std::string body;
};

// Reads `body` to its end or first error, `step` bytes at a time.
Drained Drain(HttpBody& body, size_t step) {
  Drained out;
  std::vector<uint8_t> buf(step);
  while (true) {
    absl::StatusOr<size_t> n = body.Read(absl::MakeSpan(buf));
    if (!n.ok()) {
      out.status = n.status();
      break;
    }
    HURRAY_FUZZ_CHECK(*n <= step);
    if (*n == 0) break;
    out.body.append(reinterpret_cast<const char*>(buf.data()), *n);
  }
  HURRAY_FUZZ_CHECK(body.received() == out.body.size());
  return out;
}

// Mode 0 and 1: one GET, its body read to the end.
void OneGet(const Url& url, const HttpOptions& options,
            const std::optional<HttpRange>& range, size_t step,
            Server& server) {
  absl::StatusOr<std::unique_ptr<HttpBody>> body =
      HttpBody::Open(url, options, range);
  Drained d;
  if (body.ok()) d = Drain(**body, step);
  std::optional<stream::http::HttpResponseInfo> info;
  if (body.ok()) info = (*body)->info();
  body = absl::UnknownError("closed");  // the connection closes here
  std::vector<std::string> requests, served;
  server.Finish(&requests, &served);
  CheckCredentials(requests);
  if (!info.has_value()) return;
  HURRAY_FUZZ_CHECK(info->redirects <= options.max_redirects);
  HURRAY_FUZZ_CHECK(info->status == 200 || info->status == 206);
  if (!d.status.ok()) return;
  if (info->content_length.has_value()) {
    HURRAY_FUZZ_CHECK(d.body.size() == *info->content_length);
  }
  if (info->status == 206) {
    HURRAY_FUZZ_CHECK(range.has_value() && range->last.has_value());
    // The range asked for, or (RFC 9110 14.1.2) its part up to the
    // object's last byte when it asked past the end.
    const bool clipped = info->object_size.has_value() &&
                         *range->last >= *info->object_size &&
                         info->range_last + 1 == *info->object_size;
    HURRAY_FUZZ_CHECK(info->range_last == *range->last || clipped);
    HURRAY_FUZZ_CHECK(d.body.size() == info->range_last - range->first + 1);
  }
  if (!info->chunked && !served.empty()) {
    HURRAY_FUZZ_CHECK(served.back().find(d.body) != std::string::npos);
  }
}

// Mode 2: a range source, then up to three ranges.
void Ranges(const Url& url, const HttpOptions& options, uint64_t first,
            uint64_t length, size_t step, Server& server) {
  absl::StatusOr<HttpRangeSource::Opened> opened =
      HttpRangeSource::Open(url, options);
  if (opened.ok() && opened->whole != nullptr) {
    (void)Drain(*opened->whole, step);
  } else if (opened.ok() && opened->ranges != nullptr) {
    HttpRangeSource& src = *opened->ranges;
    for (int i = 0; i < 3 && src.size() > 0; ++i) {
      const uint64_t offset = (first + i * 977) % src.size();
      const uint64_t len = std::min<uint64_t>(length, src.size() - offset);
      uint64_t got = 0;
      const absl::Status s =
          src.Read(offset, len, [&](absl::Span<const uint8_t> piece) {
            got += piece.size();
            HURRAY_FUZZ_CHECK(got <= len);
            return absl::OkStatus();
          });
      if (!s.ok()) break;
      HURRAY_FUZZ_CHECK(got == len);
    }
  }
  opened = absl::UnknownError("closed");
  std::vector<std::string> requests, served;
  server.Finish(&requests, &served);
  CheckCredentials(requests);
}

}  // namespace
}  // namespace hurray::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hurray::fuzz;
  static Server* server = new Server();
  if (size < 6) return 0;
  const uint8_t mode = data[0] % 3;
  const size_t step = data[1] == 0xff ? size_t{64} << 10 : size_t{data[1]} + 1;
  const uint64_t first = (uint64_t{data[2]} << 8) | data[3];
  const uint64_t length = ((uint64_t{data[4]} << 8) | data[5]) + 1;
  const absl::string_view rest(reinterpret_cast<const char*>(data) + 6,
                               size - 6);
  std::vector<std::vector<std::string>> responses;
  size_t count = 0;
  for (absl::string_view c : absl::StrSplit(rest, "#NEXT#")) {
    if (count == kMaxResponses) break;
    responses.emplace_back();
    for (absl::string_view r : absl::StrSplit(c, "#SAME#")) {
      if (count == kMaxResponses) break;
      responses.back().emplace_back(r);
      ++count;
    }
  }
  server->Start(std::move(responses));

  HttpOptions options;
  options.headers = {{"Authorization", "Bearer s3cret"},
                     {"cookie", "sid=s3cret"},
                     {"Proxy-Authorization", "Basic s3cret"},
                     {"X-Trace", "t1"}};
  options.insecure = true;  // https redirects: no trust store to load
  options.connect_timeout_seconds = 1;
  options.idle_timeout_seconds = 1;
  options.total_timeout_seconds = 4;
  options.connect_to_host = "127.0.0.1";
  options.connect_to_port = std::to_string(server->port());
  const absl::StatusOr<Url> url =
      hurray::stream::http::ParseUrl("http://origin.test/models/m.hrry");
  HURRAY_FUZZ_CHECK(url.ok());

  if (mode == 2) {
    Ranges(*url, options, first, length, step, *server);
  } else {
    std::optional<HttpRange> range;
    if (mode == 1) range = HttpRange{first, first + length - 1, ""};
    OneGet(*url, options, range, step, *server);
  }
  return 0;
}
