// Heap-allocation counters for the tests that prove a path allocates nothing,
// or nothing in proportion to its input (the guide's zero-allocation hot
// path; LIMIT-* rules refusing declared sizes instead of attempting them).
//
// Linking //tests:alloc_counter replaces the global operator new and delete,
// in all their forms, in the test binary; only one such library may be
// linked into a binary, so each user is a cc_test of its own.
#ifndef HURRAY_TESTS_ALLOC_COUNTER_H_
#define HURRAY_TESTS_ALLOC_COUNTER_H_

#include <cstddef>
#include <cstdint>

namespace hurray::testing {

// Counts the operator new calls of the calling thread from construction to
// Stop() (or destruction). Counters do not nest.
class AllocationCount {
 public:
  AllocationCount();
  ~AllocationCount();
  AllocationCount(const AllocationCount&) = delete;
  AllocationCount& operator=(const AllocationCount&) = delete;

  // Ends the count; value() keeps the total.
  void Stop();
  uint64_t value() const;

 private:
  bool running_ = true;
  uint64_t value_ = 0;
};

// Counts the allocations of at least `threshold` bytes made by any thread
// from construction to Stop() (or destruction). Counters do not nest.
class LargeAllocationCount {
 public:
  explicit LargeAllocationCount(size_t threshold);
  ~LargeAllocationCount();
  LargeAllocationCount(const LargeAllocationCount&) = delete;
  LargeAllocationCount& operator=(const LargeAllocationCount&) = delete;

  void Stop();
  uint64_t value() const;

 private:
  bool running_ = true;
  uint64_t value_ = 0;
};

// Counts one allocation for a running AllocationCount of this thread: for
// tests that also interpose malloc (tests/alloc_test.cc).
void NoteAllocation(size_t bytes);

}  // namespace hurray::testing

#endif  // HURRAY_TESTS_ALLOC_COUNTER_H_
