// [upstream] and its [[upstream.phase]] tables. The phase table's common part (from, to, mode,
// unknown keys, the error format, span checks) is the apps' shared reader
// (common/phase_schedule.h), so vpic-sim reads the same files the same way; this file adds the
// simulator's modes and keys (latency; capacity/relapse for fragile and warming;
// cold_capacity/warmup for warming).
#include <fmt/format.h>

#include <array>
#include <vector>

#include "common/phase_schedule.h"
#include "scenario_reader.h"

namespace fusebox::sim {
namespace {

// In Mode's order.
constexpr std::array<std::string_view, 6> kModeNames = {"ok",   "error",   "hang",
                                                        "slow", "fragile", "warming"};
// The phase keys beyond from/to/mode.
constexpr std::array<std::string_view, 5> kToolPhaseKeys = {"latency", "capacity", "relapse",
                                                            "cold_capacity", "warmup"};

std::optional<std::string> CapacityRange(const SettingValue& v) {
  if (v.integer < 1 || v.integer > 1'000'000) {
    return fmt::format("must be in [1, 1000000], got {}", v.integer);
  }
  return std::nullopt;
}

std::optional<std::string> Positive(const SettingValue& v) {
  if (v.integer <= 0) {
    return "must be > 0";
  }
  return std::nullopt;
}

constexpr auto kUpstreamSettings = std::to_array<Setting<Scenario>>({
    {"latency",
     KeyKind::kDuration,
     "the healthy upstream's latency (default 20ms)",
     {},
     nullptr,
     [](Scenario& s, const SettingValue& v) { s.upstream_latency = v.integer; }},
});

constexpr auto kPhaseSettings = std::to_array<Setting<Phase>>({
    {"from",
     KeyKind::kDuration,
     "the phase covers [from, to) (required)",
     {},
     nullptr,
     [](Phase& p, const SettingValue& v) { p.from = v.integer; }},
    {"to",
     KeyKind::kDuration,
     "after from (required)",
     {},
     nullptr,
     [](Phase& p, const SettingValue& v) { p.to = v.integer; }},
    {"mode", KeyKind::kString, "ok, error, hang, slow, fragile or warming (required)", kModeNames,
     nullptr, [](Phase& p, const SettingValue& v) { p.mode = static_cast<Mode>(v.choice); }},
    {"latency",
     KeyKind::kDuration,
     "each call's latency in the phase (default 0)",
     {},
     nullptr,
     [](Phase& p, const SettingValue& v) { p.latency = v.integer; }},
    {"capacity",
     KeyKind::kInteger,
     "fragile, warming (when warm): calls in flight it serves, in [1, 1000000]",
     {},
     &CapacityRange,
     [](Phase& p, const SettingValue& v) { p.capacity = static_cast<std::uint32_t>(v.integer); }},
    {"relapse",
     KeyKind::kDuration,
     "fragile, warming: how long it fails once collapsed, > 0",
     {},
     &Positive,
     [](Phase& p, const SettingValue& v) { p.relapse = v.integer; }},
    {"cold_capacity",
     KeyKind::kInteger,
     "warming: calls in flight it serves when cold, in [1, capacity]",
     {},
     &CapacityRange,
     [](Phase& p, const SettingValue& v) {
       p.cold_capacity = static_cast<std::uint32_t>(v.integer);
     }},
    {"warmup",
     KeyKind::kDuration,
     "warming: how long it takes from cold to warm, > 0",
     {},
     &Positive,
     [](Phase& p, const SettingValue& v) { p.warmup = v.integer; }},
});

}  // namespace

std::span<const Setting<Scenario>> UpstreamSettings() { return kUpstreamSettings; }
std::span<const Setting<Phase>> PhaseSettings() { return kPhaseSettings; }

void ScenarioReader::ApplyPhaseKey(Phase& phase, std::string_view key, const toml::node& node,
                                   const std::string& full) {
  Apply(PhaseSettings(), phase, key, node, full);
}

// The simulator's own rule: capacity and relapse belong to fragile and warming phases, which need
// both; cold_capacity and warmup belong to warming phases, which need both too.
void ScenarioReader::CheckPhaseKeys(const Phase& phase, const toml::node& table_node,
                                    const std::string& p) {
  const toml::table& table = *table_node.as_table();
  const bool warming = phase.mode == Mode::kWarming;
  const bool fragile = phase.mode == Mode::kFragile || warming;
  const std::string_view mode = warming ? "warming" : "fragile";
  for (std::string_view key : {"capacity", "relapse"}) {
    const std::string full = fmt::format("{}.{}", p, key);
    if (fragile && !table.contains(key)) {
      Fail(table_node, p, fmt::format("mode \"{}\" needs {}", mode, key));
    } else if (!fragile && where_.contains(full)) {
      FailAt(full, "only valid with mode = \"fragile\" or \"warming\"");
    }
  }
  for (std::string_view key : {"cold_capacity", "warmup"}) {
    const std::string full = fmt::format("{}.{}", p, key);
    if (warming && !table.contains(key)) {
      Fail(table_node, p, fmt::format("mode \"warming\" needs {}", key));
    } else if (!warming && where_.contains(full)) {
      FailAt(full, "only valid with mode = \"warming\"");
    }
  }
  if (warming && table.contains("cold_capacity") && table.contains("capacity") &&
      phase.cold_capacity > phase.capacity) {
    FailAt(fmt::format("{}.cold_capacity", p), fmt::format("must be at most capacity ({}), got {}",
                                                           phase.capacity, phase.cold_capacity));
  }
}

void ScenarioReader::ApplyUpstream(const toml::table& table) {
  for (const auto& [k, v] : table) {
    const std::string full = fmt::format("upstream.{}", k.str());
    if (k.str() != "phase") {
      Apply(UpstreamSettings(), scenario_, k.str(), v, full);
      continue;
    }
    static constexpr app::PhaseVocabulary kVocabulary{kModeNames, kToolPhaseKeys};
    Result<std::vector<app::PhaseTable>, LoadError> tables =
        app::ReadPhaseTables(v, file_, prefix_, kVocabulary);
    if (!tables) {
      Fail(tables.error());
      continue;
    }
    scenario_.phases.clear();
    ForgetPrefix("upstream.phase[");
    for (const app::PhaseTable& read : *tables) {
      const std::string prefix = app::PhaseKey(read.index);
      Phase phase;
      phase.from = read.from;
      phase.to = read.to;
      phase.mode = static_cast<Mode>(read.mode);
      for (const auto& [pk, pv] : *read.table) {
        const std::string key_full = fmt::format("{}.{}", prefix, pk.str());
        if (pk.str() == "from" || pk.str() == "to" || pk.str() == "mode") {
          Remember(key_full, pv);  // read by the shared reader
        } else {
          ApplyPhaseKey(phase, pk.str(), pv, key_full);
        }
      }
      const toml::node& element = *read.table;
      CheckPhaseKeys(phase, element, prefix);
      Remember(prefix, element);
      scenario_.phases.push_back(phase);
    }
  }
}

void ScenarioReader::CheckPhases() {
  std::vector<app::PhaseSpan> spans;
  spans.reserve(scenario_.phases.size());
  for (const Phase& phase : scenario_.phases) {
    spans.push_back(app::PhaseSpan{phase.from, phase.to});
  }
  if (std::optional<app::PhaseProblem> problem = app::CheckPhaseSpans(spans)) {
    FailAt(fmt::format("{}.{}", app::PhaseKey(problem->index), problem->field), problem->message);
    return;
  }
  std::vector<Phase> sorted;
  sorted.reserve(spans.size());
  for (std::size_t i : app::TimeOrder(spans)) {
    sorted.push_back(scenario_.phases[i]);
  }
  scenario_.phases = std::move(sorted);
}

}  // namespace fusebox::sim
