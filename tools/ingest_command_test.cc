// `hurray ingest` deadlines (issue 13): a peer that never completes the
// connection fails at --connect-timeout; a tcp:// source has an idle
// timeout by default.
#include "tools/ingest_command.h"

#include <unistd.h>

#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "stream/ingest/testing/full_listener.h"
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
  stream::ingest::testing::FullListener full;
  ASSERT_TRUE(full.ok());
  std::ostringstream out, err;
  const std::string source =
      "tcp://127.0.0.1:" + std::to_string(full.port()) + "/x";
  const int code = RunIngest({source, "--connect-timeout", "0.5"}, out, err);
  EXPECT_EQ(code, kExitError);
  EXPECT_NE((out.str() + err.str()).find("connect timeout"), std::string::npos)
      << out.str() << err.str();
}

}  // namespace
}  // namespace hurray::tools
