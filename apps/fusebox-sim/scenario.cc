#include "scenario.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <numeric>
#include <sstream>
#include <system_error>
#include <utility>

#include <toml++/toml.h>

namespace fusebox::sim {

struct ScenarioFile::Parsed {
  toml::table root;
};

ScenarioFile::ScenarioFile() = default;
ScenarioFile::ScenarioFile(ScenarioFile&&) noexcept = default;
ScenarioFile& ScenarioFile::operator=(ScenarioFile&&) noexcept = default;
ScenarioFile::~ScenarioFile() = default;

namespace {

// "1000000000 s (about 31.7 years)": the upper end of every duration.
std::string MaxDurationText() {
  return fmt::format("{} s (about {:.1f} years)", kMaxDuration / kMicrosPerSecond,
                     static_cast<double>(kMaxDuration) / 1e6 / (365.25 * 86400.0));
}

struct KeySpec {
  std::string_view name;
  KeyKind kind;
};

constexpr auto kRootKeys = std::to_array<KeySpec>({
    {"name", KeyKind::kString},
    {"seed", KeyKind::kInteger},
    {"duration", KeyKind::kDuration},
});

constexpr auto kBreakerKeys = std::to_array<KeySpec>({
    {"trip", KeyKind::kString},
    {"failure_threshold", KeyKind::kInteger},
    {"window_size", KeyKind::kInteger},
    {"minimum_calls", KeyKind::kInteger},
    {"failure_rate_threshold", KeyKind::kNumber},
    {"slow_call_duration", KeyKind::kDuration},
    {"slow_call_rate_threshold", KeyKind::kNumber},
    {"call_timeout", KeyKind::kDuration},
    {"cooldown", KeyKind::kDuration},
    {"half_open_max_probes", KeyKind::kInteger},
    {"half_open_successes", KeyKind::kInteger},
    {"batch_may_probe", KeyKind::kBool},
    {"inflight_slow_accounting", KeyKind::kBool},
    {"cooldown_multiplier", KeyKind::kNumber},
    {"cooldown_max", KeyKind::kDuration},
    {"cooldown_jitter", KeyKind::kNumber},
});

constexpr auto kStreamKeys = std::to_array<KeySpec>({
    {"name", KeyKind::kString},
    {"priority", KeyKind::kString},
    {"rate", KeyKind::kNumber},
    {"start", KeyKind::kDuration},
    {"arrivals", KeyKind::kString},
});

constexpr auto kUpstreamKeys = std::to_array<KeySpec>({
    {"latency", KeyKind::kDuration},
});

constexpr auto kPhaseKeys = std::to_array<KeySpec>({
    {"from", KeyKind::kDuration},
    {"to", KeyKind::kDuration},
    {"mode", KeyKind::kString},
    {"latency", KeyKind::kDuration},
    {"capacity", KeyKind::kInteger},
    {"relapse", KeyKind::kDuration},
});

template <std::size_t N>
std::optional<KeyKind> FindKind(const std::array<KeySpec, N>& specs, std::string_view name) {
  for (const KeySpec& spec : specs) {
    if (spec.name == name) {
      return spec.kind;
    }
  }
  return std::nullopt;
}

std::string_view TypeName(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a float";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::date:
    case toml::node_type::time:
    case toml::node_type::date_time:
      return "a date/time";
    case toml::node_type::none:
      break;
  }
  return "nothing";
}

// One segment of a dotted key: `stream[1]` is {"stream", 1}.
struct KeySegment {
  std::string_view name;
  std::optional<std::size_t> index;
};

std::optional<std::vector<KeySegment>> SplitKey(std::string_view key) {
  std::vector<KeySegment> segments;
  while (true) {
    const std::size_t dot = key.find('.');
    std::string_view part = key.substr(0, dot);
    KeySegment segment;
    if (const std::size_t open = part.find('['); open != std::string_view::npos) {
      if (part.back() != ']' || open + 2 > part.size() - 1) {
        return std::nullopt;
      }
      const std::string_view digits = part.substr(open + 1, part.size() - open - 2);
      std::size_t index = 0;
      const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
      if (ec != std::errc() || end != digits.data() + digits.size()) {
        return std::nullopt;
      }
      segment.index = index;
      part = part.substr(0, open);
    }
    if (part.empty()) {
      return std::nullopt;
    }
    segment.name = part;
    segments.push_back(segment);
    if (dot == std::string_view::npos) {
      break;
    }
    key.remove_prefix(dot + 1);
  }
  return segments;
}

std::optional<double> ParseDouble(std::string_view text) {
  double value = 0.0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) {
    return std::nullopt;
  }
  return value;
}

std::optional<std::int64_t> ParseInt(std::string_view text) {
  std::int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return std::nullopt;
  }
  return value;
}

std::optional<Micros> SecondsToMicros(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0.0 ||
      seconds > static_cast<double>(kMaxDuration) / 1e6) {
    return std::nullopt;
  }
  return static_cast<Micros>(std::llround(seconds * 1e6));
}

// Where a value sits in the file, and the key as the user reads it.
struct Location {
  int line = 0;
  int column = 0;
  std::string key;
};

enum class TrafficForm : std::uint8_t { kNone, kSingle, kStreams };

// Applies TOML tables (the file, then a variant) and overrides onto a Scenario, remembering where
// every value came from so that later checks (overlaps, the breaker's Validate()) can point at it.
// Keeps the error that comes first in the file.
class Builder {
 public:
  Builder(std::string file, std::string default_name) : file_(std::move(file)) {
    scenario_.name = std::move(default_name);
  }

  // Applies a top-level table (the file, or one [[variant]] with `prefix` "variant[i].").
  void ApplyRoot(const toml::table& root, std::string prefix, bool is_variant) {
    prefix_ = std::move(prefix);
    for (const auto& [key_node, node] : root) {
      const std::string_view key = key_node.str();
      if (key == "breaker") {
        if (const toml::table* table = Table(node, "breaker")) {
          for (const auto& [k, v] : *table) {
            ApplyBreakerKey(k.str(), v, fmt::format("breaker.{}", k.str()));
          }
          Remember("breaker", node);
        }
      } else if (key == "traffic") {
        if (const toml::table* table = Table(node, "traffic")) {
          ApplyTraffic(*table, node);
        }
      } else if (key == "upstream") {
        if (const toml::table* table = Table(node, "upstream")) {
          ApplyUpstream(*table);
        }
      } else if (key == "variant" && !is_variant) {
        // The caller applies variants one at a time.
      } else {
        ApplyRootKey(key, node, std::string(key));
      }
    }
  }

  // Applies one `KEY=VALUE` override (from --param or a sweep point).
  void ApplyOverride(const Override& override_value) {
    prefix_.clear();
    overriding_ = true;
    ApplyOverrideLocked(override_value);
    overriding_ = false;
  }

  void SetSeed(std::uint64_t seed) { scenario_.seed = seed; }

  // Checks what needs the whole scenario. Returns the scenario or the first error.
  Result<Scenario, LoadError> Finish() {
    if (!error_) {
      CheckTraffic();
    }
    if (!error_) {
      if (scenario_.duration <= 0) {
        FailAt("duration", "must be > 0");
      }
    }
    if (!error_) {
      CheckExpectedCalls();
    }
    if (!error_) {
      CheckPhases();
    }
    if (!error_) {
      if (std::optional<ConfigError> bad = scenario_.breaker.Validate()) {
        const std::string key = "breaker." + bad->field;
        if (where_.contains(key)) {
          FailAt(key, bad->message);
        } else {
          // A default or a combination of fields: point at the [breaker] table if there is one.
          Fail(LocationOf("breaker", key), bad->message);
        }
      }
    }
    if (error_) {
      return *error_;
    }
    return scenario_;
  }

  bool failed() const { return error_.has_value(); }

 private:
  // ---- errors and locations ----

  Location MakeLocation(const toml::node& node, const std::string& key) const {
    const toml::source_region& source = node.source();
    if (overriding_ || source.begin.line == 0) {
      return Location{0, 0, key + " (override)"};
    }
    return Location{static_cast<int>(source.begin.line), static_cast<int>(source.begin.column),
                    prefix_ + key};
  }

  void Remember(const std::string& key, const toml::node& node) {
    where_[key] = MakeLocation(node, key);
  }

  // Where `key` was last set; else where `fallback_key` was; else the file itself.
  Location LocationOf(const std::string& key, const std::string& display_key) const {
    if (auto it = where_.find(key); it != where_.end()) {
      Location location = it->second;
      location.key = display_key;
      return location;
    }
    return Location{0, 0, display_key};
  }

  void Fail(const Location& location, std::string message) {
    LoadError candidate{file_, location.line, location.column, location.key, std::move(message)};
    // Keep the error that comes first in the file; errors without a place come last.
    auto rank = [](const LoadError& e) {
      return std::pair(e.line == 0 ? std::numeric_limits<int>::max() : e.line, e.column);
    };
    if (!error_ || rank(candidate) < rank(*error_)) {
      error_ = std::move(candidate);
    }
  }

  void Fail(const toml::node& node, const std::string& key, std::string message) {
    Fail(MakeLocation(node, key), std::move(message));
  }

  void FailAt(const std::string& key, std::string message) {
    Location location = LocationOf(key, key);
    if (auto it = where_.find(key); it != where_.end()) {
      location.key = it->second.key;
    }
    Fail(location, std::move(message));
  }

  // ---- typed reads ----

  const toml::table* Table(const toml::node& node, const std::string& key) {
    if (const toml::table* table = node.as_table()) {
      return table;
    }
    Fail(node, key, fmt::format("expected a table, got {}", TypeName(node)));
    return nullptr;
  }

  std::optional<std::int64_t> Int(const toml::node& node, const std::string& key) {
    if (const auto* value = node.as_integer()) {
      return value->get();
    }
    Fail(node, key, fmt::format("expected an integer, got {}", TypeName(node)));
    return std::nullopt;
  }

  std::optional<double> Number(const toml::node& node, const std::string& key) {
    if (const auto* value = node.as_integer()) {
      return static_cast<double>(value->get());
    }
    if (const auto* value = node.as_floating_point()) {
      if (!std::isfinite(value->get())) {
        Fail(node, key, "must be a finite number");
        return std::nullopt;
      }
      return value->get();
    }
    Fail(node, key, fmt::format("expected a number, got {}", TypeName(node)));
    return std::nullopt;
  }

  std::optional<bool> Bool(const toml::node& node, const std::string& key) {
    if (const auto* value = node.as_boolean()) {
      return value->get();
    }
    Fail(node, key, fmt::format("expected true or false, got {}", TypeName(node)));
    return std::nullopt;
  }

  std::optional<std::string> String(const toml::node& node, const std::string& key) {
    if (const auto* value = node.as_string()) {
      return value->get();
    }
    Fail(node, key, fmt::format("expected a string, got {}", TypeName(node)));
    return std::nullopt;
  }

  std::optional<Micros> DurationValue(const toml::node& node, const std::string& key) {
    if (const auto* text = node.as_string()) {
      bool too_large = false;
      if (std::optional<Micros> micros = ParseDuration(text->get(), &too_large)) {
        return micros;
      }
      if (too_large) {
        Fail(
            node, key,
            fmt::format("bad duration \"{}\": must be at most {}", text->get(), MaxDurationText()));
        return std::nullopt;
      }
      Fail(node, key,
           fmt::format("bad duration \"{}\": expected a non-negative decimal number and a unit "
                       "(us, ms, s, m), e.g. \"250ms\", or a number of seconds",
                       text->get()));
      return std::nullopt;
    }
    if (node.is_integer() || node.is_floating_point()) {
      // value<double>() converts integers too.
      const double seconds = node.value<double>().value_or(-1.0);
      if (std::optional<Micros> micros = SecondsToMicros(seconds)) {
        return micros;
      }
      Fail(node, key,
           fmt::format("bad duration {:g}: a number of seconds must be finite, >= 0 and at most {}",
                       seconds, MaxDurationText()));
      return std::nullopt;
    }
    Fail(node, key,
         fmt::format("expected a duration such as \"250ms\" or a number of seconds, got {}",
                     TypeName(node)));
    return std::nullopt;
  }

  // A breaker count: Validate() checks its exact range; here only that it fits.
  void Count(const toml::node& node, const std::string& key, std::uint32_t& out) {
    if (std::optional<std::int64_t> value = Int(node, key)) {
      if (*value < 0 || *value > std::numeric_limits<std::uint32_t>::max()) {
        Fail(node, key, fmt::format("must be a positive 32-bit integer, got {}", *value));
        return;
      }
      out = static_cast<std::uint32_t>(*value);
      Remember(key, node);
    }
  }

  // ---- the tables ----

  void ApplyRootKey(std::string_view key, const toml::node& node, const std::string& full) {
    if (key == "name") {
      if (std::optional<std::string> name = String(node, full)) {
        scenario_.name = *name;
        Remember(full, node);
      }
    } else if (key == "seed") {
      if (std::optional<std::int64_t> seed = Int(node, full)) {
        if (*seed < 0) {
          Fail(node, full, fmt::format("must be >= 0, got {}", *seed));
          return;
        }
        scenario_.seed = static_cast<std::uint64_t>(*seed);
        Remember(full, node);
      }
    } else if (key == "duration") {
      if (std::optional<Micros> duration = DurationValue(node, full)) {
        scenario_.duration = *duration;
        Remember(full, node);
      }
    } else {
      Fail(node, full, "unknown key");
    }
  }

  void ApplyBreakerKey(std::string_view key, const toml::node& node, const std::string& full) {
    CircuitBreakerConfig& c = scenario_.breaker;
    auto duration = [&](Duration& out) {
      if (std::optional<Micros> micros = DurationValue(node, full)) {
        out = std::chrono::microseconds(*micros);
        Remember(full, node);
      }
    };
    auto number = [&](double& out) {
      if (std::optional<double> value = Number(node, full)) {
        out = *value;
        Remember(full, node);
      }
    };
    auto boolean = [&](bool& out) {
      if (std::optional<bool> value = Bool(node, full)) {
        out = *value;
        Remember(full, node);
      }
    };
    if (key == "trip") {
      if (std::optional<std::string> name = String(node, full)) {
        if (std::optional<TripPolicy> policy = ParseTripPolicy(*name)) {
          c.trip = *policy;
          Remember(full, node);
        } else {
          Fail(node, full,
               fmt::format(R"(must be "consecutive", "count_window" or "time_window", got "{}")",
                           *name));
        }
      }
    } else if (key == "failure_threshold") {
      Count(node, full, c.failure_threshold);
    } else if (key == "window_size") {
      Count(node, full, c.window_size);
    } else if (key == "minimum_calls") {
      Count(node, full, c.minimum_calls);
    } else if (key == "failure_rate_threshold") {
      number(c.failure_rate_threshold);
    } else if (key == "slow_call_duration") {
      Duration d{};
      duration(d);
      if (where_.contains(full)) {
        c.slow_call_duration = d;
      }
    } else if (key == "slow_call_rate_threshold") {
      number(c.slow_call_rate_threshold);
    } else if (key == "call_timeout") {
      duration(c.call_timeout);
    } else if (key == "cooldown") {
      duration(c.cooldown);
    } else if (key == "half_open_max_probes") {
      Count(node, full, c.half_open_max_probes);
    } else if (key == "half_open_successes") {
      std::uint32_t successes = 0;
      Count(node, full, successes);
      if (where_.contains(full)) {
        c.half_open_successes = successes;
      }
    } else if (key == "batch_may_probe") {
      boolean(c.batch_may_probe);
    } else if (key == "inflight_slow_accounting") {
      boolean(c.inflight_slow_accounting);
    } else if (key == "cooldown_multiplier") {
      number(c.cooldown_multiplier);
    } else if (key == "cooldown_max") {
      Duration d{};
      duration(d);
      if (where_.contains(full)) {
        c.cooldown_max = d;
      }
    } else if (key == "cooldown_jitter") {
      number(c.cooldown_jitter);
    } else {
      Fail(node, full, "unknown key");
    }
  }

  void ApplyStreamKey(Stream& stream, std::string_view key, const toml::node& node,
                      const std::string& full) {
    if (key == "name") {
      if (std::optional<std::string> name = String(node, full)) {
        stream.name = *name;
        Remember(full, node);
      }
    } else if (key == "priority") {
      if (std::optional<std::string> name = String(node, full)) {
        if (*name == "interactive") {
          stream.priority = Priority::kInteractive;
        } else if (*name == "batch") {
          stream.priority = Priority::kBatch;
        } else {
          Fail(node, full, fmt::format(R"(must be "interactive" or "batch", got "{}")", *name));
          return;
        }
        Remember(full, node);
      }
    } else if (key == "rate") {
      if (std::optional<double> rate = Number(node, full)) {
        if (*rate <= 0.0) {
          Fail(node, full, fmt::format("must be > 0 calls per second, got {}", *rate));
          return;
        }
        if (*rate < kMinRate || *rate > kMaxRate) {
          // Arrivals are whole microseconds: a mean gap below 1 us cannot be simulated, and
          // one above kMaxDuration does not fit the clock.
          Fail(node, full,
               fmt::format("must be in [{:g}, {:g}] calls per second (a mean gap between arrivals "
                           "from 1 us, the simulator's time resolution, to {} s), got {:g}",
                           kMinRate, kMaxRate, kMaxDuration / kMicrosPerSecond, *rate));
          return;
        }
        stream.rate = *rate;
        Remember(full, node);
      }
    } else if (key == "start") {
      if (std::optional<Micros> start = DurationValue(node, full)) {
        stream.start = *start;
        Remember(full, node);
      }
    } else if (key == "arrivals") {
      if (std::optional<std::string> name = String(node, full)) {
        if (*name == "uniform") {
          stream.arrivals = Arrivals::kUniform;
        } else if (*name == "poisson") {
          stream.arrivals = Arrivals::kPoisson;
        } else {
          Fail(node, full, fmt::format(R"(must be "uniform" or "poisson", got "{}")", *name));
          return;
        }
        Remember(full, node);
      }
    } else {
      Fail(node, full, "unknown key");
    }
  }

  // A rate given but refused is reported where it is, not as missing.
  void RequireRate(const toml::node& table_node, const std::string& prefix) {
    if (!table_node.as_table()->contains("rate") && !where_.contains(prefix + ".rate")) {
      Fail(table_node, prefix, "missing key: rate (calls per second)");
    }
  }

  void ApplyTraffic(const toml::table& table, const toml::node& table_node) {
    const toml::node* streams_node = table.get("stream");
    if (streams_node != nullptr) {
      for (const auto& [k, v] : table) {
        if (k.str() != "stream") {
          Fail(v, fmt::format("traffic.{}", k.str()),
               "with [[traffic.stream]] tables, [traffic] holds only those tables");
        }
      }
      const toml::array* array = streams_node->as_array();
      if (array == nullptr || !array->is_array_of_tables()) {
        Fail(*streams_node, "traffic.stream", "expected [[traffic.stream]] tables");
        return;
      }
      scenario_.streams.clear();
      traffic_form_ = TrafficForm::kStreams;
      ForgetPrefix("traffic.");
      std::size_t index = 0;
      for (const toml::node& element : *array) {
        const std::string prefix = fmt::format("traffic.stream[{}]", index);
        Stream stream;
        stream.name = fmt::format("stream{}", index);
        for (const auto& [k, v] : *element.as_table()) {
          ApplyStreamKey(stream, k.str(), v, fmt::format("{}.{}", prefix, k.str()));
        }
        RequireRate(element, prefix);
        scenario_.streams.push_back(std::move(stream));
        ++index;
      }
      return;
    }
    // One stream: a variant's [traffic] changes the base's single stream key by key.
    if (traffic_form_ != TrafficForm::kSingle) {
      scenario_.streams.clear();
      ForgetPrefix("traffic.");
      Stream stream;
      stream.name = "traffic";
      scenario_.streams.push_back(std::move(stream));
      traffic_form_ = TrafficForm::kSingle;
    }
    for (const auto& [k, v] : table) {
      ApplyStreamKey(scenario_.streams.front(), k.str(), v, fmt::format("traffic.{}", k.str()));
    }
    RequireRate(table_node, "traffic");
  }

  void ApplyPhaseKey(Phase& phase, std::string_view key, const toml::node& node,
                     const std::string& full) {
    auto duration = [&](Micros& out) {
      if (std::optional<Micros> micros = DurationValue(node, full)) {
        out = *micros;
        Remember(full, node);
      }
    };
    if (key == "from") {
      duration(phase.from);
    } else if (key == "to") {
      duration(phase.to);
    } else if (key == "mode") {
      if (std::optional<std::string> name = String(node, full)) {
        static constexpr std::array<std::pair<std::string_view, Mode>, 5> kModes = {{
            {"ok", Mode::kOk},
            {"error", Mode::kError},
            {"hang", Mode::kHang},
            {"slow", Mode::kSlow},
            {"fragile", Mode::kFragile},
        }};
        const auto* const found = std::find_if(kModes.begin(), kModes.end(),
                                               [&](const auto& m) { return m.first == *name; });
        if (found == kModes.end()) {
          Fail(node, full,
               fmt::format(R"(must be "ok", "error", "hang", "slow" or "fragile", got "{}")",
                           *name));
          return;
        }
        phase.mode = found->second;
        Remember(full, node);
      }
    } else if (key == "latency") {
      duration(phase.latency);
    } else if (key == "capacity") {
      if (std::optional<std::int64_t> capacity = Int(node, full)) {
        if (*capacity < 1 || *capacity > 1'000'000) {
          Fail(node, full, fmt::format("must be in [1, 1000000], got {}", *capacity));
          return;
        }
        phase.capacity = static_cast<std::uint32_t>(*capacity);
        Remember(full, node);
      }
    } else if (key == "relapse") {
      duration(phase.relapse);
      if (where_.contains(full) && phase.relapse <= 0) {
        Fail(node, full, "must be > 0");
      }
    } else {
      Fail(node, full, "unknown key");
    }
  }

  void CheckPhaseKeys(const Phase& phase, const toml::node& table_node, const std::string& p) {
    const toml::table& table = *table_node.as_table();
    for (std::string_view required : {"from", "to", "mode"}) {
      if (!table.contains(required)) {
        Fail(table_node, p, fmt::format("missing key: {}", required));
      }
    }
    const bool fragile = phase.mode == Mode::kFragile;
    for (std::string_view key : {"capacity", "relapse"}) {
      const std::string full = fmt::format("{}.{}", p, key);
      if (fragile && !table.contains(key)) {
        Fail(table_node, p, fmt::format("mode \"fragile\" needs {}", key));
      } else if (!fragile && where_.contains(full)) {
        FailAt(full, "only valid with mode = \"fragile\"");
      }
    }
  }

  void ApplyUpstream(const toml::table& table) {
    for (const auto& [k, v] : table) {
      const std::string full = fmt::format("upstream.{}", k.str());
      if (k.str() == "latency") {
        if (std::optional<Micros> latency = DurationValue(v, full)) {
          scenario_.upstream_latency = *latency;
          Remember(full, v);
        }
      } else if (k.str() == "phase") {
        const toml::array* array = v.as_array();
        if (array == nullptr || !array->is_array_of_tables()) {
          Fail(v, full, "expected [[upstream.phase]] tables");
          continue;
        }
        scenario_.phases.clear();
        ForgetPrefix("upstream.phase[");
        std::size_t index = 0;
        for (const toml::node& element : *array) {
          const std::string prefix = fmt::format("upstream.phase[{}]", index);
          Phase phase;
          for (const auto& [pk, pv] : *element.as_table()) {
            ApplyPhaseKey(phase, pk.str(), pv, fmt::format("{}.{}", prefix, pk.str()));
          }
          CheckPhaseKeys(phase, element, prefix);
          Remember(prefix, element);
          scenario_.phases.push_back(phase);
          ++index;
        }
      } else {
        Fail(v, full, "unknown key");
      }
    }
  }

  void ForgetPrefix(std::string_view prefix) {
    std::erase_if(where_, [&](const auto& entry) { return entry.first.starts_with(prefix); });
  }

  // ---- overrides ----

  std::unique_ptr<toml::node> OverrideNode(const std::string& key, KeyKind kind,
                                           std::string_view text) {
    switch (kind) {
      case KeyKind::kDuration: {
        bool too_large = false;
        if (ParseDuration(text, &too_large) || too_large) {
          // A value too large is refused by DurationValue(), with the range.
          return std::make_unique<toml::value<std::string>>(std::string(text));
        }
        if (std::optional<double> seconds = ParseDouble(text)) {
          return std::make_unique<toml::value<double>>(*seconds);
        }
        break;
      }
      case KeyKind::kInteger:
        if (std::optional<std::int64_t> value = ParseInt(text)) {
          return std::make_unique<toml::value<std::int64_t>>(*value);
        }
        break;
      case KeyKind::kNumber:
        if (std::optional<double> value = ParseDouble(text)) {
          return std::make_unique<toml::value<double>>(*value);
        }
        break;
      case KeyKind::kBool:
        if (text == "true" || text == "false") {
          return std::make_unique<toml::value<bool>>(text == "true");
        }
        break;
      case KeyKind::kString:
        return std::make_unique<toml::value<std::string>>(std::string(text));
    }
    static constexpr std::array<std::string_view, 5> kExpected = {
        "a duration", "an integer", "a number", "true or false", "a string"};
    Fail(Location{0, 0, key + " (override)"},
         fmt::format("bad value \"{}\": expected {}", text,
                     kExpected[static_cast<std::size_t>(kind)]));
    return nullptr;
  }

  void ApplyOverrideLocked(const Override& o) {
    const std::optional<KeyKind> kind = LookupKeyKind(o.key);
    if (!kind) {
      Fail(Location{0, 0, o.key + " (override)"}, "unknown key");
      return;
    }
    const std::unique_ptr<toml::node> node = OverrideNode(o.key, *kind, o.value);
    if (node == nullptr) {
      return;
    }
    const std::optional<std::vector<KeySegment>> split = SplitKey(o.key);
    if (!split) {
      return;  // LookupKeyKind() refused it above
    }
    const std::vector<KeySegment>& segments = *split;
    const std::string_view head = segments[0].name;
    if (segments.size() == 1) {
      ApplyRootKey(head, *node, o.key);
    } else if (head == "breaker") {
      ApplyBreakerKey(segments[1].name, *node, o.key);
    } else if (head == "traffic" && segments[1].name != "stream") {
      if (traffic_form_ != TrafficForm::kSingle) {
        Fail(Location{0, 0, o.key + " (override)"},
             "the scenario has [[traffic.stream]] tables: use traffic.stream[i].<key>");
        return;
      }
      ApplyStreamKey(scenario_.streams.front(), segments[1].name, *node, o.key);
    } else if (head == "traffic") {
      const std::size_t i = segments[1].index.value_or(0);
      if (traffic_form_ != TrafficForm::kStreams || i >= scenario_.streams.size()) {
        Fail(Location{0, 0, o.key + " (override)"}, "no such stream");
        return;
      }
      ApplyStreamKey(scenario_.streams[i], segments[2].name, *node, o.key);
    } else if (head == "upstream" && segments[1].name == "latency") {
      if (std::optional<Micros> latency = DurationValue(*node, o.key)) {
        scenario_.upstream_latency = *latency;
      }
    } else {
      const std::size_t i = segments[1].index.value_or(0);
      if (i >= scenario_.phases.size()) {
        Fail(Location{0, 0, o.key + " (override)"}, "no such phase");
        return;
      }
      ApplyPhaseKey(scenario_.phases[i], segments[2].name, *node, o.key);
      if (segments[2].name == "mode") {
        CheckModeOverride(i);
      }
    }
  }

  void CheckModeOverride(std::size_t i) {
    const Phase& phase = scenario_.phases[i];
    const std::string prefix = fmt::format("upstream.phase[{}]", i);
    const bool fragile = phase.mode == Mode::kFragile;
    if (fragile && (phase.capacity == 0 || phase.relapse == 0)) {
      Fail(Location{0, 0, prefix + ".mode (override)"},
           "mode \"fragile\" needs capacity and relapse in the file");
    }
  }

  // ---- whole-scenario checks ----

  void CheckTraffic() {
    if (scenario_.streams.empty()) {
      Fail(Location{0, 0, "traffic"},
           "missing: give [traffic] with a rate, or [[traffic.stream]] tables");
    }
  }

  // The calls the traffic asks for, against kMaxExpectedCalls: points at the rate of the stream
  // that asks for the most.
  void CheckExpectedCalls() {
    double total = 0.0;
    double most = -1.0;
    std::size_t most_index = 0;
    for (std::size_t i = 0; i < scenario_.streams.size(); ++i) {
      const Stream& stream = scenario_.streams[i];
      const Micros span = std::max<Micros>(scenario_.duration - stream.start, 0);
      const double calls = stream.rate * static_cast<double>(span) / 1e6;
      total += calls;
      if (calls > most) {
        most = calls;
        most_index = i;
      }
    }
    if (total <= kMaxExpectedCalls) {
      return;
    }
    const std::string rate_key = traffic_form_ == TrafficForm::kStreams
                                     ? fmt::format("traffic.stream[{}].rate", most_index)
                                     : std::string("traffic.rate");
    // Point at what the layer that broke the limit set (a variant or an override): a variant
    // that only lengthens the duration is the one to fix, not the file's rate.
    auto set_by_layer = [&](const std::string& key) {
      auto it = where_.find(key);
      return it != where_.end() && it->second.key != key;
    };
    const std::string key =
        !set_by_layer(rate_key) && set_by_layer("duration") ? "duration" : rate_key;
    const std::string streams = scenario_.streams.size() > 1
                                    ? fmt::format(" in all, {:.0f} of them from this stream", most)
                                    : std::string();
    FailAt(key, fmt::format("the traffic asks for {:.0f} calls{} (rate x (duration - start), "
                            "duration {} s), more than the limit of {:.0f} calls per run: lower "
                            "the rate or the duration",
                            total, streams, FormatSeconds(scenario_.duration), kMaxExpectedCalls));
  }

  void CheckPhases() {
    std::vector<std::size_t> order(scenario_.phases.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    for (std::size_t i : order) {
      const Phase& phase = scenario_.phases[i];
      if (phase.to <= phase.from) {
        FailAt(fmt::format("upstream.phase[{}].to", i),
               fmt::format("must be after from ({} s), got {} s", FormatSeconds(phase.from),
                           FormatSeconds(phase.to)));
      }
    }
    if (error_) {
      return;
    }
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return scenario_.phases[a].from < scenario_.phases[b].from;
    });
    for (std::size_t k = 1; k < order.size(); ++k) {
      const Phase& before = scenario_.phases[order[k - 1]];
      const Phase& after = scenario_.phases[order[k]];
      if (after.from < before.to) {
        const std::size_t a = std::min(order[k - 1], order[k]);
        const std::size_t b = std::max(order[k - 1], order[k]);
        const Phase& pa = scenario_.phases[a];
        const Phase& pb = scenario_.phases[b];
        FailAt(fmt::format("upstream.phase[{}].from", b),
               fmt::format("phase [{} s, {} s) overlaps upstream.phase[{}] [{} s, {} s)",
                           FormatSeconds(pb.from), FormatSeconds(pb.to), a, FormatSeconds(pa.from),
                           FormatSeconds(pa.to)));
        return;
      }
    }
    std::vector<Phase> sorted;
    sorted.reserve(order.size());
    for (std::size_t i : order) {
      sorted.push_back(scenario_.phases[i]);
    }
    scenario_.phases = std::move(sorted);
  }

  std::string file_;
  std::string prefix_;  // display prefix of the table being applied ("variant[1].")
  bool overriding_ = false;
  Scenario scenario_;
  TrafficForm traffic_form_ = TrafficForm::kNone;
  // Canonical key ("breaker.cooldown", "upstream.phase[1].from") -> where it was last set.
  std::map<std::string, Location, std::less<>> where_;
  std::optional<LoadError> error_;
};

std::string DefaultName(std::string_view path) {
  std::string stem = std::filesystem::path(path).stem().string();
  return stem.empty() ? std::string("scenario") : stem;
}

struct VariantTable {
  std::string name;
  const toml::table* table;
  std::size_t index;
};

// The [[variant]] tables, checked for shape and unique names.
Result<std::vector<VariantTable>, LoadError> Variants(const toml::table& root,
                                                      const std::string& path) {
  std::vector<VariantTable> out;
  const toml::node* node = root.get("variant");
  if (node == nullptr) {
    return out;
  }
  auto error_at = [&](const toml::node& n, std::string key, std::string message) {
    return LoadError{path, static_cast<int>(n.source().begin.line),
                     static_cast<int>(n.source().begin.column), std::move(key), std::move(message)};
  };
  const toml::array* array = node->as_array();
  if (array == nullptr || !array->is_array_of_tables()) {
    return error_at(*node, "variant", "expected [[variant]] tables");
  }
  std::size_t index = 0;
  for (const toml::node& element : *array) {
    const toml::table& table = *element.as_table();
    const std::string key = fmt::format("variant[{}]", index);
    const toml::node* name = table.get("name");
    if (name == nullptr) {
      return error_at(element, key, "missing key: name");
    }
    if (!name->is_string()) {
      return error_at(*name, key + ".name",
                      fmt::format("expected a string, got {}", TypeName(*name)));
    }
    const std::string text = name->as_string()->get();
    for (const VariantTable& other : out) {
      if (other.name == text) {
        return error_at(
            *name, key + ".name",
            fmt::format("duplicate variant name \"{}\" (also variant[{}])", text, other.index));
      }
    }
    out.push_back(VariantTable{text, &table, index});
    ++index;
  }
  return out;
}

}  // namespace

std::string_view ToString(Arrivals arrivals) noexcept {
  return arrivals == Arrivals::kUniform ? "uniform" : "poisson";
}

std::string_view ToString(Mode mode) noexcept {
  switch (mode) {
    case Mode::kOk:
      return "ok";
    case Mode::kError:
      return "error";
    case Mode::kHang:
      return "hang";
    case Mode::kSlow:
      return "slow";
    case Mode::kFragile:
      return "fragile";
  }
  return "?";
}

std::string LoadError::ToString() const {
  std::string out = file;
  if (line > 0) {
    out += fmt::format(":{}", line);
    if (column > 0) {
      out += fmt::format(":{}", column);
    }
  }
  out += ": ";
  if (!key.empty()) {
    out += key;
    out += ": ";
  }
  out += message;
  return out;
}

std::optional<KeyKind> LookupKeyKind(std::string_view dotted_key) {
  const std::optional<std::vector<KeySegment>> segments = SplitKey(dotted_key);
  if (!segments) {
    return std::nullopt;
  }
  const std::vector<KeySegment>& s = *segments;
  auto plain = [&](std::size_t i) { return !s[i].index.has_value(); };
  if (s.size() == 1 && plain(0)) {
    return FindKind(kRootKeys, s[0].name);
  }
  if (s.size() == 2 && plain(0) && plain(1)) {
    if (s[0].name == "breaker") {
      return FindKind(kBreakerKeys, s[1].name);
    }
    if (s[0].name == "traffic") {
      return FindKind(kStreamKeys, s[1].name);
    }
    if (s[0].name == "upstream") {
      return FindKind(kUpstreamKeys, s[1].name);
    }
    return std::nullopt;
  }
  if (s.size() == 3 && plain(0) && !plain(1) && plain(2)) {
    if (s[0].name == "traffic" && s[1].name == "stream") {
      return FindKind(kStreamKeys, s[2].name);
    }
    if (s[0].name == "upstream" && s[1].name == "phase") {
      return FindKind(kPhaseKeys, s[2].name);
    }
  }
  return std::nullopt;
}

std::optional<Micros> ParseDuration(std::string_view text, bool* too_large) {
  std::size_t i = 0;
  std::uint64_t mantissa = 0;
  int digits = 0;
  int fraction_digits = 0;
  bool seen_point = false;
  bool overflow = false;  // more than 18 digits before the point
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '.' && !seen_point) {
      seen_point = true;
      continue;
    }
    if (c < '0' || c > '9') {
      break;
    }
    if (mantissa == 0 && c == '0' && !seen_point) {
      continue;  // leading zeros carry nothing
    }
    if (digits == 18) {
      // A 19th integer digit is beyond any duration; a 19th fraction digit is below 1e-18 of
      // the value: dropping it does not change the rounding to the microsecond (it only lowers
      // the value, and llround rounds halves up).
      overflow = overflow || !seen_point;
      continue;
    }
    ++digits;
    mantissa = mantissa * 10 + static_cast<std::uint64_t>(c - '0');
    if (seen_point) {
      ++fraction_digits;
    }
  }
  // At least one digit, and not a lone ".".
  if (i == 0 || (seen_point && i == 1)) {
    return std::nullopt;
  }
  const std::string_view unit = text.substr(i);
  long double multiplier = 0;
  if (unit == "us") {
    multiplier = 1;
  } else if (unit == "ms") {
    multiplier = 1e3L;
  } else if (unit == "s") {
    multiplier = 1e6L;
  } else if (unit == "m") {
    multiplier = 6e7L;
  } else {
    return std::nullopt;
  }
  // mantissa * multiplier is exact in a long double (64-bit significand) for the sizes allowed
  // here, so the result is rounded once.
  const long double micros =
      static_cast<long double>(mantissa) * multiplier / std::pow(10.0L, fraction_digits);
  if (overflow || micros > static_cast<long double>(kMaxDuration)) {
    if (too_large != nullptr) {
      *too_large = true;
    }
    return std::nullopt;
  }
  return static_cast<Micros>(std::llroundl(micros));
}

std::string FormatSeconds(Micros micros) {
  const bool negative = micros < 0;
  const std::uint64_t magnitude =
      negative ? static_cast<std::uint64_t>(-(micros + 1)) + 1 : static_cast<std::uint64_t>(micros);
  std::string fraction = fmt::format("{:06}", magnitude % 1'000'000U);
  while (fraction.size() > 1 && fraction.back() == '0') {
    fraction.pop_back();
  }
  return fmt::format("{}{}.{}", negative ? "-" : "", magnitude / 1'000'000U, fraction);
}

Result<ScenarioFile, LoadError> LoadScenarioFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return LoadError{path, 0, 0, "", "cannot open the file"};
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    return LoadError{path, 0, 0, "", "cannot read the file"};
  }
  return LoadScenarioString(text.str(), path);
}

Result<ScenarioFile, LoadError> LoadScenarioString(std::string_view text, std::string_view path) {
  ScenarioFile file;
  file.path_ = std::string(path);
  file.parsed_ = std::make_unique<ScenarioFile::Parsed>();
  try {
    file.parsed_->root = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    return LoadError{file.path_, static_cast<int>(e.source().begin.line),
                     static_cast<int>(e.source().begin.column), "", std::string(e.description())};
  }
  Result<Scenario, LoadError> base = BuildScenario(file, BuildOptions{});
  if (!base) {
    return base.error();
  }
  file.base_ = std::move(*base);
  Result<std::vector<VariantTable>, LoadError> variants = Variants(file.parsed_->root, file.path_);
  if (!variants) {
    return variants.error();
  }
  for (const VariantTable& variant : *variants) {
    BuildOptions options;
    options.variant = variant.name;
    Result<Scenario, LoadError> built = BuildScenario(file, options);
    if (!built) {
      return built.error();
    }
    file.variants_.push_back(std::move(*built));
  }
  return file;
}

Result<Scenario, LoadError> BuildScenario(const ScenarioFile& file, const BuildOptions& options) {
  const toml::table& root = file.parsed_->root;
  Builder builder(file.path_, DefaultName(file.path_));
  builder.ApplyRoot(root, "", /*is_variant=*/false);
  if (options.variant) {
    Result<std::vector<VariantTable>, LoadError> variants = Variants(root, file.path_);
    if (!variants) {
      return variants.error();
    }
    const auto found = std::find_if(variants->begin(), variants->end(), [&](const VariantTable& v) {
      return v.name == *options.variant;
    });
    if (found == variants->end()) {
      std::string names;
      for (const VariantTable& v : *variants) {
        names += names.empty() ? "" : ", ";
        names += "\"" + v.name + "\"";
      }
      return LoadError{file.path_, 0, 0, "variant",
                       fmt::format("no variant named \"{}\" (the file has: {})", *options.variant,
                                   names.empty() ? std::string("none") : names)};
    }
    builder.ApplyRoot(*found->table, fmt::format("variant[{}].", found->index),
                      /*is_variant=*/true);
  }
  for (const Override& o : options.overrides) {
    builder.ApplyOverride(o);
  }
  if (options.seed) {
    builder.SetSeed(*options.seed);
  }
  return builder.Finish();
}

}  // namespace fusebox::sim
