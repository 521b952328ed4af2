#include "http/client_address.h"

#include <algorithm>
#include <charconv>
#include <optional>

#include <fmt/format.h>

namespace fusebox::gateway {
namespace {

namespace ip = boost::asio::ip;

std::string NotANetwork(std::string_view cidr, std::string_view why) {
  return fmt::format("--trusted-proxy: '{}' is not an IPv4 or IPv6 network ({})", cidr, why);
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) {
    s.remove_suffix(1);
  }
  return s;
}

// One X-Forwarded-For element as an address: bare, or IPv6 in brackets. nullopt for anything else
// (a port, "unknown", an obfuscated identifier, garbage).
std::optional<ip::address> ElementAddress(std::string_view element) {
  element = Trim(element);
  if (element.size() > 2 && element.front() == '[' && element.back() == ']') {
    element = element.substr(1, element.size() - 2);
    boost::system::error_code ec;
    const ip::address_v6 v6 = ip::make_address_v6(element, ec);
    return ec ? std::nullopt : std::optional<ip::address>(v6);
  }
  boost::system::error_code ec;
  const ip::address address = ip::make_address(element, ec);
  return ec ? std::nullopt : std::optional<ip::address>(address);
}

// ::ffff:a.b.c.d is the IPv4 host a.b.c.d (what a dual-stack listener reports).
ip::address Unmapped(const ip::address& address) {
  if (address.is_v6() && address.to_v6().is_v4_mapped()) {
    return ip::make_address_v4(ip::v4_mapped, address.to_v6());
  }
  return address;
}

}  // namespace

fusebox::Result<TrustedProxies, std::string> TrustedProxies::Parse(
    const std::vector<std::string>& cidrs) {
  TrustedProxies out;
  for (const std::string& cidr : cidrs) {
    const std::size_t slash = cidr.find('/');
    const std::string_view host = std::string_view(cidr).substr(0, slash);
    boost::system::error_code ec;
    const ip::address address = ip::make_address(host, ec);
    if (ec || host.empty()) {
      return NotANetwork(cidr, fmt::format("'{}' is not an IP address", host));
    }
    const unsigned max_prefix = address.is_v4() ? 32 : 128;
    std::string text = cidr;
    if (slash == std::string::npos) {
      text += fmt::format("/{}", max_prefix);  // a bare address: one host
    } else {
      const std::string_view digits = std::string_view(cidr).substr(slash + 1);
      unsigned prefix = 0;
      const auto [end, err] = std::from_chars(digits.data(), digits.data() + digits.size(), prefix);
      if (err == std::errc::result_out_of_range) {
        return NotANetwork(cidr, fmt::format("prefix {} > {}", digits, max_prefix));
      }
      if (err != std::errc() || end != digits.data() + digits.size() || digits.empty()) {
        return NotANetwork(cidr, fmt::format("prefix '{}' is not a number", digits));
      }
      if (prefix > max_prefix) {
        return NotANetwork(cidr, fmt::format("prefix {} > {}", prefix, max_prefix));
      }
    }
    if (address.is_v4()) {
      const ip::network_v4 network = ip::make_network_v4(text, ec);
      if (ec) {
        return NotANetwork(cidr, ec.message());
      }
      if (network != network.canonical()) {
        return NotANetwork(
            cidr, fmt::format("host bits set: the network is {}", network.canonical().to_string()));
      }
      out.v4_.push_back(network);
    } else {
      const ip::network_v6 network = ip::make_network_v6(text, ec);
      if (ec) {
        return NotANetwork(cidr, ec.message());
      }
      if (network != network.canonical()) {
        return NotANetwork(
            cidr, fmt::format("host bits set: the network is {}", network.canonical().to_string()));
      }
      out.v6_.push_back(network);
    }
  }
  return out;
}

bool TrustedProxies::Contains(const ip::address& address) const {
  const ip::address a = Unmapped(address);
  if (a.is_v4()) {
    const ip::network_v4 host(a.to_v4(), 32);
    return std::any_of(v4_.begin(), v4_.end(),
                       [&](const ip::network_v4& n) { return host.is_subnet_of(n) || host == n; });
  }
  const ip::network_v6 host(a.to_v6(), 128);
  return std::any_of(v6_.begin(), v6_.end(),
                     [&](const ip::network_v6& n) { return host.is_subnet_of(n) || host == n; });
}

ClientAddress TrustedProxies::Resolve(const ip::address& peer,
                                      std::string_view forwarded_for) const {
  ClientAddress out{.address = peer.to_string(), .ip = Unmapped(peer)};
  if (empty() || Trim(forwarded_for).empty() || !Contains(peer)) {
    return out;
  }
  // From the right: each element was appended by the hop to its right, the nearest first.
  std::string_view rest = forwarded_for;
  std::optional<ip::address> leftmost_trusted;
  for (;;) {
    const std::size_t comma = rest.rfind(',');
    const std::string_view element =
        comma == std::string_view::npos ? rest : rest.substr(comma + 1);
    const std::optional<ip::address> address = ElementAddress(element);
    if (!address) {
      out.malformed_header = true;  // the peer, never garbage
      return out;
    }
    if (!Contains(*address)) {
      out.ip = Unmapped(*address);
      out.address = out.ip.to_string();
      out.forwarded = true;
      return out;
    }
    leftmost_trusted = address;
    if (comma == std::string_view::npos) {
      break;
    }
    rest = rest.substr(0, comma);
  }
  out.ip = Unmapped(*leftmost_trusted);  // every hop is a trusted proxy
  out.address = out.ip.to_string();
  out.forwarded = true;
  return out;
}

std::string ClientKey(const ip::address& address, unsigned ipv6_prefix) {
  const ip::address a = Unmapped(address);
  if (a.is_v4()) {
    return a.to_string();
  }
  const auto prefix = static_cast<unsigned short>(std::clamp(ipv6_prefix, 1U, 128U));
  return ip::network_v6(a.to_v6(), prefix).canonical().to_string();
}

}  // namespace fusebox::gateway
