// Copyright 2026 The rfrpc Authors.

#include "rpc/tuner/profile.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rpc/tuner/test_profiles.h"

namespace rfrpc {
namespace tuner {
namespace {

using ::testing::HasSubstr;

SyntheticSpec Spec() {
  SyntheticSpec spec;
  spec.low = 256;
  spec.high = 1024;
  spec.max_retries = 3;
  spec.server_times_ns = {0, 5000};
  spec.ops = [](int r, uint32_t f, uint32_t t) {
    return 1e6 + 1000.0 * r - f - 0.01 * t;
  };
  return spec;
}

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return absl::StrCat(dir ? dir : "/tmp", "/", name, ".", ::getpid());
}

TEST(ProfileTest, RoundTripThroughTextAndFile) {
  absl::StatusOr<Profile> p = Profile::FromProto(MakeSyntheticProto(Spec()), "shm");
  ASSERT_TRUE(p.ok()) << p.status();
  const std::string path = TempPath("profile.txt");
  ASSERT_TRUE(p->Save(path).ok());
  absl::StatusOr<Profile> q = Profile::Load(path, "shm");
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ(q->ToText(), p->ToText());
  EXPECT_EQ(q->low_size(), 256u);
  EXPECT_EQ(q->high_size(), 1024u);
  EXPECT_EQ(q->max_retries(), 3);
  EXPECT_THAT(q->candidate_fetch_sizes(),
              ::testing::ElementsAre(256, 320, 384, 448, 512, 576, 640, 704,
                                     768, 832, 896, 960, 1024));
  EXPECT_DOUBLE_EQ(q->Throughput(2, 512, 0), 1e6 + 2000 - 512);
  EXPECT_DOUBLE_EQ(q->Throughput(2, 512, 5000), 1e6 + 2000 - 512 - 50);
  // Interpolated in P, clamped in F.
  EXPECT_DOUBLE_EQ(q->Throughput(1, 256, 2500), 1e6 + 1000 - 256 - 25);
  EXPECT_DOUBLE_EQ(q->Throughput(1, 4096, 0), 1e6 + 1000 - 1024);
  std::remove(path.c_str());
}

// A save that cannot put the profile in place (a directory there) says so
// and leaves no temporary file behind.
TEST(ProfileTest, AFailedSaveLeavesNothingBehind) {
  absl::StatusOr<Profile> p =
      Profile::FromProto(MakeSyntheticProto(Spec()), "shm");
  ASSERT_TRUE(p.ok()) << p.status();
  const std::string dir = TempPath("profile_dir");
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  const absl::Status s = p->Save(dir);
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
  struct stat st;
  EXPECT_NE(::stat((dir + ".tmp").c_str(), &st), 0) << dir << ".tmp is left";
  ::rmdir(dir.c_str());
}

TEST(ProfileTest, InterpolatesBetweenMeasuredFetchSizes) {
  TunerProfile proto = MakeSyntheticProto(Spec());
  // Keep only F = 256 and F = 1024 in every table.
  for (ThroughputTable& t : *proto.mutable_throughput()) {
    ThroughputTable kept;
    kept.set_server_time_ns(t.server_time_ns());
    for (const ThroughputPoint& pt : t.points()) {
      if (pt.fetch_size() == 256 || pt.fetch_size() == 1024) {
        *kept.add_points() = pt;
      }
    }
    t = kept;
  }
  absl::StatusOr<Profile> p = Profile::FromProto(proto, "");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_DOUBLE_EQ(p->Throughput(3, 640, 0), 1e6 + 3000 - 640);
}

TEST(ProfileTest, CorruptTextIsInvalidArgument) {
  absl::StatusOr<Profile> p = Profile::FromProto(MakeSyntheticProto(Spec()), "");
  ASSERT_TRUE(p.ok());
  std::string text = p->ToText();
  text = absl::StrReplaceAll(text, {{"low_size: 256", "low_size: 256 }}"}});
  absl::Status s = Profile::Parse(text, "shm").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("does not parse"));
  EXPECT_EQ(Profile::Parse("format_version: \"one\"", "").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Profile::Parse("no_such_field: 3", "").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ProfileTest, WrongVersionIsFailedPrecondition) {
  TunerProfile proto = MakeSyntheticProto(Spec());
  proto.set_format_version(kProfileFormatVersion + 1);
  absl::Status s = Profile::FromProto(proto, "shm").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("format_version is 2"));
  proto.set_format_version(0);  // A profile with no version at all.
  EXPECT_EQ(Profile::FromProto(proto, "").status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(ProfileTest, ForeignProviderIsFailedPrecondition) {
  SyntheticSpec spec = Spec();
  spec.provider = "verbs";
  const std::string text = Profile::FromProto(MakeSyntheticProto(spec), "")->ToText();
  absl::Status s = Profile::Parse(text, "shm").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("calibrated on provider \"verbs\""));
  EXPECT_TRUE(Profile::Parse(text, "verbs").ok());
  EXPECT_TRUE(Profile::Parse(text, "").ok());
}

TEST(ProfileTest, SemanticErrorsAreInvalidArgument) {
  TunerProfile bad = MakeSyntheticProto(Spec());
  bad.set_low_size(2048);  // L > H.
  EXPECT_EQ(Profile::FromProto(bad, "").status().code(),
            absl::StatusCode::kInvalidArgument);
  bad = MakeSyntheticProto(Spec());
  bad.set_max_retries(4);  // The tables have no R = 4 row.
  absl::Status s = Profile::FromProto(bad, "").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("no point for R=4"));
  bad = MakeSyntheticProto(Spec());
  bad.mutable_throughput(0)->mutable_points(0)->set_ops_per_sec(-1);
  EXPECT_EQ(Profile::FromProto(bad, "").status().code(),
            absl::StatusCode::kInvalidArgument);
  bad = MakeSyntheticProto(Spec());
  bad.mutable_throughput(0)->mutable_points(0)->set_ops_per_sec(
      std::numeric_limits<double>::infinity());
  EXPECT_EQ(Profile::FromProto(bad, "").status().code(),
            absl::StatusCode::kInvalidArgument);
  bad = MakeSyntheticProto(Spec());
  bad.clear_throughput();
  EXPECT_EQ(Profile::FromProto(bad, "").status().code(),
            absl::StatusCode::kInvalidArgument);
  bad = MakeSyntheticProto(Spec());
  bad.clear_provider();
  EXPECT_EQ(Profile::FromProto(bad, "").status().code(),
            absl::StatusCode::kInvalidArgument);
}

// Found by tuner_profile_fuzzer: L=32, H=4e9, fetch_step 1 asked for 4e9
// candidates (16 GB) and killed the process that loaded the file.
TEST(ProfileTest, TooManyCandidatesIsInvalidArgument) {
  TunerProfile bad = MakeSyntheticProto(Spec());
  bad.set_high_size(4000000000u);
  bad.set_fetch_step(1);
  absl::Status s = Profile::FromProto(bad, "").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("candidate fetch sizes"));
  // The widest grid allowed still loads.
  TunerProfile wide = MakeSyntheticProto(Spec());
  wide.set_low_size(64);
  wide.set_high_size(64 + (kMaxCandidateFetchSizes - 2) * 16);
  wide.set_fetch_step(16);
  EXPECT_TRUE(Profile::FromProto(wide, "").ok());
}

// Neither reads as a profile of format_version 0.
TEST(ProfileTest, EmptyFileOrDirectoryIsInvalidArgument) {
  const std::string empty = TempPath("empty.prof");
  { std::ofstream out(empty, std::ios::trunc); }
  absl::Status s = Profile::Load(empty, "").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("is empty"));
  const std::string dir = TempPath("a_dir");
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
  s = Profile::Load(dir, "").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("is a directory"));
}

TEST(ProfileTest, MissingFileIsNotFound) {
  EXPECT_EQ(Profile::Load("/nonexistent/profile.txt", "shm").status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace tuner
}  // namespace rfrpc
