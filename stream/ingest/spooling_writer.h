// SpoolingWriter: what SparseWriter (stream/ingest/sparse_writer.h) and
// PagedWriter (stream/ingest/paged_writer.h) share: a tensor whose every
// buffer is spooled (BufferSpools, stream/ingest/buffer_spool.h) until its
// end, when the subclass's Finish writes the one output (OutputFile) and
// names the model.safetensors entries it made there (late_entries_), or
// finds that the tensor gets no output after all (NoOutputAtEnd).
#ifndef HURRAY_STREAM_INGEST_SPOOLING_WRITER_H_
#define HURRAY_STREAM_INGEST_SPOOLING_WRITER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "parser/descriptor.h"
#include "stream/ingest/buffer_spool.h"
#include "stream/ingest/output/element_convert.h"
#include "stream/ingest/output_file.h"
#include "stream/ingest/tensor_writer.h"

namespace hurray::stream::ingest {

class SpoolingWriter : public TensorWriter {
 public:
  [[nodiscard]] absl::Status Piece(uint32_t buffer,
                                   absl::Span<const uint8_t> piece) final {
    return spools_.Append(buffer, piece);
  }
  // Finish, then the entries it made in model.safetensors.
  [[nodiscard]] absl::Status End(WriterResult* result) final;
  bool in_safetensors() const final { return out_.in_safetensors(); }

 protected:
  SpoolingWriter(const WriterContext& ctx, const TensorDescriptor& d,
                 const std::string& base, const std::string& name,
                 const OutputType& out_type);

  // The tensor's bytes all arrived (in spools_): the output, complete and
  // closed into *result, or NoOutputAtEnd.
  [[nodiscard]] virtual absl::Status Finish(WriterResult* result) = 0;

  // Begin's checks: quantized_ set from the descriptor, and the parameter
  // buffers (from `first_parameter` on, kept in memory) within
  // max_parameter_bytes (ResourceExhausted).
  [[nodiscard]] absl::Status CheckParameters(uint32_t first_parameter);
  // One spool per buffer, within spool_memory_bytes in all.
  [[nodiscard]] absl::Status OpenSpools() {
    return spools_.Open(desc_, ctx_.options->spool_memory_bytes);
  }
  // Found at the end to get no output: *verdict says why; what was begun
  // is abandoned.
  void NoOutputAtEnd(std::string* verdict, absl::string_view why);

  WriterContext ctx_;
  TensorDescriptor desc_;
  std::string name_;  // in model.safetensors
  OutputType out_type_;
  OutputFile out_;
  BufferSpools spools_;
  std::optional<ElementConverter> conv_;
  bool quantized_ = false;
  bool no_output_ = false;  // found at the end to get none
  // The model.safetensors entries made at the end (WriterResult).
  std::vector<std::string> late_entries_;
};

}  // namespace hurray::stream::ingest

#endif  // HURRAY_STREAM_INGEST_SPOOLING_WRITER_H_
