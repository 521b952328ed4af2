#include "service/http_vpic_client.h"

#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <deque>
#include <optional>
#include <string>
#include <utility>

#include <fmt/format.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/url/parse.hpp>

#include "fusebox/thread_annotations.h"
#include "service/upstream_answer.h"

namespace fusebox::gateway {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;

constexpr auto kTuple = net::as_tuple(net::use_awaitable);

using TlsStream = beast::ssl_stream<beast::tcp_stream>;

// One upstream connection, plain or TLS.
struct Connection {
  std::optional<beast::tcp_stream> plain;
  std::optional<TlsStream> tls;

  tcp::socket& socket() { return tls ? beast::get_lowest_layer(*tls).socket() : plain->socket(); }

  // Whether the peer has closed (or sent something unasked) while the connection sat idle. A
  // non-blocking peek: 0 bytes is an orderly close. Over TLS, pending bytes may be a session
  // ticket, which is harmless.
  bool LooksClosed() {
    char byte = 0;
    const ssize_t n = ::recv(socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0) {
      return true;
    }
    if (n > 0) {
      return !tls;
    }
    return errno != EAGAIN && errno != EWOULDBLOCK;
  }
};

// Errors that say this process (or this machine) ran short, not that the upstream failed: out of
// file descriptors, socket buffers, memory or local ports.
bool IsLocalShortage(const boost::system::error_code& ec) {
  if (ec.category() != boost::system::system_category() &&
      ec.category() != boost::system::generic_category()) {
    return false;
  }
  switch (ec.value()) {
    case EMFILE:
    case ENFILE:
    case ENOBUFS:
    case ENOMEM:
    case EADDRNOTAVAIL:
      return true;
    default:
      return false;
  }
}

UpstreamReply::Transport FromError(const boost::system::error_code& ec) {
  if (IsLocalShortage(ec)) {
    return UpstreamReply::Transport::kLocal;
  }
  if (ec == net::error::operation_aborted) {
    return UpstreamReply::Transport::kCancelled;
  }
  if (ec == http::error::body_limit) {
    return UpstreamReply::Transport::kBodyTooLarge;
  }
  if (ec.category() == http::make_error_code(http::error::bad_version).category()) {
    return UpstreamReply::Transport::kProtocol;
  }
  return UpstreamReply::Transport::kReset;
}

// A connect that failed because this host has no route: its own network, not vPIC's trouble.
bool IsOwnNetwork(const boost::system::error_code& ec) {
  return ec == net::error::network_unreachable || ec == net::error::network_down;
}

// A failed resolve or connect: the gateway's shortage, or the upstream's failure.
UpstreamReply::Transport FromConnectError(const boost::system::error_code& ec) {
  return IsLocalShortage(ec) ? UpstreamReply::Transport::kLocal
                             : UpstreamReply::Transport::kConnect;
}

std::optional<fusebox::Duration> ParseRetryAfter(std::string_view value) {
  while (!value.empty() && value.front() == ' ') {
    value.remove_prefix(1);
  }
  while (!value.empty() && value.back() == ' ') {
    value.remove_suffix(1);
  }
  long long seconds = 0;
  auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), seconds);
  if (ec != std::errc() || ptr != value.data() + value.size() || seconds < 0) {
    return std::nullopt;  // HTTP-date form: not honoured
  }
  return std::chrono::seconds(std::min<long long>(seconds, 86400));
}

class HttpVpicClient final : public VpicClient {
 public:
  HttpVpicClient(net::any_io_executor executor, HttpVpicClientOptions options, bool tls,
                 std::string host, std::string port, std::string prefix,
                 std::unique_ptr<ssl::context> ssl_context)
      : executor_(std::move(executor)),
        options_(std::move(options)),
        tls_(tls),
        host_(std::move(host)),
        port_(std::move(port)),
        prefix_(std::move(prefix)),
        ssl_context_(std::move(ssl_context)) {
    const bool default_port = (tls_ && port_ == "443") || (!tls_ && port_ == "80");
    host_header_ = default_port ? host_ : fmt::format("{}:{}", host_, port_);
  }

  net::awaitable<UpstreamReply> DecodeVin(std::string vin, int model_year) override {
    http::request<http::string_body> request{http::verb::get,
                                             fmt::format("{}/api/vehicles/DecodeVinValues/{}"
                                                         "?format=json",
                                                         prefix_, vin),
                                             11};
    if (model_year != 0) {
      request.target(fmt::format("{}&modelyear={}", request.target(), model_year));
    }
    co_return co_await Exchange(std::move(request));
  }

  net::awaitable<UpstreamReply> DecodeBatch(std::vector<BatchItem> items) override {
    std::string data;
    for (const BatchItem& item : items) {
      if (!data.empty()) {
        data += ';';
      }
      data += item.vin;
      if (item.model_year != 0) {
        data += fmt::format(",{}", item.model_year);
      }
    }
    http::request<http::string_body> request{
        http::verb::post, fmt::format("{}/api/vehicles/DecodeVINValuesBatch/", prefix_), 11};
    request.set(http::field::content_type, "application/x-www-form-urlencoded");
    request.body() = fmt::format("DATA={}&format=json", data);
    co_return co_await Exchange(std::move(request));
  }

  VpicClientStats Stats() const override {
    VpicClientStats s;
    s.requests = requests_.load(std::memory_order_relaxed);
    s.connections_opened = opened_.load(std::memory_order_relaxed);
    s.connections_reused = reused_.load(std::memory_order_relaxed);
    fusebox::Locked lock(mu_);
    s.idle_connections = idle_.size();
    return s;
  }

 private:
  // The pooled connection to reuse, if any is still open.
  std::unique_ptr<Connection> TakeIdle() {
    fusebox::Locked lock(mu_);
    while (!idle_.empty()) {
      std::unique_ptr<Connection> conn = std::move(idle_.back());
      idle_.pop_back();
      if (!conn->LooksClosed()) {
        return conn;
      }
    }
    return nullptr;
  }

  void ReturnIdle(std::unique_ptr<Connection> conn) {
    fusebox::Locked lock(mu_);
    if (idle_.size() < options_.max_idle) {
      idle_.push_back(std::move(conn));
    }
  }

  net::awaitable<std::unique_ptr<Connection>> Connect(UpstreamReply& reply) {
    tcp::resolver resolver(executor_);
    auto [rec, endpoints] = co_await resolver.async_resolve(host_, port_, kTuple);
    if (rec) {
      reply.transport = rec == net::error::operation_aborted ? UpstreamReply::Transport::kCancelled
                                                             : FromConnectError(rec);
      reply.detail = fmt::format("resolve {}: {}", host_, rec.message());
      // The name of a public API that does not resolve is this instance's resolver failing.
      reply.own_network = reply.transport == UpstreamReply::Transport::kConnect;
      co_return nullptr;
    }
    auto conn = std::make_unique<Connection>();
    beast::tcp_stream* tcp_stream = nullptr;
    if (tls_) {
      conn->tls.emplace(executor_, *ssl_context_);
      tcp_stream = &beast::get_lowest_layer(*conn->tls);
    } else {
      conn->plain.emplace(executor_);
      tcp_stream = &*conn->plain;
    }
    // One endpoint after another, each socket opened here rather than inside async_connect: when
    // the open fails (no descriptor left), Asio's range connect reports operation_aborted, which
    // would read as a cancelled call instead of the gateway's own shortage.
    boost::system::error_code cec = net::error::host_not_found;
    for (const auto& entry : endpoints) {
      tcp::socket& socket = tcp_stream->socket();
      boost::system::error_code ignored;
      socket.close(ignored);
      if (socket.open(entry.endpoint().protocol(), cec); !cec) {
        auto [connect_ec] = co_await tcp_stream->async_connect(entry.endpoint(), kTuple);
        cec = connect_ec;
      }
      if (!cec || cec == net::error::operation_aborted || IsLocalShortage(cec)) {
        break;
      }
    }
    if (cec) {
      reply.transport = cec == net::error::operation_aborted ? UpstreamReply::Transport::kCancelled
                                                             : FromConnectError(cec);
      reply.detail = fmt::format("connect {}:{}: {}", host_, port_, cec.message());
      reply.own_network = IsOwnNetwork(cec);
      co_return nullptr;
    }
    boost::system::error_code option_ec;
    tcp_stream->socket().set_option(tcp::no_delay(true), option_ec);  // best effort
    if (tls_) {
      SSL* native = conn->tls->native_handle();
      // SNI names hosts, never addresses. SSL_set_tlsext_host_name without the macro's C cast.
      boost::system::error_code not_an_address;
      (void)net::ip::make_address(host_, not_an_address);
      if (not_an_address &&
          SSL_ctrl(native, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
                   static_cast<void*>(const_cast<char*>(host_.c_str()))) != 1) {
        reply.transport = UpstreamReply::Transport::kTls;
        reply.detail = "cannot set SNI";
        co_return nullptr;
      }
      conn->tls->set_verify_mode(ssl::verify_peer);
      conn->tls->set_verify_callback(ssl::host_name_verification(host_));
      auto [hec] = co_await conn->tls->async_handshake(ssl::stream_base::client, kTuple);
      if (hec) {
        reply.transport = hec == net::error::operation_aborted
                              ? UpstreamReply::Transport::kCancelled
                              : UpstreamReply::Transport::kTls;
        reply.detail = fmt::format("TLS handshake with {}: {}", host_, hec.message());
        co_return nullptr;
      }
    }
    opened_.fetch_add(1, std::memory_order_relaxed);
    co_return conn;
  }

  template <typename Stream>
  static net::awaitable<boost::system::error_code> Write(
      Stream& stream, http::request<http::string_body>& request) {
    auto [ec, n] = co_await http::async_write(stream, request, kTuple);
    (void)n;
    co_return ec;
  }

  net::awaitable<boost::system::error_code> WriteTo(Connection& conn,
                                                    http::request<http::string_body>& request) {
    if (conn.tls) {
      co_return co_await Write(*conn.tls, request);
    }
    co_return co_await Write(*conn.plain, request);
  }

  net::awaitable<UpstreamReply> Exchange(http::request<http::string_body> request) {
    requests_.fetch_add(1, std::memory_order_relaxed);
    request.set(http::field::host, host_header_);
    request.set(http::field::user_agent, options_.user_agent);
    request.set(http::field::accept, "application/json");
    request.keep_alive(true);
    request.prepare_payload();

    UpstreamReply reply;
    std::unique_ptr<Connection> conn = TakeIdle();
    const bool reused = conn != nullptr;
    if (reused) {
      reused_.fetch_add(1, std::memory_order_relaxed);
    } else {
      conn = co_await Connect(reply);
      if (!conn) {
        co_return reply;
      }
    }
    boost::system::error_code ec = co_await WriteTo(*conn, request);
    if (ec && reused && ec != net::error::operation_aborted) {
      // The pooled connection broke before the request went out: replace it once.
      conn = co_await Connect(reply);
      if (!conn) {
        co_return reply;
      }
      ec = co_await WriteTo(*conn, request);
    }
    if (ec) {
      reply.transport = FromError(ec);
      reply.detail = fmt::format("write: {}", ec.message());
      co_return reply;
    }
    beast::flat_buffer buffer;
    UpstreamAnswer got;
    if (conn->tls) {
      got = co_await ReadUpstreamAnswer(*conn->tls, buffer, options_.body_limit);
    } else {
      got = co_await ReadUpstreamAnswer(*conn->plain, buffer, options_.body_limit);
    }
    if (got.error) {
      reply.transport = FromError(got.error);
      if (got.upgrade) {
        reply.detail = "read: an unasked-for 101 Switching Protocols";
      } else if (got.interim > kMaxInterimAnswers) {
        reply.detail = fmt::format("read: more than {} interim (1xx) answers", kMaxInterimAnswers);
      } else {
        reply.detail = fmt::format("read: {}", got.error.message());
      }
      co_return reply;  // the connection is closed with `conn`, never pooled
    }
    http::response<http::string_body>& response = got.response;
    reply.status = response.result_int();
    if (auto it = response.find(http::field::retry_after); it != response.end()) {
      reply.retry_after = ParseRetryAfter(std::string_view(it->value().data(), it->value().size()));
    }
    reply.body = std::move(response.body());
    if (got.reusable) {
      ReturnIdle(std::move(conn));
    }
    co_return reply;
  }

  const net::any_io_executor executor_;
  const HttpVpicClientOptions options_;
  const bool tls_;
  const std::string host_;
  const std::string port_;
  const std::string prefix_;  // the base URL's path, without a trailing slash
  std::string host_header_;
  const std::unique_ptr<ssl::context> ssl_context_;
  mutable fusebox::Mutex mu_;
  std::deque<std::unique_ptr<Connection>> idle_ FUSEBOX_GUARDED_BY(mu_);
  std::atomic<std::uint64_t> requests_{0};
  std::atomic<std::uint64_t> opened_{0};
  std::atomic<std::uint64_t> reused_{0};
};

}  // namespace

std::string_view ToString(UpstreamReply::Transport transport) noexcept {
  switch (transport) {
    case UpstreamReply::Transport::kOk:
      return "ok";
    case UpstreamReply::Transport::kConnect:
      return "connect";
    case UpstreamReply::Transport::kTls:
      return "tls";
    case UpstreamReply::Transport::kReset:
      return "reset";
    case UpstreamReply::Transport::kProtocol:
      return "protocol";
    case UpstreamReply::Transport::kBodyTooLarge:
      return "body_too_large";
    case UpstreamReply::Transport::kCancelled:
      return "cancelled";
    case UpstreamReply::Transport::kLocal:
      return "local";
  }
  return "unknown";
}

fusebox::Result<std::unique_ptr<VpicClient>, std::string> MakeHttpVpicClient(
    net::any_io_executor executor, HttpVpicClientOptions options) {
  auto url = boost::urls::parse_absolute_uri(options.base_url);
  if (!url) {
    return fmt::format("upstream URL '{}' is not an absolute URL", options.base_url);
  }
  const bool tls = url->scheme_id() == boost::urls::scheme::https;
  if (!tls && url->scheme_id() != boost::urls::scheme::http) {
    return fmt::format("upstream URL '{}' must be http:// or https://", options.base_url);
  }
  std::string host = url->host();
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host.empty()) {
    return fmt::format("upstream URL '{}' has no host", options.base_url);
  }
  std::string port = url->has_port() ? std::string(url->port()) : (tls ? "443" : "80");
  const boost::urls::pct_string_view path = url->encoded_path();
  std::string prefix(path.data(), path.size());
  while (!prefix.empty() && prefix.back() == '/') {
    prefix.pop_back();
  }
  std::unique_ptr<ssl::context> context;
  if (tls) {
    context = std::make_unique<ssl::context>(ssl::context::tls_client);
    context->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                         ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                         ssl::context::no_tlsv1_1);
    boost::system::error_code ec;
    if (options.ca_file.empty()) {
      context->set_default_verify_paths(ec);
    } else {
      context->load_verify_file(options.ca_file, ec);
    }
    if (ec) {
      return fmt::format("cannot load CAs{}: {}",
                         options.ca_file.empty() ? "" : " from '" + options.ca_file + "'",
                         ec.message());
    }
    context->set_verify_mode(ssl::verify_peer);
  }
  return std::unique_ptr<VpicClient>(std::make_unique<HttpVpicClient>(
      std::move(executor), std::move(options), tls, std::move(host), std::move(port),
      std::move(prefix), std::move(context)));
}

}  // namespace fusebox::gateway
