// TensorRecord: what an ingest run keeps of each tensor, one row of its
// summary (the sinks of stream/ingest/sinks.h fill them, IngestReport and
// `hurray ingest`'s table show them) and what a resume state keeps of each
// completed tensor (stream/resume/ingest_state.h), so that a resumed run
// takes its outputs over.
#ifndef HURRAY_STREAM_RESUME_TENSOR_RECORD_H_
#define HURRAY_STREAM_RESUME_TENSOR_RECORD_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"

namespace hurray::stream::resume {

// One row of the ingest summary.
struct TensorRecord {
  uint64_t index = 0;     // in input order, from 0
  std::string name;       // key or index name; empty when none is known
  std::string shape;      // "[3, 4]"
  std::string type;       // element type name
  std::string scheme;     // quantization scheme name, "none" when plain
  uint64_t bytes = 0;     // sum of the buffers' byte_size
  bool complete = false;  // every byte arrived and passed
  std::string verdict;    // "valid", "dequantized", "skipped: ...", ...
  std::string output;     // file written (DequantSink), relative to OUT_DIR
  // DequantSink, .hrry: the finished output's temp in OUT_DIR while it
  // waits for the index to name it (SafeOutputDir::IsTempName).
  std::string pending_output;
  // The descriptor's dimensions and type tag (not kept in a resume state).
  absl::InlinedVector<uint64_t, 4> dims;
  uint8_t type_tag = 0;
  // A sparse tensor kept as its arrays (DequantSinkOptions::sparse):
  // `output` (or `pending_output`) is "<name>.values<suffix>", `part`
  // ".values", and each index array is one MoreOutput, published with the
  // main output or pending with it. The resume state records each
  // (ingest_state.h).
  struct MoreOutput {
    std::string part;     // ".indices", ".indptr", ".pos_<L>", ".crd_<L>"
    std::string output;   // published: "<name><part>.npy" (.u64 for f32)
    std::string pending;  // or its temp while the index has not named it
    uint32_t crc32c = 0;  // of the file's bytes, checked on resume
  };
  std::string part;
  std::vector<MoreOutput> more;
  // CRC-32C of the bytes of `output` (or `pending_output`), checked when a
  // resumed run takes the record over.
  uint32_t output_crc32c = 0;
  // With set_record_data_crc: CRC-32C of the tensor's buffer bytes in the
  // order they arrived (a resumed network ingest compares it with the
  // server's tensor again, stream/ingest/resume_check_sink.h).
  uint32_t data_crc32c = 0;
};

}  // namespace hurray::stream::resume

#endif  // HURRAY_STREAM_RESUME_TENSOR_RECORD_H_
