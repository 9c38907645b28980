// The header of a NumPy .npy file (format version 1.0, or 2.0 when the
// header dictionary does not fit 65535 bytes), as numpy.lib.format writes
// it: magic "\x93NUMPY", version, header length (little-endian), then the
// dictionary literal {'descr': ..., 'fortran_order': False, 'shape': (...), }
// padded with spaces and a final '\n' so that the data starts at a multiple
// of 64 bytes, byte for byte as numpy 1.24 writes it (with its room for
// the first dimension to grow to 21 digits). numpy.load reads the result
// with no extra arguments.
#ifndef HURRAY_STREAM_INGEST_OUTPUT_NPY_H_
#define HURRAY_STREAM_INGEST_OUTPUT_NPY_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace hurray::stream::ingest {

// The shape as a Python tuple: "()", "(5,)", "(3, 4)".
std::string NpyShapeTuple(absl::Span<const uint64_t> shape);

// The whole header (its size a multiple of 64) for data of type `descr`
// ("<f4", "|u1", ...) in C order.
std::string NpyHeader(absl::string_view descr,
                      absl::Span<const uint64_t> shape);

}  // namespace hurray::stream::ingest

#endif  // HURRAY_STREAM_INGEST_OUTPUT_NPY_H_
