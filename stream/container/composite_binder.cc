#include "stream/container/composite_binder.h"

namespace hurray::stream::container {

CompositeBinder::CompositeBinder(Mode mode, const ContainerLimits& limits) {
  options_.mode = mode;
  options_.max_depth = limits.max_composite_depth;
  options_.max_members = limits.max_members;
  options_.max_box_words = limits.max_box_words;
  options_.max_overlap_work = limits.max_overlap_work;
}

Rejection CompositeBinder::Place(const Rejection& r, uint64_t current) const {
  // A rejection the validator did not record (CMP-MEM-11 of an unbound
  // member) is about the current descriptor.
  if (validator_ == nullptr || !(r == validator_->rejection())) {
    return {r.rule, current + r.offset, r.message};
  }
  const CompositeValidator::Where w = validator_->where();
  uint64_t base = current;
  if (w.depth >= 1 && w.depth <= depth_) {
    const Level& l = levels_[w.depth - 1];
    if (w.member == CompositeValidator::Where::kHead) {
      base = l.head;
    } else if (l.first + w.member < members_.size()) {
      base = members_[l.first + w.member];
    }
  }
  // Deeper than the mirror: the head the validator was opening, which is
  // the current descriptor.
  return {r.rule, base + r.offset, r.message};
}

void CompositeBinder::Sync(const TensorDescriptor& d, uint64_t offset) {
  // The validator opened a level for a head, then closed every completed one.
  if (d.layout_tag == layout_tag::kComposite && depth_ < levels_.size()) {
    levels_[depth_++] = {offset, members_.size()};
  }
  while (depth_ > validator_->depth()) {
    members_.resize(levels_[--depth_].first);
  }
}

Rejection CompositeBinder::OnDescriptor(const TensorDescriptor& d,
                                        uint64_t offset) {
  const bool head = d.layout_tag == layout_tag::kComposite;
  if (validator_ == nullptr) {
    if (!head) {
      const Rejection r =
          CompositeValidator::RejectUnboundMember(d, options_.mode);
      if (r.ok()) return kAccepted;
      return {r.rule, offset + r.offset, r.message};
    }
    validator_ = std::make_unique<CompositeValidator>(options_);
  }
  // Inside a composite, the descriptor is the next member of the innermost
  // open head.
  if (depth_ > 0) members_.push_back(offset);
  const Rejection r = head ? validator_->Begin(d) : validator_->AddMember(d);
  if (!r.ok()) return Place(r, offset);
  Sync(d, offset);
  return kAccepted;
}

Rejection CompositeBinder::Finish() {
  if (validator_ == nullptr) return kAccepted;
  const Rejection r = validator_->Finish();
  return r.ok() ? kAccepted : Place(r, 0);
}

}  // namespace hurray::stream::container
