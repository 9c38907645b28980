// The NET-* rule cases shared by stream/net/rules_test.cc and the fuzz seed
// generator: for each rule, a valid message sequence and the same sequence
// broken in exactly one field, with the offset the rejection must name.
#ifndef HURRAY_STREAM_NET_TESTING_NET_RULE_CASES_H_
#define HURRAY_STREAM_NET_TESTING_NET_RULE_CASES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "parser/rules.h"
#include "stream/net/message.h"

namespace hurray::stream::net::testing {

struct NetRuleCase {
  std::string id;
  // The sequence is a client's messages fed to a server (else a server's
  // responses fed to a client asking for `keys`).
  bool server_side = false;
  std::vector<uint8_t> valid;
  std::vector<uint8_t> broken;
  uint64_t offset = 0;
  Mode mode = Mode::kStrict;
  uint32_t max_message_size = net::kDefaultMaxMessageSize;
  std::vector<std::string> keys = {"t"};
  bool wrapped = false;  // NET-TD-03 / NET-CMP-02: an inner rule in the text
};

std::vector<NetRuleCase> AllNetRuleCases();

// Feeds `in` to a client (keys, mode and maximum of `c`) or to a server over
// NetTestFile(), then Finish(); the final status.
[[nodiscard]] absl::Status RunNetRuleClient(const NetRuleCase& c,
                                            const std::vector<uint8_t>& in);
[[nodiscard]] absl::Status RunNetRuleServer(const NetRuleCase& c,
                                            const std::vector<uint8_t>& in);

// Message builders.
std::vector<uint8_t> ClientHelloBytes();
std::vector<uint8_t> RequestBytes(uint32_t stream, absl::string_view key);
std::vector<uint8_t> MessageBytes(uint32_t type, uint32_t stream,
                                  std::vector<uint8_t> payload);
std::vector<uint8_t> HeaderBytes(uint32_t type, uint32_t stream,
                                 uint32_t length);

}  // namespace hurray::stream::net::testing

#endif  // HURRAY_STREAM_NET_TESTING_NET_RULE_CASES_H_
