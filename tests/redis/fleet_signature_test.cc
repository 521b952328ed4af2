// Signed fleet messages (src/redis/fleet_signature.h): what a secret accepts and refuses.
#include "redis/fleet_signature.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace fusebox::redis_internal {
namespace {

constexpr std::int64_t kNow = 1'764'000'000'000;  // ms since 1970 (late 2025)
constexpr std::int64_t kDay = 86'400'000;
constexpr std::int64_t kMinute = 60'000;
constexpr std::string_view kMessage = "fusebox1 7 OPEN 20000000000 0 gw-1 vpic";

TEST(FleetSignatureTest, ASignedMessageVerifiesToItself) {
  const std::string signed_text = SignFleetMessage("s3cret-s3cret-16", kNow, kMessage);
  EXPECT_TRUE(signed_text.starts_with("fusebox1s 1764000000000 "));
  EXPECT_LE(signed_text.size(), kMessage.size() + kSignatureOverhead);
  const VerifiedMessage v =
      VerifyFleetMessage("s3cret-s3cret-16", signed_text, kNow, kDay, kMinute);
  EXPECT_EQ(v.check, SignatureCheck::kOk);
  EXPECT_EQ(v.message, kMessage);
}

TEST(FleetSignatureTest, AnotherSecretOrAnyChangedByteIsABadMac) {
  const std::string signed_text = SignFleetMessage("s3cret-s3cret-16", kNow, kMessage);
  EXPECT_EQ(VerifyFleetMessage("another-secret-16", signed_text, kNow, kDay, kMinute).check,
            SignatureCheck::kBadMac);
  for (std::size_t i = kSignedPrefix.size(); i < signed_text.size(); ++i) {
    std::string altered = signed_text;
    altered[i] = altered[i] == '1' ? '2' : '1';
    const SignatureCheck check =
        VerifyFleetMessage("s3cret-s3cret-16", altered, kNow, kDay, kMinute).check;
    EXPECT_NE(check, SignatureCheck::kOk) << "byte " << i;
  }
}

TEST(FleetSignatureTest, UnsignedOrMalformedIsUnsigned) {
  for (const std::string_view text :
       {kMessage, std::string_view("fusebox1s"), std::string_view("fusebox1s x abc fusebox1"),
        std::string_view("fusebox1s 123 short fusebox1 7 OPEN"), std::string_view("")}) {
    EXPECT_EQ(VerifyFleetMessage("s3cret-s3cret-16", text, kNow, kDay, kMinute).check,
              SignatureCheck::kUnsigned)
        << text;
  }
}

TEST(FleetSignatureTest, ARecordingPlayedBackLaterOrAClockFarAheadIsRefused) {
  const std::string old = SignFleetMessage("s3cret-s3cret-16", kNow - kDay - 1, kMessage);
  EXPECT_EQ(VerifyFleetMessage("s3cret-s3cret-16", old, kNow, kDay, kMinute).check,
            SignatureCheck::kTooOld);
  const std::string just_in = SignFleetMessage("s3cret-s3cret-16", kNow - kDay, kMessage);
  EXPECT_EQ(VerifyFleetMessage("s3cret-s3cret-16", just_in, kNow, kDay, kMinute).check,
            SignatureCheck::kOk);
  const std::string ahead = SignFleetMessage("s3cret-s3cret-16", kNow + kMinute + 1, kMessage);
  EXPECT_EQ(VerifyFleetMessage("s3cret-s3cret-16", ahead, kNow, kDay, kMinute).check,
            SignatureCheck::kFuture);
  const std::string extreme = SignFleetMessage("s3cret-s3cret-16", INT64_MIN, kMessage);
  EXPECT_EQ(VerifyFleetMessage("s3cret-s3cret-16", extreme, kNow, kDay, kMinute).check,
            SignatureCheck::kTooOld);
}

}  // namespace
}  // namespace fusebox::redis_internal
