#include "dequant/large_buffer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <utility>

namespace hurray::dequant {
namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif

bool ReadHugePagesEnabled() {
  if (kAddressSanitizer) return false;
  const int fd = ::open("/sys/kernel/mm/transparent_hugepage/enabled",
                        O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char text[128] = {};
  const ssize_t n = ::read(fd, text, sizeof(text) - 1);
  ::close(fd);
  if (n <= 0) return false;
  // The selected mode is bracketed: "always [madvise] never".
  return std::strstr(text, "[always]") != nullptr ||
         std::strstr(text, "[madvise]") != nullptr;
}

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
  // Advice only: without it (or where it fails) the pages are 4 KiB ones.
  (void)::madvise(p, size, MADV_HUGEPAGE);
  return p;
}

void LargeByteBuffer::Reserve(size_t capacity) {
  if (capacity <= block_.size()) return;
  LargeBytes grown(capacity);
  if (size_ > 0) std::memcpy(grown.data(), block_.data(), size_);
  block_ = std::move(grown);
}

void LargeByteBuffer::Append(const uint8_t* bytes, size_t n) {
  if (n == 0) return;
  if (n > SIZE_MAX - size_) throw std::bad_alloc();
  if (size_ + n > block_.size()) {
    const size_t doubled =
        block_.size() > SIZE_MAX / 2 ? SIZE_MAX : 2 * block_.size();
    Reserve(std::max(size_ + n, doubled));
  }
  std::memcpy(block_.data() + size_, bytes, n);
  size_ += n;
}

void FreeLarge(void* p, size_t bytes) noexcept {
  if (p == nullptr) return;
  if (!UsesMapping(bytes)) {
    ::operator delete(p);
    return;
  }
  ::munmap(p, MappedBytes(bytes));
}

}  // namespace hurray::dequant
