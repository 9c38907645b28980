// CompositeBinder: runs the composite validator (parser/composite_validator.h)
// over the descriptors of a stream or file region, in order, and turns its
// rejections into absolute offsets (layouts/composite.md § Binding,
// § Validation; file-format.md § Composite Tensors; interchange.md § Composite
// Tensor Streaming): CMP-MEM-01..11, CMP-CLS-01..03 (torn composite at the
// end), LIMIT-MEMBERS.
//
// The validator, with its fixed box memory, is created at the first
// composite head: inputs without composites never pay for it. Before that,
// only CMP-MEM-11 (a member section outside any composite) can apply. To
// place a rejection that names an earlier member (CMP-CLS-01) or a head, the
// binder keeps the offsets of the open heads and of their members so far:
// 8 bytes per member of an open composite, growing with the members that
// actually arrived (bounded by LIMIT-MEMBERS and the depth limit).
#ifndef HURRAY_STREAM_CONTAINER_COMPOSITE_BINDER_H_
#define HURRAY_STREAM_CONTAINER_COMPOSITE_BINDER_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "parser/composite_validator.h"
#include "parser/descriptor.h"
#include "parser/rules.h"
#include "stream/container/limits.h"

namespace hurray::stream::container {

class CompositeBinder {
 public:
  CompositeBinder(Mode mode, const ContainerLimits& limits);

  // The descriptor starting at absolute `offset` is complete (its offsets
  // locate its fields).
  Rejection OnDescriptor(const TensorDescriptor& d, uint64_t offset);
  // The end of the stream or region: a composite still open is torn
  // (CMP-CLS-03, strict-only).
  Rejection Finish();

  // Heads still waiting for members.
  uint32_t open() const { return depth_; }

 private:
  struct Level {
    uint64_t head = 0;  // the head's descriptor offset
    size_t first = 0;   // its first member in members_
  };

  // `r`, relative to the descriptor the validator names, made absolute.
  Rejection Place(const Rejection& r, uint64_t current) const;
  void Sync(const TensorDescriptor& d, uint64_t offset);

  CompositeOptions options_;
  std::unique_ptr<CompositeValidator> validator_;  // from the first head on
  std::array<Level, kMaxCompositeDepth> levels_{};
  uint32_t depth_ = 0;  // mirrors validator_->depth()
  std::vector<uint64_t> members_;
};

}  // namespace hurray::stream::container

#endif  // HURRAY_STREAM_CONTAINER_COMPOSITE_BINDER_H_
