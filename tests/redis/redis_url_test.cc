// ParseRedisUrl and RedactRedisUrl: the --fleet and --cache flags' grammar,
// redis://[[USER]:PASSWORD@]HOST[:PORT][/DB], rediss:// (TLS) and redis+sentinel://, and what of
// it may be shown.
#include <gtest/gtest.h>

#include "fusebox/redis_url.h"

namespace fusebox {
namespace {

TEST(RedisUrlTest, ParsesHostPortAndDb) {
  auto plain = ParseRedisUrl("redis://127.0.0.1:6379");
  ASSERT_TRUE(plain.has_value());
  EXPECT_EQ(plain->host, "127.0.0.1");
  EXPECT_EQ(plain->port, 6379);
  EXPECT_EQ(plain->db, 0);
  EXPECT_EQ(plain->user, "");
  EXPECT_EQ(plain->password, "");
  auto with_db = ParseRedisUrl("redis://cache-1.internal:7000/3");
  ASSERT_TRUE(with_db.has_value());
  EXPECT_EQ(with_db->host, "cache-1.internal");
  EXPECT_EQ(with_db->port, 7000);
  EXPECT_EQ(with_db->db, 3);
}

TEST(RedisUrlTest, PortDefaultsTo6379AndIpv6HostsAreInBrackets) {
  auto no_port = ParseRedisUrl("redis://cache-1/2");
  ASSERT_TRUE(no_port.has_value()) << no_port.error();
  EXPECT_EQ(no_port->host, "cache-1");
  EXPECT_EQ(no_port->port, 6379);
  EXPECT_EQ(no_port->db, 2);
  auto v6 = ParseRedisUrl("redis://[::1]:6380/1");
  ASSERT_TRUE(v6.has_value()) << v6.error();
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 6380);
  EXPECT_EQ(v6->db, 1);
  auto v6_default = ParseRedisUrl("redis://[fd00::5]");
  ASSERT_TRUE(v6_default.has_value()) << v6_default.error();
  EXPECT_EQ(v6_default->host, "fd00::5");
  EXPECT_EQ(v6_default->port, 6379);
}

TEST(RedisUrlTest, UserAndPasswordArePercentDecoded) {
  auto acl = ParseRedisUrl("redis://fleet:s3cr%40t%3Ax@10.0.0.5:6379/2");
  ASSERT_TRUE(acl.has_value()) << acl.error();
  EXPECT_EQ(acl->user, "fleet");
  EXPECT_EQ(acl->password, "s3cr@t:x");
  EXPECT_EQ(acl->host, "10.0.0.5");
  EXPECT_EQ(acl->db, 2);
  auto password_only = ParseRedisUrl("redis://:hunter2@[::1]");
  ASSERT_TRUE(password_only.has_value()) << password_only.error();
  EXPECT_EQ(password_only->user, "");
  EXPECT_EQ(password_only->password, "hunter2");
  EXPECT_EQ(password_only->host, "::1");
}

TEST(RedisUrlTest, RefusesMalformedUrlsSayingWhy) {
  for (const char* bad : {"",
                          "redis://",
                          "http://127.0.0.1:6379",
                          "redis://:6379",
                          "redis://host:0",
                          "redis://host:65536",
                          "redis://host:port",
                          "redis://host:6379/",
                          "redis://host:6379/x",
                          "redis://ho st:6379",
                          "redis://user@host:6379",
                          "redis://host:",
                          "redis://::1:6379",
                          "redis://[::1",
                          "redis://[]:6379",
                          "redis://[::1]x",
                          "redis://[::g]:6379",
                          "redis://u:@host",
                          "redis://u:%zz@host",
                          "redis://u:ab%4@host",
                          "http://host",
                          "redis+cluster://host"}) {
    auto parsed = ParseRedisUrl(bad);
    ASSERT_FALSE(parsed.has_value()) << bad;
    EXPECT_NE(parsed.error().find("expected redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]"),
              std::string::npos)
        << bad;
  }
}

TEST(RedisUrlTest, RedissIsTheSameGrammarWithTls) {
  auto tls = ParseRedisUrl("rediss://fleet:pw@redis.internal:6380/2");
  ASSERT_TRUE(tls.has_value()) << tls.error();
  EXPECT_TRUE(tls->tls);
  EXPECT_EQ(tls->host, "redis.internal");
  EXPECT_EQ(tls->port, 6380);
  EXPECT_EQ(tls->db, 2);
  EXPECT_EQ(tls->user, "fleet");
  EXPECT_EQ(tls->password, "pw");
  EXPECT_FALSE(ParseRedisUrl("redis://host")->tls);
  auto v6 = ParseRedisUrl("rediss://[::1]");
  ASSERT_TRUE(v6.has_value());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 6379);
  for (const char* bad : {"rediss://", "rediss://host:0", "rediss://:@host", "rediss://h/x"}) {
    auto parsed = ParseRedisUrl(bad);
    ASSERT_FALSE(parsed.has_value()) << bad;
    EXPECT_NE(parsed.error().find("expected rediss://[[USER]:PASSWORD@]HOST[:PORT][/DB]"),
              std::string::npos)
        << parsed.error();
  }
  EXPECT_TRUE(IsRedisUrl("rediss://h"));
  EXPECT_TRUE(IsRedisUrl("redis+sentinel://h/m"));
  EXPECT_FALSE(IsRedisUrl("sqlite:x"));
}

TEST(RedisUrlTest, SentinelListsTheSentinelsAndTheMaster) {
  auto one = ParseRedisUrl("redis+sentinel://10.0.0.7/mymaster");
  ASSERT_TRUE(one.has_value()) << one.error();
  ASSERT_EQ(one->sentinels.size(), 1U);
  EXPECT_EQ(one->sentinels[0].host, "10.0.0.7");
  EXPECT_EQ(one->sentinels[0].port, 26379);
  EXPECT_EQ(one->master_name, "mymaster");
  EXPECT_EQ(one->db, 0);
  EXPECT_FALSE(one->tls);
  auto three = ParseRedisUrl("redis+sentinel://fleet:p%40ss@s1:5000,[::1]:5001,s3/fleet-primary/4");
  ASSERT_TRUE(three.has_value()) << three.error();
  ASSERT_EQ(three->sentinels.size(), 3U);
  EXPECT_EQ(three->sentinels[0].host, "s1");
  EXPECT_EQ(three->sentinels[0].port, 5000);
  EXPECT_EQ(three->sentinels[1].host, "::1");
  EXPECT_EQ(three->sentinels[1].port, 5001);
  EXPECT_EQ(three->sentinels[2].host, "s3");
  EXPECT_EQ(three->sentinels[2].port, 26379);
  EXPECT_EQ(three->master_name, "fleet-primary");
  EXPECT_EQ(three->db, 4);
  EXPECT_EQ(three->user, "fleet");
  EXPECT_EQ(three->password, "p@ss");
  for (const char* bad :
       {"redis+sentinel://s1:5000", "redis+sentinel://s1:5000/", "redis+sentinel://s1,,s2/m",
        "redis+sentinel://s1:0/m", "redis+sentinel://s1/m/x", "redis+sentinel://s1/m m",
        "redis+sentinel:///m", "redis+sentinel://:hunter2@s1"}) {
    auto parsed = ParseRedisUrl(bad);
    ASSERT_FALSE(parsed.has_value()) << bad;
    EXPECT_NE(parsed.error().find("expected redis+sentinel://[[USER]:PASSWORD@]HOST:PORT"),
              std::string::npos)
        << parsed.error();
    EXPECT_EQ(parsed.error().find("hunter2"), std::string::npos) << parsed.error();
  }
}

TEST(RedisUrlTest, ErrorsAndRedactionNeverShowThePassword) {
  auto bad = ParseRedisUrl("redis://fleet:hunter2@host:99999");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().find("hunter2"), std::string::npos) << bad.error();
  EXPECT_NE(bad.error().find("redis://fleet:***@host:99999"), std::string::npos) << bad.error();
  EXPECT_EQ(RedactRedisUrl("redis://fleet:hunter2@10.0.0.5:6379/2"),
            "redis://fleet:***@10.0.0.5:6379/2");
  EXPECT_EQ(RedactRedisUrl("redis://:hunter2@[::1]"), "redis://:***@[::1]");
  EXPECT_EQ(RedactRedisUrl("redis://hunter2@host"), "redis://***@host");
  EXPECT_EQ(RedactRedisUrl("redis://host:6379/1"), "redis://host:6379/1");
  EXPECT_EQ(RedactRedisUrl("redis://a:b@c@host"), "redis://a:***@host");
  EXPECT_EQ(RedactRedisUrl("rediss://:hunter2@host"), "rediss://:***@host");
  EXPECT_EQ(RedactRedisUrl("redis+sentinel://u:hunter2@s1,s2/m"), "redis+sentinel://u:***@s1,s2/m");
}

}  // namespace
}  // namespace fusebox
