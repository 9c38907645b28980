// A block-paged tensor (layouts/block-paged.md, tag 0x0A) read as its
// logical dense tensor [tokens, num_heads, head_dim], row-major.
//
// § Element Lookup: token t of sequence s is slot t mod page_size of the
// physical page block_table[seq_ptr[s] + t / page_size], and a page's slots
// are contiguous in page_pool (page_size · num_heads · head_dim elements
// each). The format does not carry each sequence's token count, only their
// sum shape[0] (RESOLUTIONS.md 24 a). The dense rows are determined when
//   - every logical page is full (shape[0] = total_logical_pages ·
//     page_size), or
//   - at most one sequence owns pages (its tokens are the first shape[0]
//     slots of its pages);
// the rows are then the tokens of the sequences one after the other,
// shape[0] of them. Otherwise ("padded") the rows are every slot of every
// logical page in block-table order, total_logical_pages · page_size of
// them, the undefined slots after each sequence's last token included.
//
// The index buffers are read whole (the ingest sink spools them); in
// permissive mode their invariants (LAY-BPG-15…19) may be broken, so every
// entry is checked again here: InvalidArgument, never a read out of range.
#ifndef HURRAY_STREAM_INGEST_OUTPUT_BLOCK_PAGED_H_
#define HURRAY_STREAM_INGEST_OUTPUT_BLOCK_PAGED_H_

#include <cstdint>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "dequant/params.h"
#include "parser/descriptor.h"
#include "parser/options.h"

namespace hurray::stream::ingest {

struct PagedRows {
  uint64_t rows = 0;           // output rows (tokens)
  uint64_t logical_pages = 0;  // entries of block_table
  bool padded = false;         // token counts not determined (see above)
  uint64_t row_elements = 0;   // num_heads · head_dim
};

// The rows of the dense form of `d`, from its block_table (buffer 1) and
// seq_ptr (buffer 2).
[[nodiscard]] absl::StatusOr<PagedRows> PlanPagedRows(
    const TensorDescriptor& d, absl::Span<const uint8_t> block_table,
    absl::Span<const uint8_t> seq_ptr);

// Calls copy(physical_page, slots) for the logical pages in order, until
// rows.rows slots were named (the last page may give fewer than page_size).
// InvalidArgument for a page id ≥ num_pages (LAY-BPG-18).
[[nodiscard]] absl::Status ForEachPagedRun(
    const TensorDescriptor& d, const PagedRows& rows,
    absl::Span<const uint8_t> block_table,
    absl::FunctionRef<absl::Status(uint64_t page, uint64_t slots)> copy);

// The page pool of a block-paged tensor as a row-major tensor
// [num_pages · page_size, num_heads, head_dim] with the same elements and
// values. Quantized (§ Quantization Compatibility): per-tensor and
// per-channel on axis 1 or 2 keep their parameters; per-block affine
// (axis 0, block_size = page_size: one scale per page slot, § Per-page-slot
// parameters) becomes per-channel on axis 0 of the pool, its scales checked
// by the per-block rules (QNT-PBA-12, QNT-PBA-13) and widened to float32
// into *storage. Unimplemented for the compositions the spec does not define
// (NF4, MXFP, per-channel on axis 0: LAY-BPG-11/12, accepted only in
// permissive mode). `params`: the tensor's parameter bytes (empty if plain).
[[nodiscard]] absl::Status PoolAsRowMajor(const TensorDescriptor& d,
                                          const dequant::ParameterBytes& params,
                                          Mode mode, TensorDescriptor* pool,
                                          dequant::ParameterBytes* pool_params,
                                          std::vector<uint8_t>* storage);

}  // namespace hurray::stream::ingest

#endif  // HURRAY_STREAM_INGEST_OUTPUT_BLOCK_PAGED_H_
