// Copyright 2026 The rfrpc Authors.

#include "kvstore/ycsb/properties.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rfrpc {
namespace ycsb {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// Writes `text` to a fresh file under the test's temporary directory.
std::string WriteTempFile(const std::string& name, const std::string& text) {
  const char* dir = std::getenv("TEST_TMPDIR");
  std::string path = absl::StrCat(dir ? dir : "/tmp", "/", name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

TEST(PropertiesTest, JavaSyntax) {
  Properties p;
  ASSERT_TRUE(p.LoadString("# comment\n"
                           "  ! another comment\n"
                           "\n"
                           "a=1\n"
                           "b = two words \n"
                           "c:3\n"
                           "d 4\n"
                           "  e\t=\t5\n"
                           "f\n"
                           "g=x\\\n"
                           "    y\n"
                           "h=tab\\there\\u0041\n"
                           "key\\ with\\ spaces=k\n"
                           "i==j\r\n"
                           "j=last",
                           "mem")
                  .ok());
  EXPECT_EQ(p.GetOr("a", ""), "1");
  EXPECT_EQ(p.GetOr("b", ""), "two words ");
  EXPECT_EQ(p.GetOr("c", ""), "3");
  EXPECT_EQ(p.GetOr("d", ""), "4");
  EXPECT_EQ(p.GetOr("e", ""), "5");
  ASSERT_TRUE(p.Contains("f"));
  EXPECT_EQ(p.GetOr("f", "unset"), "");
  EXPECT_EQ(p.GetOr("g", ""), "xy");
  EXPECT_EQ(p.GetOr("h", ""), "tab\there" "A");
  EXPECT_EQ(p.GetOr("key with spaces", ""), "k");
  EXPECT_EQ(p.GetOr("i", ""), "=j");
  EXPECT_EQ(p.GetOr("j", ""), "last");
  EXPECT_FALSE(p.Contains("comment"));
  EXPECT_EQ(p.Find("g")->origin, "mem:10");
  EXPECT_EQ(p.Find("j")->origin, "mem:15");
}

TEST(PropertiesTest, LaterSourcesOverrideEarlier) {
  const std::string first =
      WriteTempFile("first", "recordcount=10\nfieldcount=3\nthreadcount=2\n");
  const std::string second = WriteTempFile("second", "recordcount=20\n");
  Properties p;
  ASSERT_TRUE(p.LoadFile(first).ok());
  ASSERT_TRUE(p.LoadFile(second).ok());
  ASSERT_TRUE(p.SetFromArgument("fieldcount=7").ok());
  EXPECT_EQ(p.GetOr("recordcount", ""), "20");
  EXPECT_EQ(p.Find("recordcount")->origin, second + ":1");
  EXPECT_EQ(p.GetOr("fieldcount", ""), "7");
  EXPECT_EQ(p.Find("fieldcount")->origin, "-p");
  EXPECT_EQ(p.GetOr("threadcount", ""), "2");

  absl::StatusOr<WorkloadSpec> spec = ParseWorkloadSpec(p, {}, nullptr);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->recordcount, 20);
  EXPECT_EQ(spec->fieldcount, 7);
  EXPECT_EQ(spec->threadcount, 2);
  EXPECT_EQ(spec->insertcount, 20);
}

TEST(PropertiesTest, MissingFileIsNotFound) {
  Properties p;
  EXPECT_EQ(p.LoadFile("/nonexistent/workloadz").code(),
            absl::StatusCode::kNotFound);
  // A folder opens but is no property file (it read as an empty one).
  const absl::Status dir = p.LoadFile("/tmp");
  EXPECT_EQ(dir.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(dir.message(), "property file \"/tmp\" is a folder");
}

TEST(PropertiesTest, EndlessOrHugeFileIsRefused) {
  // /dev/zero never ends: it used to be read until memory ran out.
  Properties p;
  const absl::Status zero = p.LoadFile("/dev/zero");
  EXPECT_EQ(zero.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(zero.message(), HasSubstr("\"/dev/zero\" is larger than"));
  const std::string big = WriteTempFile(
      "big", absl::StrCat("a=", std::string((size_t{1} << 20) - 1, 'x')));
  EXPECT_EQ(p.LoadFile(big).code(), absl::StatusCode::kInvalidArgument);
  // Exactly 1 MiB still loads.
  const std::string limit = WriteTempFile(
      "limit", absl::StrCat("a=", std::string((size_t{1} << 20) - 2, 'x')));
  EXPECT_TRUE(p.LoadFile(limit).ok());
}

TEST(PropertiesTest, BadArgument) {
  Properties p;
  EXPECT_EQ(p.SetFromArgument("novalue").code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(p.SetFromArgument("=x").code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(p.SetFromArgument("table=a=b").ok());
  EXPECT_EQ(p.GetOr("table", ""), "a=b");
}

TEST(PropertiesTest, MalformedValueNamesFileAndLine) {
  Properties p;
  ASSERT_TRUE(p.LoadString("recordcount=10\n"
                           "# c\n"
                           "\n"
                           "\n"
                           "\n"
                           "\n"
                           "fieldcount=x\n",
                           "workloada")
                  .ok());
  absl::StatusOr<WorkloadSpec> spec = ParseWorkloadSpec(p, {}, nullptr);
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(spec.status().message(),
            "workloada:7: fieldcount: expected integer, got \"x\"");
}

TEST(PropertiesTest, MalformedValuesOfEachType) {
  struct Case {
    std::string line;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"readproportion=lots",
       "w:1: readproportion: expected number, got \"lots\""},
      {"readproportion=1.5", "w:1: readproportion: expected number in [0, 1]"},
      {"readallfields=yes", "w:1: readallfields: expected true or false"},
      {"requestdistribution=gaussian",
       "w:1: requestdistribution: expected uniform, zipfian, latest, hotspot, "
       "sequential, exponential"},
      {"fieldlengthdistribution=latest",
       "w:1: fieldlengthdistribution: expected constant, uniform, zipfian"},
      {"insertorder=random", "w:1: insertorder: expected hashed or ordered"},
      {"recordcount=-5", "w:1: recordcount: expected non-negative integer"},
      {"keylength=3", "w:1: keylength: expected 0 or at least 5"},
      {"workload=site.ycsb.workloads.TimeSeriesWorkload",
       "w:1: workload: expected site.ycsb.workloads.CoreWorkload"},
      {"target=fast", "w:1: target: expected number"},
  };
  for (const Case& c : cases) {
    Properties p;
    p.Set("recordcount", "100");
    ASSERT_TRUE(p.LoadString(c.line, "w").ok());
    absl::StatusOr<WorkloadSpec> spec = ParseWorkloadSpec(p, {}, nullptr);
    EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument)
        << c.line;
    EXPECT_THAT(spec.status().message(), HasSubstr(c.message)) << c.line;
  }
}

TEST(PropertiesTest, InvalidCombinations) {
  {
    // A record too large to build is refused, not a std::bad_alloc.
    Properties p;
    ASSERT_TRUE(
        p.LoadString("fieldcount=1\nfieldlength=99999999999\n", "w").ok());
    absl::StatusOr<WorkloadSpec> spec = ParseWorkloadSpec(p, {}, nullptr);
    EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(spec.status().message(),
                HasSubstr("w:2: fieldcount (1) x fieldlength (99999999999) "
                          "exceeds the largest record, 1 GiB"));
    Properties q;
    ASSERT_TRUE(
        q.LoadString("fieldcount=1024\nfieldlength=1048576\n", "w").ok());
    EXPECT_TRUE(ParseWorkloadSpec(q, {}, nullptr).ok());
    ASSERT_TRUE(q.SetFromArgument("fieldcount=1025").ok());
    EXPECT_EQ(ParseWorkloadSpec(q, {}, nullptr).status().code(),
              absl::StatusCode::kInvalidArgument);
  }
  {
    Properties p;
    ASSERT_TRUE(
        p.LoadString("recordcount=100\ninsertstart=50\ninsertcount=60\n", "w")
            .ok());
    absl::StatusOr<WorkloadSpec> spec = ParseWorkloadSpec(p, {}, nullptr);
    EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(spec.status().message(), HasSubstr("w:3: insertstart (50)"));
  }
  {
    Properties p;
    ASSERT_TRUE(p.LoadString("dataintegrity=true\n"
                             "fieldlengthdistribution=uniform\n",
                             "w")
                    .ok());
    EXPECT_EQ(ParseWorkloadSpec(p, {}, nullptr).status().code(),
              absl::StatusCode::kInvalidArgument);
  }
  {
    Properties p;
    ASSERT_TRUE(p.LoadString("readproportion=0\nupdateproportion=0\n", "w").ok());
    EXPECT_EQ(ParseWorkloadSpec(p, {}, nullptr).status().code(),
              absl::StatusCode::kInvalidArgument);
  }
}

// Parses `lines` over recordcount=1000 and returns the error message, or
// "OK".
std::string SpecError(const std::string& lines) {
  Properties p;
  p.Set("recordcount", "1000");
  if (!p.LoadString(lines, "w").ok()) return "bad test input";
  absl::StatusOr<WorkloadSpec> spec = ParseWorkloadSpec(p, {}, nullptr);
  if (spec.ok()) return "OK";
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(spec.status().message());
}

TEST(PropertiesTest, ThreadcountIsBounded) {
  // 4294967296 used to become 0 threads in an int (a load that loads
  // nothing, exit 0), 99999999999 a billion drivers.
  EXPECT_EQ(SpecError("threadcount=4294967296"),
            "w:1: threadcount 4294967296 is above 4096");
  EXPECT_EQ(SpecError("threadcount=99999999999"),
            "w:1: threadcount 99999999999 is above 4096");
  // Past what an int64_t holds: out of range too, not "expected integer".
  EXPECT_EQ(SpecError("threadcount=99999999999999999999"),
            "w:1: threadcount 99999999999999999999 is above 4096");
  EXPECT_EQ(SpecError("threadcount=x"),
            "w:1: threadcount: expected integer, got \"x\"");
  EXPECT_EQ(SpecError("threadcount=4096"), "OK");
  Properties p;
  p.Set("threadcount", "2147483648", "-threads");
  EXPECT_EQ(ParseWorkloadSpec(p, {}, nullptr).status().message(),
            "-threads: threadcount 2147483648 is above 4096");
}

// An integer an int64_t cannot hold was "expected integer, got ...", as if
// it were a typo; it is out of range, and the message gives the limit.
TEST(PropertiesTest, IntegersPastInt64AreOutOfRange) {
  EXPECT_EQ(SpecError("operationcount=9223372036854775807"), "OK");
  EXPECT_EQ(SpecError("operationcount=9223372036854775808"),
            "w:1: operationcount 9223372036854775808 is above "
            "9223372036854775807");
  EXPECT_EQ(SpecError("seed=99999999999999999999999"),
            "w:1: seed 99999999999999999999999 is above 9223372036854775807");
  EXPECT_THAT(SpecError("operationcount=-99999999999999999999"),
              HasSubstr("w:1: operationcount: expected non-negative integer"));
  EXPECT_THAT(SpecError("operationcount=12x"),
              HasSubstr("w:1: operationcount: expected integer, got \"12x\""));
  EXPECT_THAT(SpecError("operationcount=1e3"),
              HasSubstr("w:1: operationcount: expected integer"));
}

TEST(PropertiesTest, ExponentialParametersAreRangeChecked) {
  // Each of these hung NextKeynum (gamma 0, infinite or NaN) or sent every
  // key past the last record (negative gamma: all NOT_FOUND, exit 0).
  for (const char* v : {"500", "100", "0", "-5", "0.5", "1e-300"}) {
    EXPECT_THAT(SpecError(absl::StrCat("exponential.percentile=", v)),
                HasSubstr("w:1: exponential.percentile: expected number in "
                          "[1, 100)"))
        << v;
  }
  for (const char* v : {"0", "-3", "1.5", "1e300"}) {
    EXPECT_THAT(SpecError(absl::StrCat("exponential.frac=", v)),
                HasSubstr("w:1: exponential.frac: expected number in (0, 1]"))
        << v;
  }
  EXPECT_EQ(SpecError("exponential.percentile=1\nexponential.frac=1\n"), "OK");
  EXPECT_EQ(SpecError("exponential.percentile=99.9\nexponential.frac=1e-9\n"),
            "OK");
}

TEST(PropertiesTest, PercentilesAreRangeChecked) {
  // "nan" parses as a double and compares false with both bounds: it was
  // taken, and printed as a "NaNthPercentileLatency(us)" line.
  for (const char* v : {"nan", "-nan", "NaN", "inf", "-inf", "-1", "100.5",
                        "95,nan", "95,", "x"}) {
    EXPECT_THAT(SpecError(absl::StrCat("hdrhistogram.percentiles=", v)),
                HasSubstr("w:1: hdrhistogram.percentiles: expected "
                          "comma-separated percentiles in [0, 100]"))
        << v;
  }
  EXPECT_EQ(SpecError("hdrhistogram.percentiles=0,50,99.99,100\n"), "OK");
}

TEST(PropertiesTest, InsertstartPastRecordcountNamesInsertstart) {
  // The derived insertcount (-1000) used to be blamed, though never set.
  EXPECT_EQ(SpecError("insertstart=2000"),
            "w:1: insertstart (2000) is past recordcount (1000): no record "
            "left to load");
  // insertstart + insertcount used to overflow and pass.
  EXPECT_THAT(SpecError("insertstart=1\ninsertcount=9223372036854775807\n"),
              HasSubstr("must not exceed recordcount (1000)"));
}

TEST(PropertiesTest, KeyLimitsAreNamed) {
  EXPECT_EQ(SpecError("keylength=99999999"),
            "w:1: keylength 99999999 is above 1024");
  EXPECT_EQ(SpecError("zeropadding=99999999"),
            "w:1: zeropadding 99999999 is above 64");
  EXPECT_EQ(SpecError("keylength=1024\nzeropadding=64\n"), "OK");
}

TEST(PropertiesTest, UnavailableStopIsBounded) {
  EXPECT_EQ(SpecError("unavailablestop=1000000"), "OK");
  EXPECT_EQ(SpecError("unavailablestop=1000001"),
            "w:1: unavailablestop 1000001 is above 1000000");
  EXPECT_THAT(SpecError("unavailablestop=-1"), HasSubstr("unavailablestop"));
}

TEST(PropertiesTest, UnknownPropertiesAreReported) {
  Properties p;
  ASSERT_TRUE(p.LoadString("recordcount=10\n"
                           "recordcont=11\n"
                           "memcached.hosts=127.0.0.1:11211\n"
                           "redis.port=6379\n"
                           "memcachedx.hosts=h\n"
                           "memcached=h\n"
                           "debug=true\n"
                           "readallfields = TRUE \n",
                           "w")
                  .ok());
  std::vector<std::string> warnings;
  absl::StatusOr<WorkloadSpec> spec =
      ParseWorkloadSpec(p, {"memcached"}, &warnings);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_TRUE(spec->readallfields);
  // Known (read or accepted) keys and `<driver>.` keys are not reported; a
  // key that only starts with a driver's name is.
  EXPECT_THAT(warnings,
              ElementsAre("w:6: unknown property \"memcached\" (ignored)",
                          "w:5: unknown property \"memcachedx.hosts\" (ignored)",
                          "w:2: unknown property \"recordcont\" (ignored)",
                          "w:4: unknown property \"redis.port\" (ignored)"));
}

TEST(PropertiesTest, DefaultsAreJavaYcsbs) {
  Properties p;
  std::vector<std::string> warnings;
  absl::StatusOr<WorkloadSpec> spec = ParseWorkloadSpec(p, {}, &warnings);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_THAT(warnings, IsEmpty());
  EXPECT_EQ(spec->table, "usertable");
  EXPECT_EQ(spec->fieldcount, 10);
  EXPECT_EQ(spec->fieldlength, 100);
  EXPECT_TRUE(spec->readallfields);
  EXPECT_FALSE(spec->writeallfields);
  EXPECT_DOUBLE_EQ(spec->readproportion, 0.95);
  EXPECT_DOUBLE_EQ(spec->updateproportion, 0.05);
  EXPECT_EQ(spec->requestdistribution, Distribution::kUniform);
  EXPECT_TRUE(spec->hashed_inserts);
  EXPECT_EQ(spec->maxscanlength, 1000);
  EXPECT_EQ(spec->threadcount, 1);
  EXPECT_THAT(spec->percentiles, ElementsAre(95.0, 99.0, 99.9));
}

TEST(PropertiesTest, ParsesEveryStandardProperty) {
  Properties p;
  ASSERT_TRUE(p.LoadString("workload=site.ycsb.workloads.CoreWorkload\n"
                           "table=t\n"
                           "recordcount=1000\n"
                           "operationcount=500\n"
                           "insertstart=100\n"
                           "insertcount=200\n"
                           "fieldcount=1\n"
                           "fieldlength=32\n"
                           "fieldlengthdistribution=zipfian\n"
                           "readallfields=false\n"
                           "writeallfields=TRUE\n"
                           "readproportion=0.1\n"
                           "updateproportion=0.2\n"
                           "insertproportion=0.3\n"
                           "scanproportion=0.2\n"
                           "readmodifywriteproportion=0.2\n"
                           "requestdistribution=hotspot\n"
                           "zipfianconstant=0.8\n"
                           "hotspotdatafraction=0.1\n"
                           "hotspotopnfraction=0.9\n"
                           "minscanlength=5\n"
                           "maxscanlength=100\n"
                           "scanlengthdistribution=zipfian\n"
                           "insertorder=ordered\n"
                           "zeropadding=8\n"
                           "keylength=16\n"
                           "maxexecutiontime=30\n"
                           "unavailablestop=0\n"
                           "dataintegrity=false\n"
                           "threadcount=4\n"
                           "target=1000.5\n"
                           "hdrhistogram.percentiles=50,99.99\n"
                           "exporter=site.ycsb.measurements.exporter."
                           "TextMeasurementsExporter\n"
                           "exportfile=/tmp/out.txt\n"
                           "seed=7\n",
                           "w")
                  .ok());
  std::vector<std::string> warnings;
  absl::StatusOr<WorkloadSpec> s = ParseWorkloadSpec(p, {}, &warnings);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(warnings, IsEmpty());
  EXPECT_EQ(s->table, "t");
  EXPECT_EQ(s->recordcount, 1000);
  EXPECT_EQ(s->operationcount, 500);
  EXPECT_EQ(s->insertstart, 100);
  EXPECT_EQ(s->insertcount, 200);
  EXPECT_EQ(s->fieldcount, 1);
  EXPECT_EQ(s->fieldlength, 32);
  EXPECT_EQ(s->fieldlengthdistribution, Distribution::kZipfian);
  EXPECT_FALSE(s->readallfields);
  EXPECT_TRUE(s->writeallfields);
  EXPECT_DOUBLE_EQ(s->insertproportion, 0.3);
  EXPECT_DOUBLE_EQ(s->readmodifywriteproportion, 0.2);
  EXPECT_EQ(s->requestdistribution, Distribution::kHotspot);
  EXPECT_DOUBLE_EQ(s->zipfianconstant, 0.8);
  EXPECT_DOUBLE_EQ(s->hotspotdatafraction, 0.1);
  EXPECT_DOUBLE_EQ(s->hotspotopnfraction, 0.9);
  EXPECT_EQ(s->minscanlength, 5);
  EXPECT_EQ(s->maxscanlength, 100);
  EXPECT_EQ(s->scanlengthdistribution, Distribution::kZipfian);
  EXPECT_FALSE(s->hashed_inserts);
  EXPECT_EQ(s->zeropadding, 8);
  EXPECT_EQ(s->keylength, 16);
  EXPECT_EQ(s->maxexecutiontime, 30);
  EXPECT_EQ(s->unavailablestop, 0);
  EXPECT_EQ(s->threadcount, 4);
  EXPECT_DOUBLE_EQ(s->target, 1000.5);
  EXPECT_THAT(s->percentiles, ElementsAre(50.0, 99.99));
  EXPECT_EQ(s->exportfile, "/tmp/out.txt");
  EXPECT_EQ(s->seed, 7u);
}

}  // namespace
}  // namespace ycsb
}  // namespace rfrpc
