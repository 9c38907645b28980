// Sharded safetensors (issue 48): `model.safetensors.index.json` (its
// `weight_map` names the shard file of every tensor, its `metadata` carries
// `total_size`) and the shards beside it, presented to Convert() as one
// safetensors file: a header written here from the shards' headers, then
// the shards' tensor data back to back, read from the shard files as it is
// asked for (one shard open at a time). Convert() then streams it as it
// streams one file, in bounded memory whatever the number and size of the
// shards.
//
// Shards are read in the order of their file names, and within a shard its
// tensors in data-offset order. Refused, naming the tensor or shard: an
// index above the limit, JSON that does not parse or nests deeper than the
// format, a `weight_map` that is missing, empty or not an object of
// strings, a shard name that is not a plain file name (empty, ".", "..",
// a '/' or a NUL: shards are files beside the index; a shard file may be a
// symlink, as the Hugging Face cache stores them), more shards than the
// limit, a shard that does not open or is not safetensors, a tensor in a
// shard the index does not name for it (or not in the index), a tensor in
// two shards, a tensor of the index missing from its shard. A `total_size`
// that differs from the sum of the tensors' sizes is reported, not refused
// (publishers' tools count differently).
//
// Metadata: the index's `metadata` (non-string values as their JSON text)
// and every shard's `__metadata__` go to the KV section: a key whose values
// agree wherever it appears once, a key whose values differ once per
// source as "<file name>:<key>".
#ifndef HURRAY_STREAM_CONVERT_SHARDS_H_
#define HURRAY_STREAM_CONVERT_SHARDS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "stream/convert/byte_source.h"
#include "stream/convert/safetensors.h"

namespace hurray::stream::convert {

inline constexpr char kShardIndexName[] = "model.safetensors.index.json";

struct ShardLimits {
  uint64_t max_index_bytes = uint64_t{16} << 20;
  uint64_t max_shards = 100000;
  // Each shard's header, and the combined header written here.
  SafetensorsLimits safetensors;
};

struct ShardedModel {
  std::unique_ptr<ByteSource> source;  // one safetensors file
  uint64_t shard_count = 0;
  std::vector<std::string> warnings;  // total_size disagreeing
};

// Opens shard `name` (a plain file name, checked).
using ShardOpener = std::function<absl::StatusOr<std::unique_ptr<ByteSource>>(
    const std::string& name)>;

[[nodiscard]] absl::StatusOr<ShardedModel> OpenShards(
    const ByteSource& index, const std::string& index_name, ShardOpener open,
    const ShardLimits& limits = {});

// `path` names an index (a file name ending in ".index.json") or a
// directory holding kShardIndexName.
bool IsShardIndexPath(const std::string& path);
// The index at `path` (as above), its shards from its directory.
[[nodiscard]] absl::StatusOr<ShardedModel> OpenShardedSafetensors(
    const std::string& path, const ShardLimits& limits = {});

}  // namespace hurray::stream::convert

#endif  // HURRAY_STREAM_CONVERT_SHARDS_H_
