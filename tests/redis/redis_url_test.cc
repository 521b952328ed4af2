// ParseRedisUrl: the --fleet and --cache flags' grammar, redis://HOST:PORT[/DB].
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
  auto with_db = ParseRedisUrl("redis://cache-1.internal:7000/3");
  ASSERT_TRUE(with_db.has_value());
  EXPECT_EQ(with_db->host, "cache-1.internal");
  EXPECT_EQ(with_db->port, 7000);
  EXPECT_EQ(with_db->db, 3);
}

TEST(RedisUrlTest, RefusesMalformedUrlsSayingWhy) {
  for (const char* bad :
       {"", "redis://", "http://127.0.0.1:6379", "redis://127.0.0.1", "redis://:6379",
        "redis://host:0", "redis://host:65536", "redis://host:port", "redis://host:6379/",
        "redis://host:6379/x", "redis://ho st:6379", "redis://user@host:6379"}) {
    auto parsed = ParseRedisUrl(bad);
    ASSERT_FALSE(parsed.has_value()) << bad;
    EXPECT_NE(parsed.error().find("expected redis://HOST:PORT[/DB]"), std::string::npos) << bad;
  }
}

}  // namespace
}  // namespace fusebox
