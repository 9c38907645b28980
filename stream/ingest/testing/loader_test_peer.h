// The loader's test hooks (testonly): a throttled reader for benchmarks and
// tests of slow sources, and the ring accounting of the last Run.

#ifndef HURRAY_STREAM_INGEST_TESTING_LOADER_TEST_PEER_H_
#define HURRAY_STREAM_INGEST_TESTING_LOADER_TEST_PEER_H_

#include <cstddef>

#include "stream/ingest/loader.h"

namespace hurray::stream::ingest {

class LoaderTestPeer {
 public:
  // The reader delivers at most this many bytes per second (0: no limit).
  static void SetThrottle(Loader& loader, double bytes_per_second) {
    loader.hooks_.throttle_bytes_per_second = bytes_per_second;
  }
  // Slots the last Run's ring had at its end (LoaderOptions::ring_slots and
  // those it grew by).
  static size_t RingSlots(const Loader& loader) {
    return loader.hooks_.ring_slots;
  }
  // Sockets and pipes: each wait for input reads at most `bytes` (0: a whole
  // slot); the slot's top-up then reads what else is there.
  static void SetFirstReadCap(Loader& loader, size_t bytes) {
    loader.hooks_.first_read_cap = bytes;
  }
  // Bytes the last Run's top-ups read.
  static uint64_t ToppedUpBytes(const Loader& loader) {
    return loader.hooks_.topped_up_bytes;
  }
  // Slots the last Run fed to its consumer.
  static uint64_t SlotsFed(const Loader& loader) {
    return loader.hooks_.slots_fed;
  }
  // Sockets and pipes: times the last Run's reader waited for a free slot.
  static uint64_t ReaderResumes(const Loader& loader) {
    return loader.hooks_.reader_resumes;
  }
  // Times the last Run's consumer found the ring empty and slept.
  static uint64_t ConsumerWaits(const Loader& loader) {
    return loader.hooks_.consumer_waits;
  }
  // Slots of the last Run a regular file fed read on the consumer's thread
  // (all of them when the consumer's work stayed small).
  static uint64_t InlineSlots(const Loader& loader) {
    return loader.hooks_.inline_slots;
  }
  // The most slots the last Run had filled and not yet consumed.
  static size_t MaxSlotsInFlight(const Loader& loader) {
    return loader.hooks_.max_slots_in_flight;
  }
};

}  // namespace hurray::stream::ingest

#endif  // HURRAY_STREAM_INGEST_TESTING_LOADER_TEST_PEER_H_
