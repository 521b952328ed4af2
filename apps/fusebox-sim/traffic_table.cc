// [traffic] (one stream) or [[traffic.stream]] tables, and the limit on the calls a run asks for.
#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "common/rate.h"
#include "scenario_reader.h"

namespace fusebox::sim {
namespace {

constexpr std::array<std::string_view, 2> kPriorities = {"interactive", "batch"};
constexpr std::array<std::string_view, 2> kArrivals = {"uniform", "poisson"};

std::optional<std::string> CallRate(const SettingValue& v) {
  Result<double, app::ReadError> rate = app::CheckCallRate(v.number);
  if (!rate) {
    return rate.error().message;
  }
  return std::nullopt;
}

constexpr auto kStreamSettings = std::to_array<Setting<Stream>>({
    {"name",
     KeyKind::kString,
     "labels the stream (default traffic, or stream<i>)",
     {},
     nullptr,
     [](Stream& s, const SettingValue& v) { s.name = v.text; }},
    {"priority", KeyKind::kString, "interactive (default) or batch", kPriorities, nullptr,
     [](Stream& s, const SettingValue& v) {
       s.priority = v.choice == 0 ? Priority::kInteractive : Priority::kBatch;
     }},
    {"rate",
     KeyKind::kNumber,
     "calls per second (required)",
     {},
     &CallRate,
     [](Stream& s, const SettingValue& v) { s.rate = v.number; }},
    {"start",
     KeyKind::kDuration,
     "when the stream starts (default 0s)",
     {},
     nullptr,
     [](Stream& s, const SettingValue& v) { s.start = v.integer; }},
    {"arrivals", KeyKind::kString, "uniform (default) or poisson", kArrivals, nullptr,
     [](Stream& s, const SettingValue& v) {
       s.arrivals = v.choice == 0 ? Arrivals::kUniform : Arrivals::kPoisson;
     }},
});

}  // namespace

std::span<const Setting<Stream>> StreamSettings() { return kStreamSettings; }

void ScenarioReader::ApplyStreamKey(Stream& stream, std::string_view key, const toml::node& node,
                                    const std::string& full) {
  Apply(StreamSettings(), stream, key, node, full);
}

// A rate given but refused is reported where it is, not as missing.
void ScenarioReader::RequireRate(const toml::node& table_node, const std::string& prefix) {
  if (!table_node.as_table()->contains("rate") && !where_.contains(prefix + ".rate")) {
    Fail(table_node, prefix, "missing key: rate (calls per second)");
  }
}

void ScenarioReader::ApplyTraffic(const toml::table& table, const toml::node& table_node) {
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

void ScenarioReader::CheckTraffic() {
  if (scenario_.streams.empty()) {
    Fail(Location{0, 0, "traffic"},
         "missing: give [traffic] with a rate, or [[traffic.stream]] tables");
  }
}

// The calls the traffic asks for, against kMaxExpectedCalls: points at the rate of the stream
// that asks for the most.
void ScenarioReader::CheckExpectedCalls() {
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

}  // namespace fusebox::sim
