#include "stream/ingest/spooled_writer.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "absl/strings/str_cat.h"
#include "dequant/params.h"
#include "dequant/storage_walk.h"

namespace hurray::stream::ingest {

SpooledWriter::SpooledWriter(const WriterContext& ctx,
                             const TensorDescriptor& d, const std::string& base,
                             const std::string& name,
                             const OutputType& out_type, uint64_t count,
                             std::optional<dequant::Plan> plan)
    : DenseWriter(ctx, d, base, name, out_type, plan.has_value(), count),
      ctx_(ctx),
      desc_(d),
      plan_(std::move(plan)) {}

SpooledWriter::~SpooledWriter() { DropSpool(); }

absl::Status SpooledWriter::Begin() {
  const TensorDescriptor& d = desc_;
  // A plain tensor's other buffers are not used.
  params_.resize(quantized() ? d.buffer_count : 1);
  for (uint32_t i = 1; i < params_.size(); ++i) {
    params_[i].reserve(static_cast<size_t>(d.buffers[i].byte_size));
  }
  spool_size_ = 0;
  in_memory_ = d.buffers[0].byte_size <= ctx_.options->spool_memory_bytes;
  if (in_memory_) {
    ctx_.spool_memory->Clear();
    ctx_.spool_memory->Reserve(static_cast<size_t>(d.buffers[0].byte_size));
  } else {
    if (ctx_.dir == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat("a data buffer of ", d.buffers[0].byte_size,
                       " bytes to spool, and no usable directory for it"));
    }
    absl::StatusOr<container::TempFile> t = ctx_.dir->CreateTemp(0600);
    if (!t.ok()) return t.status();
    spool_fd_ = t->fd;
    spool_name_ = t->name;
  }
  return OpenOutput(d);
}

absl::Status SpooledWriter::Piece(uint32_t buffer,
                                  absl::Span<const uint8_t> piece) {
  if (buffer == 0) return Spool(piece);
  if (buffer < params_.size()) {
    params_[buffer].insert(params_[buffer].end(), piece.begin(), piece.end());
  }
  return absl::OkStatus();
}

absl::Status SpooledWriter::End(WriterResult* result) {
  absl::Status s = quantized() ? DequantizeSpool() : ConvertSpool();
  if (!s.ok()) return s;
  return DenseWriter::End(result);
}

void SpooledWriter::DropSpool() {
  if (spool_fd_ >= 0) {
    ::close(spool_fd_);
    ctx_.dir->Remove(spool_name_);
  }
  spool_fd_ = -1;
  spool_name_.clear();
  // Its block stays for the next tensor (DequantSink::OnDescriptor).
  if (in_memory_) ctx_.spool_memory->Clear();
  for (auto& p : params_) std::vector<uint8_t>().swap(p);
}

absl::Status SpooledWriter::Spool(absl::Span<const uint8_t> piece) {
  spool_size_ += piece.size();
  if (in_memory_) {
    ctx_.spool_memory->Append(piece.data(), piece.size());
    return absl::OkStatus();
  }
  return container::WriteAllFd(spool_fd_, piece.data(), piece.size(),
                               ctx_.dir->Describe(spool_name_));
}

// Reads the spooled data buffer of `d` (a dense layout) in logical
// row-major order: from memory, or from the spool file through a block
// cache of gather_cache_bytes (bounded memory whatever the layout:
// stream/ingest/output/row_major_gather.h).
absl::Status SpooledWriter::GatherSpool(const TensorDescriptor& d,
                                        GatherEmit emit) {
  if (in_memory_ || spool_size_ == 0) {
    return GatherRowMajor(d, SpoolBytes(), kSpoolReadBytes, emit);
  }
  GatherFile file;
  file.fd = spool_fd_;
  file.size = spool_size_;
  file.name = ctx_.dir->Describe(spool_name_);
  file.cache_bytes = ctx_.options->gather_cache_bytes;
  return GatherRowMajorFromFile(d, file, kSpoolReadBytes, emit);
}

absl::Status SpooledWriter::ConvertSpool() {
  absl::Status s = GatherSpool(
      desc_, [this](absl::Span<const uint8_t> c) { return Convert(c); });
  DropSpool();
  return s;
}

absl::Status SpooledWriter::DequantizeSpool() {
  std::vector<absl::Span<const uint8_t>> views(params_.size());
  for (size_t i = 1; i < params_.size(); ++i) views[i] = params_[i];
  absl::StatusOr<dequant::ParameterBytes> pb =
      dequant::ParametersFromBuffers(desc_, views);
  if (!pb.ok()) return pb.status();
  const bool row_major = desc_.layout_tag == layout_tag::kRowMajor;
  // Another layout: the stored grid is read back in row-major order and
  // dequantized as the same tensor stored row-major (packed from byte 0).
  // The plan MakeTensorWriter built is used again, changed the same way
  // (dequant/plan.h: the layout only sets these fields).
  TensorDescriptor rm = desc_;
  dequant::Plan plan = *plan_;
  if (!row_major) {
    rm.layout_tag = layout_tag::kRowMajor;
    rm.layout = LayoutFields();
    rm.byte_offset = 0;
    rm.buffers[0].byte_size = plan_->storage_bytes;
    plan.layout_tag = layout_tag::kRowMajor;
    plan.byte_offset = 0;
    plan.data_buffer_size = plan_->storage_bytes;
  }
  dequant::DequantOptions options;
  options.mode = ctx_.options->mode;
  absl::StatusOr<dequant::Dequantizer> dq =
      dequant::Dequantizer::Create(std::move(plan), rm, *pb, options);
  if (!dq.ok()) return dq.status();
  set_dequantizer(*std::move(dq));
  for (auto& p : params_) std::vector<uint8_t>().swap(p);
  if (!row_major) {
    const TensorDescriptor grid = dequant::StoredGridDescriptor(desc_, *plan_);
    absl::Status s = GatherSpool(
        grid, [this](absl::Span<const uint8_t> c) { return Dequantize(c); });
    DropSpool();
    return s;
  }
  if (in_memory_) {
    absl::Status s = Dequantize(SpoolBytes());
    ctx_.spool_memory->Clear();
    return s;
  }
  std::vector<uint8_t> buf(kSpoolReadBytes);
  uint64_t at = 0;
  while (at < spool_size_) {
    const size_t n =
        static_cast<size_t>(std::min<uint64_t>(buf.size(), spool_size_ - at));
    const ssize_t got =
        ::pread(spool_fd_, buf.data(), n, static_cast<off_t>(at));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      return ErrnoStatus("cannot read", ctx_.dir->Describe(spool_name_));
    }
    absl::Status s =
        Dequantize(absl::MakeConstSpan(buf.data(), static_cast<size_t>(got)));
    if (!s.ok()) return s;
    at += static_cast<uint64_t>(got);
  }
  DropSpool();
  return absl::OkStatus();
}

}  // namespace hurray::stream::ingest
