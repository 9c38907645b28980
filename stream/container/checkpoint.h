// Where a reader of our containers continues after a tensor boundary: the
// checkpoint that stream/ingest/consumers.h hands out after each completed
// tensor (and continues from) and that stream/resume/ingest_state.h keeps in a
// `hurray ingest --resume` state file.
#ifndef HURRAY_STREAM_CONTAINER_CHECKPOINT_H_
#define HURRAY_STREAM_CONTAINER_CHECKPOINT_H_

#include <cstdint>
#include <vector>

#include "stream/container/tensor_walker.h"

namespace hurray::stream::container {

// Which of our containers the input bytes are: a bare stream or a .hrry
// file (not known yet: kUnknown). stream/convert's ImportFormat is the
// foreign format an import reads.
enum class ContainerFormat : uint8_t { kUnknown, kStream, kHrry };

// What a reader needs to continue after a tensor boundary.
struct Checkpoint {
  ContainerFormat format = ContainerFormat::kStream;
  uint64_t offset = 0;   // the next byte to read
  uint64_t tensors = 0;  // tensors completed before it
  // CRC-32C of the bytes before `offset`, computed as they passed (the
  // resume state binds itself to its source with it).
  uint32_t crc32c = 0;
  // .hrry only: the header, the 40 bytes before `offset` (the trailer
  // candidate, hrry_file.h) and the extents of the tensors walked.
  std::vector<uint8_t> header;
  std::vector<uint8_t> last;
  std::vector<TensorExtent> extents;
};

}  // namespace hurray::stream::container

#endif  // HURRAY_STREAM_CONTAINER_CHECKPOINT_H_
