// SparseWriter (stream/ingest/tensor_writer.h): COO, CSR, CSC and CSF
// tensors (stream/ingest/output/sparse_walk.h). Every buffer is spooled
// (SpoolingWriter); at the tensor's end the tensor is written dense, zeros
// where nothing is stored, up to max_dense_bytes of output: the values
// converted to the output type (quantized ones dequantized at their logical
// positions, stream/ingest/output/sparse_dequant.h) and each stored element
// copied to its row-major place in the zero-filled output, mapped shared.
// Above max_dense_bytes, or with SparseOutput::kKeep, it is kept as its
// arrays: the values in stored order as "<name>.values" and each index
// buffer as stored (uint64), every array complete before any is published.
#ifndef HURRAY_STREAM_INGEST_SPARSE_WRITER_H_
#define HURRAY_STREAM_INGEST_SPARSE_WRITER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "parser/descriptor.h"
#include "stream/ingest/buffer_spool.h"
#include "stream/ingest/spooling_writer.h"
#include "stream/ingest/tensor_writer.h"

namespace hurray::stream::ingest {

class SparseWriter final : public SpoolingWriter {
 public:
  SparseWriter(const WriterContext& ctx, const TensorDescriptor& d,
               const std::string& base, const std::string& name,
               const OutputType& out_type)
      : SpoolingWriter(ctx, d, base, name, out_type) {}

  // Opens the spools (and the dense output); *none when the tensor gets no
  // output.
  [[nodiscard]] absl::Status Begin(std::string* none);

  bool kept() const override { return keep_; }

 private:
  [[nodiscard]] absl::Status Finish(WriterResult* result) override;
  [[nodiscard]] absl::Status KeepArrays(WriterResult* result);
  [[nodiscard]] absl::Status WritePart(
      const std::string& suffix, absl::Span<const uint8_t> bytes,
      const std::vector<uint64_t>& shape,
      std::vector<std::unique_ptr<Mapping>>* maps, std::vector<KeptPart>* more);
  [[nodiscard]] absl::Status Densify(std::string* verdict, bool by_value);
  void StoreFloat(float f, uint8_t* to) const;

  bool keep_ = false;  // kept as its arrays
  uint64_t dense_bytes_ = 0;
};

}  // namespace hurray::stream::ingest

#endif  // HURRAY_STREAM_INGEST_SPARSE_WRITER_H_
