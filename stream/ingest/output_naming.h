// The names DequantSink gives its outputs (stream/ingest/sinks.h, "file
// names"; a tensor name as a safe file name is
// stream/container/safe_file_name.h): the file suffix of a kept sparse
// tensor's index arrays, the arrays of each sparse layout, and the shape
// text of the summary table.
#ifndef HURRAY_STREAM_INGEST_OUTPUT_NAMING_H_
#define HURRAY_STREAM_INGEST_OUTPUT_NAMING_H_

#include <cstdint>
#include <string>
#include <vector>

#include "parser/descriptor.h"
#include "stream/ingest/output/element_convert.h"

namespace hurray::stream::ingest {

// The file suffix of an index array: ".npy", or ".u64" (raw little-endian
// uint64) for --format f32.
std::string IndexFileSuffix(OutputFormat f);

// The index arrays of a sparse layout, each a uint64 buffer (coo.md,
// csr.md, csc.md, csf.md § Buffer Table): COO indices [nnz, rank]; CSR and
// CSC indices and indptr (scipy's names); CSF pos_L and crd_L per level.
struct KeptArray {
  std::string suffix;
  uint32_t buffer;
  uint64_t columns;
};
std::vector<KeptArray> KeptArrays(const TensorDescriptor& d);

// "[3, 4]".
std::string ShapeText(const TensorDescriptor& d);

}  // namespace hurray::stream::ingest

#endif  // HURRAY_STREAM_INGEST_OUTPUT_NAMING_H_
