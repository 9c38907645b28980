// Large buffers on transparent huge pages, where the kernel offers them.
//
// A fresh 4 KiB page costs a fault when it is first touched. On the 2-vCPU
// VM of bench/RESULTS.md ("huge pages for the ring and the spool") that fault
// is 11.7 µs, so the 16 MiB spool of one tensor cost 48 ms before a byte was
// copied into it: a fifth of a 512 MiB ingest. One 2 MiB huge page is one
// fault for 512 pages (0.24 µs a page there), and fewer TLB misses after.
//
// AllocateLarge maps requests of at least kLargeBufferMinBytes on their own,
// 2 MiB aligned, rounded up to whole huge pages, and advises MADV_HUGEPAGE;
// smaller requests, and every request where THP is "never", go to operator
// new as before (glibc's heap then reuses pages between allocations, which a
// private mapping would not). The memory is not zeroed by us: a mapping
// reads as zeros, a heap block as whatever it held.
//
// For buffers that live across many fills (the loader's ring, the sink's
// spool): a block allocated and freed per tensor would map and zero fresh
// huge pages each time, where the heap reuses its blocks.
#ifndef HURRAY_DEQUANT_LARGE_BUFFER_H_
#define HURRAY_DEQUANT_LARGE_BUFFER_H_

#include <cstddef>
#include <cstdint>
#include <new>
#include <utility>

namespace hurray::dequant {

// The x86-64 (and 4 KiB-page arm64) PMD huge page. Where the kernel's
// transparent_hugepage/hpage_pmd_size says otherwise, nothing is mapped.
inline constexpr size_t kHugePageBytes = size_t{2} << 20;
// Below this a huge page would hold mostly nothing.
inline constexpr size_t kLargeBufferMinBytes = kHugePageBytes;

// Whether large requests are mapped: /sys/kernel/mm/transparent_hugepage/
// enabled allows madvised huge pages ("always" or "madvise") of
// kHugePageBytes (read once per process, so a block is always freed the way
// it was allocated), and this is not an AddressSanitizer build (where every
// request goes to operator new, whose redzones then guard it).
bool HugePagesEnabled();

// `bytes` of memory aligned to at least alignof(std::max_align_t); throws
// std::bad_alloc when none is left, as operator new does. Release it with
// FreeLarge and the same `bytes`. A mapped block occupies `bytes` rounded up
// to whole huge pages: touching its last byte may fault in all of that.
void* AllocateLarge(size_t bytes);
void FreeLarge(void* p, size_t bytes) noexcept;

// Mappings AllocateLarge made in this process so far (a statistic: tests
// check that a ring or a spool is mapped once, not per run or per tensor).
uint64_t LargeMappingsMade();

// An owned, uninitialized byte buffer from AllocateLarge (the loader's ring:
// the reader writes every byte before it is read). Move-only.
class LargeBytes {
 public:
  LargeBytes() = default;
  explicit LargeBytes(size_t size)
      : data_(static_cast<uint8_t*>(AllocateLarge(size))), size_(size) {}
  LargeBytes(LargeBytes&& o) noexcept : data_(o.data_), size_(o.size_) {
    o.data_ = nullptr;
    o.size_ = 0;
  }
  LargeBytes& operator=(LargeBytes&& o) noexcept {
    if (this != &o) {
      Reset();
      data_ = o.data_;
      size_ = o.size_;
      o.data_ = nullptr;
      o.size_ = 0;
    }
    return *this;
  }
  LargeBytes(const LargeBytes&) = delete;
  LargeBytes& operator=(const LargeBytes&) = delete;
  ~LargeBytes() { Reset(); }

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void Reset() noexcept {
    if (data_ != nullptr) FreeLarge(data_, size_);
    data_ = nullptr;
    size_ = 0;
  }
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// Bytes appended to a LargeBytes block (the ingest's in-memory spool):
// Clear() keeps the block for the next fill, Release() frees it. Not a
// std::vector with an allocator of ours: libstdc++ copies into such a
// vector element by element (allocator_traits::construct), not by memmove,
// which made a 512 MiB ingest 1.8 x slower (bench/RESULTS.md).
class LargeByteBuffer {
 public:
  LargeByteBuffer() = default;
  LargeByteBuffer(LargeByteBuffer&& o) noexcept
      : block_(std::move(o.block_)), size_(std::exchange(o.size_, 0)) {}
  LargeByteBuffer& operator=(LargeByteBuffer&& o) noexcept {
    if (this != &o) {
      block_ = std::move(o.block_);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }

  // Makes room for `capacity` bytes in all, keeping those held.
  void Reserve(size_t capacity);
  // `bytes` may point into this buffer itself.
  void Append(const uint8_t* bytes, size_t n);
  void Clear() { size_ = 0; }
  void Release() {
    block_ = LargeBytes();
    size_ = 0;
  }

  const uint8_t* data() const { return block_.data(); }
  size_t size() const { return size_; }
  size_t capacity() const { return block_.size(); }

 private:
  // A block of `capacity` bytes holding this one's bytes, then `n` more.
  LargeBytes Grown(size_t capacity, const uint8_t* bytes, size_t n) const;

  LargeBytes block_;
  size_t size_ = 0;
};

}  // namespace hurray::dequant

#endif  // HURRAY_DEQUANT_LARGE_BUFFER_H_
