#include "parser/composite_validator.h"

#include <algorithm>

#include "parser/box_overlap.h"
#include "parser/element_type.h"
#include "parser/wire.h"

namespace hurray {
namespace {

constexpr uint8_t kPartition = 0x01;
constexpr uint8_t kOverlay = 0x02;
constexpr uint8_t kGroup = 0x03;
constexpr uint8_t kBase = 0x01;
constexpr uint8_t kCorrection = 0x00;

bool IsRealFloat(uint8_t tag) {
  return tag == type_tag::kFloat16 || tag == type_tag::kBFloat16 ||
         tag == type_tag::kFloat32 || tag == type_tag::kFloat64;
}

// Box words per member: header, lo[rank], hi[rank].
uint64_t BoxWords(uint32_t rank) { return 2ull * rank + 1; }

}  // namespace

// --- Count. ------------------------------------------------------------------

void CompositeValidator::Count::Set(uint64_t v) {
  limbs_.fill(0);
  limbs_[0] = v;
  used_ = v != 0;
}

void CompositeValidator::Count::Multiply(uint64_t v) {
  unsigned __int128 carry = 0;
  for (uint32_t i = 0; i < used_; ++i) {
    const unsigned __int128 p =
        static_cast<unsigned __int128>(limbs_[i]) * v + carry;
    limbs_[i] = static_cast<uint64_t>(p);
    carry = p >> 64;
  }
  // A product of at most kMaxRank factors fits in kMaxRank limbs.
  if (carry != 0 && used_ < kLimbs)
    limbs_[used_++] = static_cast<uint64_t>(carry);
  if (v == 0) Set(0);
}

void CompositeValidator::Count::Add(const Count& other) {
  const uint32_t n = std::max(used_, other.used_);
  uint64_t carry = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const unsigned __int128 s =
        static_cast<unsigned __int128>(limbs_[i]) + other.limbs_[i] + carry;
    limbs_[i] = static_cast<uint64_t>(s);
    carry = static_cast<uint64_t>(s >> 64);
  }
  used_ = n;
  if (carry != 0 && used_ < kLimbs) limbs_[used_++] = carry;
}

bool operator==(const CompositeValidator::Count& a,
                const CompositeValidator::Count& b) {
  return a.limbs_ == b.limbs_;
}

// --- CompositeValidator. -----------------------------------------------------

CompositeValidator::CompositeValidator(const CompositeOptions& options)
    : options_(options), strict_(options.mode == Mode::kStrict) {
  options_.max_depth =
      std::clamp<uint32_t>(options_.max_depth, 1, kMaxCompositeDepth);
  if (strict_) {
    boxes_.reserve(options_.max_box_words);
    order_.reserve(options_.max_box_words / 3);
    active_.reserve(options_.max_box_words / 3);
  }
}

void CompositeValidator::Reset() {
  depth_ = 0;
  torn_ = false;
  rejection_ = kAccepted;
  where_ = Where();
  boxes_.clear();
}

Rejection CompositeValidator::RejectUnboundMember(const TensorDescriptor& d,
                                                  Mode mode) {
  if (d.has(flag::kHasCompositeMember) && Applies(Rule::kCmpMem11, mode)) {
    return {Rule::kCmpMem11, 10,
            "a composite member section outside an overlay composite"};
  }
  return kAccepted;
}

Rejection CompositeValidator::Fail(Rule rule, uint64_t offset,
                                   const char* message, uint32_t member) {
  rejection_ = {rule, offset, message};
  where_ = {depth_, member};
  return rejection_;
}

Rejection CompositeValidator::Begin(const TensorDescriptor& head) {
  if (!rejection_.ok()) return rejection_;
  if (open()) return AddMember(head);  // a head inside a composite is a member
  const Rejection r = Push(head);
  return r.ok() ? CloseCompleted() : r;
}

// Opens a level for `head`; depth_ then names it.
Rejection CompositeValidator::Push(const TensorDescriptor& head) {
  const uint32_t count_at = head.offsets.layout + 4;
  if (depth_ >= options_.max_depth) {
    ++depth_;  // where() names the level the head would open
    const Rejection r = Fail(Rule::kCmpMem10, 15,
                             "composite heads nest too deep", Where::kHead);
    --depth_;
    return r;
  }
  Level& l = levels_[depth_++];
  l.rule = head.layout.composition_rule;
  l.type_tag = head.type_tag;
  l.rank = head.rank;
  std::copy(head.shape, head.shape + head.rank, l.shape);
  l.member_count = head.layout.member_count;
  l.received = 0;
  l.member_count_at = count_at;
  l.boxes = strict_ && l.rule == kPartition;
  l.box_begin = boxes_.size();
  l.box_count = 0;
  l.volume.Set(0);
  l.head_volume.Set(1);
  for (uint32_t k = 0; k < l.rank; ++k) l.head_volume.Multiply(l.shape[k]);
  if (l.member_count > options_.max_members) {
    return Fail(Rule::kLimitMembers, count_at,
                "member_count exceeds the configured limit", Where::kHead);
  }
  return kAccepted;
}

Rejection CompositeValidator::AddMember(const TensorDescriptor& m) {
  if (!rejection_.ok()) return rejection_;
  if (!open()) {
    // Recorded through Fail like every other rejection; at depth 0, where()
    // names no level: the offset is in the descriptor just added.
    const Rejection unbound = RejectUnboundMember(m, options_.mode);
    if (unbound.ok()) return unbound;
    return Fail(unbound.rule, unbound.offset, unbound.message, Where::kHead);
  }
  Rejection r = CheckMember(m);
  if (!r.ok()) return r;
  if (Top().boxes) {
    r = KeepBox(m);
    if (!r.ok()) return r;
  }
  ++Top().received;
  if (m.layout_tag == layout_tag::kComposite) {
    r = Push(m);
    if (!r.ok()) return r;
  }
  return CloseCompleted();
}

// Per-member checks, in the order of layouts/composite.md § Validation,
// Per-member checks 1–5.
Rejection CompositeValidator::CheckMember(const TensorDescriptor& m) {
  const Level& l = Top();
  const uint32_t index = l.received;
  const bool spatial = l.rule == kPartition || l.rule == kOverlay;
  if (spatial) {
    if (!m.has(flag::kHasShard)) {
      return Fail(Rule::kCmpMem01, 10,
                  "a partition or overlay member has no "
                  "shard section",
                  index);
    }
    if (m.rank != l.rank) {
      return Fail(Rule::kCmpMem02, 16, "member rank differs from the head's",
                  index);
    }
    for (uint32_t k = 0; k < l.rank; ++k) {
      if (m.shard.parent_shape[k] != l.shape[k]) {
        return Fail(Rule::kCmpMem02, m.offsets.shard + 8 * k,
                    "parent_shape differs from the head's shape", index);
      }
    }
    for (uint32_t k = 0; k < l.rank; ++k) {
      uint64_t end = 0;
      if (!wire::CheckedAdd(m.shard.shard_offset[k], m.shape[k], &end) ||
          end > l.shape[k]) {
        return Fail(Rule::kCmpMem03, m.offsets.shard + 8 * (l.rank + k),
                    "member box exceeds the head", index);
      }
    }
    // Decoded type (REJECT-RULES.md §4 item 14): a quantized member decodes
    // to a real float type, an unquantized one is its stored type.
    const bool type_ok = m.has(flag::kHasQuantization)
                             ? IsRealFloat(l.type_tag)
                             : m.type_tag == l.type_tag;
    if (!type_ok) {
      return Fail(Rule::kCmpMem04, 14,
                  "member does not decode to the head's type", index);
    }
  }
  if (l.rule == kOverlay) {
    if (!m.has(flag::kHasCompositeMember)) {
      return Fail(Rule::kCmpMem05, 10,
                  "an overlay member has no composite member section", index);
    }
    const uint64_t role_at = m.offsets.composite_member;
    const uint8_t role = m.composite_member.member_role;
    if (index == 0) {
      if (role != kBase) {
        return Fail(Rule::kCmpMem06, role_at,
                    "the first overlay member is not the base", index);
      }
      for (uint32_t k = 0; k < l.rank; ++k) {
        if (m.shard.shard_offset[k] != 0) {
          return Fail(Rule::kCmpMem07, m.offsets.shard + 8 * (l.rank + k),
                      "the overlay base does not start at the origin", index);
        }
        if (m.shape[k] != l.shape[k]) {
          return Fail(Rule::kCmpMem07, m.offsets.shape(k),
                      "the overlay base does not span the head", index);
        }
      }
    } else if (role != kCorrection) {
      return Fail(Rule::kCmpMem08, role_at,
                  "an overlay member after the base is not a correction",
                  index);
    }
  }
  if ((l.rule == kPartition || l.rule == kGroup) &&
      m.has(flag::kHasCompositeMember)) {
    return Fail(Rule::kCmpMem09, 10,
                "a partition or group member has a composite member section",
                index);
  }
  return kAccepted;
}

// Adds the member's volume to its level and keeps its box (strict
// partitions), unless it is empty.
Rejection CompositeValidator::KeepBox(const TensorDescriptor& m) {
  Level& l = Top();
  Count v;
  v.Set(1);
  for (uint32_t k = 0; k < l.rank; ++k) v.Multiply(m.shape[k]);
  l.volume.Add(v);
  for (uint32_t k = 0; k < l.rank; ++k) {
    if (m.shape[k] == 0) return kAccepted;
  }
  const uint64_t words = BoxWords(l.rank);
  if (boxes_.size() + words > options_.max_box_words) {
    return Fail(Rule::kLimitMembers, l.member_count_at,
                "partition boxes exceed the configured box memory",
                Where::kHead);
  }
  // Header: member number (low 32 bits), shard_offset position (high 32).
  const uint64_t shard_at = m.offsets.shard + 8ull * l.rank;
  boxes_.push_back(uint64_t{l.received} | shard_at << 32);
  for (uint32_t k = 0; k < l.rank; ++k) {
    boxes_.push_back(m.shard.shard_offset[k]);
  }
  for (uint32_t k = 0; k < l.rank; ++k) {
    boxes_.push_back(m.shard.shard_offset[k] + m.shape[k]);
  }
  ++l.box_count;
  return kAccepted;
}

// Closes every level whose last member has arrived, innermost first.
Rejection CompositeValidator::CloseCompleted() {
  while (open() && Top().received == Top().member_count) {
    if (Top().boxes) {
      const Rejection r = ClosePartition();
      if (!r.ok()) return r;
      boxes_.resize(Top().box_begin);
    }
    --depth_;
  }
  return kAccepted;
}

// Close-time checks of a partition (layouts/composite.md § Partition):
// no two boxes overlap (CMP-CLS-01), then, every box lying inside the head,
// Σ volumes = head volume proves coverage (CMP-CLS-02).
Rejection CompositeValidator::ClosePartition() {
  const Level& l = Top();
  const uint64_t* words = boxes_.data() + l.box_begin;
  uint32_t a = 0, b = 0;
  switch (FindOverlap(words, l.box_count, l.rank, l.shape,
                      options_.max_overlap_work, &order_, &active_, &a, &b)) {
    case OverlapResult::kNone:
      break;
    case OverlapResult::kOverBudget:
      return Fail(Rule::kLimitMembers, l.member_count_at,
                  "partition overlap check exceeds its work budget",
                  Where::kHead);
    case OverlapResult::kFound: {
      // Report the later member of the pair, at its shard_offset.
      const uint64_t header = words[BoxWords(l.rank) * b];
      return Fail(Rule::kCmpCls01, header >> 32,
                  "two partition members overlap",
                  static_cast<uint32_t>(header));
    }
  }
  if (!(l.volume == l.head_volume)) {
    return Fail(Rule::kCmpCls02, l.member_count_at,
                "partition members do not cover the head", Where::kHead);
  }
  return kAccepted;
}

Rejection CompositeValidator::Finish() {
  if (!rejection_.ok()) return rejection_;
  if (!open()) return kAccepted;
  torn_ = true;
  if (!Applies(Rule::kCmpCls03, options_.mode)) return kAccepted;
  return Fail(Rule::kCmpCls03, Top().member_count_at,
              "the input ended before every member arrived", Where::kHead);
}

}  // namespace hurray
