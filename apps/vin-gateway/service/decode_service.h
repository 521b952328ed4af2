// vin-gateway/service/decode_service.h
//
// The decode path: what one request (or one batch) goes through, in the order of
// docs/http-api.md and docs/composition.md. Each step refuses as early and as cheaply as it can,
// and nothing further in is consumed by a request that a step further out turned away:
//
//   validate --bad--> VIN_INVALID (422; never reaches the upstream or the breaker)
//   fresh cache --hit--> OK, source cache (no token, no slot, no permit, no upstream call)
//   single-flight join --follower--> wait for the leader's outcome (consumes nothing)
//   client rate limit --empty bucket--> RATE_LIMITED (the leader abandons; followers re-join)
//   bulkhead --full--> OVERLOADED
//   breaker (`vpic`) --open / probe taken--> CIRCUIT_OPEN / CIRCUIT_HALF_OPEN
//   one budgeted upstream call (fusebox::asio::RunAdmitted: connect, TLS, send, receive; no retry)
//       --timeout--> UPSTREAM_SLOW   --5xx, 429, reset, not vPIC JSON, VIN echo mismatch-->
//       UPSTREAM_ERROR   --any parseable vPIC answer--> OK, cached with its fetch time
//       --the gateway short of descriptors or memory--> LOCAL_OVERLOADED (the breaker records
//       kIgnored: a local shortage is never the upstream's failure)
//
// The answer deadline (DecodeServiceOptions::answer_deadline, --answer-deadline): a single decode
// that has a stale copy or an offline decode to fall back on waits for its live call (its own or
// the flight it joined) at most that long; then it is answered with the fallback as
// UPSTREAM_LATE, and the live call goes on within its budget and fills the cache for the next
// request. Without a fallback the request waits for the live answer as before. A batch applies it
// per VIN: at the deadline the VINs with a copy get it, the others wait for the call.
//
// When the live decode is impossible (CIRCUIT_OPEN, CIRCUIT_HALF_OPEN, UPSTREAM_SLOW,
// UPSTREAM_ERROR, OVERLOADED, LOCAL_OVERLOADED) and a last-good decode is stored, the answer is
// that decode, `stale`, with the reason in `status` (served as 200). Failing that, for all of them
// but LOCAL_OVERLOADED, the offline decoder's answer from NHTSA's vPIC snapshot when the gateway
// has one (`source` "offline", `offline_snapshot`, the reason in `status`, served as 200;
// docs/offline-decode.md): a stale copy came from vPIC itself, so it is preferred. A cache that
// fails (full disk, read-only directory, corruption) is a miss or a dropped write, never an
// upstream outcome.
//
// The leader takes its rate token, bulkhead slot and breaker permit in the request's own
// coroutine, so a refusal (the breaker open above all) costs no more than one cache lookup (the
// in-process front, then at most one awaited backend read, which the local backends complete
// without suspending): no coroutine is spawned and nothing else is waited on. Only an admitted call
// becomes its own detached coroutine (holding the slot and the permit): a client that goes away
// does not cancel it, its outcome is still recorded by the breaker, cached, and given to every
// waiter.
//
// A fresh hit's JSON body is rendered once per stored decode (by core/answer_json.h's AnswerBody,
// the one renderer) and kept in the in-process front (HotDecodes); DecodeAnswer::rendered_body
// carries it to the HTTP layer, which sends it without copying. The steps that never wait
// (validation, the front) are also offered on their own (Begin): the router answers an invalid
// VIN and a fresh hit in the front without a coroutine, and awaits Decode(step, ...) otherwise.
// A 429's Retry-After (capped at 10 minutes) is handed to the breaker (CircuitBreaker::HoldOpen)
// before the outcome is recorded: the breaker then stays OPEN at least that long, and no call or
// probe goes upstream before it has passed.
//
// With active probing (probe_mode = active) the breaker's probe is not a user's request: a
// fusebox::asio::Prober calls Probe() with the gateway's own probe VIN, whose answer refreshes
// the cache for that VIN.
//
// The service also keeps the breaker's last few transitions with their wall-clock times
// (`recent_transitions()`), which `/status` and the web page's status strip show.
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
#include "fusebox/bulkhead.h"
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

struct DecodeServiceDeps {
  Cache& cache;
  VpicClient& client;
  fusebox::CircuitBreaker& breaker;
  fusebox::Bulkhead& bulkhead;
  RateLimiter& limiter;
  fusebox::Clock& clock;
  WallClock& wall_clock;
  GatewayMetrics& metrics;
  // NHTSA's vPIC snapshot for answers when no live decode is possible; null: none.
  const OfflineDecoder* offline = nullptr;
  // Told of every Retry-After the upstream gave (capped), for the log; may be empty.
  std::function<void(fusebox::Duration)> on_upstream_hold = nullptr;
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

  // The time until the upstream may be called again after a 429 (zero when none is pending).
  fusebox::Duration upstream_hold() const noexcept;

  // One probe of the upstream for an active prober: decodes `vin` (no cache read, no rate
  // token, no bulkhead slot: the breaker allows one probe at a time), stores a good answer, and
  // returns the outcome the breaker should record (the prober's budget cancels it when late). A
  // 429's Retry-After holds the breaker open, as for any call.
  boost::asio::awaitable<fusebox::Outcome> Probe(std::string vin);

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
  };

 private:
  using Flights = fusebox::SingleFlight<std::string, Live>;

  // The right to make one upstream call: a bulkhead slot and a breaker permit, taken in that
  // order (a call that cannot run never takes the probe slot).
  struct Admission {
    fusebox::BulkheadPermit slot;
    fusebox::Permit permit;
  };
  // What the cache holds for one key.
  struct Lookup {
    DecodePtr fresh;                                // younger than the TTL
    DecodePtr any_age;                              // the stored decode, fresh or not
    std::shared_ptr<const std::string> fresh_body;  // rendered body of a fresh hit, if kept
  };

  boost::asio::awaitable<void> Lead(Flights::Leader leader, std::string vin, int model_year,
                                    Admission admission);
  // A batch's upstream call, on its own: what it produced goes to `channel` (one message).
  struct BatchFlight {
    Live live;
    std::vector<DecodePtr> decoded;  // in the items' order, on success
  };
  using BatchChannel = boost::asio::experimental::concurrent_channel<void(
      boost::system::error_code, std::shared_ptr<BatchFlight>)>;
  boost::asio::awaitable<void> RunBatchCall(Admission admission, std::vector<BatchItem> items,
                                            std::shared_ptr<BatchChannel> channel);
  fusebox::Result<Admission> Admit(fusebox::Priority priority);
  boost::asio::awaitable<Live> CallUpstream(Admission admission, std::vector<BatchItem> items,
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
};

}  // namespace fusebox::gateway
