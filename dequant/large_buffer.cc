#include "dequant/large_buffer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include "absl/base/config.h"

namespace hurray::dequant {
namespace {

#ifdef ABSL_HAVE_ADDRESS_SANITIZER
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif

// The first line of a small sysfs file, or "" if it cannot be read.
std::string ReadSysfs(const char* path) {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  char text[128] = {};
  const ssize_t n = ::read(fd, text, sizeof(text) - 1);
  ::close(fd);
  return n > 0 ? std::string(text, static_cast<size_t>(n)) : "";
}

bool ReadHugePagesEnabled() {
  if (kAddressSanitizer) return false;
  // The selected mode is bracketed: "always [madvise] never".
  const std::string mode =
      ReadSysfs("/sys/kernel/mm/transparent_hugepage/enabled");
  if (mode.find("[always]") == std::string::npos &&
      mode.find("[madvise]") == std::string::npos) {
    return false;
  }
  const std::string pmd =
      ReadSysfs("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size");
  return std::strtoull(pmd.c_str(), nullptr, 10) == kHugePageBytes;
}

std::atomic<uint64_t> mappings_made{0};

bool UsesMapping(size_t bytes) {
  return bytes >= kLargeBufferMinBytes && HugePagesEnabled();
}

size_t MappedBytes(size_t bytes) {
  return (bytes + kHugePageBytes - 1) & ~(kHugePageBytes - 1);
}

}  // namespace

bool HugePagesEnabled() {
  static const bool enabled = ReadHugePagesEnabled();
  return enabled;
}

void* AllocateLarge(size_t bytes) {
  if (!UsesMapping(bytes)) return ::operator new(bytes);
  if (bytes > SIZE_MAX - 2 * kHugePageBytes) throw std::bad_alloc();
  const size_t size = MappedBytes(bytes);
  // Map a huge page more than needed and unmap the ends, so the block
  // starts on a 2 MiB boundary: the kernel backs only aligned 2 MiB ranges
  // with huge pages.
  const size_t span = size + kHugePageBytes;
  void* raw = ::mmap(nullptr, span, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned =
      (start + kHugePageBytes - 1) & ~uintptr_t{kHugePageBytes - 1};
  if (aligned > start) ::munmap(raw, aligned - start);
  const uintptr_t end = start + span;
  if (end > aligned + size) {
    ::munmap(reinterpret_cast<void*>(aligned + size), end - aligned - size);
  }
  void* p = reinterpret_cast<void*>(aligned);
  mappings_made.fetch_add(1, std::memory_order_relaxed);
  // Advice only: without it (or where it fails) the pages are 4 KiB ones.
  (void)::madvise(p, size, MADV_HUGEPAGE);
  return p;
}

uint64_t LargeMappingsMade() {
  return mappings_made.load(std::memory_order_relaxed);
}

LargeBytes LargeByteBuffer::Grown(size_t capacity, const uint8_t* bytes,
                                  size_t n) const {
  LargeBytes grown(capacity);
  if (size_ > 0) std::memcpy(grown.data(), block_.data(), size_);
  if (n > 0) std::memcpy(grown.data() + size_, bytes, n);
  return grown;
}

void LargeByteBuffer::Reserve(size_t capacity) {
  if (capacity <= block_.size()) return;
  // Nothing to keep (the spool after Clear): free first, so the old and the
  // new block are never both held.
  if (size_ == 0) block_ = LargeBytes();
  block_ = Grown(capacity, nullptr, 0);
}

void LargeByteBuffer::Append(const uint8_t* bytes, size_t n) {
  if (n == 0) return;
  if (n > SIZE_MAX - size_) throw std::bad_alloc();
  if (size_ + n > block_.size()) {
    const size_t doubled =
        block_.size() > SIZE_MAX / 2 ? SIZE_MAX : 2 * block_.size();
    // The new bytes are copied before the old block goes: `bytes` may lie
    // in it.
    block_ = Grown(std::max(size_ + n, doubled), bytes, n);
  } else {
    std::memmove(block_.data() + size_, bytes, n);
  }
  size_ += n;
}

void FreeLarge(void* p, size_t bytes) noexcept {
  if (p == nullptr) return;
  if (!UsesMapping(bytes)) {
    // Unsized: clang 14 declares the sized form only with
    // -fsized-deallocation, which the fuzz build does not pass.
    ::operator delete(p);
    return;
  }
  ::munmap(p, MappedBytes(bytes));
}

}  // namespace hurray::dequant
