#include "schedule.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <system_error>

#include <toml++/toml.h>

#include "common/located_error.h"
#include "common/phase_schedule.h"
#include "common/toml_read.h"

namespace fusebox::vpic_sim {
namespace {

constexpr std::size_t kMaxScheduleBytes = std::size_t{16} * 1024 * 1024;

using app::LocatedError;

ConfigError ToConfigError(const LocatedError& e) {
  return ConfigError{e.key.empty() ? std::string("schedule") : e.key, e.ToString()};
}

// The node an error about phase field `field` (TOML spelling) points at: the field's value; for a
// field that is missing (latency_max of a uniform latency), the value that asked for it; else
// the phase's `mode`.
const toml::node& FieldNode(const toml::table& phase, std::string_view field) {
  if (const toml::node* node = phase.get(field)) {
    return *node;
  }
  if (field == "latency_max") {
    for (std::string_view cause : {"latency_dist", "latency_min"}) {
      if (const toml::node* node = phase.get(cause)) {
        return *node;
      }
    }
  }
  if (const toml::node* node = phase.get("mode")) {
    return *node;
  }
  return phase;
}

// Reads one fault setting of a phase into `options`; the message when its value has the wrong
// type.
std::optional<std::string> ReadField(const FaultField& field, const toml::node& node,
                                     FaultOptions& options) {
  switch (field.kind) {
    case FieldKind::kInteger: {
      auto value = app::ReadInteger(node);
      if (!value) {
        return value.error().message;
      }
      options.*field.integer = *value;
      return std::nullopt;
    }
    case FieldKind::kDuration: {
      auto value = app::ReadDuration(node);
      if (!value) {
        return value.error().message;
      }
      options.*field.integer = *value;
      return std::nullopt;
    }
    case FieldKind::kWholeSeconds: {
      auto value = app::ReadDuration(node);
      if (!value) {
        return value.error().message;
      }
      options.*field.integer = (*value + kMicrosPerSecond - 1) / kMicrosPerSecond;
      return std::nullopt;
    }
    case FieldKind::kNumber: {
      auto value = app::ReadNumber(node);
      if (!value) {
        return value.error().message;
      }
      options.*field.number = *value;
      return std::nullopt;
    }
    case FieldKind::kText: {
      auto value = app::ReadString(node);
      if (!value) {
        return value.error().message;
      }
      options.*field.text = *value;
      return std::nullopt;
    }
  }
  return std::nullopt;
}

// The phase keys vpic-sim reads besides from/to/mode: every fault setting.
std::vector<std::string_view> PhaseKeys() {
  std::vector<std::string_view> keys;
  for (const FaultField& field : FaultFields()) {
    keys.push_back(field.name);
  }
  return keys;
}

}  // namespace

const Phase* Schedule::PhaseAt(Micros now) const {
  for (const Phase& phase : phases) {
    if (now >= phase.from && now < phase.to) {
      return &phase;
    }
  }
  return nullptr;
}

Result<Schedule, ConfigError> ParseSchedule(std::string_view toml_text, std::string_view source) {
  toml::table root;
  try {
    root = toml::parse(toml_text, source);
  } catch (const toml::parse_error& e) {
    return ToConfigError(app::SyntaxError(source, e));
  }
  auto fail = [&](const toml::node& node, std::string key, std::string message) {
    return ToConfigError(app::ErrorAt(source, node, std::move(key), std::move(message)));
  };
  static const std::vector<std::string_view> kPhaseKeys = PhaseKeys();
  const app::PhaseVocabulary vocabulary{FaultModeNames(), kPhaseKeys};
  Schedule schedule;
  std::vector<app::PhaseTable> tables;
  for (auto&& [key, node] : root) {
    const std::string_view k = key.str();
    if (k == "seed" || k == "duration" || k == "name" || k == "breaker" || k == "traffic" ||
        k == "limit" || k == "variant") {
      continue;  // a fusebox-sim scenario's other parts
    }
    if (k != "upstream") {
      return fail(node, std::string(k), "unknown key (a schedule holds [upstream])");
    }
    auto upstream = app::ReadTable(node);
    if (!upstream) {
      return fail(node, "upstream", upstream.error().message);
    }
    for (auto&& [ukey, unode] : **upstream) {
      const std::string_view uk = ukey.str();
      if (uk == "latency") {
        auto latency = app::ReadDuration(unode);
        if (!latency) {
          return fail(unode, "upstream.latency", latency.error().message);
        }
        schedule.healthy_latency = *latency;
      } else if (uk == "phase") {
        auto read = app::ReadPhaseTables(unode, source, "", vocabulary);
        if (!read) {
          return ToConfigError(read.error());
        }
        tables = std::move(*read);
      } else {
        return fail(unode, "upstream." + std::string(uk), "unknown key");
      }
    }
  }
  std::vector<app::PhaseSpan> spans;
  for (const app::PhaseTable& table : tables) {
    const std::string prefix = app::PhaseKey(table.index);
    FaultOptions options;
    options.mode = std::string(FaultModeNames()[table.mode]);
    std::optional<LocatedError> first;
    for (auto&& [pkey, pnode] : *table.table) {
      const FaultField* field = FindFaultField(pkey.str(), Syntax::kToml);
      if (field == nullptr) {
        continue;  // from, to, mode: read above
      }
      if (std::optional<std::string> bad = ReadField(*field, pnode, options)) {
        LocatedError e =
            app::ErrorAt(source, pnode, fmt::format("{}.{}", prefix, pkey.str()), *bad);
        if (!first || app::ComesFirst(e, *first)) {
          first = std::move(e);
        }
      }
    }
    if (first) {
      return ToConfigError(*first);
    }
    auto spec = BuildFaultSpec(options, Syntax::kToml);
    if (!spec) {
      const std::string& field = spec.error().field;
      return fail(FieldNode(*table.table, field), fmt::format("{}.{}", prefix, field),
                  spec.error().message);
    }
    schedule.phases.push_back(Phase{table.from, table.to, *spec});
    spans.push_back(app::PhaseSpan{table.from, table.to});
  }
  if (std::optional<app::PhaseProblem> problem = app::CheckPhaseSpans(spans)) {
    const toml::table& table = *tables[problem->index].table;
    return fail(*table.get(problem->field),
                fmt::format("{}.{}", app::PhaseKey(problem->index), problem->field),
                problem->message);
  }
  std::vector<Phase> sorted;
  for (std::size_t i : app::TimeOrder(spans)) {
    sorted.push_back(schedule.phases[i]);
  }
  schedule.phases = std::move(sorted);
  return schedule;
}

Result<Schedule, ConfigError> LoadScheduleFile(const std::string& path) {
  auto fail = [&path](std::string_view what, int error) {
    return ConfigError{
        "schedule", fmt::format("{}: {}: {}", path, what, std::generic_category().message(error))};
  };
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return fail("cannot open the schedule file", errno);
  }
  std::string text;
  std::optional<ConfigError> error;
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    error = fail("cannot read the schedule file", errno);
  } else if (S_ISDIR(info.st_mode)) {
    error = ConfigError{"schedule",
                        fmt::format("{}: is a directory, not a schedule file (a TOML file)", path)};
  } else {
    std::array<char, 8192> chunk{};
    for (;;) {
      const ssize_t n = ::read(fd, chunk.data(), chunk.size());
      if (n < 0 && errno == EINTR) {
        continue;
      }
      if (n < 0) {
        error = fail("cannot read the schedule file", errno);
        break;
      }
      if (n == 0) {
        break;
      }
      text.append(chunk.data(), static_cast<std::size_t>(n));
      if (text.size() > kMaxScheduleBytes) {
        error = ConfigError{"schedule", fmt::format("{}: larger than {} bytes: not a schedule file",
                                                    path, kMaxScheduleBytes)};
        break;
      }
    }
  }
  ::close(fd);
  if (error) {
    return *error;
  }
  return ParseSchedule(text, path);
}

}  // namespace fusebox::vpic_sim
