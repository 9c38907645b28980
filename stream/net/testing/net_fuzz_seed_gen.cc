// Writes the seed corpus of //fuzz:net_session_fuzz into the directory given
// as the only argument: valid conversations in both directions and, per NET
// rule, the broken sequence of stream/net/testing/net_rule_cases.h. Each seed
// starts with the fuzz target's flag byte (bit 0: permissive; bits 1–7: split
// seed).
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "stream/net/message.h"
#include "stream/net/testing/interleaving_server.h"
#include "stream/net/testing/net_rule_cases.h"
#include "stream/net/testing/net_test_util.h"

namespace {

bool Write(const std::string& dir, const std::string& name, uint8_t flags,
           const std::vector<uint8_t>& bytes) {
  std::ofstream out(dir + "/" + name, std::ios::binary);
  out.put(static_cast<char>(flags));
  out.write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  return static_cast<bool>(out);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace hurray::stream;
  if (argc != 2) {
    std::cerr << "usage: net_fuzz_seed_gen DIR\n";
    return 2;
  }
  const std::string dir = argv[1];
  bool ok = true;
  // The fuzz target's file and keys: NetTestFile(3000); "dense", "quant",
  // "partition".
  const auto bytes = net::testing::NetTestFile(3000);
  const auto file = net::testing::OpenTestFile(bytes);
  const std::vector<std::string> keys = {"dense", "quant", "partition"};
  ok &= Write(dir, "valid_server_responses", 0x00,
              net::testing::ServerTranscript(*file, keys));
  ok &= Write(dir, "valid_server_responses_split7", 0x0E,
              net::testing::ServerTranscript(*file, keys));
  // The same answers multiplexed: interleaved message by message.
  const auto interleaved =
      net::testing::AnswerPipelined(*file, keys, 256, /*interleave=*/true)
          .bytes;
  ok &= Write(dir, "valid_server_responses_interleaved", 0x00, interleaved);
  ok &= Write(dir, "valid_server_responses_interleaved_split7", 0x0E,
              interleaved);
  // A sharded answer, its four shard streams interleaved (§ Parallel
  // Transfers).
  const auto shards = net::testing::InterleavedShardAnswer();
  ok &= Write(dir, "valid_sharded_answer_interleaved", 0x00, shards);
  ok &= Write(dir, "valid_sharded_answer_interleaved_split7", 0x0E, shards);
  // The client's side of the same conversation, and a listing request, for
  // the server.
  std::vector<uint8_t> client = net::testing::ClientHelloBytes();
  uint32_t stream = 1;
  for (const char* k :
       {"dense", "quant", "partition", "hurray:list", "nope", "big"}) {
    const auto r = net::testing::RequestBytes(stream++, k);
    client.insert(client.end(), r.begin(), r.end());
  }
  ok &= Write(dir, "valid_client_requests", 0x00, client);
  for (const net::testing::NetRuleCase& c : net::testing::AllNetRuleCases()) {
    const uint8_t flags = c.mode == hurray::Mode::kPermissive ? 1 : 0;
    ok &= Write(dir, "rule_" + c.id, flags, c.broken);
    ok &= Write(dir, "valid_for_" + c.id, flags, c.valid);
  }
  return ok ? 0 : 1;
}
