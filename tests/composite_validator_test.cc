// CompositeValidator (parser/composite_validator.h): one test per container
// rule of REJECT-RULES.md §3.10 (CMP-MEM-01…11, CMP-CLS-01…03) and
// LIMIT-MEMBERS, starting from valid composites built from tests/vectors.h
// and breaking one member field; every descriptor goes through the encoder
// and the decoder so that its offsets are the decoded ones. Then: nesting,
// a brute-force comparison of the partition verdict with cell counting, and
// no allocation while members are added.
#include "parser/composite_validator.h"

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "parser/decoder.h"
#include "parser/descriptor.h"
#include "parser/element_type.h"
#include "parser/options.h"
#include "parser/quantization.h"
#include "parser/rules.h"
#include "tests/alloc_counter.h"
#include "tests/vectors.h"

namespace hurray {
namespace {

using namespace type_tag;  // NOLINT
using Desc = std::unique_ptr<TensorDescriptor>;
using Where = CompositeValidator::Where;

// The descriptor as a reader sees it: encoded, then decoded (offsets set).
// `valid` asks the decoder to validate it too (a broken member may fail a
// descriptor rule the composite rule duplicates).
Desc Wire(const TensorDescriptor& d, bool valid = true) {
  ParseOptions o = vectors::AgreedOptions();
  o.validate = valid;
  absl::StatusOr<TensorDescriptor> got = Decode(vectors::Bytes(d), o);
  EXPECT_TRUE(got.ok()) << got.status();
  if (!got.ok()) return std::make_unique<TensorDescriptor>();
  return std::make_unique<TensorDescriptor>(*got);
}

Desc Head(uint8_t rule, uint8_t type, std::vector<uint64_t> shape,
          uint32_t members, uint8_t combine = 0) {
  Desc d = vectors::Dense(type, std::move(shape), layout_tag::kComposite);
  d->buffer_count = 0;
  d->layout.composition_rule = rule;
  d->layout.combine_op = combine;
  d->layout.member_count = members;
  return d;
}

// A dense member of `type` with shape `shape` at `offset` in `parent`.
Desc Member(uint8_t type, std::vector<uint64_t> shape,
            std::vector<uint64_t> offset, std::vector<uint64_t> parent) {
  Desc d = vectors::Dense(type, shape);
  d->flags |= flag::kHasShard;
  for (size_t k = 0; k < shape.size(); ++k) {
    d->shard.shard_offset[k] = offset[k];
    d->shard.parent_shape[k] = parent[k];
  }
  return d;
}

Desc Role(Desc d, uint8_t role) {
  d->flags |= flag::kHasCompositeMember;
  d->composite_member.member_role = role;
  return d;
}

std::string Describe(const CompositeValidator& v, const Rejection& r) {
  if (r.ok()) return "OK";
  const Where w = v.where();
  return absl::StrCat(
      RuleId(r.rule), "@", r.offset, " depth ", w.depth, " ",
      w.member == Where::kHead ? "head" : absl::StrCat("member ", w.member));
}

std::string Expect(Rule rule, uint64_t offset, uint32_t depth,
                   uint32_t member) {
  return absl::StrCat(
      RuleId(rule), "@", offset, " depth ", depth, " ",
      member == Where::kHead ? "head" : absl::StrCat("member ", member));
}

// Runs head + members through a validator, then Finish().
std::string CheckStream(const std::vector<Desc>& stream,
                        const CompositeOptions& o = {}) {
  CompositeValidator v(o);
  Rejection r = v.Begin(*stream[0]);
  for (size_t i = 1; r.ok() && i < stream.size(); ++i) {
    r = v.AddMember(*stream[i]);
  }
  if (r.ok()) r = v.Finish();
  return Describe(v, r);
}

template <typename... D>
std::vector<Desc> Stream(D... d) {
  std::vector<Desc> v;
  (v.push_back(Wire(*d)), ...);
  return v;
}

// --- Valid composites.
// --------------------------------------------------------

// f32 [8, 8] split into two [8, 4] columns (layouts/composite.md § Example).
std::vector<Desc> Partition() {
  return Stream(vectors::CompositePartition(),
                Member(kFloat32, {8, 4}, {0, 0}, {8, 8}),
                Member(kFloat32, {8, 4}, {0, 4}, {8, 8}));
}

// f16 [4, 4], add: a quantized base spanning the head, one correction.
std::vector<Desc> Overlay() {
  Desc base = vectors::PerChannelSymInt4();  // int4 [6, 5] → reshape below
  base->shape[0] = 4;
  base->shape[1] = 4;
  base->buffers[0].byte_size = 8;
  base->quantization.axis = 1;
  base->buffers[1].byte_size = 16;
  base->flags |= flag::kHasShard;
  for (int k = 0; k < 2; ++k) base->shard.parent_shape[k] = 4;
  return Stream(vectors::CompositeOverlay(), Role(std::move(base), 0x01),
                Role(Member(kFloat16, {2, 2}, {1, 1}, {4, 4}), 0x00));
}

std::vector<Desc> Group() {
  return Stream(Head(0x03, kFloat32, {1}, 3), vectors::Csr(),
                vectors::Dense(kInt8, {7}), vectors::Hilbert());
}

TEST(CompositeValidator, ValidCompositesPass) {
  EXPECT_EQ(CheckStream(Partition()), "OK");
  EXPECT_EQ(CheckStream(Overlay()), "OK");
  EXPECT_EQ(CheckStream(Group()), "OK");
}

TEST(CompositeValidator, ClosesAtTheLastMember) {
  const std::vector<Desc> s = Partition();
  CompositeValidator v;
  EXPECT_TRUE(v.Begin(*s[0]).ok());
  EXPECT_TRUE(v.open());
  EXPECT_TRUE(v.AddMember(*s[1]).ok());
  EXPECT_TRUE(v.open());
  EXPECT_TRUE(v.AddMember(*s[2]).ok());
  EXPECT_FALSE(v.open());
  EXPECT_TRUE(v.Finish().ok());
  // Reusable: another composite after the first.
  EXPECT_TRUE(v.Begin(*s[0]).ok());
  EXPECT_TRUE(v.open());
}

// --- One test per rule.
// -------------------------------------------------------

TEST(CompositeRules, CmpMem01PartitionMemberWithoutShard) {
  std::vector<Desc> s = Partition();
  s[2] = Wire(*vectors::Dense(kFloat32, {8, 4}));
  EXPECT_EQ(CheckStream(s), Expect(Rule::kCmpMem01, 10, 1, 1));
  // Overlay too.
  std::vector<Desc> o = Overlay();
  o[2] = Wire(*Role(vectors::Dense(kFloat16, {2, 2}), 0x00));
  EXPECT_EQ(CheckStream(o), Expect(Rule::kCmpMem01, 10, 1, 1));
}

TEST(CompositeRules, CmpMem02ParentShapeOrRankDiffers) {
  std::vector<Desc> s = Partition();
  s[2] = Wire(*Member(kFloat32, {8, 4}, {0, 4}, {8, 9}));
  EXPECT_EQ(CheckStream(s),
            Expect(Rule::kCmpMem02, s[2]->offsets.shard + 8, 1, 1));
  s[2] = Wire(*Member(kFloat32, {32}, {32}, {64}));
  EXPECT_EQ(CheckStream(s), Expect(Rule::kCmpMem02, 16, 1, 1));
}

TEST(CompositeRules, CmpMem03BoxExceedsTheHead) {
  // Only reachable past the descriptor validator's DESC-SHD-01 (the same
  // bound against parent_shape): decode without validating.
  std::vector<Desc> s = Partition();
  s[2] = Wire(*Member(kFloat32, {8, 4}, {0, 5}, {8, 8}), /*valid=*/false);
  EXPECT_EQ(CheckStream(s),
            Expect(Rule::kCmpMem03, s[2]->offsets.shard + 16 + 8, 1, 1));
}

TEST(CompositeRules, CmpMem04DecodedTypeDiffers) {
  std::vector<Desc> s = Partition();
  s[2] = Wire(*Member(kFloat16, {8, 4}, {0, 4}, {8, 8}));
  EXPECT_EQ(CheckStream(s), Expect(Rule::kCmpMem04, 14, 1, 1));
  // A quantized member decodes to a real float type: fine under f16, not
  // under an integer head (REJECT-RULES.md §4 item 14).
  std::vector<Desc> o = Overlay();
  EXPECT_EQ(CheckStream(o), "OK");
  Desc int_head = Head(0x02, kInt32, {4, 4}, 2, 0x02);
  o[0] = Wire(*int_head);
  EXPECT_EQ(CheckStream(o), Expect(Rule::kCmpMem04, 14, 1, 0));
}

TEST(CompositeRules, CmpMem05OverlayMemberWithoutRole) {
  std::vector<Desc> o = Overlay();
  o[2] = Wire(*Member(kFloat16, {2, 2}, {1, 1}, {4, 4}));
  EXPECT_EQ(CheckStream(o), Expect(Rule::kCmpMem05, 10, 1, 1));
}

TEST(CompositeRules, CmpMem06FirstOverlayMemberIsNotTheBase) {
  std::vector<Desc> o = Overlay();
  o[1] = Wire(*Role(Member(kFloat16, {4, 4}, {0, 0}, {4, 4}), 0x00));
  EXPECT_EQ(CheckStream(o),
            Expect(Rule::kCmpMem06, o[1]->offsets.composite_member, 1, 0));
}

TEST(CompositeRules, CmpMem07BaseDoesNotSpanTheHead) {
  std::vector<Desc> o = Overlay();
  o[1] = Wire(*Role(Member(kFloat16, {4, 3}, {0, 1}, {4, 4}), 0x01));
  EXPECT_EQ(CheckStream(o),
            Expect(Rule::kCmpMem07, o[1]->offsets.shard + 16 + 8, 1, 0));
  o[1] = Wire(*Role(Member(kFloat16, {4, 3}, {0, 0}, {4, 4}), 0x01));
  EXPECT_EQ(CheckStream(o),
            Expect(Rule::kCmpMem07, o[1]->offsets.shape(1), 1, 0));
}

TEST(CompositeRules, CmpMem08SecondBase) {
  std::vector<Desc> o = Overlay();
  o[2] = Wire(*Role(Member(kFloat16, {2, 2}, {1, 1}, {4, 4}), 0x01));
  EXPECT_EQ(CheckStream(o),
            Expect(Rule::kCmpMem08, o[2]->offsets.composite_member, 1, 1));
}

TEST(CompositeRules, CmpMem09PartitionOrGroupMemberWithRole) {
  std::vector<Desc> s = Partition();
  s[1] = Wire(*Role(Member(kFloat32, {8, 4}, {0, 0}, {8, 8}), 0x01));
  EXPECT_EQ(CheckStream(s), Expect(Rule::kCmpMem09, 10, 1, 0));
  std::vector<Desc> g = Group();
  g[3] = Wire(*vectors::WithCompositeMember());
  EXPECT_EQ(CheckStream(g), Expect(Rule::kCmpMem09, 10, 1, 2));
}

// Group heads nested `levels` deep, the innermost holding one dense member.
std::vector<Desc> Nested(uint32_t levels) {
  std::vector<Desc> s;
  for (uint32_t i = 0; i < levels; ++i) {
    s.push_back(Wire(*Head(0x03, kFloat32, {2}, 1)));
  }
  s.push_back(Wire(*vectors::Dense(kFloat32, {2})));
  return s;
}

TEST(CompositeRules, CmpMem10NestingDeeperThanEightLevels) {
  EXPECT_EQ(CheckStream(Nested(8)), "OK");
  EXPECT_EQ(CheckStream(Nested(9)),
            Expect(Rule::kCmpMem10, 15, 9, Where::kHead));
  CompositeOptions o;
  o.max_depth = 3;
  EXPECT_EQ(CheckStream(Nested(3), o), "OK");
  EXPECT_EQ(CheckStream(Nested(4), o),
            Expect(Rule::kCmpMem10, 15, 4, Where::kHead));
}

TEST(CompositeRules, CmpMem11MemberSectionOutsideAnOverlay) {
  const Desc d = Wire(*vectors::WithCompositeMember());
  const Rejection r = CompositeValidator::RejectUnboundMember(*d);
  EXPECT_EQ(r.rule, Rule::kCmpMem11);
  EXPECT_EQ(r.offset, 10u);
  EXPECT_TRUE(
      CompositeValidator::RejectUnboundMember(*d, Mode::kPermissive).ok());
  EXPECT_TRUE(CompositeValidator::RejectUnboundMember(
                  *Wire(*vectors::Dense(kFloat32, {2})))
                  .ok());
  // A member section after the composite closed is unbound as well.
  const std::vector<Desc> s = Partition();
  CompositeValidator v;
  ASSERT_TRUE(v.Begin(*s[0]).ok());
  ASSERT_TRUE(v.AddMember(*s[1]).ok());
  ASSERT_TRUE(v.AddMember(*s[2]).ok());
  EXPECT_EQ(v.AddMember(*d).rule, Rule::kCmpMem11);
  // Recorded and sticky, like every other rejection.
  EXPECT_EQ(v.rejection().rule, Rule::kCmpMem11);
  EXPECT_EQ(v.where().depth, 0u);
  EXPECT_EQ(v.AddMember(*Wire(*vectors::Dense(kFloat32, {2}))).rule,
            Rule::kCmpMem11);
  EXPECT_EQ(v.Begin(*s[0]).rule, Rule::kCmpMem11);
  v.Reset();
  EXPECT_TRUE(v.Begin(*s[0]).ok());
}

TEST(CompositeRules, CmpCls01PartitionMembersOverlap) {
  std::vector<Desc> s = Partition();
  s[2] = Wire(*Member(kFloat32, {8, 5}, {0, 3}, {8, 8}));
  EXPECT_EQ(CheckStream(s),
            Expect(Rule::kCmpCls01, s[2]->offsets.shard + 16, 1, 1));
  // Strict-only: permissive mode accepts.
  CompositeOptions p;
  p.mode = Mode::kPermissive;
  EXPECT_EQ(CheckStream(s, p), "OK");
}

TEST(CompositeRules, CmpCls01ReportsTheLaterMemberOfThePair) {
  // Members 0 and 2 overlap; member 1 is disjoint from both.
  std::vector<Desc> s = Stream(Head(0x01, kFloat32, {8, 8}, 3),
                               Member(kFloat32, {4, 8}, {0, 0}, {8, 8}),
                               Member(kFloat32, {3, 8}, {5, 0}, {8, 8}),
                               Member(kFloat32, {2, 8}, {3, 0}, {8, 8}));
  EXPECT_EQ(CheckStream(s),
            Expect(Rule::kCmpCls01, s[3]->offsets.shard + 16, 1, 2));
}

TEST(CompositeRules, CmpCls02PartitionLeavesAGap) {
  std::vector<Desc> s = Partition();
  s[2] = Wire(*Member(kFloat32, {8, 3}, {0, 4}, {8, 8}));
  const uint64_t count_at = s[0]->offsets.layout + 4;
  EXPECT_EQ(CheckStream(s), Expect(Rule::kCmpCls02, count_at, 1, Where::kHead));
  CompositeOptions p;
  p.mode = Mode::kPermissive;
  EXPECT_EQ(CheckStream(s, p), "OK");
  // A partition with no members covers only an empty head.
  EXPECT_EQ(CheckStream(Stream(Head(0x01, kFloat32, {8, 8}, 0))),
            Expect(Rule::kCmpCls02, count_at, 1, Where::kHead));
  EXPECT_EQ(CheckStream(Stream(Head(0x01, kFloat32, {8, 0}, 0))), "OK");
}

TEST(CompositeRules, CmpCls03TornComposite) {
  std::vector<Desc> s = Partition();
  s.pop_back();
  const uint64_t count_at = s[0]->offsets.layout + 4;
  EXPECT_EQ(CheckStream(s), Expect(Rule::kCmpCls03, count_at, 1, Where::kHead));
  CompositeValidator v({.mode = Mode::kPermissive});
  ASSERT_TRUE(v.Begin(*s[0]).ok());
  ASSERT_TRUE(v.AddMember(*s[1]).ok());
  EXPECT_TRUE(v.Finish().ok());
  EXPECT_TRUE(v.torn());
}

TEST(CompositeRules, LimitMembers) {
  // member_count above the limit, at the head, before any member.
  EXPECT_EQ(CheckStream(Stream(Head(0x03, kFloat32, {1}, 65537))),
            Expect(Rule::kLimitMembers, 28 + 8 + 4, 1, Where::kHead));
  CompositeOptions o;
  o.max_members = 1;
  EXPECT_EQ(CheckStream(Partition(), o),
            Expect(Rule::kLimitMembers, 28 + 16 + 4, 1, Where::kHead));
  // Box memory: one rank-2 box is 5 words.
  o = {};
  o.max_box_words = 9;
  EXPECT_EQ(CheckStream(Partition(), o),
            Expect(Rule::kLimitMembers, 28 + 16 + 4, 1, Where::kHead));
  o.max_box_words = 10;
  EXPECT_EQ(CheckStream(Partition(), o), "OK");
}

// A [n, n] partition into 1×1 members, in row-major order; `dup` repeats
// the box of member 0 at the last member instead of [n−1, n−1].
std::vector<Desc> Grid(uint64_t n, bool dup) {
  std::vector<Desc> s;
  s.push_back(Wire(*Head(0x01, kFloat32, {n, n}, n * n)));
  Desc m = Member(kFloat32, {1, 1}, {0, 0}, {n, n});
  for (uint64_t i = 0; i < n * n; ++i) {
    const bool last = i + 1 == n * n;
    m->shard.shard_offset[0] = dup && last ? 0 : i / n;
    m->shard.shard_offset[1] = dup && last ? 0 : i % n;
    s.push_back(Wire(*m));
  }
  return s;
}

TEST(CompositeRules, LimitMembersOverlapWorkBudget) {
  EXPECT_EQ(CheckStream(Grid(64, false)), "OK");  // 4096 members
  const std::vector<Desc> dup = Grid(64, true);
  EXPECT_EQ(
      CheckStream(dup),
      Expect(Rule::kCmpCls01, dup.back()->offsets.shard + 16, 1, 64 * 64 - 1));
  CompositeOptions o;
  o.max_overlap_work = 1000;
  EXPECT_EQ(CheckStream(Grid(64, false), o),
            Expect(Rule::kLimitMembers, 28 + 16 + 4, 1, Where::kHead));
}

// --- Nesting.
// -------------------------------------------------------------------

TEST(CompositeValidator, NestedPartitionInsideAPartition) {
  // [8, 8] = nested [8, 4] (itself two [4, 4]) + [8, 4].
  Desc inner = Head(0x01, kFloat32, {8, 4}, 2);
  inner->flags |= flag::kHasShard;
  inner->shard.parent_shape[0] = inner->shard.parent_shape[1] = 8;
  std::vector<Desc> s = Stream(vectors::CompositePartition(), std::move(inner),
                               Member(kFloat32, {4, 4}, {0, 0}, {8, 4}),
                               Member(kFloat32, {4, 4}, {4, 0}, {8, 4}),
                               Member(kFloat32, {8, 4}, {0, 4}, {8, 8}));
  EXPECT_EQ(CheckStream(s), "OK");
  CompositeValidator v;
  ASSERT_TRUE(v.Begin(*s[0]).ok());
  ASSERT_TRUE(v.AddMember(*s[1]).ok());
  EXPECT_EQ(v.depth(), 2u);
  ASSERT_TRUE(v.AddMember(*s[2]).ok());
  ASSERT_TRUE(v.AddMember(*s[3]).ok());
  EXPECT_EQ(v.depth(), 1u);
  // The inner partition leaving a gap is reported at depth 2.
  s[3] = Wire(*Member(kFloat32, {3, 4}, {4, 0}, {8, 4}));
  EXPECT_EQ(CheckStream(s),
            Expect(Rule::kCmpCls02, s[1]->offsets.layout + 4, 2, Where::kHead));
  // The outer partition's member box check applies to the nested head.
  s = Partition();
  Desc bad_inner = Head(0x03, kFloat32, {8, 4}, 0);
  s[1] = Wire(*bad_inner);  // no shard section
  EXPECT_EQ(CheckStream(s), Expect(Rule::kCmpMem01, 10, 1, 0));
}

// --- Partition verdict against brute force.
// -----------------------------------

// Random boxes inside a small head; the verdict must match counting how many
// boxes cover each cell: any cell twice is an overlap (CMP-CLS-01), else any
// cell never is a gap (CMP-CLS-02).
TEST(CompositeValidator, PartitionVerdictMatchesCellCounting) {
  std::mt19937 rng(7);
  const std::vector<std::vector<uint64_t>> heads = {
      {6}, {4, 4}, {3, 4}, {2, 3, 2}, {2, 2, 2, 2}};
  int overlaps = 0, gaps = 0, exact = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    const std::vector<uint64_t>& h = heads[iter % heads.size()];
    const size_t r = h.size();
    uint64_t cells = 1;
    for (uint64_t n : h) cells *= n;
    std::vector<int> cover(cells, 0);
    // Boxes as (lo, len): an exact guillotine split of the head (cut a
    // random box in two, a few times), then, half of the time, one box
    // replaced by a random one.
    std::vector<std::pair<std::vector<uint64_t>, std::vector<uint64_t>>> boxes;
    boxes.push_back({std::vector<uint64_t>(r, 0), h});
    const uint32_t cuts = rng() % 5;
    for (uint32_t c = 0; c < cuts; ++c) {
      auto& [lo, len] = boxes[rng() % boxes.size()];
      const size_t k = rng() % r;
      if (len[k] < 2) continue;
      const uint64_t at = 1 + rng() % (len[k] - 1);
      auto piece = std::make_pair(lo, len);
      piece.first[k] += at;
      piece.second[k] -= at;
      len[k] = at;
      boxes.push_back(piece);
    }
    if (rng() % 2) {
      auto& [lo, len] = boxes[rng() % boxes.size()];
      for (size_t k = 0; k < r; ++k) {
        lo[k] = rng() % h[k];
        len[k] = rng() % (h[k] - lo[k] + 1);
      }
    }
    std::vector<Desc> s;
    s.push_back(
        Wire(*Head(0x01, kFloat32, h, static_cast<uint32_t>(boxes.size()))));
    for (const auto& [lo, len] : boxes) {
      s.push_back(Wire(*Member(kFloat32, len, lo, h)));
      for (uint64_t c = 0; c < cells; ++c) {
        uint64_t rest = c;
        bool in = true;
        for (size_t k = r; k-- > 0;) {
          const uint64_t x = rest % h[k];
          rest /= h[k];
          in &= x >= lo[k] && x < lo[k] + len[k];
        }
        cover[c] += in;
      }
    }
    bool twice = false, never = false;
    for (int c : cover) {
      twice |= c > 1;
      never |= c == 0;
    }
    CompositeValidator v;
    Rejection got = v.Begin(*s[0]);
    for (size_t i = 1; got.ok() && i < s.size(); ++i) got = v.AddMember(*s[i]);
    const Rule want = twice   ? Rule::kCmpCls01
                      : never ? Rule::kCmpCls02
                              : Rule::kNone;
    ASSERT_EQ(RuleId(got.rule), RuleId(want)) << "iteration " << iter;
    (twice ? overlaps : never ? gaps : exact)++;
  }
  // The generator exercises all three verdicts.
  EXPECT_GT(overlaps, 100);
  EXPECT_GT(gaps, 100);
  EXPECT_GT(exact, 100);
}

TEST(CompositeValidator, NothingAllocatesWhileMembersArrive) {
  const std::vector<Desc> grid = Grid(16, false);
  const std::vector<Desc> overlay = Overlay();
  CompositeValidator v;
  testing::AllocationCount allocations;
  Rejection r = v.Begin(*grid[0]);
  for (size_t i = 1; r.ok() && i < grid.size(); ++i) r = v.AddMember(*grid[i]);
  r = v.Begin(*overlay[0]);
  for (size_t i = 1; r.ok() && i < overlay.size(); ++i) {
    r = v.AddMember(*overlay[i]);
  }
  if (r.ok()) r = v.Finish();
  allocations.Stop();
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(allocations.value(), 0u);
}

TEST(CompositeValidator, CountIsExact) {
  // 2^64 · 2^64 + 1 ≠ 2^128, and (2^64 − 1)^2 + 2·(2^64 − 1) + 1 = 2^128.
  CompositeValidator::Count a, b, one, big;
  a.Set(~0ull);
  a.Multiply(~0ull);
  b.Set(~0ull);
  b.Multiply(2);
  one.Set(1);
  a.Add(b);
  a.Add(one);
  big.Set(1);
  for (int i = 0; i < 2; ++i) big.Multiply(uint64_t{1} << 32);
  big.Multiply(uint64_t{1} << 32);
  big.Multiply(uint64_t{1} << 32);
  EXPECT_TRUE(a == big);
  big.Add(one);
  EXPECT_FALSE(a == big);
}

}  // namespace
}  // namespace hurray
