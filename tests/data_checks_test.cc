// Data-level checks of the index buffers (parser/data_checks.h): one test per
// data rule id of REJECT-RULES.md §3.8–3.9, each starting from valid index
// data for a valid descriptor of tests/vectors.h and breaking exactly one
// entry, expecting the rule id, the buffer and the byte offset of the entry.
// Then: chunk independence (every split point of every buffer, 1-byte
// chunks, random interleavings), the bounded-memory windows and budgets, no
// allocation while feeding, and permissive mode.
#include "parser/data_checks.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "parser/descriptor.h"
#include "parser/element_type.h"
#include "parser/rules.h"
#include "parser/segment_order.h"
#include "parser/validator.h"
#include "parser/wire.h"
#include "tests/alloc_counter.h"
#include "tests/vectors.h"

namespace hurray {
namespace {

using Bytes = std::vector<uint8_t>;
using Buffers = std::map<uint32_t, Bytes>;  // buffer index -> bytes
using Desc = std::unique_ptr<TensorDescriptor>;

Bytes U64s(std::vector<uint64_t> v) {
  Bytes b(8 * v.size());
  for (size_t i = 0; i < v.size(); ++i) wire::StoreU64(b.data() + 8 * i, v[i]);
  return b;
}

Bytes U32s(std::vector<uint32_t> v) {
  Bytes b(4 * v.size());
  for (size_t i = 0; i < v.size(); ++i) wire::StoreU32(b.data() + 4 * i, v[i]);
  return b;
}

// "OK", "<RULE-ID> buffer <b> @<offset>", or the same plus " skipped".
std::string Describe(const IndexDataChecker& c, const Rejection& r) {
  if (r.ok()) return "OK";
  return absl::StrCat(RuleId(r.rule), " buffer ", c.rejected_buffer(), " @",
                      r.offset);
}

std::string Expect(Rule rule, uint32_t buffer, uint64_t offset) {
  return absl::StrCat(RuleId(rule), " buffer ", buffer, " @", offset);
}

// Feeds every buffer (values included, which the checker ignores) in table
// order, each cut into chunks by `cuts` (chunk boundaries inside the buffer),
// then Finish().
using Cutter = std::vector<size_t> (*)(size_t size, size_t param);

std::vector<size_t> Whole(size_t size, size_t) { return {size}; }
std::vector<size_t> SplitAt(size_t size, size_t at) {
  return {std::min(at, size), size};
}
std::vector<size_t> Every(size_t size, size_t step) {
  std::vector<size_t> cuts;
  for (size_t at = step; at < size; at += step) cuts.push_back(at);
  cuts.push_back(size);
  return cuts;
}

std::string Check(const TensorDescriptor& d, const Buffers& buffers,
                  const DataCheckOptions& o = {}, Cutter cut = Whole,
                  size_t param = 0, uint32_t only = ~0u) {
  std::unique_ptr<IndexDataChecker> c = MakeIndexChecker(d, o);
  if (c == nullptr) return "no checker";
  for (const auto& [index, bytes] : buffers) {
    const absl::Span<const uint8_t> all(bytes);
    size_t from = 0;
    for (size_t to : (only == ~0u || only == index) ? cut(bytes.size(), param)
                                                    : Whole(bytes.size(), 0)) {
      const Rejection r = c->Feed(index, all.subspan(from, to - from));
      from = to;
      if (!r.ok()) return Describe(*c, r);
    }
  }
  return Describe(*c, c->Finish());
}

// Feeds all buffers through FeedSome with random chunk sizes and a random
// choice of the next buffer, as a caller with random access would.
std::string RunInterleaved(const TensorDescriptor& d, const Buffers& buffers,
                           uint32_t seed, const DataCheckOptions& o = {}) {
  std::unique_ptr<IndexDataChecker> c = MakeIndexChecker(d, o);
  std::mt19937 rng(seed);
  std::map<uint32_t, size_t> at;
  std::vector<uint32_t> order;
  for (const auto& [index, bytes] : buffers) {
    at[index] = 0;
    order.push_back(index);
  }
  int idle = 0;
  for (;;) {
    std::vector<uint32_t> open;
    for (uint32_t i : order) {
      if (at[i] < buffers.at(i).size()) open.push_back(i);
    }
    if (open.empty()) break;
    const uint32_t b = open[rng() % open.size()];
    const Bytes& bytes = buffers.at(b);
    const size_t n = 1 + rng() % 13;
    const DataFeedResult r =
        c->FeedSome(b, absl::Span<const uint8_t>(bytes).subspan(at[b], n));
    if (!r.rejection.ok()) return Describe(*c, r.rejection);
    at[b] += r.consumed;
    idle = r.consumed == 0 ? idle + 1 : 0;
    if (idle > 1000) return "no progress";
  }
  return Describe(*c, c->Finish());
}

// --- The order merge on its own.
// -----------------------------------------------

// The smallest position j ≥ 1 with crd[j] ≤ crd[j−1] that is no start.
std::optional<uint64_t> FirstBadDescent(const std::vector<uint64_t>& crd,
                                        const std::vector<uint64_t>& starts) {
  for (uint64_t j = 1; j < crd.size(); ++j) {
    if (crd[j] <= crd[j - 1] &&
        std::find(starts.begin(), starts.end(), j) == starts.end()) {
      return j;
    }
  }
  return std::nullopt;
}

// Random coordinates and non-decreasing starts, offered in a random
// interleaving through windows of 1–4 entries: stalling never deadlocks and
// finds the smallest bad descent; giving up either finds it or says so.
TEST(SegmentOrder, MatchesBruteForceInAnyInterleaving) {
  std::mt19937 rng(3);
  int violations = 0, skips = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    std::vector<uint64_t> crd(rng() % 12), starts(1 + rng() % 8);
    for (uint64_t& c : crd) c = rng() % 4;
    for (uint64_t& s : starts) s = rng() % (crd.size() + 3);
    std::sort(starts.begin(), starts.end());
    const bool stall = iter % 2 == 0;
    std::vector<uint64_t> window(1 + rng() % 4);
    SegmentOrderCheck check(window.data(), static_cast<uint32_t>(window.size()),
                            crd.size());
    size_t c = 0, s = 0;
    std::optional<uint64_t> got;
    bool stalled_crd = false, stalled_start = false;
    while (!got && (c < crd.size() || s < starts.size())) {
      bool take_crd = c < crd.size() && (s == starts.size() || rng() % 2);
      if (take_crd && stalled_crd && s < starts.size()) take_crd = false;
      if (!take_crd && stalled_start && c < crd.size()) take_crd = true;
      SegmentOrderCheck::Step step;
      if (take_crd) {
        step = check.OfferCoordinate(crd[c], stall);
        stalled_crd = step == SegmentOrderCheck::Step::kStall;
        if (!stalled_crd) {
          ++c;
          stalled_start = false;  // progress may have made room
        }
      } else {
        step = check.OfferStart(starts[s], stall);
        stalled_start = step == SegmentOrderCheck::Step::kStall;
        if (!stalled_start) {
          ++s;
          stalled_crd = false;
        }
        if (!stalled_start && s == starts.size() &&
            step == SegmentOrderCheck::Step::kOk) {
          step = check.EndStarts();
        }
      }
      // A stall needs entries of the other stream to make room.
      ASSERT_FALSE(stalled_crd && stalled_start) << "deadlock " << iter;
      if (step == SegmentOrderCheck::Step::kStall) {
        ASSERT_TRUE(take_crd ? s < starts.size() : c < crd.size())
            << "stuck " << iter;
      }
      if (step == SegmentOrderCheck::Step::kViolation) got = check.violation();
    }
    const std::optional<uint64_t> want = FirstBadDescent(crd, starts);
    if (check.skipped()) {
      ASSERT_FALSE(stall);
      ++skips;
      if (got) {
        EXPECT_EQ(got, want) << iter;
      }
      continue;
    }
    ASSERT_EQ(got, want) << "iteration " << iter;
    violations += want.has_value();
  }
  EXPECT_GT(violations, 1000);
  EXPECT_GT(skips, 100);
}

// --- Valid vectors with their index data. -----------------------------------

struct Case {
  Desc d;
  Buffers buffers;
};

Case Coo() {  // f32 [5, 5, 5], nnz 3, sorted
  Case c{vectors::Coo(), {}};
  c.buffers[0] = Bytes(12, 0xAB);
  c.buffers[1] = U64s({0, 1, 2, /**/ 1, 0, 4, /**/ 4, 4, 4});
  return c;
}

Case CooUnsorted() {
  Case c = Coo();
  c.d->layout.is_sorted = 0;
  c.buffers[1] = U64s({4, 4, 4, /**/ 0, 1, 2, /**/ 1, 0, 4});
  return c;
}

Case Csr() {  // f64 [3, 4], nnz 5
  Case c{vectors::Csr(), {}};
  c.buffers[0] = Bytes(40, 0xCD);
  c.buffers[1] = U64s({0, 3, 2, 1, 3});
  c.buffers[2] = U64s({0, 2, 3, 5});
  return c;
}

Case Csc() {  // int8 [3, 4], nnz 2: column 2 holds rows 0 and 2
  Case c{vectors::Csc(), {}};
  c.buffers[0] = Bytes(2, 0x11);
  c.buffers[1] = U64s({0, 2});
  c.buffers[2] = U64s({0, 0, 0, 2, 2});
  return c;
}

// f32 [2, 3, 4], mode_order [2, 0, 1]: level 0 is dimension 2 (bound 4),
// level 1 dimension 0 (bound 2), level 2 dimension 1 (bound 3).
Case Csf() {
  Case c{vectors::Csf(), {}};
  c.buffers[0] = Bytes(16, 0x22);
  c.buffers[1] = U64s({0, 2});        // pos_0
  c.buffers[2] = U64s({1, 3});        // crd_0
  c.buffers[3] = U64s({0, 1, 3});     // pos_1
  c.buffers[4] = U64s({0, 0, 1});     // crd_1
  c.buffers[5] = U64s({0, 1, 2, 4});  // pos_2
  c.buffers[6] = U64s({2, 0, 1, 2});  // crd_2
  return c;
}

Case CsfEmpty() {
  Case c = Csf();
  TensorDescriptor& d = *c.d;
  d.layout.nnz = 0;
  d.buffers[0].byte_size = 0;
  d.buffers[2].byte_size = d.buffers[4].byte_size = 0;
  d.buffers[6].byte_size = 0;
  d.buffers[3].byte_size = d.buffers[5].byte_size = 8;
  c.buffers = {{1, U64s({0, 0})}, {2, {}},        {3, U64s({0})},
               {4, {}},           {5, U64s({0})}, {6, {}}};
  return c;
}

// int8 [40, 2, 8], pages of 16 tokens, 4 pages, 2 sequences, u32 tables.
Case BlockPaged() {
  Case c{vectors::BlockPaged(), {}};
  c.buffers[0] = Bytes(4 * 16 * 2 * 8, 0x33);
  c.buffers[1] = U32s({3, 0, 2});
  c.buffers[2] = U32s({0, 2, 3});
  c.buffers[3] = Bytes(4 * 16 * 2, 0x44);  // scales: ignored
  return c;
}

Case BlockPaged64() {
  Case c = BlockPaged();
  c.d->layout.block_table_index_type = 0x01;
  c.d->buffers[1].byte_size = 24;
  c.d->buffers[2].byte_size = 24;
  c.buffers[1] = U64s({3, 0, 2});
  c.buffers[2] = U64s({0, 2, 3});
  return c;
}

using Maker = Case (*)();
const std::vector<std::pair<const char*, Maker>>& ValidCases() {
  static const auto* const cases =
      new std::vector<std::pair<const char*, Maker>>{
          {"coo", Coo},
          {"coo_unsorted", CooUnsorted},
          {"csr", Csr},
          {"csc", Csc},
          {"csf", Csf},
          {"csf_empty", CsfEmpty},
          {"block_paged", BlockPaged},
          {"block_paged_u64", BlockPaged64}};
  return *cases;
}

void SetU64(Bytes* b, size_t entry, uint64_t v) {
  wire::StoreU64(b->data() + 8 * entry, v);
}
void SetU32(Bytes* b, size_t entry, uint32_t v) {
  wire::StoreU32(b->data() + 4 * entry, v);
}

TEST(DataChecks, ValidVectorsAreValidDescriptorsAndPass) {
  for (const auto& [name, make] : ValidCases()) {
    SCOPED_TRACE(name);
    const Case c = make();
    ASSERT_TRUE(Validate(*c.d, vectors::AgreedOptions()).ok())
        << Validate(*c.d, vectors::AgreedOptions());
    EXPECT_EQ(Check(*c.d, c.buffers), "OK");
  }
}

TEST(DataChecks, OnlySparseAndPagedLayoutsHaveCheckers) {
  EXPECT_EQ(MakeIndexChecker(*vectors::Dense(type_tag::kFloat32, {3})),
            nullptr);
  EXPECT_EQ(MakeIndexChecker(*vectors::CompositePartition()), nullptr);
  EXPECT_EQ(MakeIndexChecker(*vectors::ExtensionLayout()), nullptr);
  EXPECT_NE(MakeIndexChecker(*vectors::Csc()), nullptr);
}

// --- One test per rule.
// -------------------------------------------------------

// A broken case: the valid case with one change, and what it must report.
struct Broken {
  std::string name;
  Case c;
  std::string expected;
};

std::vector<Broken> BrokenCases() {
  std::vector<Broken> v;
  auto add = [&](std::string name, Case c, Rule rule, uint32_t buffer,
                 uint64_t offset) {
    v.push_back({std::move(name), std::move(c), Expect(rule, buffer, offset)});
  };
  {  // COO-05: tuple 1, dimension 2 = 5 (shape 5).
    Case c = Coo();
    SetU64(&c.buffers[1], 1 * 3 + 2, 5);
    add("LAY-COO-05", std::move(c), Rule::kLayCoo05, 1, 8 * (1 * 3 + 2));
  }
  {  // COO-06 (sorted): tuple 2 becomes a copy of tuple 1 (the entry is
     // the tuple); reported at tuple 2.
    Case c = Coo();
    SetU64(&c.buffers[1], 6, 1);
    SetU64(&c.buffers[1], 7, 0);
    add("LAY-COO-06/sorted", std::move(c), Rule::kLayCoo06, 1, 8 * 6);
  }
  {  // COO-06 (unsorted): tuple 2 repeats tuple 0.
    Case c = CooUnsorted();
    c.buffers[1] = U64s({4, 4, 4, /**/ 0, 1, 2, /**/ 4, 4, 4});
    add("LAY-COO-06/unsorted", std::move(c), Rule::kLayCoo06, 1, 8 * 6);
  }
  {  // COO-07: tuple 2 = (0, 4, 4) < (1, 0, 4), decided at dimension 0.
    Case c = Coo();
    SetU64(&c.buffers[1], 6, 0);
    add("LAY-COO-07", std::move(c), Rule::kLayCoo07, 1, 8 * 6);
  }
  {  // COO-07 decided at the last dimension: (1, 0, 3) after (1, 0, 4).
    Case c = Coo();
    c.buffers[1] = U64s({0, 1, 2, /**/ 1, 0, 4, /**/ 1, 0, 3});
    add("LAY-COO-07/last-dim", std::move(c), Rule::kLayCoo07, 1, 8 * 8);
  }
  // CSR: col [0, 3, 2, 1, 3], row_ptr [0, 2, 3, 5].
  {
    Case c = Csr();
    SetU64(&c.buffers[2], 0, 1);
    add("LAY-CSR-04", std::move(c), Rule::kLayCsr04, 2, 0);
  }
  {
    Case c = Csr();
    SetU64(&c.buffers[2], 3, 4);
    add("LAY-CSR-05", std::move(c), Rule::kLayCsr05, 2, 24);
  }
  {
    Case c = Csr();
    SetU64(&c.buffers[2], 2, 1);  // [0, 2, 1, 5]
    add("LAY-CSR-06", std::move(c), Rule::kLayCsr06, 2, 16);
  }
  {  // Row 2 becomes [1, 1].
    Case c = Csr();
    SetU64(&c.buffers[1], 4, 1);
    add("LAY-CSR-07", std::move(c), Rule::kLayCsr07, 1, 32);
  }
  {
    Case c = Csr();
    SetU64(&c.buffers[1], 1, 4);
    add("LAY-CSR-08", std::move(c), Rule::kLayCsr08, 1, 8);
  }
  // CSC: row [0, 2], col_ptr [0, 0, 0, 2, 2].
  {
    Case c = Csc();
    SetU64(&c.buffers[2], 0, 1);
    add("LAY-CSC-04", std::move(c), Rule::kLayCsc04, 2, 0);
  }
  {
    Case c = Csc();
    SetU64(&c.buffers[2], 4, 3);
    add("LAY-CSC-05", std::move(c), Rule::kLayCsc05, 2, 32);
  }
  {
    Case c = Csc();
    SetU64(&c.buffers[2], 2, 3);  // [0, 0, 3, 2, 2]
    add("LAY-CSC-06", std::move(c), Rule::kLayCsc06, 2, 24);
  }
  {  // Column 2 becomes rows [0, 0].
    Case c = Csc();
    SetU64(&c.buffers[1], 1, 0);
    add("LAY-CSC-07", std::move(c), Rule::kLayCsc07, 1, 8);
  }
  {
    Case c = Csc();
    SetU64(&c.buffers[1], 0, 3);
    add("LAY-CSC-08", std::move(c), Rule::kLayCsc08, 1, 0);
  }
  // CSF (see Csf()).
  {
    Case c = Csf();
    SetU64(&c.buffers[3], 0, 1);  // pos_1 = [1, 1, 3]
    add("LAY-CSF-06", std::move(c), Rule::kLayCsf06, 3, 0);
  }
  {
    Case c = Csf();
    SetU64(&c.buffers[5], 2, 0);  // pos_2 = [0, 1, 0, 4]
    add("LAY-CSF-07", std::move(c), Rule::kLayCsf07, 5, 16);
  }
  {
    Case c = Csf();
    SetU64(&c.buffers[5], 3, 3);  // pos_2 ends at 3, crd_2 holds 4
    add("LAY-CSF-08", std::move(c), Rule::kLayCsf08, 5, 24);
  }
  {  // pos_1 holds 4 entries although crd_0 holds 2 (a size the descriptor
     // validator cannot judge: n_0 is data).
    Case c = Csf();
    c.d->buffers[3].byte_size = 32;
    c.buffers[3] = U64s({0, 1, 3, 3});
    add("LAY-CSF-08/length", std::move(c), Rule::kLayCsf08, 3, 24);
  }
  {  // The last parent's children become [2, 1].
    Case c = Csf();
    SetU64(&c.buffers[6], 3, 1);
    SetU64(&c.buffers[6], 2, 2);
    add("LAY-CSF-09", std::move(c), Rule::kLayCsf09, 6, 24);
  }
  {
    Case c = Csf();
    SetU64(&c.buffers[2], 1, 4);  // crd_0 bound is shape[2] = 4
    add("LAY-CSF-10", std::move(c), Rule::kLayCsf10, 2, 8);
  }
  {
    Case c = CsfEmpty();
    SetU64(&c.buffers[1], 1, 1);  // pos_0 = [0, 1]
    add("LAY-CSF-11", std::move(c), Rule::kLayCsf11, 1, 8);
  }
  {
    Case c = CsfEmpty();
    SetU64(&c.buffers[5], 0, 2);  // pos_2 = [2]
    add("LAY-CSF-11/pos", std::move(c), Rule::kLayCsf11, 5, 0);
  }
  // Block-paged: block_table [3, 0, 2], seq_ptr [0, 2, 3].
  {
    Case c = BlockPaged();
    SetU32(&c.buffers[2], 0, 1);
    add("LAY-BPG-15", std::move(c), Rule::kLayBpg15, 2, 0);
  }
  {
    Case c = BlockPaged();
    SetU32(&c.buffers[2], 1, 4);  // [0, 4, 3]
    add("LAY-BPG-16", std::move(c), Rule::kLayBpg16, 2, 8);
  }
  {
    Case c = BlockPaged();
    SetU32(&c.buffers[2], 2, 2);  // [0, 2, 2]: 3 entries in the table
    add("LAY-BPG-17", std::move(c), Rule::kLayBpg17, 2, 8);
  }
  {
    Case c = BlockPaged();
    SetU32(&c.buffers[1], 1, 4);  // num_pages = 4
    add("LAY-BPG-18", std::move(c), Rule::kLayBpg18, 1, 4);
  }
  {  // Two logical pages hold 32 tokens; shape[0] is 40.
    Case c = BlockPaged();
    c.d->buffers[1].byte_size = 8;
    c.buffers[1] = U32s({3, 0});
    c.buffers[2] = U32s({0, 1, 2});
    add("LAY-BPG-19", std::move(c), Rule::kLayBpg19, 2, 8);
  }
  {
    Case c = BlockPaged64();
    SetU64(&c.buffers[1], 2, 1ull << 40);
    add("LAY-BPG-18/u64", std::move(c), Rule::kLayBpg18, 1, 16);
  }
  {
    Case c = BlockPaged64();
    SetU64(&c.buffers[2], 2, 2);
    add("LAY-BPG-17/u64", std::move(c), Rule::kLayBpg17, 2, 16);
  }
  return v;
}

TEST(DataChecks, OneCasePerRule) {
  for (const Broken& b : BrokenCases()) {
    SCOPED_TRACE(b.name);
    ASSERT_TRUE(Validate(*b.c.d, vectors::AgreedOptions()).ok())
        << Validate(*b.c.d, vectors::AgreedOptions());
    EXPECT_EQ(Check(*b.c.d, b.c.buffers), b.expected);
  }
}

TEST(DataChecks, EveryDataIndexRuleHasACase) {
  const Rule rules[] = {
      Rule::kLayCoo05, Rule::kLayCoo06, Rule::kLayCoo07, Rule::kLayCsr04,
      Rule::kLayCsr05, Rule::kLayCsr06, Rule::kLayCsr07, Rule::kLayCsr08,
      Rule::kLayCsc04, Rule::kLayCsc05, Rule::kLayCsc06, Rule::kLayCsc07,
      Rule::kLayCsc08, Rule::kLayCsf06, Rule::kLayCsf07, Rule::kLayCsf08,
      Rule::kLayCsf09, Rule::kLayCsf10, Rule::kLayCsf11, Rule::kLayBpg15,
      Rule::kLayBpg16, Rule::kLayBpg17, Rule::kLayBpg18, Rule::kLayBpg19};
  const std::vector<Broken> cases = BrokenCases();
  for (Rule rule : rules) {
    bool found = false;
    for (const Broken& b : cases) {
      found |= b.expected.rfind(std::string(RuleId(rule)) + " ", 0) == 0;
    }
    EXPECT_TRUE(found) << RuleId(rule);
    EXPECT_EQ(GetRuleInfo(rule).mode, RuleMode::kStrictOnly) << RuleId(rule);
  }
}

TEST(DataChecks, PermissiveModeChecksNothing) {
  DataCheckOptions o;
  o.mode = Mode::kPermissive;
  for (const Broken& b : BrokenCases()) {
    SCOPED_TRACE(b.name);
    EXPECT_EQ(Check(*b.c.d, b.c.buffers, o), "OK");
  }
}

TEST(DataChecks, BufferEndingEarlyIsStreamEofBuffer) {
  Case c = Csr();
  c.buffers[2].resize(20);  // row_ptr cut inside entry 2
  EXPECT_EQ(Check(*c.d, c.buffers), Expect(Rule::kStreamEofBuffer, 2, 20));
  Case p = BlockPaged();
  p.buffers.erase(1);
  EXPECT_EQ(Check(*p.d, p.buffers), Expect(Rule::kStreamEofBuffer, 1, 0));
}

TEST(DataChecks, BytesPastTheBufferAreIgnored) {
  Case c = Csr();
  c.buffers[1].push_back(0xFF);
  EXPECT_EQ(Check(*c.d, c.buffers), "OK");
}

TEST(DataChecks, RejectionIsSticky) {
  Case c = Csr();
  SetU64(&c.buffers[1], 1, 4);
  std::unique_ptr<IndexDataChecker> k = MakeIndexChecker(*c.d);
  const Rejection r = k->Feed(1, c.buffers[1]);
  EXPECT_EQ(r.rule, Rule::kLayCsr08);
  EXPECT_EQ(k->Feed(2, c.buffers[2]), r);
  EXPECT_EQ(k->Finish(), r);
  EXPECT_EQ(k->FeedSome(2, c.buffers[2]).consumed, 0u);
}

TEST(DataChecks, DynamicPointerDimensionSizesFromTheBuffer) {
  // CSR with shape[0] dynamic: row_ptr is not sized by the validator; the
  // checker takes its length from byte_size.
  Case c = Csr();
  c.d->shape[0] = kDynamicDim;
  ASSERT_TRUE(Validate(*c.d, vectors::AgreedOptions()).ok());
  EXPECT_EQ(Check(*c.d, c.buffers), "OK");
  c.d->buffers[2].byte_size = 30;
  c.buffers[2].resize(30);
  EXPECT_EQ(Check(*c.d, c.buffers), Expect(Rule::kBufSz07, 2, 24));
  c.d->buffers[2].byte_size = 0;
  c.buffers[2].clear();
  EXPECT_EQ(Check(*c.d, c.buffers), Expect(Rule::kLayCsr04, 2, 0));
}

// --- Chunk independence. -----------------------------------------------------

std::vector<std::pair<std::string, Case>> AllCases() {
  std::vector<std::pair<std::string, Case>> all;
  for (const auto& [name, make] : ValidCases()) all.push_back({name, make()});
  for (Broken& b : BrokenCases()) all.push_back({b.name, std::move(b.c)});
  return all;
}

TEST(DataChecksChunking, EverySplitPointOfEveryBuffer) {
  for (const auto& [name, c] : AllCases()) {
    SCOPED_TRACE(name);
    const std::string whole = Check(*c.d, c.buffers);
    for (const auto& [index, bytes] : c.buffers) {
      for (size_t at = 0; at <= bytes.size(); ++at) {
        ASSERT_EQ(Check(*c.d, c.buffers, {}, SplitAt, at, index), whole)
            << "buffer " << index << " split at " << at;
      }
    }
  }
}

TEST(DataChecksChunking, FixedChunkSizes) {
  for (const auto& [name, c] : AllCases()) {
    SCOPED_TRACE(name);
    const std::string whole = Check(*c.d, c.buffers);
    for (size_t step : {1, 2, 3, 5, 7, 8, 9, 16}) {
      ASSERT_EQ(Check(*c.d, c.buffers, {}, Every, step), whole) << step;
    }
  }
}

TEST(DataChecksChunking, RandomInterleavingsGiveTheSameAnswer) {
  for (const auto& [name, c] : AllCases()) {
    SCOPED_TRACE(name);
    const std::string whole = Check(*c.d, c.buffers);
    for (uint32_t seed = 0; seed < 40; ++seed) {
      ASSERT_EQ(RunInterleaved(*c.d, c.buffers, seed), whole) << seed;
    }
  }
}

// --- Bounded memory.
// ----------------------------------------------------------

// CSR [rows, 4] with `rows` rows of two entries each: columns 1 then 0 break
// the order in row `bad` (when bad < rows).
Case WideCsr(uint64_t rows, uint64_t bad) {
  Case c{vectors::Csr(), {}};
  TensorDescriptor& d = *c.d;
  d.shape[0] = rows;
  d.layout.nnz = 2 * rows;
  d.buffers[0].byte_size = 8 * 2 * rows;
  d.buffers[1].byte_size = 8 * 2 * rows;
  d.buffers[2].byte_size = 8 * (rows + 1);
  std::vector<uint64_t> col, ptr;
  for (uint64_t r = 0; r < rows; ++r) {
    ptr.push_back(2 * r);
    col.push_back(r == bad ? 1 : 0);
    col.push_back(r == bad ? 0 : 3);
  }
  ptr.push_back(2 * rows);
  c.buffers[1] = U64s(col);
  c.buffers[2] = U64s(ptr);
  return c;
}

TEST(DataChecksMemory, TableOrderSkipsTheRowOrderCheckPastTheWindow) {
  DataCheckOptions o;
  o.order_window_entries = 8;
  // Fits: the 7 row starts after row 0 and the bad position are the 8
  // descents pending before the first pointer arrives.
  Case small = WideCsr(8, 5);
  ASSERT_TRUE(Validate(*small.d, vectors::AgreedOptions()).ok());
  EXPECT_EQ(Check(*small.d, small.buffers, o), Expect(Rule::kLayCsr07, 1, 88));
  // Does not fit: skipped and said so.
  Case big = WideCsr(100, 50);
  std::unique_ptr<IndexDataChecker> k = MakeIndexChecker(*big.d, o);
  EXPECT_TRUE(k->Feed(1, big.buffers[1]).ok());
  EXPECT_TRUE(k->Feed(2, big.buffers[2]).ok());
  EXPECT_TRUE(k->Finish().ok());
  EXPECT_TRUE(k->Skipped(Rule::kLayCsr07));
  EXPECT_FALSE(k->Skipped(Rule::kLayCsr08));
}

TEST(DataChecksMemory, FeedSomeAlternatingCompletesTheRowOrderCheck) {
  DataCheckOptions o;
  o.order_window_entries = 8;
  for (uint64_t bad : {0, 1, 50, 99, 100}) {
    SCOPED_TRACE(bad);
    Case big = WideCsr(100, bad);
    const std::string expected =
        bad < 100 ? Expect(Rule::kLayCsr07, 1, 8 * (2 * bad + 1)) : "OK";
    for (uint32_t seed = 0; seed < 10; ++seed) {
      EXPECT_EQ(RunInterleaved(*big.d, big.buffers, seed, o), expected);
    }
    // Strictly alternating, pointers first.
    std::unique_ptr<IndexDataChecker> k = MakeIndexChecker(*big.d, o);
    size_t at1 = 0, at2 = 0;
    Rejection r;
    while (r.ok() &&
           (at1 < big.buffers[1].size() || at2 < big.buffers[2].size())) {
      DataFeedResult f = k->FeedSome(
          2, absl::Span<const uint8_t>(big.buffers[2]).subspan(at2));
      at2 += f.consumed;
      r = f.rejection;
      if (!r.ok()) break;
      f = k->FeedSome(1,
                      absl::Span<const uint8_t>(big.buffers[1]).subspan(at1));
      at1 += f.consumed;
      r = f.rejection;
    }
    if (r.ok()) r = k->Finish();
    EXPECT_EQ(Describe(*k, r), expected);
    EXPECT_FALSE(k->Skipped(Rule::kLayCsr07));
  }
}

TEST(DataChecksMemory, UnsortedCooDuplicatesNeedTheBudget) {
  Case c = CooUnsorted();
  c.buffers[1] = U64s({4, 4, 4, /**/ 0, 1, 2, /**/ 4, 4, 4});
  DataCheckOptions o;
  o.duplicate_budget_bytes = 3 * (8 * 3 + 16);  // exactly enough
  EXPECT_EQ(Check(*c.d, c.buffers, o), Expect(Rule::kLayCoo06, 1, 48));
  o.duplicate_budget_bytes -= 1;
  std::unique_ptr<IndexDataChecker> k = MakeIndexChecker(*c.d, o);
  EXPECT_TRUE(k->Feed(1, c.buffers[1]).ok());
  EXPECT_TRUE(k->Finish().ok());
  EXPECT_TRUE(k->Skipped(Rule::kLayCoo06));
  // Sorted COO finds ties with no memory at all.
  Case s = Coo();
  o.duplicate_budget_bytes = 0;
  k = MakeIndexChecker(*s.d, o);
  EXPECT_FALSE(k->Skipped(Rule::kLayCoo06));
}

TEST(DataChecksMemory, NothingAllocatesWhileFeeding) {
  for (const auto& [name, c] : AllCases()) {
    SCOPED_TRACE(name);
    std::unique_ptr<IndexDataChecker> k = MakeIndexChecker(*c.d);
    testing::AllocationCount allocations;
    for (const auto& [index, bytes] : c.buffers) {
      for (size_t i = 0; i < bytes.size(); i += 3) {
        (void)k->Feed(index, absl::Span<const uint8_t>(bytes).subspan(i, 3));
      }
    }
    (void)k->Finish();  // only the allocations count here
    allocations.Stop();
    EXPECT_EQ(allocations.value(), 0u);
  }
}

}  // namespace
}  // namespace hurray
