#include "stream/net/testing/interleaving_server.h"

#include <algorithm>
#include <map>

#include "stream/net/message.h"
#include "stream/net/server_session.h"
#include "stream/net/testing/net_test_util.h"

namespace hurray::stream::net::testing {

Transcript AnswerPipelined(const container::HrryFile& file,
                           const std::vector<std::string>& keys,
                           uint32_t max_data_frame, bool interleave) {
  std::vector<uint8_t> in;
  net::Hello hello;
  hello.max_message_size = net::kDefaultMaxMessageSize;
  net::AppendHello(&in, net::MessageType::kClientHello, 1, hello);
  for (size_t i = 0; i < keys.size(); ++i) {
    net::TensorRequest r;
    r.key = keys[i];
    net::AppendRequest(&in, static_cast<uint32_t>(i + 1), r);
  }
  NetServerOptions o;
  o.max_data_frame = max_data_frame;
  NetServerSession server(&file, o);
  const std::vector<uint8_t> out = Serve(&server, in);

  // The messages of each stream, in order; stream order of first message.
  std::vector<std::vector<std::pair<size_t, size_t>>> streams;
  std::map<uint32_t, size_t> index;
  std::pair<size_t, size_t> server_hello{0, 0};
  for (size_t at = 0; at + net::kHeaderSize <= out.size();) {
    const net::MessageHeader h = net::DecodeHeader(out.data() + at);
    const size_t size = net::kHeaderSize + h.payload_length;
    if (h.type == static_cast<uint32_t>(net::MessageType::kServerHello)) {
      server_hello = {at, size};
    } else {
      auto [it, added] = index.emplace(h.stream_id, streams.size());
      if (added) streams.emplace_back();
      streams[it->second].push_back({at, size});
    }
    at += size;
  }
  std::vector<std::pair<size_t, size_t>> order = {server_hello};
  if (interleave) {
    for (size_t round = 0;; ++round) {
      bool any = false;
      for (const auto& s : streams) {
        if (round < s.size()) {
          order.push_back(s[round]);
          any = true;
        }
      }
      if (!any) break;
    }
  } else {
    for (const auto& s : streams) order.insert(order.end(), s.begin(), s.end());
  }
  Transcript t;
  for (const auto& [at, size] : order) {
    t.message_at.push_back(t.bytes.size());
    t.stream_of.push_back(net::DecodeHeader(out.data() + at).stream_id);
    t.bytes.insert(t.bytes.end(), out.begin() + at, out.begin() + at + size);
  }
  return t;
}

}  // namespace hurray::stream::net::testing
