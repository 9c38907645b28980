// Test tool: a TCP server on 127.0.0.1 whose answers are interleaved
// (interleaving_server.h), for the CLI and Python tests of
// LIMIT-OPEN-STREAMS and LIMIT-SPOOL-BYTES (docs/network.md § Streams).
//
//   interleaving_serve FILE.hrry KEY[,KEY...]
//
// Prints "listening on 127.0.0.1:PORT", then serves connections one after
// another until killed: it waits for the client's first bytes (its
// CLIENT_HELLO), sends SERVER_HELLO and the answers to requests of the keys
// on streams 1, 2, ... interleaved message by message (the client must
// request exactly these keys, at most its max_outstanding of them), then
// reads until the client closes. Every wait has a 10 s deadline.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "stream/container/hrry_mmap.h"
#include "stream/net/testing/interleaving_server.h"
#include "stream/net/testing/net_test_util.h"

namespace {

void ServeOne(int fd, const std::vector<uint8_t>& transcript) {
  timeval deadline{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &deadline, sizeof(deadline));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &deadline, sizeof(deadline));
  uint8_t buf[4096];
  ssize_t n;
  do {
    n = recv(fd, buf, sizeof(buf), 0);
  } while (n < 0 && errno == EINTR);
  if (n > 0 && hurray::stream::net::testing::SendAll(fd, transcript)) {
    // Until the client closes (or the deadline): bounded by the client.
    hurray::stream::net::testing::ReadUntilClose(fd, size_t{1} << 20);
  }
  close(fd);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace hurray::stream;
  if (argc != 3) {
    std::cerr << "usage: interleaving_serve FILE.hrry KEY[,KEY...]\n";
    return 2;
  }
  auto file = container::HrryFile::Open(argv[1]);
  if (!file.ok()) {
    std::cerr << file.status() << "\n";
    return 2;
  }
  const std::vector<std::string> keys = absl::StrSplit(argv[2], ',');
  const net::testing::Transcript t =
      net::testing::AnswerPipelined(**file, keys, 4096, /*interleave=*/true);

  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (listener < 0 ||
      bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(listener, 8) != 0 ||
      getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    std::cerr << "cannot listen: errno " << errno << "\n";
    return 2;
  }
  std::cout << "listening on 127.0.0.1:" << ntohs(addr.sin_port) << std::endl;
  for (;;) {
    const int fd = accept(listener, nullptr, nullptr);
    if (fd < 0) {
      if (errno == EINTR) continue;
      return 2;
    }
    ServeOne(fd, t.bytes);
  }
}
