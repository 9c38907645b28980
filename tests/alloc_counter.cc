#include "tests/alloc_counter.h"

#include <atomic>
#include <cstdlib>
#include <new>

namespace hurray::testing {
namespace {

thread_local bool t_counting = false;
thread_local uint64_t t_allocations = 0;

std::atomic<size_t> g_large_threshold{~size_t{0}};
std::atomic<uint64_t> g_large_allocations{0};

}  // namespace

void NoteAllocation(size_t bytes) {
  if (t_counting) ++t_allocations;
  if (bytes >= g_large_threshold.load(std::memory_order_relaxed)) {
    g_large_allocations.fetch_add(1, std::memory_order_relaxed);
  }
}

AllocationCount::AllocationCount() {
  t_allocations = 0;
  t_counting = true;
}

AllocationCount::~AllocationCount() { Stop(); }

void AllocationCount::Stop() {
  if (!running_) return;
  t_counting = false;
  value_ = t_allocations;
  running_ = false;
}

uint64_t AllocationCount::value() const {
  return running_ ? t_allocations : value_;
}

LargeAllocationCount::LargeAllocationCount(size_t threshold) {
  g_large_allocations = 0;
  g_large_threshold = threshold;
}

LargeAllocationCount::~LargeAllocationCount() { Stop(); }

void LargeAllocationCount::Stop() {
  if (!running_) return;
  g_large_threshold = ~size_t{0};
  value_ = g_large_allocations.load();
  running_ = false;
}

uint64_t LargeAllocationCount::value() const {
  return running_ ? g_large_allocations.load() : value_;
}

}  // namespace hurray::testing

namespace {

void* Allocate(std::size_t n) {
  hurray::testing::NoteAllocation(n);
  return std::malloc(n != 0 ? n : 1);
}

void* AllocateAligned(std::size_t n, std::align_val_t a) {
  hurray::testing::NoteAllocation(n);
  const std::size_t align = static_cast<std::size_t>(a);
  if (n > ~std::size_t{0} - align) return nullptr;  // rounding would wrap
  // aligned_alloc wants a multiple of the alignment.
  const std::size_t size = (n + align - 1) / align * align;
  return std::aligned_alloc(align, size != 0 ? size : align);
}

}  // namespace

void* operator new(std::size_t n) {
  if (void* p = Allocate(n)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return operator new(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  return Allocate(n);
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  return Allocate(n);
}
void* operator new(std::size_t n, std::align_val_t a) {
  if (void* p = AllocateAligned(n, a)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n, std::align_val_t a) {
  return operator new(n, a);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
