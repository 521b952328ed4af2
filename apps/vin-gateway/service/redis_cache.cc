#include "service/redis_cache.h"

#include <atomic>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <charconv>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fusebox/thread_annotations.h"

namespace fusebox::gateway {
namespace {

namespace net = boost::asio;
using fusebox::RedisReply;

// What a command came back with, within its budget or not.
struct Answer {
  RedisReply reply;
  bool timed_out = false;
};

// Sends `args` and completes with the reply, or with timed_out after `budget`, whichever comes
// first, on the awaiting coroutine's executor. A reply after the budget is dropped.
net::awaitable<Answer> Ask(fusebox::RedisClient& client, std::vector<std::string> args,
                           fusebox::Duration budget) {
  auto initiate = [&client, budget](auto handler, const std::vector<std::string>& command) {
    using Handler = decltype(handler);
    struct State {
      explicit State(Handler h, const net::any_io_executor& ex)
          : handler(std::move(h)), timer(ex) {}
      std::atomic<bool> done{false};
      Handler handler;
      net::steady_timer timer;
    };
    const net::any_io_executor executor = net::get_associated_executor(handler);
    auto state = std::make_shared<State>(std::move(handler), executor);
    state->timer.expires_after(budget);
    state->timer.async_wait([state](const boost::system::error_code& ec) {
      if (!ec && !state->done.exchange(true)) {
        std::move(state->handler)(Answer{RedisReply{}, true});
      }
    });
    client.Command(command, [state, executor](const RedisReply& reply) {
      if (state->done.exchange(true)) {
        return;  // the budget ran out first
      }
      net::post(executor, [state, reply] {
        state->timer.cancel();
        std::move(state->handler)(Answer{reply, false});
      });
    });
  };
  co_return co_await net::async_initiate<decltype(net::use_awaitable), void(Answer)>(
      initiate, net::use_awaitable, std::move(args));
}

// Built without a braced list: gcc 12 miscompiles initializer lists inside coroutines.
std::vector<std::string> Command(const char* name, std::string key) {
  std::vector<std::string> command;
  command.emplace_back(name);
  command.push_back(std::move(key));
  return command;
}

class RedisCache final : public Cache {
 public:
  RedisCache(fusebox::RedisClient& client, fusebox::CircuitBreaker& breaker,
             RedisCacheOptions options)
      : client_(client), breaker_(breaker), options_(std::move(options)) {}

  net::awaitable<std::optional<CacheEntry>> Get(std::string key) override {
    gets_.fetch_add(1, std::memory_order_relaxed);
    auto permit = breaker_.TryAcquire();
    if (!permit) {
      co_return std::nullopt;  // the redis breaker is open: an empty cache
    }
    const Answer answer =
        co_await Ask(client_, Command("GET", options_.key_prefix + key), options_.timeout);
    if (!Record(*permit, answer)) {
      co_return std::nullopt;
    }
    if (answer.reply.kind != RedisReply::Kind::kString) {
      co_return std::nullopt;
    }
    std::optional<CacheEntry> entry = Parse(answer.reply.text);
    if (!entry) {
      Error("an entry that does not parse");
      co_return std::nullopt;
    }
    hits_.fetch_add(1, std::memory_order_relaxed);
    co_return entry;
  }

  net::awaitable<void> Put(std::string key, CacheEntry entry) override {
    puts_.fetch_add(1, std::memory_order_relaxed);
    auto permit = breaker_.TryAcquire();
    if (!permit) {
      co_return;
    }
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(entry.fetched_at.time_since_epoch())
            .count();
    std::string value = std::to_string(ms);
    value += '\n';
    value += entry.payload;
    std::vector<std::string> command = Command("SET", options_.key_prefix + key);
    command.push_back(std::move(value));
    const Answer answer = co_await Ask(client_, std::move(command), options_.timeout);
    Record(*permit, answer);
  }

  CacheStats Stats() const override {
    CacheStats s;
    s.backend = "redis";
    s.location = options_.location;
    s.healthy = client_.connected();
    {
      fusebox::Locked lock(mu_);
      s.error = s.healthy ? "" : (last_error_.empty() ? "not connected" : last_error_);
    }
    s.gets = gets_.load(std::memory_order_relaxed);
    s.hits = hits_.load(std::memory_order_relaxed);
    s.puts = puts_.load(std::memory_order_relaxed);
    s.errors = errors_.load(std::memory_order_relaxed);
    return s;
  }

 private:
  // Records the command's outcome on the redis breaker; false when it failed.
  bool Record(fusebox::Permit& permit, const Answer& answer) {
    if (answer.timed_out) {
      permit.Record(fusebox::Outcome::kTimeout);
      Error("budget exhausted");
      return false;
    }
    if (answer.reply.kind == RedisReply::Kind::kDown ||
        answer.reply.kind == RedisReply::Kind::kError) {
      permit.Record(fusebox::Outcome::kFailure);
      Error(answer.reply.kind == RedisReply::Kind::kDown ? "not connected" : answer.reply.text);
      return false;
    }
    permit.Record(fusebox::Outcome::kSuccess);
    return true;
  }

  void Error(std::string what) {
    errors_.fetch_add(1, std::memory_order_relaxed);
    fusebox::Locked lock(mu_);
    last_error_ = std::move(what);
  }

  static std::optional<CacheEntry> Parse(const std::string& value) {
    const std::size_t newline = value.find('\n');
    if (newline == std::string::npos) {
      return std::nullopt;
    }
    std::int64_t ms = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + newline, ms);
    if (ec != std::errc() || end != value.data() + newline) {
      return std::nullopt;
    }
    CacheEntry entry;
    entry.fetched_at =
        WallTime(std::chrono::duration_cast<WallTime::duration>(std::chrono::milliseconds(ms)));
    entry.payload = value.substr(newline + 1);
    return entry;
  }

  fusebox::RedisClient& client_;
  fusebox::CircuitBreaker& breaker_;
  const RedisCacheOptions options_;
  std::atomic<std::uint64_t> gets_{0}, hits_{0}, puts_{0}, errors_{0};
  mutable fusebox::Mutex mu_;
  std::string last_error_ FUSEBOX_GUARDED_BY(mu_);
};

}  // namespace

std::unique_ptr<Cache> MakeRedisCache(fusebox::RedisClient& client,
                                      fusebox::CircuitBreaker& breaker, RedisCacheOptions options) {
  return std::make_unique<RedisCache>(client, breaker, std::move(options));
}

}  // namespace fusebox::gateway
