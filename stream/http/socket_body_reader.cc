#include "stream/http/socket_body_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace hurray::stream::http {
namespace {

using Transport = SocketBodyReader::Transport;

Transport* Of(BIO* b) { return static_cast<Transport*>(BIO_get_data(b)); }

// One recv on the non-blocking socket (retried on EINTR), for the plain
// body and for the BIO under OpenSSL alike.
enum class Recv : uint8_t { kData, kEnd, kWouldBlock, kError };
Recv RecvSome(int fd, void* out, size_t len, size_t* got) {
  for (;;) {
    const ssize_t n = ::recv(fd, out, len, 0);
    if (n > 0) {
      *got = static_cast<size_t>(n);
      return Recv::kData;
    }
    if (n == 0) return Recv::kEnd;
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK ? Recv::kWouldBlock
                                                   : Recv::kError;
  }
}

// The BIO under OpenSSL: the prefix first, then recv on the non-blocking
// socket (EAGAIN, or the read's budget spent: a retry, which OpenSSL
// reports as SSL_ERROR_WANT_READ).
int BioRead(BIO* b, char* out, size_t len, size_t* got) {
  Transport* t = Of(b);
  BIO_clear_retry_flags(b);
  *got = 0;
  if (t->budget == 0) {
    BIO_set_retry_read(b);
    return 0;
  }
  len = std::min(len, t->budget);
  if (t->prefix_at < t->prefix.size()) {
    const size_t n = std::min(len, t->prefix.size() - t->prefix_at);
    std::memcpy(out, t->prefix.data() + t->prefix_at, n);
    t->prefix_at += n;
    if (t->prefix_at == t->prefix.size()) {
      std::vector<uint8_t>().swap(t->prefix);
      t->prefix_at = 0;
    }
    *got = n;
    t->budget -= n;
    return 1;
  }
  switch (RecvSome(t->fd, out, len, got)) {
    case Recv::kData:
      t->budget -= *got;
      return 1;
    case Recv::kEnd:
      t->eof = true;
      return 0;
    case Recv::kWouldBlock:
      BIO_set_retry_read(b);
      return 0;
    case Recv::kError:
      t->error = errno;
      return 0;
  }
  return 0;
}

// TLS 1.3 may answer the peer while reading (a KeyUpdate): send on the same
// socket, EAGAIN a retry (SSL_ERROR_WANT_WRITE).
int BioWrite(BIO* b, const char* in, size_t len, size_t* put) {
  Transport* t = Of(b);
  BIO_clear_retry_flags(b);
  *put = 0;
  for (;;) {
    const ssize_t n = ::send(t->fd, in, len, MSG_NOSIGNAL);
    if (n >= 0) {
      *put = static_cast<size_t>(n);
      return 1;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      BIO_set_retry_write(b);
      return 0;
    }
    t->error = errno;
    return 0;
  }
}

long BioCtrl(BIO* b, int cmd, long, void*) {
  switch (cmd) {
    case BIO_CTRL_FLUSH:
      return 1;
    case BIO_CTRL_EOF:  // OpenSSL tells an unexpected end from a retry
      return Of(b)->eof ? 1 : 0;
    case BIO_CTRL_PENDING:
      return static_cast<long>(Of(b)->prefix.size() - Of(b)->prefix_at);
    default:
      return 0;
  }
}

int BioCreate(BIO* b) {
  BIO_set_init(b, 1);
  return 1;
}

// One method for the process, made on first use (thread-safe static).
const BIO_METHOD* Method() {
  static BIO_METHOD* const method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK,
                                 "hurray body socket");
    if (m == nullptr) return m;
    BIO_meth_set_read_ex(m, BioRead);
    BIO_meth_set_write_ex(m, BioWrite);
    BIO_meth_set_ctrl(m, BioCtrl);
    BIO_meth_set_create(m, BioCreate);
    return m;
  }();
  return method;
}

std::string OpenSslError() {
  const unsigned long e = ERR_peek_last_error();
  if (e == 0) return "TLS error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof(buf));
  return buf;
}

}  // namespace

absl::StatusOr<std::unique_ptr<SocketBodyReader>> SocketBodyReader::Create(
    int fd, SSL* ssl, size_t read_budget) {
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    return absl::InternalError(
        absl::StrCat("cannot make the socket non-blocking: ", strerror(errno)));
  }
  const int event_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (event_fd < 0) {
    return absl::InternalError(absl::StrCat("eventfd: ", std::strerror(errno)));
  }
  std::unique_ptr<SocketBodyReader> r(
      new SocketBodyReader(fd, nullptr, event_fd));
  r->read_budget_ = std::max<size_t>(read_budget, 1);
  if (ssl == nullptr) return r;
  // Until SSL_set_bio below, r leaves `ssl` alone (r->ssl_ is null): a
  // failure on the way gives it back to its owner as it was.
  BIO* old = SSL_get_rbio(ssl);
  if (old != nullptr) {
    // Output OpenSSL wrote that Asio has not sent would be lost.
    if (BIO_wpending(old) > 0) {
      return absl::InternalError(
          "the TLS connection has output waiting to be sent");
    }
    // The ciphertext Asio put in the pair that OpenSSL has not read yet.
    char buf[4096];
    for (;;) {
      const int n = BIO_read(old, buf, sizeof(buf));
      if (n <= 0) break;
      r->transport_.prefix.insert(r->transport_.prefix.end(), buf, buf + n);
    }
  }
  const BIO_METHOD* method = Method();
  BIO* bio = method == nullptr ? nullptr : BIO_new(method);
  if (bio == nullptr) {
    return absl::InternalError("cannot make the TLS socket BIO");
  }
  BIO_set_data(bio, &r->transport_);
  // One reference for both directions; the old pair end is freed here.
  SSL_set_bio(ssl, bio, bio);
  r->ssl_ = ssl;
  // Asio asks OpenSSL to free its read buffer whenever it empties: here
  // that would be a 256 KiB free and malloc every few records.
  SSL_clear_mode(ssl, SSL_MODE_RELEASE_BUFFERS);
  return r;
}

SocketBodyReader::SocketBodyReader(int fd, SSL* ssl, int event_fd)
    : ssl_(ssl), event_fd_(event_fd) {
  transport_.fd = fd;
}

SocketBodyReader::~SocketBodyReader() {
  // The BIO stays with the SSL object (freed with it) and points at
  // transport_: detach it, so that nothing reads through it after us.
  if (ssl_ != nullptr) {
    if (BIO* b = SSL_get_rbio(ssl_); b != nullptr) BIO_set_data(b, nullptr);
    SSL_set_bio(ssl_, nullptr, nullptr);
  }
  ::close(event_fd_);
}

void SocketBodyReader::Interrupt() {
  interrupted_ = true;
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(event_fd_, &one, sizeof(one));
}

bool SocketBodyReader::ReadOnce(absl::Span<uint8_t> into, size_t* got,
                                short* wait_events, Result* result) {
  *got = 0;
  *wait_events = 0;
  if (ssl_ == nullptr) {
    switch (RecvSome(transport_.fd, into.data(), into.size(), got)) {
      case Recv::kData:
        return true;
      case Recv::kEnd:
        result->outcome = Outcome::kEnd;
        return false;
      case Recv::kWouldBlock:
        *wait_events = POLLIN;
        return true;
      case Recv::kError:
        result->outcome = Outcome::kError;
        result->error = std::strerror(errno);
        return false;
    }
  }
  ERR_clear_error();
  transport_.error = 0;
  transport_.budget = read_budget_;
  if (SSL_read_ex(ssl_, into.data(), into.size(), got) == 1) return true;
  switch (SSL_get_error(ssl_, 0)) {
    case SSL_ERROR_WANT_READ:
      *wait_events = POLLIN;
      return true;
    case SSL_ERROR_WANT_WRITE:
      *wait_events = POLLOUT;
      return true;
    case SSL_ERROR_ZERO_RETURN:  // close_notify
      result->outcome = Outcome::kEnd;
      return false;
    case SSL_ERROR_SYSCALL:
      if (transport_.error != 0) {
        result->outcome = Outcome::kError;
        result->error = std::strerror(transport_.error);
        return false;
      }
      result->outcome = Outcome::kEnd;  // the socket ended mid-record
      return false;
    default:
      if (transport_.eof) {  // an end without close_notify
        result->outcome = Outcome::kEnd;
        return false;
      }
      result->outcome = Outcome::kError;
      result->error = OpenSslError();
      return false;
  }
}

SocketBodyReader::Result SocketBodyReader::Read(absl::Span<uint8_t> into,
                                                Clock::time_point deadline) {
  Result result;
  while (result.bytes < into.size()) {
    size_t got = 0;
    short wait_events = 0;
    if (!ReadOnce(into.subspan(result.bytes), &got, &wait_events, &result)) {
      return result;
    }
    result.bytes += got;
    if (wait_events == 0) continue;
    if (result.bytes > 0) break;  // no waiting once bytes came
    result.outcome = Wait(wait_events, deadline, &result.error);
    if (result.outcome != Outcome::kOk) return result;
  }
  return result;
}

SocketBodyReader::Result SocketBodyReader::Write(
    absl::Span<const uint8_t> bytes, Clock::time_point deadline) {
  Result result;
  while (result.bytes < bytes.size()) {
    const absl::Span<const uint8_t> rest = bytes.subspan(result.bytes);
    short wait_events = 0;
    if (ssl_ == nullptr) {
      const ssize_t n =
          ::send(transport_.fd, rest.data(), rest.size(), MSG_NOSIGNAL);
      if (n > 0) {
        result.bytes += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        wait_events = POLLOUT;
      } else {
        result.outcome = Outcome::kError;
        result.error = std::strerror(n < 0 ? errno : EPIPE);
        return result;
      }
    } else {
      ERR_clear_error();
      transport_.error = 0;
      transport_.budget = read_budget_;
      size_t put = 0;
      if (SSL_write_ex(ssl_, rest.data(), rest.size(), &put) == 1) {
        result.bytes += put;
        continue;
      }
      switch (SSL_get_error(ssl_, 0)) {
        case SSL_ERROR_WANT_READ:
          wait_events = POLLIN;
          break;
        case SSL_ERROR_WANT_WRITE:
          wait_events = POLLOUT;
          break;
        case SSL_ERROR_ZERO_RETURN:
          result.outcome = Outcome::kEnd;
          return result;
        default:
          result.outcome = Outcome::kError;
          result.error = transport_.error != 0
                             ? std::string(std::strerror(transport_.error))
                             : OpenSslError();
          return result;
      }
    }
    result.outcome = Wait(wait_events, deadline, &result.error);
    if (result.outcome != Outcome::kOk) return result;
  }
  return result;
}

SocketBodyReader::Outcome SocketBodyReader::Wait(short events,
                                                 Clock::time_point deadline,
                                                 std::string* error) {
  for (;;) {
    if (interrupted_) return Outcome::kInterrupted;
    int timeout_ms = -1;
    if (deadline != Clock::time_point::max()) {
      const Clock::time_point now = Clock::now();
      if (now >= deadline) return Outcome::kTimeout;
      // Rounded up: a wait never ends before the deadline.
      const auto ms =
          std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
      timeout_ms = static_cast<int>(std::min<int64_t>(ms, INT_MAX));
    }
    pollfd p[2] = {{transport_.fd, events, 0}, {event_fd_, POLLIN, 0}};
    const int n = ::poll(p, 2, timeout_ms);
    if (n < 0) {
      if (errno == EINTR) continue;
      *error = absl::StrCat("poll: ", std::strerror(errno));
      return Outcome::kError;
    }
    if (p[1].revents != 0 || interrupted_) return Outcome::kInterrupted;
    // Readiness, a hang-up or an error: the next read tells which.
    if (p[0].revents != 0) return Outcome::kOk;
  }
}

}  // namespace hurray::stream::http
