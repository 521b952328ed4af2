#include "http/request_framing.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/container/small_vector.hpp>

#include "http/transport_status.h"

namespace fusebox::gateway {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;

bool IEquals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return (x | 0x20) == (y | 0x20);
         });
}

std::string_view Trim(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) {
    v.remove_prefix(1);
  }
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) {
    v.remove_suffix(1);
  }
  return v;
}

// Whether every Transfer-Encoding field together names exactly one coding, `chunked` (the only
// one the gateway decodes). "chunked, identity", "gzip, chunked", "xchunked": no.
bool OnlyChunked(const http::fields& fields) {
  int codings = 0;
  bool chunked = true;
  const auto [first, last] = fields.equal_range(http::field::transfer_encoding);
  for (auto field = first; field != last; ++field) {
    std::string_view value(field->value().data(), field->value().size());
    for (;;) {
      const std::size_t comma = value.find(',');
      const std::string_view coding = Trim(value.substr(0, comma));
      if (!coding.empty()) {
        ++codings;
        chunked = chunked && IEquals(coding, "chunked");
      }
      if (comma == std::string_view::npos) {
        break;
      }
      value.remove_prefix(comma + 1);
    }
  }
  return chunked && codings == 1;
}

}  // namespace

bool DowngradeMinorVersion(beast::flat_buffer& buffer) {
  const auto data = buffer.data();
  char* bytes = static_cast<char*>(data.data());
  const std::string_view text(bytes, data.size());
  const std::string_view line = text.substr(0, text.find('\n'));
  const std::size_t at = line.find(" HTTP/1.");
  if (at == std::string_view::npos || at + 8 >= line.size()) {
    return false;
  }
  char& minor = bytes[at + 8];
  if (minor < '2' || minor > '9') {
    return false;
  }
  minor = '1';
  return true;
}

bool HasObsFold(std::string_view header) {
  // Each line ends in CRLF: a fold is a line feed followed by SP or HTAB. The header block ends
  // in an empty line, so nothing follows its last line feed.
  for (std::size_t at = header.find('\n'); at != std::string_view::npos && at + 1 < header.size();
       at = header.find('\n', at + 1)) {
    if (header[at + 1] == ' ' || header[at + 1] == '\t') {
      return true;
    }
  }
  return false;
}

void HeaderReadBuffer::consume(std::size_t n) {
  const auto data = buffer_.data();
  const std::string_view consumed(static_cast<const char*>(data.data()), std::min(n, data.size()));
  obs_fold_ = obs_fold_ || HasObsFold(consumed);
  buffer_.consume(n);
}

std::optional<HttpResponse> FramingRefusal(const http::request_parser<http::string_body>& parser,
                                           bool obs_fold) {
  if (obs_fold) {
    return ErrorResponse(TransportStatus::kBadRequest,
                         "Header fields folded onto a second line (obs-fold) are not accepted.");
  }
  const http::request_header<>& header = parser.get().base();
  if (header.count(http::field::transfer_encoding) > 0) {
    if (header.version() < 11) {
      return ErrorResponse(TransportStatus::kBadRequest,
                           "HTTP/1.0 requests cannot use Transfer-Encoding.");
    }
    if (!parser.chunked() || !OnlyChunked(header)) {
      return ErrorResponse(TransportStatus::kBadRequest,
                           "Transfer-Encoding must be exactly 'chunked'.");
    }
  }
  const std::size_t hosts = header.count(http::field::host);
  if (hosts > 1 || (hosts == 0 && header.version() >= 11)) {
    return ErrorResponse(TransportStatus::kBadRequest,
                         "An HTTP/1.1 request needs exactly one Host header.");
  }
  return std::nullopt;
}

bool ExpectsContinue(const http::request_header<>& header) {
  if (header.version() < 11) {
    return false;  // HTTP/1.0 clients do not wait for 100 Continue (RFC 9110 10.1.1)
  }
  const auto it = header.find(http::field::expect);
  return it != header.end() &&
         IEquals(Trim(std::string_view(it->value().data(), it->value().size())), "100-continue");
}

std::optional<HttpResponse> ReadFailureResponse(const boost::system::error_code& ec) {
  if (ec == http::error::header_limit) {
    return ErrorResponse(TransportStatus::kHeadersTooLarge);
  }
  if (ec == http::error::body_limit) {
    return ErrorResponse(TransportStatus::kPayloadTooLarge);
  }
  if (ec == beast::error::timeout) {
    return ErrorResponse(TransportStatus::kRequestTimeout);
  }
  if (ec.category() == http::make_error_code(http::error::bad_version).category() &&
      ec != http::error::end_of_stream && ec != http::error::partial_message) {
    return ErrorResponse(TransportStatus::kBadRequest, "The request is not valid HTTP/1.1.");
  }
  return std::nullopt;  // the client left or the server is draining: just close
}

namespace {

// The names the server sets itself: a handler's header of one of these names replaces the
// server's field (as Beast's `set` would).
bool IsServerFieldName(std::string_view name) {
  return IEquals(name, "Server") || IEquals(name, "Content-Type") ||
         IEquals(name, "Cache-Control") || IEquals(name, "X-Content-Type-Options") ||
         IEquals(name, "X-Request-Id") || IEquals(name, "Connection") ||
         IEquals(name, "Content-Length");
}

// Whether the handler's headers leave every field where it is: none has a server field's name
// or an earlier header's.
bool HeadersReplaceNothing(const std::vector<std::pair<std::string, std::string>>& headers) {
  for (std::size_t i = 0; i < headers.size(); ++i) {
    if (IsServerFieldName(headers[i].first)) {
      return false;
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (IEquals(headers[i].first, headers[j].first)) {
        return false;
      }
    }
  }
  return true;
}

}  // namespace

void AppendResponseHead(const HttpResponse& response, unsigned version, std::string_view request_id,
                        bool keep_alive, std::string& out) {
  using std::string_view_literals::operator""sv;
  const unsigned code = response.status;
  const beast::string_view reason = http::obsolete_reason(static_cast<http::status>(code));
  std::array<char, 13> status_line{};
  std::memcpy(status_line.data(), "HTTP/1.1 200 ", status_line.size());
  status_line[5] = static_cast<char>('0' + (version / 10) % 10);
  status_line[7] = static_cast<char>('0' + version % 10);
  status_line[9] = static_cast<char>('0' + (code / 100) % 10);
  status_line[10] = static_cast<char>('0' + (code / 10) % 10);
  status_line[11] = static_cast<char>('0' + code % 10);
  out.append(status_line.data(), status_line.size());
  out.append(reason.data(), reason.size());
  // Content-Length even on a 304 (its 0 is what Beast 1.81 writes there too; clients ignore it).
  const fmt::format_int length(response.body_bytes().size());
  const std::string_view connection = version >= 11 && !keep_alive ? "close"sv
                                      : version < 11 && keep_alive ? "keep-alive"sv
                                                                   : ""sv;
  if (HeadersReplaceNothing(response.headers)) {
    // The usual answer: the fields in order, in a few appends of whole runs.
    out += "\r\nServer: vin-gateway\r\nContent-Type: "sv;
    out += response.content_type;
    out += "\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nX-Request-Id: "sv;
    out += request_id;
    out += "\r\n"sv;
    for (const auto& [name, value] : response.headers) {
      out += name;
      out += ": "sv;
      out += value;
      out += "\r\n"sv;
    }
    if (!connection.empty()) {
      out += "Connection: "sv;
      out += connection;
      out += "\r\n"sv;
    }
    out += "Content-Length: "sv;
    out.append(length.data(), length.size());
    out += "\r\n\r\n"sv;
    return;
  }
  // The header fields in the order Beast's message would hold them: setting a name that is
  // already there removes it and appends the new field at the end.
  using Field = std::pair<std::string_view, std::string_view>;
  boost::container::small_vector<Field, 12> fields;
  const auto set = [&fields](std::string_view name, std::string_view value) {
    fields.erase(std::remove_if(fields.begin(), fields.end(),
                                [name](const Field& field) { return IEquals(field.first, name); }),
                 fields.end());
    fields.emplace_back(name, value);
  };
  // The server's own five names are distinct: only what comes after them can replace a field.
  fields.emplace_back("Server", "vin-gateway");
  fields.emplace_back("Content-Type", response.content_type);
  fields.emplace_back("Cache-Control", "no-store");
  fields.emplace_back("X-Content-Type-Options", "nosniff");
  fields.emplace_back("X-Request-Id", request_id);
  for (const auto& [name, value] : response.headers) {
    set(name, value);
  }
  if (!connection.empty()) {
    set("Connection", connection);
  }
  set("Content-Length", std::string_view(length.data(), length.size()));
  out += "\r\n"sv;
  for (const auto& [name, value] : fields) {
    out += name;
    out += ": "sv;
    out += value;
    out += "\r\n"sv;
  }
  out += "\r\n"sv;
}

HttpRequest ToHttpRequest(http::request<http::string_body>&& request, std::string client) {
  HttpRequest in;
  in.method = std::string(request.method_string());
  in.target = std::string(request.target());
  if (auto it = request.find(http::field::authorization); it != request.end()) {
    in.authorization = std::string(it->value());
  }
  if (auto it = request.find(http::field::if_none_match); it != request.end()) {
    in.if_none_match = std::string(it->value());
  }
  // Only a body's type matters (the batch route's), and a cache hit is a GET: not looked up.
  if (request.method() == http::verb::post) {
    const auto [first_type, last_type] = request.equal_range(http::field::content_type);
    for (auto field = first_type; field != last_type; ++field) {
      if (field != first_type) {
        in.content_type += ", ";
      }
      in.content_type.append(field->value().data(), field->value().size());
    }
  }
  in.body = std::move(request.body());
  in.client = std::move(client);
  return in;
}

}  // namespace fusebox::gateway
