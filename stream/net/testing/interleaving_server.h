// A test server that multiplexes its answers (interchange.md § Overview:
// streams MAY be multiplexed on one connection, demultiplexed on
// stream_id): NetServerSession answers the pipelined requests one after
// another, then the answers are interleaved message by message, round
// robin over the streams, each stream's messages kept in order.
#ifndef HURRAY_STREAM_NET_TESTING_INTERLEAVING_SERVER_H_
#define HURRAY_STREAM_NET_TESTING_INTERLEAVING_SERVER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "stream/container/hrry_mmap.h"

namespace hurray::stream::net::testing {

struct Transcript {
  std::vector<uint8_t> bytes;  // SERVER_HELLO, then the answers
  // Offset of each message in `bytes`, and its stream id.
  std::vector<uint64_t> message_at;
  std::vector<uint32_t> stream_of;
};

// The server's bytes for requests of `keys` on streams 1, 2, ... (as
// NetClientSession sends them), TENSOR_DATA frames of at most
// `max_data_frame` payload bytes; interleaved when `interleave`.
Transcript AnswerPipelined(const container::HrryFile& file,
                           const std::vector<std::string>& keys,
                           uint32_t max_data_frame, bool interleave);

}  // namespace hurray::stream::net::testing

#endif  // HURRAY_STREAM_NET_TESTING_INTERLEAVING_SERVER_H_
