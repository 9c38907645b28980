#include "stream/ingest/paged_writer.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "dequant/dequantizer.h"
#include "dequant/output.h"
#include "dequant/params.h"
#include "parser/element_type.h"
#include "parser/rules.h"
#include "parser/wire.h"
#include "stream/ingest/output/block_paged.h"

namespace hurray::stream::ingest {

absl::Status PagedWriter::Begin(std::string* none) {
  // The parameter buffers follow the page pool, the block table and the
  // sequence lengths.
  HURRAY_RETURN_IF_ERROR(CheckParameters(3));
  if (desc_.rank != 3 || desc_.buffer_count < 3) {
    *none = "no output: a block-paged tensor needs rank 3 and 3 buffers";
    return absl::OkStatus();
  }
  return OpenSpools();
}

absl::Status PagedWriter::Finish(WriterResult* result) {
  absl::Status s = Copy(&result->verdict);
  if (s.ok() && !no_output_) s = out_.Close(result);
  return s;
}

// The page pool converted to the output type (dequantized when
// quantized), row-major [num_pages · page_size, heads, dims], into *pool.
absl::Status PagedWriter::ConvertPool(
    const std::vector<absl::Span<const uint8_t>>& views,
    const std::vector<std::unique_ptr<Mapping>>& maps, BufferSpool* pool,
    std::string* none) {
  std::vector<absl::Span<const uint8_t>> buffers = views;
  dequant::ParameterBytes pb;
  if (quantized_) {
    absl::StatusOr<dequant::ParameterBytes> p =
        dequant::ParametersFromBuffers(desc_, buffers);
    if (!p.ok()) return p.status();
    pb = *p;
  }
  dequant::DequantOptions dq_options;
  dq_options.mode = ctx_.options->mode;
  TensorDescriptor rm;
  dequant::ParameterBytes rm_params;
  std::vector<uint8_t> widened;
  absl::Status s =
      PoolAsRowMajor(desc_, pb, ctx_.options->mode, &rm, &rm_params, &widened);
  if (!s.ok()) {
    if (RuleIdOf(s).has_value()) return s;
    *none = std::string(s.message());
    return absl::OkStatus();
  }
  uint64_t count = 0, bytes = 0;
  if (!rm.ElementCount(&count) ||
      !wire::CheckedMul(count, conv_->out_bytes_per_element(), &bytes)) {
    *none = "the page pool's size overflows";
    return absl::OkStatus();
  }
  uint64_t budget = ctx_.options->spool_memory_bytes;
  s = OpenSpool(ctx_.dir, pool, bytes, &budget);
  if (!s.ok()) return s;
  std::vector<uint8_t> chunk;
  if (!quantized_) {
    ElementConverter conv(desc_.type_tag, out_type_, count);
    for (size_t at = 0; s.ok() && at < views[0].size(); at += kSubPiece) {
      chunk.clear();
      conv.Feed(views[0].subspan(at, kSubPiece), &chunk);
      s = AppendSpool(ctx_.dir, pool, chunk);
      if ((at + kSubPiece) % kReleaseBytes == 0) ReleaseAll(maps);
    }
    if (s.ok() && conv.done() < count) {
      s = absl::DataLossError("the page pool is shorter than its pages");
    }
    return s;
  }
  absl::StatusOr<dequant::Dequantizer> dq =
      dequant::Dequantizer::Create(rm, rm_params, dq_options);
  if (!dq.ok()) {
    if (RuleIdOf(dq.status()).has_value()) return dq.status();
    *none = std::string(dq.status().message());
    return absl::OkStatus();
  }
  ElementConverter conv(type_tag::kFloat32, out_type_, count);
  // The pool, dequantized in order (rm is row-major) and converted.
  dequant::WindowOutput pool_out(
      [&](uint64_t, absl::Span<const float> f) -> absl::Status {
        le_.resize(f.size() * 4);
        for (size_t i = 0; i < f.size(); ++i) {
          wire::StoreF32(&le_[4 * i], f[i]);
        }
        chunk.clear();
        conv.Feed(le_, &chunk);
        return AppendSpool(ctx_.dir, pool, chunk);
      });
  for (size_t at = 0; s.ok() && at < views[0].size(); at += kSubPiece) {
    const absl::Span<const uint8_t> part = views[0].subspan(at, kSubPiece);
    s = dq->Feed(part, pool_out);
    if ((at + kSubPiece) % kReleaseBytes == 0) ReleaseAll(maps);
  }
  if (s.ok()) s = dq->Finish();
  if (s.ok() && conv.done() < count) {
    s = absl::DataLossError("the page pool is shorter than its pages");
  }
  return s;
}

// The rows in block-table order (PlanPagedRows), each page copied from
// the converted pool.
absl::Status PagedWriter::Copy(std::string* verdict) {
  conv_.emplace(quantized_ ? type_tag::kFloat32 : desc_.type_tag, out_type_, 0);
  std::vector<std::unique_ptr<Mapping>> maps;
  std::vector<absl::Span<const uint8_t>> views;
  absl::Status s = spools_.View(&maps, &views);
  if (!s.ok()) return s;
  absl::StatusOr<PagedRows> rows = PlanPagedRows(desc_, views[1], views[2]);
  if (!rows.ok()) {
    if (rows.status().code() != absl::StatusCode::kInvalidArgument) {
      return rows.status();
    }
    NoOutputAtEnd(verdict, rows.status().message());
    return absl::OkStatus();
  }
  std::string none;
  BufferSpool pool;
  s = ConvertPool(views, maps, &pool, &none);
  Mapping pool_map;
  const uint8_t* vals = pool.mem.data();
  if (s.ok() && none.empty() && pool.file.fd >= 0) {
    s = pool_map.Map(pool.file.fd, pool.size, false);
    vals = pool_map.data();
  }
  std::vector<uint64_t> shape = {rows->rows, desc_.shape[1], desc_.shape[2]};
  if (out_type_.pairs) shape.push_back(2);
  if (s.ok() && none.empty()) {
    s = out_.Open(name_, out_type_, shape);
    if (out_.in_safetensors()) late_entries_.push_back("");
  }
  const uint64_t row_bytes =
      rows->row_elements * conv_->out_bytes_per_element();
  uint64_t copied = 0;
  if (s.ok() && none.empty()) {
    const uint64_t page_bytes = row_bytes * desc_.layout.page_size;
    std::vector<uint8_t>& out_buf = out_.buffer();
    // Each page's rows from the converted pool; its pages dropped from
    // the resident set every 16 MiB.
    auto copy = [&](uint64_t page, uint64_t slots) -> absl::Status {
      const uint8_t* from = vals + page * page_bytes;
      for (uint64_t left = slots * row_bytes; left > 0;) {
        const size_t n =
            static_cast<size_t>(std::min<uint64_t>(left, kOutBufferBytes));
        out_buf.insert(out_buf.end(), from, from + n);
        from += n;
        left -= n;
        copied += n;
        absl::Status f = out_.FlushIfFull();
        if (!f.ok()) return f;
        if (copied % kReleaseBytes < n) pool_map.Release();
      }
      return absl::OkStatus();
    };
    s = ForEachPagedRun(desc_, *rows, views[1], copy);
  }
  pool_map.Reset();
  DropSpool(ctx_.dir, &pool);
  maps.clear();
  spools_.Drop();
  if (s.ok() && !none.empty()) {
    NoOutputAtEnd(verdict, none);
    return absl::OkStatus();
  }
  if (!s.ok()) {
    if (s.code() != absl::StatusCode::kInvalidArgument ||
        RuleIdOf(s).has_value()) {
      return s;
    }
    NoOutputAtEnd(verdict, s.message());
    return absl::OkStatus();
  }
  const uint64_t values =
      row_bytes == 0 ? 0 : copied / row_bytes * rows->row_elements;
  *verdict = absl::StrCat(quantized_ ? "dequantized (" : "converted (", values,
                          " values, block-paged");
  if (rows->padded) {
    absl::StrAppend(verdict, "; every slot of its ", rows->logical_pages,
                    " logical pages: the format does not give each "
                    "sequence's token count");
  }
  absl::StrAppend(verdict, ")");
  return absl::OkStatus();
}

}  // namespace hurray::stream::ingest
