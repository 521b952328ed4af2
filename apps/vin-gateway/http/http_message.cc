#include "http/http_message.h"

#include <boost/json/serialize.hpp>

namespace vin_gateway {

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

}  // namespace vin_gateway
