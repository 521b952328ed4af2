// [upstream] and its [[upstream.phase]] tables. The phase table's common part (from, to, mode,
// unknown keys, the error format, span checks) is the apps' shared reader
// (common/phase_schedule.h), so vpic-sim reads the same files the same way; this file adds the
// simulator's modes and keys (latency; capacity for fragile, warming, queue and refuse;
// relapse for fragile and warming; cold_capacity/warmup for warming).
#include <fmt/format.h>

#include <array>
#include <cstdint>
#include <vector>

#include "common/phase_schedule.h"
#include "scenario_reader.h"

namespace fusebox::sim {
namespace {

// In Mode's order.
constexpr std::array<std::string_view, 8> kModeNames = {"ok",      "error",   "hang",  "slow",
                                                        "fragile", "warming", "queue", "refuse"};
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
    {"mode", KeyKind::kString,
     "ok, error, hang, slow, fragile, warming, queue or refuse (required)", kModeNames, nullptr,
     [](Phase& p, const SettingValue& v) { p.mode = static_cast<Mode>(v.choice); }},
    {"latency",
     KeyKind::kDuration,
     "each call's latency in the phase (default 0)",
     {},
     nullptr,
     [](Phase& p, const SettingValue& v) { p.latency = v.integer; }},
    {"capacity",
     KeyKind::kInteger,
     "fragile, warming (when warm), refuse: calls in flight it serves; queue: its servers; in "
     "[1, 1000000]",
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

// Which modes take each of the simulator's mode-bound phase keys: a phase of such a mode needs
// the key, a phase of any other mode refuses it.
constexpr std::uint32_t Bit(Mode mode) { return 1U << static_cast<unsigned>(mode); }

struct ModeBoundKey {
  std::string_view key;
  std::uint32_t modes;          // Bit() of each mode that takes the key
  bool (*given)(const Phase&);  // whether the phase has a value for it (none is 0)
};

constexpr std::array<ModeBoundKey, 4> kModeBoundKeys = {{
    {"capacity", Bit(Mode::kFragile) | Bit(Mode::kWarming) | Bit(Mode::kQueue) | Bit(Mode::kRefuse),
     [](const Phase& p) { return p.capacity != 0; }},
    {"relapse", Bit(Mode::kFragile) | Bit(Mode::kWarming),
     [](const Phase& p) { return p.relapse != 0; }},
    {"cold_capacity", Bit(Mode::kWarming), [](const Phase& p) { return p.cold_capacity != 0; }},
    {"warmup", Bit(Mode::kWarming), [](const Phase& p) { return p.warmup != 0; }},
}};

bool TakesKey(const ModeBoundKey& bound, Mode mode) { return (bound.modes & Bit(mode)) != 0; }

// `"fragile" or "warming"`: the modes that take `bound`, in Mode's order.
std::string ModesText(const ModeBoundKey& bound) {
  std::vector<std::string_view> names;
  for (std::size_t i = 0; i < kModeNames.size(); ++i) {
    if (TakesKey(bound, static_cast<Mode>(i))) {
      names.push_back(kModeNames[i]);
    }
  }
  std::string text;
  for (std::size_t i = 0; i < names.size(); ++i) {
    text += i == 0 ? "" : (i + 1 == names.size() ? " or " : ", ");
    text += fmt::format("\"{}\"", names[i]);
  }
  return text;
}

}  // namespace

std::span<const Setting<Scenario>> UpstreamSettings() { return kUpstreamSettings; }
std::span<const Setting<Phase>> PhaseSettings() { return kPhaseSettings; }

void ScenarioReader::ApplyPhaseKey(Phase& phase, std::string_view key, const toml::node& node,
                                   const std::string& full) {
  Apply(PhaseSettings(), phase, key, node, full);
}

// The simulator's own rule: capacity belongs to the modes with a capacity (fragile, warming,
// queue, refuse), relapse to the ones that collapse (fragile, warming), cold_capacity and warmup
// to warming; each such mode needs its keys.
void ScenarioReader::CheckPhaseKeys(const Phase& phase, const toml::node& table_node,
                                    const std::string& p) {
  const toml::table& table = *table_node.as_table();
  for (const ModeBoundKey& bound : kModeBoundKeys) {
    const std::string full = fmt::format("{}.{}", p, bound.key);
    if (TakesKey(bound, phase.mode) && !table.contains(bound.key)) {
      Fail(table_node, p, fmt::format("mode \"{}\" needs {}", ToString(phase.mode), bound.key));
    } else if (!TakesKey(bound, phase.mode) && where_.contains(full)) {
      FailAt(full, fmt::format("only valid with mode = {}", ModesText(bound)));
    }
  }
  if (phase.mode == Mode::kWarming && table.contains("cold_capacity") &&
      table.contains("capacity") && phase.cold_capacity > phase.capacity) {
    FailAt(fmt::format("{}.cold_capacity", p), fmt::format("must be at most capacity ({}), got {}",
                                                           phase.capacity, phase.cold_capacity));
  }
}

// A mode set by an override (`upstream.phase[0].mode=fragile`): the file must give the keys that
// mode needs.
void ScenarioReader::CheckModeOverride(std::size_t i) {
  const Phase& phase = scenario_.phases[i];
  std::vector<std::string_view> needed;
  bool missing = false;
  for (const ModeBoundKey& bound : kModeBoundKeys) {
    if (TakesKey(bound, phase.mode)) {
      needed.push_back(bound.key);
      missing = missing || !bound.given(phase);
    }
  }
  if (!missing) {
    return;
  }
  std::string keys;
  for (std::size_t k = 0; k < needed.size(); ++k) {
    keys += k == 0 ? "" : (k + 1 == needed.size() ? " and " : ", ");
    keys += needed[k];
  }
  Fail(Location{0, 0, fmt::format("upstream.phase[{}].mode (override)", i)},
       fmt::format("mode \"{}\" needs {} in the file", ToString(phase.mode), keys));
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
