// TensorWriter: what DequantSink (stream/ingest/sinks.h) does with the
// bytes of one tensor. One class per job, chosen once from the descriptor
// by MakeTensorWriter:
//
//   DenseWriter    row-major plain or quantized without parameter buffers:
//                  converted (dequantized) as the bytes arrive
//                  (stream/ingest/dense_writer.h).
//   SpooledWriter  any other dense tensor: the data buffer spooled (and the
//                  parameter buffers kept) until the tensor's end, then read
//                  in logical row-major order (stream/ingest/spooled_writer.h).
//   SparseWriter   COO, CSR, CSC, CSF: every buffer spooled, written dense
//                  or kept as its arrays (stream/ingest/sparse_writer.h).
//   PagedWriter    block-paged: every buffer spooled, the page pool
//                  converted and its pages copied out in block-table order
//                  (stream/ingest/paged_writer.h).
//
// SparseWriter and PagedWriter share SpoolingWriter
// (stream/ingest/spooling_writer.h). Each writer writes its output through
// OutputFile (stream/ingest/output_file.h): a temp of OUT_DIR, an entry of
// model.safetensors, or, for Ingest()'s observer, the values buffer in
// memory (WriterContext::values, stream/ingest/values_buffer.h).
//
// A writer owns what it creates: destroyed before End succeeded, it closes
// and removes its temps and abandons its model.safetensors entry.
#ifndef HURRAY_STREAM_INGEST_TENSOR_WRITER_H_
#define HURRAY_STREAM_INGEST_TENSOR_WRITER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "dequant/large_buffer.h"
#include "parser/descriptor.h"
#include "stream/container/safe_output_dir.h"
#include "stream/ingest/dequant_sink_options.h"
#include "stream/ingest/output/safetensors.h"

namespace hurray::stream::ingest {

class ValuesBuffer;  // stream/ingest/values_buffer.h
class WriteBehind;

// What every writer of one sink shares; DequantSink owns it all.
struct WriterContext {
  const DequantSinkOptions* options = nullptr;
  container::SafeOutputDir* dir = nullptr;   // null: it cannot be opened
  SafetensorsWriter* safetensors = nullptr;  // --format safetensors only
  // The in-memory spool's block, kept from one spooled tensor to the next
  // (SpooledWriter; DequantSink frees it before any other kind of tensor).
  dequant::LargeByteBuffer* spool_memory = nullptr;
  // The dequantizer's window of floats, kept from one tensor to the next
  // (DenseWriter).
  std::vector<float>* float_window = nullptr;
  // Not null: outputs that fit go to it, not to files (OutputFile;
  // DequantSinkOptions::values).
  ValuesBuffer* values = nullptr;
  // The thread that writes the temps' buffers (stream/ingest/write_behind.h);
  // null: they are written on the caller's thread.
  WriteBehind* write_behind = nullptr;
};

// One more output of a tensor (a kept sparse tensor's index array): the
// part of its name ("<name><suffix>.npy"), its temp, its CRC-32C.
struct KeptPart {
  std::string suffix;
  std::string temp;
  uint32_t crc = 0;
};

// What End hands back for the sink to publish.
struct WriterResult {
  // The finished output's temp in the directory; empty when there is none
  // (no files written, or found at the end to get no output).
  std::string temp;
  uint32_t crc = 0;            // CRC-32C of its bytes
  std::string verdict;         // empty: the record's verdict stays
  std::vector<KeptPart> more;  // a kept sparse tensor's index arrays
  // The model.safetensors entries made at the end, as name suffixes ("" for
  // the tensor's own name), in the order they were made.
  std::vector<std::string> late_entries;
};

class TensorWriter {
 public:
  virtual ~TensorWriter() = default;

  // The next piece of buffer `buffer`.
  [[nodiscard]] virtual absl::Status Piece(uint32_t buffer,
                                           absl::Span<const uint8_t> piece) = 0;
  // The tensor's bytes all arrived: finish the output.
  [[nodiscard]] virtual absl::Status End(WriterResult* result) = 0;

  // The name the output gets when it is published, and the file name
  // before its suffixes.
  const std::string& final_name() const { return final_name_; }
  const std::string& base() const { return base_; }
  // The output was kept as several arrays (a sparse tensor).
  virtual bool kept() const { return false; }
  // The tensor has an entry in model.safetensors since it began.
  virtual bool in_safetensors() const = 0;
  // Holds the sink's in-memory spool block (WriterContext::spool_memory).
  virtual bool uses_spool_memory() const { return false; }

 protected:
  TensorWriter(std::string final_name, std::string base)
      : final_name_(std::move(final_name)), base_(std::move(base)) {}
  std::string final_name_;
  std::string base_;
};

// The writer of tensor `d`: `base` its file name before suffixes, `name` its
// name in model.safetensors. Null, with *none saying why ("no output: ..."),
// for a tensor that gets no output; an error fails the sink.
[[nodiscard]] absl::StatusOr<std::unique_ptr<TensorWriter>> MakeTensorWriter(
    const WriterContext& ctx, const TensorDescriptor& d,
    const std::string& base, const std::string& name, std::string* none);

}  // namespace hurray::stream::ingest

#endif  // HURRAY_STREAM_INGEST_TENSOR_WRITER_H_
