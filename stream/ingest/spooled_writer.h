// SpooledWriter (stream/ingest/tensor_writer.h): a dense tensor whose
// elements cannot be converted as they arrive — its parameter buffers come
// after its data buffer on the wire (interchange.md § Scope), or its layout
// stores them out of logical order. The data buffer is spooled, in the
// sink's in-memory block (WriterContext::spool_memory) up to
// spool_memory_bytes, else in a temp of OUT_DIR; the parameter buffers are
// kept in memory (at most max_parameter_bytes, checked by MakeTensorWriter).
// At the tensor's end the spool is read in logical row-major order (from a
// file through a block cache of gather_cache_bytes,
// stream/ingest/output/row_major_gather.h) and goes through DenseWriter.
#ifndef HURRAY_STREAM_INGEST_SPOOLED_WRITER_H_
#define HURRAY_STREAM_INGEST_SPOOLED_WRITER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "dequant/plan.h"
#include "parser/descriptor.h"
#include "stream/ingest/dense_writer.h"
#include "stream/ingest/output/row_major_gather.h"

namespace hurray::stream::ingest {

class SpooledWriter : public DenseWriter {
 public:
  // `plan`: a quantized tensor's dequantization plan (MakePlan(d), built
  // once); nullopt for a plain tensor.
  SpooledWriter(const WriterContext& ctx, const TensorDescriptor& d,
                const std::string& base, const std::string& name,
                const OutputType& out_type, uint64_t count,
                std::optional<dequant::Plan> plan);
  ~SpooledWriter() override;

  // Opens the spool and the output.
  [[nodiscard]] absl::Status Begin();

  [[nodiscard]] absl::Status Piece(uint32_t buffer,
                                   absl::Span<const uint8_t> piece) override;
  [[nodiscard]] absl::Status End(WriterResult* result) override;
  bool uses_spool_memory() const override { return in_memory_; }

 private:
  [[nodiscard]] absl::Status Spool(absl::Span<const uint8_t> piece);
  [[nodiscard]] absl::Status GatherSpool(const TensorDescriptor& d,
                                         GatherEmit emit);
  [[nodiscard]] absl::Status ConvertSpool();
  [[nodiscard]] absl::Status DequantizeSpool();
  void DropSpool();
  absl::Span<const uint8_t> SpoolBytes() const {
    return absl::MakeConstSpan(ctx_.spool_memory->data(),
                               ctx_.spool_memory->size());
  }

  WriterContext ctx_;
  TensorDescriptor desc_;
  std::optional<dequant::Plan> plan_;
  std::vector<std::vector<uint8_t>> params_;
  bool in_memory_ = true;
  std::string spool_name_;
  int spool_fd_ = -1;
  uint64_t spool_size_ = 0;
};

}  // namespace hurray::stream::ingest

#endif  // HURRAY_STREAM_INGEST_SPOOLED_WRITER_H_
