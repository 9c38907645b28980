// What DequantSink writes and how much memory it may use
// (stream/ingest/sinks.h); every TensorWriter reads them.
#ifndef HURRAY_STREAM_INGEST_DEQUANT_SINK_OPTIONS_H_
#define HURRAY_STREAM_INGEST_DEQUANT_SINK_OPTIONS_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "parser/options.h"
#include "stream/ingest/output/element_convert.h"

namespace hurray::stream::ingest {

class ValuesBuffer;  // stream/ingest/values_buffer.h

// --sparse dense|keep.
enum class SparseOutput : uint8_t { kDense, kKeep };

struct DequantSinkOptions {
  std::string out_dir;
  Mode mode = Mode::kStrict;
  // A spooled data buffer stays in memory up to this size.
  uint64_t spool_memory_bytes = uint64_t{24} << 20;
  // A spooled data buffer of another dense layout than row-major, too large
  // for memory, is read back through a block cache of this size (never at
  // the same time as an in-memory spool: the two share the budget above).
  size_t gather_cache_bytes = size_t{24} << 20;
  // The parameter buffers of one tensor, kept in memory (the dequantizer
  // holds them again as float32: up to 4x for e8m0 scales).
  uint64_t max_parameter_bytes = uint64_t{4} << 20;
  // Sparse tensors (COO, CSR, CSC, CSF) are written dense up to this many
  // output bytes; larger ones are kept as their arrays (below).
  uint64_t max_dense_bytes = uint64_t{1} << 30;
  // kKeep: every sparse tensor is written as its arrays, "<name>.values"
  // and its index arrays ("<name>.indices", ".indptr", ".pos_L", ".crd_L").
  SparseOutput sparse = SparseOutput::kDense;
  // What the outputs are (stream/ingest/output/element_convert.h). The
  // library's default stays the raw .f32 files; the CLI's is npy.
  OutputFormat format = OutputFormat::kF32;
  OutputDtype dtype = OutputDtype::kAuto;
  // False: dequantize (checking the data-level rules) but write no file.
  bool write_files = true;
  // Not owned; may be null. The float32 values of each tensor are written
  // into it instead of a file when they fit (ValuesBuffer::max_bytes), for
  // the observer of Ingest() (TensorData::kDequantized without an output
  // directory: format kF32, dtype kFloat32, no safetensors), except while
  // the names come at the end (a .hrry read forward), when each output
  // waits for its name in a file of out_dir. Outputs that do not fit go to
  // files of out_dir; with an empty out_dir there is no directory (not the
  // current one), and they fail.
  ValuesBuffer* values = nullptr;
  // .hrry: publish the outputs under the index names (else tensor_<i>.f32).
  bool rename_to_names = true;
  // .hrry: finished outputs waiting for the index survive an interruption
  // (the sink going away without OnInputRejected) for a resumed run.
  bool keep_unnamed_outputs = false;
};

}  // namespace hurray::stream::ingest

#endif  // HURRAY_STREAM_INGEST_DEQUANT_SINK_OPTIONS_H_
