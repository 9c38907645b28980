// Random reads of a file in bounded memory. GatherRowMajor reads a spooled
// non-row-major tensor (column-major, strided, tiled, Morton, Hilbert) in
// logical row-major order, which jumps across the whole file: a mapping
// keeps every page it touches resident (with the kernel's fault-around
// neighbours), so the resident set grows with the tensor. This cache reads
// blocks with pread into a set-associative table of a fixed byte budget and
// evicts the least recently used block of a set: the memory is the budget,
// whatever the file's size.
#ifndef HURRAY_STREAM_INGEST_OUTPUT_FILE_BLOCK_CACHE_H_
#define HURRAY_STREAM_INGEST_OUTPUT_FILE_BLOCK_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace hurray::stream::ingest {

class FileBlockCache {
 public:
  // The longest read (an element of the widest type, 16 bytes, or the two
  // bytes a sub-byte code may straddle).
  static constexpr size_t kMaxRead = 16;

  struct Options {
    size_t budget_bytes = size_t{32} << 20;  // every block, padding included
    size_t block_bytes = 4096;               // a power of two, >= 64
  };

  // `fd` is borrowed (kept open by the caller); the bytes read are
  // [base, base + size) of it; `name` names the file in errors.
  [[nodiscard]] static absl::StatusOr<FileBlockCache> Create(
      int fd, uint64_t base, uint64_t size, Options options, std::string name);

  // A pointer to the `n` bytes at `at` (n <= kMaxRead, at + n <= size()),
  // valid until the next call; nullptr when the read failed (status()).
  const uint8_t* Read(uint64_t at, size_t n) {
    const uint64_t block = at >> block_shift_;
    if (n > kMaxRead || at > size_ || n > size_ - at) return Miss(at, n);
    if (block == last_block_) return last_data_ + (at & block_mask_);
    // A hit in the block's set, inline; a miss reads the block.
    const size_t first = SetOf(block) * kWays;
    for (size_t s = first; s < first + kWays; ++s) {
      if (tags_[s] == block + 1) {
        stamps_[s] = ++clock_;
        last_block_ = block;
        last_data_ = data_.data() + s * stride_;
        return last_data_ + (at & block_mask_);
      }
    }
    return Miss(at, n);
  }

  // The slots a cache of `budget_bytes` has for blocks of `block_bytes`
  // (a file large enough to fill them).
  static size_t SlotsFor(size_t budget_bytes, size_t block_bytes);

  uint64_t size() const { return size_; }
  const absl::Status& status() const { return status_; }
  // The preads issued so far (one per block brought in).
  uint64_t block_reads() const { return block_reads_; }
  size_t slots() const { return tags_.size(); }

 private:
  static constexpr size_t kWays = 8;

  FileBlockCache() = default;
  // Fibonacci hashing spreads the power-of-two strides of column-major and
  // strided walks over the sets.
  size_t SetOf(uint64_t block) const {
    return set_bits_ == 0
               ? 0
               : static_cast<size_t>((block * 0x9E3779B97F4A7C15ull) >>
                                     (64 - set_bits_));
  }
  const uint8_t* Miss(uint64_t at, size_t n);
  bool Fill(size_t slot, uint64_t block);

  int fd_ = -1;
  uint64_t base_ = 0;
  uint64_t size_ = 0;
  std::string name_;
  uint32_t block_shift_ = 12;
  uint64_t block_mask_ = 4095;
  size_t stride_ = 0;  // bytes per slot: a block and kMaxRead of padding
  uint32_t set_bits_ = 0;
  std::vector<uint8_t> data_;
  std::vector<uint64_t> tags_;    // block number + 1; 0: empty
  std::vector<uint64_t> stamps_;  // last use, for the eviction
  uint64_t clock_ = 0;
  uint64_t last_block_ = ~uint64_t{0};
  const uint8_t* last_data_ = nullptr;
  uint64_t block_reads_ = 0;
  absl::Status status_;
};

}  // namespace hurray::stream::ingest

#endif  // HURRAY_STREAM_INGEST_OUTPUT_FILE_BLOCK_CACHE_H_
