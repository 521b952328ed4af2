// vin-gateway/service/decode_service.h
//
// The decode path: what one request (or one batch) goes through, each step refusing as early and
// as cheaply as it can (docs/gateway.md, "What happens to one request", says why and in detail):
//
//   validate --bad--> VIN_INVALID          fresh cache --hit--> OK (source cache)
//   single-flight join --follower--> the leader's outcome
//   client rate limit --empty--> RATE_LIMITED    upstream cap (fixed or adaptive) --full-->
//   OVERLOADED breaker --open / probe taken--> CIRCUIT_OPEN / CIRCUIT_HALF_OPEN /
//   CIRCUIT_RECOVERING throttle (--throttle) --shed--> THROTTLED one budgeted upstream call --> OK
//   (cached) | UPSTREAM_SLOW | UPSTREAM_ERROR | LOCAL_OVERLOADED
//
// An impossible live decode is answered with the stored copy (stale), else the offline decode;
// past the answer deadline a decode with such a fallback gets it as UPSTREAM_LATE while its call
// goes on. Refusals cost one cache lookup (no coroutine is spawned); only an admitted call runs
// as its own detached coroutine, so a client that goes away never cancels it. With active
// probing a fusebox::asio::Prober calls Probe() with the gateway's probe VIN.
//
// Thread safety: all members may be called concurrently from coroutines on any executors, of one
// io_context or of several (vin-gateway runs one per I/O thread): a leader runs on its request's
// executor and a follower's wait completes on its own. Time: the breaker, rate limiter and budgets
// read the injected fusebox::Clock (budget timers are Asio steady timers); cache freshness and
// `fetched_at` read the injected WallClock.
//
// Example:
//   DecodeService service(deps, {.cache_ttl = 30 * 24h});
//   DecodeAnswer answer = co_await service.Decode(path_segment, 0, peer_address);
//   Respond(answer.http_status(), AnswerBody(answer));
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/experimental/concurrent_channel.hpp>
#include <boost/system/error_code.hpp>

#include "core/decode.h"
#include "core/decode_answer.h"
#include "core/decode_status.h"
#include "core/vin.h"
#include "fusebox/admission.h"
#include "fusebox/circuit_breaker.h"
#include "fusebox/clock.h"
#include "fusebox/events.h"
#include "fusebox/single_flight.h"
#include "fusebox/status.h"
#include "offline/offline_decoder.h"
#include "service/cache.h"
#include "service/gateway_metrics.h"
#include "service/hot_decodes.h"
#include "service/rate_limiter.h"
#include "service/transition_log.h"
#include "service/upstream_limits.h"
#include "service/vpic_client.h"

namespace fusebox::gateway {

struct DecodeServiceOptions {
  // Decodes younger than this are served from the cache without an upstream call.
  fusebox::Duration cache_ttl = std::chrono::hours(24 * 30);
  // A follower waits for the leader at most call_timeout plus this.
  fusebox::Duration follower_margin = std::chrono::seconds(1);
  // A 429's Retry-After is capped at this.
  fusebox::Duration max_upstream_retry_after = std::chrono::minutes(10);
  // Parsed decodes kept in process in front of the cache backend (HotDecodes); 0 disables.
  // Default 4096 (a few MB), range [0, cache max entries].
  std::size_t hot_entries = 4096;
  // A single decode whose live call has not answered by then is answered with its stale copy
  // or an offline decode, when there is one (UPSTREAM_LATE); the call goes on. Zero: off.
  fusebox::Duration answer_deadline = fusebox::Duration::zero();
};

// A request's own upstream call that ended after its request was answered (UPSTREAM_LATE: the
// answer deadline served a copy): what the call did, for the log, where the request's own line
// could not say it.
struct LateCall {
  std::string vin;  // the VIN, or "batch:N" for a batch's call of N VINs
  fusebox::Duration latency{0};
  fusebox::Outcome outcome = fusebox::Outcome::kIgnored;  // what the breaker recorded
  std::string detail;                                     // why it failed, "" when it did not
};

struct DecodeServiceDeps {
  Cache& cache;
  VpicClient& client;
  fusebox::CircuitBreaker& breaker;
  UpstreamLimits& limits;  // the cap on calls in flight, and the throttle
  RateLimiter& limiter;
  fusebox::Clock& clock;
  WallClock& wall_clock;
  GatewayMetrics& metrics;
  // NHTSA's vPIC snapshot for answers when no live decode is possible; null: none.
  const OfflineDecoder* offline = nullptr;
  // Told of every Retry-After the upstream gave (capped), for the log; may be empty.
  std::function<void(fusebox::Duration)> on_upstream_hold = nullptr;
  // Measures upstream latency for the log and the histogram; null: `clock`. The breaker's clock
  // may be coarse (a kernel tick, 4 ms): a 1.4 ms call read as 0 there.
  fusebox::Clock* latency_clock = nullptr;
  // Told of every request's own upstream call that ended after its request was answered (an
  // answer deadline's UPSTREAM_LATE); may be empty.
  std::function<void(const LateCall&)> on_late_call = nullptr;
};

class DecodeService {
 public:
  DecodeService(DecodeServiceDeps deps, DecodeServiceOptions options);
  ~DecodeService();
  DecodeService(const DecodeService&) = delete;
  DecodeService& operator=(const DecodeService&) = delete;

  // One VIN (the raw, percent-decoded path segment). model_year 0: none.
  boost::asio::awaitable<DecodeAnswer> Decode(std::string raw_vin, int model_year,
                                              std::string client);

  // The same decode in two steps, for a caller that answers without a coroutine when it can:
  // Begin does what never waits (validation, the in-process front). When the step is `done`, its
  // answer is the decode's (an invalid VIN, a fresh hit; counted in the metrics as Decode counts
  // them); else Decode(step, client) goes on from there (the backend, a flight, the upstream).
  struct Step {
    DecodeAnswer answer;
    bool done = false;
    // For Decode(step, ...): the cache key, the front's copy (not fresh; may be null), and the
    // wall time the front was judged at.
    int model_year = 0;
    std::string key;
    DecodePtr front_copy;
    WallTime looked_at{};
  };
  Step Begin(std::string_view raw_vin, int model_year);
  boost::asio::awaitable<DecodeAnswer> Decode(Step step, std::string client);

  // Up to 50 VINs (the caller checks the count): invalid ones answered locally, fresh cache hits
  // from the cache, the rest in one upstream DecodeVINValuesBatch call with batch priority. Each
  // distinct VIN sent upstream takes one of `client`'s rate tokens: when the bucket holds fewer,
  // the first VINs (in the batch's order) that it has tokens for go, the others are RATE_LIMITED.
  boost::asio::awaitable<std::vector<DecodeAnswer>> DecodeBatch(std::vector<std::string> raw_vins,
                                                                int model_year, std::string client);

  // One VIN from the offline decoder only (`?source=offline`): never the cache or the upstream.
  // Precondition: offline_snapshot() (the router answers 404 otherwise).
  DecodeAnswer DecodeOffline(std::string_view raw_vin, int model_year);

  // The offline snapshot's date ("YYYY-MM-DD"); nullopt when the gateway has no offline decoder.
  std::optional<std::string> offline_snapshot() const;

  // Leader coroutines still running (each ends within call_timeout).
  std::int64_t leaders_running() const noexcept {
    return leaders_running_.load(std::memory_order_relaxed);
  }
  std::uint64_t single_flight_in_flight() const { return flights_.in_flight(); }

  // Whether most of the last eight failed vPIC calls (at most eight) failed for this instance's
  // own network (UpstreamReply::own_network): the fleet then keeps a trip here
  // (FleetOptions::local_trouble, --fleet-quorum in docs/fleet.md).
  bool recent_failures_own_network() const noexcept;

  // The time until the upstream may be called again after a 429 (zero when none is pending).
  fusebox::Duration upstream_hold() const noexcept;

  // One probe of the upstream for an active prober: decodes `vin` (no cache read, no rate
  // token, no bulkhead slot: the breaker allows one probe at a time), stores a good answer, and
  // returns the outcome the breaker should record (the prober's budget cancels it when late). A
  // 429's Retry-After holds the breaker open, as for any call.
  boost::asio::awaitable<fusebox::Outcome> Probe(std::string vin);

  fusebox::Clock& latency_clock() const noexcept {
    return deps_.latency_clock != nullptr ? *deps_.latency_clock : deps_.clock;
  }

  // The breaker this service calls through, and its last transitions (oldest first, at most
  // TransitionLog::kDefaultCapacity), stamped with the injected WallClock.
  const fusebox::CircuitBreaker& breaker() const noexcept { return deps_.breaker; }
  std::vector<TransitionRecord> recent_transitions() const { return transitions_.Recent(); }

  // What one live decode produced; shared by every waiter of a flight. Public for the
  // implementation's helpers.
  struct Live {
    DecodePtr decode;                          // set on success
    fusebox::Error error{};                    // otherwise
    std::optional<fusebox::Duration> latency;  // set when an upstream call was made
    std::string detail;                        // why the upstream call failed, for the log
    bool local = false;  // the gateway's own shortage (LOCAL_OVERLOADED), not `error`
    std::optional<fusebox::Outcome> outcome;  // what the breaker recorded, when a call was made
  };

  // A request's own call, shared by the request and the coroutine making the call, so that a
  // call that ends after its request was answered (the answer deadline) still reaches the log
  // (on_late_call), and one that ended just before reaches the request's line.
  struct CallNote {
    std::atomic<int> state{0};  // 0: running; then ended, or answered first (decode_service.cc)
    std::string vin;            // LateCall::vin
    Live live;                  // written before `state` becomes kCallEnded
  };

 private:
  using Flights = fusebox::SingleFlight<std::string, Live>;

  // What the cache holds for one key.
  struct Lookup {
    DecodePtr fresh;                                // younger than the TTL
    DecodePtr any_age;                              // the stored decode, fresh or not
    std::shared_ptr<const std::string> fresh_body;  // rendered body of a fresh hit, if kept
  };

  boost::asio::awaitable<void> Lead(Flights::Leader leader, std::string vin, int model_year,
                                    fusebox::Admission admission, std::shared_ptr<CallNote> note);
  // The call of `note` ended with `live`: logged as a LateCall when its request was answered.
  void CallEnded(CallNote& note, const Live& live);
  // The request of `note` is answered before its call ended, as far as it knows: the call's
  // latency and outcome go to `answer` when it did end meanwhile, else to the log when it ends.
  static void AnsweredBeforeCall(CallNote& note, DecodeAnswer& answer);
  // A batch's upstream call, on its own: what it produced goes to `channel` (one message).
  struct BatchFlight {
    Live live;
    std::vector<DecodePtr> decoded;  // in the items' order, on success
  };
  using BatchChannel = boost::asio::experimental::concurrent_channel<void(
      boost::system::error_code, std::shared_ptr<BatchFlight>)>;
  boost::asio::awaitable<void> RunBatchCall(fusebox::Admission admission,
                                            std::vector<BatchItem> items,
                                            std::shared_ptr<BatchChannel> channel,
                                            std::shared_ptr<CallNote> note);
  // The right to make one upstream call: the cap's slot, the breaker's permit and the throttle's
  // ticket (fusebox::Admit's order: a call that cannot run never takes the probe slot).
  fusebox::Result<fusebox::Admission> Admit(fusebox::Priority priority);
  boost::asio::awaitable<Live> CallUpstream(fusebox::Admission admission,
                                            std::vector<BatchItem> items,
                                            fusebox::Priority priority,
                                            std::vector<DecodePtr>* decoded);
  // The front, then (when the front has no fresh copy) one backend read.
  boost::asio::awaitable<Lookup> LookUp(std::string key);
  // The front alone, judged at `now`: `fresh` and `fresh_body` set on a fresh copy, `any_age`
  // whatever it holds.
  Lookup LookUpFront(const std::string& key, WallTime now);
  // The backend, for a key whose front copy (`front`, may be null) was not fresh at `now`.
  boost::asio::awaitable<Lookup> LookUpBackend(std::string key, DecodePtr front, WallTime now);
  void AnswerFresh(DecodeAnswer& answer, const std::string& key, Lookup lookup);
  boost::asio::awaitable<void> Store(DecodePtr decode);
  // Store, then one leader fewer (a store spawned on its own, counted while it runs).
  boost::asio::awaitable<void> StoreThenRelease(DecodePtr decode);
  // Fills `answer` from `live`. When the live decode is impossible it looks for a stale copy:
  // `stored` when the caller has just looked (nullopt: look now).
  boost::asio::awaitable<void> Finish(DecodeAnswer& answer, const Live& live,
                                      const std::string& key, int model_year,
                                      std::optional<DecodePtr> stored = std::nullopt);
  // Fills `answer` with the offline decode of answer.vin (precondition: deps_.offline).
  void AnswerOffline(DecodeAnswer& answer, int model_year);
  void HoldUpstream(fusebox::Duration retry_after) noexcept;
  // What the vehicle database did when a call last failed (the words of CIRCUIT_OPEN).
  void NoteProblem(UpstreamResult result, bool timed_out) noexcept;
  // One more failed vPIC call for recent_failures_own_network().
  void NoteFailure(bool own_network) noexcept;
  // Answers `answer` with its stale copy or offline decode as UPSTREAM_LATE (the answer
  // deadline passed). Precondition: `stale` is not null or the gateway has an offline decoder.
  void AnswerLate(DecodeAnswer& answer, DecodePtr stale, int model_year);
  // A batch's VINs that need the upstream: their answers' indexes, the copies stored for them
  // and the distinct items to ask vPIC for.
  struct BatchPlan {
    std::vector<std::size_t> pending;
    std::vector<DecodePtr> stored;  // per answer: the copy the answer deadline may serve
    std::vector<BatchItem> items;
    std::map<std::string, std::size_t, std::less<>> item_index;  // VIN -> its item
  };
  // Validates and looks up every VIN: the invalid and the fresh are answered in `answers`, the
  // rest planned.
  boost::asio::awaitable<BatchPlan> PlanBatch(const std::vector<std::string>& raw_vins,
                                              int model_year, std::vector<DecodeAnswer>& answers);
  // Takes the client's tokens for the plan's items: the VINs past them are answered
  // RATE_LIMITED and leave the plan.
  void RationBatch(BatchPlan& plan, std::vector<DecodeAnswer>& answers, const std::string& client);
  // Answers `answer` RATE_LIMITED: the client's bucket refills enough in `wait`.
  void AnswerRateLimited(DecodeAnswer& answer, fusebox::Duration wait);

  // What waiting on a flight gave: its result, or none when the wait ended first; `cut_short`
  // when the answer deadline ended it before the request's own deadline (a copy is served).
  struct FlightWait {
    std::shared_ptr<const Flights::FlightResult> result;
    bool cut_short = false;
  };
  // Waits for `follower`'s flight until `deadline`, or until the answer deadline when the
  // request has a copy to fall back on (`fallback`).
  boost::asio::awaitable<FlightWait> AwaitFlight(Flights::Follower follower,
                                                 fusebox::TimePoint deadline, bool fallback);

  DecodeServiceDeps deps_;
  DecodeServiceOptions options_;
  Flights flights_;
  TransitionLog transitions_;
  HotDecodes hot_;
  fusebox::ListenerId observer_ = 0;
  // Monotonic ns (deps_.clock) before which no upstream call is made while the breaker is not
  // CLOSED (a 429's Retry-After); 0 when none. Written by leaders, cleared on CLOSED.
  std::atomic<std::int64_t> hold_until_ns_{0};
  std::atomic<std::int64_t> leaders_running_{0};
  std::atomic<UpstreamProblem> last_problem_{UpstreamProblem::kUnknown};
  std::atomic<std::uint32_t> failure_kinds_{0};  // NoteFailure
};

}  // namespace fusebox::gateway
