#include "connection.h"

#include <hiredis/hiredis.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/write.hpp>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <system_error>
#include <utility>

namespace fusebox::redis_internal {
namespace {

namespace ssl = boost::asio::ssl;
using boost::asio::ip::tcp;

// The reader's buffer is kept up to this size; one that grew past it for a large reply is given
// back once the reply is consumed (hiredis itself would keep it until the next read).
constexpr std::size_t kKeptReaderBytes = std::size_t{64} * 1024;
// Past this, the freed heap is also returned to the system (glibc keeps a large freed block: its
// trim threshold grows with the largest block it has seen).
constexpr std::size_t kTrimAfterBytes = std::size_t{1024} * 1024;

std::string Milliseconds(Duration d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count()) + " ms";
}

bool IsAddress(const std::string& host) {
  boost::system::error_code ec;
  (void)boost::asio::ip::make_address(host, ec);
  return !ec;
}

// Why `path` cannot be opened for reading: "" if it can.
std::string Unreadable(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");  // NOLINT(cppcoreguidelines-owning-memory)
  if (file == nullptr) {
    return "cannot be read: " + std::generic_category().message(errno);
  }
  std::fclose(file);  // NOLINT(cppcoreguidelines-owning-memory)
  return "";
}

// OpenSSL's reason for `ec`, without the library's name in parentheses.
std::string Reason(const boost::system::error_code& ec) {
  std::string text = ec.message();
  if (const std::size_t paren = text.find(" ("); paren != std::string::npos) {
    text.resize(paren);
  }
  return text;
}

}  // namespace

std::string FormatAddress(const std::string& host, std::uint16_t port) {
  if (host.find(':') != std::string::npos) {
    return "[" + host + "]:" + std::to_string(port);
  }
  return host + ":" + std::to_string(port);
}

Result<std::shared_ptr<ssl::context>, std::string> MakeTlsContext(const RedisEndpoint& endpoint) {
  auto context = std::make_shared<ssl::context>(ssl::context::tls_client);
  SSL_CTX_set_min_proto_version(context->native_handle(), TLS1_2_VERSION);
  context->set_verify_mode(ssl::verify_peer);
  boost::system::error_code ec;
  const auto failed = [&](std::string_view what, const std::string& path, std::string why) {
    ERR_clear_error();
    return std::string(what) + " '" + path + "': " + std::move(why);
  };
  if (!endpoint.tls_ca_file.empty()) {
    if (std::string why = Unreadable(endpoint.tls_ca_file); !why.empty()) {
      return failed("CA file", endpoint.tls_ca_file, std::move(why));
    }
    if (context->load_verify_file(endpoint.tls_ca_file, ec); ec) {
      return failed("CA file", endpoint.tls_ca_file,
                    "no usable certificate in it (" + Reason(ec) + ")");
    }
  } else if (context->set_default_verify_paths(ec); ec) {
    ERR_clear_error();
    return "the system's CA store: " + Reason(ec);
  }
  if (endpoint.tls_cert_file.empty() != endpoint.tls_key_file.empty()) {
    return endpoint.tls_cert_file.empty()
               ? failed("key file", endpoint.tls_key_file, "has no certificate file beside it")
               : failed("certificate file", endpoint.tls_cert_file, "has no key file beside it");
  }
  if (!endpoint.tls_cert_file.empty()) {
    if (std::string why = Unreadable(endpoint.tls_cert_file); !why.empty()) {
      return failed("certificate file", endpoint.tls_cert_file, std::move(why));
    }
    if (context->use_certificate_chain_file(endpoint.tls_cert_file, ec); ec) {
      return failed("certificate file", endpoint.tls_cert_file,
                    "no usable certificate in it (" + Reason(ec) + ")");
    }
    if (std::string why = Unreadable(endpoint.tls_key_file); !why.empty()) {
      return failed("key file", endpoint.tls_key_file, std::move(why));
    }
    if (context->use_private_key_file(endpoint.tls_key_file, ssl::context::pem, ec); ec) {
      // OpenSSL checks the key against the certificate as it loads it ("key values mismatch").
      if (Reason(ec).find("mismatch") == std::string::npos) {
        return failed("key file", endpoint.tls_key_file,
                      "no usable private key in it (" + Reason(ec) + ")");
      }
    }
    if (ec || SSL_CTX_check_private_key(context->native_handle()) != 1) {
      return failed("key file", endpoint.tls_key_file,
                    "does not match the certificate '" + endpoint.tls_cert_file + "'");
    }
  }
  return context;
}

void PrimaryRecord::Linked(const std::string& address) {
  Locked lock(mu_);
  if (now_.address == address) {
    return;
  }
  if (!now_.address.empty()) {
    ++now_.changes;
    now_.last_change = std::chrono::system_clock::now();
  }
  now_.address = address;
}

PrimaryRecord::Snapshot PrimaryRecord::Get() const {
  Locked lock(mu_);
  return now_;
}

// ---- Connection ----

Connection::Connection(const Strand& strand, std::shared_ptr<ssl::context> tls,
                       std::string server_name)
    : strand_(strand),
      tls_(std::move(tls)),
      server_name_(std::move(server_name)),
      resolver_(strand),
      connect_timer_(strand),
      reader_(redisReaderCreate()) {}

Connection::~Connection() {
  if (reader_ != nullptr) {
    redisReaderFree(reader_);
  }
}

std::shared_ptr<Connection> Connection::Create(const Strand& strand,
                                               std::shared_ptr<ssl::context> tls,
                                               std::string server_name) {
  return std::shared_ptr<Connection>(
      new Connection(strand, std::move(tls), std::move(server_name)));
}

tcp::socket& Connection::Socket() {
  if (stream_) {
    return stream_->next_layer();
  }
  if (!socket_) {
    socket_.emplace(strand_);  // never connected: a closed socket to close
  }
  return *socket_;
}

void Connection::Connect(const std::string& host, std::uint16_t port, Duration timeout,
                         ConnectDone done) {
  if (state_ != State::kIdle || reader_ == nullptr) {
    done(state_ == State::kClosed ? reason_ : "connect: out of memory or already used");
    return;
  }
  state_ = State::kConnecting;
  connect_done_ = std::move(done);
  timeout_ = timeout;
  if (tls_) {
    stream_.emplace(strand_, *tls_);
  } else {
    socket_.emplace(strand_);
  }
  connect_timer_.expires_after(timeout);
  connect_timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    if (!ec && self->state_ == State::kConnecting) {
      self->timed_out_ = true;  // what is in flight now fails with operation_aborted
      self->resolver_.cancel();
      boost::system::error_code ignored;
      self->Socket().close(ignored);
    }
  });
  resolver_.async_resolve(
      host, std::to_string(port),
      [self = shared_from_this(), host](const boost::system::error_code& ec,
                                        const tcp::resolver::results_type& results) {
        if (self->state_ != State::kConnecting) {
          return;
        }
        if (ec) {
          self->FinishConnect(self->timed_out_
                                  ? "connect: no answer within " + Milliseconds(self->timeout_)
                                  : "resolve '" + host + "': " + ec.message());
          return;
        }
        boost::asio::async_connect(
            self->Socket(), results,
            [self](const boost::system::error_code& error, const tcp::endpoint& /*endpoint*/) {
              self->Connected(error);
            });
      });
}

void Connection::Connected(const boost::system::error_code& ec) {
  if (state_ != State::kConnecting) {
    return;
  }
  if (ec) {
    FinishConnect(timed_out_ ? "connect: no answer within " + Milliseconds(timeout_)
                             : "connect: " + ec.message());
    return;
  }
  boost::system::error_code ignored;
  Socket().set_option(tcp::no_delay(true), ignored);
  if (!stream_) {
    FinishConnect("");
    return;
  }
  // The server is always verified: its chain against the context's CAs, its name against
  // server_name_. The callback keeps the first reason, for an error that says which check failed.
  stream_->set_verify_mode(ssl::verify_peer);
  stream_->set_verify_callback([this, check = ssl::host_name_verification(server_name_)](
                                   bool preverified, ssl::verify_context& context) mutable {
    if (!preverified) {
      if (verify_error_.empty()) {
        X509_STORE_CTX* store = context.native_handle();
        verify_error_ = std::string("certificate verify failed: ") +
                        X509_verify_cert_error_string(X509_STORE_CTX_get_error(store));
      }
      return false;
    }
    if (!check(preverified, context)) {
      if (verify_error_.empty()) {
        verify_error_ = "the server's certificate is not for '" + server_name_ + "'";
      }
      return false;
    }
    return true;
  });
  if (!IsAddress(server_name_)) {
    // SNI takes a name only (RFC 6066); the certificate's address is still checked.
    // SSL_set_tlsext_host_name, without the macro's C cast.
    SSL_ctrl(
        stream_->native_handle(), SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
        const_cast<char*>(server_name_.c_str()));  // NOLINT(cppcoreguidelines-pro-type-const-cast)
  }
  stream_->async_handshake(ssl::stream_base::client,
                           [self = shared_from_this()](const boost::system::error_code& error) {
                             self->Handshaken(error);
                           });
}

void Connection::Handshaken(const boost::system::error_code& ec) {
  if (state_ != State::kConnecting) {
    return;
  }
  if (!ec) {
    FinishConnect("");
    return;
  }
  if (timed_out_) {
    FinishConnect("tls: no handshake within " + Milliseconds(timeout_));
  } else if (!verify_error_.empty()) {
    FinishConnect("tls: " + verify_error_);
  } else {
    FinishConnect("tls: handshake failed: " + Reason(ec));
  }
  ERR_clear_error();
}

void Connection::FinishConnect(const std::string& error) {
  connect_timer_.cancel();
  ConnectDone done = std::move(connect_done_);
  connect_done_ = nullptr;
  if (!error.empty()) {
    state_ = State::kClosed;
    reason_ = error;
    boost::system::error_code ignored;
    Socket().close(ignored);
  } else {
    state_ = State::kOpen;
    Read();
  }
  if (done) {
    done(error);
  }
}

bool Connection::Format(const std::vector<std::string>& args) {
  std::vector<const char*> argv;
  std::vector<std::size_t> lengths;
  argv.reserve(args.size());
  lengths.reserve(args.size());
  for (const std::string& a : args) {
    argv.push_back(a.data());
    lengths.push_back(a.size());
  }
  char* command = nullptr;
  const int length =
      redisFormatCommandArgv(&command, static_cast<int>(argv.size()), argv.data(), lengths.data());
  if (length < 0 || command == nullptr) {
    return false;
  }
  out_.append(command, static_cast<std::size_t>(length));
  redisFreeCommand(command);
  return true;
}

void Connection::Send(const std::vector<std::string>& args, ReplyHandler on_reply) {
  if (state_ != State::kOpen || !Format(args)) {
    if (on_reply) {
      on_reply(nullptr);
    }
    return;
  }
  pending_.push_back(std::move(on_reply));
  Flush();
}

void Connection::Subscribe(const std::vector<std::string>& args, ReplyHandler on_push) {
  if (state_ != State::kOpen) {
    return;
  }
  // Its confirmation is a push like the messages: no handler waits for it in the FIFO.
  pubsub_ = true;
  on_push_ = std::move(on_push);
  if (Format(args)) {
    Flush();
  }
}

void Connection::OnLost(std::function<void(const std::string&)> on_lost) {
  on_lost_ = std::move(on_lost);
}

void Connection::Flush() {
  if (write_in_flight_ || out_.empty() || state_ != State::kOpen) {
    return;
  }
  writing_.swap(out_);
  out_.clear();
  write_in_flight_ = true;
  auto on_written = [self = shared_from_this()](const boost::system::error_code& ec,
                                                std::size_t /*bytes*/) {
    self->write_in_flight_ = false;
    if (self->state_ != State::kOpen) {
      return;
    }
    if (ec) {
      self->Fail("write: " + ec.message());
      return;
    }
    if (self->writing_.capacity() > kKeptReaderBytes) {
      std::string().swap(self->writing_);  // a large command's buffer is not kept
    } else {
      self->writing_.clear();
    }
    self->Flush();
  };
  if (stream_) {
    boost::asio::async_write(*stream_, boost::asio::buffer(writing_), std::move(on_written));
  } else if (socket_) {
    boost::asio::async_write(*socket_, boost::asio::buffer(writing_), std::move(on_written));
  }
}

void Connection::Read() {
  if (read_in_flight_ || state_ != State::kOpen) {
    return;
  }
  read_in_flight_ = true;
  auto on_read = [self = shared_from_this()](const boost::system::error_code& ec,
                                             std::size_t bytes) {
    self->read_in_flight_ = false;
    if (self->state_ != State::kOpen) {
      return;
    }
    if (ec) {
      self->Fail(ec == boost::asio::error::eof ? std::string("the server closed the connection")
                                               : "read: " + Reason(ec));
      return;
    }
    if (redisReaderFeed(self->reader_, self->in_.data(), bytes) != REDIS_OK) {
      self->Fail(std::string("protocol: ") + self->reader_->errstr);
      return;
    }
    self->reader_peak_ = std::max(self->reader_peak_, self->reader_->len);
    if (self->Parse()) {
      self->Read();
    }
  };
  if (stream_) {
    stream_->async_read_some(boost::asio::buffer(in_), std::move(on_read));
  } else if (socket_) {
    socket_->async_read_some(boost::asio::buffer(in_), std::move(on_read));
  }
}

bool Connection::Parse() {
  while (state_ == State::kOpen) {
    void* raw = nullptr;
    if (redisReaderGetReply(reader_, &raw) != REDIS_OK) {
      Fail(std::string("protocol: ") + reader_->errstr);
      return false;
    }
    if (raw == nullptr) {
      break;
    }
    const std::unique_ptr<redisReply, void (*)(void*)> reply(static_cast<redisReply*>(raw),
                                                             &freeReplyObject);
    if (!pending_.empty()) {
      ReplyHandler handler = std::move(pending_.front());
      pending_.pop_front();
      if (handler) {
        handler(reply.get());
      }
    } else if (pubsub_) {
      if (ReplyHandler push = on_push_) {  // a copy: the handler may close the connection
        push(reply.get());
      }
    } else {
      Fail("protocol: a reply that no command asked for");
      return false;
    }
  }
  if (state_ != State::kOpen) {
    return false;
  }
  // Nothing unread and no reply begun: after the last reply the reader has started the next one
  // (ridx 0) without reading its type byte.
  const bool idle = reader_->pos == reader_->len && reader_->reply == nullptr &&
                    (reader_->ridx == -1 || (reader_->ridx == 0 && reader_->rstack[0].type < 0));
  if (reader_peak_ > kKeptReaderBytes && idle) {
    redisReader* fresh = redisReaderCreate();
    if (fresh != nullptr) {
      redisReaderFree(reader_);
      reader_ = fresh;
#if defined(__GLIBC__)
      if (reader_peak_ > kTrimAfterBytes) {
        ::malloc_trim(0);
      }
#endif
      reader_peak_ = 0;
    }
  }
  return true;
}

void Connection::Fail(const std::string& why) {
  if (state_ != State::kOpen) {
    return;
  }
  state_ = State::kClosed;
  reason_ = why;
  boost::system::error_code ignored;
  Socket().close(ignored);
  on_push_ = nullptr;
  std::function<void(const std::string&)> lost = std::move(on_lost_);
  on_lost_ = nullptr;
  AnswerAllDown();
  if (lost) {
    lost(why);
  }
}

void Connection::Close(const std::string& why) {
  if (state_ == State::kClosed) {
    return;
  }
  const State was = state_;
  state_ = State::kClosed;
  reason_ = why;
  resolver_.cancel();
  connect_timer_.cancel();
  if (socket_ || stream_) {
    boost::system::error_code ignored;
    Socket().close(ignored);
  }
  on_push_ = nullptr;
  on_lost_ = nullptr;
  if (was == State::kConnecting) {
    ConnectDone done = std::move(connect_done_);
    connect_done_ = nullptr;
    if (done) {
      done(why);
    }
  }
  AnswerAllDown();
}

void Connection::AnswerAllDown() {
  std::deque<ReplyHandler> pending = std::move(pending_);
  pending_.clear();
  for (ReplyHandler& handler : pending) {
    if (handler) {
      handler(nullptr);
    }
  }
}

// ---- Login ----

namespace {

std::string_view Text(const redisReply* r) {
  if (r == nullptr || (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_STATUS &&
                       r->type != REDIS_REPLY_ERROR)) {
    return {};
  }
  return {r->str, r->len};
}

struct LoginStep {
  std::vector<std::string> command;
  bool role = false;       // ROLE: the reply must say "master"
  bool any_reply = false;  // an error is an answer too (PING without a login: NOAUTH)
};

void RunLogin(const std::shared_ptr<Connection>& connection,
              const std::shared_ptr<std::vector<LoginStep>>& steps, std::size_t next,
              LoginDone done) {
  if (next == steps->size()) {
    done("");
    return;
  }
  const std::weak_ptr<Connection> weak = connection;
  connection->Send((*steps)[next].command, [weak, steps, next,
                                            done = std::move(done)](redisReply* reply) mutable {
    const std::shared_ptr<Connection> alive = weak.lock();
    const LoginStep& step = (*steps)[next];
    if (reply == nullptr || !alive) {
      done(step.command[0] + ": connection lost" +
           (alive && !alive->reason().empty() ? " (" + alive->reason() + ")" : ""));
    } else if (reply->type == REDIS_REPLY_ERROR && !step.any_reply) {
      done(step.command[0] + ": " + std::string(Text(reply)));
    } else if (step.role && (reply->type != REDIS_REPLY_ARRAY || reply->elements < 1 ||
                             Text(reply->element[0]) != "master")) {
      const std::string_view role = reply->type == REDIS_REPLY_ARRAY && reply->elements > 0
                                        ? Text(reply->element[0])
                                        : std::string_view("unknown");
      done("ROLE: the server is a " + std::string(role) + ", not the primary");
    } else {
      RunLogin(alive, steps, next + 1, std::move(done));
    }
  });
}

}  // namespace

void Login(const std::shared_ptr<Connection>& connection, const RedisEndpoint& endpoint,
           bool check_primary, LoginDone done) {
  auto steps = std::make_shared<std::vector<LoginStep>>();
  if (!endpoint.password.empty()) {
    steps->push_back({endpoint.user.empty()
                          ? std::vector<std::string>{"AUTH", endpoint.password}
                          : std::vector<std::string>{"AUTH", endpoint.user, endpoint.password}});
  }
  if (endpoint.db != 0) {
    steps->push_back({{"SELECT", std::to_string(endpoint.db)}});
  }
  if (check_primary) {
    steps->push_back({{"ROLE"}, true});
  }
  if (steps->empty()) {
    // One answer before the connection counts: a server that does not speak Redis here (a TLS
    // port reached without TLS) is found now, not by the first command.
    steps->push_back({{"PING"}, false, true});
  }
  RunLogin(connection, steps, 0, std::move(done));
}

// ---- Dial ----

namespace {

struct DialState : std::enable_shared_from_this<DialState> {
  DialState(const Strand& s, const DialOptions& o, std::function<void(Dialed)> d)
      : strand(s),
        endpoint(*o.endpoint),
        tls(o.tls),
        count(o.count),
        select_db(o.select_db),
        timeout(o.timeout),
        sentinel_timeout(o.sentinel_timeout),
        done(std::move(d)),
        timer(s) {}

  Strand strand;
  const RedisEndpoint endpoint;
  std::shared_ptr<ssl::context> tls;
  std::size_t count;
  std::vector<bool> select_db;
  Duration timeout;
  Duration sentinel_timeout;
  std::function<void(Dialed)> done;
  boost::asio::steady_timer timer;
  bool finished = false;
  std::uint64_t attempt = 0;  // the timer's: which sentinel query or dial it is for
  std::vector<std::string> sentinel_errors;
  std::shared_ptr<Connection> sentinel;
  std::vector<std::shared_ptr<Connection>> connections;
  std::size_t logged_in = 0;
  std::string host;
  std::uint16_t port = 0;

  void Start() {
    if (endpoint.sentinels.empty()) {
      host = endpoint.host;
      port = endpoint.port;
      Open();
    } else {
      Ask(0);
    }
  }

  // Arms the timer for the current attempt; `on_expiry` runs if it is still the current one.
  template <typename F>
  void Arm(Duration after, F on_expiry) {
    const std::uint64_t id = ++attempt;
    timer.expires_after(after);
    timer.async_wait([self = shared_from_this(), id, on_expiry = std::move(on_expiry)](
                         const boost::system::error_code& ec) mutable {
      if (!ec && id == self->attempt && !self->finished) {
        on_expiry(*self);
      }
    });
  }

  // Asks sentinel `i` (then the next ones) for the primary's address.
  void Ask(std::size_t i) {
    if (finished) {
      return;
    }
    if (i == endpoint.sentinels.size()) {
      std::string why = "sentinel: no sentinel gave the primary of '" + endpoint.master_name + "'";
      for (std::size_t k = 0; k < sentinel_errors.size(); ++k) {
        why += (k == 0 ? " (" : "; ") + sentinel_errors[k];
      }
      Finish(sentinel_errors.empty() ? why : why + ")");
      return;
    }
    const RedisHostPort& address = endpoint.sentinels[i];
    const std::string name = FormatAddress(address.host, address.port);
    sentinel = Connection::Create(strand, nullptr, "");
    const std::weak_ptr<Connection> weak = sentinel;
    Arm(sentinel_timeout, [weak, this_timeout = sentinel_timeout](DialState&) {
      if (auto s = weak.lock()) {
        s->Close("no answer within " + Milliseconds(this_timeout));
      }
    });
    auto next = [self = shared_from_this(), i, name](const std::string& why) {
      if (self->finished) {
        return;
      }
      if (self->sentinel) {
        self->sentinel->Close();
        self->sentinel.reset();
      }
      self->sentinel_errors.push_back(name + ": " + why);
      self->Ask(i + 1);
    };
    sentinel->Connect(
        address.host, address.port, sentinel_timeout,
        [self = shared_from_this(), weak, next](const std::string& error) {
          const std::shared_ptr<Connection> s = weak.lock();
          if (self->finished || !s) {
            return;
          }
          if (!error.empty()) {
            next(error);
            return;
          }
          s->Send({"SENTINEL", "get-master-addr-by-name", self->endpoint.master_name},
                  [self, weak, next](redisReply* reply) {
                    if (self->finished) {
                      return;
                    }
                    const std::shared_ptr<Connection> alive = weak.lock();
                    if (reply == nullptr) {
                      next(alive ? alive->reason() : std::string("connection lost"));
                      return;
                    }
                    if (reply->type == REDIS_REPLY_ERROR) {
                      next(std::string(Text(reply)));
                      return;
                    }
                    unsigned value = 0;
                    const std::string_view port_text =
                        reply->type == REDIS_REPLY_ARRAY && reply->elements == 2
                            ? Text(reply->element[1])
                            : std::string_view();
                    const auto [end, ec] = std::from_chars(
                        port_text.data(), port_text.data() + port_text.size(), value);
                    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2 ||
                        ec != std::errc() || end != port_text.data() + port_text.size() ||
                        value == 0 || value > 65535 || Text(reply->element[0]).empty()) {
                      next("does not know the primary of '" + self->endpoint.master_name + "'");
                      return;
                    }
                    self->host = std::string(Text(reply->element[0]));
                    self->port = static_cast<std::uint16_t>(value);
                    if (self->sentinel) {
                      self->sentinel->Close();
                      self->sentinel.reset();
                    }
                    self->Open();
                  });
        });
  }

  // Opens the connections to host:port and logs each in.
  void Open() {
    if (finished) {
      return;
    }
    const std::string address = FormatAddress(host, port);
    Arm(timeout, [address, limit = timeout](DialState& self) {
      self.Finish("timeout: no login at " + address + " within " + Milliseconds(limit));
    });
    const std::string server_name = endpoint.tls_server_name.empty()
                                        ? (endpoint.sentinels.empty() ? endpoint.host : host)
                                        : endpoint.tls_server_name;
    for (std::size_t i = 0; i < count; ++i) {
      connections.push_back(Connection::Create(strand, tls, server_name));
    }
    for (std::size_t i = 0; i < count; ++i) {
      const std::weak_ptr<Connection> weak = connections[i];
      connections[i]->Connect(host, port, timeout,
                              [self = shared_from_this(), weak, i](const std::string& error) {
                                const std::shared_ptr<Connection> c = weak.lock();
                                if (self->finished || !c) {
                                  return;
                                }
                                if (!error.empty()) {
                                  self->Finish(error);
                                  return;
                                }
                                RedisEndpoint login = self->endpoint;
                                if (i < self->select_db.size() && !self->select_db[i]) {
                                  login.db = 0;
                                }
                                Login(c, login, !self->endpoint.sentinels.empty(),
                                      [self](const std::string& login_error) {
                                        if (self->finished) {
                                          return;
                                        }
                                        if (!login_error.empty()) {
                                          self->Finish(login_error);
                                        } else if (++self->logged_in == self->count) {
                                          self->Finish("");
                                        }
                                      });
                              });
    }
  }

  void Finish(const std::string& error) {
    if (finished) {
      return;
    }
    finished = true;
    ++attempt;
    timer.cancel();
    if (sentinel) {
      sentinel->Close();
      sentinel.reset();
    }
    Dialed result;
    result.address = FormatAddress(host, port);
    result.error = error;
    if (error.empty()) {
      result.connections = std::move(connections);
    } else {
      for (const std::shared_ptr<Connection>& c : connections) {
        c->Close("dial failed");
      }
    }
    connections.clear();
    std::function<void(Dialed)> callback = std::move(done);
    done = nullptr;
    callback(std::move(result));
  }
};

}  // namespace

std::function<void()> Dial(const Strand& strand, const DialOptions& options,
                           std::function<void(Dialed)> done) {
  auto state = std::make_shared<DialState>(strand, options, std::move(done));
  state->Start();
  return [weak = std::weak_ptr<DialState>(state)] {
    if (const std::shared_ptr<DialState> alive = weak.lock()) {
      alive->Finish("cancelled");
    }
  };
}

}  // namespace fusebox::redis_internal

namespace fusebox {

std::string CheckRedisTls(const RedisEndpoint& endpoint) {
  if (endpoint.tls_ca_file.empty() && endpoint.tls_cert_file.empty() &&
      endpoint.tls_key_file.empty()) {
    return "";
  }
  auto context = redis_internal::MakeTlsContext(endpoint);
  return context ? std::string() : context.error();
}

}  // namespace fusebox
