// Test helpers for stream/: a sink that records every event, feeding in
// chunks of chosen sizes, and deterministic buffer contents.
#ifndef HURRAY_STREAM_CONTAINER_TESTING_TEST_UTIL_H_
#define HURRAY_STREAM_CONTAINER_TESTING_TEST_UTIL_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "parser/descriptor.h"
#include "stream/container/tensor_sink.h"
#include "tests/vectors.h"

namespace hurray::stream::container::testing {

struct RecordedTensor {
  TensorDescriptor descriptor;
  std::vector<std::vector<uint8_t>> buffers;  // reassembled from the pieces
  bool complete = false;                      // OnTensorEnd arrived
};

// Records events and checks their order: pieces of a buffer arrive in order
// without gaps, within the buffer, and only between OnDescriptor and
// OnTensorEnd. Any violation is appended to `errors`.
class RecordingSink : public TensorSink {
 public:
  [[nodiscard]] absl::Status OnDescriptor(const TensorDescriptor& d) override;
  [[nodiscard]] absl::Status OnBufferPiece(
      uint32_t buffer_index, uint64_t offset_in_buffer,
      absl::Span<const uint8_t> piece) override;
  [[nodiscard]] absl::Status OnTensorEnd() override;
  [[nodiscard]] absl::Status OnEndOfStream() override;

  std::vector<RecordedTensor> tensors;
  bool ended = false;
  size_t pieces = 0;
  std::vector<std::string> errors;
};

// The recorded tensors and end flag are the same (descriptors, buffer bytes,
// completeness); piece boundaries may differ.
bool SameEvents(const RecordingSink& a, const RecordingSink& b);

// Deterministic, mostly non-zero bytes.
std::vector<uint8_t> Pattern(size_t size, uint32_t seed);

// One Pattern per buffer of `d`, and spans over them.
std::vector<std::vector<uint8_t>> BuffersFor(const TensorDescriptor& d,
                                             uint32_t seed);
std::vector<absl::Span<const uint8_t>> Spans(
    const std::vector<std::vector<uint8_t>>& buffers);

// Every valid vector of tests/vectors.h in a container order: each composite
// head is followed by members that bind to it (a partition in two shards, an
// overlay base and correction). Vectors carrying a composite member section
// but no head (CMP-MEM-11, strict) are left out unless `unbound_members`.
// Valid under vectors::AgreedOptions().
std::vector<vectors::Named> ContainerVectors(bool unbound_members = false);

// A group head (composition_rule 0x03) of `members` tensors.
std::unique_ptr<TensorDescriptor> GroupHead(uint32_t members);

// Calls feed(piece) over `bytes` in pieces of `chunk` bytes (the last one
// shorter). `feed` returns false to stop early.
template <typename Feed>
void FeedInChunks(absl::Span<const uint8_t> bytes, size_t chunk, Feed feed) {
  for (size_t at = 0; at < bytes.size(); at += chunk) {
    if (!feed(bytes.subspan(at, chunk))) return;
  }
}

inline absl::Span<const uint8_t> AsBytes(const std::string& s) {
  return absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(s.data()),
                             s.size());
}

}  // namespace hurray::stream::container::testing

#endif  // HURRAY_STREAM_CONTAINER_TESTING_TEST_UTIL_H_
