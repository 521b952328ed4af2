// vin-gateway: VIN decodes in front of NHTSA vPIC; one slow upstream call never freezes every
// VIN form. See docs/gateway.md.
//
//   vin-gateway [--config FILE.toml] [--listen HOST:PORT] [--upstream-url URL] [--cache URI] ...
//
// The first line on stdout is "listening on http://HOST:PORT". Logs (one line per request) go to
// stderr. SIGTERM/SIGINT: stop accepting, let in-flight requests finish for up to
// --shutdown-grace, exit 0. SIGHUP: re-read the --config file (with the command line's flags
// still over it, on a thread of its own) and apply its breaker settings to the live breaker;
// other settings that changed are logged as needing a restart, and a bad file changes nothing.
// SIGPIPE and SIGXFSZ are ignored (a closed peer, a cache file at the size limit: errors to handle,
// not reasons to die).
#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "config/config.h"
#include "config/reload_reader.h"
#include "fusebox/asio_prober.h"
#include "fusebox/clock.h"
#include "fusebox/fleet.h"
#include "fusebox/redis_client.h"
#include "fusebox/redis_fleet.h"
#include "fusebox/registry.h"
#include "http/access_log.h"
#include "http/admin_route.h"
#include "http/http_server.h"
#include "http/log_writer.h"
#include "http/router.h"
#include "offline/offline_decoder.h"
#include "service/cache.h"
#include "service/decode_service.h"
#include "service/gateway_metrics.h"
#include "service/http_vpic_client.h"
#include "service/rate_limiter.h"
#include "service/redis_cache.h"
#include "service/upstream_limits.h"

namespace {

namespace net = boost::asio;
using fusebox::gateway::LogFormat;

// The soft open-file limit up to the hard one: each hung upstream costs a socket.
std::string RaiseFileLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) {
    return "cannot read the open-file limit";
  }
  if (limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &limit) != 0) {
      return "cannot raise the open-file limit";
    }
  }
  return fmt::format("open-file limit {}", limit.rlim_cur);
}

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) {
    out += out.empty() ? "" : ", ";
    out += item;
  }
  return out;
}

// SIGHUP, on the event loop, once the reload reader has read the config file and the command
// line again, as at start. The breaker's settings go to the live breaker (Reconfigure keeps its
// state where the change allows); any other setting that differs from the one in force is only
// reported, since the listener, the cache, the pool and the threads were built from it. A file
// that does not read or validate changes nothing.
void ApplyReload(const fusebox::gateway::ReloadReader::Reread& reread,
                 const std::string& config_path,
                 const fusebox::gateway::GatewayConfig& started_with,
                 fusebox::CircuitBreaker& breaker,
                 const std::function<void(std::string_view, std::string_view)>& log) {
  if (!reread) {
    log("error", fmt::format("SIGHUP: {} refused, the settings in force stay: {}", config_path,
                             reread.error().message));
    return;
  }
  const fusebox::CircuitBreakerConfig before = breaker.config();
  const fusebox::CircuitBreakerConfig after = reread->config.BreakerConfig();
  if (auto error = breaker.Reconfigure(after)) {
    // Validate() above has already checked what Reconfigure checks: a safety net.
    log("error", fmt::format("SIGHUP: {} refused, the settings in force stay: {}: {}", config_path,
                             fusebox::gateway::FlagOfBreakerField(error->field), error->message));
    return;
  }
  // The library's names are the config file's keys: its lines are what the operator edits.
  const std::vector<std::string> changes = fusebox::DescribeChanges(before, after);
  log("info", changes.empty() ? fmt::format("SIGHUP: re-read {}: breaker {} unchanged", config_path,
                                            breaker.name())
                              : fmt::format("SIGHUP: re-read {}: breaker {} now {}", config_path,
                                            breaker.name(), Join(changes)));
  std::vector<std::string> restart;
  for (std::string_view flag :
       fusebox::gateway::SettingsNeedingRestart(started_with, reread->config)) {
    restart.emplace_back(flag);
  }
  if (!restart.empty()) {
    log("warn", fmt::format("SIGHUP: {} changed in {} but only a restart applies it; the value "
                            "in force stays",
                            Join(restart), config_path));
  }
}

using LogFn = std::function<void(std::string_view, std::string_view)>;

// The cache --cache names. A Redis cache (--cache redis://, docs/fleet.md) is shared by a fleet
// and sits behind its own `redis` breaker; an unreachable Redis is an empty cache, not a start-up
// error. nullopt (logged) when the `redis` breaker cannot be made.
struct CacheParts {
  std::unique_ptr<fusebox::RedisClient> redis;  // only for a Redis cache
  std::unique_ptr<fusebox::gateway::Cache> cache;
};
std::optional<CacheParts> MakeCache(const fusebox::gateway::GatewayConfig& config,
                                    fusebox::Registry& registry, net::io_context& io,
                                    const fusebox::gateway::WallClock& wall_clock,
                                    const LogFn& log) {
  CacheParts parts;
  if (fusebox::IsRedisUrl(config.cache_uri)) {
    if (auto error = registry.Configure("redis", config.RedisBreakerConfig())) {
      log("error", error->message);
      return std::nullopt;
    }
    auto redis_breaker = registry.Get("redis");
    if (!redis_breaker) {
      log("error", redis_breaker.error().message);
      return std::nullopt;
    }
    auto endpoint = fusebox::gateway::RedisEndpointOf(config, "--cache", config.cache_uri);
    if (!endpoint) {
      log("error", endpoint.error().message);
      return std::nullopt;
    }
    parts.redis = std::make_unique<fusebox::RedisClient>(
        io.get_executor(), fusebox::RedisClientOptions{.endpoint = std::move(*endpoint)});
    parts.redis->Start();
    parts.cache = fusebox::gateway::MakeRedisCache(
        *parts.redis, **redis_breaker, wall_clock,
        {.location = fusebox::RedactRedisUrl(config.cache_uri), .timeout = config.cache_timeout});
  } else {
    parts.cache = fusebox::gateway::OpenCache(config.cache_uri, config.cache_max_entries);
  }
  if (const fusebox::gateway::CacheStats stats = parts.cache->Stats(); !stats.healthy) {
    // The error leaves the location out (it is shown on the public routes); the operator's log
    // names it.
    log("error", fmt::format("cache broken, serving live decodes without it: {}: {}",
                             stats.location, stats.error));
  }
  return parts;
}

// The offline decoder (docs/offline-decode.md): an explicit --offline-db must open (false,
// logged, when it does not); by default, the database scripts/install-deps.sh puts in the working
// tree, else the one the vin-gateway-vpic-data package installs, if either is there.
bool OpenOfflineDecoder(const fusebox::gateway::GatewayConfig& config, const LogFn& log,
                        std::optional<fusebox::gateway::OfflineDecoder>& offline) {
  if (config.offline_db == "none") {
    return true;
  }
  const bool explicit_path = !config.offline_db.empty();
  std::string path = config.offline_db;
  if (!explicit_path) {
    path = fusebox::gateway::kOfflineDbPaths[0];
    for (const std::string_view candidate : fusebox::gateway::kOfflineDbPaths) {
      if (access(std::string(candidate).c_str(), F_OK) == 0) {
        path = candidate;
        break;
      }
    }
  }
  auto opened = fusebox::gateway::OfflineDecoder::Open(path);
  if (opened) {
    offline.emplace(std::move(opened).value());
    log("info",
        fmt::format("offline decode from {} (snapshot {})", path, offline->snapshot_date()));
  } else if (explicit_path) {
    log("error", fmt::format("--offline-db: {}", opened.error().message));
    return false;
  } else {
    log("info", fmt::format("offline decode unavailable: {}", opened.error().message));
  }
  return true;
}

// Fleet mode (docs/fleet.md): the vpic breaker shared with the other instances through Redis.
// The link connects in the background: an unreachable Redis is not a start-up error, the breaker
// then follows the local rules and /status says "connected": false. Empty without --fleet.
struct FleetParts {
  std::unique_ptr<fusebox::RedisFleetLink> link;
  std::unique_ptr<fusebox::Fleet> fleet;
};
// nullopt (logged) when --redis-password-file cannot be read any more (Validate read it).
std::optional<FleetParts> StartFleet(const fusebox::gateway::GatewayConfig& config,
                                     net::io_context& io, fusebox::CircuitBreaker& breaker,
                                     const fusebox::gateway::DecodeService& service,
                                     const LogFn& log) {
  FleetParts parts;
  if (config.fleet_url.empty()) {
    return parts;
  }
  auto endpoint = fusebox::gateway::RedisEndpointOf(config, "--fleet", config.fleet_url);
  if (!endpoint) {
    log("error", endpoint.error().message);
    return std::nullopt;
  }
  auto secret = fusebox::gateway::FleetSecret(config);
  if (!secret) {
    log("error", secret.error().message);
    return std::nullopt;
  }
  fusebox::RedisFleetOptions options;
  options.endpoint = std::move(*endpoint);
  options.secret = std::move(*secret);
  options.instance = config.effective_instance_id();
  parts.link = std::make_unique<fusebox::RedisFleetLink>(io.get_executor(), options);
  fusebox::FleetOptions fleet_options;
  fleet_options.quorum = config.fleet_quorum;
  // A trip of this instance's own network (vPIC's name unresolved, no route) stays here.
  fleet_options.local_trouble = [&service](std::string_view /*breaker*/) {
    return service.recent_failures_own_network();
  };
  parts.fleet =
      std::make_unique<fusebox::Fleet>(*parts.link, options.instance, std::move(fleet_options));
  parts.fleet->Attach(breaker);
  parts.link->Start();
  return parts;
}

// What Redis held that was refused as out of bounds (docs/fleet.md, "Bounds") is counted in
// /status and /metrics; the log says so at most once a minute, with the counts of that minute,
// never once per message: whoever floods Redis with bad entries must not flood the log too.
struct RefusalLog {
  RefusalLog(net::io_context& io, const FleetParts& fleet_parts,
             const fusebox::gateway::Cache& shared_cache, LogFn log_fn)
      : timer(io), fleet(fleet_parts), cache(shared_cache), log(std::move(log_fn)) {}
  void Arm() {
    timer.expires_after(std::chrono::minutes(1));
    timer.async_wait([this](const boost::system::error_code& ec) {
      if (ec) {
        return;
      }
      const auto [messages, entries] = Counts();
      if (messages > messages_seen) {
        log("warn", fmt::format("fleet: {} messages from Redis refused in the last minute (out of "
                                "bounds, malformed or not signed with the fleet's secret; "
                                "/status fleet.messages_refused, _malformed, _unauthenticated)",
                                messages - messages_seen));
      }
      if (entries > entries_seen) {
        log("warn", fmt::format("cache: {} entries from Redis refused in the last minute (out of "
                                "bounds or not the key's; /status cache.refused)",
                                entries - entries_seen));
      }
      messages_seen = messages;
      entries_seen = entries;
      Arm();
    });
  }
  std::pair<std::uint64_t, std::uint64_t> Counts() const {
    std::uint64_t messages = 0;
    if (fleet.fleet) {
      const fusebox::RedisFleetStats link = fleet.link->Stats();
      messages = fleet.fleet->Stats().messages_refused + link.malformed + link.unauthenticated;
    }
    return {messages, cache.Stats().refused};
  }
  net::steady_timer timer;
  const FleetParts& fleet;
  const fusebox::gateway::Cache& cache;
  LogFn log;
  std::uint64_t messages_seen = 0;
  std::uint64_t entries_seen = 0;
};

// From here on the process is exiting anyway. Destroying a signal_set would restore the default
// action, and a late SIGTERM (a supervisor repeating itself) would then kill the process with the
// cache half-closed and report a signal instead of a clean exit: block, then ignore.
void IgnoreSignalsForExit(net::signal_set& signals, net::signal_set& reload_signals) {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGHUP);
  ::pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  boost::system::error_code ignored;
  signals.clear(ignored);
  reload_signals.clear(ignored);
  std::signal(SIGTERM, SIG_IGN);
  std::signal(SIGINT, SIG_IGN);
  std::signal(SIGHUP, SIG_IGN);
}

// One io_context per I/O thread, each run by its own thread: threads share no scheduler (no
// lock, no futex between them), and a connection is served by the thread it was handed to. The
// first one also runs the listener, the signals and the upstream connections.
struct EventLoops {
  explicit EventLoops(std::uint32_t threads) {
    for (std::uint32_t i = 0; i < threads; ++i) {
      contexts.push_back(std::make_unique<net::io_context>(1));
      session_contexts.push_back(contexts.back().get());
    }
  }
  net::io_context& first() const { return *contexts.front(); }
  void StopAll() const {
    for (const auto& context : contexts) {
      context->stop();
    }
  }
  std::vector<std::unique_ptr<net::io_context>> contexts;
  std::vector<net::io_context*> session_contexts;
};

// After the event loops stopped (no thread runs them any more): the Redis connections are closed
// here, the fleet detached from the breaker first.
void StopRedisClients(FleetParts& fleet, CacheParts& cache) {
  if (fleet.link) {
    fleet.fleet.reset();
    fleet.link->StopNow();
  }
  if (cache.redis) {
    cache.redis->StopNow();
  }
}

// The listener's options from the config.
fusebox::gateway::HttpServerOptions ServerOptions(
    const fusebox::gateway::GatewayConfig& config,
    const fusebox::gateway::TrustedProxies& trusted_proxies, const LogFn& log) {
  return {
      .host = config.listen_host,
      .port = config.listen_port,
      .client_timeout = config.client_timeout,
      // A client that stops reading holds its connection no longer than a silent one.
      .write_timeout = config.client_timeout,
      // Upstream calls in flight and idle pooled connections (the cap each), plus room
      // for the cache and the log: running out of descriptors must cost client connections,
      // never an upstream call (which would read as the upstream's failure).
      .descriptor_reserve = 2 * static_cast<std::size_t>(config.upstream_concurrency_cap()) + 32,
      .trusted_proxies = trusted_proxies,
      .client_ipv6_prefix = config.client_ipv6_prefix,
      .event_log = log};
}

// SIGHUP re-reads the config file. The signal is taken on the first event loop, but the file is
// read and parsed by the reload reader's thread (a FIFO, a huge file or a slow disk must not
// stall requests); the result comes back to the first event loop, which applies it. Without
// --config the signal is logged and ignored. Re-arms itself after each signal.
void ArmReload(net::signal_set& reload_signals, fusebox::gateway::ReloadReader& reader,
               const std::string& config_path, const LogFn& log) {
  reload_signals.async_wait([&](const boost::system::error_code& ec, int) {
    if (ec) {
      return;
    }
    if (config_path.empty()) {
      log("warn", "SIGHUP: no --config file was given; nothing to re-read, nothing changed");
    } else {
      reader.Request();
    }
    ArmReload(reload_signals, reader, config_path, log);
  });
}

// SIGTERM or SIGINT: stop accepting, let in-flight requests (and leaders' upstream calls) finish
// for up to `grace`, then stop_all. A second signal during the drain stops at once, as operators
// pressing Ctrl-C twice expect. `drained` is cleared when work was cut off.
void ArmShutdown(net::signal_set& signals, net::io_context& io,
                 fusebox::gateway::HttpServer& server, fusebox::gateway::DecodeService& service,
                 fusebox::asio::Prober& prober, fusebox::Duration grace, const LogFn& log,
                 std::atomic<bool>& drained, const std::function<void()>& stop_all) {
  signals.async_wait([&, grace](const boost::system::error_code& ec, int signal) {
    if (ec) {
      return;
    }
    signals.async_wait([&](const boost::system::error_code& again, int second) {
      if (again) {
        return;
      }
      log("info", fmt::format("signal {} during the drain: stopping now", second));
      drained = false;
      stop_all();
    });
    log("info", fmt::format("signal {}: draining for up to {}", signal,
                            fusebox::gateway::FormatDuration(grace)));
    server.BeginShutdown();
    prober.Stop();  // a probe in flight is cancelled now, within the drain
    net::co_spawn(
        io,
        [&, grace]() -> net::awaitable<void> {
          const auto deadline = std::chrono::steady_clock::now() + grace;
          net::steady_timer tick(io);
          // The prober's probe too: its frame holds a permit of the breaker and the client's call.
          const auto busy = [&] {
            return server.active_connections() > 0 || service.leaders_running() > 0 ||
                   prober.stats().running;
          };
          while (std::chrono::steady_clock::now() < deadline && busy()) {
            tick.expires_after(std::chrono::milliseconds(20));
            co_await tick.async_wait(net::use_awaitable);
          }
          if (busy()) {
            drained = false;
            server.LogUnfinishedRequests();  // each request cut off gets its log line
          }
          log("info", fmt::format("stopping ({} connections and {} upstream calls still open)",
                                  server.active_connections(), service.leaders_running()));
          stop_all();
        },
        net::detached);
  });
}

// Says in the log what the breaker does (every transition, with its cause and, when it opens,
// when the next probe runs), and starts the gateway's own prober. The prober probes only while
// the breaker's probe_mode is active (it waits in passive mode, so a reload may switch modes);
// each probe decodes --probe-vin and gets a log line, an access-log line (method PROBE, no client:
// the gateway's own request) and a metric.
std::shared_ptr<fusebox::asio::Prober> StartProber(
    const fusebox::gateway::GatewayConfig& config, net::io_context& io,
    fusebox::CircuitBreaker& breaker, fusebox::gateway::DecodeService& service,
    fusebox::gateway::GatewayMetrics& metrics, const LogFn& log,
    const std::function<void(const fusebox::gateway::AccessRecord&)>& access) {
  breaker.AddTransitionObserver([&breaker, log](const fusebox::TransitionEvent& t) {
    std::string message =
        fmt::format("breaker {}: {} -> {} ({})", breaker.name(), fusebox::ToString(t.from),
                    fusebox::ToString(t.to), fusebox::ToString(t.cause));
    if (t.to == fusebox::State::kOpen) {
      const bool active = breaker.config().probe_mode == fusebox::ProbeMode::kActive;
      message.append(fmt::format("; next probe in {}{}",
                                 fusebox::gateway::FormatDuration(breaker.retry_after()),
                                 active ? " (the gateway's own)" : " (the next request)"));
    }
    log(t.to == fusebox::State::kClosed ? "info" : "warn", message);
  });
  return fusebox::asio::Prober::Start(
      io.get_executor(), breaker,
      [&service, vin = config.probe_vin](const fusebox::CallContext&) {
        return service.Probe(vin);
      },
      [&breaker, &metrics, log, access, vin = config.probe_vin, n = std::uint64_t{0}](
          fusebox::Outcome outcome, fusebox::Duration latency) mutable {
        metrics.ObserveProbe(outcome, latency);
        fusebox::gateway::AccessRecord record;
        record.request_id = fmt::format("probe-{}", ++n);
        record.method = "PROBE";
        record.target = "/api/v1/vin/" + vin;
        record.vin = vin;
        record.source = "live";
        record.status = outcome == fusebox::Outcome::kSuccess   ? "OK"
                        : outcome == fusebox::Outcome::kTimeout ? "UPSTREAM_SLOW"
                        : outcome == fusebox::Outcome::kFailure ? "UPSTREAM_ERROR"
                                                                : "CANCELLED";
        record.upstream_latency = latency;
        record.elapsed = latency;
        record.note = "the gateway's own probe";
        record.upstream = "probe";
        record.upstream_outcome = std::string(fusebox::ToString(outcome));
        access(record);
        log(outcome == fusebox::Outcome::kSuccess ? "info" : "warn",
            fmt::format("breaker {}: probe {} in {}", breaker.name(), fusebox::ToString(outcome),
                        fusebox::gateway::FormatDuration(latency)));
      });
}

// Runs every event loop, the first on this thread and each other on its own, until stop_all();
// then joins them.
void RunEventLoops(const std::vector<std::unique_ptr<net::io_context>>& contexts,
                   fusebox::gateway::LogWriter& log_writer, const std::function<void()>& stop_all) {
  std::vector<std::thread> threads;
  for (std::size_t i = 1; i < contexts.size(); ++i) {
    threads.emplace_back([context = contexts[i].get(), &log_writer] {
      // Idle between connections: kept running until stop_all().
      auto keep_running = net::make_work_guard(*context);
      log_writer.GatherPerTurn(*context);
      context->run();
      log_writer.FlushThisThread();
    });
  }
  net::io_context& io = *contexts.front();
  log_writer.GatherPerTurn(io);
  io.run();
  log_writer.FlushThisThread();
  stop_all();  // io.run() returns only after stop_all() (the signal wait keeps it busy); harmless
  for (std::thread& t : threads) {
    t.join();
  }
}

// What stands between the gateway and vPIC: the breaker (in its registry), the cap on calls in
// flight and the throttle.
struct UpstreamGuards {
  std::unique_ptr<fusebox::Registry> registry;
  std::shared_ptr<fusebox::CircuitBreaker> breaker;
  std::unique_ptr<fusebox::gateway::UpstreamLimits> limits;
};
std::optional<UpstreamGuards> MakeUpstreamGuards(const fusebox::gateway::GatewayConfig& config,
                                                 fusebox::Clock& clock, const LogFn& log) {
  UpstreamGuards guards;
  guards.registry = std::make_unique<fusebox::Registry>(config.BreakerConfig());
  if (auto error = guards.registry->Configure("vpic", config.BreakerConfig())) {
    log("error", error->message);
    return std::nullopt;
  }
  auto breaker = guards.registry->Get("vpic");
  if (!breaker) {
    log("error", breaker.error().message);
    return std::nullopt;
  }
  guards.breaker = std::move(*breaker);
  std::optional<std::uint32_t> fixed;
  if (!config.max_in_flight_auto) {
    fixed = config.max_in_flight;
  }
  auto limits =
      fusebox::gateway::UpstreamLimits::Create({.fixed = fixed,
                                                .min = config.max_in_flight_min,
                                                .max = config.max_in_flight_max,
                                                .throttle_k = config.throttle,
                                                .throttle_window = config.throttle_window},
                                               clock);
  if (!limits) {
    log("error", limits.error().message);
    return std::nullopt;
  }
  guards.limits = std::move(*limits);
  return guards;
}

fusebox::gateway::DecodeServiceOptions ServiceOptions(
    const fusebox::gateway::GatewayConfig& config) {
  return {.cache_ttl = config.cache_ttl,
          // The in-process front never holds more than the cache itself may.
          .hot_entries =
              static_cast<std::size_t>(std::min<std::uint64_t>(4096, config.cache_max_entries)),
          .answer_deadline = config.answer_deadline};
}

// The line logged when vPIC's Retry-After holds the breaker open.
std::function<void(fusebox::Duration)> UpstreamHoldLog(const LogFn& log) {
  return [log](fusebox::Duration hold) {
    log("warn", fmt::format("breaker vpic: vPIC asked to wait {} (Retry-After); no request or "
                            "probe goes to it before then",
                            fusebox::gateway::FormatDuration(hold)));
  };
}

// FUSEBOX_ADMIN_TOKEN, when set and not empty: the admin routes' bearer token.
std::optional<std::string> AdminTokenFromEnvironment() {
  const char* token = std::getenv("FUSEBOX_ADMIN_TOKEN");
  if (token == nullptr || *token == 0) {
    return std::nullopt;
  }
  return std::string(token);
}

// The event the log writer writes when stderr did not take some lines.
std::function<std::string(std::uint64_t)> DroppedLinesEvent(
    LogFormat format, const fusebox::gateway::WallClock& clock) {
  return [format, &clock](std::uint64_t count) {
    return fusebox::gateway::FormatEvent(
        "warn", fmt::format("log: {} lines dropped; the output (stderr) did not take them", count),
        format, clock.Now());
  };
}

// What /status and /metrics show of the fleet: nothing without --fleet.
std::function<std::optional<fusebox::gateway::FleetReport>()> FleetReporter(
    const fusebox::gateway::GatewayConfig& config, const FleetParts& parts) {
  return [&config, &parts]() -> std::optional<fusebox::gateway::FleetReport> {
    if (!parts.fleet) {
      return std::nullopt;
    }
    fusebox::RedisFleetStats link = parts.link->Stats();
    return fusebox::gateway::FleetReport{.url = fusebox::RedactRedisUrl(config.fleet_url),
                                         .instance = parts.fleet->instance(),
                                         .stats = parts.fleet->Stats(),
                                         .probe_lease_holder = parts.fleet->LeaseHolder("vpic"),
                                         .malformed = link.malformed,
                                         .last_error = std::move(link.last_error),
                                         .unauthenticated = link.unauthenticated,
                                         .signed_messages = !parts.link->options().secret.empty(),
                                         .quorum = parts.fleet->quorum(),
                                         .failing_peers = parts.fleet->FailingPeers("vpic"),
                                         .tls = link.tls,
                                         .primary = std::move(link.primary),
                                         .primary_changes = link.primary_changes,
                                         .last_primary_change = link.last_primary_change};
  };
}

// Work that outlived the shutdown grace period is still suspended in the io_context, and its
// frames refer to the objects of Run: destroying them would touch freed memory. The cache is
// closed cleanly, the log flushed, and the process leaves without running destructors.
[[noreturn]] void ExitUndrained(std::unique_ptr<fusebox::gateway::Cache>& cache,
                                fusebox::gateway::LogWriter& log_writer) {
  cache.reset();
  log_writer.Flush();
  std::fflush(stdout);
  std::_Exit(0);
}

// The start-up lines: what listens where, and in front of what.
void LogListening(const fusebox::gateway::GatewayConfig& config,
                  const fusebox::gateway::HttpServer& server, const fusebox::Fleet* fleet,
                  const LogFn& log) {
  log("info", fmt::format("listening on http://{} upstream={} cache={} breaker=vpic "
                          "(trip {}, threshold {}, cooldown {}, call timeout {})",
                          server.local_address(), config.upstream_url,
                          fusebox::RedactRedisUrl(config.cache_uri),
                          fusebox::ToString(config.breaker.trip), config.breaker.failure_threshold,
                          fusebox::gateway::FormatDuration(config.breaker.cooldown),
                          fusebox::gateway::FormatDuration(config.breaker.call_timeout)));
  if (fleet != nullptr) {
    log("info", fmt::format("fleet: {} as instance {}", fusebox::RedactRedisUrl(config.fleet_url),
                            fleet->instance()));
  }
}

int Run(const fusebox::gateway::GatewayConfig& config, const std::vector<std::string>& args,
        const std::string& config_path) {
  const LogFormat format = config.log_format;
  fusebox::gateway::SystemWallClock wall_clock;
  // Every log line (events and the access log) goes through one writer, in order: on the event
  // loops one write(2) per loop turn, and a request never waits for a slow stderr
  // (log_writer.h). Declared first: destroyed (flushed) last.
  fusebox::gateway::LogWriter log_writer(STDERR_FILENO,
                                         {.dropped_line = DroppedLinesEvent(format, wall_clock)});
  const LogFn log = [&](std::string_view level, std::string_view message) {
    log_writer.Write(fusebox::gateway::FormatEvent(level, message, format, wall_clock.Now()));
  };
  const fusebox::gateway::AccessLog access_log = [&](const fusebox::gateway::AccessRecord& record) {
    log_writer.Write(fusebox::gateway::FormatAccessRecord(record, format, wall_clock.Now()));
  };
  log("info", RaiseFileLimit());
  // --trusted-proxy: parsed here, by the HTTP layer (config has no Asio to parse networks with),
  // before anything is started.
  auto trusted_proxies = fusebox::gateway::TrustedProxies::Parse(config.trusted_proxies);
  if (!trusted_proxies) {
    log("error", trusted_proxies.error());
    return 2;
  }

  EventLoops loops(config.threads);
  net::io_context& io = loops.first();
  const std::function<void()> stop_all = [&loops] { loops.StopAll(); };
  fusebox::Clock& clock = fusebox::DefaultClock();
  // Latencies (the log, the histogram, the adaptive limit's samples) need more than the coarse
  // clock's kernel tick: a loopback or cached vPIC answers in about a millisecond.
  fusebox::PreciseMonotonicClock precise_clock;

  std::optional<UpstreamGuards> guards = MakeUpstreamGuards(config, precise_clock, log);
  if (!guards) {
    return 2;
  }
  fusebox::Registry& registry = *guards->registry;
  fusebox::CircuitBreaker& breaker = *guards->breaker;
  // The breaker's clock beside this line's wall time: its time window counts whole seconds of
  // this clock, and `fusebox-sim replay` puts its own seconds in the same phase from this line.
  log("info", fmt::format("breaker vpic: clock at {:.6f} s (monotonic)",
                          fusebox::ToSeconds(clock.Now().time_since_epoch())));
  fusebox::gateway::UpstreamLimits& limits = *guards->limits;
  std::optional<CacheParts> cache_parts = MakeCache(config, registry, io, wall_clock, log);
  if (!cache_parts) {
    return 2;
  }
  std::unique_ptr<fusebox::gateway::Cache>& cache = cache_parts->cache;
  fusebox::gateway::RateLimiter limiter(config.client_rate, config.effective_client_burst(), clock);
  auto client = fusebox::gateway::MakeHttpVpicClient(
      io.get_executor(), {.base_url = config.upstream_url,
                          .ca_file = config.upstream_ca,
                          .max_idle = config.upstream_concurrency_cap()});
  if (!client) {
    log("error", client.error());
    return 2;
  }
  std::optional<fusebox::gateway::OfflineDecoder> offline;
  if (!OpenOfflineDecoder(config, log, offline)) {
    return 2;
  }
  fusebox::gateway::GatewayMetrics metrics;
  fusebox::gateway::DecodeService service(
      {*cache, **client, breaker, limits, limiter, clock, wall_clock, metrics,
       offline ? &*offline : nullptr, UpstreamHoldLog(log), &precise_clock,
       [&](const fusebox::gateway::LateCall& call) {
         log_writer.Write(fusebox::gateway::FormatLateCall(call.vin, call.latency,
                                                           fusebox::ToString(call.outcome),
                                                           call.detail, format, wall_clock.Now()));
       }},
      ServiceOptions(config));

  const std::optional<std::string> admin_token = AdminTokenFromEnvironment();
  fusebox::gateway::AdminThrottle admin_throttle(
      clock, {}, [&](std::string_view message) { log("warn", message); });
  std::optional<FleetParts> started_fleet = StartFleet(config, io, breaker, service, log);
  if (!started_fleet) {
    return 2;
  }
  FleetParts& fleet_parts = *started_fleet;
  RefusalLog refusal_log(io, fleet_parts, *cache, log);
  refusal_log.Arm();

  std::unique_ptr<fusebox::gateway::HttpServer> server;
  fusebox::gateway::Router router({service, registry, *cache, limits, metrics, limiter, **client,
                                   admin_token, admin_throttle,
                                   [&server] { return server && server->shutting_down(); },
                                   FleetReporter(config, fleet_parts)});
  auto created = fusebox::gateway::HttpServer::Create(
      io, ServerOptions(config, *trusted_proxies, log),
      [&router](fusebox::gateway::HttpRequest request) {
        return router.Handle(std::move(request));
      },
      // Every answered request in the request-duration histogram too (a request cut off by the
      // end of the shutdown grace got no answer, and has no duration to report).
      [&access_log, &metrics](const fusebox::gateway::AccessRecord& record) {
        if (record.http_status != 0) {
          metrics.ObserveRequest(fusebox::gateway::GatewayMetrics::RouteOf(record.target),
                                 record.elapsed);
        }
        access_log(record);
      },
      loops.session_contexts);
  if (!created) {
    log("error", created.error());
    return 2;
  }
  server = std::move(*created);

  // SIGHUP (ArmReload): armed before the "listening" line, so that a supervisor that reloads as
  // soon as the gateway is up never hits the default action (which would end the process). The
  // reader's read holds its own copy of the arguments: a read stuck at shutdown outlives Run.
  fusebox::gateway::ReloadReader reload_reader(
      [args] { return fusebox::gateway::ParseCommandLine(args); },
      [&](fusebox::gateway::ReloadReader::Reread reread) {
        net::post(io, [&, reread = std::move(reread)] {
          ApplyReload(reread, config_path, config, breaker, log);
        });
      });
  net::signal_set reload_signals(io, SIGHUP);
  ArmReload(reload_signals, reload_reader, config_path, log);

  server->Start();
  std::printf("listening on http://%s\n", server->local_address().c_str());
  std::fflush(stdout);
  LogListening(config, *server, fleet_parts.fleet.get(), log);

  std::shared_ptr<fusebox::asio::Prober> prober =
      StartProber(config, io, breaker, service, metrics, log, access_log);
  std::atomic<bool> drained = true;
  net::signal_set signals(io, SIGTERM, SIGINT);
  ArmShutdown(signals, io, *server, service, *prober, config.shutdown_grace, log, drained,
              stop_all);

  RunEventLoops(loops.contexts, log_writer, stop_all);
  // A reload still reading is not waited for (and no longer applied).
  reload_reader.Stop();
  IgnoreSignalsForExit(signals, reload_signals);
  log("info", "stopped");
  StopRedisClients(fleet_parts, *cache_parts);
  if (!drained) {
    ExitUndrained(cache, log_writer);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  // A file size limit (RLIMIT_FSIZE) reached by the cache must fail the write (EFBIG: the cache
  // reports itself broken and the gateway serves live decodes), not kill the process.
  std::signal(SIGXFSZ, SIG_IGN);
  try {
    // Kept for SIGHUP, which reads the config file and these flags again.
    const std::vector<std::string> args(argv, argv + argc);
    auto parsed = fusebox::gateway::ParseCommandLine(args);
    if (!parsed) {
      std::fprintf(stderr, "vin-gateway: %s\n", parsed.error().message.c_str());
      return 2;
    }
    if (parsed->version) {
      std::fputs(parsed->version_text.c_str(), stdout);
      return 0;
    }
    if (parsed->help) {
      std::fputs(parsed->help_text.c_str(), stdout);
      return 0;
    }
    if (parsed->print_config || parsed->check_config) {
      // The checks Run makes before it starts anything, here too: a file that passes
      // --check-config does not fail at start-up for its syntax.
      if (auto proxies = fusebox::gateway::TrustedProxies::Parse(parsed->config.trusted_proxies);
          !proxies) {
        std::fprintf(stderr, "vin-gateway: %s\n", proxies.error().c_str());
        return 2;
      }
      std::fputs(fusebox::gateway::RenderConfigFile(parsed->config).c_str(), stdout);
      return 0;
    }
    return Run(parsed->config, args, parsed->config_path);
  } catch (const std::exception& e) {
    // Setup only (the request path answers errors as values and never throws out of Run):
    // what reaches here is the standard library's own, such as std::bad_alloc.
    std::fprintf(stderr, "vin-gateway: %s\n", e.what());
    return 1;
  }
}
