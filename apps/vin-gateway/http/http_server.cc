#include "http/http_server.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <exception>
#include <functional>
#include <iterator>
#include <limits>
#include <optional>
#include <string_view>
#include <utility>
#include <variant>

#include <fmt/compile.h>
#include <fmt/format.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <boost/range/iterator_range.hpp>

#include "core/decode.h"
#include "http/access_log.h"
#include "http/client_address.h"
#include "http/http_message.h"
#include "http/request_framing.h"
#include "http/transport_status.h"

namespace vin_gateway {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

constexpr auto kTuple = net::as_tuple(net::use_awaitable);

std::string FormatEndpoint(const tcp::endpoint& endpoint) {
  const net::ip::address address = endpoint.address();
  if (address.is_v6()) {
    return fmt::format("[{}]:{}", address.to_string(), endpoint.port());
  }
  return fmt::format("{}:{}", address.to_string(), endpoint.port());
}

// A client-supplied X-Request-Id is kept when it is short and plain.
bool UsableRequestId(std::string_view id) {
  if (id.empty() || id.size() > 64) {
    return false;
  }
  for (char c : id) {
    const bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    c == '-' || c == '_' || c == '.';
    if (!ok) {
      return false;
    }
  }
  return true;
}

// The descriptors this process has open now (/proc/self/fd), or nullopt when it cannot tell.
std::optional<std::uint64_t> OpenDescriptors() {
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) {
    return std::nullopt;
  }
  std::uint64_t count = 0;
  while (const dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] != '.') {
      ++count;
    }
  }
  ::closedir(dir);
  return count - std::min<std::uint64_t>(count, 1);  // not the directory's own descriptor
}

// How many client connections may be open at once: the open-file limit, less what is open at
// start (listener, event loops, cache, log) and the reserve for upstream calls.
std::int64_t ConnectionCap(std::size_t reserve) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY ||
      limit.rlim_cur > (std::uint64_t{1} << 40)) {
    return std::numeric_limits<std::int64_t>::max();
  }
  const auto files = static_cast<std::uint64_t>(limit.rlim_cur);
  const std::uint64_t kept = std::min<std::uint64_t>(reserve, files / 2);
  const std::uint64_t open_now = OpenDescriptors().value_or(32);
  const std::uint64_t used = kept + open_now;
  return used >= files ? 1 : static_cast<std::int64_t>(files - used);
}

// accept() failed because this process or the machine is out of something: no descriptor left,
// no socket buffer, no memory. The listener stays readable: waiting is the only cure.
bool IsLocalShortage(const boost::system::error_code& ec) {
  if (ec.category() != boost::system::system_category()) {
    return false;
  }
  return ec.value() == EMFILE || ec.value() == ENFILE || ec.value() == ENOBUFS ||
         ec.value() == ENOMEM;
}

// One episode of accept trouble (or of the reserve reached): logged when it starts and when it
// ends, never once per failed accept.
class Episode {
 public:
  // `unit` names what Begin() counts while the episode lasts ("failed accepts").
  Episode(const HttpServerOptions& options, std::string_view unit)
      : options_(options), unit_(unit) {}
  bool active() const noexcept { return active_; }
  void Begin(std::string_view message) {
    ++events_;
    if (active_) {
      return;
    }
    active_ = true;
    started_ = std::chrono::steady_clock::now();
    Log("warn", message);
  }
  void End(std::string_view what) {
    if (!active_) {
      return;
    }
    active_ = false;
    const auto lasted = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - started_);
    Log("info", fmt::format("{} after {} ms ({} {})", what, lasted.count(), events_, unit_));
    events_ = 0;
  }

 private:
  void Log(std::string_view level, std::string_view message) const {
    if (options_.event_log) {
      options_.event_log(level, message);
    }
  }
  const HttpServerOptions& options_;
  const std::string_view unit_;
  bool active_ = false;
  std::uint64_t events_ = 0;
  std::chrono::steady_clock::time_point started_{};
};

}  // namespace

// The part of a connection that shutdown needs to reach (only touched on the session's
// io_context, by its one thread, except what `mu` guards).
struct HttpServer::Session {
  net::any_io_executor executor;
  beast::tcp_stream* stream = nullptr;  // valid while the session coroutine runs
  bool idle = false;                    // waiting for the next request

  std::mutex mu;
  // The request this session waits on, for its handler or for the client to take the answer
  // (its log record so far and when it began); nullopt otherwise. Guarded by mu.
  std::optional<std::pair<AccessRecord, std::chrono::steady_clock::time_point>> in_progress;
  bool cut_off = false;  // LogUnfinishedRequests logged the request in progress. Guarded by mu.
};

struct HttpServer::Impl {
  Impl(net::io_context& io_context, HttpServerOptions opts, Handler h, AccessLog log,
       std::vector<net::io_context*> contexts)
      : io(io_context),
        session_contexts(contexts.empty() ? std::vector<net::io_context*>{&io_context}
                                          : std::move(contexts)),
        options(std::move(opts)),
        handler(std::move(h)),
        access_log(std::move(log)),
        acceptor(net::make_strand(io_context)),
        id_prefix(fmt::format("{:x}{:04x}",
                              std::chrono::duration_cast<std::chrono::seconds>(
                                  std::chrono::system_clock::now().time_since_epoch())
                                      .count() &
                                  0xFFFFFF,
                              static_cast<unsigned>(getpid()) & 0xFFFFU)) {}

  net::io_context& io;
  const std::vector<net::io_context*> session_contexts;  // never empty
  std::size_t next_context = 0;                          // only touched by the accept loop
  const HttpServerOptions options;
  const Handler handler;
  const AccessLog access_log;
  tcp::acceptor acceptor;
  tcp::endpoint local;
  const std::string id_prefix;
  std::atomic<std::uint64_t> next_id{0};
  std::atomic<std::uint64_t> next_session{0};
  std::mutex mu;
  std::map<std::uint64_t, std::shared_ptr<Session>> sessions;  // Guarded by mu.
  // LogUnfinishedRequests ran: a session that starts to wait after it logs its request itself.
  std::atomic<bool> unfinished_logged{false};
  std::atomic<std::uint64_t> malformed_forwarded_for{0};
  std::atomic<std::int64_t> next_malformed_log_ns{0};  // steady clock

  // Who sent a request: its address (for the access log) and its ClientKey (for the handler).
  struct Client {
    std::string address;
    std::string key;
  };

  // The TCP peer as a client: "unknown" when its address could not be read.
  Client PeerClient(const std::optional<net::ip::address>& peer) const {
    if (!peer) {
      return {"unknown", "unknown"};
    }
    return {peer->to_string(), ClientKey(*peer, options.client_ipv6_prefix)};
  }

  // The request's client (client_address.h): `peer_client`, or behind a trusted proxy the
  // address in X-Forwarded-For. A malformed header from a trusted proxy is logged when first
  // seen, then at most once a minute with the count so far: a broken proxy must not flood the log.
  Client ClientOf(const std::optional<net::ip::address>& peer, const Client& peer_client,
                  const http::request<http::string_body>& request) {
    if (!peer || options.trusted_proxies.empty()) {
      return peer_client;
    }
    std::string forwarded_for;
    for (const auto& field : boost::make_iterator_range(request.equal_range("X-Forwarded-For"))) {
      forwarded_for += forwarded_for.empty() ? "" : ",";
      forwarded_for += field.value();
    }
    ClientAddress client = options.trusted_proxies.Resolve(*peer, forwarded_for);
    if (client.malformed_header) {
      const std::uint64_t seen = malformed_forwarded_for.fetch_add(1) + 1;
      const std::int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count();
      std::int64_t due = next_malformed_log_ns.load();
      if (now >= due && options.event_log &&
          next_malformed_log_ns.compare_exchange_strong(due, now + 60'000'000'000)) {
        options.event_log(
            "warn", fmt::format("X-Forwarded-For from the trusted proxy {} does not parse ('{}'): "
                                "its own address is taken as the client ({} such header(s) so "
                                "far; logged at most once a minute)",
                                peer_client.address, BoundedLogField(forwarded_for, 64), seen));
      }
    }
    if (!client.forwarded) {
      return peer_client;
    }
    return {std::move(client.address), ClientKey(client.ip, options.client_ipv6_prefix)};
  }

  // Logs the request `session` waits on, if any and not logged yet, as cut off by the end of the
  // shutdown grace period (it will get no answer). Returns whether it did.
  bool LogCutOff(Session& session) {
    std::optional<AccessRecord> record;
    {
      std::lock_guard<std::mutex> lock(session.mu);
      if (session.in_progress && !session.cut_off) {
        session.cut_off = true;
        record = session.in_progress->first;
        record->elapsed = std::chrono::duration_cast<fusebox::Duration>(
            std::chrono::steady_clock::now() - session.in_progress->second);
      }
    }
    if (!record) {
      return false;
    }
    record->http_status = 0;
    record->status = std::string(ToString(TransportStatus::kShuttingDown));
    record->note = "cut off at the end of the shutdown grace period; no answer was sent";
    if (access_log) {
      access_log(*record);
    }
    return true;
  }
};

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() = default;

fusebox::Result<std::unique_ptr<HttpServer>, std::string> HttpServer::Create(
    net::io_context& io, HttpServerOptions options, Handler handler, AccessLog access_log,
    std::vector<net::io_context*> session_contexts) {
  boost::system::error_code ec;
  const net::ip::address address = net::ip::make_address(options.host, ec);
  if (ec) {
    return fmt::format("--listen: '{}' is not an IP address", options.host);
  }
  const tcp::endpoint endpoint(address, options.port);
  auto impl = std::make_unique<Impl>(io, std::move(options), std::move(handler),
                                     std::move(access_log), std::move(session_contexts));
  tcp::acceptor& acceptor = impl->acceptor;
  if (acceptor.open(endpoint.protocol(), ec); ec) {
    return fmt::format("cannot open a socket: {}", ec.message());
  }
  acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (acceptor.bind(endpoint, ec); ec) {
    return fmt::format("cannot listen on {}: {}", FormatEndpoint(endpoint), ec.message());
  }
  if (acceptor.listen(net::socket_base::max_listen_connections, ec); ec) {
    return fmt::format("cannot listen on {}: {}", FormatEndpoint(endpoint), ec.message());
  }
  impl->local = acceptor.local_endpoint(ec);
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

std::string HttpServer::local_address() const { return FormatEndpoint(impl_->local); }

std::uint16_t HttpServer::port() const { return impl_->local.port(); }

void HttpServer::Start() {
  Impl* impl = impl_.get();
  const std::int64_t cap = ConnectionCap(impl->options.descriptor_reserve);
  net::co_spawn(
      impl->acceptor.get_executor(),
      [this, impl, cap]() -> net::awaitable<void> {
        // The reserve is reached: connections wait in the listen backlog (accepting them would
        // take the descriptors upstream calls need) and are taken once one closes. The accept
        // failed for want of descriptors or memory: the same wait. Both are short polls, so a
        // client is taken within milliseconds once descriptors free up, and neither spins.
        constexpr auto kFullPoll = std::chrono::milliseconds(10);
        constexpr auto kShortagePause = std::chrono::milliseconds(20);
        Episode full(impl->options, "checks");
        Episode shortage(impl->options, "failed accepts");
        net::steady_timer pause(impl->acceptor.get_executor());
        boost::system::error_code ignored;
        impl->acceptor.non_blocking(true, ignored);  // the backlog is drained without waiting
        for (;;) {
          if (connections_.load(std::memory_order_relaxed) >= cap) {
            full.Begin(fmt::format(
                "accept: {} connections open, the most that leaves {} descriptors for upstream "
                "calls; new connections wait until one closes",
                cap, impl->options.descriptor_reserve));
            pause.expires_after(kFullPoll);
            co_await pause.async_wait(kTuple);
            if (!impl->acceptor.is_open()) {
              co_return;
            }
            continue;
          }
          full.End("accept: below the descriptor reserve again");
          net::io_context& target = *impl->session_contexts[impl->next_context];
          impl->next_context = (impl->next_context + 1) % impl->session_contexts.size();
          auto [ec, socket] = co_await impl->acceptor.async_accept(target.get_executor(), kTuple);
          if (ec == net::error::operation_aborted || !impl->acceptor.is_open()) {
            co_return;
          }
          if (ec) {
            shortage.Begin(fmt::format(
                "accept failed: {}{}; waiting for descriptors (logged once until it ends)",
                ec.message(), IsLocalShortage(ec) ? " (the gateway is short of resources)" : ""));
            pause.expires_after(kShortagePause);
            co_await pause.async_wait(kTuple);
            continue;
          }
          shortage.End("accept: working again");
          // Every connection already waiting in the backlog is taken now (non-blocking accepts),
          // not one per turn of the event loop: a burst of 256 connects would otherwise wait
          // 256 turns, each as long as the requests of every connection taken so far, for the
          // last one (a second and more under load).
          for (;;) {
            if (draining_.load(std::memory_order_relaxed)) {
              break;  // the socket closes as it goes out of scope
            }
            auto session = std::make_shared<Session>();
            session->executor = socket.get_executor();
            const std::uint64_t id = impl->next_session.fetch_add(1, std::memory_order_relaxed);
            {
              std::lock_guard<std::mutex> lock(impl->mu);
              impl->sessions.emplace(id, session);
            }
            connections_.fetch_add(1, std::memory_order_relaxed);
            auto executor = socket.get_executor();
            net::co_spawn(
                executor,
                [this, impl, session, id, s = std::move(socket)]() mutable -> net::awaitable<void> {
                  co_await Serve(*impl, std::move(s), *session);
                  {
                    std::lock_guard<std::mutex> lock(impl->mu);
                    impl->sessions.erase(id);
                  }
                  connections_.fetch_sub(1, std::memory_order_relaxed);
                },
                net::detached);
            if (connections_.load(std::memory_order_relaxed) >= cap) {
              break;
            }
            net::io_context& next = *impl->session_contexts[impl->next_context];
            boost::system::error_code more_ec;
            auto more = impl->acceptor.accept(next.get_executor(), more_ec);
            if (more_ec) {
              break;  // none waiting (or trouble, which the next async accept reports)
            }
            impl->next_context = (impl->next_context + 1) % impl->session_contexts.size();
            socket = std::move(more);
          }
        }
      },
      net::detached);
}

void HttpServer::BeginShutdown() {
  if (draining_.exchange(true)) {
    return;
  }
  Impl* impl = impl_.get();
  net::post(impl->acceptor.get_executor(), [impl] {
    boost::system::error_code ignored;
    impl->acceptor.close(ignored);
  });
  std::lock_guard<std::mutex> lock(impl->mu);
  for (const auto& [id, session] : impl->sessions) {
    net::post(session->executor, [session] {
      if (session->idle && session->stream != nullptr) {
        boost::system::error_code ignored;
        session->stream->socket().cancel(ignored);
      }
    });
  }
}

std::size_t HttpServer::LogUnfinishedRequests() {
  // Set before any session is looked at: a session that shows its request after this looks at
  // it has that request's line written by itself (Serve), so none is missed.
  impl_->unfinished_logged.store(true);
  std::vector<std::shared_ptr<Session>> sessions;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    for (const auto& [id, session] : impl_->sessions) {
      sessions.push_back(session);
    }
  }
  std::size_t logged = 0;
  for (const std::shared_ptr<Session>& session : sessions) {
    if (impl_->LogCutOff(*session)) {
      ++logged;
    }
  }
  return logged;
}

namespace {

constexpr std::size_t kMaxLoggedMethod = 32;

}  // namespace

net::awaitable<void> HttpServer::Serve(Impl& impl, tcp::socket socket, Session& session) {
  std::optional<net::ip::address> peer_address;
  {
    boost::system::error_code ec;
    const tcp::endpoint peer = socket.remote_endpoint(ec);
    if (!ec) {
      peer_address = peer.address();
    }
  }
  // Once per connection: most requests come without a proxy in front.
  const Impl::Client peer_client = impl.PeerClient(peer_address);
  const std::string& client = peer_client.address;
  beast::tcp_stream stream(std::move(socket));
  session.stream = &stream;
  // Non-blocking at the user level, for the direct write of each answer (below): a write that
  // would block then returns at once. Asio's asynchronous operations work the same either way.
  bool direct_writes = false;
  {
    boost::system::error_code ec;
    stream.socket().non_blocking(true, ec);
    direct_writes = !ec;
  }
  beast::flat_buffer buffer;
  std::string head;         // the answer's status line and fields, rendered anew for each answer
  bool served_one = false;  // a request was answered on this connection
  std::optional<http::request_parser<http::string_body>> parser;
  const auto fresh_parser = [&] {
    parser.emplace();
    parser->header_limit(static_cast<std::uint32_t>(impl.options.header_limit));
    parser->body_limit(impl.options.body_limit);
  };
  const auto new_id = [&] {
    return fmt::format(FMT_COMPILE("{}-{:x}"), impl.id_prefix,
                       impl.next_id.fetch_add(1, std::memory_order_relaxed));
  };
  // The client and write timeouts: not the stream's own expiry, which closes the socket (then no
  // 408 could be written), but one timer per connection that cancels the read or write in
  // progress when its deadline passes. The timer is not re-armed per request: a deadline that
  // moved later since the timer was armed only re-arms it when it fires (so a busy connection
  // costs no timer operation per request). Its handler runs on the session's io_context;
  // `generation` tells it whether the wait it was armed for is still the current one.
  struct Deadline {
    bool live = true;     // the session runs (the handler may touch the stream)
    bool active = false;  // a read or a write is under the deadline
    bool expired = false;
    bool armed = false;
    std::uint64_t generation = 0;
    std::chrono::steady_clock::time_point at{};
    std::chrono::steady_clock::time_point armed_at{};
  };
  const auto deadline_state = std::make_shared<Deadline>();
  net::steady_timer deadline(stream.get_executor());
  std::function<void()> arm_deadline = [&] {
    Deadline& d = *deadline_state;
    d.armed = true;
    d.armed_at = d.at;
    const std::uint64_t generation = ++d.generation;
    deadline.expires_at(d.at);
    deadline.async_wait([state = deadline_state, generation, &stream,
                         &arm_deadline](const boost::system::error_code& ec) {
      if (!state->live || state->generation != generation || ec) {
        return;  // the session ended, or the timer was armed again since
      }
      state->armed = false;
      if (!state->active) {
        return;  // nothing under a deadline now; the next one arms the timer
      }
      if (std::chrono::steady_clock::now() < state->at) {
        arm_deadline();  // the deadline moved later since this wait was armed
        return;
      }
      state->expired = true;
      boost::system::error_code ignored;
      stream.socket().cancel(ignored);
    });
  };
  const auto start_deadline = [&](fusebox::Duration timeout) {
    Deadline& d = *deadline_state;
    d.active = true;
    d.expired = false;
    d.at = std::chrono::steady_clock::now() +
           std::chrono::duration_cast<std::chrono::steady_clock::duration>(timeout);
    if (!d.armed || d.at < d.armed_at) {
      arm_deadline();
    }
  };
  for (;;) {
    if (draining_.load(std::memory_order_relaxed)) {
      break;
    }
    fresh_parser();
    start_deadline(impl.options.client_timeout);
    session.idle = true;
    boost::system::error_code read_ec;
    // The header is read through HeaderReadBuffer, which sees its raw bytes (for obs-fold).
    HeaderReadBuffer header_buffer(buffer);
    for (bool downgraded = false;;) {
      auto [ec, n] = co_await http::async_read_header(stream, header_buffer, *parser, kTuple);
      (void)n;
      if (ec == http::error::bad_version && !downgraded && DowngradeMinorVersion(buffer)) {
        downgraded = true;
        fresh_parser();
        continue;
      }
      read_ec = ec;
      break;
    }
    std::optional<HttpResponse> refusal;
    if (!read_ec) {
      refusal = FramingRefusal(*parser, header_buffer.obs_fold());
    }
    if (!read_ec && !refusal && !parser->is_done()) {
      if (ExpectsContinue(parser->get().base())) {
        static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
        auto [ec, n] = co_await net::async_write(
            stream, net::buffer(kContinue.data(), kContinue.size()), kTuple);
        (void)n;
        read_ec = ec;
      }
      if (!read_ec) {
        auto [ec, n] = co_await http::async_read(stream, buffer, *parser, kTuple);
        (void)n;
        read_ec = ec;
      }
    }
    session.idle = false;
    deadline_state->active = false;
    if (deadline_state->expired) {
      read_ec = beast::error::timeout;
    }
    const auto started = std::chrono::steady_clock::now();
    if (read_ec || refusal) {
      if (!refusal) {
        refusal = ReadFailureResponse(read_ec);
      }
      // A keep-alive connection that merely stayed idle after an answer is closed as usual (with
      // a 408, which clients take as "retry on a new connection"), without a log line.
      const bool quiet_idle = read_ec == beast::error::timeout && served_one &&
                              buffer.size() == 0 && !parser->got_some();
      if (refusal) {
        const std::string id = new_id();
        head.clear();
        AppendResponseHead(*refusal, 11, id, false, head);
        start_deadline(impl.options.write_timeout);
        auto [write_ec, write_n] = co_await net::async_write(
            stream,
            std::array<net::const_buffer, 2>{
                net::buffer(head),
                net::buffer(refusal->body_bytes().data(), refusal->body_bytes().size())},
            kTuple);
        (void)write_ec;
        (void)write_n;
        if (impl.access_log && !quiet_idle) {
          AccessRecord record;
          record.request_id = id;
          if (parser->is_header_done()) {
            record.method = BoundedLogField(parser->get().method_string(), kMaxLoggedMethod);
            record.target = BoundedLogField(parser->get().target(), kMaxLoggedTarget);
          }
          record.client = client;
          record.http_status = refusal->status;
          record.status = refusal->log_status;
          if (read_ec == beast::error::timeout) {
            record.note = parser->got_some() || buffer.size() > 0
                              ? "the request was still incomplete at the client timeout"
                              : "no request arrived within the client timeout";
          }
          record.elapsed = std::chrono::duration_cast<fusebox::Duration>(
              std::chrono::steady_clock::now() - started);
          impl.access_log(record);
        }
      }
      break;
    }
    http::request<http::string_body> request = parser->release();
    std::string id;
    if (auto it = request.find("X-Request-Id");
        it != request.end() &&
        UsableRequestId(std::string_view(it->value().data(), it->value().size()))) {
      id = std::string(it->value());
    } else {
      id = new_id();
    }
    const bool is_head = request.method() == http::verb::head;
    const unsigned version = request.version();
    const bool client_keep_alive = request.keep_alive();
    Impl::Client request_client = impl.ClientOf(peer_address, peer_client, request);
    HttpRequest in = ToHttpRequest(std::move(request), std::move(request_client.key));
    AccessRecord record;
    record.request_id = id;
    record.method = BoundedLogField(in.method, kMaxLoggedMethod);
    record.target = BoundedLogField(in.target, kMaxLoggedTarget);
    record.client = std::move(request_client.address);
    // The request is shown to LogUnfinishedRequests (another thread, at the end of the shutdown
    // grace period) only while this coroutine waits: on an awaited answer, or on a write the
    // socket did not take at once. An answer made and written without waiting is logged right
    // after, on this thread, before anything else runs here.
    bool shown = false;
    const auto show_in_progress = [&] {
      if (shown) {
        return;
      }
      shown = true;
      {
        std::lock_guard<std::mutex> lock(session.mu);
        session.in_progress.emplace(record, started);
      }
      if (impl.unfinished_logged.load()) {
        impl.LogCutOff(session);  // shown too late for LogUnfinishedRequests to see it
      }
    };
    HttpResponse response;
    try {
      HandlerResult result = impl.handler(std::move(in));
      if (auto* at_once = std::get_if<HttpResponse>(&result)) {
        response = std::move(*at_once);
      } else {
        show_in_progress();
        response = co_await std::move(std::get<net::awaitable<HttpResponse>>(result));
      }
    } catch (const std::exception& e) {
      response = HttpResponse{};
      response.status = 500;
      boost::json::object body;
      body["status"] = "INTERNAL_ERROR";
      body["message"] = "The gateway failed to answer this request.";
      response.body = boost::json::serialize(body);
      response.log_status = "INTERNAL_ERROR";
    }
    const bool keep_alive = client_keep_alive && !draining_.load(std::memory_order_relaxed);
    head.clear();
    AppendResponseHead(response, version, id, keep_alive, head);
    // One gather write (one sendmsg) of the head and the body. A HEAD answer carries the GET
    // answer's headers (Content-Length included), never its body (RFC 9110 9.3.2).
    const std::array<net::const_buffer, 2> answer{
        net::buffer(head),
        is_head ? net::const_buffer()
                : net::buffer(response.body_bytes().data(), response.body_bytes().size())};
    // Written directly as far as the socket takes it without blocking (an answer of a few KB
    // into an empty send buffer: nearly always all of it), which saves an asynchronous
    // operation and a resumption per answer; the rest, if any, asynchronously under the write
    // timeout. Connections keep taking turns: the next read completes through the queue (Beast
    // posts even a read that the buffer already holds).
    boost::system::error_code write_ec;
    std::size_t written = 0;
    if (direct_writes) {
      written = stream.socket().write_some(answer, write_ec);
      if (write_ec == net::error::would_block || write_ec == net::error::try_again) {
        write_ec = {};
      }
    }
    if (!write_ec && written < net::buffer_size(answer)) {
      beast::buffers_suffix<std::array<net::const_buffer, 2>> rest(answer);
      rest.consume(written);
      show_in_progress();
      start_deadline(impl.options.write_timeout);
      auto [ec, n] = co_await net::async_write(stream, rest, kTuple);
      (void)n;
      write_ec = ec;
      deadline_state->active = false;
      if (write_ec && deadline_state->expired) {
        write_ec = beast::error::timeout;  // cut off at the write timeout
      }
    }
    bool logged_already = false;  // by LogUnfinishedRequests
    if (shown) {
      std::lock_guard<std::mutex> lock(session.mu);
      logged_already = session.cut_off;
      session.in_progress.reset();
      session.cut_off = false;
    }
    if (impl.access_log && !logged_already) {
      record.http_status = response.status;
      // The answer is written: its log fields are moved, not copied.
      record.status = std::move(response.log_status);
      record.vin = std::move(response.log_vin);
      record.source = std::move(response.log_source);
      record.upstream_latency = response.upstream_latency;
      record.detail = std::move(response.log_detail);
      if (write_ec == beast::error::timeout) {
        record.note = "the client took no answer within the write timeout";
      } else if (write_ec) {
        record.note = "the answer could not be written: " + write_ec.message();
      }
      record.elapsed =
          std::chrono::duration_cast<fusebox::Duration>(std::chrono::steady_clock::now() - started);
      impl.access_log(record);
    }
    served_one = true;
    if (write_ec || !keep_alive) {
      break;
    }
  }
  deadline_state->live = false;
  deadline.cancel();
  session.stream = nullptr;
  boost::system::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
  stream.socket().close(ignored);
}

}  // namespace vin_gateway
