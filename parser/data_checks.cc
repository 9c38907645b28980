#include "parser/data_checks.h"

#include <algorithm>
#include <cstring>

#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"
#include "parser/wire.h"

namespace hurray {

// --- IndexDataChecker: entries out of chunks. -------------------------------

IndexDataChecker::IndexDataChecker(const DataCheckOptions& options)
    : options_(options), strict_(options.mode == Mode::kStrict) {
  if (options_.order_window_entries == 0) options_.order_window_entries = 1;
}

IndexDataChecker::~IndexDataChecker() = default;

bool IndexDataChecker::Skipped(Rule) const { return false; }

uint32_t IndexDataChecker::Track(uint32_t buffer_index, uint32_t width,
                                 uint64_t byte_size) {
  Slot s;
  s.buffer_index = buffer_index;
  s.width = width;
  s.byte_size = byte_size;
  s.entries = byte_size / width;
  slots_.push_back(s);
  return static_cast<uint32_t>(slots_.size() - 1);
}

IndexDataChecker::Step IndexDataChecker::Reject(uint32_t buffer_index,
                                                Rule rule, uint64_t offset,
                                                const char* message) {
  rejection_ = {rule, offset, message};
  rejected_buffer_ = buffer_index;
  return Step::kReject;
}

Rejection IndexDataChecker::RejectNow(uint32_t buffer_index, Rule rule,
                                      uint64_t offset, const char* message) {
  Reject(buffer_index, rule, offset, message);
  return rejection_;
}

IndexDataChecker::Slot* IndexDataChecker::FindSlot(uint32_t buffer_index,
                                                   uint32_t* slot) {
  for (uint32_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i].buffer_index == buffer_index) {
      *slot = i;
      return &slots_[i];
    }
  }
  return nullptr;
}

Rejection IndexDataChecker::EnsureStarted() {
  if (started_) return rejection_;
  started_ = true;
  if (!strict_) return kAccepted;  // every rule here is strict-only
  const Rejection r = Start();
  if (!r.ok()) return r;
  // Slots without entries are complete before any byte arrives.
  for (uint32_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i].entries == 0 && OnComplete(i) == Step::kReject) {
      return rejection_;
    }
  }
  return kAccepted;
}

IndexDataChecker::Step IndexDataChecker::Deliver(uint32_t slot, uint64_t value,
                                                 bool may_stall) {
  Slot& s = slots_[slot];
  const Step step = OnEntry(slot, s.next_entry, value, may_stall);
  if (step != Step::kAccept) return step;
  if (++s.next_entry == s.entries) return OnComplete(slot);
  return Step::kAccept;
}

Rejection IndexDataChecker::Feed(uint32_t buffer_index,
                                 absl::Span<const uint8_t> chunk) {
  return FeedImpl(buffer_index, chunk, /*may_stall=*/false).rejection;
}

DataFeedResult IndexDataChecker::FeedSome(uint32_t buffer_index,
                                          absl::Span<const uint8_t> chunk) {
  return FeedImpl(buffer_index, chunk, /*may_stall=*/true);
}

DataFeedResult IndexDataChecker::FeedImpl(uint32_t buffer_index,
                                          absl::Span<const uint8_t> chunk,
                                          bool may_stall) {
  if (!rejection_.ok()) return {0, rejection_};
  const Rejection started = EnsureStarted();
  if (!started.ok()) return {0, started};
  uint32_t slot = 0;
  Slot* s = FindSlot(buffer_index, &slot);
  if (s == nullptr) return {chunk.size(), kAccepted};  // not an index buffer
  // Bytes past byte_size are not part of the buffer and are not read.
  const size_t n = static_cast<size_t>(
      std::min<uint64_t>(chunk.size(), s->byte_size - s->received));
  if (!strict_) {
    s->received += n;
    return {chunk.size(), kAccepted};
  }
  const uint32_t w = s->width;
  size_t used = 0;
  while (used < n) {
    // An entry is read straight from the chunk, or gathered in `partial`
    // when it straddles chunks.
    const uint32_t before = s->partial_size;
    size_t take = w;
    uint64_t value = 0;
    if (before == 0 && n - used >= w) {
      value = w == 8 ? wire::LoadU64(chunk.data() + used)
                     : wire::LoadU32(chunk.data() + used);
    } else {
      take = std::min<size_t>(w - before, n - used);
      std::memcpy(s->partial + before, chunk.data() + used, take);
      s->partial_size += static_cast<uint32_t>(take);
      if (s->partial_size < w) {
        used += take;
        break;
      }
      value = w == 8 ? wire::LoadU64(s->partial) : wire::LoadU32(s->partial);
      s->partial_size = 0;
    }
    const Step step = Deliver(slot, value, may_stall);
    if (step == Step::kStall) {
      // Give this chunk's bytes of the entry back; earlier ones stay
      // gathered.
      s->partial_size = before;
      break;
    }
    used += take;
    if (step == Step::kReject) {
      s->received += used;
      return {used, rejection_};
    }
  }
  s->received += used;
  // All of the chunk when it ran past the buffer's end (the excess is dropped).
  return {used == n ? chunk.size() : used, kAccepted};
}

Rejection IndexDataChecker::Finish() {
  if (!rejection_.ok()) return rejection_;
  const Rejection started = EnsureStarted();
  if (!started.ok()) return started;
  for (const Slot& s : slots_) {
    if (s.received < s.byte_size) {
      return RejectNow(s.buffer_index, Rule::kStreamEofBuffer, s.received,
                       "the index buffer ended early");
    }
  }
  return kAccepted;
}

// --- CSR and CSC. ------------------------------------------------------------

namespace {

constexpr uint32_t kCoordinates = 0;  // slot of buffer 1
constexpr uint32_t kPointers = 1;     // slot of buffer 2

// Window entries of a compressed level: the starts it keeps are distinct
// pointer values, so never more than the pointers. (More pending descents
// than that make a violation certain but not its position: the window
// overflows and, fed through Feed(), the check is skipped.)
uint32_t WindowFor(uint64_t pointers, uint32_t limit) {
  return static_cast<uint32_t>(std::clamp<uint64_t>(pointers, 1, limit));
}

}  // namespace

CsrIndexChecker::CsrIndexChecker(const TensorDescriptor& d,
                                 const DataCheckOptions& options)
    : IndexDataChecker(options),
      rules_(d.layout_tag == layout_tag::kCsr
                 ? Rules{Rule::kLayCsr04, Rule::kLayCsr05, Rule::kLayCsr06,
                         Rule::kLayCsr07, Rule::kLayCsr08, Rule::kBufSz07}
                 : Rules{Rule::kLayCsc04, Rule::kLayCsc05, Rule::kLayCsc06,
                         Rule::kLayCsc07, Rule::kLayCsc08, Rule::kBufSz08}),
      nnz_(d.layout.nnz),
      bound_(d.shape[d.layout_tag == layout_tag::kCsr ? 1 : 0]),
      window_(WindowFor(d.buffers[2].byte_size / 8,
                        IndexDataChecker::options().order_window_entries)),
      order_(window_.data(), static_cast<uint32_t>(window_.size()),
             d.buffers[1].byte_size / 8) {
  Track(1, 8, d.buffers[1].byte_size);
  Track(2, 8, d.buffers[2].byte_size);
}

bool CsrIndexChecker::Skipped(Rule rule) const {
  return rule == rules_.order && order_.skipped();
}

Rejection CsrIndexChecker::Start() {
  // The validator sizes both arrays exactly, except the pointer array when
  // its dimension is dynamic (BUF-SZ-07/08 are skipped then).
  for (uint32_t slot : {kCoordinates, kPointers}) {
    if (ByteSize(slot) % 8 != 0) {
      return RejectNow(slot + 1, rules_.size, 8 * Entries(slot),
                       "index buffer size is not a multiple of 8");
    }
  }
  if (Entries(kPointers) == 0) {
    return RejectNow(2, rules_.first, 0, "the pointer array is empty");
  }
  return kAccepted;
}

CsrIndexChecker::Step CsrIndexChecker::Order(SegmentOrderCheck::Step step) {
  switch (step) {
    case SegmentOrderCheck::Step::kOk:
      return Step::kAccept;
    case SegmentOrderCheck::Step::kStall:
      return Step::kStall;
    case SegmentOrderCheck::Step::kViolation:
      break;
  }
  return Reject(1, rules_.order, 8 * order_.violation(),
                "indices inside one segment are not strictly increasing");
}

CsrIndexChecker::Step CsrIndexChecker::OnEntry(uint32_t slot, uint64_t index,
                                               uint64_t value, bool may_stall) {
  if (slot == kCoordinates) {
    if (bound_ != kDynamicDim && value >= bound_) {
      return Reject(1, rules_.bounds, 8 * index, "index is out of bounds");
    }
    return Order(order_.OfferCoordinate(value, may_stall));
  }
  const uint64_t at = 8 * index;
  if (index == 0 && value != 0) {
    return Reject(2, rules_.first, at, "the first pointer is not 0");
  }
  if (index > 0 && value < previous_pointer_) {
    return Reject(2, rules_.monotonic, at, "the pointer array decreases");
  }
  if (index + 1 == Entries(kPointers) && value != nnz_) {
    return Reject(2, rules_.last, at, "the last pointer is not nnz");
  }
  const Step step = Order(order_.OfferStart(value, may_stall));
  if (step == Step::kAccept) previous_pointer_ = value;
  return step;
}

CsrIndexChecker::Step CsrIndexChecker::OnComplete(uint32_t slot) {
  return slot == kPointers ? Order(order_.EndStarts()) : Step::kAccept;
}

// --- COO. --------------------------------------------------------------------

// The tuples seen so far and a hash set of their numbers, sized once for
// every tuple of the buffer (duplicate_budget_bytes bounds it).
class CooIndexChecker::DuplicateTable {
 public:
  DuplicateTable(uint64_t tuples, uint32_t rank)
      : rank_(rank),
        coordinates_(tuples * rank),
        set_(0, Hash{this}, Equal{this}) {
    set_.reserve(tuples);
  }
  DuplicateTable(const DuplicateTable&) = delete;
  DuplicateTable& operator=(const DuplicateTable&) = delete;

  void Set(uint64_t tuple, uint32_t dim, uint64_t value) {
    coordinates_[tuple * rank_ + dim] = value;
  }
  // False when tuple `tuple` (complete) equals an earlier one.
  bool Insert(uint64_t tuple) {
    return set_.insert(static_cast<uint32_t>(tuple)).second;
  }

 private:
  absl::Span<const uint64_t> Tuple(uint32_t tuple) const {
    return {coordinates_.data() + uint64_t{tuple} * rank_, rank_};
  }
  struct Hash {
    const DuplicateTable* table;
    size_t operator()(uint32_t tuple) const {
      return absl::Hash<absl::Span<const uint64_t>>()(table->Tuple(tuple));
    }
  };
  struct Equal {
    const DuplicateTable* table;
    bool operator()(uint32_t a, uint32_t b) const {
      return table->Tuple(a) == table->Tuple(b);
    }
  };

  uint32_t rank_;
  std::vector<uint64_t> coordinates_;
  absl::flat_hash_set<uint32_t, Hash, Equal> set_;
};

CooIndexChecker::CooIndexChecker(const TensorDescriptor& d,
                                 const DataCheckOptions& options)
    : IndexDataChecker(options),
      rank_(d.rank),
      sorted_(d.layout.is_sorted == 1) {
  std::copy(d.shape, d.shape + rank_, shape_);
  const uint32_t slot = Track(1, 8, d.buffers[1].byte_size);
  if (sorted_ || !strict() || rank_ == 0) return;
  // Duplicates of unsorted tuples: 8·rank bytes per tuple kept, and about 16
  // per hash-set slot (absl keeps the load below 7/8, capacities are 2^k−1).
  const uint64_t tuples = Entries(slot) / rank_;
  uint64_t need = 0;
  if (tuples <= 0xFFFFFFFFu &&
      wire::CheckedMul(tuples, 8ull * rank_ + 16, &need) &&
      need <= options.duplicate_budget_bytes) {
    duplicates_ = std::make_unique<DuplicateTable>(tuples, rank_);
  }
}

CooIndexChecker::~CooIndexChecker() = default;

bool CooIndexChecker::Skipped(Rule rule) const {
  return rule == Rule::kLayCoo06 && strict() && !sorted_ &&
         duplicates_ == nullptr;
}

Rejection CooIndexChecker::Start() {
  const uint64_t tuple_bytes = 8ull * rank_;
  if (ByteSize(0) % tuple_bytes != 0) {
    return RejectNow(1, Rule::kBufSz06, ByteSize(0) - ByteSize(0) % tuple_bytes,
                     "indices do not hold whole tuples");
  }
  return kAccepted;
}

CooIndexChecker::Step CooIndexChecker::OnEntry(uint32_t, uint64_t index,
                                               uint64_t value, bool) {
  const uint32_t d = dim_;
  const uint64_t at = 8 * index;
  if (shape_[d] != kDynamicDim && value >= shape_[d]) {
    return Reject(1, Rule::kLayCoo05, at, "a coordinate is out of bounds");
  }
  if (sorted_) {
    // Lexicographic, dimension 0 major: the first differing coordinate
    // decides (layouts/coo.md § Storage Order).
    if (d == 0) prefix_equal_ = tuple_ > 0;
    if (prefix_equal_) {
      if (value < previous_[d]) {
        return Reject(1, Rule::kLayCoo07, at,
                      "sorted tuples are not in increasing order");
      }
      if (value > previous_[d]) prefix_equal_ = false;
    }
    previous_[d] = value;
  } else if (duplicates_ != nullptr) {
    duplicates_->Set(tuple_, d, value);
  }
  if (d + 1 < rank_) {
    dim_ = d + 1;
    return Step::kAccept;
  }
  const bool duplicate =
      sorted_ ? prefix_equal_
              : duplicates_ != nullptr && !duplicates_->Insert(tuple_);
  if (duplicate) {
    return Reject(1, Rule::kLayCoo06, 8 * tuple_ * rank_,
                  "two entries have the same coordinates");
  }
  dim_ = 0;
  ++tuple_;
  return Step::kAccept;
}

// --- CSF. --------------------------------------------------------------------

// Slot 2L reads pos_L (buffer 2L+1), slot 2L+1 reads crd_L (buffer 2L+2).
CsfIndexChecker::CsfIndexChecker(const TensorDescriptor& d,
                                 const DataCheckOptions& options)
    : IndexDataChecker(options),
      rank_(d.rank),
      empty_(d.layout.nnz == 0),
      nnz_(d.layout.nnz) {
  levels_.reserve(rank_);
  orders_.reserve(rank_);
  uint64_t total = 0;
  std::vector<uint32_t> capacity(rank_);
  for (uint32_t l = 0; l < rank_; ++l) {
    const uint32_t m = d.layout.mode_order[l];
    levels_.push_back({m < d.rank ? d.shape[m] : kDynamicDim, 0});
    Track(2 * l + 1, 8, d.buffers[2 * l + 1].byte_size);
    Track(2 * l + 2, 8, d.buffers[2 * l + 2].byte_size);
    capacity[l] = WindowFor(d.buffers[2 * l + 1].byte_size / 8,
                            IndexDataChecker::options().order_window_entries);
    total += capacity[l];
  }
  windows_.resize(total);
  uint64_t at = 0;
  for (uint32_t l = 0; l < rank_; ++l) {
    orders_.emplace_back(windows_.data() + at, capacity[l],
                         d.buffers[2 * l + 2].byte_size / 8);
    at += capacity[l];
  }
}

bool CsfIndexChecker::Skipped(Rule rule) const {
  if (rule != Rule::kLayCsf09) return false;
  for (const SegmentOrderCheck& o : orders_) {
    if (o.skipped()) return true;
  }
  return false;
}

Rule CsfIndexChecker::PointerRule(Rule general) const {
  return empty_ ? Rule::kLayCsf11 : general;
}

Rejection CsfIndexChecker::Start() {
  for (uint32_t l = 0; l < rank_; ++l) {
    const uint32_t pos = 2 * l, crd = 2 * l + 1;
    for (uint32_t slot : {pos, crd}) {
      if (ByteSize(slot) % 8 != 0) {
        return RejectNow(slot + 1, Rule::kBufSz09, 8 * Entries(slot),
                         "pos/crd buffer size is not a multiple of 8");
      }
    }
    // pos_L holds n_{L-1} + 1 entries, n_{-1} = 1 (§ Buffer Table).
    const uint64_t expected = (l == 0 ? 1 : Entries(crd - 2)) + 1;
    if (Entries(pos) != expected) {
      return RejectNow(pos + 1, PointerRule(Rule::kLayCsf08),
                       8 * std::min(Entries(pos), expected),
                       "pos_L does not hold one entry per parent plus one");
    }
    if (empty_ && Entries(crd) != 0) {
      return RejectNow(crd + 1, Rule::kLayCsf11, 0,
                       "an empty CSF tensor has a non-empty crd_L");
    }
    if (l + 1 == rank_ && Entries(crd) != nnz_) {
      return RejectNow(crd + 1, PointerRule(Rule::kLayCsf08),
                       8 * std::min(Entries(crd), nnz_),
                       "the leaf crd does not hold nnz entries");
    }
  }
  return kAccepted;
}

CsfIndexChecker::Step CsfIndexChecker::Order(uint32_t level,
                                             SegmentOrderCheck::Step step) {
  switch (step) {
    case SegmentOrderCheck::Step::kOk:
      return Step::kAccept;
    case SegmentOrderCheck::Step::kStall:
      return Step::kStall;
    case SegmentOrderCheck::Step::kViolation:
      break;
  }
  return Reject(2 * level + 2, Rule::kLayCsf09, 8 * orders_[level].violation(),
                "siblings inside one parent slice are not strictly increasing");
}

CsfIndexChecker::Step CsfIndexChecker::OnEntry(uint32_t slot, uint64_t index,
                                               uint64_t value, bool may_stall) {
  const uint32_t l = slot / 2;
  Level& level = levels_[l];
  SegmentOrderCheck& order = orders_[l];
  const uint64_t at = 8 * index;
  if (slot % 2 == 1) {
    if (level.bound != kDynamicDim && value >= level.bound) {
      return Reject(slot + 1, Rule::kLayCsf10, at,
                    "a coordinate is out of bounds");
    }
    return Order(l, order.OfferCoordinate(value, may_stall));
  }
  if (index == 0 && value != 0) {
    return Reject(slot + 1, PointerRule(Rule::kLayCsf06), at,
                  "pos_L[0] is not 0");
  }
  if (index > 0 && value < level.previous_pointer) {
    return Reject(slot + 1, PointerRule(Rule::kLayCsf07), at,
                  "pos_L decreases");
  }
  if (index + 1 == Entries(slot) && value != Entries(slot + 1)) {
    return Reject(slot + 1, PointerRule(Rule::kLayCsf08), at,
                  "the last pos_L entry is not the length of crd_L");
  }
  const Step step = Order(l, order.OfferStart(value, may_stall));
  if (step == Step::kAccept) level.previous_pointer = value;
  return step;
}

CsfIndexChecker::Step CsfIndexChecker::OnComplete(uint32_t slot) {
  if (slot % 2 == 1) return Step::kAccept;
  return Order(slot / 2, orders_[slot / 2].EndStarts());
}

// --- Block-paged. ------------------------------------------------------------

namespace {
constexpr uint32_t kBlockTable = 0;  // slot of buffer 1
constexpr uint32_t kSeqPtr = 1;      // slot of buffer 2
}  // namespace

BlockPagedIndexChecker::BlockPagedIndexChecker(const TensorDescriptor& d,
                                               const DataCheckOptions& options)
    : IndexDataChecker(options),
      width_(d.layout.block_table_index_type == 0 ? 4 : 8),
      num_pages_(d.layout.num_pages),
      page_size_(d.layout.page_size),
      tokens_(d.shape[0]) {
  Track(1, static_cast<uint32_t>(width_), d.buffers[1].byte_size);
  Track(2, static_cast<uint32_t>(width_), d.buffers[2].byte_size);
}

Rejection BlockPagedIndexChecker::Start() {
  for (uint32_t slot : {kBlockTable, kSeqPtr}) {
    if (ByteSize(slot) % width_ != 0) {
      return RejectNow(slot + 1, Rule::kBufSz10, width_ * Entries(slot),
                       "index buffer size is not a multiple of its width");
    }
  }
  if (Entries(kSeqPtr) == 0) {
    return RejectNow(2, Rule::kLayBpg15, 0, "seq_ptr is empty");
  }
  return kAccepted;
}

BlockPagedIndexChecker::Step BlockPagedIndexChecker::OnEntry(uint32_t slot,
                                                             uint64_t index,
                                                             uint64_t value,
                                                             bool) {
  const uint64_t at = width_ * index;
  if (slot == kBlockTable) {
    if (value >= num_pages_) {
      return Reject(1, Rule::kLayBpg18, at, "a page id is not below num_pages");
    }
    return Step::kAccept;
  }
  if (index == 0 && value != 0) {
    return Reject(2, Rule::kLayBpg15, at, "seq_ptr[0] is not 0");
  }
  if (index > 0 && value < previous_) {
    return Reject(2, Rule::kLayBpg16, at, "seq_ptr decreases");
  }
  if (index + 1 == Entries(kSeqPtr)) {
    if (value != Entries(kBlockTable)) {
      return Reject(2, Rule::kLayBpg17, at,
                    "seq_ptr[num_seqs] is not the number of block_table "
                    "entries");
    }
    uint64_t capacity = 0;
    if (tokens_ != kDynamicDim &&
        wire::CheckedMul(value, page_size_, &capacity) && tokens_ > capacity) {
      return Reject(2, Rule::kLayBpg19, at,
                    "shape[0] exceeds the tokens the logical pages hold");
    }
  }
  previous_ = value;
  return Step::kAccept;
}

// --- Factory. ----------------------------------------------------------------

std::unique_ptr<IndexDataChecker> MakeIndexChecker(
    const TensorDescriptor& d, const DataCheckOptions& options) {
  switch (d.layout_tag) {
    case layout_tag::kCoo:
      return std::make_unique<CooIndexChecker>(d, options);
    case layout_tag::kCsr:
    case layout_tag::kCsc:
      return std::make_unique<CsrIndexChecker>(d, options);
    case layout_tag::kCsf:
      return std::make_unique<CsfIndexChecker>(d, options);
    case layout_tag::kBlockPaged:
      return std::make_unique<BlockPagedIndexChecker>(d, options);
    default:
      return nullptr;
  }
}

}  // namespace hurray
