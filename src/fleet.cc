// Fleet: the coordination rules of docs/breaker-rules.md ("Fleet") on top of a FleetLink. The
// breaker calls us through CircuitBreaker::Coordination (transitions after its lock is released;
// the probe gate under its lock, so the gate reads atomics only).
#include "fusebox/fleet.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace fusebox {
namespace {

constexpr std::string_view kWireVersion = "fusebox1";

bool IsOperatorState(State s) noexcept {
  return s == State::kDisabled || s == State::kMetricsOnly || s == State::kForcedOpen;
}

std::optional<State> ParseState(std::string_view name) noexcept {
  for (State s : {State::kClosed, State::kOpen, State::kHalfOpen, State::kDisabled,
                  State::kMetricsOnly, State::kForcedOpen}) {
    if (ToString(s) == name) {
      return s;
    }
  }
  return std::nullopt;
}

// Splits off the text up to the next space; false when there is none or the field is empty.
bool NextField(std::string_view& rest, std::string_view& field) noexcept {
  const std::size_t space = rest.find(' ');
  if (space == std::string_view::npos || space == 0) {
    return false;
  }
  field = rest.substr(0, space);
  rest.remove_prefix(space + 1);
  return true;
}

template <typename Int>
bool ParseInt(std::string_view text, Int& out) noexcept {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

// A name as a peer may send it: non-empty, bounded, no control characters (it is echoed in
// /status, logs and Redis keys); a sender id has no spaces either (the wire form splits on them).
bool GoodName(std::string_view name, std::size_t max_bytes, bool spaces_allowed) noexcept {
  if (name.empty() || name.size() > max_bytes) {
    return false;
  }
  return std::ranges::all_of(name, [spaces_allowed](const char c) {
    const auto byte = static_cast<unsigned char>(c);
    return byte >= 0x20 && byte != 0x7f && (byte != ' ' || spaces_allowed);
  });
}

}  // namespace

std::string_view ToString(FleetRefusal refusal) noexcept {
  switch (refusal) {
    case FleetRefusal::kTooLong:
      return "message too long";
    case FleetRefusal::kMalformed:
      return "malformed";
    case FleetRefusal::kBadName:
      return "bad sender or breaker name";
    case FleetRefusal::kBadGeneration:
      return "generation out of range";
    case FleetRefusal::kGenerationTooFarAhead:
      return "generation too far ahead";
    case FleetRefusal::kBadCooldown:
      return "cooldown out of range";
  }
  return "unknown";
}

std::optional<FleetRefusal> CheckFleetMessage(const FleetMessage& m) {
  if (!GoodName(m.sender, kMaxFleetSenderBytes, false) ||
      !GoodName(m.breaker, kMaxFleetBreakerBytes, true)) {
    return FleetRefusal::kBadName;
  }
  if (m.generation == 0 || m.generation > kMaxFleetGeneration) {
    return FleetRefusal::kBadGeneration;
  }
  const bool cooldown_ok = m.state == State::kOpen ? m.remaining_cooldown >= Duration(0) &&
                                                         m.remaining_cooldown <= kMaxFleetCooldown
                                                   : m.remaining_cooldown == Duration(0);
  if (!cooldown_ok) {
    return FleetRefusal::kBadCooldown;
  }
  return std::nullopt;
}

bool IsNewer(const FleetMessage& a, std::uint64_t b_generation, std::string_view b_sender) {
  if (a.generation != b_generation) {
    return a.generation > b_generation;
  }
  return a.sender > b_sender;
}

std::string EncodeFleetMessage(const FleetMessage& m) {
  std::string out(kWireVersion);
  out += ' ';
  out += std::to_string(m.generation);
  out += ' ';
  out += ToString(m.state);
  out += ' ';
  out += std::to_string(m.remaining_cooldown.count());
  out += m.by_operator ? " 1 " : " 0 ";
  out += m.sender;
  out += ' ';
  out += m.breaker;
  return out;
}

Result<FleetMessage, FleetRefusal> DecodeFleetMessage(std::string_view text) {
  if (text.size() > kMaxFleetMessageBytes) {
    return FleetRefusal::kTooLong;  // before anything of it is copied
  }
  std::string_view rest = text;
  std::string_view version;
  std::string_view generation;
  std::string_view state;
  std::string_view remaining;
  std::string_view by_operator;
  std::string_view sender;
  if (!NextField(rest, version) || version != kWireVersion || !NextField(rest, generation) ||
      !NextField(rest, state) || !NextField(rest, remaining) || !NextField(rest, by_operator) ||
      !NextField(rest, sender) || rest.empty() || rest.find('\n') != std::string_view::npos) {
    return FleetRefusal::kMalformed;
  }
  FleetMessage m;
  Duration::rep remaining_ns = 0;
  const std::optional<State> parsed_state = ParseState(state);
  if (!ParseInt(generation, m.generation) || !parsed_state || *parsed_state == State::kHalfOpen ||
      !ParseInt(remaining, remaining_ns) || (by_operator != "0" && by_operator != "1")) {
    return FleetRefusal::kMalformed;
  }
  // An OPEN with nothing left would be sent as 1 ns (PublishCurrent): 0 or less is not ours.
  if (*parsed_state == State::kOpen && remaining_ns <= 0) {
    return FleetRefusal::kBadCooldown;
  }
  m.state = *parsed_state;
  m.remaining_cooldown = Duration(remaining_ns);
  m.by_operator = by_operator == "1";
  m.sender = std::string(sender);
  m.breaker = std::string(rest);
  if (const std::optional<FleetRefusal> problem = CheckFleetMessage(m)) {
    return *problem;
  }
  return m;
}

// ---- Fleet ----

struct Fleet::Member {
  CircuitBreaker* breaker = nullptr;
  std::string name;
  Mutex mu;
  // The newest fleet generation known, and who sent it.
  std::uint64_t generation FUSEBOX_GUARDED_BY(mu) = 0;
  std::string sender FUSEBOX_GUARDED_BY(mu);
  // A lease request is out for this HALF_OPEN.
  bool lease_wanted FUSEBOX_GUARDED_BY(mu) = false;
  // The local generation of HALF_OPEN, or 0.
  std::uint64_t half_open_generation FUSEBOX_GUARDED_BY(mu) = 0;
  std::optional<std::string> lease_holder FUSEBOX_GUARDED_BY(mu);
  // Read by the probe gate under the breaker's lock: the local HALF_OPEN generation the lease
  // was won for (0: none) and the slots won.
  std::atomic<std::uint64_t> leased_generation{0};
  std::atomic<std::uint32_t> leased_slots{0};
  // Peers that reported the dependency failing (FleetOptions::quorum) -> until when the report
  // counts: the end of the cooldown their OPEN announced. At most kMaxFleetPeers.
  std::map<std::string, TimePoint, std::less<>> reports FUSEBOX_GUARDED_BY(mu);
  // The local state is an OPEN kept local (FleetOptions::local_trouble): never republished.
  bool open_kept_local FUSEBOX_GUARDED_BY(mu) = false;

  // Counts `sender`'s report until `until`, forgetting reports that ran out; with the table full,
  // the report that runs out first gives way (a flood of invented senders costs no memory).
  void NoteReport(const std::string& reporter, TimePoint until, TimePoint now)
      FUSEBOX_REQUIRES(mu) {
    std::erase_if(reports, [now](const auto& entry) { return entry.second <= now; });
    if (auto it = reports.find(reporter); it != reports.end()) {
      it->second = std::max(it->second, until);
      return;
    }
    if (reports.size() >= kMaxFleetPeers) {
      reports.erase(std::ranges::min_element(
          reports, [](const auto& a, const auto& b) { return a.second < b.second; }));
    }
    reports.emplace(reporter, until);
  }
  std::size_t LiveReports(TimePoint now) const FUSEBOX_REQUIRES(mu) {
    return static_cast<std::size_t>(
        std::ranges::count_if(reports, [now](const auto& entry) { return entry.second > now; }));
  }
};

Fleet::Fleet(FleetLink& link, std::string instance_id, FleetOptions options)
    : link_(link),
      instance_(std::move(instance_id)),
      options_(std::move(options)),
      clock_(options_.clock != nullptr ? *options_.clock : DefaultClock()) {
  link_.SetReceiver(this);
}

Fleet::~Fleet() {
  link_.SetReceiver(nullptr);
  std::map<std::string, std::shared_ptr<Member>, std::less<>> members;
  {
    Locked lock(mu_);
    members.swap(members_);
  }
  for (auto& [name, member] : members) {
    member->breaker->SetCoordination({});
  }
}

void Fleet::Attach(CircuitBreaker& breaker) {
  auto member = std::make_shared<Member>();
  member->breaker = &breaker;
  member->name = breaker.name();
  std::shared_ptr<Member> replaced;
  {
    Locked lock(mu_);
    auto& slot = members_[member->name];
    replaced = std::exchange(slot, member);
  }
  if (replaced && replaced->breaker != &breaker) {
    replaced->breaker->SetCoordination({});
  }
  CircuitBreaker::Coordination coordination;
  coordination.on_transition = [this, member](const TransitionEvent& event) {
    OnLocalTransition(*member, event);
  };
  coordination.may_probe = [this, member](std::uint64_t generation, std::uint32_t in_flight) {
    if (!link_.connected()) {
      return true;  // the local rules at once: the breaker's own probe cap
    }
    return member->leased_generation.load(std::memory_order_acquire) == generation &&
           in_flight < member->leased_slots.load(std::memory_order_acquire);
  };
  breaker.SetCoordination(std::move(coordination));
  link_.Watch(member->name);
}

void Fleet::Detach(CircuitBreaker& breaker) {
  std::shared_ptr<Member> member;
  {
    Locked lock(mu_);
    auto it = members_.find(breaker.name());
    if (it == members_.end() || it->second->breaker != &breaker) {
      return;
    }
    member = it->second;
    members_.erase(it);
  }
  breaker.SetCoordination({});
  link_.ReleaseLease(member->name);
}

std::shared_ptr<Fleet::Member> Fleet::Find(std::string_view breaker) const {
  Locked lock(mu_);
  auto it = members_.find(breaker);
  return it == members_.end() ? nullptr : it->second;
}

FleetStats Fleet::Stats() const {
  Locked lock(mu_);
  FleetStats s = stats_;
  s.connected = link_.connected();
  s.peers_seen = peers_.size();
  return s;
}

std::size_t Fleet::FailingPeers(std::string_view breaker) const {
  auto member = Find(breaker);
  if (!member) {
    return 0;
  }
  Locked lock(member->mu);
  return member->LiveReports(clock_.Now());
}

std::optional<std::string> Fleet::LeaseHolder(std::string_view breaker) const {
  auto member = Find(breaker);
  if (!member) {
    return std::nullopt;
  }
  Locked lock(member->mu);
  return member->lease_holder;
}

void Fleet::OnLocalTransition(Member& member, const TransitionEvent& event) {
  if (event.cause == TransitionCause::kReconfigured) {
    return;  // same state, nothing for the fleet
  }
  if (event.to == State::kHalfOpen) {
    std::uint64_t generation = 0;
    {
      Locked lock(member.mu);
      member.half_open_generation = event.generation;
      member.lease_wanted = true;
      member.lease_holder.reset();
      generation = member.generation;
    }
    const CircuitBreakerConfig config = member.breaker->config();
    if (link_.connected()) {
      link_.AcquireLease(member.name, generation, config.half_open_max_probes, config.call_timeout);
    }
    return;
  }
  // A trip (or failed probe) of this instance's own making stays here: its peers' routes to the
  // dependency may be fine. Asked outside every lock: the check is the application's.
  const bool automatic_open = event.to == State::kOpen &&
                              event.cause != TransitionCause::kOperator &&
                              event.cause != TransitionCause::kFleet;
  const bool kept_local =
      automatic_open && options_.local_trouble && options_.local_trouble(member.name);
  bool was_wanted = false;
  {
    Locked lock(member.mu);
    was_wanted = std::exchange(member.lease_wanted, false);
    member.half_open_generation = 0;
    member.lease_holder.reset();
    member.open_kept_local = kept_local;
    if (event.to == State::kClosed && event.cause != TransitionCause::kFleet) {
      member.reports.clear();  // a good probe here: the failures reported are over
    }
  }
  member.leased_slots.store(0, std::memory_order_release);
  member.leased_generation.store(0, std::memory_order_release);
  if (kept_local) {
    Locked lock(mu_);
    ++stats_.trips_kept_local;
  } else if (event.cause != TransitionCause::kFleet) {
    // Publish before giving up the lease: a peer then learns the result before it could win a
    // slot.
    PublishCurrent(member, &event);
  }
  if (was_wanted) {
    link_.ReleaseLease(member.name);
  }
}

// With an event: a new local transition, one generation past the newest known. Without: the
// current state again under the generation it was published with (after a reconnect), if this
// instance sent the newest one.
void Fleet::PublishCurrent(Member& member, const TransitionEvent* event) {
  FleetMessage message;
  message.breaker = member.name;
  message.sender = instance_;
  message.state = event != nullptr ? event->to : member.breaker->state();
  if (message.state == State::kHalfOpen) {
    return;
  }
  message.by_operator = event != nullptr ? event->cause == TransitionCause::kOperator
                                         : IsOperatorState(message.state);
  if (message.state == State::kOpen) {
    // At least 1 ns: the wire form refuses an OPEN with nothing left (DecodeFleetMessage); a
    // cooldown that ran out before this republish is as good as due.
    message.remaining_cooldown = std::max(member.breaker->retry_after(), Duration(1));
  }
  {
    Locked lock(member.mu);
    if (event != nullptr) {
      // Saturates: a wrapped generation (0) would be the oldest for every peer, and every later
      // transition of this instance discarded until all restart.
      member.generation = std::min(member.generation + 1, kMaxFleetGeneration);
      member.sender = instance_;
    } else if (member.sender != instance_ ||
               (message.state == State::kOpen && member.open_kept_local)) {
      return;
    }
    message.generation = member.generation;
  }
  const bool connected = link_.connected();
  link_.Publish(message);
  if (connected) {
    Locked lock(mu_);
    ++stats_.messages_sent;
  }
}

void Fleet::CountRefused() {
  Locked lock(mu_);
  ++stats_.messages_refused;
}

void Fleet::NotePeer(const std::string& sender) {
  const std::uint64_t now = ++peer_clock_;
  if (auto it = peers_.find(sender); it != peers_.end()) {
    it->second = now;
    return;
  }
  if (peers_.size() >= kMaxFleetPeers) {
    // Forget the one heard from least recently: a scan of kMaxFleetPeers entries, only when a
    // new sender shows up with the table full.
    auto oldest = peers_.begin();
    for (auto it = peers_.begin(); it != peers_.end(); ++it) {
      if (it->second < oldest->second) {
        oldest = it;
      }
    }
    peers_.erase(oldest);
  }
  peers_.emplace(sender, now);
}

void Fleet::OnMessage(const FleetMessage& message) {
  // Every link's messages are checked here, whatever the link checked already: what a peer sends
  // must never break this instance (docs/fleet.md, "Bounds").
  if (CheckFleetMessage(message)) {
    CountRefused();
    return;
  }
  auto member = Find(message.breaker);
  // A generation far ahead of the newest known one (below, under the member's lock) is forged or
  // corrupted: adopted, it would push the fleet to kMaxFleetGeneration, where no new transition
  // wins any more. (Known generations are at most kMaxFleetGeneration: the sum cannot wrap.)
  if (message.sender == instance_) {
    // Our own message read back (a stored state): only the generation matters.
    if (member) {
      Locked lock(member->mu);
      if (message.generation > member->generation + kMaxFleetGenerationLead) {
        Locked stats_lock(mu_);
        ++stats_.messages_refused;
      } else if (IsNewer(message, member->generation, member->sender)) {
        member->generation = message.generation;
        member->sender = message.sender;
      }
    }
    return;
  }
  {
    Locked lock(mu_);
    ++stats_.messages_received;
    NotePeer(message.sender);
  }
  if (!member) {
    return;
  }
  CircuitBreaker& breaker = *member->breaker;
  // A peer's own OPEN (a trip or a failed probe) is its report of the dependency failing; with a
  // quorum, this instance follows only once enough distinct peers reported within their cooldown.
  const bool peer_failing = message.state == State::kOpen && !message.by_operator;
  const bool by_quorum = options_.quorum > 1 && peer_failing;
  const Duration longest_wait = by_quorum ? breaker.config().open_wait_max() : Duration(0);
  {
    Locked lock(member->mu);
    if (message.generation > member->generation + kMaxFleetGenerationLead) {
      Locked stats_lock(mu_);
      ++stats_.messages_refused;
      return;
    }
    const bool newer = IsNewer(message, member->generation, member->sender);
    const TimePoint now = clock_.Now();
    bool quorum_met = false;
    // Reports count from the newest generation only: two instances tripping at once send the
    // same one, and a replayed old OPEN counts for nothing.
    if (by_quorum && (newer || message.generation == member->generation)) {
      member->NoteReport(message.sender, now + std::min(message.remaining_cooldown, longest_wait),
                         now);
      quorum_met = member->LiveReports(now) >= options_.quorum;
    }
    if (message.state == State::kClosed && newer) {
      member->reports.clear();  // a good probe somewhere: the failures reported are over
    }
    if (!newer) {
      // A concurrent trip (same generation, the lesser sender id) that completes the quorum
      // still opens this instance; anything else older is dropped.
      if (!quorum_met) {
        Locked stats_lock(mu_);
        ++stats_.messages_stale;
        return;
      }
    } else {
      member->generation = message.generation;
      member->sender = message.sender;
      if (by_quorum && !quorum_met) {
        Locked stats_lock(mu_);
        ++stats_.opens_below_quorum;
        return;
      }
    }
  }
  const State local = breaker.state();
  if (!message.by_operator) {
    // Operator states are left only by command; an automatic CLOSED changes nothing in CLOSED.
    if (IsOperatorState(local) || (message.state == State::kClosed && local == State::kClosed)) {
      return;
    }
  }
  if (breaker.Adopt(message.state, message.remaining_cooldown)) {
    Locked lock(mu_);
    ++stats_.transitions_adopted;
  }
}

void Fleet::OnLease(std::string_view breaker, std::uint64_t generation, std::uint32_t slots,
                    std::string_view holder) {
  auto member = Find(breaker);
  if (!member) {
    return;
  }
  Locked lock(member->mu);
  if (!member->lease_wanted || generation != member->generation) {
    return;  // an answer for a HALF_OPEN period that is over
  }
  if (slots > 0) {
    member->leased_slots.store(slots, std::memory_order_release);
    member->leased_generation.store(member->half_open_generation, std::memory_order_release);
    member->lease_holder = instance_;
    Locked stats_lock(mu_);
    ++stats_.leases_won;
  } else if (!holder.empty()) {
    member->lease_holder = std::string(holder);
  }
}

void Fleet::OnConnected() {
  std::vector<std::shared_ptr<Member>> members;
  {
    Locked lock(mu_);
    for (auto& [name, member] : members_) {
      members.push_back(member);
    }
  }
  for (auto& member : members) {
    PublishCurrent(*member, nullptr);  // ours may be newer than what the fleet stored
    std::uint64_t generation = 0;
    bool ask = false;
    {
      Locked lock(member->mu);
      ask = member->lease_wanted && member->leased_generation.load(std::memory_order_relaxed) !=
                                        member->half_open_generation;
      generation = member->generation;
    }
    if (ask) {
      const CircuitBreakerConfig config = member->breaker->config();
      link_.AcquireLease(member->name, generation, config.half_open_max_probes,
                         config.call_timeout);
    }
  }
}

}  // namespace fusebox
