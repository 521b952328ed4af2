// A scripted VpicClient for unit tests: answers like vPIC, fails on command, can hang until
// cancelled (the budget) or hold every call until Release() (to pile up concurrent requests),
// and counts what reached it.
#pragma once

#include <chrono>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "service/vpic_client.h"

namespace fusebox::gateway::testing {

// A flat DecodeVinValues row for `vin`.
inline std::string VpicRowJson(const std::string& vin, const std::string& codes = "0") {
  return fmt::format(
      R"({{"VIN":"{}","Make":"FORD","Model":"F-150","ModelYear":"2021","Manufacturer":"FORD MOTOR COMPANY, USA","VehicleType":"TRUCK ","BodyClass":"Pickup","PlantCity":"DEARBORN","ABS":"","ErrorCode":"{}"}})",
      vin, codes);
}

inline std::string VpicBodyJson(const std::vector<std::string>& vins) {
  std::string rows;
  for (const std::string& vin : vins) {
    if (!rows.empty()) {
      rows += ',';
    }
    rows += VpicRowJson(vin);
  }
  return fmt::format(R"({{"Count":{},"Message":"ok","SearchCriteria":"","Results":[{}]}})",
                     vins.size(), rows);
}

class FakeVpicClient final : public VpicClient {
 public:
  enum class Mode { kOk, kStatus, kHang, kGarbage, kReset, kWrongVin, kSparse };

  Mode mode = Mode::kOk;
  unsigned status = 503;                         // for kStatus
  std::optional<fusebox::Duration> retry_after;  // for kStatus (e.g. 429)
  bool hold = false;                             // every call waits for Release()
  std::optional<UpstreamReply> scripted;         // when set, every call answers exactly this

  int calls = 0;
  int batch_calls = 0;
  int cancelled = 0;
  std::vector<std::string> asked;  // VINs, in order (batch items too)

  void Release() {
    hold = false;
    for (auto* timer : waiting_) {
      timer->cancel();
    }
  }
  std::size_t waiting() const { return waiting_.size(); }

  boost::asio::awaitable<UpstreamReply> DecodeVin(std::string vin, int model_year) override {
    (void)model_year;
    ++calls;
    asked.push_back(vin);
    std::vector<std::string> vins;  // not a braced list: GCC 12 rejects one inside co_await
    vins.push_back(vin);
    co_return co_await Answer(std::move(vins));
  }

  boost::asio::awaitable<UpstreamReply> DecodeBatch(std::vector<BatchItem> items) override {
    ++calls;
    ++batch_calls;
    std::vector<std::string> vins;
    for (const BatchItem& item : items) {
      asked.push_back(item.vin);
      vins.push_back(item.vin);
    }
    co_return co_await Answer(vins);
  }

 private:
  // Waits on a timer far in the future; Release() cancels it (the call goes on), and so does
  // the budget's terminal cancellation (then the call ends as cancelled).
  boost::asio::awaitable<bool> Wait() {
    boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor,
                                    std::chrono::hours(1));
    waiting_.push_back(&timer);
    co_await timer.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
    waiting_.remove(&timer);
    auto state = co_await boost::asio::this_coro::cancellation_state;
    co_return state.cancelled() == boost::asio::cancellation_type::none;
  }

  boost::asio::awaitable<UpstreamReply> Answer(std::vector<std::string> vins) {
    UpstreamReply reply;
    if (scripted) {
      co_return *scripted;
    }
    if (hold || mode == Mode::kHang) {
      const bool released = co_await Wait();
      if (!released || mode == Mode::kHang) {
        ++cancelled;
        reply.transport = UpstreamReply::Transport::kCancelled;
        co_return reply;
      }
    }
    switch (mode) {
      case Mode::kOk:
        reply.status = 200;
        reply.body = VpicBodyJson(vins);
        break;
      case Mode::kSparse:
        reply.status = 200;
        reply.body = fmt::format(
            R"({{"Results":[{{"VIN":"{}","Make":"","Model":"","ErrorCode":"6","Note":" "}}]}})",
            vins.front());
        break;
      case Mode::kStatus:
        reply.status = status;
        reply.body = "busy";
        reply.retry_after = retry_after;
        break;
      case Mode::kGarbage:
        reply.status = 200;
        reply.body = "<html>maintenance</html>";
        break;
      case Mode::kReset:
        reply.transport = UpstreamReply::Transport::kReset;
        reply.detail = "connection reset by peer";
        break;
      case Mode::kWrongVin:
        reply.status = 200;
        reply.body = VpicBodyJson({"3AKJHHDR1KSKX6688"});
        break;
      case Mode::kHang:
        break;
    }
    co_return reply;
  }

  std::list<boost::asio::steady_timer*> waiting_;
};

}  // namespace fusebox::gateway::testing
