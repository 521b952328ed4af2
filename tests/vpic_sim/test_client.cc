#include "vpic_sim/test_client.h"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <charconv>
#include <functional>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <boost/json/parse.hpp>

namespace fusebox::vpic_sim::test_client {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

tcp::endpoint Loopback(std::uint16_t port) {
  return tcp::endpoint(asio::ip::make_address_v4("127.0.0.1"), port);
}

// Runs the io_context until the operation in flight completes (each one is bounded by the
// stream's deadline, so this returns).
void RunToCompletion(asio::io_context& ioc) {
  ioc.restart();
  ioc.run();
}

}  // namespace

std::string HttpGet(std::string_view target, bool close) {
  return fmt::format("GET {} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: {}\r\n\r\n", target,
                     close ? "close" : "keep-alive");
}

std::string HttpPost(std::string_view target, std::string_view body, std::string_view content_type,
                     bool close) {
  return fmt::format(
      "POST {} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {}\r\nContent-Length: {}\r\n"
      "Connection: {}\r\n\r\n{}",
      target, content_type, body.size(), close ? "close" : "keep-alive", body);
}

TestConnection::TestConnection() : stream_(std::make_unique<beast::tcp_stream>(ioc_)) {}

TestConnection::~TestConnection() { Close(); }

bool TestConnection::Connect(std::uint16_t port, std::chrono::milliseconds timeout) {
  stream_->expires_after(timeout);
  stream_->async_connect(Loopback(port),
                         [this](const boost::system::error_code& ec) { last_error_ = ec; });
  RunToCompletion(ioc_);
  return !last_error_;
}

bool TestConnection::Send(std::string_view bytes, std::chrono::milliseconds timeout) {
  stream_->expires_after(timeout);
  asio::async_write(*stream_, asio::buffer(bytes.data(), bytes.size()),
                    [this](const boost::system::error_code& ec, std::size_t) { last_error_ = ec; });
  RunToCompletion(ioc_);
  return !last_error_;
}

std::optional<HttpResponse> TestConnection::ReadResponse(std::chrono::milliseconds timeout) {
  http::response_parser<http::string_body> parser;
  parser.body_limit(16 * 1024 * 1024);
  stream_->expires_after(timeout);
  http::async_read(*stream_, buffer_, parser,
                   [this](const boost::system::error_code& ec, std::size_t) { last_error_ = ec; });
  RunToCompletion(ioc_);
  if (last_error_) {
    return std::nullopt;
  }
  return parser.release();
}

RawRead TestConnection::ReadAll(std::chrono::milliseconds timeout) {
  RawRead out;
  // Bytes a previous ReadResponse buffered but did not consume.
  out.bytes.assign(static_cast<const char*>(buffer_.data().data()), buffer_.size());
  buffer_.consume(buffer_.size());
  stream_->expires_after(timeout);
  std::array<char, 4096> chunk{};
  std::function<void()> read_more = [&]() {
    stream_->async_read_some(asio::buffer(chunk),
                             [&](const boost::system::error_code& ec, std::size_t n) {
                               out.bytes.append(chunk.data(), n);
                               if (ec) {
                                 out.ec = ec;
                                 return;
                               }
                               read_more();
                             });
  };
  read_more();
  RunToCompletion(ioc_);
  if (out.ec == asio::error::eof) {
    out.end = ReadEnd::kEof;
  } else if (out.ec == asio::error::connection_reset) {
    out.end = ReadEnd::kReset;
  } else if (out.ec == beast::error::timeout) {
    out.end = ReadEnd::kTimeout;
  } else {
    out.end = ReadEnd::kError;
  }
  last_error_ = out.ec;
  return out;
}

void TestConnection::Close() {
  boost::system::error_code ignored;
  stream_->socket().close(ignored);
}

std::optional<HttpResponse> Get(std::uint16_t port, std::string_view target,
                                std::chrono::milliseconds timeout) {
  TestConnection c;
  if (!c.Connect(port, timeout) || !c.Send(HttpGet(target, true), timeout)) {
    return std::nullopt;
  }
  return c.ReadResponse(timeout);
}

std::optional<HttpResponse> Post(std::uint16_t port, std::string_view target, std::string_view body,
                                 std::string_view content_type, std::chrono::milliseconds timeout) {
  TestConnection c;
  if (!c.Connect(port, timeout) || !c.Send(HttpPost(target, body, content_type, true), timeout)) {
    return std::nullopt;
  }
  return c.ReadResponse(timeout);
}

boost::json::object Stats(std::uint16_t port) {
  auto reply = Get(port, "/__control/stats");
  if (!reply || reply->result_int() != 200) {
    return {};
  }
  std::error_code ec;
  boost::json::value v = boost::json::parse(reply->body(), ec);
  if (ec || !v.is_object()) {
    return {};
  }
  return v.as_object();
}

std::int64_t StatsValue(const boost::json::object& stats, std::string_view key,
                        std::string_view sub) {
  const boost::json::value* v = stats.if_contains(key);
  if (v != nullptr && !sub.empty()) {
    v = v->is_object() ? v->as_object().if_contains(sub) : nullptr;
  }
  if (v == nullptr || !v->is_int64()) {
    return -1;
  }
  return v->as_int64();
}

std::int64_t WaitForStat(std::uint16_t port, std::string_view key, std::string_view sub,
                         std::int64_t want, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::int64_t seen = -1;
  do {
    seen = StatsValue(Stats(port), key, sub);
    if (seen == want) {
      return seen;
    }
  } while (std::chrono::steady_clock::now() < deadline);
  return seen;
}

std::optional<HttpResponse> HttpsGet(std::uint16_t port, std::string_view target,
                                     const std::string& ca_file,
                                     std::chrono::milliseconds timeout) {
  asio::io_context ioc;
  asio::ssl::context ctx(asio::ssl::context::tls_client);
  boost::system::error_code ec;
  ctx.load_verify_file(ca_file, ec);
  if (ec) {
    return std::nullopt;
  }
  ctx.set_verify_mode(asio::ssl::verify_peer, ec);
  beast::ssl_stream<beast::tcp_stream> stream(ioc, ctx);
  beast::get_lowest_layer(stream).expires_after(timeout);
  std::optional<HttpResponse> result;
  http::request<http::string_body> request(http::verb::get, std::string(target), 11);
  request.set(http::field::host, "127.0.0.1");
  request.keep_alive(false);
  beast::flat_buffer buffer;
  http::response<http::string_body> response;
  beast::get_lowest_layer(stream).async_connect(
      Loopback(port), [&](const boost::system::error_code& cec) {
        if (cec) {
          return;
        }
        stream.async_handshake(
            asio::ssl::stream_base::client, [&](const boost::system::error_code& hec) {
              if (hec) {
                return;
              }
              http::async_write(
                  stream, request, [&](const boost::system::error_code& wec, std::size_t) {
                    if (wec) {
                      return;
                    }
                    http::async_read(stream, buffer, response,
                                     [&](const boost::system::error_code& rec, std::size_t) {
                                       if (!rec) {
                                         result = std::move(response);
                                       }
                                     });
                  });
            });
      });
  ioc.run();
  return result;
}

std::string PercentEncode(std::string_view text) {
  std::string out;
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) != 0 || c == '-' || c == '.' || c == '_' || c == '~') {
      out += c;
    } else {
      out += fmt::format("%{:02X}", u);
    }
  }
  return out;
}

std::int64_t DeclaredContentLength(std::string_view raw) {
  const std::string_view key = "Content-Length:";
  const std::size_t at = raw.find(key);
  if (at == std::string_view::npos) {
    return -1;
  }
  std::size_t p = at + key.size();
  while (p < raw.size() && raw[p] == ' ') {
    ++p;
  }
  std::int64_t value = -1;
  std::from_chars(raw.data() + p, raw.data() + raw.size(), value);
  return value;
}

std::string_view RawBody(std::string_view raw) {
  const std::size_t at = raw.find("\r\n\r\n");
  return at == std::string_view::npos ? std::string_view() : raw.substr(at + 4);
}

}  // namespace fusebox::vpic_sim::test_client
