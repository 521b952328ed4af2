// HttpServer in process, on a loopback ephemeral port: connections are spread over the
// io_contexts it is given (vin-gateway's --threads), one after the other; behind a trusted proxy,
// the handler sees one client per IPv6 /64.
#include "http/http_server.h"

#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <boost/asio/execution/context.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/query.hpp>
#include <boost/asio/this_coro.hpp>

#include "vin_gateway/process_harness.h"

namespace {

namespace net = boost::asio;
using fusebox::gateway::HttpRequest;
using fusebox::gateway::HttpResponse;
using fusebox::gateway::testing::Http;

TEST(HttpServerTest, HandsConnectionsToItsContextsInTurn) {
  net::io_context listener(1);
  net::io_context first(1);
  net::io_context second(1);
  std::mutex mu;
  std::vector<const net::execution_context*> served;  // Guarded by mu.
  auto handler = [&](HttpRequest) -> net::awaitable<HttpResponse> {
    const net::any_io_executor executor = co_await net::this_coro::executor;
    const net::execution_context& context = net::query(executor, net::execution::context);
    {
      std::lock_guard<std::mutex> lock(mu);
      served.push_back(&context);
    }
    HttpResponse response;
    response.body = "{}";
    co_return response;
  };
  auto created = fusebox::gateway::HttpServer::Create(
      listener, {.host = "127.0.0.1", .port = 0}, handler,
      [](const fusebox::gateway::AccessRecord&) {}, {&first, &second});
  ASSERT_TRUE(created) << created.error();
  std::unique_ptr<fusebox::gateway::HttpServer> server = std::move(*created);
  server->Start();
  using Guard = net::executor_work_guard<net::io_context::executor_type>;
  std::vector<Guard> idle_guards;
  std::vector<std::thread> threads;
  for (net::io_context* context : {&listener, &first, &second}) {
    idle_guards.push_back(net::make_work_guard(*context));
    threads.emplace_back([context] { context->run(); });
  }

  for (int i = 0; i < 4; ++i) {  // each request on a connection of its own
    EXPECT_EQ(Http(server->port(), "GET", "/x").status, 200);
  }

  // Shut down as vin-gateway does, then let every context run out of work (the accept loop and
  // the sessions end), so that nothing is left in a queue to be destroyed with the contexts.
  server->BeginShutdown();
  for (Guard& guard : idle_guards) {
    guard.reset();
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  const std::vector<const net::execution_context*> expected = {&first, &second, &first, &second};
  EXPECT_EQ(served, expected);
}

// Behind a trusted proxy, 40 addresses of one IPv6 /64 used to reach the handler (the rate limit,
// the admin throttle) as 40 clients, each with its own budget. They are one client now, while the
// access log keeps each address; IPv4 clients stay one per address, IPv4-mapped ones included.
TEST(HttpServerTest, AddressesOfOneIpv6Slash64AreOneClientForTheHandler) {
  net::io_context io(1);
  std::mutex mu;
  std::vector<std::string> handled;  // HttpRequest::client of each request. Guarded by mu.
  std::vector<std::string> logged;   // AccessRecord::client of each request. Guarded by mu.
  auto handler = [&](HttpRequest request) -> fusebox::gateway::HandlerResult {
    std::lock_guard<std::mutex> lock(mu);
    handled.push_back(request.client);
    HttpResponse response;
    response.body = "{}";
    return response;
  };
  auto trusted = fusebox::gateway::TrustedProxies::Parse({"127.0.0.1/32"});
  ASSERT_TRUE(trusted) << trusted.error();
  auto created = fusebox::gateway::HttpServer::Create(
      io, {.host = "127.0.0.1", .port = 0, .trusted_proxies = *trusted}, handler,
      [&](const fusebox::gateway::AccessRecord& record) {
        std::lock_guard<std::mutex> lock(mu);
        logged.push_back(record.client);
      });
  ASSERT_TRUE(created) << created.error();
  std::unique_ptr<fusebox::gateway::HttpServer> server = std::move(*created);
  server->Start();
  auto guard = net::make_work_guard(io);
  std::thread thread([&io] { io.run(); });

  std::vector<std::string> forwarded;
  for (int i = 1; i <= 40; ++i) {
    forwarded.push_back("2001:db8:1:2:" + std::to_string(i) + "::" + std::to_string(i * 7));
  }
  forwarded.insert(forwarded.end(),
                   {"2001:db8:1:3::1", "198.51.100.7", "198.51.100.8", "::ffff:198.51.100.9"});
  for (const std::string& address : forwarded) {
    EXPECT_EQ(Http(server->port(), "GET", "/x", "", "X-Forwarded-For: " + address + "\r\n").status,
              200)
        << address;
  }
  server->BeginShutdown();
  guard.reset();
  thread.join();

  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(handled.size(), forwarded.size());
  ASSERT_EQ(logged.size(), forwarded.size());
  for (std::size_t i = 0; i < 40; ++i) {
    EXPECT_EQ(handled[i], "2001:db8:1:2::/64") << forwarded[i];
    EXPECT_EQ(logged[i], forwarded[i]);
  }
  EXPECT_EQ(handled[40], "2001:db8:1:3::/64");
  EXPECT_EQ(handled[41], "198.51.100.7");
  EXPECT_EQ(handled[42], "198.51.100.8");
  EXPECT_EQ(handled[43], "198.51.100.9");
  EXPECT_EQ(logged[43], "198.51.100.9");
}

}  // namespace
