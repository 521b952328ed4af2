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
#include "fusebox/thread_annotations.h"
#include "http/access_log.h"
#include "http/client_address.h"
#include "http/connection_deadline.h"
#include "http/http_message.h"
#include "http/request_framing.h"
#include "http/transport_status.h"

namespace fusebox::gateway {
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

  fusebox::Mutex mu;
  // The request this session waits on, for its handler or for the client to take the answer
  // (its log record so far and when it began); nullopt otherwise.
  std::optional<std::pair<AccessRecord, std::chrono::steady_clock::time_point>> in_progress
      FUSEBOX_GUARDED_BY(mu);
  // LogUnfinishedRequests logged the request in progress.
  bool cut_off FUSEBOX_GUARDED_BY(mu) = false;
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

  // The io_context the next connection is served on (round robin); advanced once it is taken.
  net::io_context& NextContext() const { return *session_contexts[next_context]; }
  void AdvanceContext() { next_context = (next_context + 1) % session_contexts.size(); }

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
  fusebox::Mutex mu;
  std::map<std::uint64_t, std::shared_ptr<Session>> sessions FUSEBOX_GUARDED_BY(mu);
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
      fusebox::Locked lock(session.mu);
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
  Impl& impl = *impl_;
  const std::int64_t cap = ConnectionCap(impl.options.descriptor_reserve);
  net::co_spawn(impl.acceptor.get_executor(), AcceptLoop(impl, cap), net::detached);
}

net::awaitable<void> HttpServer::AcceptLoop(Impl& impl, std::int64_t cap) {
  // The reserve is reached: connections wait in the listen backlog (accepting them would take the
  // descriptors upstream calls need) and are taken once one closes. The accept failed for want of
  // descriptors or memory: the same wait. Both are short polls, so a client is taken within
  // milliseconds once descriptors free up, and neither spins.
  constexpr auto kFullPoll = std::chrono::milliseconds(10);
  constexpr auto kShortagePause = std::chrono::milliseconds(20);
  Episode full(impl.options, "checks");
  Episode shortage(impl.options, "failed accepts");
  net::steady_timer pause(impl.acceptor.get_executor());
  boost::system::error_code ignored;
  impl.acceptor.non_blocking(true, ignored);  // the backlog is drained without waiting
  for (;;) {
    if (connections_.load(std::memory_order_relaxed) >= cap) {
      full.Begin(fmt::format(
          "accept: {} connections open, the most that leaves {} descriptors for upstream "
          "calls; new connections wait until one closes",
          cap, impl.options.descriptor_reserve));
      pause.expires_after(kFullPoll);
      co_await pause.async_wait(kTuple);
      if (!impl.acceptor.is_open()) {
        co_return;
      }
      continue;
    }
    full.End("accept: below the descriptor reserve again");
    net::io_context& target = impl.NextContext();
    impl.AdvanceContext();
    auto [ec, socket] = co_await impl.acceptor.async_accept(target.get_executor(), kTuple);
    if (ec == net::error::operation_aborted || !impl.acceptor.is_open()) {
      co_return;
    }
    if (ec) {
      shortage.Begin(fmt::format(
          "accept failed: {}{}; waiting for descriptors (logged once until it ends)", ec.message(),
          IsLocalShortage(ec) ? " (the gateway is short of resources)" : ""));
      pause.expires_after(kShortagePause);
      co_await pause.async_wait(kTuple);
      continue;
    }
    shortage.End("accept: working again");
    TakeBacklog(impl, std::move(socket), cap);
  }
}

void HttpServer::TakeBacklog(Impl& impl, tcp::socket socket, std::int64_t cap) {
  for (;;) {
    if (draining_.load(std::memory_order_relaxed)) {
      return;  // the socket closes as it goes out of scope
    }
    StartSession(impl, std::move(socket));
    if (connections_.load(std::memory_order_relaxed) >= cap) {
      return;
    }
    boost::system::error_code ec;
    tcp::socket more = impl.acceptor.accept(impl.NextContext().get_executor(), ec);
    if (ec) {
      return;  // none waiting (or trouble, which the next async accept reports)
    }
    impl.AdvanceContext();
    socket = std::move(more);
  }
}

void HttpServer::StartSession(Impl& impl, tcp::socket socket) {
  auto session = std::make_shared<Session>();
  session->executor = socket.get_executor();
  const std::uint64_t id = impl.next_session.fetch_add(1, std::memory_order_relaxed);
  {
    fusebox::Locked lock(impl.mu);
    impl.sessions.emplace(id, session);
  }
  connections_.fetch_add(1, std::memory_order_relaxed);
  auto executor = socket.get_executor();
  net::co_spawn(
      executor,
      [this, &impl, session, id, s = std::move(socket)]() mutable -> net::awaitable<void> {
        co_await Serve(impl, std::move(s), *session);
        {
          fusebox::Locked lock(impl.mu);
          impl.sessions.erase(id);
        }
        connections_.fetch_sub(1, std::memory_order_relaxed);
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
  fusebox::Locked lock(impl->mu);
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
    fusebox::Locked lock(impl_->mu);
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

// The 500 of a handler that threw.
HttpResponse InternalError() {
  HttpResponse response;
  response.status = 500;
  boost::json::object body;
  body["status"] = "INTERNAL_ERROR";
  body["message"] = "The gateway failed to answer this request.";
  response.body = boost::json::serialize(body);
  response.log_status = "INTERNAL_ERROR";
  return response;
}

// An awaited answer, or the 500 of a handler that threw while awaited.
net::awaitable<HttpResponse> AwaitAnswer(net::awaitable<HttpResponse> answer) {
  try {
    co_return co_await std::move(answer);
  } catch (const std::exception&) {
    co_return InternalError();
  }
}

std::optional<net::ip::address> PeerAddressOf(const tcp::socket& socket) {
  boost::system::error_code ec;
  const tcp::endpoint peer = socket.remote_endpoint(ec);
  if (ec) {
    return std::nullopt;
  }
  return peer.address();
}

}  // namespace

// One client connection, in the steps of its session coroutine (Serve): read a request (or
// refuse it), have it answered, write the answer, write its access record. Used only by that
// coroutine, on its io_context's thread; what LogUnfinishedRequests reads goes through
// Session::mu.
class HttpServer::Connection {
 public:
  Connection(Impl& impl, const std::atomic<bool>& draining, tcp::socket socket, Session& session)
      : impl_(impl),
        draining_(draining),
        session_(session),
        peer_address_(PeerAddressOf(socket)),
        peer_client_(impl.PeerClient(peer_address_)),  // once: most requests come without a proxy
        stream_(std::move(socket)),
        deadline_(stream_.socket()) {
    session_.stream = &stream_;
    // Non-blocking at the user level, for the direct write of each answer (WriteAtOnce): a write
    // that would block then returns at once. Asio's asynchronous operations work the same either
    // way.
    boost::system::error_code ec;
    stream_.socket().non_blocking(true, ec);
    direct_writes_ = !ec;
  }

  // What reading one request gave.
  struct Read {
    boost::system::error_code error;      // beast::error::timeout: cut off at the client timeout
    std::optional<HttpResponse> refusal;  // its framing is refused (request_framing.h)
    std::chrono::steady_clock::time_point done{};  // when the read ended: the request's start
    bool ok() const noexcept { return !error && !refusal; }
  };

  // Reads the next request (header, `100 Continue` when owed, body) within the client timeout.
  net::awaitable<Read> ReadRequest() {
    FreshParser();
    deadline_.Start(impl_.options.client_timeout);
    session_.idle = true;
    Read read;
    // The header is read through HeaderReadBuffer, which sees its raw bytes (for obs-fold).
    HeaderReadBuffer header_buffer(buffer_);
    for (bool downgraded = false;;) {
      auto [ec, n] = co_await http::async_read_header(stream_, header_buffer, *parser_, kTuple);
      (void)n;
      if (ec == http::error::bad_version && !downgraded && DowngradeMinorVersion(buffer_)) {
        downgraded = true;
        FreshParser();
        continue;
      }
      read.error = ec;
      break;
    }
    if (!read.error) {
      read.refusal = FramingRefusal(*parser_, header_buffer.obs_fold());
    }
    if (read.ok() && !parser_->is_done()) {
      if (ExpectsContinue(parser_->get().base())) {
        static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
        auto [ec, n] = co_await net::async_write(
            stream_, net::buffer(kContinue.data(), kContinue.size()), kTuple);
        (void)n;
        read.error = ec;
      }
      if (!read.error) {
        auto [ec, n] = co_await http::async_read(stream_, buffer_, *parser_, kTuple);
        (void)n;
        read.error = ec;
      }
    }
    session_.idle = false;
    if (deadline_.Stop()) {
      read.error = beast::error::timeout;
    }
    read.done = std::chrono::steady_clock::now();
    co_return read;
  }

  // Answers a request that could not be read, or was refused as framed, when there is an answer
  // to give (best effort, under the write timeout), and logs it. A keep-alive connection that
  // merely stayed idle after an answer is closed as usual (with a 408, which clients take as
  // "retry on a new connection"), without a log line.
  net::awaitable<void> Refuse(const Read& read) {
    std::optional<HttpResponse> refusal = read.refusal;
    if (!refusal) {
      refusal = ReadFailureResponse(read.error);
    }
    if (!refusal) {
      co_return;
    }
    const bool quiet_idle = read.error == beast::error::timeout && served_one_ &&
                            buffer_.size() == 0 && !parser_->got_some();
    const std::string id = NewId();
    head_.clear();
    AppendResponseHead(*refusal, 11, id, false, head_);
    deadline_.Start(impl_.options.write_timeout);
    auto [write_ec, write_n] = co_await net::async_write(
        stream_,
        std::array<net::const_buffer, 2>{
            net::buffer(head_),
            net::buffer(refusal->body_bytes().data(), refusal->body_bytes().size())},
        kTuple);
    (void)write_ec;
    (void)write_n;
    if (!impl_.access_log || quiet_idle) {
      co_return;
    }
    std::string_view method;
    std::string_view target;
    if (parser_->is_header_done()) {
      method = parser_->get().method_string();
      target = parser_->get().target();
    }
    AccessRecord record = NewRecord(id, method, target, peer_client_.address);
    record.http_status = refusal->status;
    record.status = refusal->log_status;
    if (read.error == beast::error::timeout) {
      record.note = parser_->got_some() || buffer_.size() > 0
                        ? "the request was still incomplete at the client timeout"
                        : "no request arrived within the client timeout";
    }
    Log(record, read.done);
  }

  // Has the request just read answered, writes the answer and logs it. Returns whether the
  // connection goes on to the next request.
  net::awaitable<bool> Exchange(std::chrono::steady_clock::time_point started) {
    http::request<http::string_body> request = parser_->release();
    const std::string id = RequestIdOf(request);
    const bool is_head = request.method() == http::verb::head;
    const unsigned version = request.version();
    const bool client_keep_alive = request.keep_alive();
    Impl::Client client = impl_.ClientOf(peer_address_, peer_client_, request);
    HttpRequest in = ToHttpRequest(std::move(request), std::move(client.key));
    AccessRecord record = NewRecord(id, in.method, in.target, std::move(client.address));

    HttpResponse response;
    HandlerResult result = CallHandler(std::move(in));
    if (auto* at_once = std::get_if<HttpResponse>(&result)) {
      response = std::move(*at_once);
    } else {
      Show(record, started);
      response = co_await AwaitAnswer(std::move(std::get<net::awaitable<HttpResponse>>(result)));
    }

    const bool keep_alive = client_keep_alive && !draining_.load(std::memory_order_relaxed);
    head_.clear();
    AppendResponseHead(response, version, id, keep_alive, head_);
    // One gather write (one sendmsg) of the head and the body. A HEAD answer carries the GET
    // answer's headers (Content-Length included), never its body (RFC 9110 9.3.2).
    const std::array<net::const_buffer, 2> answer{
        net::buffer(head_),
        is_head ? net::const_buffer()
                : net::buffer(response.body_bytes().data(), response.body_bytes().size())};
    boost::system::error_code write_ec;
    const std::size_t written = WriteAtOnce(answer, write_ec);
    if (!write_ec && written < net::buffer_size(answer)) {
      Show(record, started);
      write_ec = co_await WriteRest(answer, written);
    }

    if (const bool logged_already = Withdraw(); impl_.access_log && !logged_already) {
      LogAnswer(record, response, write_ec, started);
    }
    served_one_ = true;
    co_return !write_ec && keep_alive;
  }

  // Ends the connection: the session no longer shows a stream, the socket is shut and closed.
  void Close() {
    deadline_.Stop();
    session_.stream = nullptr;
    boost::system::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.socket().close(ignored);
  }

 private:
  void FreshParser() {
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(impl_.options.header_limit));
    parser_->body_limit(impl_.options.body_limit);
  }

  std::string NewId() {
    return fmt::format(FMT_COMPILE("{}-{:x}"), impl_.id_prefix,
                       impl_.next_id.fetch_add(1, std::memory_order_relaxed));
  }

  // The client's X-Request-Id when it is short and plain, else a new id.
  std::string RequestIdOf(const http::request<http::string_body>& request) {
    if (auto it = request.find("X-Request-Id");
        it != request.end() &&
        UsableRequestId(std::string_view(it->value().data(), it->value().size()))) {
      return std::string(it->value());
    }
    return NewId();
  }

  // The access record of a request, before its answer is known; built the same way for every
  // request, refused or answered.
  static AccessRecord NewRecord(std::string id, std::string_view method, std::string_view target,
                                std::string client) {
    AccessRecord record;
    record.request_id = std::move(id);
    record.method = BoundedLogField(method, kMaxLoggedMethod);
    record.target = BoundedLogField(target, kMaxLoggedTarget);
    record.client = std::move(client);
    return record;
  }

  void Log(AccessRecord& record, std::chrono::steady_clock::time_point started) const {
    record.elapsed =
        std::chrono::duration_cast<fusebox::Duration>(std::chrono::steady_clock::now() - started);
    impl_.access_log(record);
  }

  // Completes the record with the answer written (its log fields are moved, not copied) and
  // logs it.
  void LogAnswer(AccessRecord& record, HttpResponse& response,
                 const boost::system::error_code& write_ec,
                 std::chrono::steady_clock::time_point started) const {
    record.http_status = response.status;
    record.status = std::move(response.log_status);
    record.vin = std::move(response.log_vin);
    record.source = std::move(response.log_source);
    record.upstream_latency = response.upstream_latency;
    record.detail = std::move(response.log_detail);
    record.upstream = std::move(response.log_upstream);
    record.upstream_outcome = std::move(response.log_upstream_outcome);
    if (write_ec == beast::error::timeout) {
      record.note = "the client took no answer within the write timeout";
    } else if (write_ec) {
      record.note = "the answer could not be written: " + write_ec.message();
    }
    Log(record, started);
  }

  // The handler's answer, or the 500 of a handler that threw.
  HandlerResult CallHandler(HttpRequest in) const {
    try {
      return impl_.handler(std::move(in));
    } catch (const std::exception&) {
      return InternalError();
    }
  }

  // Writes the answer directly as far as the socket takes it without blocking (an answer of a
  // few KB into an empty send buffer: nearly always all of it), which saves an asynchronous
  // operation and a resumption per answer. Connections keep taking turns: the next read
  // completes through the queue (Beast posts even a read that the buffer already holds).
  std::size_t WriteAtOnce(const std::array<net::const_buffer, 2>& answer,
                          boost::system::error_code& ec) {
    if (!direct_writes_) {
      return 0;
    }
    const std::size_t written = stream_.socket().write_some(answer, ec);
    if (ec == net::error::would_block || ec == net::error::try_again) {
      ec = {};
    }
    return written;
  }

  // Writes what WriteAtOnce left, under the write timeout.
  net::awaitable<boost::system::error_code> WriteRest(
      const std::array<net::const_buffer, 2>& answer, std::size_t written) {
    beast::buffers_suffix<std::array<net::const_buffer, 2>> rest(answer);
    rest.consume(written);
    deadline_.Start(impl_.options.write_timeout);
    auto [ec, n] = co_await net::async_write(stream_, rest, kTuple);
    (void)n;
    const bool expired = deadline_.Stop();
    co_return ec&& expired ? beast::error::timeout : ec;  // cut off at the write timeout
  }

  // The request is shown to LogUnfinishedRequests (another thread, at the end of the shutdown
  // grace period) only while this coroutine waits: on an awaited answer, or on a write the
  // socket did not take at once. An answer made and written without waiting is logged right
  // after, on this thread, before anything else runs here.
  void Show(const AccessRecord& record, std::chrono::steady_clock::time_point started) {
    if (shown_) {
      return;
    }
    shown_ = true;
    {
      fusebox::Locked lock(session_.mu);
      session_.in_progress.emplace(record, started);
    }
    if (impl_.unfinished_logged.load()) {
      impl_.LogCutOff(session_);  // shown too late for LogUnfinishedRequests to see it
    }
  }

  // The request is no longer shown. Returns whether LogUnfinishedRequests logged it meanwhile.
  bool Withdraw() {
    if (!shown_) {
      return false;
    }
    shown_ = false;
    fusebox::Locked lock(session_.mu);
    const bool logged = session_.cut_off;
    session_.in_progress.reset();
    session_.cut_off = false;
    return logged;
  }

  Impl& impl_;
  const std::atomic<bool>& draining_;
  Session& session_;
  const std::optional<net::ip::address> peer_address_;
  const Impl::Client peer_client_;
  beast::tcp_stream stream_;
  ConnectionDeadline deadline_;  // on stream_'s socket: declared after it
  bool direct_writes_ = false;
  beast::flat_buffer buffer_;
  std::string head_;  // the answer's status line and fields, rendered anew for each answer
  std::optional<http::request_parser<http::string_body>> parser_;
  bool served_one_ = false;  // a request was answered on this connection
  bool shown_ = false;       // the request in progress is shown to LogUnfinishedRequests
};

net::awaitable<void> HttpServer::Serve(Impl& impl, tcp::socket socket, Session& session) {
  Connection connection(impl, draining_, std::move(socket), session);
  while (!draining_.load(std::memory_order_relaxed)) {
    const Connection::Read read = co_await connection.ReadRequest();
    if (!read.ok()) {
      co_await connection.Refuse(read);
      break;
    }
    const bool goes_on = co_await connection.Exchange(read.done);
    if (!goes_on) {
      break;
    }
  }
  connection.Close();
}

}  // namespace fusebox::gateway
