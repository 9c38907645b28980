// A scripted plain-HTTP server on 127.0.0.1 for the HTTP client's tests:
// connection i (in the order accepted) has its request head recorded, then
// runs script i with the connected socket; a connection past the last
// script is closed at once. Every wait has a deadline (a test never hangs
// on a client that did not come).
#ifndef HURRAY_STREAM_HTTP_TESTING_HTTP_TEST_SERVER_H_
#define HURRAY_STREAM_HTTP_TESTING_HTTP_TEST_SERVER_H_

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/string_view.h"

namespace hurray::stream::http::testing {

class HttpTestServer {
 public:
  using Script = std::function<void(int fd)>;

  // Serves `scripts.size()` connections, then stops accepting (or stops
  // after 5 s without a connection).
  explicit HttpTestServer(std::vector<Script> scripts);
  ~HttpTestServer();  // waits for the scripts to end

  uint16_t port() const { return port_; }
  // "http://127.0.0.1:PORT" + path.
  std::string Url(absl::string_view path) const;
  // The request heads received so far, in order.
  std::vector<std::string> requests() const;

  // A script that sends `response` and closes.
  static Script Respond(std::string response);

 private:
  void Serve();

  std::vector<Script> scripts_;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  mutable std::mutex mu_;
  std::vector<std::string> requests_;
  std::thread thread_;
};

// Writes all of `s` to `fd` (MSG_NOSIGNAL).
void SendAll(int fd, absl::string_view s);

// One request head from `fd`, read a byte at a time to its empty line (so
// nothing of a next request is taken), or "" at the connection's end or
// after 5 s without a byte.
std::string ReadRequestHead(int fd);

// "HTTP/1.1 200 OK" with a Content-Length and `body`.
std::string OkResponse(absl::string_view body);

// True when `request` has a header field named `name` (any case).
bool HasField(absl::string_view request, absl::string_view name);

}  // namespace hurray::stream::http::testing

#endif  // HURRAY_STREAM_HTTP_TESTING_HTTP_TEST_SERVER_H_
