// UpstreamAnswer: the bytes an upstream sends on one connection after a request, read by the
// gateway's HTTP vPIC client's own reader (service/upstream_answer.h) from an in-memory stream.
//
// The input is everything the upstream sent before closing. It is read twice: once as it would
// arrive in one piece, once dribbled 7 bytes at a time; interim (1xx) answers, the final answer's
// status and body, and the error must not depend on how the bytes were split. Holds: the final
// answer is never an interim one (1xx) nor a 101; no more than kMaxInterimAnswers interim
// answers are set aside; the body fits the cap; a connection is reusable only after a whole
// keep-alive answer whose end the answer itself marks, with nothing read past it.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <string_view>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/beast/_experimental/test/stream.hpp>

#include "fuzz/fuzz_support.h"
#include "service/upstream_answer.h"
#include "vin_gateway/fuzz/fuzz_targets.h"

namespace fusebox::gateway::fuzz {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
using fusebox::fuzz::Check;

// Small enough that a fuzzer's input can cross it.
constexpr std::size_t kBodyLimit = 4096;

struct Reading {
  UpstreamAnswer got;
  std::size_t left_in_buffer = 0;
};

Reading ReadAll(net::io_context& io, std::string_view bytes, std::size_t read_size) {
  beast::test::stream stream(io);
  stream.read_size(read_size);
  stream.append(bytes);
  stream.close_remote();
  std::optional<Reading> reading;
  net::co_spawn(
      io,
      [&]() -> net::awaitable<void> {
        beast::flat_buffer buffer;
        Reading r;
        r.got = co_await ReadUpstreamAnswer(stream, buffer, kBodyLimit);
        r.left_in_buffer = buffer.size();
        reading = std::move(r);
      },
      [](const std::exception_ptr& e) { Check(e == nullptr); });
  io.restart();
  io.run();
  Check(reading.has_value());
  return std::move(*reading);
}

void CheckOne(const Reading& r) {
  const UpstreamAnswer& got = r.got;
  Check(got.interim <= kMaxInterimAnswers + 1);
  if (got.error) {
    Check(!got.reusable);
    return;
  }
  Check(!got.upgrade);
  Check(got.interim <= kMaxInterimAnswers);
  const unsigned status = got.response.result_int();
  Check(status < 100 || status >= 200);
  Check(got.response.body().size() <= kBodyLimit);
  if (got.reusable) {
    Check(got.response.keep_alive());
    Check(r.left_in_buffer == 0);
    // A body ended by the connection closing never leaves the connection reusable.
    Check(got.response.has_content_length() || got.response.chunked() || status == 204 ||
          status == 304);
  }
}

}  // namespace

int UpstreamAnswerRead(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  static net::io_context io;
  const Reading whole = ReadAll(io, bytes, static_cast<std::size_t>(-1));
  const Reading dribbled = ReadAll(io, bytes, 7);
  CheckOne(whole);
  CheckOne(dribbled);
  Check(static_cast<bool>(whole.got.error) == static_cast<bool>(dribbled.got.error));
  Check(whole.got.upgrade == dribbled.got.upgrade);
  Check(whole.got.interim == dribbled.got.interim);
  if (!whole.got.error) {
    Check(whole.got.response.result_int() == dribbled.got.response.result_int());
    Check(whole.got.response.body() == dribbled.got.response.body());
  }
  return 0;
}

}  // namespace fusebox::gateway::fuzz
