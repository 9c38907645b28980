// Fuzz target: `hurray convert` on a safetensors file (stream/convert/).
//
// The input is the whole file. Properties (any violation aborts):
//   * ReadSafetensorsHeader and Convert never crash, never read past the
//     input (MemorySource checks every range), and refuse with a status.
//   * A conversion that succeeds writes a .hrry file both strict readers
//     take (the forward one `hurray ingest` runs, with the reader limits
//     the conversion was given: the defaults, or small metadata and buffer
//     limits picked by the input's length), holding every tensor of the
//     header; so does one with --quantize (a scheme picked by the input's
//     length).
//   * An input starting with '{' is a sharded model (shards.h): the index
//     JSON, then shard files, each after a 0xFF byte (never in JSON text);
//     shard name n opens file (sum of n's bytes) mod the file count.
//     OpenShards never crashes and refuses with a status; the combined file
//     it gives converts like one safetensors file (the properties above).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "fuzz/convert_fuzz_util.h"
#include "stream/convert/safetensors.h"
#include "stream/convert/shards.h"

namespace {

int Shards(const uint8_t* data, size_t size) {
  using namespace hurray;
  std::vector<absl::Span<const uint8_t>> parts;
  size_t begin = 0;
  for (size_t i = 0; i <= size; ++i) {
    if (i == size || data[i] == 0xFF) {
      parts.push_back(absl::MakeConstSpan(data + begin, i - begin));
      begin = i + 1;
    }
  }
  stream::convert::MemorySource index(parts[0]);
  stream::convert::ShardOpener open = [&parts](const std::string& name)
      -> absl::StatusOr<std::unique_ptr<stream::convert::ByteSource>> {
    if (parts.size() < 2) return absl::NotFoundError("no shard files");
    size_t h = 0;
    for (unsigned char c : name) h += c;
    return std::unique_ptr<stream::convert::ByteSource>(
        new stream::convert::MemorySource(parts[1 + h % (parts.size() - 1)]));
  };
  stream::convert::ShardLimits limits;
  limits.max_index_bytes = 1 << 16;
  limits.max_shards = 16;
  limits.safetensors.max_header_bytes = 1 << 16;
  absl::StatusOr<stream::convert::ShardedModel> model =
      stream::convert::OpenShards(index, "index.json", open, limits);
  if (!model.ok()) return 0;
  absl::StatusOr<stream::convert::SafetensorsFile> header =
      stream::convert::ReadSafetensorsHeader(*model->source,
                                             limits.safetensors);
  // What OpenShards gives, the safetensors reader takes.
  if (!header.ok()) std::abort();
  if (header->tensors.size() > 64) return 0;
  stream::convert::ConvertOptions options;
  options.safetensors = limits.safetensors;
  options.chunk_bytes = 4096;
  fuzz::PickReaderLimits(size, &options);
  std::unique_ptr<stream::container::HrryFile> file =
      fuzz::ConvertAndOpen(*model->source, options);
  if (file != nullptr) {
    for (const stream::convert::SafetensorsTensor& t : header->tensors) {
      if (file->Find(t.name) == nullptr) std::abort();
    }
  }
  return 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hurray;
  if (size > 0 && data[0] == '{') return Shards(data, size);
  stream::convert::MemorySource src(absl::MakeConstSpan(data, size));
  stream::convert::SafetensorsLimits limits;
  limits.max_header_bytes = 1 << 16;
  absl::StatusOr<stream::convert::SafetensorsFile> header =
      stream::convert::ReadSafetensorsHeader(src, limits);
  // Each tensor costs a 4 KiB-aligned buffer in the output: keep it small.
  if (!header.ok() || header->tensors.size() > 64) return 0;
  stream::convert::ConvertOptions options;
  options.safetensors = limits;
  options.chunk_bytes = 4096;
  fuzz::PickReaderLimits(size, &options);
  std::unique_ptr<stream::container::HrryFile> file =
      fuzz::ConvertAndOpen(src, options);
  if (file != nullptr) {
    for (const stream::convert::SafetensorsTensor& t : header->tensors) {
      if (file->Find(t.name) == nullptr) std::abort();
    }
  }
  fuzz::AddQuantizeOptions(size, &options);
  fuzz::ConvertAndOpen(src, options);
  return 0;
}
