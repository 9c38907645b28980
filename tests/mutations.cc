#include "tests/mutations.h"

#include <cstddef>

namespace hurray::vectors {

std::vector<std::vector<uint8_t>> SingleByteMutations(
    const std::vector<uint8_t>& valid, size_t truncate_step) {
  std::vector<std::vector<uint8_t>> out;
  for (size_t i = 0; i < valid.size(); ++i) {
    for (int v : {0x00, 0xFF, (valid[i] + 1) & 0xFF}) {
      if (valid[i] == v) continue;
      out.push_back(valid);
      out.back()[i] = static_cast<uint8_t>(v);
    }
  }
  for (size_t n = 0; n < valid.size(); n += truncate_step) {
    out.emplace_back(valid.begin(), valid.begin() + n);
  }
  return out;
}

}  // namespace hurray::vectors
