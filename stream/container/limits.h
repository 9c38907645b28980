// Resource limits of the stream and file readers (REJECT-RULES.md §5). Each
// is a rejection when exceeded, decided from declared sizes before a byte of
// the data they declare is read; nothing is ever allocated from them.
#ifndef HURRAY_STREAM_CONTAINER_LIMITS_H_
#define HURRAY_STREAM_CONTAINER_LIMITS_H_

#include <cstdint>
#include <limits>

#include "parser/composite_validator.h"

namespace hurray::stream::container {

struct ContainerLimits {
  // LIMIT-BUFFER-BYTES: the largest byte_size a buffer may declare.
  uint64_t max_buffer_bytes = uint64_t{4} << 30;
  // LIMIT-TOTAL-BYTES: bytes of the whole stream or file.
  uint64_t max_total_bytes = std::numeric_limits<uint64_t>::max();
  // CMP-MEM-10: composite heads nest at most this deep, the outermost head
  // being level 1 (RESOLUTIONS.md 16). At most kMaxCompositeDepth.
  uint32_t max_composite_depth = kMaxCompositeDepth;
  // LIMIT-MEMBERS: member_count per head, and the memory (8-byte words)
  // and work the composite validator may spend on partition boxes
  // (parser/composite_validator.h CompositeOptions). The validator and its
  // box memory are set up at the first composite head only.
  uint32_t max_members = CompositeOptions().max_members;
  uint64_t max_box_words = CompositeOptions().max_box_words;
  uint64_t max_overlap_work = CompositeOptions().max_overlap_work;
};

}  // namespace hurray::stream::container

#endif  // HURRAY_STREAM_CONTAINER_LIMITS_H_
