#include "service/decode_service.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <exception>
#include <map>
#include <new>
#include <utility>
#include <variant>

#include <fmt/format.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/concurrent_channel.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/answer_json.h"
#include "core/vpic_parser.h"
#include "fusebox/asio.h"

namespace fusebox::gateway {
namespace {

namespace net = boost::asio;
using fusebox::Duration;
using fusebox::Error;
using fusebox::ReasonCode;

// One upstream attempt as the classifier saw it.
struct Attempt {
  fusebox::Outcome outcome = fusebox::Outcome::kFailure;
  UpstreamResult result = UpstreamResult::kTransport;
  std::optional<VpicAnswer> answer;     // on success
  std::optional<Duration> retry_after;  // a 429's Retry-After
  bool refused_for_load = false;        // 429 or 503: vPIC said it is too busy
  bool own_network = false;             // UpstreamReply::own_network
  std::string detail;
};

// What the op saw, kept in the caller's frame (Run returns only the Error of a failed call).
struct Seen {
  bool called = false;
  UpstreamResult result = UpstreamResult::kTransport;
  bool refused_for_load = false;
  std::optional<Duration> retry_after;
  std::string detail;
};

// The rows of `answer` that answer for `vin` (the VIN echo check).
const VpicRow* FindRow(const VpicAnswer& answer, const std::string& vin) {
  for (const VpicRow& row : answer.rows) {
    if (row.vin == vin) {
      return &row;
    }
  }
  return nullptr;
}

// The classifier: transport trouble, 429, any non-200 status, a body that is not vPIC JSON and
// an answer that does not echo every VIN asked for are failures; any parseable vPIC answer that
// does is a success, however sparse.
Attempt Classify(UpstreamReply reply, const std::vector<BatchItem>& items, Duration max_hold) {
  Attempt attempt;
  if (reply.transport == UpstreamReply::Transport::kLocal) {
    attempt.outcome = fusebox::Outcome::kIgnored;  // ours, not the upstream's
    attempt.result = UpstreamResult::kLocal;
    attempt.detail = fmt::format("local: {}", reply.detail);
    return attempt;
  }
  if (!reply.ok()) {
    attempt.result = UpstreamResult::kTransport;
    attempt.own_network = reply.own_network;
    attempt.detail = fmt::format("{}: {}", ToString(reply.transport), reply.detail);
    return attempt;
  }
  if (reply.status != 200) {
    attempt.result = UpstreamResult::kHttpError;
    attempt.detail = fmt::format("HTTP {}", reply.status);
    attempt.refused_for_load = reply.status == 429 || reply.status == 503;
    if (reply.status == 429 && reply.retry_after) {
      attempt.retry_after = std::min(*reply.retry_after, max_hold);
    }
    return attempt;
  }
  auto parsed = ParseVpic(reply.body);
  if (!parsed) {
    attempt.result = UpstreamResult::kBadBody;
    attempt.detail = fmt::format("body: {}", ToString(parsed.error()));
    return attempt;
  }
  for (const BatchItem& item : items) {
    if (FindRow(*parsed, item.vin) == nullptr) {
      attempt.result = UpstreamResult::kBadBody;
      attempt.detail = fmt::format("no answer row for {}", item.vin);
      return attempt;
    }
  }
  attempt.outcome = fusebox::Outcome::kSuccess;
  attempt.result = UpstreamResult::kOk;
  attempt.answer = std::move(*parsed);
  return attempt;
}

// Keeps the in-flight gauge right however the op ends (a cancelled op may end by exception).
class InFlight {
 public:
  explicit InFlight(GatewayMetrics& metrics) : metrics_(metrics) { metrics_.UpstreamStarted(); }
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;
  ~InFlight() { metrics_.UpstreamFinished(); }

 private:
  GatewayMetrics& metrics_;
};

// The one fetched later (either may be null).
DecodePtr Younger(DecodePtr a, DecodePtr b) {
  if (a == nullptr || (b != nullptr && b->fetched_at > a->fetched_at)) {
    return b;
  }
  return a;
}

// What a live decode that died of the gateway's own shortage says: the breaker was told
// kIgnored (or was never asked), and the answer is LOCAL_OVERLOADED.
DecodeService::Live LocalShortage(std::string detail) {
  DecodeService::Live live;
  live.local = true;
  live.error = Error{ReasonCode::kOverloaded, std::chrono::seconds(1)};
  live.detail = std::move(detail);
  return live;
}

void AnswerInvalid(DecodeAnswer& answer, const VinCheck& check, std::size_t raw_size) {
  answer.status = DecodeStatus::kVinInvalid;
  answer.vin_readable = raw_size <= kMaxVinSegment;
  answer.vin = answer.vin_readable ? SanitizeUtf8(check.vin) : std::string();
  answer.problems = check.problems;
  answer.message = check.Summary();
}

}  // namespace

DecodeService::DecodeService(DecodeServiceDeps deps, DecodeServiceOptions options)
    : deps_(std::move(deps)), options_(options), hot_(options.hot_entries) {
  // An observer, not a listener: the breaker's CLOSED path stays lock-free.
  observer_ = deps_.breaker.AddTransitionObserver([this](const fusebox::TransitionEvent& t) {
    transitions_.Record(t, deps_.wall_clock.Now());
    if (t.to == fusebox::State::kClosed) {
      hold_until_ns_.store(0, std::memory_order_relaxed);
    }
  });
}

DecodeService::~DecodeService() { deps_.breaker.RemoveTransitionObserver(observer_); }

Duration DecodeService::upstream_hold() const noexcept {
  const std::int64_t hold = hold_until_ns_.load(std::memory_order_relaxed);
  const std::int64_t now = deps_.clock.Now().time_since_epoch().count();
  return hold > now ? Duration(hold - now) : Duration::zero();
}

void DecodeService::NoteFailure(bool own_network) noexcept {
  // Low 8 bits: the kinds of the last eight failures (1: own network), newest in bit 0; above
  // them, how many of the eight are known.
  std::uint32_t seen = failure_kinds_.load(std::memory_order_relaxed);
  std::uint32_t next = 0;
  do {
    const std::uint32_t known = std::min<std::uint32_t>((seen >> 8) + 1, 8);
    next = (known << 8) | (((seen << 1) | (own_network ? 1U : 0U)) & 0xffU);
  } while (!failure_kinds_.compare_exchange_weak(seen, next, std::memory_order_relaxed));
}

bool DecodeService::recent_failures_own_network() const noexcept {
  const std::uint32_t kinds = failure_kinds_.load(std::memory_order_relaxed);
  const std::uint32_t known = kinds >> 8;
  const std::uint32_t mask = (1U << known) - 1U;
  return known > 0 && 2 * static_cast<std::uint32_t>(std::popcount(kinds & mask)) > known;
}

void DecodeService::NoteProblem(UpstreamResult result, bool timed_out) noexcept {
  UpstreamProblem problem = UpstreamProblem::kSlow;  // a timeout, a refused or reset connection
  if (!timed_out && (result == UpstreamResult::kHttpError || result == UpstreamResult::kBadBody)) {
    problem = UpstreamProblem::kErrors;
  }
  if (result != UpstreamResult::kLocal) {
    last_problem_.store(problem, std::memory_order_relaxed);
  }
}

void DecodeService::AnswerRateLimited(DecodeAnswer& answer, Duration wait) {
  answer.status = DecodeStatus::kRateLimited;
  answer.retry_after = wait;
  answer.message = std::string(DefaultMessage(answer.status));
  deps_.metrics.CountAnswer(answer.status, answer.source, false);
}

void DecodeService::AnswerLate(DecodeAnswer& answer, DecodePtr stale, int model_year) {
  answer.status = DecodeStatus::kUpstreamLate;
  if (stale != nullptr) {
    answer.decode = std::move(stale);
    answer.source = Source::kCache;
    answer.stale = true;
    answer.message = std::string(DefaultMessage(DecodeStatus::kUpstreamLate));
  } else {
    AnswerOffline(answer, model_year);
  }
  deps_.metrics.CountAnswer(answer.status, answer.source, answer.stale);
}

void DecodeService::HoldUpstream(Duration retry_after) noexcept {
  // The breaker keeps every call and probe away until then (it may open on this very outcome,
  // which is recorded after this); the figure here is for /status.
  deps_.breaker.HoldOpen(retry_after);
  if (deps_.on_upstream_hold) {
    deps_.on_upstream_hold(retry_after);
  }
  const std::int64_t until = (deps_.clock.Now() + retry_after).time_since_epoch().count();
  std::int64_t current = hold_until_ns_.load(std::memory_order_relaxed);
  while (current < until &&
         !hold_until_ns_.compare_exchange_weak(current, until, std::memory_order_relaxed)) {
  }
}

net::awaitable<DecodeService::Lookup> DecodeService::LookUp(std::string key) {
  const WallTime now = deps_.wall_clock.Now();
  Lookup front = LookUpFront(key, now);
  if (front.fresh != nullptr) {
    co_return front;
  }
  co_return co_await LookUpBackend(std::move(key), std::move(front.any_age), now);
}

DecodeService::Lookup DecodeService::LookUpFront(const std::string& key, WallTime now) {
  HotDecodes::Entry hot = hot_.Lookup(key);
  if (hot.decode != nullptr && now - hot.decode->fetched_at < options_.cache_ttl) {
    return Lookup{hot.decode, hot.decode, std::move(hot.fresh_body)};
  }
  return Lookup{nullptr, std::move(hot.decode), nullptr};
}

net::awaitable<DecodeService::Lookup> DecodeService::LookUpBackend(std::string key, DecodePtr front,
                                                                   WallTime now) {
  // Not in the front, or too old there: the backend may hold a younger copy (a front that
  // evicted and re-read, or a backend shared between gateways, as a redis:// one will be).
  // A backend that fails is a miss (Cache never throws by contract; one that does anyway, or a
  // payload that cannot be parsed for want of memory, is a miss too, never an upstream outcome).
  std::optional<fusebox::gateway::Decode> decode;
  try {
    std::optional<CacheEntry> entry = co_await deps_.cache.Get(key);
    if (entry) {
      decode = DeserializeDecode(entry->payload);
    }
  } catch (const std::exception&) {
    decode.reset();
  }
  if (!decode) {
    co_return Lookup{nullptr, std::move(front), nullptr};
  }
  DecodePtr shared = std::make_shared<const fusebox::gateway::Decode>(std::move(*decode));
  if (front != nullptr && front->fetched_at > shared->fetched_at) {
    shared = std::move(front);
  }
  hot_.Put(key, shared);
  if (now - shared->fetched_at < options_.cache_ttl) {
    co_return Lookup{shared, shared, nullptr};
  }
  co_return Lookup{nullptr, std::move(shared), nullptr};
}

void DecodeService::AnswerFresh(DecodeAnswer& answer, const std::string& key, Lookup lookup) {
  answer.decode = std::move(lookup.fresh);
  answer.source = Source::kCache;
  answer.message = std::string(DefaultMessage(DecodeStatus::kOk));
  // The body of a fresh hit depends only on the decode (the VIN, its check digit, the vehicle):
  // render it once and keep it next to the decode. A stored decode for another VIN (a damaged
  // backend row) is answered as it is and its body is not kept.
  if (lookup.fresh_body != nullptr) {
    answer.rendered_body = std::move(lookup.fresh_body);
  } else if (answer.decode->vin == answer.vin) {
    answer.rendered_body = std::make_shared<const std::string>(AnswerBody(answer));
    hot_.AttachFreshBody(key, answer.decode, answer.rendered_body);
  }
  deps_.metrics.CountFreshHit();
  deps_.metrics.CountAnswer(answer.status, answer.source, false);
}

net::awaitable<void> DecodeService::Store(DecodePtr decode) {
  std::string key = CacheKey(decode->vin, decode->model_year);
  hot_.Put(key, decode);
  // A cache that cannot take the entry (out of memory, a backend that throws) drops it: the
  // decode is still answered live, and nothing of it reaches the breaker (its outcome is
  // recorded already) or the answer.
  try {
    CacheEntry entry{SerializeDecode(*decode), decode->fetched_at};
    co_await deps_.cache.Put(std::move(key), std::move(entry));
  } catch (const std::exception&) {
    // Dropped, like any failed write (the backend counts its own errors).
  }
}

net::awaitable<void> DecodeService::Finish(DecodeAnswer& answer, const Live& live,
                                           const std::string& key, int model_year,
                                           std::optional<DecodePtr> stored) {
  answer.upstream_latency = live.latency;
  answer.upstream_outcome = live.outcome;
  answer.upstream_detail = live.detail;
  if (live.decode) {
    answer.status = DecodeStatus::kOk;
    answer.source = Source::kLive;
    answer.decode = live.decode;
    answer.message = std::string(DefaultMessage(DecodeStatus::kOk));
  } else {
    answer.status = live.local ? DecodeStatus::kLocalOverloaded : FromReason(live.error.code);
    answer.retry_after = live.error.retry_after;
    if (answer.status == DecodeStatus::kCircuitOpen ||
        answer.status == DecodeStatus::kCircuitHalfOpen) {
      answer.upstream_problem = last_problem_.load(std::memory_order_relaxed);
    }
    answer.message = std::string(MessageFor(answer.status, answer.upstream_problem));
    if (AllowsStale(answer.status)) {
      if (!stored) {
        Lookup found = co_await LookUp(key);
        stored = std::move(found.any_age);
      }
      if (*stored != nullptr) {
        answer.decode = std::move(*stored);
        answer.source = Source::kCache;
        answer.stale = true;
        answer.message = std::string(kStaleMessage);
      } else if (deps_.offline != nullptr && answer.status != DecodeStatus::kLocalOverloaded) {
        AnswerOffline(answer, model_year);
      }
    }
  }
  deps_.metrics.CountAnswer(answer.status, answer.source, answer.stale);
}

void DecodeService::AnswerOffline(DecodeAnswer& answer, int model_year) {
  const auto start = std::chrono::steady_clock::now();
  answer.decode = std::make_shared<const fusebox::gateway::Decode>(deps_.offline->Decode(
      answer.vin, model_year == 0 ? std::nullopt : std::optional<int>(model_year)));
  deps_.metrics.ObserveOffline(std::chrono::steady_clock::now() - start);
  answer.source = Source::kOffline;
  answer.offline_snapshot = deps_.offline->snapshot_date();
  answer.message = std::string(kOfflineMessage);
}

DecodeAnswer DecodeService::DecodeOffline(std::string_view raw_vin, int model_year) {
  DecodeAnswer answer;
  const VinCheck check = ValidateVin(raw_vin);
  if (!check.ok()) {
    AnswerInvalid(answer, check, raw_vin.size());
  } else {
    answer.vin = check.vin;
    answer.check_digit = check.check_digit;
    AnswerOffline(answer, model_year);
    answer.message = "Decoded from NHTSA's offline database, as asked.";
  }
  deps_.metrics.CountAnswer(answer.status, answer.source, false);
  return answer;
}

std::optional<std::string> DecodeService::offline_snapshot() const {
  if (deps_.offline == nullptr) {
    return std::nullopt;
  }
  return deps_.offline->snapshot_date();
}

fusebox::Result<fusebox::Admission> DecodeService::Admit(fusebox::Priority priority) {
  // The cap, the breaker, the throttle, in the library's order; a breaker refusal's retry_after
  // includes the upstream's own wait (HoldOpen).
  return fusebox::Admit(deps_.limits.Guards(deps_.breaker), priority);
}

namespace {

// What the cap and the throttle learn from one finished call (the breaker learnt it from
// RunAdmitted): vPIC's "too busy" is a drop, a local shortage or a cancellation nothing.
void RecordLimits(fusebox::Admission& admission, const fusebox::Result<Attempt>& result,
                  const Seen& seen) {
  if (seen.called && seen.refused_for_load) {
    admission.RecordRefusedForLoad();
    return;
  }
  fusebox::Outcome outcome = fusebox::Outcome::kIgnored;  // not called, cancelled, local
  if (seen.called && result) {
    outcome = fusebox::Outcome::kSuccess;
  } else if (seen.called && result.error().code == ReasonCode::kUpstreamSlow) {
    outcome = fusebox::Outcome::kTimeout;
  } else if (seen.called && result.error().code == ReasonCode::kUpstreamError) {
    outcome = fusebox::Outcome::kFailure;
  }
  admission.Record(outcome);
}

}  // namespace

net::awaitable<DecodeService::Live> DecodeService::CallUpstream(fusebox::Admission admission,
                                                                std::vector<BatchItem> items,
                                                                fusebox::Priority priority,
                                                                std::vector<DecodePtr>* decoded) {
  Live live;
  Seen seen;
  const bool batch = priority == fusebox::Priority::kBatch;
  const Duration max_hold = options_.max_upstream_retry_after;
  auto op = [this, &items, &seen, batch,
             max_hold](const fusebox::CallContext&) -> net::awaitable<Attempt> {
    InFlight in_flight(deps_.metrics);
    seen.called = true;
    // No co_await inside a conditional expression: GCC 12 destroys its temporaries twice.
    UpstreamReply reply;
    Attempt attempt;
    try {
      if (batch) {
        reply = co_await deps_.client.DecodeBatch(items);
      } else {
        reply = co_await deps_.client.DecodeVin(items.front().vin, items.front().model_year);
      }
      attempt = Classify(std::move(reply), items, max_hold);
    } catch (const std::bad_alloc&) {
      // Out of memory reading or parsing the answer: the gateway's shortage, not a failure.
      attempt = Attempt{};
      attempt.outcome = fusebox::Outcome::kIgnored;
      attempt.result = UpstreamResult::kLocal;
      attempt.detail = "local: out of memory";
    }
    if (attempt.outcome == fusebox::Outcome::kFailure) {
      NoteFailure(attempt.own_network);  // before RunAdmitted records it: a trip asks
    }
    seen.result = attempt.result;
    seen.refused_for_load = attempt.refused_for_load;
    seen.retry_after = attempt.retry_after;
    seen.detail = attempt.detail;
    if (attempt.retry_after) {
      HoldUpstream(*attempt.retry_after);  // before RunAdmitted records the outcome
    }
    co_return attempt;
  };
  const fusebox::TimePoint start = latency_clock().Now();
  fusebox::Result<Attempt> result = co_await fusebox::asio::RunAdmitted(
      deps_.breaker, admission.TakePermit(), std::move(op),
      [](const Attempt& a) { return a.outcome; }, fusebox::CallOptions{.priority = priority});
  RecordLimits(admission, result, seen);
  if (seen.called) {
    const Duration latency = latency_clock().Now() - start;
    live.latency = latency;
    live.outcome = fusebox::Outcome::kIgnored;  // not classified, cancelled, local
    if (result) {
      live.outcome = fusebox::Outcome::kSuccess;
    } else if (result.error().code == ReasonCode::kUpstreamSlow) {
      live.outcome = fusebox::Outcome::kTimeout;
    } else if (result.error().code == ReasonCode::kUpstreamError) {
      live.outcome = fusebox::Outcome::kFailure;
    }
    const bool timed_out = !result && result.error().code == ReasonCode::kUpstreamSlow;
    deps_.metrics.ObserveUpstream(timed_out ? UpstreamResult::kTimeout : seen.result, latency);
  }
  if (!result && seen.called) {
    const bool timed_out = result.error().code == ReasonCode::kUpstreamSlow;
    NoteProblem(seen.result, timed_out);
    if (timed_out) {
      NoteFailure(false);  // vPIC's slowness, whatever the instance's network did before
    }
  }
  if (!result) {
    if (seen.result == UpstreamResult::kLocal && result.error().code == ReasonCode::kCancelled) {
      co_return LocalShortage(seen.detail);
    }
    live.error = result.error();
    live.detail = result.error().code == ReasonCode::kUpstreamSlow ? "budget ran out" : seen.detail;
    co_return live;
  }
  const WallTime fetched_at = deps_.wall_clock.Now();
  for (const BatchItem& item : items) {
    const VpicRow* row = FindRow(*result->answer, item.vin);
    auto decode = std::make_shared<fusebox::gateway::Decode>();
    decode->vin = item.vin;
    decode->model_year = item.model_year;
    decode->vehicle = row->vehicle;  // Classify checked that every item has a row
    decode->upstream_codes = row->upstream_codes;
    decode->fetched_at = fetched_at;
    DecodePtr stored = decode;  // a local: GCC 12 mishandles temporaries inside a co_await
    co_await Store(std::move(stored));
    if (decoded != nullptr) {
      decoded->push_back(decode);
    }
    if (!live.decode) {
      live.decode = std::move(decode);
    }
  }
  co_return live;
}

net::awaitable<fusebox::Outcome> DecodeService::Probe(std::string vin) {
  std::vector<BatchItem> items;
  items.push_back(BatchItem{std::move(vin), 0});
  const fusebox::TimePoint start = latency_clock().Now();
  Attempt attempt;
  {
    InFlight in_flight(deps_.metrics);
    UpstreamReply reply;
    try {
      reply = co_await deps_.client.DecodeVin(items.front().vin, 0);
      attempt = Classify(std::move(reply), items, options_.max_upstream_retry_after);
    } catch (const std::bad_alloc&) {
      attempt = Attempt{};
      attempt.outcome = fusebox::Outcome::kIgnored;
      attempt.result = UpstreamResult::kLocal;
    }
  }
  deps_.metrics.ObserveUpstream(attempt.result, latency_clock().Now() - start);
  if (attempt.outcome == fusebox::Outcome::kFailure) {
    NoteProblem(attempt.result, false);
    NoteFailure(attempt.own_network);
  }
  if (attempt.retry_after) {
    HoldUpstream(*attempt.retry_after);
  }
  if (attempt.outcome == fusebox::Outcome::kSuccess) {
    // The probe's answer refreshes the cache for its VIN, like any live decode.
    const VpicRow* row = FindRow(*attempt.answer, items.front().vin);
    auto decode = std::make_shared<fusebox::gateway::Decode>();
    decode->vin = items.front().vin;
    decode->vehicle = row->vehicle;
    decode->upstream_codes = row->upstream_codes;
    decode->fetched_at = deps_.wall_clock.Now();
    // Stored on its own, after the outcome: a slow cache write must not run the probe past its
    // budget (the cache's trouble is never the upstream's). Counted as a leader, so a drain
    // waits for it.
    const net::any_io_executor executor = co_await net::this_coro::executor;
    leaders_running_.fetch_add(1, std::memory_order_relaxed);
    net::co_spawn(executor, StoreThenRelease(std::move(decode)), net::detached);
  }
  co_return attempt.outcome;
}

net::awaitable<void> DecodeService::StoreThenRelease(DecodePtr decode) {
  co_await Store(std::move(decode));
  leaders_running_.fetch_sub(1, std::memory_order_relaxed);
}

namespace {
// CallNote::state: 0 while the call runs and its request waits, then one of these.
constexpr int kCallEnded = 1;     // the call ended first
constexpr int kCallAnswered = 2;  // the request was answered first
}  // namespace

void DecodeService::CallEnded(CallNote& note, const Live& live) {
  note.live = live;
  if (note.state.exchange(kCallEnded, std::memory_order_acq_rel) == kCallAnswered &&
      deps_.on_late_call && live.latency) {
    deps_.on_late_call(LateCall{note.vin, *live.latency,
                                live.outcome.value_or(fusebox::Outcome::kIgnored), live.detail});
  }
}

void DecodeService::AnsweredBeforeCall(CallNote& note, DecodeAnswer& answer) {
  if (note.state.exchange(kCallAnswered, std::memory_order_acq_rel) == kCallEnded) {
    answer.upstream_latency = note.live.latency;
    answer.upstream_outcome = note.live.outcome;
  }
}

net::awaitable<void> DecodeService::Lead(Flights::Leader leader, std::string vin, int model_year,
                                         fusebox::Admission admission,
                                         std::shared_ptr<CallNote> note) {
  Live live;
  // Built outside the co_await: GCC 12 rejects an initializer list inside one.
  std::vector<BatchItem> items;
  items.push_back(BatchItem{std::move(vin), model_year});
  try {
    live = co_await CallUpstream(std::move(admission), std::move(items),
                                 fusebox::Priority::kInteractive, nullptr);
  } catch (const std::bad_alloc&) {
    live = LocalShortage("local: out of memory");
  } catch (const std::exception&) {
    live = Live{};
    live.error = Error{ReasonCode::kUpstreamError};
  }
  CallEnded(*note, live);
  leader.Publish(std::move(live));
  leaders_running_.fetch_sub(1, std::memory_order_relaxed);
}

net::awaitable<DecodeAnswer> DecodeService::Decode(std::string raw_vin, int model_year,
                                                   std::string client) {
  co_return co_await Decode(Begin(raw_vin, model_year), std::move(client));
}

DecodeService::Step DecodeService::Begin(std::string_view raw_vin, int model_year) {
  Step step;
  step.model_year = model_year;
  DecodeAnswer& answer = step.answer;
  VinCheck check = ValidateVin(raw_vin);
  if (!check.ok()) {
    AnswerInvalid(answer, check, raw_vin.size());
    deps_.metrics.CountAnswer(answer.status, answer.source, false);
    step.done = true;
    return step;
  }
  answer.vin = std::move(check.vin);
  answer.check_digit = check.check_digit;
  step.key = CacheKey(answer.vin, model_year);
  step.looked_at = deps_.wall_clock.Now();
  Lookup front = LookUpFront(step.key, step.looked_at);
  if (front.fresh != nullptr) {
    AnswerFresh(answer, step.key, std::move(front));
    step.done = true;
    return step;
  }
  step.front_copy = std::move(front.any_age);
  return step;
}

net::awaitable<DecodeAnswer> DecodeService::Decode(Step step, std::string client) {
  if (step.done) {
    co_return std::move(step.answer);
  }
  DecodeAnswer answer = std::move(step.answer);
  const int model_year = step.model_year;
  const std::string key = std::move(step.key);
  Lookup lookup = co_await LookUpBackend(key, std::move(step.front_copy), step.looked_at);
  if (lookup.fresh != nullptr) {
    AnswerFresh(answer, key, std::move(lookup));
    co_return answer;
  }
  deps_.metrics.CountMiss();

  const net::any_io_executor executor = co_await net::this_coro::executor;
  const fusebox::TimePoint deadline =
      deps_.clock.Now() + deps_.breaker.config().call_timeout + options_.follower_margin;
  for (;;) {
    Flights::Joined joined = flights_.Join(key);
    std::optional<Flights::Follower> follower;
    std::shared_ptr<CallNote> note;  // this request's own call
    if (auto* leader = std::get_if<Flights::Leader>(&joined)) {
      if (std::optional<Duration> wait = deps_.limiter.TryTake(client)) {
        leader->Abandon();  // this client's refusal; followers re-join and one of them leads
        AnswerRateLimited(answer, *wait);
        co_return answer;
      }
      deps_.metrics.CountLeader();
      answer.joined = false;  // a follower that re-joined after an abandoned flight may lead
      fusebox::Result<fusebox::Admission> admission = Admit(fusebox::Priority::kInteractive);
      if (!admission) {
        // Refused here, in this coroutine: the flight ends with the refusal (anyone who joined
        // it meanwhile on another thread gets the same answer). The stale copy is the younger
        // of what the lookup found and what the front holds now (another thread's flight may
        // have stored one since): no second backend read.
        Live refused;
        refused.error = admission.error();
        leader->Publish(refused);
        std::optional<DecodePtr> stale = Younger(std::move(lookup.any_age), hot_.Get(key));
        co_await Finish(answer, refused, key, model_year, std::move(stale));
        co_return answer;
      }
      follower = leader->follower();
      leaders_running_.fetch_add(1, std::memory_order_relaxed);
      note = std::make_shared<CallNote>();
      note->vin = answer.vin;
      answer.led_call = true;
      net::co_spawn(executor,
                    Lead(std::move(*leader), answer.vin, model_year, std::move(*admission), note),
                    net::detached);
    } else {
      follower = std::get<Flights::Follower>(joined);
      answer.joined = true;
      deps_.metrics.CountJoin();
    }

    // With a copy to fall back on, the answer deadline cuts the wait short (UPSTREAM_LATE).
    const bool fallback = lookup.any_age != nullptr || deps_.offline != nullptr;
    const FlightWait wait = co_await AwaitFlight(*follower, deadline, fallback);
    if (wait.cut_short) {
      // The live call goes on (a detached leader, or another request's flight) and fills the
      // cache; this user gets the copy now. The stale copy is the younger of the lookup's and
      // what the front holds now.
      AnswerLate(answer, Younger(std::move(lookup.any_age), hot_.Get(key)), model_year);
      if (note) {
        AnsweredBeforeCall(*note, answer);
      }
      co_return answer;
    }
    if (!wait.result) {
      Live late;
      late.error = Error{ReasonCode::kUpstreamSlow};
      co_await Finish(answer, late, key, model_year);
      if (note) {
        AnsweredBeforeCall(*note, answer);
      }
      co_return answer;
    }
    const Flights::FlightResult& result = *wait.result;
    if (!result) {
      const fusebox::FlightError error = result.error();
      if (error == fusebox::FlightError::kLeaderAbandoned && deps_.clock.Now() < deadline) {
        // Look again before joining again: a decode may have been stored while this waited.
        lookup = co_await LookUp(key);
        if (lookup.fresh != nullptr) {
          AnswerFresh(answer, key, std::move(lookup));
          co_return answer;
        }
        continue;
      }
      Live failed;
      failed.error = Error{fusebox::ToReasonCode(error)};
      co_await Finish(answer, failed, key, model_year);
      co_return answer;
    }
    co_await Finish(answer, result.value(), key, model_year);
    co_return answer;
  }
}

net::awaitable<DecodeService::FlightWait> DecodeService::AwaitFlight(Flights::Follower follower,
                                                                     fusebox::TimePoint deadline,
                                                                     bool fallback) {
  using Channel = net::experimental::concurrent_channel<void(
      boost::system::error_code, std::shared_ptr<const Flights::FlightResult>)>;
  const net::any_io_executor executor = co_await net::this_coro::executor;
  // The flight's outcome is posted to this coroutine's executor. Leaving early never cancels it.
  auto channel = std::make_shared<Channel>(executor, 1);
  follower.OnReady([channel](const Flights::FlightResult& result) {
    channel->try_send(boost::system::error_code{},
                      std::make_shared<const Flights::FlightResult>(result));
  });
  // The answer deadline counts from here: a slow cache read before it does not eat the live
  // call's time.
  fusebox::TimePoint wait_until = deadline;
  if (options_.answer_deadline > Duration::zero() && fallback) {
    wait_until = std::min(deadline, deps_.clock.Now() + options_.answer_deadline);
  }
  net::steady_timer timer(executor);
  timer.expires_after(std::max(Duration::zero(), wait_until - deps_.clock.Now()));
  auto [order, receive_ec, result, timer_ec] =
      co_await net::experimental::make_parallel_group(channel->async_receive(net::deferred),
                                                      timer.async_wait(net::deferred))
          .async_wait(net::experimental::wait_for_one(), net::use_awaitable);
  (void)timer_ec;
  FlightWait wait;
  if (order[0] == 0) {
    if (!receive_ec) {
      wait.result = std::move(result);
    }
    co_return wait;
  }
  if (wait_until < deadline) {
    // A result that arrived as the timer fired wins over the copy.
    channel->try_receive(
        [&wait](boost::system::error_code ec, std::shared_ptr<const Flights::FlightResult> value) {
          if (!ec) {
            wait.result = std::move(value);
          }
        });
    wait.cut_short = wait.result == nullptr;
  }
  co_return wait;
}

net::awaitable<void> DecodeService::RunBatchCall(fusebox::Admission admission,
                                                 std::vector<BatchItem> items,
                                                 std::shared_ptr<BatchChannel> channel,
                                                 std::shared_ptr<CallNote> note) {
  auto flight = std::make_shared<BatchFlight>();
  try {
    flight->live = co_await CallUpstream(std::move(admission), std::move(items),
                                         fusebox::Priority::kBatch, &flight->decoded);
  } catch (const std::bad_alloc&) {
    flight->live = LocalShortage("local: out of memory");
  } catch (const std::exception&) {
    flight->live = Live{};
    flight->live.error = Error{ReasonCode::kUpstreamError};
  }
  CallEnded(*note, flight->live);
  channel->try_send(boost::system::error_code{}, std::move(flight));
  leaders_running_.fetch_sub(1, std::memory_order_relaxed);
}

net::awaitable<DecodeService::BatchPlan> DecodeService::PlanBatch(
    const std::vector<std::string>& raw_vins, int model_year, std::vector<DecodeAnswer>& answers) {
  BatchPlan plan;
  plan.stored.resize(raw_vins.size());
  for (std::size_t i = 0; i < raw_vins.size(); ++i) {
    DecodeAnswer& answer = answers[i];
    const VinCheck check = ValidateVin(raw_vins[i]);
    if (!check.ok()) {
      AnswerInvalid(answer, check, raw_vins[i].size());
      deps_.metrics.CountAnswer(answer.status, answer.source, false);
      continue;
    }
    answer.vin = check.vin;
    answer.check_digit = check.check_digit;
    Lookup found = co_await LookUp(CacheKey(answer.vin, model_year));
    if (DecodePtr fresh = std::move(found.fresh)) {
      answer.decode = std::move(fresh);
      answer.source = Source::kCache;
      answer.message = std::string(DefaultMessage(DecodeStatus::kOk));
      deps_.metrics.CountFreshHit();
      deps_.metrics.CountAnswer(answer.status, answer.source, false);
      continue;
    }
    deps_.metrics.CountMiss();
    plan.pending.push_back(i);
    plan.stored[i] = std::move(found.any_age);  // the copy the answer deadline may serve
    if (plan.item_index.emplace(answer.vin, plan.items.size()).second) {
      plan.items.push_back(BatchItem{answer.vin, model_year});
    }
  }
  co_return plan;
}

void DecodeService::RationBatch(BatchPlan& plan, std::vector<DecodeAnswer>& answers,
                                const std::string& client) {
  // One token per distinct VIN that goes upstream, with no cap: as many as the bucket holds go,
  // in the batch's order; the rest are RATE_LIMITED (never a whole batch for a part's tokens).
  const RateLimiter::Grant grant = deps_.limiter.TakeUpTo(client, plan.items.size());
  if (grant.taken == plan.items.size()) {
    return;
  }
  std::vector<std::size_t> admitted;
  for (std::size_t i : plan.pending) {
    if (plan.item_index.find(answers[i].vin)->second < grant.taken) {
      admitted.push_back(i);
    } else {
      AnswerRateLimited(answers[i], grant.retry_after);
    }
  }
  plan.pending = std::move(admitted);
  plan.items.resize(grant.taken);
}

net::awaitable<std::vector<DecodeAnswer>> DecodeService::DecodeBatch(
    std::vector<std::string> raw_vins, int model_year, std::string client) {
  std::vector<DecodeAnswer> answers(raw_vins.size());
  BatchPlan plan = co_await PlanBatch(raw_vins, model_year, answers);
  if (!plan.pending.empty()) {
    RationBatch(plan, answers, client);
  }
  if (plan.items.empty()) {
    co_return answers;
  }
  const std::vector<std::size_t>& pending = plan.pending;
  const std::vector<DecodePtr>& stored = plan.stored;
  const std::vector<BatchItem>& items = plan.items;
  const std::map<std::string, std::size_t, std::less<>>& item_index = plan.item_index;
  auto flight = std::make_shared<BatchFlight>();
  std::vector<bool> late(answers.size(), false);
  fusebox::Result<fusebox::Admission> admission = Admit(fusebox::Priority::kBatch);
  if (!admission) {
    flight->live.error = admission.error();
  } else {
    // The call runs on its own (counted as a leader) so that the answer deadline can answer the
    // VINs that have a copy while it goes on; it fills the cache whenever it ends.
    const net::any_io_executor executor = co_await net::this_coro::executor;
    auto channel = std::make_shared<BatchChannel>(executor, 1);
    leaders_running_.fetch_add(1, std::memory_order_relaxed);
    auto note = std::make_shared<CallNote>();
    note->vin = fmt::format("batch:{}", items.size());
    for (std::size_t i : pending) {
      answers[i].led_call = true;
    }
    net::co_spawn(executor, RunBatchCall(std::move(*admission), items, channel, note),
                  net::detached);
    const bool any_fallback =
        deps_.offline != nullptr ||
        std::any_of(pending.begin(), pending.end(), [&](std::size_t i) { return stored[i]; });
    std::shared_ptr<BatchFlight> arrived;
    if (options_.answer_deadline > Duration::zero() && any_fallback) {
      net::steady_timer timer(executor, options_.answer_deadline);
      auto [order, receive_ec, value, timer_ec] =
          co_await net::experimental::make_parallel_group(channel->async_receive(net::deferred),
                                                          timer.async_wait(net::deferred))
              .async_wait(net::experimental::wait_for_one(), net::use_awaitable);
      (void)timer_ec;
      if (order[0] == 0 && !receive_ec) {
        arrived = std::move(value);
      } else {
        // Late: each VIN with a copy gets it now (UPSTREAM_LATE); the others wait on.
        bool waiting = false;
        for (std::size_t i : pending) {
          if (stored[i] != nullptr || deps_.offline != nullptr) {
            AnswerLate(answers[i],
                       Younger(stored[i], hot_.Get(CacheKey(answers[i].vin, model_year))),
                       model_year);
            late[i] = true;
          } else {
            waiting = true;
          }
        }
        if (!waiting) {
          AnsweredBeforeCall(*note, answers[pending.front()]);
          co_return answers;
        }
      }
    }
    if (!arrived) {
      auto [receive_ec, value] = co_await channel->async_receive(net::as_tuple(net::use_awaitable));
      if (!receive_ec) {
        arrived = std::move(value);
      }
    }
    if (arrived) {
      flight = std::move(arrived);
    } else {
      flight->live.error = Error{ReasonCode::kUpstreamError};
    }
  }
  const Live& live = flight->live;
  const std::vector<DecodePtr>& decoded = flight->decoded;
  for (std::size_t i : pending) {
    if (late[i]) {
      continue;
    }
    Live mine;
    mine.latency = live.latency;
    mine.outcome = live.outcome;
    mine.error = live.error;
    mine.detail = live.detail;
    mine.local = live.local;
    if (live.decode) {
      mine.decode = decoded[item_index.find(answers[i].vin)->second];
    }
    const std::string key = CacheKey(answers[i].vin, model_year);
    co_await Finish(answers[i], mine, key, model_year);
  }
  co_return answers;
}

}  // namespace fusebox::gateway
