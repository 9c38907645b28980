// The body of an HTTP response of known length, read straight from the
// connection's socket once Beast has parsed the header (issue 15): recv(2)
// on plain TCP, SSL_read over a BIO of our own on the same socket for TLS.
//
// Why not Asio's ssl::stream: it feeds OpenSSL through a BIO pair of 17 KiB,
// so every TLS record (16 KiB) costs a recv, a copy of its ciphertext into
// the pair and a trip through the io_context (an epoll_wait and the
// FIONREAD of HttpBody's "more ready" test). Here OpenSSL reads ahead up to
// kTlsReadAheadBytes per recv straight from the socket (HttpBody sets that
// on the SSL object before the handshake) and decrypts into the caller's
// buffer: on the 1 GiB loopback benchmark that is the client CPU the
// three busy threads (nginx, our reader, our consumer) share two cores with.
//
// Every wait is poll(2) on the socket and on an eventfd that Interrupt
// signals: each has the caller's deadline, and another thread can cut it.
#ifndef HURRAY_STREAM_HTTP_SOCKET_BODY_READER_H_
#define HURRAY_STREAM_HTTP_SOCKET_BODY_READER_H_

#include <openssl/ssl.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace hurray::stream::http {

// The read-ahead buffer OpenSSL gets for a body read through
// SocketBodyReader: 16 records per recv at most.
inline constexpr size_t kTlsReadAheadBytes = 256 << 10;

// The ciphertext one SSL_read may take from the socket before it returns
// (WANT_READ) so that the deadline and Interrupt are checked: OpenSSL goes
// on through records that carry no data (TLS 1.3 session tickets, key
// updates) for as long as the socket has bytes, and a hostile server can
// keep it that busy.
inline constexpr size_t kTlsReadBudgetBytes = 2 * kTlsReadAheadBytes;

class SocketBodyReader {
 public:
  using Clock = std::chrono::steady_clock;

  enum class Outcome {
    kOk,           // `bytes` > 0 were read (or the span was empty)
    kEnd,          // the peer ended the connection (after `bytes`)
    kTimeout,      // nothing arrived before the deadline
    kInterrupted,  // Interrupt was called
    kError,        // `error` says what failed (after `bytes`)
  };
  struct Result {
    size_t bytes = 0;
    Outcome outcome = Outcome::kOk;
    std::string error;
  };

  // Takes over the transport of `ssl` (null: plain TCP on `fd`): the
  // ciphertext its current read BIO (Asio's pair) still holds is read
  // first, then the socket. Fails if that BIO still holds output for the
  // peer. `fd` is made non-blocking and stays owned by the caller, open for
  // the reader's life; `ssl` too. `read_budget`: kTlsReadBudgetBytes (tests
  // make it small).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<SocketBodyReader>> Create(
      int fd, SSL* ssl, size_t read_budget = kTlsReadBudgetBytes);
  ~SocketBodyReader();
  SocketBodyReader(const SocketBodyReader&) = delete;
  SocketBodyReader& operator=(const SocketBodyReader&) = delete;

  // Reads into `into`: waits until `deadline` for the first bytes, then
  // takes only what is there without waiting (no byte is held back).
  Result Read(absl::Span<uint8_t> into, Clock::time_point deadline);

  // Writes all of `bytes` (a request on a kept-alive connection, issue 47):
  // send(2), or SSL_write through the same BIO; every wait until
  // `deadline`. kOk once all were written; else `bytes` says how many were.
  Result Write(absl::Span<const uint8_t> bytes, Clock::time_point deadline);

  // Any thread: the current or next wait ends with kInterrupted.
  void Interrupt();

  // What the BIO keeps: the socket, and the ciphertext taken from Asio's
  // pair. Public for the BIO's callbacks (socket_body_reader.cc) only.
  struct Transport {
    int fd = -1;
    std::vector<uint8_t> prefix;
    size_t prefix_at = 0;
    bool eof = false;
    int error = 0;  // errno of a failed recv or send
    // Ciphertext one SSL_read may still take (then it reports WANT_READ).
    size_t budget = 0;
  };

 private:
  SocketBodyReader(int fd, SSL* ssl, int event_fd);
  // One read without waiting: bytes, 0 with *wait_events set (POLLIN or
  // POLLOUT) when it would block, or the end or an error in *result.
  bool ReadOnce(absl::Span<uint8_t> into, size_t* got, short* wait_events,
                Result* result);
  // Waits for `events` on the socket; kOk when they (or an error) came.
  Outcome Wait(short events, Clock::time_point deadline, std::string* error);

  Transport transport_;
  SSL* ssl_;  // set once our BIO is installed in it
  int event_fd_;
  size_t read_budget_ = kTlsReadBudgetBytes;
  std::atomic<bool> interrupted_{false};
};

}  // namespace hurray::stream::http

#endif  // HURRAY_STREAM_HTTP_SOCKET_BODY_READER_H_
