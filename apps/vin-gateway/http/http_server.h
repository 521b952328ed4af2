// vin-gateway/http/http_server.h
//
// The HTTP/1.1 server (Boost.Beast, C++20 coroutines): one coroutine per connection, keep-alive,
// and the request hygiene of docs/http-api.md ("Limits", "HTTP"):
//   - request line and headers at most 8 KiB (else 431), bodies at most 64 KiB (else 413),
//     malformed requests 400, all with JSON bodies, and the connection is closed;
//   - framing per RFC 9112: a Transfer-Encoding other than exactly `chunked` (the smuggling
//     vector `chunked, identity`; any Transfer-Encoding in HTTP/1.0), an HTTP/1.1 request without
//     exactly one Host (or any request with two) is 400 and the connection is closed;
//   - `Expect: 100-continue` is answered `100 Continue` before the body is read;
//   - HTTP/1.x with x >= 2 is served as HTTP/1.1 (the answer says HTTP/1.1);
//   - HEAD answers carry the headers of the GET answer (Content-Length included) and no body;
//   - every answer, the server's own refusals included, says X-Content-Type-Options: nosniff
//     (AppendResponseHead, request_framing.h);
//   - a client must send a whole request within `client_timeout` (idle keep-alive included):
//     it is answered 408 (best effort) and cut off; the access log has a line for it unless the
//     connection was merely idle after a served request (an ordinary keep-alive close);
//   - an answer must be taken within `write_timeout` (a client that stops reading): else the
//     connection is cut off, and the request's log line says so;
//   - the handler runs to completion even if the client goes away (its work is not cancelled).
// Every answered request is reported once to the access log callback (the one structured log
// line per request), its fields bounded (access_log.h).
//
// Shutdown (SIGTERM): BeginShutdown() closes the listener and idle connections at once;
// connections with a request in progress finish it, answer with `Connection: close`, and close.
// The owner waits until active_connections() is 0 (or its grace period ends) and stops the
// io_contexts; at the end of the grace period it calls LogUnfinishedRequests() first, so that
// every request cut off without an answer has its log line.
//
// Thread safety: Start/BeginShutdown/LogUnfinishedRequests and the accessors may be called from
// any thread. Time: Asio timers for the client and write timeouts (real time).
//
// Example:
//   auto server = HttpServer::Create(io, {.host = "127.0.0.1", .port = 0}, handler, log);
//   if (!server) die(server.error());
//   (*server)->Start();
//   std::cout << "listening on http://" << (*server)->local_address() << "\n";
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "fusebox/clock.h"
#include "fusebox/status.h"
#include "http/client_address.h"
#include "http/http_message.h"

namespace fusebox::gateway {

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 8080;  // 0 picks a free port
  // Whole request (request line, headers, body), idle keep-alive wait included.
  fusebox::Duration client_timeout = std::chrono::seconds(10);
  fusebox::Duration write_timeout = std::chrono::seconds(10);
  std::size_t header_limit = std::size_t{8} * 1024;
  std::size_t body_limit = std::size_t{64} * 1024;
  // File descriptors kept free for everything but client connections (upstream calls above
  // all): no connection is accepted while the connections open would leave fewer than this of the
  // open-file limit (counted from the descriptors open at Start()). Capped at half the limit.
  std::size_t descriptor_reserve = 64;
  // Proxies whose X-Forwarded-For names the client (client_address.h); empty: nobody's, the
  // client is always the TCP peer. The access log sees the client's address; the handler its
  // ClientKey (HttpRequest::client: the rate limit's and the admin throttle's key).
  TrustedProxies trusted_proxies{};
  // The prefix length of the IPv6 networks whose clients share one key (ClientKey). [1, 128].
  unsigned client_ipv6_prefix = kDefaultClientIpv6Prefix;
  // Where the server's own events go (accept trouble, the reserve reached and left): level
  // ("info", "warn") and a sentence. Empty: not logged.
  std::function<void(std::string_view level, std::string_view message)> event_log = nullptr;
};

// One answered request, for the access log.
struct AccessRecord {
  std::string request_id;
  std::string method;
  std::string target;
  std::string client;
  unsigned http_status = 0;  // 0: no answer was sent (cut off at the end of the grace period)
  std::string status;        // the decode or transport status spelling
  std::string vin;
  std::string source;
  std::optional<fusebox::Duration> upstream_latency;
  std::string detail;            // why the upstream call failed ("" when it did not)
  std::string note;              // what happened to the connection, when not an ordinary answer
  std::string upstream;          // "call", "joined", "probe" or "" (HttpResponse::log_upstream)
  std::string upstream_outcome;  // "success", "failure", "timeout", "ignored" or ""
  fusebox::Duration elapsed{0};
};

// Answers one request: at once, or by an awaitable (http_message.h). A handler that throws, at
// once or while awaited, is answered 500 INTERNAL_ERROR.
using Handler = std::function<HandlerResult(HttpRequest)>;
using AccessLog = std::function<void(const AccessRecord&)>;

class HttpServer {
 public:
  // Binds and listens (SO_REUSEADDR) on `io`; fails with a sentence when it cannot. Connections
  // are served on `session_contexts` in turn (round robin; default: `io` alone), each one on its
  // io_context's own executor, without a strand, so each of these io_contexts must be run by one
  // thread (vin-gateway's --threads makes one io_context per I/O thread). Threads then share no
  // scheduler, a connection stays on the thread it was handed to, and no completion pays for a
  // strand's queue and lock (6% of an open-breaker refusal's instructions).
  static fusebox::Result<std::unique_ptr<HttpServer>, std::string> Create(
      boost::asio::io_context& io, HttpServerOptions options, Handler handler, AccessLog access_log,
      std::vector<boost::asio::io_context*> session_contexts = {});
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  void Start();
  void BeginShutdown();
  // One access log line (http_status 0, SHUTTING_DOWN) for each request still in progress, which
  // will get no answer; later completions of those requests are not logged again. Returns how many.
  // A request that starts to wait (for its handler or for the client) after this call has its line
  // written the same way by its session.
  std::size_t LogUnfinishedRequests();

  // "127.0.0.1:41234" (IPv6 in brackets).
  std::string local_address() const;
  std::uint16_t port() const;
  std::int64_t active_connections() const noexcept {
    return connections_.load(std::memory_order_relaxed);
  }
  bool shutting_down() const noexcept { return draining_.load(std::memory_order_relaxed); }

 private:
  struct Impl;
  struct Session;
  explicit HttpServer(std::unique_ptr<Impl> impl);
  class Connection;

  // Takes connections until the listener closes, while fewer than `cap` are open.
  boost::asio::awaitable<void> AcceptLoop(Impl& impl, std::int64_t cap);
  // Serves `socket`, then every connection already waiting in the backlog (non-blocking
  // accepts), not one per turn of the event loop: a burst of 256 connects would otherwise wait
  // 256 turns, each as long as the requests of every connection taken so far, for the last one
  // (a second and more under load).
  void TakeBacklog(Impl& impl, boost::asio::ip::tcp::socket socket, std::int64_t cap);
  void StartSession(Impl& impl, boost::asio::ip::tcp::socket socket);
  // One connection's requests, in turn, until it closes or the server drains.
  boost::asio::awaitable<void> Serve(Impl& impl, boost::asio::ip::tcp::socket socket,
                                     Session& session);

  std::unique_ptr<Impl> impl_;
  std::atomic<std::int64_t> connections_{0};
  std::atomic<bool> draining_{false};
};

}  // namespace fusebox::gateway
