// One case per NET-* rule (REJECT-RULES.md §3.14, plus our NET-MSG-01 and
// NET-SEQ-01): a valid message sequence is accepted, the same sequence broken
// in exactly one field is rejected with that rule at that byte offset. A
// coverage test checks every NET rule of rule_list.inc has exactly one case.
#include "parser/rules.h"

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "parser/decoder.h"
#include "parser/descriptor.h"
#include "parser/element_type.h"
#include "parser/encoder.h"
#include "parser/wire.h"
#include "stream/container/testing/test_util.h"
#include "stream/net/client_session.h"
#include "stream/net/message.h"
#include "stream/net/server_session.h"
#include "stream/net/testing/net_rule_cases.h"
#include "stream/net/testing/net_test_util.h"
#include "tests/vectors.h"

namespace hurray::stream::net {
namespace {

using net::testing::Cat;
using net::testing::DataBytes;
using net::testing::DescriptorBytes;
using net::testing::EndBytes;
using net::testing::ServerHelloBytes;
using Bytes = std::vector<uint8_t>;

using net::testing::ClientHelloBytes;
using net::testing::RequestBytes;
using Case = net::testing::NetRuleCase;
constexpr size_t kH = net::kHeaderSize;

std::vector<Case> AllCases() { return net::testing::AllNetRuleCases(); }
absl::Status RunClient(const Case& c, const Bytes& in) {
  return net::testing::RunNetRuleClient(c, in);
}
absl::Status RunServer(const Case& c, const Bytes& in) {
  return net::testing::RunNetRuleServer(c, in);
}
Bytes Message(uint32_t type, uint32_t stream, Bytes payload) {
  return net::testing::MessageBytes(type, stream, std::move(payload));
}
Bytes Header(uint32_t type, uint32_t stream, uint32_t length) {
  return net::testing::HeaderBytes(type, stream, length);
}
class ServerFile {
 public:
  ServerFile()
      : bytes_(net::testing::NetTestFile(0)),
        file_(net::testing::OpenTestFile(bytes_)) {}
  const container::HrryFile& file() const { return *file_; }

 private:
  Bytes bytes_;
  std::unique_ptr<container::HrryFile> file_;
};

class NetRuleTest : public ::testing::TestWithParam<Case> {};

TEST_P(NetRuleTest, ValidAcceptedBrokenRejected) {
  const Case& c = GetParam();
  auto run = [&](const Bytes& in) {
    return c.server_side ? RunServer(c, in) : RunClient(c, in);
  };
  const absl::Status ok = run(c.valid);
  EXPECT_TRUE(ok.ok()) << c.id << " valid sequence: " << ok;
  const absl::Status bad = run(c.broken);
  ASSERT_FALSE(bad.ok()) << c.id;
  EXPECT_EQ(RuleIdOf(bad).value_or("none"), c.id) << bad;
  if (c.id == "NET-CMP-02") {
    // Inside the third descriptor message.
    EXPECT_GT(OffsetOf(bad).value_or(0), 200u) << bad;
  } else {
    EXPECT_EQ(OffsetOf(bad).value_or(~uint64_t{0}), c.offset) << bad;
  }
  if (c.wrapped) {
    const absl::string_view m = bad.message();
    const bool inner = m.find(": BUF-") != absl::string_view::npos ||
                       m.find(": CMP-") != absl::string_view::npos;
    EXPECT_TRUE(inner) << "the inner rule id is not in: " << m;
    EXPECT_TRUE(bad.GetPayload("hurray.dev/inner-rule").has_value());
  }
}

INSTANTIATE_TEST_SUITE_P(Rules, NetRuleTest, ::testing::ValuesIn(AllCases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           std::string n = info.param.id;
                           for (char& ch : n) {
                             if (ch == '-') ch = '_';
                           }
                           return n;
                         });

TEST(NetRuleCoverage, EveryNetRuleHasExactlyOneCase) {
  std::map<std::string, int> n;
  for (const Case& c : AllCases()) ++n[c.id];
  for (const RuleInfo& info : AllRules()) {
    if (info.id.substr(0, 4) != "NET-") continue;
    EXPECT_EQ(n[std::string(info.id)], 1) << info.id;
  }
  EXPECT_EQ(n.size(), 32u);
}

// Strict-only rules are relaxed in permissive mode.
TEST(NetRulesPermissive, StrictOnlyRulesAreRelaxed) {
  for (const Case& c : AllCases()) {
    const auto rule = RuleFromId(c.id);
    ASSERT_TRUE(rule.has_value());
    if (GetRuleInfo(*rule).mode != RuleMode::kStrictOnly) continue;
    Case p = c;
    p.mode = Mode::kPermissive;
    const absl::Status s =
        c.server_side ? RunServer(p, p.broken) : RunClient(p, p.broken);
    EXPECT_NE(RuleIdOf(s).value_or(""), c.id) << s;
  }
}

// Server side: the first message must be CLIENT_HELLO; server-to-client
// types from a client are NET-07; a violation is answered with ERROR.
TEST(NetServerRules, FirstMessageWrongDirectionAndErrorReply) {
  ServerFile f;
  {
    NetServerSession s(&f.file(), NetServerOptions());
    const absl::Status st = s.Feed(RequestBytes(1, "dense"));
    EXPECT_EQ(RuleIdOf(st).value_or(""), "NET-06");
    const Bytes out = net::testing::Drain(&s);
    ASSERT_GE(out.size(), kH + 8);
    EXPECT_EQ(wire::LoadU32(out.data()), 9u);       // ERROR
    EXPECT_EQ(wire::LoadU32(out.data() + kH), 6u);  // INVALID_MESSAGE
    EXPECT_TRUE(s.Closed());
  }
  {
    NetServerSession s(&f.file(), NetServerOptions());
    const Bytes ch = ClientHelloBytes();
    const absl::Status st = s.Feed(Cat({ch, Message(0x04, 1, {})}));
    EXPECT_EQ(RuleIdOf(st).value_or(""), "NET-07");
    EXPECT_EQ(OffsetOf(st).value_or(0), ch.size());
  }
  {
    NetServerOptions o;
    o.max_message_size = 1000;
    NetServerSession s(&f.file(), o);
    const Bytes ch = ClientHelloBytes();
    const absl::Status st = s.Feed(Cat({ch, Header(0x03, 1, 1001)}));
    EXPECT_EQ(RuleIdOf(st).value_or(""), "NET-01");
    const Bytes out = net::testing::Drain(&s);
    // SERVER_HELLO, then ERROR MESSAGE_TOO_LARGE.
    const uint32_t hl = wire::LoadU32(out.data() + 8);
    ASSERT_GE(out.size(), kH + hl + kH + 4);
    EXPECT_EQ(wire::LoadU32(out.data() + kH + hl), 9u);
    EXPECT_EQ(wire::LoadU32(out.data() + kH + hl + kH), 7u);
  }
  {
    // TENSOR_PUT is refused on its stream; its data frames are skipped;
    // the connection goes on.
    NetServerSession s(&f.file(), NetServerOptions());
    Bytes put;
    net::AppendPut(&put, 5, {"k", Bytes{1, 2}, 3});
    const absl::Status st =
        s.Feed(Cat({ClientHelloBytes(), put, DataBytes(5, 0, {1, 2, 3}),
                    EndBytes(5), RequestBytes(7, "dense")}));
    EXPECT_TRUE(st.ok()) << st;
    EXPECT_EQ(s.tensors_sent(), 0u);
    net::testing::Drain(&s);
    EXPECT_EQ(s.tensors_sent(), 1u);
  }
}

}  // namespace
}  // namespace hurray::stream::net
