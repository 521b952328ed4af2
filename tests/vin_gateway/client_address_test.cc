// The client address behind trusted proxies (apps/vin-gateway/http/client_address.h): the
// --trusted-proxy networks, the right-to-left walk of X-Forwarded-For, spoofing from an untrusted
// peer, IPv6, and malformed headers.
#include "http/client_address.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace fusebox::gateway {
namespace {

boost::asio::ip::address Ip(const char* text) { return boost::asio::ip::make_address(text); }

TrustedProxies Trust(const std::vector<std::string>& cidrs) {
  auto parsed = TrustedProxies::Parse(cidrs);
  EXPECT_TRUE(parsed) << parsed.error();
  return parsed ? *parsed : TrustedProxies{};
}

std::string ParseError(const std::string& cidr) {
  auto parsed = TrustedProxies::Parse({"127.0.0.1/32", cidr});
  return parsed ? "" : parsed.error();
}

TEST(TrustedProxiesTest, ParsesIpv4AndIpv6NetworksAndBareHosts) {
  const TrustedProxies trusted = Trust({"10.0.0.0/8", "192.168.1.7", "::1/128", "fd00::/8"});
  EXPECT_TRUE(trusted.Contains(Ip("10.200.3.4")));
  EXPECT_FALSE(trusted.Contains(Ip("11.0.0.1")));
  EXPECT_TRUE(trusted.Contains(Ip("192.168.1.7")));
  EXPECT_FALSE(trusted.Contains(Ip("192.168.1.8")));
  EXPECT_TRUE(trusted.Contains(Ip("::1")));
  EXPECT_TRUE(trusted.Contains(Ip("fd12:3456::9")));
  EXPECT_FALSE(trusted.Contains(Ip("2001:db8::1")));
  // A dual-stack listener reports IPv4 peers as IPv4-mapped IPv6.
  EXPECT_TRUE(trusted.Contains(Ip("::ffff:10.1.2.3")));
  EXPECT_TRUE(Trust({"0.0.0.0/0"}).Contains(Ip("203.0.113.9")));
  EXPECT_TRUE(TrustedProxies{}.empty());
  EXPECT_FALSE(TrustedProxies{}.Contains(Ip("127.0.0.1")));
}

TEST(TrustedProxiesTest, ABadNetworkIsRefusedNamingTheFlagAndTheValue) {
  EXPECT_EQ(ParseError("10.0.0.0/33"),
            "--trusted-proxy: '10.0.0.0/33' is not an IPv4 or IPv6 network (prefix 33 > 32)");
  EXPECT_EQ(ParseError("::1/129"),
            "--trusted-proxy: '::1/129' is not an IPv4 or IPv6 network (prefix 129 > 128)");
  EXPECT_EQ(ParseError("10.0.0.0/99999999999999999999"),
            "--trusted-proxy: '10.0.0.0/99999999999999999999' is not an IPv4 or IPv6 network "
            "(prefix 99999999999999999999 > 32)");
  EXPECT_EQ(ParseError("localhost/8"),
            "--trusted-proxy: 'localhost/8' is not an IPv4 or IPv6 network ('localhost' is not an "
            "IP address)");
  EXPECT_EQ(ParseError(""),
            "--trusted-proxy: '' is not an IPv4 or IPv6 network ('' is not an IP address)");
  EXPECT_EQ(ParseError("10.0.0.0/"),
            "--trusted-proxy: '10.0.0.0/' is not an IPv4 or IPv6 network (prefix '' is not a "
            "number)");
  EXPECT_EQ(ParseError("10.0.0.0/8x"),
            "--trusted-proxy: '10.0.0.0/8x' is not an IPv4 or IPv6 network (prefix '8x' is not a "
            "number)");
  EXPECT_EQ(ParseError("10.0.0.0/-8"),
            "--trusted-proxy: '10.0.0.0/-8' is not an IPv4 or IPv6 network (prefix '-8' is not a "
            "number)");
  EXPECT_EQ(ParseError("10.0.0.1/8"),
            "--trusted-proxy: '10.0.0.1/8' is not an IPv4 or IPv6 network (host bits set: the "
            "network is 10.0.0.0/8)");
  EXPECT_EQ(ParseError("fd00::1/8"),
            "--trusted-proxy: 'fd00::1/8' is not an IPv4 or IPv6 network (host bits set: the "
            "network is fd00::/8)");
  EXPECT_EQ(ParseError("10.0.0.0/8"), "");
}

TEST(ClientAddressTest, WithoutTrustedProxiesTheClientIsThePeer) {
  const ClientAddress who = TrustedProxies{}.Resolve(Ip("127.0.0.1"), "203.0.113.7");
  EXPECT_EQ(who.address, "127.0.0.1");
  EXPECT_FALSE(who.forwarded);
  EXPECT_FALSE(who.malformed_header);
}

TEST(ClientAddressTest, AHeaderFromAnUntrustedPeerIsIgnored) {
  const TrustedProxies trusted = Trust({"10.0.0.0/8"});
  // A client writing its own X-Forwarded-For to get a fresh rate-limit budget.
  for (const char* spoofed : {"1.2.3.4", "10.0.0.5", "garbage", "1.2.3.4, 5.6.7.8"}) {
    const ClientAddress who = trusted.Resolve(Ip("198.51.100.23"), spoofed);
    EXPECT_EQ(who.address, "198.51.100.23") << spoofed;
    EXPECT_FALSE(who.forwarded);
    EXPECT_FALSE(who.malformed_header) << "an untrusted peer's header is not even read";
  }
}

TEST(ClientAddressTest, ATrustedPeerWithoutHeaderIsTheClient) {
  const TrustedProxies trusted = Trust({"127.0.0.1/32"});
  EXPECT_EQ(trusted.Resolve(Ip("127.0.0.1"), "").address, "127.0.0.1");
  EXPECT_EQ(trusted.Resolve(Ip("127.0.0.1"), "  ").address, "127.0.0.1");
  EXPECT_FALSE(trusted.Resolve(Ip("127.0.0.1"), "").malformed_header);
}

TEST(ClientAddressTest, TheWalkGoesRightToLeftSkippingTrustedProxies) {
  const TrustedProxies trusted = Trust({"10.0.0.0/8", "127.0.0.1/32"});
  // One proxy: the element it appended.
  EXPECT_EQ(trusted.Resolve(Ip("127.0.0.1"), "203.0.113.7").address, "203.0.113.7");
  EXPECT_TRUE(trusted.Resolve(Ip("127.0.0.1"), "203.0.113.7").forwarded);
  // Two proxies (an outer one at 10.0.0.2): skip it.
  EXPECT_EQ(trusted.Resolve(Ip("127.0.0.1"), "203.0.113.7, 10.0.0.2").address, "203.0.113.7");
  // The client wrote its own header before the proxies appended: what lies left of the first
  // untrusted element is the client's to write and is never believed.
  EXPECT_EQ(trusted.Resolve(Ip("127.0.0.1"), "6.6.6.6, 203.0.113.7, 10.0.0.2").address,
            "203.0.113.7");
  EXPECT_EQ(trusted.Resolve(Ip("127.0.0.1"), "junk, 203.0.113.7").address, "203.0.113.7");
  EXPECT_FALSE(trusted.Resolve(Ip("127.0.0.1"), "junk, 203.0.113.7").malformed_header);
  // Every element trusted: the leftmost.
  EXPECT_EQ(trusted.Resolve(Ip("127.0.0.1"), "10.1.1.1,10.2.2.2 ,\t10.3.3.3").address, "10.1.1.1");
  // Several header fields, joined by the server with commas.
  EXPECT_EQ(trusted.Resolve(Ip("127.0.0.1"), "203.0.113.7,10.0.0.2").address, "203.0.113.7");
}

TEST(ClientAddressTest, Ipv6PeersAndElements) {
  const TrustedProxies trusted = Trust({"::1/128", "fd00::/8"});
  EXPECT_EQ(trusted.Resolve(Ip("::1"), "2001:db8::7").address, "2001:db8::7");
  EXPECT_EQ(trusted.Resolve(Ip("::1"), "2001:db8::7, fd00::2").address, "2001:db8::7");
  EXPECT_EQ(trusted.Resolve(Ip("::1"), "[2001:db8::7]").address, "2001:db8::7");
  EXPECT_EQ(trusted.Resolve(Ip("::1"), "203.0.113.7").address, "203.0.113.7");
  EXPECT_EQ(trusted.Resolve(Ip("2001:db8::99"), "203.0.113.7").address, "2001:db8::99");
  // An IPv4 proxy seen through a dual-stack listener, and an IPv4-mapped element.
  const TrustedProxies v4 = Trust({"127.0.0.1/32"});
  EXPECT_EQ(v4.Resolve(Ip("::ffff:127.0.0.1"), "203.0.113.7").address, "203.0.113.7");
  EXPECT_EQ(v4.Resolve(Ip("127.0.0.1"), "::ffff:203.0.113.7").address, "203.0.113.7");
}

TEST(ClientAddressTest, AMalformedHeaderFromATrustedPeerLeavesThePeer) {
  const TrustedProxies trusted = Trust({"127.0.0.1/32", "10.0.0.0/8"});
  for (const char* bad :
       {"unknown", "203.0.113.7:4711", "203.0.113.7, ", ",", "203.0.113.7,,", "garbage, 10.0.0.2",
        "[203.0.113.7]", "203.0.113.999", "\x01\x02", "203.0.113.7 10.0.0.2"}) {
    const ClientAddress who = trusted.Resolve(Ip("127.0.0.1"), bad);
    EXPECT_EQ(who.address, "127.0.0.1") << bad;
    EXPECT_TRUE(who.malformed_header) << bad;
    EXPECT_FALSE(who.forwarded) << bad;
  }
}

// Forty addresses of one IPv6 /64 behind a trusted proxy used to be forty rate-limit buckets: a
// host given a /64 picks a fresh address at will. They are one client key.
TEST(ClientKeyTest, FortyAddressesOfOneSlash64ShareOneKey) {
  const TrustedProxies trusted = Trust({"127.0.0.1/32"});
  std::set<std::string> keys;
  std::set<std::string> addresses;
  for (int i = 1; i <= 40; ++i) {
    const ClientAddress who = trusted.Resolve(
        Ip("127.0.0.1"), "2001:db8:1:2:" + std::to_string(i) + "::" + std::to_string(i * 7));
    ASSERT_TRUE(who.forwarded) << i;
    addresses.insert(who.address);
    keys.insert(ClientKey(who.ip));
  }
  EXPECT_EQ(addresses.size(), 40U);  // the log still tells them apart
  EXPECT_EQ(keys, (std::set<std::string>{"2001:db8:1:2::/64"}));
  // The next /64 is another client.
  EXPECT_EQ(ClientKey(Ip("2001:db8:1:3::1")), "2001:db8:1:3::/64");
}

TEST(ClientKeyTest, Ipv4IsPerAddressAndTheIpv6PrefixIsConfigurable) {
  EXPECT_EQ(ClientKey(Ip("203.0.113.7")), "203.0.113.7");
  EXPECT_EQ(ClientKey(Ip("203.0.113.8"), 1), "203.0.113.8");  // the prefix is IPv6's only
  // IPv4-mapped IPv6 (a dual-stack listener's IPv4 peers) is IPv4: never one /64 for them all.
  EXPECT_EQ(ClientKey(Ip("::ffff:203.0.113.7")), "203.0.113.7");
  EXPECT_EQ(ClientKey(Ip("2001:db8:aa:bb:1:2:3:4"), 48), "2001:db8:aa::/48");
  EXPECT_EQ(ClientKey(Ip("2001:db8:aa:bb:1:2:3:4"), 56), "2001:db8:aa::/56");
  EXPECT_EQ(ClientKey(Ip("2001:db8:aa:bb:1:2:3:4"), 128), "2001:db8:aa:bb:1:2:3:4/128");
  EXPECT_EQ(ClientKey(Ip("2001:db8::1"), 0), "::/1");               // clamped to 1
  EXPECT_EQ(ClientKey(Ip("2001:db8::1"), 500), "2001:db8::1/128");  // clamped to 128
  // The resolved client's parsed address matches its text, mapped ones unmapped.
  const TrustedProxies v4 = Trust({"127.0.0.1/32"});
  EXPECT_EQ(ClientKey(v4.Resolve(Ip("127.0.0.1"), "::ffff:198.51.100.4").ip), "198.51.100.4");
  EXPECT_EQ(ClientKey(v4.Resolve(Ip("::ffff:127.0.0.1"), "").ip), "127.0.0.1");
  EXPECT_EQ(ClientKey(v4.Resolve(Ip("127.0.0.1"), "junk").ip), "127.0.0.1");
}

}  // namespace
}  // namespace fusebox::gateway
