#include "common/phase_schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <numeric>

#include "common/toml_read.h"

namespace fusebox::app {

std::string PhaseKey(std::size_t index) { return fmt::format("upstream.phase[{}]", index); }

Result<std::vector<PhaseTable>, LocatedError> ReadPhaseTables(const toml::node& phases,
                                                              std::string_view file,
                                                              std::string_view key_prefix,
                                                              const PhaseVocabulary& vocabulary) {
  std::optional<LocatedError> first;
  auto fail = [&](const toml::node& node, std::string key, std::string message) {
    LocatedError e = ErrorAt(file, node, fmt::format("{}{}", key_prefix, key), std::move(message));
    if (!first || ComesFirst(e, *first)) {
      first = std::move(e);
    }
  };
  const toml::array* array = phases.as_array();
  if (array == nullptr || !array->is_array_of_tables()) {
    fail(phases, "upstream.phase", "expected [[upstream.phase]] tables");
    return *first;
  }
  std::vector<PhaseTable> out;
  for (std::size_t i = 0; i < array->size(); ++i) {
    const toml::table& table = *(*array)[i].as_table();
    const std::string prefix = PhaseKey(i);
    PhaseTable phase;
    phase.index = i;
    phase.table = &table;
    for (const auto& [k, v] : table) {
      const std::string_view key = k.str();
      const std::string full = fmt::format("{}.{}", prefix, key);
      if (key == "from" || key == "to") {
        Result<Micros, ReadError> micros = ReadDuration(v);
        if (!micros) {
          fail(v, full, micros.error().message);
        } else {
          (key == "from" ? phase.from : phase.to) = *micros;
        }
      } else if (key == "mode") {
        Result<std::size_t, ReadError> mode = ReadChoice(v, vocabulary.modes);
        if (!mode) {
          fail(v, full, mode.error().message);
        } else {
          phase.mode = *mode;
        }
      } else if (std::find(vocabulary.keys.begin(), vocabulary.keys.end(), key) ==
                 vocabulary.keys.end()) {
        fail(v, full, "unknown key");
      }
    }
    for (std::string_view required : {"from", "to", "mode"}) {
      if (!table.contains(required)) {
        fail(table, prefix, fmt::format("missing key: {}", required));
      }
    }
    out.push_back(phase);
  }
  if (first) {
    return *first;
  }
  return out;
}

std::vector<std::size_t> TimeOrder(std::span<const PhaseSpan> spans) {
  std::vector<std::size_t> order(spans.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return spans[a].from < spans[b].from; });
  return order;
}

std::optional<PhaseProblem> CheckPhaseSpans(std::span<const PhaseSpan> spans) {
  for (std::size_t i = 0; i < spans.size(); ++i) {
    if (spans[i].to <= spans[i].from) {
      return PhaseProblem{i, "to",
                          fmt::format("must be after from ({} s), got {} s",
                                      FormatSeconds(spans[i].from), FormatSeconds(spans[i].to))};
    }
  }
  const std::vector<std::size_t> order = TimeOrder(spans);
  for (std::size_t k = 1; k < order.size(); ++k) {
    if (spans[order[k]].from < spans[order[k - 1]].to) {
      const std::size_t a = std::min(order[k - 1], order[k]);
      const std::size_t b = std::max(order[k - 1], order[k]);
      return PhaseProblem{
          b, "from",
          fmt::format("phase [{} s, {} s) overlaps {} [{} s, {} s)", FormatSeconds(spans[b].from),
                      FormatSeconds(spans[b].to), PhaseKey(a), FormatSeconds(spans[a].from),
                      FormatSeconds(spans[a].to))};
    }
  }
  return std::nullopt;
}

}  // namespace fusebox::app
