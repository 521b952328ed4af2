#include "http/http_message.h"

#include <utility>
#include <variant>

#include <boost/json/serialize.hpp>

namespace fusebox::gateway {

HttpResponse ErrorResponse(TransportStatus status, std::string_view message) {
  HttpResponse response;
  response.status = HttpStatus(status);
  response.body = ErrorBody(status, message);
  response.log_status = std::string(ToString(status));
  return response;
}

HttpResponse JsonResponse(unsigned status, const boost::json::object& body,
                          std::string log_status) {
  HttpResponse response;
  response.status = status;
  response.body = boost::json::serialize(body);
  response.log_status = std::move(log_status);
  return response;
}

boost::asio::awaitable<HttpResponse> Awaited(HandlerResult result) {
  if (auto* at_once = std::get_if<HttpResponse>(&result)) {
    co_return std::move(*at_once);
  }
  co_return co_await std::get<boost::asio::awaitable<HttpResponse>>(std::move(result));
}

}  // namespace fusebox::gateway
