// CompositeValidator: the container-level rules of composite tensors
// (layouts/composite.md § Binding, § Validation; REJECT-RULES.md §3.10
// CMP-MEM-01…11, CMP-CLS-01…03, §5 LIMIT-MEMBERS), checked member by member
// as the descriptors arrive, without keeping them.
//
// A reader passes the head (Begin), then every following descriptor
// (AddMember) while open(), then calls Finish() at the end of the stream or
// file region. A member that is itself a head (layout_tag 0x0B) opens a
// nested composite whose members come next, pre-order; its enclosing head
// counts it as one member and closes only after it. Nesting is capped at
// CompositeOptions::max_depth levels, the outermost head being level 1
// (CMP-MEM-10, RESOLUTIONS.md 16), with an explicit stack of fixed size.
//
// Descriptors must have passed the descriptor validator (parser/validator.h);
// their `offsets` locate the fields. A rejection's offset is a byte offset in
// the descriptor where() names: the member being added, a member seen
// earlier (CMP-CLS-01, with its index), or the head (CMP-CLS-02/03,
// LIMIT-MEMBERS on member_count).
//
// Memory. Per-member checks need only the head's shape and a few counters per
// level. Partition coverage (strict-only) needs the member boxes: a box is
// 2·rank+1 words, kept in an arena of CompositeOptions::max_box_words words
// reserved once at construction (none in permissive mode), shared by the
// nested levels as a stack; empty boxes are not kept (they overlap nothing).
// A partition whose boxes do not fit is rejected with LIMIT-MEMBERS, as is a
// head whose member_count exceeds max_members. At the Nth member the boxes
// are swept along the dimension that cuts the fewest of them (sort, then an
// active list, O(n log n + comparisons)); comparisons beyond
// max_overlap_work are rejected with LIMIT-MEMBERS. With no overlap and every
// box inside the head, coverage is "Σ member volumes = head volume", summed
// exactly in a fixed 4224-bit counter. Memory bound: sizeof(*this) (about
// 13 KiB) + 8·max_box_words + 8·max_box_words/3 bytes (2.7 MiB by default).
#ifndef HURRAY_PARSER_COMPOSITE_VALIDATOR_H_
#define HURRAY_PARSER_COMPOSITE_VALIDATOR_H_

#include <array>
#include <cstdint>
#include <vector>

#include "parser/descriptor.h"
#include "parser/rules.h"

namespace hurray {

inline constexpr uint32_t kMaxCompositeDepth = 8;

struct CompositeOptions {
  Mode mode = Mode::kStrict;
  uint32_t max_depth = kMaxCompositeDepth;  // CMP-MEM-10; 1…8
  uint32_t max_members = 65536;             // LIMIT-MEMBERS, per head
  // Partition boxes kept for CMP-CLS-01 (strict mode), in 8-byte words.
  uint64_t max_box_words = uint64_t{1} << 18;
  // Box-pair comparisons allowed when one partition closes.
  uint64_t max_overlap_work = uint64_t{1} << 26;
};

class CompositeValidator {
 public:
  // Where a rejection's offset points: the head of nesting level `depth`
  // (member == kHead) or its member number `member` (0-based).
  struct Where {
    static constexpr uint32_t kHead = 0xFFFFFFFF;
    uint32_t depth = 0;
    uint32_t member = kHead;
  };

  explicit CompositeValidator(const CompositeOptions& options = {});
  CompositeValidator(const CompositeValidator&) = delete;
  CompositeValidator& operator=(const CompositeValidator&) = delete;

  // Opens a composite at its head (layout_tag 0x0B). Requires !open().
  Rejection Begin(const TensorDescriptor& head);
  // The next descriptor after the head. Without an open composite, a
  // descriptor is nobody's member: RejectUnboundMember(member), recorded
  // like any rejection with where() == {0, Where::kHead}.
  Rejection AddMember(const TensorDescriptor& member);
  // End of the stream or region: a composite still open is torn (CMP-CLS-03,
  // strict-only; permissive mode accepts and torn() tells).
  Rejection Finish();

  bool open() const { return depth_ > 0; }
  uint32_t depth() const { return depth_; }
  bool torn() const { return torn_; }
  const Rejection& rejection() const { return rejection_; }
  Where where() const { return where_; }
  // Back to the initial state (keeps the options and the reserved arena).
  void Reset();

  // A descriptor outside any composite that carries the Composite Member
  // section (HAS_COMPOSITE_MEMBER) is bound to no overlay head: CMP-MEM-11,
  // strict-only (metadata.md § Composite Member Section). For stream readers.
  static Rejection RejectUnboundMember(const TensorDescriptor& d,
                                       Mode mode = Mode::kStrict);

  // An exact unsigned counter for volumes: a product of 64 u64 factors
  // (4096 bits) plus the sum of up to 2^128 of them.
  class Count {
   public:
    void Set(uint64_t v);
    void Multiply(uint64_t v);
    void Add(const Count& other);
    friend bool operator==(const Count& a, const Count& b);

   private:
    static constexpr uint32_t kLimbs = 66;
    std::array<uint64_t, kLimbs> limbs_{};
    uint32_t used_ = 0;  // limbs in use (the rest are 0)
  };

 private:
  struct Level {
    uint8_t rule = 0;  // composition_rule
    uint8_t type_tag = 0;
    uint32_t rank = 0;
    uint64_t shape[kMaxRank] = {};
    uint32_t member_count = 0;
    uint32_t received = 0;
    uint32_t member_count_at = 0;  // offset of member_count in the head
    bool boxes = false;            // keeps boxes (strict partition)
    uint64_t box_begin = 0;        // first arena word of this level's boxes
    uint32_t box_count = 0;
    Count volume;       // Σ member volumes
    Count head_volume;  // Π shape
  };

  Rejection Fail(Rule rule, uint64_t offset, const char* message,
                 uint32_t member);
  Rejection Push(const TensorDescriptor& head);
  Rejection CheckMember(const TensorDescriptor& m);
  Rejection KeepBox(const TensorDescriptor& m);
  Rejection CloseCompleted();
  Rejection ClosePartition();
  Level& Top() { return levels_[depth_ - 1]; }

  CompositeOptions options_;
  bool strict_;
  std::array<Level, kMaxCompositeDepth> levels_;
  uint32_t depth_ = 0;
  bool torn_ = false;
  Rejection rejection_;
  Where where_;
  std::vector<uint64_t> boxes_;   // arena (reserved once)
  std::vector<uint32_t> order_;   // sweep scratch (reserved once)
  std::vector<uint32_t> active_;  // sweep scratch (reserved once)
};

}  // namespace hurray

#endif  // HURRAY_PARSER_COMPOSITE_VALIDATOR_H_
