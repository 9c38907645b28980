// Data-level checks of the index buffers of the sparse and block-paged
// layouts (REJECT-RULES.md §3.8, §3.9): opt-in, streaming, bounded memory.
//
// A checker is built once from a descriptor that passed the validator and is
// then fed the bytes of the layout's index buffers as they arrive, in chunks
// of any size, cut anywhere (even inside an entry). Each buffer is fed from
// its first byte to its last, in order; different buffers may be fed in any
// interleaving (a stream delivers them in table order). Buffers the checker
// does not read (values, quantization parameters) may be passed and are
// ignored. Nothing is allocated after construction, and what construction
// allocates does not depend on the data: a few words per tracked buffer, the
// order windows (DataCheckOptions::order_window_entries per compressed level)
// and, for unsorted COO only, the duplicate table when it fits
// DataCheckOptions::duplicate_budget_bytes.
//
// | layout | buffers read | rules |
// |---|---|---|
// | COO | 1 indices | LAY-COO-05 bounds, -07 sorted order, -06 duplicates |
// | CSR | 1 col_indices, 2 row_ptr | LAY-CSR-04…08 |
// | CSC | 1 row_indices, 2 col_ptr | LAY-CSC-04…08 |
// | CSF | 2L+1 pos_L, 2L+2 crd_L | LAY-CSF-06…11 |
// | block-paged | 1 block_table, 2 seq_ptr (u32 or u64) | LAY-BPG-15…19 |
//
// What one pass can and cannot check in bounded memory:
// - Bounds (LAY-COO-05, LAY-CSR/CSC-08, LAY-CSF-10, LAY-BPG-18), pointer
//   arrays (first entry 0, non-decreasing, last entry = the count the other
//   buffer holds: LAY-CSR/CSC-04…06, LAY-CSF-06…08, LAY-BPG-15…17, 19) and the
//   sorted order of COO (LAY-COO-07, with ties reported as duplicates,
//   LAY-COO-06) need O(1) state (a 64-entry tuple for COO).
// - Strict order inside a segment (LAY-CSR-07, LAY-CSC-07, LAY-CSF-09) pairs
//   the coordinate buffer with the pointer buffer (parser/segment_order.h).
//   Fed through Feed(), the check keeps up to `order_window_entries` entries
//   of the buffer that is ahead and is skipped (Skipped() reports it) when
//   that is not enough: in CSR/CSC table order every coordinate arrives
//   before the first pointer, so a matrix with more than ~window rows is
//   skipped. Fed through FeedSome() by a caller that can read both buffers
//   (a file, memory), the checker refuses bytes instead of skipping and the
//   caller alternates: the check is then always complete.
// - Duplicates in unsorted COO (LAY-COO-06) need the tuples seen so far:
//   the checker keeps them only when nnz·(8·rank + 16) bytes fit
//   `duplicate_budget_bytes`, and otherwise skips the rule (Skipped()).
//
// A skipped rule is neither passed nor failed: a caller that needs it treats
// Skipped() as a failure, or checks again through FeedSome().
//
// Rejections carry the byte offset inside the buffer rejected_buffer()
// names. Every rule here is strict-only (REJECT-RULES.md §1): in permissive
// mode the checkers accept everything and the caller must not interpret the
// data. When a tensor violates one rule, the rejection is the same whatever
// the chunking and the interleaving of the buffers (for the order rules, as
// long as the window is not exceeded); with several violations the first one
// met in feed order is reported. For one feed order (the buffers' bytes in
// the same sequence), the chunking changes neither the rejection nor what
// Skipped() reports: checks run entry by entry, whatever the chunk
// boundaries (fuzz/data_checks_fuzz.cc holds the checkers to it).
#ifndef HURRAY_PARSER_DATA_CHECKS_H_
#define HURRAY_PARSER_DATA_CHECKS_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/types/span.h"
#include "parser/descriptor.h"
#include "parser/rules.h"
#include "parser/segment_order.h"

namespace hurray {

struct DataCheckOptions {
  Mode mode = Mode::kStrict;
  // Window of each compressed level's order check, in entries (8 bytes
  // each); capped by what the level can need. At least 1.
  uint32_t order_window_entries = 1024;
  // Memory for duplicate detection in unsorted COO; above it LAY-COO-06 is
  // skipped.
  uint64_t duplicate_budget_bytes = uint64_t{1} << 20;
};

// [[nodiscard]]: see Rejection (parser/rules.h).
struct [[nodiscard]] DataFeedResult {
  size_t consumed;      // bytes of the chunk taken
  Rejection rejection;  // ok() unless a rule was violated
};

class IndexDataChecker {
 public:
  virtual ~IndexDataChecker();
  IndexDataChecker(const IndexDataChecker&) = delete;
  IndexDataChecker& operator=(const IndexDataChecker&) = delete;

  // Consumes all of `chunk`, the next bytes of buffer `buffer_index`. Once a
  // rejection is returned, every later call returns it again.
  Rejection Feed(uint32_t buffer_index, absl::Span<const uint8_t> chunk);

  // Consumes as much of `chunk` as the order windows allow: fewer bytes
  // than given means "feed the other buffer of the pair, then come back
  // with the rest". It stops only where the other buffer of the pair has
  // bytes left to feed, so alternating always progresses.
  DataFeedResult FeedSome(uint32_t buffer_index,
                          absl::Span<const uint8_t> chunk);

  // Declares the end of the data: a tracked buffer not fed completely is
  // STREAM-EOF-BUFFER (offset: bytes received).
  Rejection Finish();

  const Rejection& rejection() const { return rejection_; }
  // The buffer the rejection's offset points into.
  uint32_t rejected_buffer() const { return rejected_buffer_; }
  // True when `rule` was not checked because its memory bound was reached.
  virtual bool Skipped(Rule rule) const;

 protected:
  enum class Step : uint8_t { kAccept, kStall, kReject };

  explicit IndexDataChecker(const DataCheckOptions& options);

  // Declares buffer `buffer_index` as read by this checker, with entries of
  // `width` bytes (4 or 8). Returns its slot number (0, 1, ... in call order).
  uint32_t Track(uint32_t buffer_index, uint32_t width, uint64_t byte_size);
  uint64_t Entries(uint32_t slot) const { return slots_[slot].entries; }
  uint64_t ByteSize(uint32_t slot) const { return slots_[slot].byte_size; }

  // Checks decidable from the descriptor alone, run once before any entry.
  virtual Rejection Start() { return kAccepted; }
  // One complete entry of a slot, in order. kStall must leave no trace (the
  // same entry is offered again later) and is allowed only when may_stall.
  virtual Step OnEntry(uint32_t slot, uint64_t index, uint64_t value,
                       bool may_stall) = 0;
  // After the last entry of a slot (at Start for an empty one).
  virtual Step OnComplete(uint32_t slot) {
    (void)slot;
    return Step::kAccept;
  }

  // Records a rejection at `offset` of buffer `buffer_index`.
  Step Reject(uint32_t buffer_index, Rule rule, uint64_t offset,
              const char* message);
  Rejection RejectNow(uint32_t buffer_index, Rule rule, uint64_t offset,
                      const char* message);
  bool strict() const { return strict_; }
  const DataCheckOptions& options() const { return options_; }

 private:
  struct Slot {
    uint32_t buffer_index = 0;
    uint32_t width = 8;
    uint64_t byte_size = 0;
    uint64_t entries = 0;
    uint64_t received = 0;    // bytes taken so far
    uint64_t next_entry = 0;  // entries accepted so far
    uint8_t partial[8] = {};  // bytes of an entry that straddles chunks
    uint32_t partial_size = 0;
  };

  DataFeedResult FeedImpl(uint32_t buffer_index,
                          absl::Span<const uint8_t> chunk, bool may_stall);
  Step Deliver(uint32_t slot, uint64_t value, bool may_stall);
  Slot* FindSlot(uint32_t buffer_index, uint32_t* slot);
  Rejection EnsureStarted();

  DataCheckOptions options_;
  bool strict_;
  bool started_ = false;
  std::vector<Slot> slots_;
  Rejection rejection_;
  uint32_t rejected_buffer_ = 0;
};

// CSR (0x07) and CSC (0x08): buffer 1 holds the coordinates (column indices
// for CSR, row indices for CSC), buffer 2 the pointers (layouts/csr.md,
// layouts/csc.md § Storage Invariants 1–4).
class CsrIndexChecker final : public IndexDataChecker {
 public:
  CsrIndexChecker(const TensorDescriptor& d, const DataCheckOptions& options);
  bool Skipped(Rule rule) const override;

 private:
  struct Rules {
    Rule first, last, monotonic, order, bounds, size;
  };

  Rejection Start() override;
  Step OnEntry(uint32_t slot, uint64_t index, uint64_t value,
               bool may_stall) override;
  Step OnComplete(uint32_t slot) override;
  Step Order(SegmentOrderCheck::Step step);

  Rules rules_;
  uint64_t nnz_;
  uint64_t bound_;  // kDynamicDim: not checked
  uint64_t previous_pointer_ = 0;
  std::vector<uint64_t> window_;
  SegmentOrderCheck order_;
};
using CscIndexChecker = CsrIndexChecker;

// COO (0x06): buffer 1 holds nnz tuples of rank u64 coordinates
// (layouts/coo.md § Storage Order, § Validity Constraints 1–3).
class CooIndexChecker final : public IndexDataChecker {
 public:
  CooIndexChecker(const TensorDescriptor& d, const DataCheckOptions& options);
  ~CooIndexChecker() override;
  bool Skipped(Rule rule) const override;

 private:
  class DuplicateTable;

  Rejection Start() override;
  Step OnEntry(uint32_t slot, uint64_t index, uint64_t value,
               bool may_stall) override;

  uint32_t rank_;
  bool sorted_;
  uint64_t shape_[kMaxRank];
  uint64_t previous_[kMaxRank] = {};  // sorted: the previous tuple
  uint32_t dim_ = 0;                  // dimension of the next coordinate
  uint64_t tuple_ = 0;                // tuple of the next coordinate
  bool prefix_equal_ = false;  // sorted: this tuple equals the previous so far
  std::unique_ptr<DuplicateTable> duplicates_;  // unsorted, within budget
};

// CSF (0x09): level L reads pos_L (buffer 2L+1) and crd_L (buffer 2L+2)
// (layouts/csf.md § Storage Invariants 1–5 and the empty case).
class CsfIndexChecker final : public IndexDataChecker {
 public:
  CsfIndexChecker(const TensorDescriptor& d, const DataCheckOptions& options);
  bool Skipped(Rule rule) const override;

 private:
  struct Level {
    uint64_t bound;             // shape[mode_order[L]]; kDynamicDim: unchecked
    uint64_t previous_pointer;  // last pos_L entry
  };

  Rejection Start() override;
  Step OnEntry(uint32_t slot, uint64_t index, uint64_t value,
               bool may_stall) override;
  Step OnComplete(uint32_t slot) override;
  Step Order(uint32_t level, SegmentOrderCheck::Step step);
  Rule PointerRule(Rule general) const;

  uint32_t rank_;
  bool empty_;  // nnz = 0: violations are LAY-CSF-11
  uint64_t nnz_;
  std::vector<Level> levels_;
  std::vector<uint64_t> windows_;
  std::vector<SegmentOrderCheck> orders_;
};

// Block-paged (0x0A): buffer 1 block_table, buffer 2 seq_ptr, u32 or u64 per
// block_table_index_type (layouts/block-paged.md § Storage Invariants 1–3,
// § Partial trailing page).
class BlockPagedIndexChecker final : public IndexDataChecker {
 public:
  BlockPagedIndexChecker(const TensorDescriptor& d,
                         const DataCheckOptions& options);

 private:
  Rejection Start() override;
  Step OnEntry(uint32_t slot, uint64_t index, uint64_t value,
               bool may_stall) override;

  uint64_t width_;
  uint64_t num_pages_;
  uint64_t page_size_;
  uint64_t tokens_;  // shape[0]; kDynamicDim: LAY-BPG-19 unchecked
  uint64_t previous_ = 0;
};

// The checker of `d`'s layout, or nullptr for a layout without index data
// (dense, composite, extension). `d` must have passed the validator.
std::unique_ptr<IndexDataChecker> MakeIndexChecker(
    const TensorDescriptor& d, const DataCheckOptions& options = {});

}  // namespace hurray

#endif  // HURRAY_PARSER_DATA_CHECKS_H_
