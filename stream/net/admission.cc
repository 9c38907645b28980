#include "stream/net/admission.h"

#include <algorithm>
#include <utility>

namespace hurray::stream::net {

NetAdmission::NetAdmission(uint32_t max_connections, uint32_t max_per_peer)
    : max_connections_(std::max<uint32_t>(max_connections, 1)),
      max_per_peer_(std::max<uint32_t>(max_per_peer, 1)) {}

size_t NetAdmission::live_from(const std::string& peer) const {
  const auto it = per_peer_.find(peer);
  return it == per_peer_.end() ? 0 : it->second;
}

NetAdmission::Id NetAdmission::PickVictim(const std::string* peer) const {
  Id best = 0;
  const Entry* best_entry = nullptr;
  for (const auto& [id, e] : entries_) {
    if (e.displaced || e.waiting == Waiting::kNone) continue;
    if (peer != nullptr && e.peer != *peer) continue;
    if (best_entry == nullptr || e.waiting < best_entry->waiting ||
        (e.waiting == best_entry->waiting &&
         (e.since < best_entry->since ||
          (e.since == best_entry->since && id < best)))) {
      best = id;
      best_entry = &e;
    }
  }
  return best;
}

void NetAdmission::Displace(Id id) {
  Entry& e = entries_.at(id);
  e.displaced = true;
  --live_;
  if (--per_peer_[e.peer] == 0) per_peer_.erase(e.peer);
}

NetAdmission::Decision NetAdmission::Admit(const std::string& peer,
                                           int64_t now) {
  Decision d;
  if (live_from(peer) >= max_per_peer_) {
    d.victim = PickVictim(&peer);
    if (d.victim == 0) return d;  // refused
    Displace(d.victim);
  } else if (live_ >= max_connections_) {
    d.victim = PickVictim(nullptr);
    if (d.victim == 0) return d;
    Displace(d.victim);
  }
  d.admitted = true;
  d.id = next_id_++;
  entries_.emplace(d.id, Entry{peer, Waiting::kHello, now, false});
  ++live_;
  ++per_peer_[peer];
  return d;
}

void NetAdmission::SetWaiting(Id id, Waiting what, int64_t since) {
  const auto it = entries_.find(id);
  if (it == entries_.end()) return;
  it->second.waiting = what;
  it->second.since = since;
}

void NetAdmission::Remove(Id id) {
  const auto it = entries_.find(id);
  if (it == entries_.end()) return;
  if (!it->second.displaced) {
    --live_;
    if (--per_peer_[it->second.peer] == 0) per_peer_.erase(it->second.peer);
  }
  entries_.erase(it);
}

}  // namespace hurray::stream::net
