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
#include <string_view>
#include <utility>
#include <vector>

#include "core/decode.h"
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

// The longest value an entry can be: its `fetched_at` (at most 20 digits), the newline and a
// stored decode (kMaxStoredDecodeBytes).
constexpr std::size_t kMaxValueBytes = 21 + kMaxStoredDecodeBytes;
// The earliest `fetched_at` taken for real: the gateway did not exist before.
constexpr std::chrono::milliseconds kEarliestFetch{946'684'800'000};  // 2000-01-01T00:00:00Z

class RedisCache final : public Cache {
 public:
  RedisCache(fusebox::RedisClient& client, fusebox::CircuitBreaker& breaker,
             const WallClock& wall_clock, RedisCacheOptions options)
      : client_(client), breaker_(breaker), wall_clock_(wall_clock), options_(std::move(options)) {}

  net::awaitable<std::optional<CacheEntry>> Get(std::string key) override {
    gets_.fetch_add(1, std::memory_order_relaxed);
    auto permit = breaker_.TryAcquire();
    if (!permit) {
      co_return std::nullopt;  // the redis breaker is open: an empty cache
    }
    // GETRANGE instead of GET: Redis sends at most one byte more than an entry can be, so a
    // value of any size costs this process kMaxValueBytes at most (still one round trip; a
    // missing key reads as "").
    std::vector<std::string> command = Command("GETRANGE", options_.key_prefix + key);
    command.emplace_back("0");
    command.push_back(std::to_string(kMaxValueBytes));
    const Answer answer = co_await Ask(client_, std::move(command), options_.timeout);
    if (answer.reply.kind == RedisReply::Kind::kError &&
        answer.reply.text.rfind("WRONGTYPE", 0) == 0) {
      // Not a string: someone else's key, not a failing Redis (the breaker hears a success).
      permit->Record(fusebox::Outcome::kSuccess);
      Refuse();
      co_return std::nullopt;
    }
    if (!Record(*permit, answer)) {
      co_return std::nullopt;
    }
    if (answer.reply.kind != RedisReply::Kind::kString || answer.reply.text.empty()) {
      co_return std::nullopt;
    }
    std::optional<CacheEntry> entry = Check(key, answer.reply.text);
    if (!entry) {
      Refuse();
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
      // Down: the connection's own reason first ("tls: certificate verify failed: ...",
      // "connect: ..."), which says more than the last command's "not connected".
      const std::string link = s.healthy ? std::string() : client_.last_error();
      s.error = s.healthy             ? ""
                : !link.empty()       ? link
                : last_error_.empty() ? "not connected"
                                      : last_error_;
    }
    s.gets = gets_.load(std::memory_order_relaxed);
    s.hits = hits_.load(std::memory_order_relaxed);
    s.puts = puts_.load(std::memory_order_relaxed);
    s.errors = errors_.load(std::memory_order_relaxed);
    s.refused = refused_.load(std::memory_order_relaxed);
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

  void Refuse() { refused_.fetch_add(1, std::memory_order_relaxed); }

  // The entry stored under `key` if every field of it is in range and matches the key (see
  // MakeRedisCache), else nullopt.
  std::optional<CacheEntry> Check(const std::string& key, const std::string& value) const {
    if (value.size() > kMaxValueBytes) {
      return std::nullopt;  // GETRANGE stopped at one byte past the longest entry
    }
    const std::size_t newline = value.find('\n');
    if (newline == std::string::npos) {
      return std::nullopt;
    }
    std::int64_t ms = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + newline, ms);
    if (ec != std::errc() || end != value.data() + newline) {
      return std::nullopt;
    }
    // Compared in milliseconds: no conversion of an absurd number can overflow.
    const std::int64_t now_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(wall_clock_.Now().time_since_epoch())
            .count();
    if (ms < kEarliestFetch.count() || ms > now_ms + options_.max_clock_skew.count()) {
      return std::nullopt;
    }
    const std::string_view payload = std::string_view(value).substr(newline + 1);
    const std::optional<Decode> decode = DeserializeDecode(payload);
    if (!decode || CacheKey(decode->vin, decode->model_year) != key ||
        decode->fetched_at != WallTime(std::chrono::milliseconds(ms))) {
      return std::nullopt;
    }
    CacheEntry entry;
    entry.fetched_at = decode->fetched_at;
    entry.payload = std::string(payload);
    return entry;
  }

  fusebox::RedisClient& client_;
  fusebox::CircuitBreaker& breaker_;
  const WallClock& wall_clock_;
  const RedisCacheOptions options_;
  std::atomic<std::uint64_t> gets_{0}, hits_{0}, puts_{0}, errors_{0}, refused_{0};
  mutable fusebox::Mutex mu_;
  std::string last_error_ FUSEBOX_GUARDED_BY(mu_);
};

}  // namespace

std::unique_ptr<Cache> MakeRedisCache(fusebox::RedisClient& client,
                                      fusebox::CircuitBreaker& breaker, const WallClock& wall_clock,
                                      RedisCacheOptions options) {
  return std::make_unique<RedisCache>(client, breaker, wall_clock, std::move(options));
}

}  // namespace fusebox::gateway
