// vin-gateway/http/client_address.h
//
// Who the client of a request is: the TCP peer, or, behind a reverse proxy the operator trusts
// (--trusted-proxy CIDR), the address that proxy wrote into X-Forwarded-For. The rate limit, the
// admin throttle and the access log all key on it (docs/http-api.md, "Client address").
//
// The rule, for a request from `peer` carrying X-Forwarded-For:
//   - `peer` is not inside a trusted network: the header is ignored (anyone can send one; a
//     client cannot buy itself a fresh rate-limit budget by writing a new address into it);
//   - otherwise the header's addresses are walked from the right (the one the nearest proxy
//     appended) skipping those that are themselves trusted proxies; the first untrusted one is
//     the client, or the leftmost when every one is trusted;
//   - an element that the walk reaches and that is not an IP address (empty, "unknown", a port
//     appended, any garbage) makes the header malformed: the client is then `peer`, never a
//     guess. What lies left of the client is never read (it is the client's own to write).
// Elements are separated by commas with optional blanks; an IPv6 element may be bracketed. An
// IPv4-mapped IPv6 peer (::ffff:10.0.0.1, a dual-stack listener) is matched as IPv4.
//
// Networks are IPv4 or IPv6 CIDRs ("10.0.0.0/8", "::1/128"); a bare address is one host. A
// network with host bits set ("10.0.0.1/8") is refused: it is most likely a typo for /32, and
// trusting a whole /8 by mistake would let anyone in it choose their address.
//
// The rate limit and the admin throttle key on ClientKey, not on the address: an IPv4 client
// (IPv4-mapped IPv6 included) is its address, an IPv6 client its /N network (--client-ipv6-prefix,
// default 64). One host, or one ISP customer, is usually given a whole /64 and may pick a fresh
// address in it at will: keyed per address it would get 2^64 budgets. The access log keeps the
// address itself.
//
// Thread safety: immutable after Parse; every member is const. Time: none.
//
// Example:
//   auto trusted = TrustedProxies::Parse({"127.0.0.1/32", "10.0.0.0/8"});
//   if (!trusted) die(trusted.error());  // "--trusted-proxy: '10.0.0.0/33' is not an IPv4 or
//                                        //  IPv6 network (prefix 33 > 32)"
//   ClientAddress who = trusted->Resolve(peer, "203.0.113.7, 10.0.0.2");  // "203.0.113.7"
//   ClientKey(make_address("2001:db8:1:2::7"), 64);                         // "2001:db8:1:2::/64"
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/network_v4.hpp>
#include <boost/asio/ip/network_v6.hpp>

#include "fusebox/status.h"

namespace fusebox::gateway {

// IPv6 clients share a rate-limit bucket per network of this prefix length unless configured.
inline constexpr unsigned kDefaultClientIpv6Prefix = 64;

struct ClientAddress {
  std::string address;            // "203.0.113.7", "2001:db8::1"
  boost::asio::ip::address ip;    // the same, parsed (an IPv4-mapped IPv6 one as IPv4)
  bool forwarded = false;         // taken from X-Forwarded-For
  bool malformed_header = false;  // a trusted peer sent a header that does not parse
};

class TrustedProxies {
 public:
  TrustedProxies() = default;  // trusts nobody: the client is always the peer

  // Every CIDR or the first that is not a network, as a sentence naming the flag and the value.
  static fusebox::Result<TrustedProxies, std::string> Parse(const std::vector<std::string>& cidrs);

  bool empty() const noexcept { return v4_.empty() && v6_.empty(); }
  bool Contains(const boost::asio::ip::address& address) const;

  // `forwarded_for`: every X-Forwarded-For field of the request joined by "," (empty: none).
  ClientAddress Resolve(const boost::asio::ip::address& peer, std::string_view forwarded_for) const;

 private:
  std::vector<boost::asio::ip::network_v4> v4_;
  std::vector<boost::asio::ip::network_v6> v6_;
};

// The key of `address` for the rate limit and the admin throttle: an IPv4 address (an IPv4-mapped
// IPv6 one included) as itself ("203.0.113.7"); an IPv6 address as its network of `ipv6_prefix`
// bits (1 to 128, clamped), "2001:db8:1:2::/64".
std::string ClientKey(const boost::asio::ip::address& address,
                      unsigned ipv6_prefix = kDefaultClientIpv6Prefix);

}  // namespace fusebox::gateway
