// One connection to a Redis server over Asio, plain TCP or TLS (OpenSSL), with hiredis used only
// for the wire format: commands are formatted with redisFormatCommandArgv (binary-safe) and
// replies parsed with its reader. Commands are pipelined: each is written as soon as it is sent,
// and its reply handler waits in a FIFO for the reply in that order. After Subscribe the
// connection is in pub/sub mode: every reply that no command waits for goes to the push handler.
//
// Strand discipline: every member, and every handler it calls, runs on `strand` (the one the
// connection was made with); nothing blocks. Each reply handler runs exactly once: with the
// reply, or with null when the connection is lost or closed first ("down"). The connection keeps
// itself alive while it has work in flight; Close (or a loss) drops every handler it holds, so
// an owner captured by a handler is released.
#pragma once

#include <hiredis/hiredis.h>

#include <array>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fusebox/clock.h"
#include "fusebox/redis_url.h"
#include "fusebox/status.h"
#include "fusebox/thread_annotations.h"

namespace fusebox::redis_internal {

using Strand = boost::asio::strand<boost::asio::any_io_executor>;

// The reply, or null when the connection went down first. It belongs to the connection and is
// freed when the handler returns.
using ReplyHandler = std::function<void(redisReply* reply)>;
// "" once connected (and, with TLS, the server verified), else why not.
using ConnectDone = std::function<void(const std::string& error)>;

// The TLS settings of `endpoint` made into a client context: verify the peer always, against the
// CA file or the system's store, with the client certificate when set. Errors name the file.
Result<std::shared_ptr<boost::asio::ssl::context>, std::string> MakeTlsContext(
    const RedisEndpoint& endpoint);

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  // `tls`: null for plain TCP; else a context from MakeTlsContext, and `server_name` the name
  // sent as SNI and checked against the server's certificate.
  static std::shared_ptr<Connection> Create(const Strand& strand,
                                            std::shared_ptr<boost::asio::ssl::context> tls,
                                            std::string server_name);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Resolves `host` (a name, IPv4 or IPv6), connects to the first address that answers, and
  // with TLS makes the handshake, all within `timeout`. `done` runs exactly once.
  void Connect(const std::string& host, std::uint16_t port, Duration timeout, ConnectDone done);

  // Sends one command; `on_reply` as above (at once with null when the connection is not open).
  void Send(const std::vector<std::string>& args, ReplyHandler on_reply);

  // Sends SUBSCRIBE (or any command of pub/sub mode) and enters pub/sub mode: from now on every
  // reply no Send waits for goes to `on_push` (the subscribe confirmations too).
  void Subscribe(const std::vector<std::string>& args, ReplyHandler on_push);

  // Runs once when an open connection is lost (read or write error, the server closed it, a
  // protocol error), after every pending handler got its null; not on Close.
  void OnLost(std::function<void(const std::string& why)> on_lost);

  // Closes at once: pending replies get null, a pending Connect gets `why`. Idempotent. May also
  // be called when no thread runs the strand (a shutdown), from the one thread that owns it.
  void Close(const std::string& why = "closed");

  bool open() const noexcept { return state_ == State::kOpen; }
  // Why the connection is closed ("read: Connection reset by peer", "tls: ..."); "" while open.
  const std::string& reason() const noexcept { return reason_; }
  bool tls() const noexcept { return tls_ != nullptr; }

 private:
  enum class State : std::uint8_t { kIdle, kConnecting, kOpen, kClosed };

  Connection(const Strand& strand, std::shared_ptr<boost::asio::ssl::context> tls,
             std::string server_name);

  boost::asio::ip::tcp::socket& Socket();
  void Connected(const boost::system::error_code& ec);
  void Handshaken(const boost::system::error_code& ec);
  void FinishConnect(const std::string& error);
  bool Format(const std::vector<std::string>& args);  // into out_; false: no memory
  void Flush();
  void Read();
  bool Parse();  // false: the stream is broken (the connection was failed)
  void Fail(const std::string& why);
  void AnswerAllDown();

  Strand strand_;
  std::shared_ptr<boost::asio::ssl::context> tls_;
  std::string server_name_;
  boost::asio::ip::tcp::resolver resolver_;
  std::optional<boost::asio::ip::tcp::socket> socket_;                            // plain
  std::optional<boost::asio::ssl::stream<boost::asio::ip::tcp::socket>> stream_;  // TLS
  boost::asio::steady_timer connect_timer_;
  State state_ = State::kIdle;
  bool timed_out_ = false;
  std::string reason_;
  std::string verify_error_;  // the first check the server's certificate failed
  Duration timeout_{};
  ConnectDone connect_done_;
  std::function<void(const std::string&)> on_lost_;
  ReplyHandler on_push_;
  bool pubsub_ = false;
  std::deque<ReplyHandler> pending_;
  std::string out_;      // formatted commands not yet handed to a write
  std::string writing_;  // the one write in flight
  bool write_in_flight_ = false;
  bool read_in_flight_ = false;
  std::array<char, std::size_t{16} * 1024> in_{};
  redisReader* reader_ = nullptr;
  std::size_t reader_peak_ = 0;  // the most the reader buffered since it was made
};

// What a login ends with: "" once every step answered, else why not ("AUTH: WRONGPASS ...",
// "SELECT: ...", "ROLE: ... is a replica", or "connection lost" when it went down meanwhile).
using LoginDone = std::function<void(const std::string& error)>;

// Logs in on a freshly connected `connection`: AUTH [USER] PASSWORD when `endpoint` has a
// password, SELECT DB when it is not 0, and with `check_primary` ROLE, which must say "master";
// PING when there is none of these (one answer proves the server speaks Redis).
// `done` runs exactly once, on the strand. The error never holds the password (Redis's refusals
// do not echo it).
void Login(const std::shared_ptr<Connection>& connection, const RedisEndpoint& endpoint,
           bool check_primary, LoginDone done);

// The outcome of Dial: logged-in connections to one server, or why there are none.
struct Dialed {
  std::vector<std::shared_ptr<Connection>> connections;
  std::string address;  // host:port ([v6]:port) of the server they go to
  std::string error;    // "" on success
};

struct DialOptions {
  const RedisEndpoint* endpoint = nullptr;
  std::shared_ptr<boost::asio::ssl::context> tls = nullptr;  // null: plain (or no TLS wanted)
  std::size_t count = 1;  // connections to open to the one server
  // Per connection: whether it selects the endpoint's DB (a subscriber needs none).
  std::vector<bool> select_db = {};
  Duration timeout = std::chrono::seconds(1);                  // connect + TLS + login
  Duration sentinel_timeout = std::chrono::milliseconds(500);  // per sentinel asked
};

// Opens `options.count` connections to the endpoint's server, logged in: with sentinels, asks
// them in turn for the primary's address first (each within sentinel_timeout) and checks ROLE on
// every connection. `done` runs exactly once, on the strand. The function returned cancels the
// dial (on the strand, or when no thread runs it): what it opened is closed, `done` gets an error.
std::function<void()> Dial(const Strand& strand, const DialOptions& options,
                           std::function<void(Dialed)> done);

// "host:port", an IPv6 host in brackets.
std::string FormatAddress(const std::string& host, std::uint16_t port);

// The server a client is linked to and when that last changed (a failover, with Sentinel), for
// /status and /metrics: written on the strand, read from any thread.
class PrimaryRecord {
 public:
  struct Snapshot {
    std::string address;  // "" before the first connection
    std::uint64_t changes = 0;
    std::optional<std::chrono::system_clock::time_point> last_change;
  };
  // A (re)connection to `address`: a change when it is not the one before.
  void Linked(const std::string& address);
  Snapshot Get() const;

 private:
  mutable Mutex mu_;
  Snapshot now_ FUSEBOX_GUARDED_BY(mu_);
};

}  // namespace fusebox::redis_internal
