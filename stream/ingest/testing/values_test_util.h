// Test helper: the float32 values DequantSink writes into a ValuesBuffer
// (stream/ingest/values_buffer.h) instead of a file, for comparison with the
// .f32 file the same options write (sparse_outputs_test.cc,
// block_paged_outputs_test.cc).
#ifndef HURRAY_STREAM_INGEST_TESTING_VALUES_TEST_UTIL_H_
#define HURRAY_STREAM_INGEST_TESTING_VALUES_TEST_UTIL_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "stream/ingest/dequant_sink_options.h"

namespace hurray::stream::ingest::testing {

// The values of the one tensor of `bytes` (a bare stream), read in chunks
// of `chunk_size` by a DequantSink with `o` and a values buffer: `dir` gets
// its spools only, and must hold no file afterwards (FailedPrecondition
// otherwise); NotFound when the tensor got no values in memory.
[[nodiscard]] absl::StatusOr<std::vector<float>> ValuesInMemory(
    absl::Span<const uint8_t> bytes, DequantSinkOptions o,
    const std::string& dir, size_t chunk_size);

}  // namespace hurray::stream::ingest::testing

#endif  // HURRAY_STREAM_INGEST_TESTING_VALUES_TEST_UTIL_H_
