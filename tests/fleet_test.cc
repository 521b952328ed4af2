// The fleet rules (docs/breaker-rules.md, "Fleet") in virtual time: three instances of one
// breaker linked through an InMemoryFleetBus, and the wire form of a FleetMessage.
#include "fusebox/fleet.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fusebox/circuit_breaker.h"
#include "fusebox/testing/manual_clock.h"

namespace fusebox {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// Counts what a Fleet asks of its link, then forwards it.
class CountingLink final : public FleetLink {
 public:
  explicit CountingLink(FleetLink& inner) : inner_(inner) {}
  void SetReceiver(FleetReceiver* r) override { inner_.SetReceiver(r); }
  void Watch(const std::string& b) override { inner_.Watch(b); }
  void Publish(const FleetMessage& m) override {
    ++calls;
    inner_.Publish(m);
  }
  void AcquireLease(const std::string& b, std::uint64_t g, std::uint32_t s, Duration t) override {
    ++calls;
    inner_.AcquireLease(b, g, s, t);
  }
  void ReleaseLease(const std::string& b) override {
    ++calls;
    inner_.ReleaseLease(b);
  }
  bool connected() const noexcept override { return inner_.connected(); }
  int calls = 0;

 private:
  FleetLink& inner_;
};

struct Instance {
  std::unique_ptr<InMemoryFleetBus::Link> link;
  std::unique_ptr<CountingLink> counting;
  std::unique_ptr<CircuitBreaker> breaker;  // outlives the fleet it is attached to
  std::unique_ptr<Fleet> fleet;
};

class FleetTest : public ::testing::Test {
 protected:
  // Every instance gets `quorum`; instance i's trips are its own trouble while local_[i].
  void Start(CircuitBreakerConfig config = {}, int count = 3, std::uint32_t quorum = 1) {
    config.failure_threshold = 3;
    config.cooldown = seconds(10);
    config.call_timeout = seconds(2);
    config_ = config;
    for (int i = 0; i < count; ++i) {
      const std::string id(1, static_cast<char>('a' + i));
      Instance in;
      in.link = bus_.Connect(id);
      in.counting = std::make_unique<CountingLink>(*in.link);
      FleetOptions options;
      options.quorum = quorum;
      options.local_trouble = [this, i](std::string_view) {
        return local_[static_cast<std::size_t>(i)];
      };
      options.clock = &clock_;
      in.fleet = std::make_unique<Fleet>(*in.counting, id, std::move(options));
      in.breaker = std::move(CircuitBreaker::Create("vpic", config, {.clock = &clock_})).value();
      in.fleet->Attach(*in.breaker);
      instances_.push_back(std::move(in));
    }
  }
  CircuitBreaker& B(int i) { return *instances_[static_cast<std::size_t>(i)].breaker; }
  Fleet& F(int i) { return *instances_[static_cast<std::size_t>(i)].fleet; }
  InMemoryFleetBus::Link& L(int i) { return *instances_[static_cast<std::size_t>(i)].link; }

  void Trip(CircuitBreaker& b) {
    for (std::uint32_t i = 0; i < config_.failure_threshold; ++i) {
      auto permit = b.TryAcquire();
      ASSERT_TRUE(permit.has_value());
      permit->Record(Outcome::kFailure);
    }
  }

  // Tries to acquire until a probe is admitted or `tries` calls were refused.
  Result<Permit> Probe(CircuitBreaker& b, int tries = 2) {
    Result<Permit> p = b.TryAcquire();
    for (int i = 1; i < tries && !p; ++i) {
      p = b.TryAcquire();
    }
    return p;
  }

  testing::ManualClock clock_;
  std::array<bool, 3> local_{};
  InMemoryFleetBus bus_{clock_};
  CircuitBreakerConfig config_;
  std::vector<Instance> instances_;
};

TEST_F(FleetTest, ATripOpensEveryPeerWithTheRemainingCooldown) {
  Start();
  clock_.Advance(seconds(1));
  Trip(B(0));
  EXPECT_EQ(B(0).state(), State::kOpen);
  for (int i : {1, 2}) {
    EXPECT_EQ(B(i).state(), State::kOpen) << i;
    EXPECT_EQ(B(i).retry_after(), seconds(10)) << i;
    auto rejected = B(i).TryAcquire();
    ASSERT_FALSE(rejected.has_value());
    EXPECT_EQ(rejected.error().code, ReasonCode::kCircuitOpen);
  }
  EXPECT_EQ(F(1).Stats().transitions_adopted, 1U);
  EXPECT_EQ(F(0).Stats().messages_sent, 1U);
  // Listeners see an adopted transition with its own cause.
  std::vector<TransitionEvent> seen;
  B(2).AddListener([&](const Event& e) {
    if (const auto* t = std::get_if<TransitionEvent>(&e.detail)) {
      seen.push_back(*t);
    }
  });
  L(2).Inject(FleetMessage{"vpic", 5, State::kClosed, Duration(0), false, "b"});
  ASSERT_EQ(seen.size(), 1U);
  EXPECT_EQ(seen[0].cause, TransitionCause::kFleet);
  EXPECT_EQ(ToString(seen[0].cause), "fleet");
  EXPECT_EQ(B(2).state(), State::kClosed);
  EXPECT_EQ(F(1).Stats().peers_seen, 1U);
}

TEST_F(FleetTest, ALatecomerAdoptsTheCooldownLeftNotAFullOne) {
  Start({}, 2);
  Trip(B(0));
  clock_.Advance(seconds(4));
  // A third instance starts watching: it reads the stored state and its remaining cooldown.
  auto link = bus_.Connect("c");
  auto breaker = std::move(CircuitBreaker::Create("vpic", config_, {.clock = &clock_})).value();
  Fleet fleet(*link, "c");
  fleet.Attach(*breaker);
  EXPECT_EQ(breaker->state(), State::kOpen);
  EXPECT_EQ(breaker->retry_after(), seconds(6));
}

TEST_F(FleetTest, OneProbeFleetWideAfterTheCooldown) {
  Start();
  Trip(B(0));
  clock_.Advance(seconds(10));
  // The call that ends the cooldown asks for the lease; the in-memory bus answers at once.
  auto probe = Probe(B(1));
  ASSERT_TRUE(probe.has_value());
  EXPECT_TRUE(probe->is_probe());
  EXPECT_EQ(F(1).LeaseHolder("vpic"), "b");
  for (int i : {0, 2}) {
    for (int k = 0; k < 3; ++k) {
      auto refused = B(i).TryAcquire();
      ASSERT_FALSE(refused.has_value());
      EXPECT_EQ(refused.error().code, ReasonCode::kCircuitHalfOpen);
    }
    EXPECT_EQ(F(i).LeaseHolder("vpic"), "b");
    EXPECT_EQ(B(i).Snapshot().probes, 0U);
  }
  probe->Record(Outcome::kSuccess);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(B(i).state(), State::kClosed) << i;
    EXPECT_TRUE(B(i).TryAcquire().has_value());
  }
}

TEST_F(FleetTest, ABadProbeReopensEveryInstanceWithAFreshCooldown) {
  Start();
  Trip(B(0));
  clock_.Advance(seconds(10));
  auto probe = Probe(B(2));
  ASSERT_TRUE(probe.has_value());
  clock_.Advance(milliseconds(500));
  probe->Record(Outcome::kFailure);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(B(i).state(), State::kOpen) << i;
    EXPECT_EQ(B(i).retry_after(), seconds(10)) << i;
  }
  // The next cooldown's lease is a new one: another instance may win it.
  clock_.Advance(seconds(10));
  auto next = Probe(B(0));
  ASSERT_TRUE(next.has_value());
  EXPECT_TRUE(next->is_probe());
}

TEST_F(FleetTest, ALeaseWhoseHolderVanishedExpiresAfterTheCallTimeout) {
  Start();
  Trip(B(0));
  clock_.Advance(seconds(10));
  auto probe = Probe(B(0));
  ASSERT_TRUE(probe.has_value());
  EXPECT_FALSE(Probe(B(1)).has_value());
  // Instance a goes silent with its probe. Its lease lasts call_timeout (2 s).
  L(0).SetConnected(false);
  clock_.Advance(milliseconds(1999));
  bus_.Poll();
  EXPECT_FALSE(B(1).TryAcquire().has_value());
  clock_.Advance(milliseconds(1));
  bus_.Poll();
  auto taken_over = B(1).TryAcquire();
  ASSERT_TRUE(taken_over.has_value());
  EXPECT_TRUE(taken_over->is_probe());
  EXPECT_FALSE(B(2).TryAcquire().has_value());
}

TEST_F(FleetTest, HalfOpenProbesNAdmitsNProbesFleetWide) {
  Start({.half_open_max_probes = 2}, 3);
  Trip(B(0));
  clock_.Advance(seconds(10));
  auto p1 = Probe(B(0));
  auto p2 = B(0).TryAcquire();
  ASSERT_TRUE(p1.has_value());
  ASSERT_TRUE(p2.has_value());
  EXPECT_FALSE(B(0).TryAcquire().has_value());
  EXPECT_FALSE(Probe(B(1), 3).has_value());
  p1->Record(Outcome::kSuccess);
  p2->Record(Outcome::kSuccess);
  EXPECT_EQ(B(1).state(), State::kClosed);
}

TEST_F(FleetTest, ALateOrDuplicatedMessageNeverReopens) {
  Start();
  Trip(B(0));
  FleetMessage trip{"vpic", 1, State::kOpen, seconds(10), false, "a"};
  clock_.Advance(seconds(10));
  auto probe = Probe(B(0));
  ASSERT_TRUE(probe.has_value());
  probe->Record(Outcome::kSuccess);
  ASSERT_EQ(B(1).state(), State::kClosed);
  const auto stale_before = F(1).Stats().messages_stale;
  L(1).Inject(trip);  // the trip again, late
  EXPECT_EQ(B(1).state(), State::kClosed);
  FleetMessage close{"vpic", 2, State::kClosed, Duration(0), false, "a"};
  L(1).Inject(close);  // the close again, duplicated
  EXPECT_EQ(B(1).state(), State::kClosed);
  EXPECT_EQ(F(1).Stats().messages_stale, stale_before + 2);
  // Same generation from two senders (both tripped at once): the greater id wins everywhere.
  FleetMessage from_z{"vpic", 2, State::kOpen, seconds(3), false, "z"};
  L(1).Inject(from_z);
  EXPECT_EQ(B(1).state(), State::kOpen);
  EXPECT_EQ(B(1).retry_after(), seconds(3));
}

TEST_F(FleetTest, ClosedPathCallsNeverTouchTheLink) {
  Start();
  const int before = instances_[0].counting->calls;
  for (int i = 0; i < 1000; ++i) {
    auto permit = B(0).TryAcquire();
    ASSERT_TRUE(permit.has_value());
    permit->Record(i % 2 == 0 ? Outcome::kFailure : Outcome::kSuccess);
  }
  EXPECT_EQ(instances_[0].counting->calls, before);
  EXPECT_EQ(F(1).Stats().messages_received, 0U);
}

TEST_F(FleetTest, ALinkThatIsDownFallsBackToTheLocalRules) {
  Start();
  L(2).SetConnected(false);
  Trip(B(0));
  EXPECT_EQ(B(1).state(), State::kOpen);
  EXPECT_EQ(B(2).state(), State::kClosed);  // heard nothing
  Trip(B(2));
  clock_.Advance(seconds(10));
  // No lease to ask for: the first call after the cooldown probes, as a lone breaker would.
  auto local = B(2).TryAcquire();
  ASSERT_TRUE(local.has_value());
  EXPECT_TRUE(local->is_probe());
  local->Record(Outcome::kIgnored);
}

TEST_F(FleetTest, OnReconnectTheNewerGenerationWins) {
  Start();
  L(2).SetConnected(false);
  Trip(B(0));  // generation 1, c does not hear it
  clock_.Advance(seconds(3));
  L(2).SetConnected(true);  // reads the stored trip: 7 s left
  EXPECT_EQ(B(2).state(), State::kOpen);
  EXPECT_EQ(B(2).retry_after(), seconds(7));

  // c trips alone while cut off: on reconnect its newer transition reaches the others.
  clock_.Advance(seconds(7));
  auto probe = Probe(B(0));
  ASSERT_TRUE(probe.has_value());
  probe->Record(Outcome::kSuccess);  // generation 2: all closed
  L(2).SetConnected(false);
  Trip(B(2));  // generation 3, unsent
  EXPECT_EQ(B(0).state(), State::kClosed);
  L(2).SetConnected(true);
  EXPECT_EQ(B(0).state(), State::kOpen);
  EXPECT_EQ(B(1).state(), State::kOpen);
}

TEST_F(FleetTest, OperatorCommandsApplyFleetWide) {
  Start();
  B(0).ForceOpen();
  for (int i : {1, 2}) {
    EXPECT_EQ(B(i).state(), State::kForcedOpen);
  }
  // An automatic trip does not move an operator state.
  auto bare = bus_.Connect("z");
  bare->Publish(FleetMessage{"vpic", 2, State::kOpen, seconds(10), false, "z"});
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(B(i).state(), State::kForcedOpen);
  }
  B(2).Reset();
  for (int i : {0, 1}) {
    EXPECT_EQ(B(i).state(), State::kClosed);
  }
  B(1).Disable();
  EXPECT_EQ(B(0).state(), State::kDisabled);
  B(0).MetricsOnly();
  EXPECT_EQ(B(2).state(), State::kMetricsOnly);
}

TEST_F(FleetTest, DetachedBreakersActAlone) {
  Start();
  F(1).Detach(B(1));
  Trip(B(0));
  EXPECT_EQ(B(1).state(), State::kClosed);
  EXPECT_EQ(B(2).state(), State::kOpen);
}

// ---- bounded trust: what a peer (or anyone who can write to Redis) sends (docs/fleet.md,
// "Bounds") ----

TEST_F(FleetTest, AGenerationFarAheadIsRefusedAndOperatorCommandsStillApply) {
  Start();
  Trip(B(0));  // generation 1 everywhere
  // One forged message at the top of the range reaches every instance. Adopted, the next
  // generation (its + 1) would wrap to 0, and every later transition would be stale everywhere.
  const FleetMessage forged{
      "vpic", std::numeric_limits<std::uint64_t>::max(), State::kClosed, Duration(0), false, "z"};
  FleetMessage beyond_lead = forged;
  beyond_lead.generation = 1 + kMaxFleetGenerationLead + 1;
  for (int i = 0; i < 3; ++i) {
    L(i).Inject(forged);
    L(i).Inject(beyond_lead);
    EXPECT_EQ(B(i).state(), State::kOpen) << i;
    EXPECT_EQ(F(i).Stats().messages_refused, 2U) << i;
  }
  B(0).ForceOpen();
  for (int i : {1, 2}) {
    EXPECT_EQ(B(i).state(), State::kForcedOpen) << i;
  }
  // A generation just within the lead is a peer that was cut off for long: adopted.
  FleetMessage within_lead = forged;
  within_lead.generation = 2 + kMaxFleetGenerationLead;
  within_lead.by_operator = true;
  L(1).Inject(within_lead);
  EXPECT_EQ(B(1).state(), State::kClosed);
  EXPECT_EQ(F(1).Stats().messages_refused, 2U);
}

TEST_F(FleetTest, GenerationsSaturateInsteadOfWrapping) {
  Start({}, 2);
  // Walk both instances up to the top of the range in steps the lead allows (a peer from "0",
  // which loses every tie to "a" and "b").
  FleetMessage step{"vpic", 0, State::kClosed, Duration(0), false, "0"};
  while (step.generation < kMaxFleetGeneration) {
    step.generation = std::min(step.generation + kMaxFleetGenerationLead, kMaxFleetGeneration);
    L(0).Inject(step);
    L(1).Inject(step);
  }
  ASSERT_EQ(F(0).Stats().messages_refused, 0U);
  // A's trip is published at kMaxFleetGeneration (not 0): B adopts it, as a tie won by "a".
  Trip(B(0));
  EXPECT_EQ(B(1).state(), State::kOpen);
  EXPECT_EQ(F(1).Stats().messages_stale, 0U);
  // Past the top: refused.
  step.generation = kMaxFleetGeneration + 1;
  L(1).Inject(step);
  EXPECT_EQ(F(1).Stats().messages_refused, 1U);
}

TEST_F(FleetTest, APeersCooldownIsCappedByTheLocalMaximum) {
  CircuitBreakerConfig config;
  config.cooldown_max = std::chrono::minutes(5);
  Start(config);
  // 23 h is within what a breaker may be set to, far beyond this one's cooldown_max.
  L(1).Inject(FleetMessage{"vpic", 1, State::kOpen, std::chrono::hours(23), false, "z"});
  EXPECT_EQ(B(1).state(), State::kOpen);
  EXPECT_EQ(B(1).retry_after(), std::chrono::minutes(5));
  clock_.Advance(std::chrono::minutes(5));
  auto probe = Probe(B(1));
  EXPECT_TRUE(probe.has_value());
  // Beyond any cooldown a breaker accepts (near Duration::max the deadline would overflow: the
  // tester's /status said 9,223,372,037 s while the next call went through as a probe), or
  // negative: refused, nothing changes.
  for (const Duration bad : {Duration::max(), Duration(9'000'000'000'000'000'000),
                             kMaxFleetCooldown + Duration(1), Duration(-5)}) {
    L(2).Inject(FleetMessage{"vpic", 1, State::kOpen, bad, false, "z"});
  }
  EXPECT_EQ(B(2).state(), State::kClosed);
  EXPECT_EQ(F(2).Stats().messages_refused, 4U);
}

TEST_F(FleetTest, AdoptCapsAnyCooldownAtTheBreakersOwnMaximum) {
  CircuitBreakerConfig config;
  config.cooldown = seconds(5);
  config.cooldown_max = std::chrono::minutes(5);
  auto b = std::move(CircuitBreaker::Create("vpic", config, {.clock = &clock_})).value();
  ASSERT_TRUE(b->Adopt(State::kOpen, Duration::max()));
  EXPECT_EQ(b->retry_after(), std::chrono::minutes(5));
  clock_.Advance(std::chrono::minutes(5) - milliseconds(1));
  EXPECT_FALSE(b->TryAcquire().has_value());
  clock_.Advance(milliseconds(1));
  auto probe = b->TryAcquire();
  ASSERT_TRUE(probe.has_value());
  EXPECT_TRUE(probe->is_probe());
  probe->Record(Outcome::kIgnored);
}

TEST_F(FleetTest, AFloodOfInventedSendersCostsABoundedPeersTable) {
  Start();
  Trip(B(0));  // generation 1 from "a"
  // 50,000 stale messages (generation 1 from senders below "a"), each from a new name.
  for (int i = 0; i < 50'000; ++i) {
    L(1).Inject(
        FleetMessage{"vpic", 1, State::kOpen, seconds(10), false, "0-" + std::to_string(i)});
  }
  EXPECT_EQ(F(1).Stats().messages_stale, 50'000U);
  EXPECT_EQ(F(1).Stats().peers_seen, kMaxFleetPeers);
  // Names beyond the bounds are refused before anything of them is kept.
  L(1).Inject(FleetMessage{"vpic", 2, State::kClosed, Duration(0), false,
                           std::string(kMaxFleetSenderBytes + 1, 'z')});
  L(1).Inject(FleetMessage{"vpic", 2, State::kClosed, Duration(0), false,
                           std::string(20 * 1024 * 1024, 'z')});
  L(1).Inject(FleetMessage{std::string(kMaxFleetBreakerBytes + 1, 'v'), 2, State::kClosed,
                           Duration(0), false, "z"});
  L(1).Inject(FleetMessage{"vpic", 2, State::kClosed, Duration(0), false, "z\x1b[2J"});
  EXPECT_EQ(F(1).Stats().messages_refused, 4U);
  EXPECT_EQ(B(1).state(), State::kOpen);
}

// ---- --fleet-quorum and local trouble ----

TEST_F(FleetTest, WithAQuorumOfTwoOneInstanceFailingOpensAlone) {
  Start({}, 3, 2);
  Trip(B(0));
  EXPECT_EQ(B(0).state(), State::kOpen);  // its own evidence always opens it
  for (int i : {1, 2}) {
    EXPECT_EQ(B(i).state(), State::kClosed) << i;
    EXPECT_EQ(F(i).Stats().opens_below_quorum, 1U) << i;
    EXPECT_EQ(F(i).FailingPeers("vpic"), 1U) << i;
  }
  clock_.Advance(seconds(3));
  Trip(B(1));  // a second instance sees vPIC failing: the quorum is met
  EXPECT_EQ(B(2).state(), State::kOpen);
  EXPECT_EQ(B(2).retry_after(), seconds(10));  // the cooldown of the report that met it
  EXPECT_EQ(F(2).FailingPeers("vpic"), 2U);
  EXPECT_EQ(F(2).Stats().transitions_adopted, 1U);
  EXPECT_EQ(B(0).state(), State::kOpen);
}

TEST_F(FleetTest, AReportCountsOnlyWithinTheCooldownItAnnounced) {
  Start({}, 3, 2);
  Trip(B(0));
  clock_.Advance(seconds(10));  // a's report ran out with its cooldown
  EXPECT_EQ(F(2).FailingPeers("vpic"), 0U);
  Trip(B(1));
  EXPECT_EQ(B(2).state(), State::kClosed);
  EXPECT_EQ(F(2).FailingPeers("vpic"), 1U);
}

TEST_F(FleetTest, AGoodProbeEndsTheReportsOfFailure) {
  Start({}, 3, 2);
  Trip(B(0));
  clock_.Advance(seconds(10));
  auto probe = Probe(B(0));
  ASSERT_TRUE(probe.has_value());
  probe->Record(Outcome::kSuccess);  // a publishes CLOSED
  EXPECT_EQ(B(0).state(), State::kClosed);
  EXPECT_EQ(F(2).FailingPeers("vpic"), 0U);
  // An old OPEN replayed (generation 1, below the CLOSED's) counts for nothing.
  L(2).Inject(FleetMessage{"vpic", 1, State::kOpen, seconds(10), false, "a"});
  L(2).Inject(FleetMessage{"vpic", 1, State::kOpen, seconds(10), false, "x"});
  EXPECT_EQ(F(2).FailingPeers("vpic"), 0U);
  Trip(B(1));
  EXPECT_EQ(B(2).state(), State::kClosed);
}

TEST_F(FleetTest, TwoConcurrentTripsMeetTheQuorumWhicheverArrivesFirst) {
  Start({}, 3, 2);
  // Two peers trip at once and both send generation 1; "y" > "x", so "x"'s arrives stale.
  L(2).Inject(FleetMessage{"vpic", 1, State::kOpen, seconds(10), false, "y"});
  EXPECT_EQ(B(2).state(), State::kClosed);
  L(2).Inject(FleetMessage{"vpic", 1, State::kOpen, seconds(8), false, "x"});
  EXPECT_EQ(B(2).state(), State::kOpen);
  EXPECT_EQ(B(2).retry_after(), seconds(8));
}

TEST_F(FleetTest, OneSenderRepeatingItselfIsStillOneReport) {
  Start({}, 3, 3);
  for (std::uint64_t g = 1; g <= 5; ++g) {
    L(2).Inject(FleetMessage{"vpic", g, State::kOpen, seconds(10), false, "x"});
  }
  EXPECT_EQ(F(2).FailingPeers("vpic"), 1U);
  EXPECT_EQ(B(2).state(), State::kClosed);
}

TEST_F(FleetTest, AnOperatorCommandNeedsNoQuorum) {
  Start({}, 3, 3);
  B(0).ForceOpen();
  EXPECT_EQ(B(1).state(), State::kForcedOpen);
  EXPECT_EQ(B(2).state(), State::kForcedOpen);
}

TEST_F(FleetTest, ATripOfTheInstancesOwnTroubleNeverTravels) {
  Start();
  local_[0] = true;
  Trip(B(0));
  EXPECT_EQ(B(0).state(), State::kOpen);
  EXPECT_EQ(F(0).Stats().trips_kept_local, 1U);
  EXPECT_EQ(F(0).Stats().messages_sent, 0U);
  EXPECT_EQ(B(1).state(), State::kClosed);
  EXPECT_EQ(B(2).state(), State::kClosed);
  // Nor after a reconnect, when a link republishes the local state it sent last.
  L(0).SetConnected(false);
  L(0).SetConnected(true);
  EXPECT_EQ(B(1).state(), State::kClosed);
  // The probe that still fails is kept local too; once the trouble is gone, a good probe is
  // published as any other (it changes nothing in CLOSED peers).
  clock_.Advance(seconds(10));
  auto probe = Probe(B(0));
  ASSERT_TRUE(probe.has_value());
  probe->Record(Outcome::kFailure);
  EXPECT_EQ(F(0).Stats().trips_kept_local, 2U);
  EXPECT_EQ(B(1).state(), State::kClosed);
  local_[0] = false;
  clock_.Advance(seconds(20));
  auto good = Probe(B(0));
  ASSERT_TRUE(good.has_value());
  good->Record(Outcome::kSuccess);
  EXPECT_EQ(B(0).state(), State::kClosed);
  EXPECT_EQ(F(0).Stats().messages_sent, 1U);
  // The same instance's trip of vPIC's own failure travels.
  Trip(B(0));
  EXPECT_EQ(B(1).state(), State::kOpen);
}

TEST(FleetMessageTest, RoundTripsThroughTheWireForm) {
  FleetMessage m{"vpic decode", 42, State::kOpen, milliseconds(1500), false, "10.0.0.1:8080"};
  const std::string wire = EncodeFleetMessage(m);
  EXPECT_EQ(wire, "fusebox1 42 OPEN 1500000000 0 10.0.0.1:8080 vpic decode");
  auto back = DecodeFleetMessage(wire);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->breaker, m.breaker);
  EXPECT_EQ(back->generation, 42U);
  EXPECT_EQ(back->state, State::kOpen);
  EXPECT_EQ(back->remaining_cooldown, milliseconds(1500));
  EXPECT_FALSE(back->by_operator);
  EXPECT_EQ(back->sender, m.sender);
}

TEST(FleetMessageTest, MalformedMessagesDoNotParse) {
  for (const char* bad :
       {"", "fusebox1", "fusebox2 1 OPEN 0 0 a b", "fusebox1 x OPEN 0 0 a b",
        "fusebox1 1 HALF_OPEN 0 0 a b", "fusebox1 1 SHUT 0 0 a b", "fusebox1 1 OPEN -5 0 a b",
        "fusebox1 1 OPEN 0 2 a b", "fusebox1 1 OPEN 0 0 a", "fusebox1 1 OPEN 0 0 a ",
        "fusebox1  1 OPEN 0 0 a b", "fusebox1 1 OPEN 0 0 a b\nc",
        "fusebox1 99999999999999999999 OPEN 0 0 a b"}) {
    EXPECT_FALSE(DecodeFleetMessage(bad).has_value()) << bad;
  }
}

TEST(FleetMessageTest, FieldsOutOfBoundsAreRefusedWithTheirReason) {
  const std::string long_sender(kMaxFleetSenderBytes + 1, 's');
  const std::string long_breaker(kMaxFleetBreakerBytes + 1, 'v');
  const std::pair<std::string, FleetRefusal> cases[] = {
      {"fusebox1 1 OPEN 1 0 a " + std::string(kMaxFleetMessageBytes, 'v'), FleetRefusal::kTooLong},
      {"fusebox1 1 OPEN 1 0 " + long_sender + " vpic", FleetRefusal::kBadName},
      {"fusebox1 1 OPEN 1 0 a " + long_breaker, FleetRefusal::kBadName},
      {"fusebox1 1 OPEN 1 0 a vp\x01ic", FleetRefusal::kBadName},
      {"fusebox1 0 OPEN 1 0 a vpic", FleetRefusal::kBadGeneration},
      {"fusebox1 9007199254740993 OPEN 1 0 a vpic", FleetRefusal::kBadGeneration},
      {"fusebox1 18446744073709551615 OPEN 1 0 a vpic", FleetRefusal::kBadGeneration},
      {"fusebox1 1 OPEN 0 0 a vpic", FleetRefusal::kBadCooldown},
      {"fusebox1 1 OPEN -1 0 a vpic", FleetRefusal::kBadCooldown},
      {"fusebox1 1 OPEN 9223372036854775807 0 a vpic", FleetRefusal::kBadCooldown},
      {"fusebox1 1 OPEN 86400000000001 0 a vpic", FleetRefusal::kBadCooldown},
      {"fusebox1 1 CLOSED 5 0 a vpic", FleetRefusal::kBadCooldown},
      {"fusebox1 1 OPEN 1 0 a vpic\n", FleetRefusal::kMalformed},
  };
  for (const auto& [wire, reason] : cases) {
    const auto decoded = DecodeFleetMessage(wire);
    ASSERT_FALSE(decoded.has_value()) << wire.substr(0, 80);
    EXPECT_EQ(decoded.error(), reason) << wire.substr(0, 80) << ": " << ToString(decoded.error());
  }
  // The bounds themselves are in range.
  const std::string at_bounds = "fusebox1 9007199254740992 OPEN 86400000000000 0 " +
                                std::string(kMaxFleetSenderBytes, 's') + " vpic";
  const auto decoded = DecodeFleetMessage(at_bounds);
  ASSERT_TRUE(decoded.has_value()) << ToString(decoded.error());
  EXPECT_EQ(decoded->generation, kMaxFleetGeneration);
  EXPECT_EQ(decoded->remaining_cooldown, kMaxFleetCooldown);
}

}  // namespace
}  // namespace fusebox
