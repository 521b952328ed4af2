// vpic-sim: a local stand-in for NHTSA's vPIC decode API that fails on command.
// See docs/vpic-sim.md and `vpic-sim --help`.

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <CLI/CLI.hpp>
#include <boost/asio/signal_set.hpp>

#include "common/duration.h"
#include "fault_spec.h"
#include "fusebox/version.h"
#include "schedule.h"
#include "server.h"

namespace {

using fusebox::ConfigError;
using fusebox::vpic_sim::FaultField;
using fusebox::vpic_sim::FaultOptions;
using fusebox::vpic_sim::FieldKind;
using fusebox::vpic_sim::Micros;

constexpr std::string_view kModesHelp = R"(
Fault modes (--mode, a schedule phase's `mode`, or POST /__control/faults {"mode": ...}):
  ok         answer like vPIC after --latency (default 0)
  error      fail with --status (500, 502, 503, 504; 429 adds Retry-After: --retry-after,
             default 1) after --latency (default 0)
  hang       read the request and never answer, until the client or the server closes
  slow       answer after --latency (default 5s); --latency-dist fixed (default), uniform
             (--latency-min..--latency-max) or lognormal (median --latency, --latency-sigma,
             default 0.5, capped by --latency-max); draws are seeded by --seed
  reset      read the request, then close the connection with a TCP RST
  garbage    200 with a body that is not JSON
  truncated  Content-Length larger than the body sent, then close
  drip       send the answer --drip-bytes (default 4) every --drip-interval (default 1s)
  flap       --every (default 5) requests ok, the next --every fail with --status, and so on
  capacity   at most --capacity (default 1) requests in flight; one more gets 503, or with
             --relapse > 0 collapses into `error` for that long
  fragile    capacity with --relapse 5s by default (fusebox-sim's name)
  queue      --capacity requests served at once, each for --latency; the others wait in
             arrival order for a server (latency grows with load), at most --queue-limit of
             them (default: no bound; one more gets 503); a client that leaves while waiting
             leaves the queue, no work done for it (one served keeps its server to the end)
  interim    one answer in --every (default 1: all) is preceded by an informational answer
             (--interim-status, default 103 Early Hints; 100-199 but not 101) sent at once;
             the answer follows after --latency (default 0)
Durations: "250ms", "8s", "2m", "2m30s", "1h", "300us" or a number of seconds (in a schedule file a string
needs its unit: from = "10s" or from = 10, not "10").

Schedule (--schedule FILE): TOML phases relative to the start, read as fusebox-sim reads them
(errors name upstream.phase[0] for the first phase):
  [[upstream.phase]]
  from = "10s"
  to = "60s"
  mode = "error"
  status = 503
Control API (never faulted):
  GET  /__control/stats    requests per endpoint, in_flight, max_in_flight, queued,
                           max_queued, faults served
  GET  /__control/faults   the fault in force
  POST /__control/faults   {"mode":"error","status":503} or {"mode":"slow","latency_ms":8000}
  POST /__control/reset    startup fault again, schedule restarted, counters zeroed
Endpoints: GET /api/vehicles/DecodeVinValues/{vin}?format=json[&modelyear=YYYY],
  GET /api/vehicles/DecodeVinValuesExtended/{vin}?format=json,
  POST /api/vehicles/DecodeVINValuesBatch/ (DATA=vin[,year];vin...&format=json, at most 50).
The first stdout line is "listening on http(s)://HOST:PORT". SIGTERM/SIGINT stop at once.)";

// Reads one fault flag's text into `options` as FaultFields() says; the error names the flag.
std::optional<ConfigError> ReadFaultFlag(const FaultField& field, const std::string& text,
                                         FaultOptions& options) {
  const std::string flag =
      fusebox::vpic_sim::FieldName(field.name, fusebox::vpic_sim::Syntax::kFlags);
  auto bad = [&](std::string_view what) {
    return ConfigError{flag, fmt::format("{} must be {}, got '{}'", flag, what, text)};
  };
  switch (field.kind) {
    case FieldKind::kInteger:
    case FieldKind::kWholeSeconds: {
      std::int64_t value = 0;
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
      if (ec != std::errc() || end != text.data() + text.size()) {
        return bad("an integer");
      }
      options.*field.integer = value;
      return std::nullopt;
    }
    case FieldKind::kDuration: {
      // The apps' one grammar; a bare number is seconds on the command line.
      auto value = fusebox::app::ParseDuration(text);
      if (!value) {
        return bad("a duration such as 250ms or 8s");
      }
      options.*field.integer = *value;
      return std::nullopt;
    }
    case FieldKind::kNumber: {
      double value = 0.0;
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
      if (ec != std::errc() || end != text.data() + text.size()) {
        return bad("a number");
      }
      options.*field.number = value;
      return std::nullopt;
    }
    case FieldKind::kText:
      options.*field.text = text;
      return std::nullopt;
  }
  return std::nullopt;
}

// A --seed value: decimal digits only (no sign, no spaces), fitting 64 bits.
std::optional<std::uint64_t> ParseSeed(std::string_view text) {
  if (text.empty() ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  std::uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return std::nullopt;
  }
  return value;
}

int CurrentYear() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  return tm.tm_year + 1900;
}

int Main(int argc, char** argv) {
  // Named, not left to argv[0]: the usage line (and the man page help2man makes of it) then
  // says "vpic-sim", not the path it was started by.
  CLI::App app{"vpic-sim: a faithful local stand-in for NHTSA vPIC, with fault injection",
               "vpic-sim"};
  app.footer(std::string(kModesHelp));
  app.set_version_flag("--version", fmt::format("vpic-sim {}", fusebox::kVersion),
                       "print the version and exit");

  std::string listen = "127.0.0.1:8080";
  std::string tls_cert;
  std::string tls_key;
  std::string seed_text = "1";
  std::string schedule_path;
  int reference_year = CurrentYear();
  FaultOptions faults;
  // One text per fault setting, in FaultFields() order: read after parsing.
  std::vector<std::string> fault_flags(fusebox::vpic_sim::FaultFields().size());

  app.add_option("--listen", listen, "HOST:PORT to listen on; port 0 picks a free port")
      ->capture_default_str();
  app.add_option("--tls-cert", tls_cert, "PEM certificate chain: serve HTTPS (needs --tls-key)");
  app.add_option("--tls-key", tls_key, "PEM private key for --tls-cert");
  app.add_option("--seed", seed_text, "seed for latency draws: an integer in [0, 2^64 - 1]")
      ->capture_default_str();
  app.add_option("--mode", faults.mode, "startup fault mode (see below)")->capture_default_str();
  for (std::size_t i = 0; i < fault_flags.size(); ++i) {
    const FaultField& field = fusebox::vpic_sim::FaultFields()[i];
    app.add_option(fusebox::vpic_sim::FieldName(field.name, fusebox::vpic_sim::Syntax::kFlags),
                   fault_flags[i], std::string(field.help));
  }
  app.add_option("--schedule", schedule_path, "TOML schedule of [[upstream.phase]] tables");
  app.add_option("--reference-year", reference_year,
                 "current year, for model years the position-7 rule leaves open")
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help exits 0; every malformed flag exits 2, like the range errors below.
    return app.exit(e) == 0 ? 0 : 2;
  }

  auto fail = [](const ConfigError& e) {
    fmt::print(stderr, "vpic-sim: {}\n", e.message);
    return 2;
  };
  for (std::size_t i = 0; i < fault_flags.size(); ++i) {
    if (fault_flags[i].empty()) {
      continue;
    }
    if (auto e = ReadFaultFlag(fusebox::vpic_sim::FaultFields()[i], fault_flags[i], faults)) {
      return fail(*e);
    }
  }
  const std::optional<std::uint64_t> seed = ParseSeed(seed_text);
  if (!seed) {
    return fail(ConfigError{
        "--seed",
        fmt::format("--seed must be a decimal integer in [0, 18446744073709551615], got '{}'",
                    seed_text)});
  }
  auto spec = fusebox::vpic_sim::BuildFaultSpec(faults, fusebox::vpic_sim::Syntax::kFlags);
  if (!spec) {
    return fail(spec.error());
  }
  fusebox::vpic_sim::ServerOptions options;
  options.listen = listen;
  options.faults = *spec;
  options.seed = *seed;
  options.reference_year = reference_year;
  if (!schedule_path.empty()) {
    auto schedule = fusebox::vpic_sim::LoadScheduleFile(schedule_path);
    if (!schedule) {
      return fail(schedule.error());
    }
    options.schedule = std::move(*schedule);
    const bool latency_flags = faults.latency || faults.latency_min || faults.latency_max;
    if (options.schedule.healthy_latency &&
        options.faults.mode == fusebox::vpic_sim::FaultMode::kOk && !latency_flags) {
      options.faults.latency.value = *options.schedule.healthy_latency;
    }
  }
  if (tls_cert.empty() != tls_key.empty()) {
    return fail(ConfigError{"tls", "--tls-cert and --tls-key go together"});
  }
  if (!tls_cert.empty()) {
    options.tls = fusebox::vpic_sim::TlsFiles{tls_cert, tls_key};
  }

  std::signal(SIGPIPE, SIG_IGN);
  if (auto limit = fusebox::vpic_sim::RaiseOpenFileLimit(); !limit) {
    fmt::print(stderr, "vpic-sim: warning: {}\n", limit.error().message);
  }

  auto server = fusebox::vpic_sim::Server::Create(std::move(options));
  if (!server) {
    return fail(server.error());
  }
  boost::asio::signal_set signals((*server)->executor(), SIGINT, SIGTERM);
  signals.async_wait([&server](const boost::system::error_code& ec, int) {
    if (!ec) {
      (*server)->Stop();
    }
  });
  fmt::print("listening on {}\n", (*server)->url());
  std::fflush(stdout);
  (*server)->Run();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Main(argc, argv);
  } catch (const std::exception& e) {
    // Setup only: the serving path reports errors as values and never throws out of Run().
    fmt::print(stderr, "vpic-sim: {}\n", e.what());
    return 1;
  }
}
