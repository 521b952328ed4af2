// vin-gateway: VIN decodes in front of NHTSA vPIC; one slow upstream call never freezes every
// VIN form. See docs/gateway.md.
//
//   vin-gateway [--config FILE.toml] [--listen HOST:PORT] [--upstream-url URL] [--cache URI] ...
//
// The first line on stdout is "listening on http://HOST:PORT". Logs (one line per request) go to
// stderr. SIGTERM/SIGINT: stop accepting, let in-flight requests finish for up to
// --shutdown-grace, exit 0. SIGPIPE and SIGXFSZ are ignored (a closed peer, a cache file at the
// size limit: errors to handle, not reasons to die).
#include <pthread.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "config/config.h"
#include "fusebox/bulkhead.h"
#include "fusebox/clock.h"
#include "fusebox/fleet.h"
#include "fusebox/redis_client.h"
#include "fusebox/redis_fleet.h"
#include "fusebox/registry.h"
#include "http/access_log.h"
#include "http/admin_route.h"
#include "http/http_server.h"
#include "http/router.h"
#include "service/cache.h"
#include "service/decode_service.h"
#include "service/gateway_metrics.h"
#include "service/http_vpic_client.h"
#include "service/rate_limiter.h"
#include "service/redis_cache.h"

namespace {

namespace net = boost::asio;
using vin_gateway::LogFormat;

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

int Run(const vin_gateway::GatewayConfig& config) {
  auto logger = spdlog::stderr_logger_mt("vin-gateway");
  logger->set_pattern("%v");
  const LogFormat format = config.log_format;
  vin_gateway::SystemWallClock wall_clock;
  const auto log = [&](std::string_view level, std::string_view message) {
    logger->info(vin_gateway::FormatEvent(level, message, format, wall_clock.Now()));
  };
  log("info", RaiseFileLimit());

  // One io_context per I/O thread, each run by its own thread: threads share no scheduler (no
  // lock, no futex between them), and a connection is served by the thread it was handed to.
  // The first one also runs the listener, the signals and the upstream connections.
  std::vector<std::unique_ptr<net::io_context>> contexts;
  std::vector<net::io_context*> session_contexts;
  for (std::uint32_t i = 0; i < config.threads; ++i) {
    contexts.push_back(std::make_unique<net::io_context>(1));
    session_contexts.push_back(contexts.back().get());
  }
  net::io_context& io = *contexts.front();
  const auto stop_all = [&contexts] {
    for (const auto& context : contexts) {
      context->stop();
    }
  };
  fusebox::Clock& clock = fusebox::DefaultClock();

  fusebox::Registry registry(config.BreakerConfig());
  if (auto error = registry.Configure("vpic", config.BreakerConfig())) {
    log("error", error->message);
    return 2;
  }
  auto breaker = registry.Get("vpic");
  if (!breaker) {
    log("error", breaker.error().message);
    return 2;
  }
  auto bulkhead = fusebox::Bulkhead::Create("vpic", {.max_concurrent = config.max_in_flight});
  if (!bulkhead) {
    log("error", bulkhead.error().message);
    return 2;
  }
  // A Redis cache (--cache redis://, docs/fleet.md): shared by a fleet, behind its own `redis`
  // breaker; an unreachable Redis is an empty cache, not a start-up error.
  std::unique_ptr<fusebox::RedisClient> cache_redis;
  std::unique_ptr<vin_gateway::Cache> cache;
  if (config.cache_uri.rfind("redis://", 0) == 0) {
    if (auto error = registry.Configure("redis", config.RedisBreakerConfig())) {
      log("error", error->message);
      return 2;
    }
    auto redis_breaker = registry.Get("redis");
    if (!redis_breaker) {
      log("error", redis_breaker.error().message);
      return 2;
    }
    cache_redis = std::make_unique<fusebox::RedisClient>(
        io.get_executor(),
        fusebox::RedisClientOptions{.endpoint = fusebox::ParseRedisUrl(config.cache_uri).value()});
    cache_redis->Start();
    cache = vin_gateway::MakeRedisCache(
        *cache_redis, **redis_breaker,
        {.location = config.cache_uri, .timeout = config.cache_timeout});
  } else {
    cache = vin_gateway::OpenCache(config.cache_uri, config.cache_max_entries);
  }
  if (const vin_gateway::CacheStats stats = cache->Stats(); !stats.healthy) {
    log("error", fmt::format("cache broken, serving live decodes without it: {}", stats.error));
  }
  vin_gateway::RateLimiter limiter(config.client_rate, config.effective_client_burst(), clock);
  auto client =
      vin_gateway::MakeHttpVpicClient(io.get_executor(), {.base_url = config.upstream_url,
                                                          .ca_file = config.upstream_ca,
                                                          .max_idle = config.max_in_flight});
  if (!client) {
    log("error", client.error());
    return 2;
  }
  vin_gateway::GatewayMetrics metrics;
  vin_gateway::DecodeService service(
      {*cache, **client, **breaker, **bulkhead, limiter, clock, wall_clock, metrics},
      {.cache_ttl = config.cache_ttl,
       // The in-process front never holds more than the cache itself may.
       .hot_entries =
           static_cast<std::size_t>(std::min<std::uint64_t>(4096, config.cache_max_entries))});

  std::optional<std::string> admin_token;
  if (const char* token = std::getenv("FUSEBOX_ADMIN_TOKEN"); token != nullptr && *token != 0) {
    admin_token = token;
  }
  vin_gateway::AdminThrottle admin_throttle(
      clock, {}, [&](std::string_view message) { log("warn", message); });
  // Fleet mode (docs/fleet.md): the vpic breaker shared with the other instances through Redis.
  // The link connects in the background: an unreachable Redis is not a start-up error, the
  // breaker then follows the local rules and /status says "connected": false.
  std::unique_ptr<fusebox::RedisFleetLink> fleet_link;
  std::unique_ptr<fusebox::Fleet> fleet;
  if (!config.fleet_url.empty()) {
    fusebox::RedisFleetOptions options;
    options.endpoint = fusebox::ParseRedisUrl(config.fleet_url).value();  // validated by config
    options.instance = config.effective_instance_id();
    fleet_link = std::make_unique<fusebox::RedisFleetLink>(io.get_executor(), options);
    fleet = std::make_unique<fusebox::Fleet>(*fleet_link, options.instance);
    fleet->Attach(**breaker);
    fleet_link->Start();
  }
  const auto fleet_report = [&]() -> std::optional<vin_gateway::FleetReport> {
    if (!fleet) {
      return std::nullopt;
    }
    return vin_gateway::FleetReport{config.fleet_url, fleet->instance(), fleet->Stats(),
                                    fleet->LeaseHolder("vpic"), fleet_link->Stats().malformed};
  };

  std::unique_ptr<vin_gateway::HttpServer> server;
  vin_gateway::Router router(
      {service, registry, *cache, **bulkhead, metrics, limiter, **client, admin_token,
       admin_throttle, [&server] { return server && server->shutting_down(); }, fleet_report});
  auto created = vin_gateway::HttpServer::Create(
      io,
      {.host = config.listen_host,
       .port = config.listen_port,
       .client_timeout = config.client_timeout,
       // A client that stops reading holds its connection no longer than a silent one.
       .write_timeout = config.client_timeout,
       // Upstream calls in flight and idle pooled connections (max_in_flight each), plus room
       // for the cache and the log: running out of descriptors must cost client connections,
       // never an upstream call (which would read as the upstream's failure).
       .descriptor_reserve = 2 * static_cast<std::size_t>(config.max_in_flight) + 32,
       .event_log = log},
      [&router](vin_gateway::HttpRequest request) { return router.Handle(std::move(request)); },
      [&](const vin_gateway::AccessRecord& record) {
        logger->info(vin_gateway::FormatAccessRecord(record, format, wall_clock.Now()));
      },
      session_contexts);
  if (!created) {
    log("error", created.error());
    return 2;
  }
  server = std::move(*created);
  server->Start();
  std::printf("listening on http://%s\n", server->local_address().c_str());
  std::fflush(stdout);
  log("info", fmt::format("listening on http://{} upstream={} cache={} breaker=vpic "
                          "(threshold {}, cooldown {}, call timeout {})",
                          server->local_address(), config.upstream_url, config.cache_uri,
                          config.failure_threshold, vin_gateway::FormatDuration(config.cooldown),
                          vin_gateway::FormatDuration(config.call_timeout)));
  if (fleet) {
    log("info", fmt::format("fleet: {} as instance {}", config.fleet_url, fleet->instance()));
  }

  std::atomic<bool> drained = true;
  // SIGTERM: stop accepting, let in-flight requests (and leaders' upstream calls) finish for up to
  // the grace period, then stop. A second signal during the drain stops at once, as operators
  // pressing Ctrl-C twice expect.
  net::signal_set signals(io, SIGTERM, SIGINT);
  signals.async_wait([&](const boost::system::error_code& ec, int signal) {
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
                            vin_gateway::FormatDuration(config.shutdown_grace)));
    server->BeginShutdown();
    net::co_spawn(
        io,
        [&]() -> net::awaitable<void> {
          const auto deadline = std::chrono::steady_clock::now() + config.shutdown_grace;
          net::steady_timer tick(io);
          while (std::chrono::steady_clock::now() < deadline &&
                 (server->active_connections() > 0 || service.leaders_running() > 0)) {
            tick.expires_after(std::chrono::milliseconds(20));
            co_await tick.async_wait(net::use_awaitable);
          }
          if (server->active_connections() > 0 || service.leaders_running() > 0) {
            drained = false;
            server->LogUnfinishedRequests();  // each request cut off gets its log line
          }
          log("info", fmt::format("stopping ({} connections and {} upstream calls still open)",
                                  server->active_connections(), service.leaders_running()));
          stop_all();
        },
        net::detached);
  });

  std::vector<std::thread> threads;
  for (std::size_t i = 1; i < contexts.size(); ++i) {
    threads.emplace_back([context = contexts[i].get()] {
      // Idle between connections: kept running until stop_all().
      auto keep_running = net::make_work_guard(*context);
      context->run();
    });
  }
  io.run();
  stop_all();  // io.run() returns only after stop_all() (the signal wait keeps it busy); harmless
  for (std::thread& t : threads) {
    t.join();
  }
  // From here on we are exiting anyway. Destroying the signal_set would restore the default
  // action, and a late SIGTERM (a supervisor repeating itself) would then kill the process with
  // the cache half-closed and report a signal instead of a clean exit: block, then ignore.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  ::pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  boost::system::error_code ignored;
  signals.clear(ignored);
  std::signal(SIGTERM, SIG_IGN);
  std::signal(SIGINT, SIG_IGN);
  log("info", "stopped");
  if (fleet_link) {
    fleet.reset();          // detach from the breaker first
    fleet_link->StopNow();  // no thread runs the io_contexts any more: close Redis here
  }
  if (cache_redis) {
    cache_redis->StopNow();
  }
  if (!drained) {
    // Work that outlived the grace period is still suspended in the io_context, and its frames
    // refer to the objects of this function: destroying them now would touch freed memory. Close
    // the cache cleanly and leave without running destructors.
    cache.reset();
    logger->flush();
    std::fflush(stdout);
    std::_Exit(0);
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
    auto parsed = vin_gateway::ParseCommandLine(argc, argv);
    if (!parsed) {
      std::fprintf(stderr, "vin-gateway: %s\n", parsed.error().message.c_str());
      return 2;
    }
    if (parsed->help) {
      std::fputs(parsed->help_text.c_str(), stdout);
      return 0;
    }
    return Run(parsed->config);
  } catch (const std::exception& e) {
    // Setup only (the request path answers errors as values and never throws out of Run):
    // what reaches here is the standard library's own, such as std::bad_alloc.
    std::fprintf(stderr, "vin-gateway: %s\n", e.what());
    return 1;
  }
}
