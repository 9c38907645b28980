#include "stream/net/admission.h"

#include "gtest/gtest.h"

namespace hurray::stream::net {
namespace {

using Waiting = NetAdmission::Waiting;

TEST(NetAdmission, AdmitsUpToTheCaps) {
  NetAdmission a(/*max_connections=*/3, /*max_per_peer=*/2);
  const auto x = a.Admit("10.0.0.1", 1);
  const auto y = a.Admit("10.0.0.1", 2);
  const auto z = a.Admit("10.0.0.2", 3);
  EXPECT_TRUE(x.admitted && y.admitted && z.admitted);
  EXPECT_EQ(x.victim + y.victim + z.victim, 0u);
  EXPECT_EQ(a.live(), 3u);
  EXPECT_EQ(a.live_from("10.0.0.1"), 2u);
}

TEST(NetAdmission, BusyConnectionsAreNeverDisplacedSoTheNewOneIsRefused) {
  NetAdmission a(2, 2);
  const auto x = a.Admit("p", 1);
  const auto y = a.Admit("p", 2);
  a.SetWaiting(x.id, Waiting::kNone, 0);
  a.SetWaiting(y.id, Waiting::kNone, 0);
  const auto z = a.Admit("p", 3);
  EXPECT_FALSE(z.admitted);
  EXPECT_EQ(z.victim, 0u);
  EXPECT_EQ(a.live(), 2u);
}

TEST(NetAdmission, PerPeerCapDisplacesOnlyThatPeersMostDisplaceable) {
  NetAdmission a(10, 3);
  const auto other = a.Admit("q", 0);  // oldest of all, another peer
  const auto silent = a.Admit("p", 5);
  const auto partial = a.Admit("p", 1);
  const auto idle = a.Admit("p", 2);
  a.SetWaiting(partial.id, Waiting::kMessageRest, 1);
  a.SetWaiting(idle.id, Waiting::kNextMessage, 2);
  // A silent (HELLO-less) connection goes first, though it is the newest.
  const auto n1 = a.Admit("p", 6);
  EXPECT_TRUE(n1.admitted);
  EXPECT_EQ(n1.victim, silent.id);
  a.SetWaiting(n1.id, Waiting::kNone, 0);
  // Then the one inside a message, then the idle one; never the other
  // peer's.
  EXPECT_EQ(a.Admit("p", 7).victim, partial.id);
  EXPECT_NE(a.Admit("p", 8).victim, other.id);
  EXPECT_EQ(a.live_from("p"), 3u);
  EXPECT_EQ(a.live_from("q"), 1u);
}

TEST(NetAdmission, GlobalCapDisplacesTheOldestOfTheMostDisplaceableKind) {
  NetAdmission a(3, 3);
  const auto x = a.Admit("a", 1);
  const auto y = a.Admit("b", 2);
  const auto z = a.Admit("c", 3);
  a.SetWaiting(x.id, Waiting::kNextMessage, 1);
  a.SetWaiting(y.id, Waiting::kHello, 9);
  a.SetWaiting(z.id, Waiting::kHello, 4);
  const auto n = a.Admit("d", 10);
  EXPECT_TRUE(n.admitted);
  EXPECT_EQ(n.victim, z.id);
  EXPECT_EQ(a.live(), 3u);
  // A displaced connection is not counted, and removing it later changes
  // nothing.
  a.Remove(z.id);
  EXPECT_EQ(a.live(), 3u);
  a.Remove(x.id);
  EXPECT_EQ(a.live(), 2u);
  EXPECT_EQ(a.live_from("a"), 0u);
}

}  // namespace
}  // namespace hurray::stream::net
