#include "stream/ingest/output/block_paged.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "dequant/plan.h"
#include "parser/element_type.h"
#include "parser/quantization.h"
#include "parser/wire.h"

namespace hurray::stream::ingest {
namespace {

// block_table_index_type 0x00: u32, 0x01: u64 (§ Additional Fields).
uint32_t IndexWidth(const TensorDescriptor& d) {
  return d.layout.block_table_index_type == 0x01 ? 8 : 4;
}

uint64_t Entry(absl::Span<const uint8_t> b, uint32_t w, uint64_t i) {
  return w == 8 ? wire::LoadU64(b.data() + 8 * i)
                : wire::LoadU32(b.data() + 4 * i);
}

absl::Status Broken(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("block-paged index: ", what));
}

}  // namespace

absl::StatusOr<PagedRows> PlanPagedRows(const TensorDescriptor& d,
                                        absl::Span<const uint8_t> block_table,
                                        absl::Span<const uint8_t> seq_ptr) {
  if (d.rank != 3) return Broken("rank is not 3");
  const uint32_t w = IndexWidth(d);
  const uint64_t page = d.layout.page_size;
  if (page == 0) return Broken("page_size is 0");
  PagedRows r;
  if (!wire::CheckedMul(d.shape[1], d.shape[2], &r.row_elements)) {
    return Broken("a row's element count overflows");
  }
  const uint64_t seqs = uint64_t{d.layout.num_seqs} + 1;
  if (seq_ptr.size() / w < seqs) {
    return Broken("seq_ptr has fewer than num_seqs + 1 entries");
  }
  r.logical_pages = block_table.size() / w;
  uint64_t slots = 0;
  if (!wire::CheckedMul(r.logical_pages, page, &slots)) {
    return Broken("the page slots overflow");
  }
  // Sequences that own pages; a decreasing seq_ptr (permissive) or one that
  // does not end at the table's end leaves the counts undetermined.
  uint64_t owners = 0;
  bool consistent = Entry(seq_ptr, w, 0) == 0 &&
                    Entry(seq_ptr, w, seqs - 1) == r.logical_pages;
  for (uint64_t s = 0; s + 1 < seqs; ++s) {
    const uint64_t a = Entry(seq_ptr, w, s), b = Entry(seq_ptr, w, s + 1);
    if (b < a) consistent = false;
    if (b > a) ++owners;
  }
  const uint64_t tokens = d.shape[0];
  if (consistent && tokens <= slots && (tokens == slots || owners <= 1)) {
    r.rows = tokens;
  } else {
    r.rows = slots;
    r.padded = true;
  }
  return r;
}

absl::Status ForEachPagedRun(
    const TensorDescriptor& d, const PagedRows& rows,
    absl::Span<const uint8_t> block_table,
    absl::FunctionRef<absl::Status(uint64_t page, uint64_t slots)> copy) {
  const uint32_t w = IndexWidth(d);
  const uint64_t page = d.layout.page_size;
  uint64_t left = rows.rows;
  for (uint64_t k = 0; left > 0; ++k) {
    if (k >= block_table.size() / w) return Broken("block_table too short");
    const uint64_t id = Entry(block_table, w, k);
    if (id >= d.layout.num_pages) {
      return Broken(absl::StrCat("block_table[", k, "] = ", id,
                                 " is not below num_pages ",
                                 d.layout.num_pages));
    }
    const uint64_t n = std::min(left, page);
    absl::Status s = copy(id, n);
    if (!s.ok()) return s;
    left -= n;
  }
  return absl::OkStatus();
}

absl::Status PoolAsRowMajor(const TensorDescriptor& d,
                            const dequant::ParameterBytes& params, Mode mode,
                            TensorDescriptor* pool,
                            dequant::ParameterBytes* pool_params,
                            std::vector<uint8_t>* storage) {
  *pool = d;
  pool->layout_tag = layout_tag::kRowMajor;
  pool->layout = LayoutFields();
  pool->byte_offset = 0;
  if (d.rank != 3 || !wire::CheckedMul(d.layout.num_pages, d.layout.page_size,
                                       &pool->shape[0])) {
    return absl::InvalidArgumentError("the page pool's shape overflows");
  }
  *pool_params = params;
  if (!d.has(flag::kHasQuantization)) return absl::OkStatus();
  QuantizationDescriptor& q = pool->quantization;
  switch (q.scheme_tag) {
    case scheme_tag::kPerTensorAffine:
      return absl::OkStatus();
    case scheme_tag::kPerChannelAffine:
      if (q.axis == 1 || q.axis == 2) return absl::OkStatus();
      break;
    case scheme_tag::kPerBlockAffine: {
      if (q.axis != 0 || q.block_size != d.layout.page_size) break;
      // One scale (and zero point) per page slot, i.e. per pool row.
      dequant::Plan plan;
      plan.scheme = dequant::Scheme::kPerBlockAffine;
      plan.storage_type = d.type_tag;
      plan.param_count = pool->shape[0];
      plan.scale_type = q.scale_type_tag;
      plan.symmetric = q.symmetric();
      absl::StatusOr<dequant::Params> p =
          dequant::LoadParams(plan, params, mode);
      if (!p.ok()) return p.status();
      storage->resize(p->scales.size() * 4);
      for (size_t i = 0; i < p->scales.size(); ++i) {
        wire::StoreF32(storage->data() + 4 * i, p->scales[i]);
      }
      q.scheme_tag = scheme_tag::kPerChannelAffine;
      q.axis = 0;
      q.block_size = 0;
      q.scale_type_tag = type_tag::kFloat32;
      pool_params->scales = *storage;
      return absl::OkStatus();
    }
    default:
      break;
  }
  return absl::UnimplementedError(absl::StrCat(
      "block-paged with ", SchemeName(q.scheme_tag), " on axis ", q.axis,
      ": a composition the spec does not define (LAY-BPG-11, LAY-BPG-12)"));
}

}  // namespace hurray::stream::ingest
