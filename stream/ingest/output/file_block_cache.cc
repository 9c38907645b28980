#include "stream/ingest/output/file_block_cache.h"

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace hurray::stream::ingest {

size_t FileBlockCache::SlotsFor(size_t budget_bytes, size_t block_bytes) {
  return kWays * std::bit_floor(std::max<size_t>(
                     1, budget_bytes / (block_bytes + kMaxRead) / kWays));
}

absl::StatusOr<FileBlockCache> FileBlockCache::Create(int fd, uint64_t base,
                                                      uint64_t size,
                                                      Options options,
                                                      std::string name) {
  if (options.block_bytes < 64 || !std::has_single_bit(options.block_bytes)) {
    return absl::InvalidArgumentError(
        absl::StrCat("block cache: block size ", options.block_bytes,
                     " is not a power of two of at least 64 bytes"));
  }
  FileBlockCache c;
  c.fd_ = fd;
  c.base_ = base;
  c.size_ = size;
  c.name_ = std::move(name);
  c.block_shift_ = static_cast<uint32_t>(std::countr_zero(options.block_bytes));
  c.block_mask_ = options.block_bytes - 1;
  c.stride_ = options.block_bytes + kMaxRead;
  // Sets of kWays slots, a power of two of them, within the budget (one set
  // at least), and for a small file no more than twice what its blocks need
  // (the hash leaves some sets fuller than others).
  const uint64_t blocks = (size >> c.block_shift_) + 1;
  const uint64_t by_budget =
      SlotsFor(options.budget_bytes, options.block_bytes) / kWays;
  const uint64_t by_file = 2 * std::bit_ceil((blocks + kWays - 1) / kWays);
  const uint64_t sets = std::min(by_budget, by_file);
  c.set_bits_ = static_cast<uint32_t>(std::countr_zero(sets));
  const size_t slots = static_cast<size_t>(sets * kWays);
  c.data_.resize(slots * c.stride_);
  c.tags_.assign(slots, 0);
  c.stamps_.assign(slots, 0);
  return c;
}

bool FileBlockCache::Fill(size_t slot, uint64_t block) {
  uint8_t* dst = data_.data() + slot * stride_;
  const uint64_t start = block << block_shift_;
  const size_t want = static_cast<size_t>(
      std::min<uint64_t>(stride_, size_ - std::min(size_, start)));
  size_t got = 0;
  while (got < want) {
    const ssize_t r = ::pread(fd_, dst + got, want - got,
                              static_cast<off_t>(base_ + start + got));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      status_ = absl::DataLossError(absl::StrCat(
          "cannot read ", name_, " at byte ", start + got, ": ",
          r < 0 ? std::strerror(errno) : "the file is shorter than expected"));
      return false;
    }
    got += static_cast<size_t>(r);
  }
  ++block_reads_;
  return true;
}

const uint8_t* FileBlockCache::Miss(uint64_t at, size_t n) {
  if (!status_.ok()) return nullptr;
  if (n > kMaxRead || at > size_ || n > size_ - at) {
    status_ = absl::OutOfRangeError(
        absl::StrCat("block cache: a read of ", n, " bytes at byte ", at,
                     " of ", name_, " (", size_, " bytes)"));
    return nullptr;
  }
  const uint64_t block = at >> block_shift_;
  const size_t set = SetOf(block);
  const size_t first = set * kWays;
  // A hit, or the least recently used slot (an empty one has stamp 0).
  size_t victim = first;
  bool hit = false;
  for (size_t s = first; s < first + kWays; ++s) {
    if (tags_[s] == block + 1) {
      victim = s;
      hit = true;
      break;
    }
    if (stamps_[s] < stamps_[victim]) victim = s;
  }
  if (!hit) {
    tags_[victim] = 0;
    last_block_ = ~uint64_t{0};
    if (!Fill(victim, block)) return nullptr;
    tags_[victim] = block + 1;
  }
  stamps_[victim] = ++clock_;
  last_block_ = block;
  last_data_ = data_.data() + victim * stride_;
  return last_data_ + (at & block_mask_);
}

}  // namespace hurray::stream::ingest
