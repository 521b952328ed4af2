#include "fault_spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace fusebox::vpic_sim {
namespace {

constexpr Micros kMaxLatency = 3600 * kMicrosPerSecond;
constexpr Micros kDefaultSlowLatency = 5 * kMicrosPerSecond;
constexpr Micros kDefaultFragileRelapse = 5 * kMicrosPerSecond;

constexpr std::array kModes = {FaultMode::kOk,        FaultMode::kError, FaultMode::kHang,
                               FaultMode::kSlow,      FaultMode::kReset, FaultMode::kGarbage,
                               FaultMode::kTruncated, FaultMode::kDrip,  FaultMode::kFlap,
                               FaultMode::kCapacity,  FaultMode::kQueue, FaultMode::kInterim};

constexpr std::array<std::string_view, 13> kModeNames = {
    "ok",   "error", "hang",     "slow",  "reset",   "garbage", "truncated",
    "drip", "flap",  "capacity", "queue", "interim", "fragile"};

using Options = FaultOptions;

// The settings: name, JSON name, kind, help, range [lo, hi] of the built value (lo > hi: checked
// by ValidateAs itself), the built value, where a given value goes.
constexpr auto kFields = std::to_array<FaultField>({
    {"status", "status", FieldKind::kInteger, "error/flap/relapse HTTP status: 429 500 502 503 504",
     1, 0,
     [](const FaultSpec& s) -> std::optional<double> { return static_cast<double>(s.status); },
     &Options::status, nullptr, nullptr},
    {"retry_after", "retry_after_s", FieldKind::kWholeSeconds,
     "Retry-After seconds (default 1 with 429)", 0, 86400,
     [](const FaultSpec& s) -> std::optional<double> {
       return s.retry_after_s ? std::optional<double>(*s.retry_after_s) : std::nullopt;
     },
     &Options::retry_after_s, nullptr, nullptr},
    {"latency", "latency_ms", FieldKind::kDuration,
     "fixed latency, or the lognormal median (a duration)", 0, kMaxLatency,
     [](const FaultSpec& s) -> std::optional<double> {
       return static_cast<double>(s.latency.value);
     },
     &Options::latency, nullptr, nullptr},
    {"latency_dist", "latency_dist", FieldKind::kText, "fixed, uniform or lognormal", 1, 0,
     [](const FaultSpec&) -> std::optional<double> { return std::nullopt; }, nullptr, nullptr,
     &Options::latency_dist},
    {"latency_min", "latency_min_ms", FieldKind::kDuration, "uniform: lowest latency", 0,
     kMaxLatency,
     [](const FaultSpec& s) -> std::optional<double> { return static_cast<double>(s.latency.min); },
     &Options::latency_min, nullptr, nullptr},
    {"latency_max", "latency_max_ms", FieldKind::kDuration,
     "uniform: highest latency; lognormal: cap", 0, kMaxLatency,
     [](const FaultSpec& s) -> std::optional<double> { return static_cast<double>(s.latency.max); },
     &Options::latency_max, nullptr, nullptr},
    {"latency_sigma", "latency_sigma", FieldKind::kNumber, "lognormal sigma (default 0.5)", 0, 10,
     [](const FaultSpec& s) -> std::optional<double> { return s.latency.sigma; }, nullptr,
     &Options::latency_sigma, nullptr},
    {"every", "every", FieldKind::kInteger,
     "flap: run length of ok and of error (default 5); interim: one answer in N (default 1)", 1,
     1'000'000,
     [](const FaultSpec& s) -> std::optional<double> { return static_cast<double>(s.every); },
     &Options::every, nullptr, nullptr},
    {"capacity", "capacity", FieldKind::kInteger,
     "capacity, queue: requests served at once (default 1)", 1, 1'000'000,
     [](const FaultSpec& s) -> std::optional<double> { return static_cast<double>(s.capacity); },
     &Options::capacity, nullptr, nullptr},
    {"queue_limit", "queue_limit", FieldKind::kInteger,
     "queue: requests that may wait for a server; one more gets 503 (default: no bound)", 0,
     1'000'000, [](const FaultSpec& s) -> std::optional<double> { return s.queue_limit; },
     &Options::queue_limit, nullptr, nullptr},
    {"relapse", "relapse_ms", FieldKind::kDuration,
     "capacity: collapse time after an overload (default 0)", 0, kMaxLatency,
     [](const FaultSpec& s) -> std::optional<double> { return static_cast<double>(s.relapse); },
     &Options::relapse, nullptr, nullptr},
    {"drip_bytes", "drip_bytes", FieldKind::kInteger, "drip: bytes per interval (default 4)", 1,
     65536,
     [](const FaultSpec& s) -> std::optional<double> { return static_cast<double>(s.drip_bytes); },
     &Options::drip_bytes, nullptr, nullptr},
    {"drip_interval", "drip_interval_ms", FieldKind::kDuration, "drip: interval (default 1s)",
     kMicrosPerMilli, 60 * kMicrosPerSecond,
     [](const FaultSpec& s)
         -> std::optional<double> { return static_cast<double>(s.drip_interval); },
     &Options::drip_interval, nullptr, nullptr},
    {"interim_status", "interim_status", FieldKind::kInteger,
     "interim: the 1xx status sent first (default 103; not 101)", 1, 0,
     [](const FaultSpec& s) -> std::optional<double> {
       return static_cast<double>(s.interim_status);
     },
     &Options::interim_status, nullptr, nullptr},
});

ConfigError Bad(std::string_view canonical, Syntax syntax, std::string_view what) {
  const std::string name = FieldName(canonical, syntax);
  return ConfigError{name, fmt::format("{} {}", name, what)};
}

std::string FormatMicros(Micros us, Syntax syntax) {
  if (syntax == Syntax::kJson) {
    return fmt::format("{} ms", static_cast<double>(us) / 1000.0);
  }
  return fmt::format("{}ms", static_cast<double>(us) / 1000.0);
}

// A value of `field` as messages give it: durations in milliseconds, counts as integers.
std::string FormatValue(const FaultField& field, double value, Syntax syntax) {
  switch (field.kind) {
    case FieldKind::kDuration:
      return FormatMicros(static_cast<Micros>(value), syntax);
    case FieldKind::kNumber:
      return fmt::format("{}", value);
    case FieldKind::kInteger:
    case FieldKind::kWholeSeconds:
    case FieldKind::kText:
      break;
  }
  return fmt::format("{}", static_cast<std::int64_t>(value));
}

// The first setting of `s` outside its range, in FaultFields() order.
std::optional<ConfigError> ValidateAs(const FaultSpec& s, Syntax syntax) {
  for (const FaultField& field : kFields) {
    if (field.name == "status") {
      if (s.status != 429 && s.status != 500 && s.status != 502 && s.status != 503 &&
          s.status != 504) {
        return Bad("status", syntax,
                   fmt::format("must be one of 429, 500, 502, 503, 504, got {}", s.status));
      }
      continue;
    }
    if (field.name == "interim_status") {
      if (s.interim_status < 100 || s.interim_status > 199 || s.interim_status == 101) {
        return Bad("interim_status", syntax,
                   fmt::format("must be in [100, 199] but not 101, got {}", s.interim_status));
      }
      continue;
    }
    const std::optional<double> given = field.in_spec(s);
    const double value = given.value_or(0.0);
    if (field.lo <= field.hi && given &&
        !(value >= static_cast<double>(field.lo) && value <= static_cast<double>(field.hi))) {
      return Bad(field.name, syntax,
                 fmt::format("must be in [{}, {}], got {}",
                             FormatValue(field, static_cast<double>(field.lo), syntax),
                             FormatValue(field, static_cast<double>(field.hi), syntax),
                             FormatValue(field, value, syntax)));
    }
    if (field.name == "latency_max" && s.latency.dist == LatencyDist::kUniform &&
        s.latency.max < s.latency.min) {
      return Bad("latency_max", syntax,
                 fmt::format("must be >= {} ({}) for a uniform latency, got {}",
                             FieldName("latency_min", syntax), FormatMicros(s.latency.min, syntax),
                             FormatMicros(s.latency.max, syntax)));
    }
  }
  return std::nullopt;
}

// Narrows an integer option, reporting values that do not fit an int as out of range.
std::optional<ConfigError> ToInt(std::string_view name, std::int64_t v, Syntax syntax, int& out) {
  if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max()) {
    return Bad(name, syntax, fmt::format("is out of range, got {}", v));
  }
  out = static_cast<int>(v);
  return std::nullopt;
}

}  // namespace

std::span<const FaultField> FaultFields() { return kFields; }

const FaultField* FindFaultField(std::string_view name, Syntax syntax) {
  for (const FaultField& field : kFields) {
    if (FieldName(field.name, syntax) == name) {
      return &field;
    }
  }
  return nullptr;
}

std::span<const std::string_view> FaultModeNames() { return kModeNames; }

std::string_view ToString(FaultMode mode) {
  switch (mode) {
    case FaultMode::kOk:
      return "ok";
    case FaultMode::kError:
      return "error";
    case FaultMode::kHang:
      return "hang";
    case FaultMode::kSlow:
      return "slow";
    case FaultMode::kReset:
      return "reset";
    case FaultMode::kGarbage:
      return "garbage";
    case FaultMode::kTruncated:
      return "truncated";
    case FaultMode::kDrip:
      return "drip";
    case FaultMode::kFlap:
      return "flap";
    case FaultMode::kCapacity:
      return "capacity";
    case FaultMode::kQueue:
      return "queue";
    case FaultMode::kInterim:
      return "interim";
  }
  return "";
}

std::optional<FaultMode> ParseFaultMode(std::string_view name) {
  if (name == "fragile") {
    return FaultMode::kCapacity;
  }
  for (FaultMode mode : kModes) {
    if (ToString(mode) == name) {
      return mode;
    }
  }
  return std::nullopt;
}

std::string_view ToString(LatencyDist dist) {
  switch (dist) {
    case LatencyDist::kFixed:
      return "fixed";
    case LatencyDist::kUniform:
      return "uniform";
    case LatencyDist::kLognormal:
      return "lognormal";
  }
  return "";
}

std::optional<ConfigError> FaultSpec::Validate() const { return ValidateAs(*this, Syntax::kToml); }

std::string FieldName(std::string_view canonical, Syntax syntax) {
  switch (syntax) {
    case Syntax::kToml:
      return std::string(canonical);
    case Syntax::kJson:
      for (const FaultField& field : kFields) {
        if (field.name == canonical) {
          return std::string(field.json);
        }
      }
      return std::string(canonical);
    case Syntax::kFlags: {
      std::string flag = "--" + std::string(canonical);
      std::replace(flag.begin(), flag.end(), '_', '-');
      return flag;
    }
  }
  return std::string(canonical);
}

Result<FaultSpec, ConfigError> BuildFaultSpec(const FaultOptions& o, Syntax syntax) {
  FaultSpec s;
  const std::optional<FaultMode> mode = ParseFaultMode(o.mode);
  if (!mode) {
    std::string names;
    for (std::string_view name : FaultModeNames()) {
      names += names.empty() ? "" : ", ";
      names += name;
    }
    return Bad("mode", syntax, fmt::format("must be one of {}; got '{}'", names, o.mode));
  }
  s.mode = *mode;
  if (o.status) {
    if (auto e = ToInt("status", *o.status, syntax, s.status)) {
      return *e;
    }
  }
  if (o.retry_after_s) {
    int v = 0;
    if (auto e = ToInt("retry_after", *o.retry_after_s, syntax, v)) {
      return *e;
    }
    s.retry_after_s = v;
  } else if (s.status == 429) {
    s.retry_after_s = 1;
  }
  const bool any_latency = o.latency || o.latency_min || o.latency_max || o.latency_dist;
  if (o.latency_dist) {
    if (*o.latency_dist == "fixed") {
      s.latency.dist = LatencyDist::kFixed;
    } else if (*o.latency_dist == "uniform") {
      s.latency.dist = LatencyDist::kUniform;
    } else if (*o.latency_dist == "lognormal") {
      s.latency.dist = LatencyDist::kLognormal;
    } else {
      return Bad(
          "latency_dist", syntax,
          fmt::format("must be one of fixed, uniform, lognormal; got '{}'", *o.latency_dist));
    }
  } else if (!o.latency && (o.latency_min || o.latency_max)) {
    s.latency.dist = LatencyDist::kUniform;
  }
  if (s.latency.dist == LatencyDist::kUniform && !o.latency_max) {
    return Bad("latency_max", syntax, "is required for a uniform latency");
  }
  if (!any_latency && s.mode == FaultMode::kSlow) {
    s.latency.value = kDefaultSlowLatency;
  }
  s.latency.value = o.latency.value_or(s.latency.value);
  s.latency.min = o.latency_min.value_or(0);
  s.latency.max = o.latency_max.value_or(0);
  s.latency.sigma = o.latency_sigma.value_or(s.latency.sigma);
  if (o.every) {
    if (auto e = ToInt("every", *o.every, syntax, s.every)) {
      return *e;
    }
  } else if (s.mode == FaultMode::kInterim) {
    s.every = 1;
  }
  if (o.interim_status) {
    if (auto e = ToInt("interim_status", *o.interim_status, syntax, s.interim_status)) {
      return *e;
    }
  }
  if (o.capacity) {
    if (auto e = ToInt("capacity", *o.capacity, syntax, s.capacity)) {
      return *e;
    }
  }
  if (o.queue_limit) {
    int v = 0;
    if (auto e = ToInt("queue_limit", *o.queue_limit, syntax, v)) {
      return *e;
    }
    s.queue_limit = v;
  }
  s.relapse = o.relapse.value_or(o.mode == "fragile" ? kDefaultFragileRelapse : 0);
  if (o.drip_bytes) {
    if (auto e = ToInt("drip_bytes", *o.drip_bytes, syntax, s.drip_bytes)) {
      return *e;
    }
  }
  s.drip_interval = o.drip_interval.value_or(s.drip_interval);
  if (auto e = ValidateAs(s, syntax)) {
    return *e;
  }
  return s;
}

}  // namespace fusebox::vpic_sim
