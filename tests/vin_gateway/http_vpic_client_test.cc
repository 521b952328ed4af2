// The HTTP vPIC client (service/http_vpic_client.h) against an upstream in this process on a
// loopback port, one io_context for both: interim (1xx) answers before the real one, and a pooled
// connection that must never hand one request's answer to the next.
#include "service/http_vpic_client.h"

#include <chrono>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

namespace fusebox::gateway {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using namespace net::experimental::awaitable_operators;  // NOLINT(google-build-using-namespace)

// What the upstream sends before each real answer.
enum class Interim {
  kNone,
  kEarlyHints,          // "103 Early Hints" at once, the answer right after it
  kContinueThenLate,    // "100 Continue" at once, the answer 300 ms later, or as soon as the
                        // client sends its next request on the connection (the defect's timing)
  kSwitchingProtocols,  // "101 Switching Protocols", then the answer
};

// Answers DecodeVinValues/VIN[?modelyear=Y] with a body naming that VIN and year (1981 when none
// is asked: the year a plain decode of a VIN with a digit in position 7 gets).
class LoopbackUpstream {
 public:
  LoopbackUpstream(net::io_context& io, Interim interim)
      : acceptor_(io, {net::ip::make_address("127.0.0.1"), 0}), interim_(interim) {
    net::co_spawn(io, Accept(), net::detached);
  }

  std::string url() const {
    return fmt::format("http://127.0.0.1:{}", acceptor_.local_endpoint().port());
  }
  int connections() const { return connections_; }
  void Stop() {
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    for (const auto& socket : sockets_) {
      socket->close(ignored);
    }
  }

 private:
  static std::string Answer(const std::string& target) {
    const std::size_t from = target.find("DecodeVinValues/") + 16;
    const std::string vin = target.substr(from, target.find('?', from) - from);
    std::string year = "1981";
    if (const std::size_t at = target.find("modelyear="); at != std::string::npos) {
      year = target.substr(at + 10, 4);
    }
    const std::string body =
        fmt::format(R"({{"Count":1,"SearchCriteria":"VIN(s): {0}","Results":[{{"VIN":"{0}",)"
                    R"("ModelYear":"{1}","ErrorCode":"0"}}]}})",
                    vin, year);
    return fmt::format(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}"
        "\r\n\r\n{}",
        body.size(), body);
  }

  net::awaitable<void> Accept() {
    for (;;) {
      auto socket =
          std::make_shared<tcp::socket>(co_await acceptor_.async_accept(net::use_awaitable));
      ++connections_;
      sockets_.push_back(socket);
      net::co_spawn(acceptor_.get_executor(), Serve(socket), net::detached);
    }
  }

  net::awaitable<void> Serve(std::shared_ptr<tcp::socket> socket) {
    beast::flat_buffer buffer;
    for (;;) {
      http::request<http::string_body> request;
      co_await http::async_read(*socket, buffer, request, net::use_awaitable);
      const std::string target(request.target());
      std::string head;
      switch (interim_) {
        case Interim::kNone:
          break;
        case Interim::kEarlyHints:
          head = "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n";
          break;
        case Interim::kContinueThenLate:
          head = "HTTP/1.1 100 Continue\r\n\r\n";
          break;
        case Interim::kSwitchingProtocols:
          head = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n";
          break;
      }
      if (!head.empty()) {
        co_await net::async_write(*socket, net::buffer(head), net::use_awaitable);
      }
      if (interim_ == Interim::kContinueThenLate) {
        net::steady_timer late(socket->get_executor(), std::chrono::milliseconds(300));
        co_await (late.async_wait(net::use_awaitable) ||
                  socket->async_wait(tcp::socket::wait_read, net::use_awaitable));
      }
      const std::string answer = Answer(target);
      co_await net::async_write(*socket, net::buffer(answer), net::use_awaitable);
    }
  }

  tcp::acceptor acceptor_;
  const Interim interim_;
  int connections_ = 0;
  std::vector<std::shared_ptr<tcp::socket>> sockets_;
};

struct Asked {
  std::string vin;
  int model_year = 0;
};

// Each decode in turn through one client (so each may reuse the previous one's connection).
std::vector<UpstreamReply> DecodeInTurn(Interim interim, const std::vector<Asked>& asks,
                                        VpicClientStats* stats = nullptr,
                                        int* upstream_connections = nullptr) {
  net::io_context io;
  LoopbackUpstream upstream(io, interim);
  HttpVpicClientOptions options;
  options.base_url = upstream.url();
  auto client = MakeHttpVpicClient(io.get_executor(), options);
  EXPECT_TRUE(client);
  std::vector<UpstreamReply> replies;
  net::co_spawn(
      io,
      [&]() -> net::awaitable<void> {
        for (const Asked& ask : asks) {
          replies.push_back(co_await (*client)->DecodeVin(ask.vin, ask.model_year));
        }
        if (stats != nullptr) {
          *stats = (*client)->Stats();
        }
        upstream.Stop();
      },
      [](const std::exception_ptr& e) {
        if (e) {
          std::rethrow_exception(e);
        }
      });
  io.run_for(std::chrono::seconds(20));
  if (upstream_connections != nullptr) {
    *upstream_connections = upstream.connections();
  }
  return replies;
}

std::string Expected(const Asked& ask) {
  return fmt::format(R"("VIN":"{}","ModelYear":"{}")", ask.vin,
                     ask.model_year == 0 ? 1981 : ask.model_year);
}

TEST(HttpVpicClientTest, EarlyHintsBeforeEveryAnswerAreSetAsideAndTheConnectionReused) {
  const std::vector<Asked> asks = {{"1FTMW1T88BFA00001", 0},
                                   {"1FTMW1T88BFA00002", 2011},
                                   {"1FTMW1T88BFA00003", 0},
                                   {"1FTMW1T88BFA00004", 0}};
  VpicClientStats stats;
  int connections = 0;
  const std::vector<UpstreamReply> replies =
      DecodeInTurn(Interim::kEarlyHints, asks, &stats, &connections);
  ASSERT_EQ(replies.size(), asks.size());
  for (std::size_t i = 0; i < asks.size(); ++i) {
    EXPECT_TRUE(replies[i].ok()) << replies[i].detail;
    EXPECT_EQ(replies[i].status, 200U) << "decode " << i;
    EXPECT_NE(replies[i].body.find(Expected(asks[i])), std::string::npos)
        << "decode " << i << " got " << replies[i].body;
  }
  // Still one connection for all: interim answers do not cost the pool.
  EXPECT_EQ(connections, 1);
  EXPECT_EQ(stats.connections_reused, asks.size() - 1);
}

TEST(HttpVpicClientTest, LateAnswerAfterContinueIsNeverReadByTheNextRequest) {
  // The model-year answer must not become the plain decode's answer (nor the next VIN's).
  const std::vector<Asked> asks = {{"1FTMW1T88BFA00001", 2011},
                                   {"1FTMW1T88BFA00001", 0},
                                   {"1FTMW1T88BFA00009", 0},
                                   {"1FTMW1T88BFA00009", 2011}};
  const std::vector<UpstreamReply> replies = DecodeInTurn(Interim::kContinueThenLate, asks);
  ASSERT_EQ(replies.size(), asks.size());
  for (std::size_t i = 0; i < asks.size(); ++i) {
    EXPECT_TRUE(replies[i].ok()) << replies[i].detail;
    EXPECT_EQ(replies[i].status, 200U) << "decode " << i;
    EXPECT_NE(replies[i].body.find(Expected(asks[i])), std::string::npos)
        << "decode " << i << " (" << asks[i].vin << ", " << asks[i].model_year << ") got "
        << replies[i].body;
  }
}

TEST(HttpVpicClientTest, SwitchingProtocolsIsAProtocolFailureAndTheConnectionIsClosed) {
  const std::vector<Asked> asks = {{"1FTMW1T88BFA00001", 0}, {"1FTMW1T88BFA00002", 0}};
  VpicClientStats stats;
  int connections = 0;
  const std::vector<UpstreamReply> replies =
      DecodeInTurn(Interim::kSwitchingProtocols, asks, &stats, &connections);
  ASSERT_EQ(replies.size(), asks.size());
  for (const UpstreamReply& reply : replies) {
    EXPECT_EQ(ToString(reply.transport), "protocol") << reply.detail;
    EXPECT_NE(reply.detail.find("101"), std::string::npos) << reply.detail;
  }
  // Neither connection went back to the pool: the second decode opened its own.
  EXPECT_EQ(stats.connections_reused, 0U);
  EXPECT_EQ(stats.idle_connections, 0U);
  EXPECT_EQ(connections, 2);
}

TEST(HttpVpicClientTest, PlainAnswersReuseOneConnection) {
  const std::vector<Asked> asks = {{"1FTMW1T88BFA00001", 0}, {"1FTMW1T88BFA00002", 0}};
  VpicClientStats stats;
  int connections = 0;
  const std::vector<UpstreamReply> replies =
      DecodeInTurn(Interim::kNone, asks, &stats, &connections);
  ASSERT_EQ(replies.size(), 2U);
  EXPECT_EQ(replies[1].status, 200U);
  EXPECT_EQ(connections, 1);
  EXPECT_EQ(stats.idle_connections, 1U);
}

}  // namespace
}  // namespace fusebox::gateway
