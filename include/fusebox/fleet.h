// fusebox/fleet.h
//
// A fleet: breakers of the same name in several processes that act as one. A trip anywhere opens
// the breaker everywhere, one probe runs fleet-wide after the cooldown, and its result closes or
// reopens every instance. The rules are in docs/breaker-rules.md ("Fleet"); the Redis protocol is
// in docs/fleet.md.
//
// Three parts:
//   - FleetLink: the transport (publish a transition, receive peers' transitions, grant a probe
//     lease). The breaker knows nothing about it; fusebox::redis provides RedisFleetLink, and
//     InMemoryFleetBus below links instances in one process (tests, the simulator).
//   - Fleet: one per process and link. Attach(breaker) plugs a breaker into the fleet through
//     CircuitBreaker::SetCoordination: the breaker's local transitions are published, peers'
//     transitions are adopted (CircuitBreaker::Adopt), and HALF_OPEN admits a probe only while
//     this instance holds the lease.
//   - FleetMessage: what travels, ordered by (generation, sender) so that a late or duplicated
//     message never undoes a newer one.
//
// What never happens: a CLOSED-path call touching the link (outcomes are counted locally, only
// transitions travel), or a call waiting on the link. A link that is down answers connected() ==
// false, and the breakers then follow the local rules at once (the local probe cap).
//
// Thread safety: every member of Fleet may be called from any thread. A FleetLink calls its
// receiver from its own thread (or, for the in-memory bus, the thread that published).
// Lifetime: the link outlives the Fleet; an attached breaker outlives the Fleet or is Detached.
//
// Example:
//   fusebox::InMemoryFleetBus bus(clock);
//   auto link_a = bus.Connect("a"), link_b = bus.Connect("b");
//   fusebox::Fleet fleet_a(*link_a, "a"), fleet_b(*link_b, "b");
//   fleet_a.Attach(breaker_a);
//   fleet_b.Attach(breaker_b);  // breaker_a tripping now opens breaker_b too
//
// With FleetOptions::quorum = 2, breaker_b would open only once two instances other than b
// reported failing; one instance's own trouble then stays its own.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "fusebox/circuit_breaker.h"
#include "fusebox/clock.h"
#include "fusebox/events.h"
#include "fusebox/status.h"
#include "fusebox/thread_annotations.h"

namespace fusebox {

// One breaker transition, as it travels between instances.
struct FleetMessage {
  std::string breaker;             // the breaker's name, the same on every instance
  std::uint64_t generation = 0;    // fleet-wide: one more than the newest the sender had seen
  State state = State::kClosed;    // never kHalfOpen (each instance enters it on its own)
  Duration remaining_cooldown{0};  // kOpen: the time left before a probe may run, from sending
  bool by_operator = false;        // an operator command (applies even over operator states)
  std::string sender;              // the sending instance's id
};

// Bounds on what a peer may send (docs/fleet.md, "Bounds"). Redis is shared: a buggy peer, an
// operator's typo or anyone who can PUBLISH there writes what an instance reads. A message outside
// these bounds is refused (counted, never applied), so that none of them can break an instance.
//
// The whole wire form, checked before anything of it is copied.
inline constexpr std::size_t kMaxFleetMessageBytes = 512;
// A sender id: instance ids are host names plus a suffix, far shorter.
inline constexpr std::size_t kMaxFleetSenderBytes = 128;
inline constexpr std::size_t kMaxFleetBreakerBytes = 256;
// Generations are compared as Lua numbers (doubles) by the Redis scripts, exact up to 2^53; at a
// thousand transitions a second a fleet would need 285,000 years to get there. A local transition
// past it stays at it (never wraps to 0, which every peer would take for the oldest).
inline constexpr std::uint64_t kMaxFleetGeneration = std::uint64_t{1} << 53;
// A peer's generation may be at most this far ahead of the newest known one (0 before any): one
// transition a second for 136 years. Further is a forged or corrupted message, and adopting it
// would leave the fleet near kMaxFleetGeneration, where new transitions no longer win.
inline constexpr std::uint64_t kMaxFleetGenerationLead = std::uint64_t{1} << 32;
// A remaining cooldown on the wire: the largest cooldown_max a breaker accepts. A breaker adopts
// at most its own open_wait_max() of it anyway (CircuitBreaker::Adopt).
inline constexpr Duration kMaxFleetCooldown = std::chrono::hours(24);
// The peers remembered for FleetStats::peers_seen; beyond it the one heard from least recently is
// forgotten (a flood of invented sender names costs no memory).
inline constexpr std::size_t kMaxFleetPeers = 64;

// Why a message was refused.
enum class FleetRefusal : std::uint8_t {
  kTooLong,                // the wire form is longer than kMaxFleetMessageBytes
  kMalformed,              // not the wire form: version, field count, numbers, state
  kBadName,                // sender or breaker empty, too long, or with control characters
  kBadGeneration,          // 0 or above kMaxFleetGeneration
  kGenerationTooFarAhead,  // more than kMaxFleetGenerationLead ahead of the newest known
  kBadCooldown,            // OPEN: not in (0, kMaxFleetCooldown]; other states: not 0
};
std::string_view ToString(FleetRefusal refusal) noexcept;

// Whether `message`'s fields are in range (names, generation, cooldown), as Fleet checks every
// message a link delivers. A remaining cooldown of 0 passes here: a stored OPEN whose cooldown
// elapsed while stored arrives with 0 left (only the wire form refuses 0 for OPEN).
std::optional<FleetRefusal> CheckFleetMessage(const FleetMessage& message);

// Whether `a` is newer than `b`: a higher generation, or the same one from a greater sender id
// (two instances that trip at once agree on one order).
bool IsNewer(const FleetMessage& a, std::uint64_t b_generation, std::string_view b_sender);

// The wire form: "fusebox1 <generation> <STATE> <remaining_ns> <0|1> <sender> <breaker>",
// one space between fields, sender without spaces, breaker the rest of the line.
std::string EncodeFleetMessage(const FleetMessage& message);
// Parses the wire form: the message, or why it was refused (anything longer than
// kMaxFleetMessageBytes, unknown version or state, kHalfOpen, bad numbers, anything out of the
// bounds above). Such a message is counted and dropped.
Result<FleetMessage, FleetRefusal> DecodeFleetMessage(std::string_view text);

// What a link tells its Fleet. Called from the link's thread.
class FleetReceiver {
 public:
  virtual ~FleetReceiver() = default;
  // A peer's transition, or the fleet's stored state read when the link (re)connects or
  // starts watching a breaker (its remaining cooldown already reduced by the time it was stored).
  virtual void OnMessage(const FleetMessage& message) = 0;
  // The answer to an AcquireLease for (breaker, fleet generation): `slots` slots won (0: denied,
  // `holder` then names an instance holding one, or is empty when unknown). After a denial the
  // link tries again until a slot is won or ReleaseLease is called.
  virtual void OnLease(std::string_view breaker, std::uint64_t generation, std::uint32_t slots,
                       std::string_view holder) = 0;
  // The link (re)connected.
  virtual void OnConnected() = 0;
};

// The transport. Implementations never block the caller: work is queued or dropped.
class FleetLink {
 public:
  virtual ~FleetLink() = default;
  // Who receives; set before Watch. Null detaches.
  virtual void SetReceiver(FleetReceiver* receiver) = 0;
  // Receive this breaker's transitions from now on, and its stored state now and on reconnect.
  virtual void Watch(const std::string& breaker) = 0;
  // Sends a local transition to every peer and stores it as the fleet's state unless a newer one
  // is stored. Dropped while disconnected.
  virtual void Publish(const FleetMessage& message) = 0;
  // Asks for up to `slots` probe slots of (breaker, generation), each held for `ttl` (the probe
  // budget) by `instance`. Answers through FleetReceiver::OnLease.
  virtual void AcquireLease(const std::string& breaker, std::uint64_t generation,
                            std::uint32_t slots, Duration ttl) = 0;
  // Stops trying for the lease of `breaker` (slots won expire with their ttl).
  virtual void ReleaseLease(const std::string& breaker) = 0;
  // Lock-free; may be read under a breaker's lock.
  virtual bool connected() const noexcept = 0;
};

struct FleetStats {
  bool connected = false;
  std::uint64_t peers_seen = 0;           // distinct other instances heard from (at most
                                          // kMaxFleetPeers, the most recently heard)
  std::uint64_t messages_sent = 0;        // local transitions handed to the link while connected
  std::uint64_t messages_received = 0;    // peers' messages (and stored states) received
  std::uint64_t messages_stale = 0;       // received but older than what was known: dropped
  std::uint64_t messages_refused = 0;     // out of the bounds above (CheckFleetMessage): dropped
  std::uint64_t transitions_adopted = 0;  // peers' transitions applied to a local breaker
  std::uint64_t leases_won = 0;
  std::uint64_t opens_below_quorum = 0;  // peers' OPENs not adopted: fewer than the quorum
                                         // of instances reported failing (FleetOptions::quorum)
  std::uint64_t trips_kept_local = 0;    // local trips not published: local trouble
                                         // (FleetOptions::local_trouble)
};

// How a Fleet weighs its peers' evidence.
struct FleetOptions {
  // How many distinct peers must have reported the dependency failing (an OPEN of their own: a
  // trip or a failed probe, not one adopted) within their cooldown before this instance opens on
  // their evidence. 1: any peer's trip opens every instance. With 2 or more, one instance whose
  // own route to the dependency is broken opens alone. An instance's own evidence always opens
  // its own breaker, and an operator's command always applies. At least 1.
  std::uint32_t quorum = 1;
  // Asked when a local breaker trips (or a probe fails): true when the failures were this
  // instance's own trouble (its network, its resolver), not the dependency's. Such a transition
  // opens the local breaker and is not published: it never travels. Called on the thread that
  // made the transition, after the breaker's lock is released. Empty: every trip travels.
  std::function<bool(std::string_view breaker)> local_trouble = {};
  // Times the peers' reports for the quorum. Null: DefaultClock(). Outlives the Fleet.
  Clock* clock = nullptr;
};

// Plugs breakers into a fleet through one link. See the banner for the rules.
class Fleet final : private FleetReceiver {
 public:
  Fleet(FleetLink& link, std::string instance_id, FleetOptions options = {});
  ~Fleet() override;
  Fleet(const Fleet&) = delete;
  Fleet& operator=(const Fleet&) = delete;

  // Coordinates `breaker` with the same-named breakers of the other instances. One breaker per
  // name; attaching a second one of the same name replaces the first.
  void Attach(CircuitBreaker& breaker);
  void Detach(CircuitBreaker& breaker);

  const std::string& instance() const noexcept { return instance_; }
  std::uint32_t quorum() const noexcept { return options_.quorum; }
  FleetStats Stats() const;
  // The distinct peers whose report of `breaker` failing still counts towards the quorum (their
  // OPEN's cooldown has not run out, and no good probe closed the fleet since).
  std::size_t FailingPeers(std::string_view breaker) const;
  // The instance known to hold the probe lease of `breaker` for its current fleet generation:
  // this instance, a peer that won it, or nullopt.
  std::optional<std::string> LeaseHolder(std::string_view breaker) const;

 private:
  struct Member;
  void OnMessage(const FleetMessage& message) override;
  void OnLease(std::string_view breaker, std::uint64_t generation, std::uint32_t slots,
               std::string_view holder) override;
  void OnConnected() override;
  void OnLocalTransition(Member& member, const TransitionEvent& event);
  void NotePeer(const std::string& sender) FUSEBOX_REQUIRES(mu_);
  void CountRefused();
  void PublishCurrent(Member& member, const TransitionEvent* event);
  std::shared_ptr<Member> Find(std::string_view breaker) const;

  FleetLink& link_;
  const std::string instance_;
  const FleetOptions options_;
  Clock& clock_;
  mutable Mutex mu_;
  std::map<std::string, std::shared_ptr<Member>, std::less<>> members_ FUSEBOX_GUARDED_BY(mu_);
  // Sender id -> when last heard from (peer_clock_ at the time), at most kMaxFleetPeers.
  std::map<std::string, std::uint64_t, std::less<>> peers_ FUSEBOX_GUARDED_BY(mu_);
  std::uint64_t peer_clock_ FUSEBOX_GUARDED_BY(mu_) = 0;
  FleetStats stats_ FUSEBOX_GUARDED_BY(mu_);
};

// Links several instances in one process: a message published by one link reaches every other
// connected link at once, on the publishing thread. Leases expire on the injected clock; a
// denied request is tried again on Poll() (call it after moving the clock) and whenever a link
// reconnects. SetConnected(false) simulates a partition of that one link.
class InMemoryFleetBus {
 public:
  class Link;
  explicit InMemoryFleetBus(Clock& clock) : clock_(clock) {}
  std::unique_ptr<Link> Connect(std::string instance);
  // Retries the pending lease requests of every connected link.
  void Poll();

 private:
  friend class Link;
  struct LeaseSlot {
    std::string holder;
    TimePoint expires{};
  };
  struct Pending {
    Link* link;
    std::string breaker;
    std::uint64_t generation;
    std::uint32_t slots;
    Duration ttl;
  };
  void Publish(Link& from, const FleetMessage& message);
  void TryLeases(const std::vector<Pending>& requests);
  void Reconcile(Link& link, const std::string& breaker);

  Clock& clock_;
  Mutex mu_;
  std::vector<Link*> links_ FUSEBOX_GUARDED_BY(mu_);
  std::map<std::string, FleetMessage> stored_ FUSEBOX_GUARDED_BY(mu_);
  // Key: name#generation.
  std::map<std::string, std::vector<LeaseSlot>> leases_ FUSEBOX_GUARDED_BY(mu_);
  std::vector<Pending> pending_ FUSEBOX_GUARDED_BY(mu_);
};

class InMemoryFleetBus::Link final : public FleetLink {
 public:
  Link(InMemoryFleetBus& bus, std::string instance) : bus_(bus), instance_(std::move(instance)) {}
  ~Link() override;
  void SetReceiver(FleetReceiver* receiver) override;
  void Watch(const std::string& breaker) override;
  void Publish(const FleetMessage& message) override;
  void AcquireLease(const std::string& breaker, std::uint64_t generation, std::uint32_t slots,
                    Duration ttl) override;
  void ReleaseLease(const std::string& breaker) override;
  bool connected() const noexcept override { return connected_.load(); }
  // Down: publishes are dropped and nothing is received. Up again: stored states are delivered
  // (reconciliation), OnConnected is called and pending lease requests are tried.
  void SetConnected(bool connected);
  // Delivers `message` to this link's receiver as if a peer had sent it (late or duplicated
  // messages in tests).
  void Inject(const FleetMessage& message);
  const std::string& instance() const noexcept { return instance_; }

 private:
  friend class InMemoryFleetBus;
  FleetReceiver* receiver() const;
  InMemoryFleetBus& bus_;
  const std::string instance_;
  std::atomic<bool> connected_{true};
  mutable Mutex mu_;
  FleetReceiver* receiver_ FUSEBOX_GUARDED_BY(mu_) = nullptr;
  std::set<std::string> watched_ FUSEBOX_GUARDED_BY(mu_);
};

}  // namespace fusebox
