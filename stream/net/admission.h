// NetAdmission: which connections a server keeps when it is full.
//
// The server holds at most `max_connections` connections, and at most
// `max_per_peer` from one peer address. A new connection that finds a cap
// reached takes the place of the connection, within that cap (the same peer
// for the per-peer cap, any peer for the global one), that is the least
// useful to keep: one that is waiting for input, ranked by what it is
// waiting for (first a HELLO that never came, then the rest of a started
// message, then a next request), oldest first. A connection whose response
// is in progress is never displaced. When no connection can be displaced,
// the new one is refused.
//
// So a client that arrives while slow or silent connections fill the caps
// (all of them from the same address, as on loopback) gets a slot, and the
// deadlines of stream/net/server.h close the displaced ones' kind anyway.
//
// Not thread-safe: the caller serializes every call.
#ifndef HURRAY_STREAM_NET_ADMISSION_H_
#define HURRAY_STREAM_NET_ADMISSION_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"

namespace hurray::stream::net {

class NetAdmission {
 public:
  using Id = uint64_t;
  // What a connection waits for, from the most to the least displaceable.
  enum class Waiting : uint8_t { kHello, kMessageRest, kNextMessage, kNone };

  struct Decision {
    bool admitted = false;
    Id id = 0;      // the new connection's, when admitted
    Id victim = 0;  // 0: none; else the connection to close for it
  };

  NetAdmission(uint32_t max_connections, uint32_t max_per_peer);

  // A new connection from `peer` at time `now` (any monotonic unit). When
  // admitted it starts as kHello since `now`. A victim is no longer counted
  // (call Remove for it too once it is closed; that is harmless).
  Decision Admit(const std::string& peer, int64_t now);
  // The connection now waits for `what` since `since`; kNone: it is busy
  // answering and cannot be displaced.
  void SetWaiting(Id id, Waiting what, int64_t since);
  // The connection closed.
  void Remove(Id id);

  // Counted connections (admitted, neither removed nor displaced).
  size_t live() const { return live_; }
  size_t live_from(const std::string& peer) const;

 private:
  struct Entry {
    std::string peer;
    Waiting waiting = Waiting::kHello;
    int64_t since = 0;
    bool displaced = false;
  };
  // The most displaceable counted connection (of `peer` unless null); 0.
  Id PickVictim(const std::string* peer) const;
  void Displace(Id id);

  uint32_t max_connections_;
  uint32_t max_per_peer_;
  Id next_id_ = 1;
  size_t live_ = 0;
  absl::flat_hash_map<Id, Entry> entries_;
  absl::flat_hash_map<std::string, uint32_t> per_peer_;  // counted ones
};

}  // namespace hurray::stream::net

#endif  // HURRAY_STREAM_NET_ADMISSION_H_
