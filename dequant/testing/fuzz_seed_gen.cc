// Writes the seed corpus of //fuzz:dequant_fuzz: one small tensor per scheme
// and a few storage types, in the target's input format (4-byte header, the
// encoded descriptor, its buffers back to back).
//
//   bazel run //dequant/testing:fuzz_seed_gen -- "$PWD/corpus/dequant_fuzz"
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "dequant/testing/test_tensor.h"
#include "parser/element_type.h"
#include "parser/encoder.h"

namespace hurray::dequant {
namespace {

using namespace type_tag;  // NOLINT
using testing::TensorSpec;

TensorSpec Spec(Scheme scheme, uint8_t type, std::vector<uint64_t> shape,
                uint32_t axis, uint32_t block_size) {
  TensorSpec s;
  s.scheme = scheme;
  s.storage_type = type;
  s.shape = std::move(shape);
  s.axis = axis;
  s.block_size = block_size;
  return s;
}

int Main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  std::vector<TensorSpec> specs = {
      Spec(Scheme::kPerTensorAffine, kInt8, {5, 7}, 0, 0),
      Spec(Scheme::kPerTensorAffine, kUInt2, {9}, 0, 0),
      Spec(Scheme::kPerChannelAffine, kInt4, {3, 5}, 1, 0),
      Spec(Scheme::kPerChannelAffine, kUInt32, {4, 2}, 0, 0),
      Spec(Scheme::kPerBlockAffine, kUInt4, {3, 10}, 1, 4),
      Spec(Scheme::kPerBlockAffine, kInt8, {5, 3}, 0, 2),
      Spec(Scheme::kNf4, kUInt4, {2, 20}, 1, 8),
      Spec(Scheme::kMxfp, kFloat8E4M3, {2, 32}, 1, 16),
      Spec(Scheme::kMxfp, kFloat6E2M3, {16, 2}, 0, 16),
      Spec(Scheme::kMxfp, kFloat4E2M1, {32}, 0, 32),
  };
  specs[4].scale_type = kFloat16;
  specs[4].zero_padding = false;
  specs[5].scale_type = kBFloat16;
  specs[5].symmetric = true;
  specs[2].shared_buffer = true;
  // Every other dense layout (dequant/storage_walk.h).
  std::mt19937_64 layout_rng(2);
  const std::pair<uint8_t, TensorSpec> layouts[] = {
      {layout_tag::kColumnMajor,
       Spec(Scheme::kPerBlockAffine, kInt4, {5, 7}, 1, 4)},
      {layout_tag::kStrided,
       Spec(Scheme::kPerChannelAffine, kInt8, {3, 4}, 0, 0)},
      {layout_tag::kStrided,
       Spec(Scheme::kPerTensorAffine, kUInt4, {3, 5}, 0, 0)},
      {layout_tag::kTiled, Spec(Scheme::kNf4, kUInt4, {3, 12}, 1, 8)},
      {layout_tag::kTiled, Spec(Scheme::kPerBlockAffine, kUInt2, {6, 5}, 0, 4)},
      {layout_tag::kMorton, Spec(Scheme::kMxfp, kFloat6E3M2, {3, 16}, 1, 16)},
      {layout_tag::kHilbert, Spec(Scheme::kMxfp, kFloat4E2M1, {16, 16}, 1, 16)},
      {layout_tag::kHilbert,
       Spec(Scheme::kPerBlockAffine, kInt8, {4, 4}, 0, 2)},
  };
  int which = 0;
  for (const auto& [tag, base] : layouts) {
    TensorSpec spec = base;
    // The second strided seed interleaves (whole-buffer path).
    spec.layout = testing::RandomLayout(tag, testing::StoredShape(spec),
                                        layout_rng, which == 2);
    spec.zero_padding = which % 2 == 0;
    specs.push_back(spec);
    ++which;
  }
  std::mt19937_64 rng(1);
  int n = 0;
  for (const TensorSpec& spec : specs) {
    const testing::TestTensor t = testing::MakeTensor(spec, rng);
    absl::StatusOr<std::vector<uint8_t>> wire = Encode(*t.descriptor);
    if (!wire.ok()) {
      std::fprintf(stderr, "%s\n", wire.status().ToString().c_str());
      return 1;
    }
    // Header: strict, best target, pieces of up to 5 bytes, seed n.
    std::vector<uint8_t> bytes = {0x00, 0x03, static_cast<uint8_t>(n), 0x00};
    bytes.insert(bytes.end(), wire->begin(), wire->end());
    for (const std::vector<uint8_t>& b : t.buffers) {
      bytes.insert(bytes.end(), b.begin(), b.end());
    }
    std::string name = spec.Name();
    for (char& c : name) {
      if (c == '/' || c == '[' || c == ']' || c == ',' || c == ' ' ||
          c == '(' || c == ')') {
        c = '_';
      }
    }
    const std::string path = std::string(argv[1]) + "/" + name;
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
    ++n;
  }
  std::printf("wrote %d seeds to %s\n", n, argv[1]);
  return 0;
}

}  // namespace
}  // namespace hurray::dequant

int main(int argc, char** argv) { return hurray::dequant::Main(argc, argv); }
