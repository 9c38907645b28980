// `hurray ingest` deadlines (issue 13): a peer that never completes the
// connection fails at --connect-timeout; a tcp:// source has an idle
// timeout by default.
#include "tools/ingest_command.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tools/command_util.h"

namespace hurray::tools {
namespace {

TEST(IngestCommand, TcpSourcesHaveADefaultIdleTimeout) {
  EXPECT_EQ(IdleTimeoutFor("tcp://127.0.0.1:7420", std::nullopt),
            kNetIdleTimeoutSeconds);
  EXPECT_GT(kNetIdleTimeoutSeconds, 0);
  EXPECT_EQ(IdleTimeoutFor("tcp://127.0.0.1:7420", 2.5), 2.5);
  EXPECT_EQ(IdleTimeoutFor("model.hrry", std::nullopt), 0);
  EXPECT_EQ(IdleTimeoutFor("/tmp/fifo", 2), 2);
  EXPECT_GT(kConnectTimeoutSeconds, 0);
}

// A listener whose accept queue is full drops the SYN: the connect would
// wait for the kernel's retries (minutes) without a connect timeout.
TEST(IngestCommand, ConnectTimeoutEndsAHangingConnect) {
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_EQ(::listen(listener, 0), 0);
  socklen_t len = sizeof(a);
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len);
  std::vector<int> fillers;
  for (int i = 0; i < 4; ++i) {
    const int f = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    (void)::connect(f, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    fillers.push_back(f);
  }
  std::ostringstream out, err;
  const std::string source =
      "tcp://127.0.0.1:" + std::to_string(ntohs(a.sin_port)) + "/x";
  const int code = RunIngest({source, "--connect-timeout", "0.5"}, out, err);
  for (int f : fillers) ::close(f);
  ::close(listener);
  EXPECT_EQ(code, kExitError);
  EXPECT_NE((out.str() + err.str()).find("connect timeout"), std::string::npos)
      << out.str() << err.str();
}

}  // namespace
}  // namespace hurray::tools
