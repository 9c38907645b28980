// Deterministic single-byte mutations of valid vectors: a cheap way to reach
// most rejection paths of the decoder and validator from known-good input.
#ifndef HURRAY_TESTS_MUTATIONS_H_
#define HURRAY_TESTS_MUTATIONS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace hurray::vectors {

// For every byte position: the byte set to 0x00, to 0xFF and incremented
// (skipping mutations that leave the input unchanged), plus every prefix
// truncation at a multiple of `truncate_step`.
std::vector<std::vector<uint8_t>> SingleByteMutations(
    const std::vector<uint8_t>& valid, size_t truncate_step = 7);

}  // namespace hurray::vectors

#endif  // HURRAY_TESTS_MUTATIONS_H_
