#include "replay_log.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <fstream>
#include <numeric>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include <boost/json/monotonic_resource.hpp>
#include <boost/json/parser.hpp>
#include <boost/json/value.hpp>

namespace fusebox::sim {
namespace {

namespace json = boost::json;

// FNV-1a: the single-flight key of a VIN (a collision only merges two VINs' flights).
std::uint64_t HashVin(std::string_view vin) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (const char c : vin) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h == 0 ? 1 : h;
}

// Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm).
std::int64_t DaysFromCivil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2 ? 1U : 0U;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

std::optional<State> ParseState(std::string_view text) {
  for (const State state : {State::kClosed, State::kOpen, State::kHalfOpen, State::kDisabled,
                            State::kMetricsOnly, State::kForcedOpen}) {
    if (ToString(state) == text) {
      return state;
    }
  }
  return std::nullopt;
}

std::optional<Outcome> ParseOutcome(std::string_view text) {
  if (text == "success") {
    return Outcome::kSuccess;
  }
  if (text == "failure") {
    return Outcome::kFailure;
  }
  if (text == "timeout") {
    return Outcome::kTimeout;
  }
  if (text == "ignored") {
    return Outcome::kIgnored;
  }
  return std::nullopt;
}

std::string_view StringField(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || !v->is_string()) {
    return {};
  }
  return {v->get_string().data(), v->get_string().size()};
}

// A number of milliseconds as microseconds; nullopt when absent, null or not a number.
std::optional<Micros> MillisField(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || !v->is_number()) {
    return std::nullopt;
  }
  const double ms = v->to_number<double>();
  if (!(ms >= 0 && ms < 1e12)) {
    return std::nullopt;
  }
  return static_cast<Micros>(std::llround(ms * 1000.0));
}

// The outcome a status says of its own call, for logs without `upstream_outcome`.
std::optional<Outcome> OutcomeOfStatus(std::string_view status) {
  if (status == "OK") {
    return Outcome::kSuccess;
  }
  if (status == "UPSTREAM_SLOW") {
    return Outcome::kTimeout;
  }
  if (status == "UPSTREAM_ERROR") {
    return Outcome::kFailure;
  }
  if (status == "LOCAL_OVERLOADED") {
    return Outcome::kIgnored;
  }
  return std::nullopt;
}

// One arrival while reading: times are absolute (Unix microseconds) until the origin is known.
struct Pending {
  std::int64_t t = 0;
  std::uint64_t line = 0;
  LoggedArrival arrival;
};

struct RawObservation {
  std::int64_t start = 0;
  Observation observation;
};

class Reader {
 public:
  explicit Reader(const ReadOptions& options)
      : transition_prefix_(fmt::format("breaker {}: ", options.breaker)) {}

  void Line(std::string_view line, std::uint64_t number) {
    ++incident_.lines;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) {
      return;
    }
    json::monotonic_resource memory(buffer_.data(), buffer_.size());
    parser_.reset(&memory);
    boost::system::error_code ec;
    parser_.write(line.data(), line.size(), ec);
    if (ec) {
      Error(number, line.front() == '{'
                        ? fmt::format("not JSON: {}", ec.message())
                        : std::string("not JSON (the replay reads the gateway's --log-format "
                                      "json)"));
      return;
    }
    const json::value value = parser_.release();
    if (!value.is_object()) {
      Error(number, "not a JSON object");
      return;
    }
    const json::object& o = value.get_object();
    const std::string_view ts = StringField(o, "ts");
    const std::optional<std::int64_t> at = ParseTimestamp(ts);
    if (!at) {
      Error(number, ts.empty() ? std::string("no \"ts\" (an RFC 3339 time)")
                               : fmt::format("\"ts\" is not an RFC 3339 UTC time: \"{}\"", ts));
      return;
    }
    const std::string_view event = StringField(o, "event");
    if (event == "request") {
      Request(o, *at, number);
    } else if (event == "message") {
      Message(o, *at);
    } else if (event == "upstream_call") {
      LateCall(o, *at, number);
    } else {
      Error(number, event.empty() ? std::string("no \"event\"")
                                  : fmt::format("unknown event \"{}\"", event));
      return;
    }
    if (!first_) {
      first_ = *at;
    }
    last_ = std::max(last_, *at);
  }

  Result<Incident, std::string> Finish(const std::string& name) {
    incident_.name = name;
    if (!first_) {
      return std::string(incident_.errors > 0 ? "no line of the log could be read"
                                              : "the log holds no line");
    }
    std::int64_t origin = *first_;
    for (const Pending& p : pending_) {
      origin = std::min(origin, p.t);
    }
    for (const RawObservation& r : observations_) {
      origin = std::min(origin, r.start);
    }
    incident_.origin_unix_us = origin;
    incident_.first_line = *first_ - origin;
    incident_.end = last_ - origin;
    // Observations by start; the arrivals' indexes follow.
    std::vector<std::size_t> order(observations_.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return observations_[a].start < observations_[b].start;
    });
    std::vector<std::int64_t> index_of(observations_.size());
    incident_.observations.reserve(order.size());
    for (std::size_t i = 0; i < order.size(); ++i) {
      Observation o = observations_[order[i]].observation;
      o.start = observations_[order[i]].start - origin;
      incident_.observations.push_back(o);
      index_of[order[i]] = static_cast<std::int64_t>(i);
    }
    std::stable_sort(pending_.begin(), pending_.end(),
                     [](const Pending& a, const Pending& b) { return a.t < b.t; });
    // Whether a copy was there for each arrival (served if it is refused): what the log says for
    // the refused and failed; for the others, a VIN decoded earlier, or an offline snapshot.
    std::sort(decoded_.begin(), decoded_.end());
    std::unordered_set<std::uint64_t> decoded;
    std::size_t next_decoded = 0;
    incident_.arrivals.reserve(pending_.size());
    for (Pending& p : pending_) {
      while (next_decoded < decoded_.size() && decoded_[next_decoded].first < p.t) {
        decoded.insert(decoded_[next_decoded++].second);
      }
      LoggedArrival a = p.arrival;
      a.t = p.t - origin;
      if (a.observation >= 0) {
        a.observation = index_of[static_cast<std::size_t>(a.observation)];
      }
      a.fallback = a.fallback || incident_.offline_answers || decoded.contains(a.vin);
      incident_.arrivals.push_back(a);
    }
    for (LoggedTransition& t : transitions_) {
      t.t -= origin;
    }
    incident_.transitions = std::move(transitions_);
    if (clock_at_) {
      const std::int64_t phase = (clock_at_->second - (clock_at_->first - origin)) % 1'000'000;
      incident_.clock_phase = phase < 0 ? phase + 1'000'000 : phase;
    }
    for (const auto& [vin, waiting] : late_) {
      incident_.unknown_fates += waiting.size();
    }
    return std::move(incident_);
  }

 private:
  void Error(std::uint64_t number, std::string message) {
    ++incident_.errors;
    if (incident_.first_errors.size() < kMaxLineErrors) {
      incident_.first_errors.push_back(LineError{number, std::move(message)});
    }
  }

  void Request(const json::object& o, std::int64_t at, std::uint64_t number) {
    const std::string_view method = StringField(o, "method");
    const std::string_view status = StringField(o, "status");
    const std::string_view upstream = StringField(o, "upstream");
    const std::string_view vin = StringField(o, "vin");
    const std::string_view source = StringField(o, "source");
    const std::optional<Micros> elapsed = MillisField(o, "elapsed_ms");
    const std::optional<Micros> latency = MillisField(o, "upstream_ms");
    if (!elapsed) {
      Error(number, "a request without \"elapsed_ms\"");
      return;
    }
    if (source == "offline") {
      incident_.offline_answers = true;
    }
    std::optional<Outcome> outcome;
    if (const std::string_view text = StringField(o, "upstream_outcome"); !text.empty()) {
      outcome = ParseOutcome(text);
      if (!outcome) {
        Error(number, fmt::format("unknown \"upstream_outcome\" \"{}\"", text));
        return;
      }
    }
    if (method == "PROBE" || upstream == "probe") {
      if (!latency) {
        Error(number, "a probe without \"upstream_ms\"");
        return;
      }
      if (!outcome) {
        outcome = OutcomeOfStatus(status);
      }
      ++incident_.recorded.probes;
      ++incident_.recorded.upstream_calls;
      if (outcome && *outcome != Outcome::kIgnored) {
        observations_.push_back({at - *latency, {0, *latency, *outcome, /*probe=*/true}});
      }
      return;
    }
    // A decode: its status is one of the decode statuses (a batch's line says OK).
    const bool decode = upstream == "call" || upstream == "joined" || vin.starts_with("batch:") ||
                        IsDecodeStatus(status);
    if (!decode) {
      return;  // another route: /healthz, /status, the page, 404s
    }
    RecordedCounts& r = incident_.recorded;
    ++r.requests;
    const bool stale = source == "cache-stale" || source == "offline";
    const std::uint64_t key = HashVin(vin);
    Pending p;
    p.line = number;
    p.arrival.vin = key;
    p.arrival.batch = vin.starts_with("batch:");
    p.arrival.fallback = stale;
    Count(status, source, stale);
    if (status == "OK" && !stale) {
      decoded_.emplace_back(at, key);
    }
    // Its own call: the `upstream` field, or, in a log from before it, any upstream latency.
    const bool own = upstream == "call" || (upstream.empty() && latency.has_value() &&
                                            OutcomeOfStatus(status).has_value());
    if (own) {
      ++r.upstream_calls;
      if (!outcome && upstream.empty()) {
        outcome = OutcomeOfStatus(status);
      }
      p.arrival.kind = ArrivalKind::kCall;
      if (outcome && latency) {
        p.t = at - *latency;
        if (*outcome != Outcome::kIgnored) {
          p.arrival.observation = static_cast<std::int64_t>(observations_.size());
          observations_.push_back({p.t, {0, *latency, *outcome, false}});
        }
      } else {
        // Answered before its call ended (the answer deadline): an `upstream_call` line follows.
        p.t = at - *elapsed;
        late_[key].push_back(pending_.size());
      }
      pending_.push_back(p);
      return;
    }
    p.t = at - *elapsed;
    if (upstream == "joined") {
      p.arrival.kind = ArrivalKind::kJoined;
    } else if (status == "CIRCUIT_OPEN" || status == "CIRCUIT_HALF_OPEN" ||
               status == "CIRCUIT_RECOVERING") {
      p.arrival.kind = ArrivalKind::kBreakerRefused;
      p.arrival.refusal = status == "CIRCUIT_OPEN"        ? Refusal::kOpen
                          : status == "CIRCUIT_HALF_OPEN" ? Refusal::kHalfOpen
                                                          : Refusal::kRecovering;
    } else if (status == "OVERLOADED" || status == "THROTTLED") {
      p.arrival.kind = ArrivalKind::kGuardRefused;
      p.arrival.refusal = status == "OVERLOADED" ? Refusal::kOverloaded : Refusal::kThrottled;
    } else {
      // A fresh cache hit, an invalid VIN, a rate-limited client: no breaker setting changes it.
      ++incident_.other_requests;
      incident_.other_served += status == "OK" && !stale ? 1U : 0U;
      incident_.other_stale_served += stale ? 1U : 0U;
      return;
    }
    pending_.push_back(p);
  }

  static bool IsDecodeStatus(std::string_view status) {
    static constexpr std::array<std::string_view, 12> kStatuses = {"OK",
                                                                   "VIN_INVALID",
                                                                   "CIRCUIT_OPEN",
                                                                   "CIRCUIT_HALF_OPEN",
                                                                   "CIRCUIT_RECOVERING",
                                                                   "UPSTREAM_SLOW",
                                                                   "UPSTREAM_ERROR",
                                                                   "OVERLOADED",
                                                                   "RATE_LIMITED",
                                                                   "LOCAL_OVERLOADED",
                                                                   "UPSTREAM_LATE",
                                                                   "THROTTLED"};
    return std::find(kStatuses.begin(), kStatuses.end(), status) != kStatuses.end();
  }

  void Count(std::string_view status, std::string_view source, bool stale) {
    RecordedCounts& r = incident_.recorded;
    (void)source;
    if (status == "CIRCUIT_OPEN") {
      ++r.refused_open;
    } else if (status == "CIRCUIT_HALF_OPEN") {
      ++r.refused_half_open;
    } else if (status == "CIRCUIT_RECOVERING") {
      ++r.refused_recovering;
    } else if (status == "OVERLOADED") {
      ++r.overloaded;
    } else if (status == "THROTTLED") {
      ++r.throttled;
    } else if (status == "UPSTREAM_SLOW" || status == "UPSTREAM_ERROR" ||
               status == "LOCAL_OVERLOADED") {
      ++r.failed;
    } else if (status == "OK" && !stale) {
      ++r.served;
    }
    r.refused =
        r.refused_open + r.refused_half_open + r.refused_recovering + r.overloaded + r.throttled;
    r.stale_served += stale ? 1U : 0U;
  }

  // "breaker vpic: CLOSED -> OPEN (consecutive_failures); next probe in 2s (the gateway's own)"
  void Message(const json::object& o, std::int64_t at) {
    std::string_view message = StringField(o, "message");
    if (!message.starts_with(transition_prefix_)) {
      return;
    }
    message.remove_prefix(transition_prefix_.size());
    if (message.starts_with("clock at ")) {
      // "clock at 12345.678901 s (monotonic)": the breaker's clock at this line's time.
      message.remove_prefix(9);
      double seconds = 0;
      const auto [end, ec] =
          std::from_chars(message.data(), message.data() + message.size(), seconds);
      if (ec == std::errc() && end != message.data() && seconds >= 0 && seconds < 1e12) {
        clock_at_ = {at, static_cast<std::int64_t>(std::llround(seconds * 1e6))};
      }
      return;
    }
    const std::size_t arrow = message.find(" -> ");
    if (arrow == std::string_view::npos) {
      return;  // a probe's line, a Retry-After hold
    }
    const std::optional<State> from = ParseState(message.substr(0, arrow));
    std::string_view rest = message.substr(arrow + 4);
    const std::size_t space = rest.find(' ');
    const std::optional<State> to = ParseState(rest.substr(0, space));
    if (!from || !to) {
      return;
    }
    std::string cause;
    if (space != std::string_view::npos && rest.substr(space).starts_with(" (")) {
      const std::size_t close = rest.find(')', space);
      if (close != std::string_view::npos) {
        cause = std::string(rest.substr(space + 2, close - space - 2));
      }
    }
    transitions_.push_back(LoggedTransition{at, *from, *to, std::move(cause)});
  }

  // The end of a call whose request was answered first: the fate of that request's call.
  void LateCall(const json::object& o, std::int64_t at, std::uint64_t number) {
    const std::optional<Micros> latency = MillisField(o, "upstream_ms");
    const std::optional<Outcome> outcome = ParseOutcome(StringField(o, "upstream_outcome"));
    if (!latency || !outcome) {
      Error(number, "an upstream_call without \"upstream_ms\" or \"upstream_outcome\"");
      return;
    }
    const std::uint64_t key = HashVin(StringField(o, "vin"));
    auto it = late_.find(key);
    if (it == late_.end() || it->second.empty()) {
      // Its request's line was not in the log (cut at the log's start): vPIC was seen anyway.
      if (*outcome != Outcome::kIgnored) {
        observations_.push_back({at - *latency, {0, *latency, *outcome, false}});
      }
      return;
    }
    Pending& p = pending_[it->second.front()];
    it->second.erase(it->second.begin());
    if (it->second.empty()) {
      late_.erase(it);
    }
    p.t = at - *latency;
    if (*outcome != Outcome::kIgnored) {
      p.arrival.observation = static_cast<std::int64_t>(observations_.size());
      observations_.push_back({p.t, {0, *latency, *outcome, false}});
    }
  }

  std::string transition_prefix_;
  json::parser parser_;
  std::array<unsigned char, 8192> buffer_{};
  Incident incident_;
  std::optional<std::int64_t> first_;
  std::int64_t last_ = 0;
  std::vector<Pending> pending_;
  std::vector<RawObservation> observations_;
  std::vector<LoggedTransition> transitions_;
  std::vector<std::pair<std::int64_t, std::uint64_t>> decoded_;  // (instant, VIN) of OK answers
  std::unordered_map<std::uint64_t, std::vector<std::size_t>> late_;  // VIN -> pending_ indexes
  std::optional<std::pair<std::int64_t, std::int64_t>> clock_at_;     // (wall us, breaker clock us)
};

}  // namespace

std::optional<std::int64_t> ParseTimestamp(std::string_view text) {
  // YYYY-MM-DDTHH:MM:SS[.fraction]Z
  if (text.size() < 20 || text[4] != '-' || text[7] != '-' ||
      (text[10] != 'T' && text[10] != 't') || text[13] != ':' || text[16] != ':' ||
      (text.back() != 'Z' && text.back() != 'z')) {
    return std::nullopt;
  }
  const auto number = [&](std::size_t at, std::size_t n) -> std::optional<unsigned> {
    unsigned value = 0;
    const char* first = text.data() + at;
    auto [ptr, ec] = std::from_chars(first, first + n, value);
    if (ec != std::errc() || ptr != first + n) {
      return std::nullopt;
    }
    return value;
  };
  const auto year = number(0, 4);
  const auto month = number(5, 2);
  const auto day = number(8, 2);
  const auto hour = number(11, 2);
  const auto minute = number(14, 2);
  const auto second = number(17, 2);
  if (!year || !month || !day || !hour || !minute || !second || *month < 1 || *month > 12 ||
      *day < 1 || *day > 31 || *hour > 23 || *minute > 59 || *second > 60) {
    return std::nullopt;
  }
  std::int64_t micros = 0;
  std::size_t i = 19;
  if (text[i] == '.') {
    ++i;
    std::int64_t scale = 100'000;
    const std::size_t digits_from = i;
    while (i + 1 < text.size() && text[i] >= '0' && text[i] <= '9') {
      micros += (text[i] - '0') * scale;
      scale /= 10;
      ++i;
    }
    if (i == digits_from) {
      return std::nullopt;
    }
  }
  if (i + 1 != text.size()) {
    return std::nullopt;
  }
  const std::int64_t days = DaysFromCivil(*year, *month, *day);
  return ((days * 24 + *hour) * 60 + *minute) * 60'000'000LL + *second * 1'000'000LL + micros;
}

Result<Incident, std::string> ReadIncident(std::istream& in, const std::string& name,
                                           const ReadOptions& options) {
  Reader reader(options);
  std::string line;
  std::uint64_t number = 0;
  while (std::getline(in, line)) {
    reader.Line(line, ++number);
  }
  if (in.bad()) {
    return fmt::format("{}: cannot read line {}", name, number + 1);
  }
  return reader.Finish(name);
}

Result<Incident, std::string> ReadIncidentFile(const std::string& path,
                                               const ReadOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return fmt::format("{}: cannot open the file", path);
  }
  std::vector<char> buffer(std::size_t{1} << 20U);
  in.rdbuf()->pubsetbuf(buffer.data(), static_cast<std::streamsize>(buffer.size()));
  auto incident = ReadIncident(in, path, options);
  if (!incident) {
    return fmt::format("{}: {}", path, incident.error());
  }
  return incident;
}

}  // namespace fusebox::sim
