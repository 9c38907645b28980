#include "stream/ingest/testing/values_test_util.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "stream/ingest/consumers.h"
#include "stream/ingest/loader.h"
#include "stream/ingest/sinks.h"
#include "stream/ingest/testing/loader_test_util.h"
#include "stream/ingest/values_buffer.h"

namespace hurray::stream::ingest::testing {

absl::StatusOr<std::vector<float>> ValuesInMemory(
    absl::Span<const uint8_t> bytes, DequantSinkOptions o,
    const std::string& dir, size_t chunk_size) {
  ValuesBuffer values(uint64_t{1} << 30);
  o.out_dir = dir;
  o.format = OutputFormat::kF32;
  o.dtype = OutputDtype::kFloat32;
  o.values = &values;
  DequantSink sink(o);
  container::FileOptions fo;
  fo.parse.mode = o.mode;
  std::unique_ptr<container::ByteConsumer> c = MakeConsumer(
      container::ContainerFormat::kUnknown, fo, &sink, nullptr, nullptr);
  LoaderOptions lo;
  lo.chunk_size = chunk_size;
  Loader loader(lo);
  const absl::Status s = loader.Run(LoadSource::Memory(bytes), c.get()).status;
  if (!s.ok()) return s;
  const std::vector<std::string> files = ListDir(dir);
  if (!files.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("files written: ", absl::StrJoin(files, ", ")));
  }
  if (values.tensor() != 0) {
    return absl::NotFoundError(
        absl::StrCat("no values in memory: ", sink.records()[0].verdict));
  }
  const absl::Span<const float> f = values.floats();
  return std::vector<float>(f.begin(), f.end());
}

}  // namespace hurray::stream::ingest::testing
