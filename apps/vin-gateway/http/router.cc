#include "http/router.h"

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "core/answer_json.h"
#include "http/admin_route.h"
#include "http/metrics_route.h"
#include "http/request_target.h"
#include "http/static_assets.h"
#include "http/status_route.h"
#include "http/transport_status.h"
#include "http/web_assets.h"

namespace fusebox::gateway {
namespace {

namespace json = boost::json;
namespace net = boost::asio;

// "2011" -> 2011 within [1900, 2100]; nullopt otherwise.
std::optional<int> ParseModelYear(std::string_view text) {
  int year = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, year);
  if (ec != std::errc() || ptr != end || text.size() != 4 || year < 1900 || year > 2100) {
    return std::nullopt;
  }
  return year;
}

bool IEquals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return (x | 0x20) == (y | 0x20);
         });
}

// Whether `content_type` (every Content-Type field, joined by ", ") declares JSON: one field whose
// media type is application/json in any case, with any parameters (`; charset=utf-8`). Anything
// else, an empty one included, is refused: the media types a browser may send to another origin
// without asking it first (text/plain, application/x-www-form-urlencoded, multipart/form-data)
// must never start upstream calls, and a comma (two fields, or a list) never reads as one type.
bool DeclaresJson(std::string_view content_type) {
  if (content_type.find(',') != std::string_view::npos) {
    return false;
  }
  std::string_view media_type = content_type.substr(0, content_type.find(';'));
  while (!media_type.empty() && (media_type.front() == ' ' || media_type.front() == '\t')) {
    media_type.remove_prefix(1);
  }
  while (!media_type.empty() && (media_type.back() == ' ' || media_type.back() == '\t')) {
    media_type.remove_suffix(1);
  }
  return IEquals(media_type, "application/json");
}

// The 415 of a batch whose Content-Type is not JSON, naming what was sent (at most 64 bytes of it).
HttpResponse NotJsonResponse(std::string_view content_type) {
  if (content_type.empty()) {
    return ErrorResponse(TransportStatus::kUnsupportedMediaType,
                         "A batch must be sent with Content-Type: application/json; this request "
                         "has no Content-Type.");
  }
  constexpr std::size_t kShown = 64;
  return ErrorResponse(
      TransportStatus::kUnsupportedMediaType,
      fmt::format("A batch must be sent with Content-Type: application/json, not '{}{}'.",
                  content_type.substr(0, kShown), content_type.size() > kShown ? "..." : ""));
}

// The log's account of what `answer`'s request did with the upstream (HttpResponse::log_upstream).
void SetLogUpstream(HttpResponse& response, const DecodeAnswer& answer) {
  if (answer.led_call) {
    response.log_upstream = "call";
    if (answer.upstream_outcome) {
      response.log_upstream_outcome = std::string(fusebox::ToString(*answer.upstream_outcome));
    }
  } else if (answer.joined) {
    response.log_upstream = "joined";
  }
}

}  // namespace

HttpResponse AnswerResponse(DecodeAnswer answer) {
  HttpResponse response;
  response.status = answer.http_status();
  if (answer.rendered_body != nullptr) {
    response.shared_body = std::move(answer.rendered_body);
  } else {
    response.body = AnswerBody(answer);
  }
  if (HasRetryAfter(answer.status) && !answer.stale && answer.source != Source::kOffline) {
    response.headers.emplace_back("Retry-After",
                                  std::to_string(RetryAfterSeconds(answer.retry_after)));
  }
  response.log_status = std::string(ToString(answer.status));
  if (answer.check_digit) {
    response.log_vin = std::move(answer.vin);  // validated: VIN characters only
  } else if (answer.vin_readable) {
    response.log_vin = SanitizeUtf8(answer.vin);
  }
  response.log_source = std::string(ToString(answer.source));
  if (answer.stale) {
    response.log_source += "-stale";
  }
  response.upstream_latency = answer.upstream_latency;
  response.log_detail = std::move(answer.upstream_detail);
  SetLogUpstream(response, answer);
  return response;
}

HandlerResult Router::Handle(HttpRequest request) {
  std::optional<RequestTarget> target = ParseRequestTarget(request.target, 8);
  if (!target) {
    return ErrorResponse(TransportStatus::kBadRequest,
                         "The request target is not a valid URL path.");
  }
  if (target->too_many_segments) {
    return ErrorResponse(TransportStatus::kNotFound);
  }
  const std::vector<std::string>& segments = target->segments;
  std::optional<std::string> modelyear;
  std::optional<std::string> source;  // "offline": from NHTSA's snapshot only
  for (auto& [key, value] : target->params) {
    if (key == "modelyear") {
      modelyear = std::move(value);
    } else if (key == "source") {
      source = std::move(value);
    }
  }
  // HEAD is GET without the body (the server leaves the body out): allowed wherever GET is.
  const bool get = request.method == "GET" || request.method == "HEAD";
  const bool post = request.method == "POST";
  // nullopt when allowed; else 405 with the Allow header naming what is.
  const auto only = [&](bool allowed, const char* allow) {
    if (allowed) {
      return std::optional<HttpResponse>();
    }
    HttpResponse refused = ErrorResponse(TransportStatus::kMethodNotAllowed);
    refused.headers.emplace_back("Allow", allow);
    return std::optional<HttpResponse>(std::move(refused));
  };
  constexpr const char* kGetOnly = "GET, HEAD";
  constexpr const char* kPostOnly = "POST";

  if (segments.size() == 4 && segments[0] == "api" && segments[1] == "v1" && segments[2] == "vin") {
    if (segments[3] == "batch") {
      if (auto refused = only(post, kPostOnly)) {
        return std::move(*refused);
      }
      if (!DeclaresJson(request.content_type)) {
        return NotJsonResponse(request.content_type);
      }
      return DecodeBatch(std::move(request));
    }
    if (auto refused = only(get, kGetOnly)) {
      return std::move(*refused);
    }
    return DecodeOne(request, segments[3], modelyear, source);
  }
  if (segments.size() == 3 && segments[0] == "api" && segments[1] == "v1" && segments[2] == "vin") {
    // "/api/v1/vin/" with an empty segment: the VIN is empty.
    if (auto refused = only(get, kGetOnly)) {
      return std::move(*refused);
    }
    return DecodeOne(request, "", modelyear, source);
  }
  if (segments.size() == 1) {
    const std::string& name = segments[0];
    if (name == "healthz") {
      if (auto refused = only(get, kGetOnly)) {
        return std::move(*refused);
      }
      return JsonResponse(200, StatusJson(TransportStatus::kOk, "Serving."), "OK");
    }
    if (name == "readyz") {
      if (auto refused = only(get, kGetOnly)) {
        return std::move(*refused);
      }
      return ReadyResponse(deps_);
    }
    if (name == "status") {
      if (auto refused = only(get, kGetOnly)) {
        return std::move(*refused);
      }
      return StatusResponse(deps_);
    }
    if (name == "metrics") {
      if (auto refused = only(get, kGetOnly)) {
        return std::move(*refused);
      }
      return MetricsResponse(deps_);
    }
  }
  if (segments.empty() ||
      (segments.size() == 1 && (segments[0].empty() || segments[0] == "index.html"))) {
    if (auto refused = only(get, kGetOnly)) {
      return std::move(*refused);
    }
    return AssetResponse(*FindWebAsset("/index.html"), "/index.html", request.if_none_match);
  }
  if (segments.size() == 2 && segments[0] == "assets") {
    const std::string path = "/assets/" + segments[1];
    if (const WebAsset* asset = FindWebAsset(path)) {
      if (auto refused = only(get, kGetOnly)) {
        return std::move(*refused);
      }
      return AssetResponse(*asset, path, request.if_none_match);
    }
    return ErrorResponse(TransportStatus::kNotFound);
  }
  if (segments.size() == 4 && segments[0] == "admin" && segments[1] == "breakers") {
    if (auto refused = AdminAuthRefusal(deps_.admin_token, request.authorization,
                                        deps_.admin_throttle, request.client)) {
      return std::move(*refused);
    }
    if (auto refused = only(post, kPostOnly)) {
      return std::move(*refused);
    }
    return AdminCommand(deps_.registry, segments[2], segments[3]);
  }
  return ErrorResponse(TransportStatus::kNotFound);
}

HandlerResult Router::DecodeOne(const HttpRequest& request, std::string_view raw_vin,
                                const std::optional<std::string>& modelyear,
                                const std::optional<std::string>& source) {
  int model_year = 0;
  if (modelyear) {
    std::optional<int> year = ParseModelYear(*modelyear);
    if (!year) {
      return ErrorResponse(TransportStatus::kBadRequest,
                           "modelyear must be a four-digit year between 1900 and 2100.");
    }
    model_year = *year;
  }
  if (source) {
    if (*source != "offline") {
      return ErrorResponse(TransportStatus::kBadRequest, "source must be offline.");
    }
    if (!deps_.service.offline_snapshot()) {
      return ErrorResponse(TransportStatus::kNotFound,
                           "This gateway has no offline vPIC database.");
    }
    return AnswerResponse(deps_.service.DecodeOffline(raw_vin, model_year));
  }
  // A fresh hit in the in-process front, or an invalid VIN, is answered here and now; anything
  // else goes on in a coroutine (the cache backend, a flight, the upstream).
  DecodeService::Step step = deps_.service.Begin(raw_vin, model_year);
  if (step.done) {
    return AnswerResponse(std::move(step.answer));
  }
  return DecodeLater(std::move(step), request.client);
}

net::awaitable<HttpResponse> Router::DecodeLater(DecodeService::Step step, std::string client) {
  co_return AnswerResponse(co_await deps_.service.Decode(std::move(step), std::move(client)));
}

net::awaitable<HttpResponse> Router::DecodeBatch(HttpRequest request) {
  boost::system::error_code ec;
  json::value root = json::parse(request.body, ec);
  if (ec || !root.is_object()) {
    co_return ErrorResponse(TransportStatus::kBadRequest,
                            "The body must be a JSON object such as {\"vins\": [\"...\"]}.");
  }
  const json::object& object = root.get_object();
  const json::value* vins = object.if_contains("vins");
  if (vins == nullptr || !vins->is_array()) {
    co_return ErrorResponse(TransportStatus::kBadRequest,
                            "\"vins\" must be a list of VIN strings.");
  }
  const json::array& list = vins->get_array();
  if (list.empty() || list.size() > kMaxBatch) {
    co_return ErrorResponse(
        TransportStatus::kBadRequest,
        fmt::format("A batch holds 1 to {} VINs; this one has {}.", kMaxBatch, list.size()));
  }
  std::vector<std::string> raw_vins;
  raw_vins.reserve(list.size());
  for (const json::value& v : list) {
    if (!v.is_string()) {
      co_return ErrorResponse(TransportStatus::kBadRequest,
                              "\"vins\" must be a list of VIN strings.");
    }
    raw_vins.emplace_back(v.get_string().data(), v.get_string().size());
  }
  int model_year = 0;
  if (const json::value* year = object.if_contains("modelyear");
      year != nullptr && !year->is_null()) {
    std::optional<int> parsed;
    if (year->is_int64()) {
      parsed = ParseModelYear(std::to_string(year->get_int64()));
    } else if (year->is_string()) {
      parsed =
          ParseModelYear(std::string_view(year->get_string().data(), year->get_string().size()));
    }
    if (!parsed) {
      co_return ErrorResponse(TransportStatus::kBadRequest,
                              "modelyear must be a four-digit year between 1900 and 2100.");
    }
    model_year = *parsed;
  }
  std::vector<DecodeAnswer> answers =
      co_await deps_.service.DecodeBatch(std::move(raw_vins), model_year, request.client);
  json::array results;
  std::optional<fusebox::Duration> latency;
  const DecodeAnswer* call = nullptr;  // an answer of the batch's own upstream call
  for (const DecodeAnswer& answer : answers) {
    results.push_back(AnswerJson(answer));
    if (answer.upstream_latency) {
      latency = answer.upstream_latency;
    }
    if (answer.led_call && (call == nullptr || answer.upstream_outcome)) {
      call = &answer;
    }
  }
  json::object body = StatusJson(TransportStatus::kOk, "Batch answered; see each result.");
  body["results"] = std::move(results);
  HttpResponse response = JsonResponse(200, body, "OK");
  response.log_vin = fmt::format("batch:{}", answers.size());
  response.upstream_latency = latency;
  if (call != nullptr) {
    SetLogUpstream(response, *call);
  }
  co_return response;
}

}  // namespace fusebox::gateway
