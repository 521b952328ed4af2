// HttpRequestPath: a client's bytes through the gateway's request parsing and routing, in process.
//
// The server's connection loop (http_server.cc) reads each request with a Beast request_parser
// limited as HttpServerOptions says, through the socket-free steps of http/request_framing.h
// (version downgrade, framing refusal, read failures, the HttpRequest the router sees, the answer
// on the wire), and awaits Router::Handle. This body takes the same steps over the input instead
// of a socket: the bytes stand for everything the client sent before closing, the parser is fed
// what is left after the previous request (as the server's buffer keeps it), refusals are checked
// like answers, and each request is answered by a Router over a DecodeService with a fake
// upstream that answers like vPIC. Every input gets a new gateway (memory cache, breaker,
// rate limiter at 1/s with a burst of 3, admin token "fuzz-token", manual clocks that never move),
// so a crash reproduces from its input alone; the io_context is reused and run to completion.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <boost/asio/buffer.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/beast/http.hpp>
#include <boost/json/parse.hpp>

#include "core/decode.h"
#include "fusebox/circuit_breaker.h"
#include "fusebox/registry.h"
#include "fusebox/testing/manual_clock.h"
#include "fuzz/fuzz_support.h"
#include "http/admin_route.h"
#include "http/http_message.h"
#include "http/http_server.h"
#include "http/request_framing.h"
#include "http/router.h"
#include "service/cache.h"
#include "service/decode_service.h"
#include "service/gateway_metrics.h"
#include "service/rate_limiter.h"
#include "service/upstream_limits.h"
#include "vin_gateway/fake_vpic_client.h"
#include "vin_gateway/fuzz/fuzz_targets.h"
#include "vin_gateway/manual_wall_clock.h"

namespace fusebox::gateway::fuzz {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;
using fusebox::fuzz::Check;

// Requests answered per input at most: enough for pipelining and smuggling cases, few enough
// that one input stays quick.
constexpr int kMaxRequests = 8;

// What one input talks to: the gateway as main.cc wires it, with fakes at the edges.
struct Gateway {
  Gateway()
      : registry(fusebox::CircuitBreakerConfig{}, {.clock = &clock}),
        limits(UpstreamLimits::Fixed(4)),
        cache(MakeMemoryCache(64)) {
    fusebox::CircuitBreakerConfig config;
    config.failure_threshold = 3;
    config.cooldown = std::chrono::seconds(20);
    (void)registry.Configure("vpic", config);
    breaker = registry.Get("vpic").value();
    service = std::make_unique<DecodeService>(
        DecodeServiceDeps{*cache, client, *breaker, *limits, limiter, clock, wall, metrics},
        DecodeServiceOptions{});
    router = std::make_unique<Router>(RouterDeps{*service, registry, *cache, *limits, metrics,
                                                 limiter, client, std::string("fuzz-token"),
                                                 admin_throttle, [] { return false; }});
  }

  fusebox::testing::ManualClock clock;
  testing::ManualWallClock wall;
  testing::FakeVpicClient client;
  fusebox::Registry registry;
  std::shared_ptr<fusebox::CircuitBreaker> breaker;
  std::unique_ptr<UpstreamLimits> limits;
  std::unique_ptr<Cache> cache;
  RateLimiter limiter{1, 3, clock};
  AdminThrottle admin_throttle{clock};
  GatewayMetrics metrics;
  std::unique_ptr<DecodeService> service;
  std::unique_ptr<Router> router;
};

bool Utf8(std::string_view s) { return SanitizeUtf8(s) == s; }

bool HeaderSafe(std::string_view s) {
  return s.find_first_of(std::string_view("\r\n\0", 3)) == std::string_view::npos;
}

// What reading one request ends with: the request, or the answer the server writes before it
// closes (a refusal, 400/408/413/431), or neither (the client left: the server just closes).
struct ReadOutcome {
  std::optional<http::request<http::string_body>> request;
  std::optional<HttpResponse> refusal;
};

// Reads the next request from `buffer` with the server's steps (request_framing.h) in the
// server's order, everything the client sent already buffered: the header (an HTTP/1.2..1.9
// request line downgraded once) through HeaderReadBuffer and without eager parsing, as
// http::async_read_header reads it, the framing check, then the body (eagerly, as
// http::async_read); consumes what the parser used, as the server's buffer does.
ReadOutcome ReadRequest(beast::flat_buffer& buffer) {
  const HttpServerOptions limits;
  std::optional<http::request_parser<http::string_body>> parser;
  const auto fresh_parser = [&] {
    parser.emplace();
    parser->header_limit(static_cast<std::uint32_t>(limits.header_limit));
    parser->body_limit(limits.body_limit);
  };
  fresh_parser();
  HeaderReadBuffer header_buffer(buffer);
  boost::system::error_code ec;
  const auto feed = [&] {
    const std::size_t before = buffer.size();
    const std::size_t used = parser->put(buffer.data(), ec);
    Check(used <= before);
    if (parser->eager()) {
      buffer.consume(used);  // the body
    } else {
      header_buffer.consume(used);  // the header, which the server reads through it too
    }
    return used;
  };
  bool downgraded = false;
  while (!parser->is_header_done()) {
    const std::size_t used = buffer.size() > 0 ? feed() : 0;
    if (ec == http::error::bad_version && !downgraded && DowngradeMinorVersion(buffer)) {
      downgraded = true;
      ec = {};
      fresh_parser();
      continue;
    }
    if (ec && ec != http::error::need_more) {
      return {std::nullopt, ReadFailureResponse(ec)};
    }
    ec = {};
    if (used == 0) {  // the header is incomplete and the client sends nothing more
      parser->put_eof(ec);
      return {std::nullopt, ReadFailureResponse(ec ? ec : http::error::partial_message)};
    }
  }
  if (std::optional<HttpResponse> refusal = FramingRefusal(*parser, header_buffer.obs_fold())) {
    return {std::nullopt, std::move(refusal)};
  }
  // (ExpectsContinue would send 100 Continue here; the bytes are all buffered already.)
  (void)ExpectsContinue(parser->get().base());
  parser->eager(true);
  while (!parser->is_done()) {
    const std::size_t used = buffer.size() > 0 ? feed() : 0;
    if (ec && ec != http::error::need_more) {
      return {std::nullopt, ReadFailureResponse(ec)};
    }
    ec = {};
    if (used == 0) {
      parser->put_eof(ec);
      if (ec || !parser->is_done()) {
        return {std::nullopt, ReadFailureResponse(ec ? ec : http::error::partial_message)};
      }
    }
  }
  return {parser->release(), std::nullopt};
}

HttpResponse Answer(Gateway& gateway, net::io_context& io, HttpRequest request) {
  std::optional<HttpResponse> out;
  bool threw = false;
  net::co_spawn(io, Awaited(gateway.router->Handle(std::move(request))),
                [&out, &threw](std::exception_ptr error, HttpResponse response) {
                  if (error) {
                    threw = true;
                  } else {
                    out = std::move(response);
                  }
                });
  io.restart();
  io.run();
  Check(!threw);  // the server would answer 500 INTERNAL_ERROR: a router bug
  Check(out.has_value());
  return out.value_or(HttpResponse{});
}

// What every answer must be, and that it frames as HTTP/1.1 the way the server writes it.
void CheckResponse(const HttpResponse& r) {
  Check(r.status >= 200 && r.status <= 599);
  Check(!r.log_status.empty() && r.log_status.size() <= 64 && Utf8(r.log_status));
  Check(r.log_vin.size() <= 256 && Utf8(r.log_vin));
  Check(r.log_source.size() <= 64 && Utf8(r.log_source));
  Check(r.log_detail.size() <= 1024);
  Check(!r.content_type.empty() && HeaderSafe(r.content_type));
  for (const auto& [name, value] : r.headers) {
    Check(!name.empty() && HeaderSafe(name) && name.find_first_of(": ") == std::string::npos);
    Check(HeaderSafe(value));
  }
  const std::string_view body = r.body_bytes();
  if (r.status == 204 || r.status == 304) {
    Check(body.empty());
  }
  if (r.content_type.starts_with("application/json")) {
    Check(Utf8(body));
    boost::system::error_code ec;
    const json::value v = json::parse(body, ec);
    Check(!ec && v.is_object());
    const json::value* status = v.get_object().if_contains("status");
    Check(status != nullptr && status->is_string());
  }

  // As the server writes it, then read back by a client.
  std::string bytes;
  AppendResponseHead(r, 11, "fuzz-1", true, bytes);
  bytes += body;

  http::response_parser<http::string_body> parser;
  parser.eager(true);
  parser.body_limit(bytes.size());
  boost::system::error_code ec;
  const std::size_t used = parser.put(net::buffer(bytes), ec);
  Check(!ec && parser.is_done() && used == bytes.size());
  Check(parser.get().result_int() == r.status);
  Check(parser.get().body() == body);
  Check(parser.get().keep_alive());
}

}  // namespace

int HttpRequestPath(const std::uint8_t* data, std::size_t size) {
  static net::io_context io;
  Gateway gateway;
  beast::flat_buffer buffer;
  const std::string_view input = fusebox::fuzz::AsText(data, size);
  net::buffer_copy(buffer.prepare(input.size()), net::buffer(input.data(), input.size()));
  buffer.commit(input.size());
  for (int n = 0; n < kMaxRequests && buffer.size() > 0; ++n) {
    ReadOutcome read = ReadRequest(buffer);
    if (!read.request) {
      if (read.refusal) {
        CheckResponse(*read.refusal);  // written, then the connection closes
      }
      break;
    }
    const bool keep_alive = read.request->keep_alive();
    CheckResponse(Answer(gateway, io, ToHttpRequest(std::move(*read.request), "127.0.0.1")));
    if (!keep_alive) {
      break;  // the server closes after this answer
    }
  }
  return 0;
}

}  // namespace fusebox::gateway::fuzz
