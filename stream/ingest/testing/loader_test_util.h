// Test and benchmark helpers for the loader and the ingest sinks: sets of
// quantized and plain tensors, the .hrry and bare-stream bytes holding them,
// and their reference float32 output (dequant::DequantizeAll, scalar
// semantics), little-endian as DequantSink writes it.
#ifndef HURRAY_STREAM_INGEST_TESTING_LOADER_TEST_UTIL_H_
#define HURRAY_STREAM_INGEST_TESTING_LOADER_TEST_UTIL_H_

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "dequant/testing/test_tensor.h"
#include "stream/container/hrry_writer.h"
#include "stream/container/testing/temp_dir.h"

namespace hurray::stream::ingest::testing {

struct IngestTensor {
  std::string name;
  dequant::testing::TestTensor tensor;
  // The float32 output expected from DequantSink (format f32; empty: no
  // output).
  std::vector<uint8_t> expected;
};

// A mix: per-tensor int8, per-channel asymmetric int8, per-block int4 (a
// partial block), NF4, a float32 and a float16 plain tensor, and an int32
// plain tensor (converted to float32 by DequantSink's f32 format). `scale`
// multiplies the sizes.
std::vector<IngestTensor> MixedTensors(uint32_t seed, uint64_t scale = 1);

// Quantized tensors stored column-major, strided, tiled and in Morton order
// (random layouts; per-channel int4 and MXFP float8_e4m3).
std::vector<IngestTensor> LayoutTensors(uint32_t seed);

// `count` per-channel int8 / per-block int4 tensors of about `bytes` data
// bytes each (the benchmark's file).
std::vector<IngestTensor> QuantizedTensors(uint32_t seed, size_t count,
                                           uint64_t bytes);

// Two plain int16 [3, 4] sparse tensors (layouts/coo.md, csr.md): "coo"
// (3 values) and "csr" (2 values), valid strict input; --sparse keep writes
// them as their arrays (issue 16). No `expected`.
std::vector<IngestTensor> SparseTensors();

std::vector<uint8_t> HrryBytes(const std::vector<IngestTensor>& tensors);
std::vector<uint8_t> StreamBytes(const std::vector<IngestTensor>& tensors);

// Writes `tensors` as .hrry to `path` one tensor at a time (for files
// larger than memory should hold).
[[nodiscard]] absl::Status WriteHrryFile(
    const std::string& path, const std::vector<IngestTensor>& tensors);

// The bytes of a file; empty when it cannot be read.
std::vector<uint8_t> ReadAll(const std::string& path);
void WriteAll(const std::string& path, absl::Span<const uint8_t> bytes);

// A fresh empty directory under TEST_TMPDIR (or /tmp).
using container::testing::FreshDir;

// Regular files of `dir`, sorted by name.
std::vector<std::string> ListDir(const std::string& dir);

}  // namespace hurray::stream::ingest::testing

#endif  // HURRAY_STREAM_INGEST_TESTING_LOADER_TEST_UTIL_H_
