// SocketBodyReader over a socketpair: plain bytes, then TLS taken over from
// a BIO pair that still holds ciphertext (as Asio's stream leaves it after
// the header), every byte in order; the end of the connection with and
// without close_notify; the deadline; Interrupt from another thread.
#include "stream/http/socket_body_reader.h"

#include <openssl/bio.h>
#include <openssl/buffer.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace hurray::stream::http {
namespace {

using Clock = std::chrono::steady_clock;
using Outcome = SocketBodyReader::Outcome;

struct Pair {
  Pair() { EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fd), 0); }
  ~Pair() {
    ::close(fd[0]);
    ::close(fd[1]);
  }
  int fd[2] = {-1, -1};
};

std::vector<uint8_t> RandomBytes(size_t n) {
  std::mt19937 rng(7);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

// False when the peer went away first.
bool SendAll(int fd, const uint8_t* p, size_t n) {
  while (n > 0) {
    const ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
    if (k <= 0) return false;
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

// Reads until the outcome is not kOk; the bytes in *out.
Outcome ReadToEnd(SocketBodyReader& r, std::vector<uint8_t>* out) {
  uint8_t buf[7000];  // not a multiple of a TLS record
  for (;;) {
    const SocketBodyReader::Result res =
        r.Read(buf, Clock::now() + std::chrono::seconds(10));
    out->insert(out->end(), buf, buf + res.bytes);
    if (res.outcome != Outcome::kOk) return res.outcome;
    EXPECT_GT(res.bytes, 0u);
  }
}

TEST(SocketBodyReader, PlainBytesInOrderThenTheEnd) {
  Pair p;
  const std::vector<uint8_t> body = RandomBytes(300000);
  std::thread server([&] {
    SendAll(p.fd[1], body.data(), body.size());
    ::shutdown(p.fd[1], SHUT_WR);
  });
  auto r = SocketBodyReader::Create(p.fd[0], nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<uint8_t> got;
  EXPECT_EQ(ReadToEnd(**r, &got), Outcome::kEnd);
  server.join();
  EXPECT_EQ(got, body);
}

TEST(SocketBodyReader, NothingBeforeTheDeadlineIsATimeout) {
  Pair p;
  auto r = SocketBodyReader::Create(p.fd[0], nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  uint8_t buf[16];
  const Clock::time_point t0 = Clock::now();
  const auto res = (*r)->Read(buf, t0 + std::chrono::milliseconds(150));
  EXPECT_EQ(res.outcome, Outcome::kTimeout);
  EXPECT_EQ(res.bytes, 0u);
  EXPECT_GE(Clock::now() - t0, std::chrono::milliseconds(150));
  // Bytes that came stop the wait at once, whatever the deadline.
  SendAll(p.fd[1], buf, 5);
  const auto more = (*r)->Read(buf, Clock::time_point::max());
  EXPECT_EQ(more.outcome, Outcome::kOk);
  EXPECT_EQ(more.bytes, 5u);
}

TEST(SocketBodyReader, InterruptEndsAWaitWithoutDeadline) {
  Pair p;
  auto r = SocketBodyReader::Create(p.fd[0], nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  std::thread other([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    (*r)->Interrupt();
  });
  uint8_t buf[16];
  const auto res = (*r)->Read(buf, Clock::time_point::max());
  other.join();
  EXPECT_EQ(res.outcome, Outcome::kInterrupted);
}

// A throw-away self-signed certificate for the server side.
struct ServerCtx {
  ServerCtx() {
    ctx = SSL_CTX_new(TLS_server_method());
    EVP_PKEY* key = EVP_EC_gen("P-256");
    X509* x = X509_new();
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), 0);
    X509_gmtime_adj(X509_getm_notAfter(x), 3600);
    X509_set_pubkey(x, key);
    X509_NAME* name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>("t"), -1,
                               -1, 0);
    X509_set_issuer_name(x, name);
    X509_sign(x, key, EVP_sha256());
    EXPECT_EQ(SSL_CTX_use_certificate(ctx, x), 1);
    EXPECT_EQ(SSL_CTX_use_PrivateKey(ctx, key), 1);
    X509_free(x);
    EVP_PKEY_free(key);
  }
  ~ServerCtx() { SSL_CTX_free(ctx); }
  SSL_CTX* ctx;
};

// The server: TLS on fd, `body` in records of up to 16 KiB, then
// close_notify or not, then the end of the stream. With `refused` (TLS
// 1.2): asks the client for a new handshake half-way, and after the body
// reads the client's answer (3 s at most); *refused: it was the
// no_renegotiation alert, sent through the reader's BIO (the server then
// ends with a fatal alert).
void ServeTls(SSL_CTX* ctx, int fd, const std::vector<uint8_t>& body,
              bool close_notify, bool* refused = nullptr) {
  bool renegotiate = refused != nullptr;
  SSL* s = SSL_new(ctx);
  SSL_set_fd(s, fd);
  if (SSL_accept(s) == 1) {
    size_t at = 0;
    while (at < body.size()) {
      if (renegotiate && at >= body.size() / 2) {
        renegotiate = false;
        EXPECT_EQ(SSL_renegotiate(s), 1);
        SSL_do_handshake(s);  // sends the HelloRequest
      }
      size_t put = 0;
      if (SSL_write_ex(s, body.data() + at,
                       std::min<size_t>(body.size() - at, 9000), &put) != 1) {
        break;
      }
      at += put;
    }
    if (refused != nullptr) {
      const timeval limit{3, 0};
      ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
      char c;
      *refused =
          SSL_read(s, &c, 1) <= 0 &&
          ERR_GET_REASON(ERR_peek_last_error()) == SSL_R_NO_RENEGOTIATION;
    } else if (close_notify) {
      SSL_shutdown(s);
    }
  }
  ::shutdown(fd, SHUT_WR);
  SSL_free(s);
}

// The client as Asio leaves it: the SSL object reads and writes through a
// BIO pair that the caller fills from the socket. Handshakes, then moves
// `extra` bytes of ciphertext into the pair without decrypting them. The
// pair's outer end in *outer, for the caller to free (as Asio does).
SSL* AsioLikeClient(SSL_CTX* ctx, int fd, size_t extra, BIO** outer) {
  SSL* ssl = SSL_new(ctx);
  SSL_set_read_ahead(ssl, 1);
  SSL_set_default_read_buffer_len(ssl, kTlsReadAheadBytes);
  BIO* in = nullptr;
  BIO* ext = nullptr;
  BIO_new_bio_pair(&in, 0, &ext, 0);
  SSL_set_bio(ssl, in, in);
  *outer = ext;
  SSL_set_connect_state(ssl);
  char buf[17 << 10];
  auto flush = [&] {
    int n;
    while ((n = BIO_read(ext, buf, sizeof(buf))) > 0) {
      SendAll(fd, reinterpret_cast<uint8_t*>(buf), static_cast<size_t>(n));
    }
  };
  auto fill = [&](size_t most) {
    const size_t room = std::min(most, BIO_ctrl_get_write_guarantee(ext));
    const ssize_t n = ::recv(fd, buf, std::min(room, sizeof(buf)), 0);
    if (n > 0) BIO_write(ext, buf, static_cast<int>(n));
    return n > 0;
  };
  for (;;) {
    const int r = SSL_do_handshake(ssl);
    flush();
    if (r == 1) break;
    if (SSL_get_error(ssl, r) != SSL_ERROR_WANT_READ || !fill(sizeof(buf))) {
      ADD_FAILURE() << "handshake";
      break;
    }
  }
  size_t moved = 0;
  while (moved < extra) {
    const size_t before = BIO_ctrl_pending(in);
    if (!fill(extra - moved)) break;
    moved += BIO_ctrl_pending(in) - before;
  }
  EXPECT_EQ(BIO_ctrl_pending(in), extra);
  return ssl;
}

void TlsBody(bool close_notify, size_t extra, bool renegotiate = false) {
  Pair p;
  ServerCtx server_ctx;
  SSL_CTX* client_ctx = SSL_CTX_new(TLS_client_method());
  if (renegotiate) {
    SSL_CTX_set_max_proto_version(server_ctx.ctx, TLS1_2_VERSION);
    // As HttpBody sets it: the request is refused with an alert, which the
    // reader sends through its BIO, and the body goes on.
    SSL_CTX_set_options(client_ctx, SSL_OP_NO_RENEGOTIATION);
  }
  const std::vector<uint8_t> body = RandomBytes(200000);
  bool refused = false;
  std::thread server([&] {
    ServeTls(server_ctx.ctx, p.fd[1], body, close_notify,
             renegotiate ? &refused : nullptr);
  });
  BIO* outer = nullptr;
  SSL* ssl = AsioLikeClient(client_ctx, p.fd[0], extra, &outer);
  {
    auto r = SocketBodyReader::Create(p.fd[0], ssl);
    ASSERT_TRUE(r.ok()) << r.status();
    std::vector<uint8_t> got;
    // Refused, the server ends with a fatal alert after the body.
    EXPECT_EQ(ReadToEnd(**r, &got),
              renegotiate ? Outcome::kError : Outcome::kEnd);
    EXPECT_EQ(got.size(), body.size());
    EXPECT_TRUE(got == body);
  }
  // The reader gone, the SSL object holds no BIO pointing at it.
  EXPECT_EQ(SSL_get_rbio(ssl), nullptr);
  server.join();
  EXPECT_EQ(refused, renegotiate);
  BIO_free(outer);
  SSL_free(ssl);
  SSL_CTX_free(client_ctx);
}

TEST(SocketBodyReader, TlsTakesOverTheCiphertextLeftInThePair) {
  TlsBody(/*close_notify=*/true, /*extra=*/5000);  // records cut mid-way
}

TEST(SocketBodyReader, TlsWithAnEmptyPair) { TlsBody(true, 0); }

TEST(SocketBodyReader, TlsEndWithoutCloseNotifyIsTheEnd) {
  TlsBody(/*close_notify=*/false, 5000);
}

TEST(SocketBodyReader, TlsRenegotiationRequestIsRefusedAndTheBodyGoesOn) {
  TlsBody(/*close_notify=*/true, 5000, /*renegotiate=*/true);
}

// A TLS 1.3 server that, before its body, sends thousands of session
// tickets (records without data, each costing the client a key
// derivation), made ahead of time and sent as fast as the socket takes
// them. With the socket already holding far more than the read budget, a
// Read interrupted before it starts ends with kInterrupted after that
// budget, instead of working through the whole flood and reaching the body
// (no EAGAIN on the way would ever let it see the interrupt).
TEST(SocketBodyReader, AFloodOfRecordsWithoutDataDoesNotHoldTheRead) {
  ::signal(SIGPIPE, SIG_IGN);  // the server writes to a peer that left
  Pair p;
  ServerCtx server_ctx;
  SSL_CTX* client_ctx = SSL_CTX_new(TLS_client_method());
  const std::vector<uint8_t> body = RandomBytes(1000);
  std::thread server([&] {
    SSL* s = SSL_new(server_ctx.ctx);
    SSL_set_fd(s, p.fd[1]);
    if (SSL_accept(s) == 1) {
      BIO* sock = SSL_get_rbio(s);
      BIO* mem = BIO_new(BIO_s_mem());
      SSL_set0_wbio(s, mem);
      for (int i = 0; i < 8000; ++i) {
        SSL_new_session_ticket(s);
        SSL_do_handshake(s);
      }
      BUF_MEM* flood = nullptr;
      BIO_get_mem_ptr(mem, &flood);
      EXPECT_GT(flood->length, size_t{1} << 20);
      const bool sent =
          SendAll(p.fd[1], reinterpret_cast<const uint8_t*>(flood->data),
                  flood->length);
      BIO_up_ref(sock);
      SSL_set0_wbio(s, sock);
      size_t put = 0;
      if (sent) SSL_write_ex(s, body.data(), body.size(), &put);
    }
    ::shutdown(p.fd[1], SHUT_WR);
    SSL_free(s);
  });
  BIO* outer = nullptr;
  SSL* ssl = AsioLikeClient(client_ctx, p.fd[0], 0, &outer);
  {
    constexpr size_t kBudget = 16 << 10;
    auto r = SocketBodyReader::Create(p.fd[0], ssl, kBudget);
    ASSERT_TRUE(r.ok()) << r.status();
    // Wait until the socket holds 4 budgets of the flood (the server keeps
    // it full from then on).
    int queued = 0;
    for (int i = 0; i < 10000 && queued < int{4 * kBudget}; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      ASSERT_EQ(::ioctl(p.fd[0], FIONREAD, &queued), 0);
    }
    ASSERT_GE(queued, int{4 * kBudget});
    (*r)->Interrupt();
    uint8_t buf[4096];
    const auto res = (*r)->Read(buf, Clock::time_point::max());
    EXPECT_EQ(res.outcome, Outcome::kInterrupted);
    EXPECT_EQ(res.bytes, 0u);
  }
  ::shutdown(p.fd[0], SHUT_RDWR);  // the server's send ends
  server.join();
  BIO_free(outer);
  SSL_free(ssl);
  SSL_CTX_free(client_ctx);
}

// Output OpenSSL wrote into the pair that was not sent yet would be lost:
// Create refuses, and the SSL object keeps its BIOs, untouched.
TEST(SocketBodyReader, ARefusedTakeOverLeavesTheSslObjectAsItWas) {
  Pair p;
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL* ssl = SSL_new(ctx);
  BIO* in = nullptr;
  BIO* outer = nullptr;
  BIO_new_bio_pair(&in, 0, &outer, 0);
  SSL_set_bio(ssl, in, in);
  ASSERT_EQ(BIO_write(in, "x", 1), 1);  // waiting for the peer
  auto r = SocketBodyReader::Create(p.fd[0], ssl);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(SSL_get_rbio(ssl), in);
  EXPECT_EQ(SSL_get_wbio(ssl), in);
  char c = 0;
  EXPECT_EQ(BIO_read(outer, &c, 1), 1);  // the pair still works
  EXPECT_EQ(c, 'x');
  BIO_free(outer);
  SSL_free(ssl);
  SSL_CTX_free(ctx);
}

}  // namespace
}  // namespace hurray::stream::http
