// apps/vpic-sim/server.h
//
// The vpic-sim HTTP(S) server: vPIC's decode endpoints (vpic_api.h) behind the fault engine
// (fault_engine.h), plus the control API that tests and demos drive:
//
//   GET  /__control/stats    counters (stats.h), the fault in force and where it comes from
//   GET  /__control/faults   the fault in force, as POST accepts it
//   POST /__control/faults   JSON such as {"mode":"error","status":503}: in force until a reset
//   POST /__control/reset    back to the startup fault, schedule restarted, counters zeroed
//
// Control requests are never faulted or counted. Bad control JSON answers 400 with
// {"error": "invalid_fault", "field": <the field>, "message": ...}.
//
// One thread runs one Asio io_context; every connection is a C++20 coroutine (no thread per
// connection), so thousands of hanging connections cost a few KiB each. While a request waits
// (hang, a latency, a drip interval, its turn in the `queue` fault) the server keeps reading its
// connection, so a client that disconnects stops counting in `in_flight` (and in `capacity`, or
// leaves the queue) at once; a request served by the `queue` fault keeps its server until its
// service ends.
//
// Thread safety: Create, port() and url() from one thread; Stop() from any thread (it only asks
// the io_context to stop, so it returns at once even with hanging connections). Everything
// else happens on the server's I/O thread. Time: schedule phases and capacity relapses read the
// injected Clock (default fusebox::DefaultClock()); latencies and drips wait on Asio
// steady_timers (real time).
//
// Example:
//   auto server = Server::Create({.listen = "127.0.0.1:0"});
//   if (!server) { return Fail(server.error()); }
//   (*server)->Start();                    // serves on a background thread
//   Get((*server)->url() + "/api/vehicles/DecodeVinValues/1FTMW1T88MFA00001?format=json");
//   (*server)->Stop();
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include "fault_engine.h"
#include "fusebox/clock.h"
#include "fusebox/status.h"
#include "recordings.h"
#include "stats.h"
#include "vpic_api.h"

namespace fusebox::vpic_sim {

struct TlsFiles {
  std::string cert_path;  // PEM certificate chain
  std::string key_path;   // PEM private key
};

struct ServerOptions {
  // "HOST:PORT" (IPv6 as "[::1]:8080"); port 0 picks a free port. Default "127.0.0.1:0".
  std::string listen = "127.0.0.1:0";
  // Serve HTTPS with these files. Default: plain HTTP.
  std::optional<TlsFiles> tls;
  // The startup fault. Default: ok.
  FaultSpec faults;
  // Phases relative to the server's start. Default: none.
  Schedule schedule;
  // Seeds latency draws. Default 1; any value.
  std::uint64_t seed = 1;
  // See DecodeOptions::reference_year. Default 2026; range [1981, 2100].
  int reference_year = 2026;
  // Time for schedule phases and relapses; must outlive the server. Default: DefaultClock().
  const Clock* clock = nullptr;

  // The first bad field (listen syntax, faults, phases, reference_year, TLS paths), or nullopt.
  // Whether the address can be bound and the files loaded is only known at Create().
  std::optional<ConfigError> Validate() const;
};

// Raises the open-file soft limit to the hard limit; returns the new soft limit (or the error).
Result<std::uint64_t, ConfigError> RaiseOpenFileLimit();

class Server {
 public:
  // Validates the options, loads the recordings, binds and listens (so port() is known), and
  // queues the accept loop; nothing is served until Run() or Start().
  static Result<std::unique_ptr<Server>, ConfigError> Create(ServerOptions options);

  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  std::uint16_t port() const { return port_; }
  // "http://HOST:PORT" or "https://HOST:PORT", HOST as given in `listen`.
  std::string url() const;

  // Serves on the calling thread until Stop().
  void Run();
  // Serves on a background thread (joined by Stop() or the destructor).
  void Start();
  // Stops serving: pending requests and hanging connections are dropped. Idempotent.
  void Stop();

  boost::asio::any_io_executor executor() { return ioc_.get_executor(); }

 private:
  using Response = boost::beast::http::response<boost::beast::http::string_body>;
  using Request = boost::beast::http::request<boost::beast::http::string_body>;

  explicit Server(ServerOptions options, Recordings recordings);

  boost::asio::awaitable<void> AcceptLoop();
  boost::asio::awaitable<void> ServePlain(boost::asio::ip::tcp::socket socket);
  boost::asio::awaitable<void> ServeTls(boost::asio::ip::tcp::socket socket);
  template <class Stream>
  boost::asio::awaitable<void> ServeHttp(Stream& stream);
  // Answers one decode request; returns whether the connection may carry another. `buffer` is
  // the connection's read buffer: waits (latency, drip) keep reading into it to notice a client
  // that leaves, and what they read stays there for the next request.
  template <class Stream>
  boost::asio::awaitable<bool> ServeDecode(Stream& stream, const Request& request,
                                           boost::beast::flat_buffer& buffer);

  // A request's place in the queue fault's service: its ticket (0: none) and when its service
  // ends (unset while it has no server).
  struct ServicePlace {
    std::uint64_t ticket = 0;
    std::optional<std::chrono::steady_clock::time_point> ends;
  };

  // Everything before a decision's answer: its turn in the queue (then `place.ends` is set), an
  // interim answer, its delay. False when the client left first or a write failed.
  template <class Stream>
  boost::asio::awaitable<bool> BeforeTheAnswer(Stream& stream, boost::beast::flat_buffer& buffer,
                                               const Decision& decision, unsigned version,
                                               ServicePlace& place);
  // Counts the fault a request is served (Stats::CountFault).
  void CountServed(const Decision& decision, unsigned version);
  // Queue fault: waits, watching the connection, until `ticket` gets a server (true) or the
  // client leaves (false).
  template <class Stream>
  boost::asio::awaitable<bool> WaitForServer(Stream& stream, boost::beast::flat_buffer& buffer,
                                             std::uint64_t ticket);
  // A request ends: its place goes back to the queue now, or, when its client left during its
  // service, once the service ends (a server does not know its client left).
  void FinishService(const ServicePlace& place) noexcept;
  // Gives `ticket` (0: none) back to the queue and ends the waits of the tickets that got a
  // server through it.
  void LeaveService(std::uint64_t ticket);

  Response HandleControl(const Request& request);
  Micros Now() const;

  ServerOptions options_;
  const Clock* clock_;
  TimePoint start_;
  Recordings recordings_;
  VpicApi api_;
  FaultEngine engine_;
  Stats stats_;
  std::string host_;
  std::uint16_t port_ = 0;
  // Declared before ioc_: coroutine frames that the io_context destroys refer to these.
  std::unique_ptr<boost::asio::ssl::context> ssl_;
  // The timers of the requests waiting for a server, by ticket: WaitForServer adds its own,
  // LeaveService expires and removes the ones whose turn came.
  std::map<std::uint64_t, boost::asio::steady_timer*> waiting_;
  // Set by the destructor: the coroutine frames destroyed with ioc_ give nothing back (the
  // timers of the waits are destroyed with them, in no set order).
  bool tearing_down_ = false;
  boost::asio::io_context ioc_{1};
  boost::asio::ip::tcp::acceptor acceptor_;
  std::thread thread_;
};

}  // namespace fusebox::vpic_sim
