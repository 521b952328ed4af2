// HttpServer in process, on a loopback ephemeral port: connections are spread over the
// io_contexts it is given (vin-gateway's --threads), one after the other.
#include "http/http_server.h"

#include <memory>
#include <mutex>
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
using vin_gateway::HttpRequest;
using vin_gateway::HttpResponse;
using vin_gateway::testing::Http;

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
  auto created =
      vin_gateway::HttpServer::Create(listener, {.host = "127.0.0.1", .port = 0}, handler,
                                      [](const vin_gateway::AccessRecord&) {}, {&first, &second});
  ASSERT_TRUE(created) << created.error();
  std::unique_ptr<vin_gateway::HttpServer> server = std::move(*created);
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

}  // namespace
