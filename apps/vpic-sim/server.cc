#include "server.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <exception>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ssl/stream_base.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/stream_traits.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <boost/json/serialize.hpp>

#include "embedded_files.h"
#include "fault_json.h"

namespace fusebox::vpic_sim {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

constexpr auto kUseTuple = asio::as_tuple(asio::use_awaitable);
constexpr std::string_view kJson = "application/json; charset=utf-8";
constexpr std::string_view kControlPrefix = "/__control/";
constexpr std::size_t kHeaderLimit = std::size_t{16} * 1024;
constexpr std::uint64_t kBodyLimit = std::uint64_t{1024} * 1024;

// What a client gets in `garbage` mode: 200, a JSON content type, and a body that is not JSON
// (the kind of page a misconfigured proxy serves).
constexpr std::string_view kGarbageBody =
    "<!DOCTYPE html>\n<html><head><title>Results returned successfully</title></head>"
    "<body><h1>Service</h1><p>This is not JSON.</p></body></html>\n";

void LogException(const std::exception_ptr& e) {
  if (!e) {
    return;
  }
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    fmt::print(stderr, "vpic-sim: connection error: {}\n", ex.what());
  } catch (...) {
    fmt::print(stderr, "vpic-sim: connection error\n");
  }
}

std::string ToLower(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') {
      c = static_cast<char>(c - 'A' + 'a');
    }
  }
  return out;
}

std::string_view PathOf(std::string_view target) { return target.substr(0, target.find('?')); }

http::response<http::string_body> MakeResponse(unsigned status, std::string body,
                                               std::string_view content_type, bool keep_alive,
                                               unsigned version) {
  http::response<http::string_body> res;
  res.version(version);
  res.result(status);
  res.set(http::field::content_type, content_type);
  res.keep_alive(keep_alive);
  res.body() = std::move(body);
  res.prepare_payload();
  return res;
}

http::response<http::string_body> JsonResponse(unsigned status, const boost::json::object& body,
                                               bool keep_alive, unsigned version) {
  return MakeResponse(status, boost::json::serialize(body), kJson, keep_alive, version);
}

std::string ErrorBodyFor(int status, std::optional<int> retry_after_s) {
  boost::json::object body;
  if (status == 429) {
    body["message"] =
        fmt::format("Too many requests. Please retry after {} seconds.", retry_after_s.value_or(1));
  } else {
    body["message"] = "An error has occurred.";
  }
  body["messageDetail"] = fmt::format("vpic-sim injected fault: HTTP {}", status);
  return boost::json::serialize(body);
}

// An informational (1xx) answer: a head alone, never a body (interim mode).
std::string InterimHead(int code) {
  std::string head = fmt::format("HTTP/1.1 {} {}\r\n", code,
                                 code == 100   ? "Continue"
                                 : code == 102 ? "Processing"
                                 : code == 103 ? "Early Hints"
                                               : "Informational");
  if (code == 103) {
    head += "Link: </assets/style.css>; rel=preload; as=style\r\n";
  }
  head += "\r\n";
  return head;
}

// The raw head of a response whose body the server writes itself (truncated, drip).
std::string RawHead(unsigned status, std::string_view content_type, std::size_t content_length,
                    bool keep_alive) {
  return fmt::format(
      "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n"
      "Connection: {}\r\n\r\n",
      status, std::string_view(http::obsolete_reason(http::int_to_status(status))), content_type,
      content_length, keep_alive ? "keep-alive" : "close");
}

// Items in a batch form's DATA field (what the batch asks vPIC to decode).
std::int64_t BatchItems(std::string_view form) {
  const std::string data = FormValue(form, "DATA").value_or("");
  std::int64_t n = 0;
  std::string_view rest = data;
  while (!rest.empty()) {
    const std::size_t semi = rest.find(';');
    const std::string_view item = rest.substr(0, semi);
    rest = semi == std::string_view::npos ? std::string_view() : rest.substr(semi + 1);
    if (!NormalizeVin(item.substr(0, item.find(','))).empty()) {
      ++n;
    }
  }
  return n;
}

// How much a client may send while its request waits (a pipelined request, in practice) before
// the server stops reading it; beyond that a disconnect is only noticed when the wait ends.
constexpr std::size_t kWatchLimit = kHeaderLimit + kBodyLimit;

// Reads the connection into `buffer` until the client closes it (or it breaks), then returns.
// Cancelled by WaitWatching when the wait ends first. Bytes read stay in `buffer` for the next
// request's parser.
template <class Stream>
asio::awaitable<void> WatchForClose(Stream& stream, beast::flat_buffer& buffer) {
  for (;;) {
    if (buffer.size() >= kWatchLimit) {
      // Stop reading (back-pressure); wait until cancelled.
      asio::steady_timer idle(co_await asio::this_coro::executor,
                              asio::steady_timer::time_point::max());
      co_await idle.async_wait(kUseTuple);
      co_return;
    }
    auto [ec, n] = co_await stream.async_read_some(buffer.prepare(4096), kUseTuple);
    if (ec) {
      co_return;
    }
    buffer.commit(n);
  }
}

// Waits `delay` while watching the connection, so that a client that gives up is noticed at once
// (and stops counting as in flight), as in hang mode. True when the delay passed, false when the
// client closed the connection first (a client that only shuts down its sending side counts as
// gone, as in hang mode).
template <class Stream>
asio::awaitable<bool> WaitWatching(Stream& stream, beast::flat_buffer& buffer, Micros delay) {
  using namespace asio::experimental::awaitable_operators;  // NOLINT: operator||
  asio::steady_timer timer(co_await asio::this_coro::executor, std::chrono::microseconds(delay));
  const auto first = co_await (timer.async_wait(kUseTuple) || WatchForClose(stream, buffer));
  co_return first.index() == 0;
}

// Runs a function when it goes out of scope: a request's end, by whichever co_return. The
// function must not throw (it runs in a destructor).
template <class F>
class ScopeExit {
  static_assert(std::is_nothrow_invocable_v<F&>);

 public:
  explicit ScopeExit(F f) : f_(std::move(f)) {}
  ~ScopeExit() { f_(); }
  ScopeExit(const ScopeExit&) = delete;
  ScopeExit& operator=(const ScopeExit&) = delete;

 private:
  F f_;
};

struct HostPort {
  std::string host;  // as written (IPv6 with brackets)
  std::string bare;  // without brackets
  std::uint16_t port = 0;
};

std::optional<HostPort> SplitListen(std::string_view listen) {
  const std::size_t colon = listen.rfind(':');
  if (colon == std::string_view::npos || colon == 0) {
    return std::nullopt;
  }
  HostPort hp;
  hp.host = std::string(listen.substr(0, colon));
  hp.bare = hp.host;
  if (hp.bare.size() >= 2 && hp.bare.front() == '[' && hp.bare.back() == ']') {
    hp.bare = hp.bare.substr(1, hp.bare.size() - 2);
  }
  const std::string_view port = listen.substr(colon + 1);
  unsigned value = 0;
  if (port.empty() || port.size() > 5) {
    return std::nullopt;
  }
  for (char c : port) {
    if (c < '0' || c > '9') {
      return std::nullopt;
    }
    value = value * 10 + static_cast<unsigned>(c - '0');
  }
  if (value > 65535) {
    return std::nullopt;
  }
  hp.port = static_cast<std::uint16_t>(value);
  return hp;
}

}  // namespace

Result<std::uint64_t, ConfigError> RaiseOpenFileLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) {
    return ConfigError{"RLIMIT_NOFILE", "getrlimit(RLIMIT_NOFILE) failed"};
  }
  if (limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &limit) != 0) {
      return ConfigError{"RLIMIT_NOFILE", "setrlimit(RLIMIT_NOFILE) failed"};
    }
  }
  return static_cast<std::uint64_t>(limit.rlim_cur);
}

std::optional<ConfigError> ServerOptions::Validate() const {
  if (!SplitListen(listen)) {
    return ConfigError{"listen", fmt::format("listen must be HOST:PORT with PORT in [0, 65535], "
                                             "got '{}'",
                                             listen)};
  }
  if (auto e = faults.Validate()) {
    return e;
  }
  for (const Phase& phase : schedule.phases) {
    if (auto e = phase.spec.Validate()) {
      return e;
    }
  }
  if (reference_year < 1981 || reference_year > 2100) {
    return ConfigError{
        "reference_year",
        fmt::format("reference_year must be in [1981, 2100], got {}", reference_year)};
  }
  if (tls && (tls->cert_path.empty() || tls->key_path.empty())) {
    return ConfigError{tls->cert_path.empty() ? "tls-cert" : "tls-key",
                       "TLS needs both a certificate and a key file"};
  }
  return std::nullopt;
}

Result<std::unique_ptr<Server>, ConfigError> Server::Create(ServerOptions options) {
  if (auto e = options.Validate()) {
    return *e;
  }
  const std::optional<HostPort> split = SplitListen(options.listen);
  if (!split) {
    return ConfigError{"listen", "listen must be HOST:PORT"};  // Validate() said so already
  }
  const HostPort& hp = *split;
  auto recordings = Recordings::Load(EmbeddedFiles());
  if (!recordings) {
    return recordings.error();
  }
  std::unique_ptr<Server> server(new Server(std::move(options), std::move(*recordings)));

  boost::system::error_code ec;
  asio::ip::address address =
      asio::ip::make_address(hp.bare == "localhost" ? "127.0.0.1" : hp.bare, ec);
  if (ec) {
    tcp::resolver resolver(server->ioc_);
    auto results = resolver.resolve(hp.bare, "", ec);
    if (ec || results.empty()) {
      return ConfigError{"listen", fmt::format("cannot resolve host '{}'", hp.bare)};
    }
    address = results.begin()->endpoint().address();
  }
  const tcp::endpoint endpoint(address, hp.port);
  tcp::acceptor& acceptor = server->acceptor_;
  if (acceptor.open(endpoint.protocol(), ec);
      !ec && (acceptor.set_option(asio::socket_base::reuse_address(true), ec), !ec) &&
      (acceptor.bind(endpoint, ec), !ec) &&
      (acceptor.listen(asio::socket_base::max_listen_connections, ec), !ec)) {
    server->port_ = acceptor.local_endpoint(ec).port();
  }
  if (ec) {
    return ConfigError{
        "listen", fmt::format("cannot listen on {}: {}", server->options_.listen, ec.message())};
  }
  server->host_ = hp.host;

  if (const std::optional<TlsFiles>& tls_files = server->options_.tls; tls_files.has_value()) {
    const TlsFiles& tls = *tls_files;
    auto ctx = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_server);
    ctx->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                         asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                         asio::ssl::context::no_tlsv1_1,
                     ec);
    ctx->use_certificate_chain_file(tls.cert_path, ec);
    if (ec) {
      return ConfigError{"tls-cert", fmt::format("cannot load the certificate '{}': {}",
                                                 tls.cert_path, ec.message())};
    }
    ctx->use_private_key_file(tls.key_path, asio::ssl::context::pem, ec);
    if (ec) {
      return ConfigError{"tls-key", fmt::format("cannot load the private key '{}': {}",
                                                tls.key_path, ec.message())};
    }
    server->ssl_ = std::move(ctx);
  }
  asio::co_spawn(server->ioc_, server->AcceptLoop(), LogException);
  return server;
}

Server::Server(ServerOptions options, Recordings recordings)
    : options_(std::move(options)),
      clock_(options_.clock != nullptr ? options_.clock : &DefaultClock()),
      start_(clock_->Now()),
      recordings_(std::move(recordings)),
      api_(recordings_, ApiOptions{.reference_year = options_.reference_year}),
      engine_(options_.faults, options_.schedule, options_.seed),
      acceptor_(ioc_) {}

Server::~Server() {
  Stop();
  tearing_down_ = true;
  boost::system::error_code ec;
  acceptor_.close(ec);
}

std::string Server::url() const {
  return fmt::format("{}://{}:{}", ssl_ ? "https" : "http", host_, port_);
}

void Server::Run() { ioc_.run(); }

void Server::Start() {
  thread_ = std::thread([this] { ioc_.run(); });
}

void Server::Stop() {
  ioc_.stop();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) {
    thread_.join();
  }
}

Micros Server::Now() const {
  return std::chrono::duration_cast<std::chrono::microseconds>(clock_->Now() - start_).count();
}

asio::awaitable<void> Server::AcceptLoop() {
  for (;;) {
    auto [ec, socket] = co_await acceptor_.async_accept(kUseTuple);
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) {
      co_return;
    }
    if (ec) {
      // Out of descriptors (or a connection that died before accept): back off briefly rather
      // than spin, and keep serving the connections already open.
      asio::steady_timer pause(co_await asio::this_coro::executor, std::chrono::milliseconds(50));
      co_await pause.async_wait(kUseTuple);
      continue;
    }
    socket.set_option(tcp::no_delay(true), ec);
    if (ssl_) {
      asio::co_spawn(ioc_, ServeTls(std::move(socket)), LogException);
    } else {
      asio::co_spawn(ioc_, ServePlain(std::move(socket)), LogException);
    }
  }
}

asio::awaitable<void> Server::ServePlain(tcp::socket socket) {
  beast::tcp_stream stream(std::move(socket));
  co_await ServeHttp(stream);
}

asio::awaitable<void> Server::ServeTls(tcp::socket socket) {
  beast::ssl_stream<beast::tcp_stream> stream(std::move(socket), *ssl_);
  beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(10));
  auto [ec] = co_await stream.async_handshake(asio::ssl::stream_base::server, kUseTuple);
  beast::get_lowest_layer(stream).expires_never();
  if (ec) {
    co_return;
  }
  co_await ServeHttp(stream);
}

template <class Stream>
asio::awaitable<void> Server::ServeHttp(Stream& stream) {
  beast::flat_buffer buffer;
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(kHeaderLimit);
    parser.body_limit(kBodyLimit);
    auto [ec, bytes] = co_await http::async_read_header(stream, buffer, parser, kUseTuple);
    if (!ec && !parser.is_done()) {
      // curl and others wait for "100 Continue" before sending a large body.
      const auto expect = parser.get()[http::field::expect];
      if (beast::iequals(expect, "100-continue")) {
        static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
        std::tie(ec, bytes) =
            co_await asio::async_write(stream, asio::buffer(kContinue), kUseTuple);
      }
      if (!ec) {
        std::tie(ec, bytes) = co_await http::async_read(stream, buffer, parser, kUseTuple);
      }
    }
    if (ec) {
      if (ec.category() == http::make_error_code(http::error::bad_target).category() &&
          ec != http::error::end_of_stream && ec != http::error::partial_message) {
        boost::json::object body;
        body["message"] = "The request is invalid.";
        body["messageDetail"] = ec.message();
        auto res = JsonResponse(400, body, false, 11);
        co_await http::async_write(stream, res, kUseTuple);
      }
      co_return;
    }
    const Request& request = parser.get();
    bool keep_alive = request.keep_alive();
    if (ToLower(PathOf(request.target())).starts_with(kControlPrefix)) {
      Response res = HandleControl(request);
      auto [wec, written] = co_await http::async_write(stream, res, kUseTuple);
      if (wec) {
        co_return;
      }
    } else {
      keep_alive = co_await ServeDecode(stream, request, buffer) && keep_alive;
    }
    if (!keep_alive) {
      boost::system::error_code ignored;
      beast::get_lowest_layer(stream).socket().shutdown(tcp::socket::shutdown_send, ignored);
      co_return;
    }
  }
}

template <class Stream>
asio::awaitable<bool> Server::ServeDecode(Stream& stream, const Request& request,
                                          beast::flat_buffer& buffer) {
  const std::string_view target(request.target().data(), request.target().size());
  const std::optional<Endpoint> endpoint = RouteOf(target);
  stats_.CountRequest(endpoint ? ToString(*endpoint) : std::string_view("other"));
  if (endpoint == Endpoint::kDecodeVinValuesBatch) {
    stats_.CountBatchVins(BatchItems(request.body()));
  }
  InFlight in_flight(stats_);
  const Decision decision = engine_.Admit(Now(), stats_.in_flight());
  // The request's place in the queue fault's service, given back however the request ends (but
  // not before its service does: BeforeTheAnswer sets when that is).
  ServicePlace place{.ticket = decision.ticket, .ends = std::nullopt};
  const ScopeExit leave([this, &place]() noexcept { FinishService(place); });
  const bool keep_alive = request.keep_alive();
  const unsigned version = request.version();
  // A request that waits for a server is counted once it has one (BeforeTheAnswer).
  if (!decision.wait_for_server) {
    CountServed(decision, version);
  }

  if (decision.action == Action::kHang) {
    // Never answer; the request stays in flight until the client (or Stop) closes the
    // connection. Reading on is how a closed connection is noticed.
    std::array<char, 1024> scratch{};
    for (;;) {
      auto [ec, n] = co_await stream.async_read_some(asio::buffer(scratch), kUseTuple);
      if (ec) {
        co_return false;
      }
    }
  }
  // BeforeTheAnswer's WaitForServer registers its wait before this coroutine first suspends, so
  // the Leave that names the ticket (another request's, on this thread) always finds it.
  if ((decision.wait_for_server || decision.delay > 0 || decision.interim_status > 0) &&
      !co_await BeforeTheAnswer(stream, buffer, decision, version, place)) {
    co_return false;  // the client left: nothing to answer
  }

  auto answer = [&]() {
    const ApiResponse r = api_.Handle(
        {.method = std::string_view(request.method_string().data(), request.method_string().size()),
         .target = target,
         .body = request.body()});
    Response res = MakeResponse(r.status, r.body, r.content_type, keep_alive, version);
    if (!r.allow.empty()) {
      res.set(http::field::allow, r.allow);
    }
    return res;
  };

  switch (decision.action) {
    case Action::kAnswer: {
      Response res = answer();
      auto [ec, n] = co_await http::async_write(stream, res, kUseTuple);
      co_return !ec;
    }
    case Action::kError:
    case Action::kReject: {
      Response res = MakeResponse(static_cast<unsigned>(decision.status),
                                  ErrorBodyFor(decision.status, decision.retry_after_s), kJson,
                                  keep_alive, version);
      if (decision.retry_after_s) {
        res.set(http::field::retry_after, std::to_string(*decision.retry_after_s));
      }
      auto [ec, n] = co_await http::async_write(stream, res, kUseTuple);
      co_return !ec;
    }
    case Action::kGarbage: {
      Response res = MakeResponse(200, std::string(kGarbageBody), kJson, keep_alive, version);
      auto [ec, n] = co_await http::async_write(stream, res, kUseTuple);
      co_return !ec;
    }
    case Action::kReset: {
      auto& socket = beast::get_lowest_layer(stream).socket();
      boost::system::error_code ignored;
      socket.set_option(asio::socket_base::linger(true, 0), ignored);
      socket.close(ignored);
      co_return false;
    }
    case Action::kTruncated: {
      const Response full = answer();
      const std::string& body = full.body();
      std::string wire = RawHead(full.result_int(), kJson, body.size(), false);
      wire.append(body, 0, body.size() / 2);
      co_await asio::async_write(stream, asio::buffer(wire), kUseTuple);
      auto& socket = beast::get_lowest_layer(stream).socket();
      boost::system::error_code ignored;
      socket.shutdown(tcp::socket::shutdown_both, ignored);
      socket.close(ignored);
      co_return false;
    }
    case Action::kDrip: {
      const Response full = answer();
      const std::string& body = full.body();
      const std::string head = RawHead(full.result_int(), kJson, body.size(), keep_alive);
      auto [hec, hn] = co_await asio::async_write(stream, asio::buffer(head), kUseTuple);
      if (hec) {
        co_return false;
      }
      const auto step = static_cast<std::size_t>(decision.drip_bytes);
      for (std::size_t at = 0; at < body.size(); at += step) {
        if (at > 0 && !co_await WaitWatching(stream, buffer, decision.drip_interval)) {
          co_return false;
        }
        const std::size_t n = std::min(step, body.size() - at);
        auto [ec, written] =
            co_await asio::async_write(stream, asio::buffer(body.data() + at, n), kUseTuple);
        if (ec) {
          co_return false;
        }
      }
      co_return true;
    }
    case Action::kHang:
      break;
  }
  co_return false;
}

// What comes before the answer: the queue fault's wait for a server (a client that leaves first
// is counted as queue_abandoned, one served as its decision says), then an informational answer
// at once (interim mode; never to an HTTP/1.0 client, which cannot read one), then the
// decision's delay, watching the connection. False when the client left or the write failed.
// Its own coroutine: with these waits and writes inline in ServeDecode, gcc 12 at -O3 warns
// (-Wmismatched-new-delete) inside Asio's frame recycling.
template <class Stream>
asio::awaitable<bool> Server::BeforeTheAnswer(Stream& stream, beast::flat_buffer& buffer,
                                              const Decision& decision, unsigned version,
                                              ServicePlace& place) {
  if (decision.wait_for_server) {
    if (!co_await WaitForServer(stream, buffer, decision.ticket)) {
      stats_.CountFault("queue_abandoned");
      co_return false;  // no work was done for it
    }
    CountServed(decision, version);
  }
  if (place.ticket != 0) {
    // The service starts now and lasts the delay, whether or not the client stays for it.
    place.ends = std::chrono::steady_clock::now() + std::chrono::microseconds(decision.delay);
  }
  if (decision.interim_status > 0 && version >= 11) {
    const std::string interim = InterimHead(decision.interim_status);
    auto [ec, n] = co_await asio::async_write(stream, asio::buffer(interim), kUseTuple);
    if (ec) {
      co_return false;
    }
  }
  if (decision.delay > 0) {
    co_return co_await WaitWatching(stream, buffer, decision.delay);
  }
  co_return true;
}

void Server::CountServed(const Decision& decision, unsigned version) {
  // An HTTP/1.0 client is never sent an informational answer (BeforeTheAnswer): what it got is
  // an ordinary answer, and counted as one.
  stats_.CountFault(decision.interim_status > 0 && version < 11 ? std::string_view("ok")
                                                                : decision.label);
}

template <class Stream>
asio::awaitable<bool> Server::WaitForServer(Stream& stream, beast::flat_buffer& buffer,
                                            std::uint64_t ticket) {
  using namespace asio::experimental::awaitable_operators;  // NOLINT: operator||
  asio::steady_timer turn(co_await asio::this_coro::executor,
                          asio::steady_timer::time_point::max());
  waiting_.emplace(ticket, &turn);
  stats_.EnterQueue();
  const auto first = co_await (turn.async_wait(kUseTuple) || WatchForClose(stream, buffer));
  stats_.LeaveQueue();
  waiting_.erase(ticket);
  co_return first.index() == 0;
}

void Server::FinishService(const ServicePlace& place) noexcept {
  if (place.ticket == 0 || tearing_down_) {
    return;
  }
  try {
    if (place.ends && *place.ends > std::chrono::steady_clock::now()) {
      // The client left during its service: the server does not know, and serves on until the
      // service ends.
      auto rest = std::make_shared<asio::steady_timer>(ioc_, *place.ends);
      rest->async_wait([this, ticket = place.ticket, rest](const boost::system::error_code&) {
        LeaveService(ticket);
      });
      return;
    }
    LeaveService(place.ticket);
  } catch (...) {
    // Out of memory: the place is lost, and one server stays busy for good. vpic-sim is a test
    // double, and a request's end (a destructor) is no place to fail.
  }
}

void Server::LeaveService(std::uint64_t ticket) {
  if (ticket == 0 || tearing_down_) {
    return;
  }
  for (const std::uint64_t started : engine_.Leave(ticket)) {
    if (auto it = waiting_.find(started); it != waiting_.end()) {
      // An expiry in the past, not cancel(): it also ends a wait not yet begun.
      it->second->expires_at(asio::steady_timer::time_point::min());
      waiting_.erase(it);
    }
  }
}

Server::Response Server::HandleControl(const Request& request) {
  const bool keep_alive = request.keep_alive();
  const unsigned version = request.version();
  const std::string path = ToLower(PathOf(request.target()));
  const bool get = request.method() == http::verb::get;
  const bool post = request.method() == http::verb::post;
  auto method_not_allowed = [&](std::string_view allow) {
    boost::json::object body;
    body["error"] = "method_not_allowed";
    body["message"] = fmt::format("{} accepts {}", path, allow);
    Response res = JsonResponse(405, body, keep_alive, version);
    res.set(http::field::allow, allow);
    return res;
  };
  std::string source;
  const Micros now = Now();
  if (path == "/__control/stats") {
    if (!get) {
      return method_not_allowed("GET");
    }
    boost::json::object body = stats_.ToJson();
    body["uptime_ms"] = now / kMicrosPerMilli;
    body["fault"] = FaultSpecToJson(engine_.Effective(now, &source));
    body["fault_source"] = source;
    return JsonResponse(200, body, keep_alive, version);
  }
  if (path == "/__control/faults") {
    if (get) {
      boost::json::object body;
      body["fault"] = FaultSpecToJson(engine_.Effective(now, &source));
      body["fault_source"] = source;
      return JsonResponse(200, body, keep_alive, version);
    }
    if (!post) {
      return method_not_allowed("GET, POST");
    }
    auto spec = ParseFaultJson(request.body());
    if (!spec) {
      boost::json::object body;
      body["error"] = "invalid_fault";
      body["field"] = spec.error().field;
      body["message"] = spec.error().message;
      return JsonResponse(400, body, keep_alive, version);
    }
    engine_.SetOverride(*spec);
    boost::json::object body;
    body["ok"] = true;
    body["fault"] = FaultSpecToJson(*spec);
    body["fault_source"] = "control";
    return JsonResponse(200, body, keep_alive, version);
  }
  if (path == "/__control/reset") {
    if (!post) {
      return method_not_allowed("POST");
    }
    engine_.Reset(now);
    stats_.Reset();
    boost::json::object body;
    body["ok"] = true;
    body["fault"] = FaultSpecToJson(engine_.Effective(now, &source));
    body["fault_source"] = source;
    return JsonResponse(200, body, keep_alive, version);
  }
  boost::json::object body;
  body["error"] = "not_found";
  body["message"] =
      "control endpoints: GET /__control/stats, GET|POST /__control/faults, "
      "POST /__control/reset";
  return JsonResponse(404, body, keep_alive, version);
}

}  // namespace fusebox::vpic_sim
