// Copyright 2026 The rfrpc Authors.
//
// The jakiro YCSB driver: its properties, and every operation against an
// in-process Jakiro server on shm.

#include "kvstore/ycsb/jakiro_db.h"

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "kvstore/server/jakiro_service.h"
#include "kvstore/ycsb/client.h"
#include "kvstore/ycsb/db.h"
#include "kvstore/ycsb/properties.h"
#include "rpc/option_knobs.h"
#include "rpc/server.h"

namespace rfrpc {
namespace ycsb {
namespace {

Properties Props(std::vector<std::pair<std::string, std::string>> kv) {
  Properties p;
  for (const auto& [k, v] : kv) p.Set(k, v, "-p");
  return p;
}

TEST(JakiroDbOptionsTest, ParsesProperties) {
  absl::StatusOr<JakiroDbOptions> o = JakiroDbOptions::FromProperties(Props(
      {{"jakiro.servers", "/a.sock, /b.sock"},
       {"jakiro.mode", "server_reply"},
       {"jakiro.batch", "fixed"},
       {"jakiro.batch_size", "8"},
       {"jakiro.batch_timeout_us", "30"},
       {"jakiro.batch_idle_in_flight", "0"},
       {"jakiro.batch_sync_combine", "true"},
       {"jakiro.fetch_size", "128"},
       {"jakiro.retries", "3"},
       {"jakiro.fetch_miss_target", "0.25"},
       {"jakiro.fetch_policy", "paper"},
       {"jakiro.sizer_rule", "paper"},
       {"jakiro.sizer_window", "200"},
       {"jakiro.max_inline", "0"},
       {"jakiro.signal_every", "4"},
       {"fieldcount", "1"}}));
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->client.servers, (std::vector<std::string>{"/a.sock", "/b.sock"}));
  EXPECT_EQ(o->client.channel.mode, RpcMode::kServerReply);
  EXPECT_EQ(o->client.channel.batching.mode, BatchMode::kFixed);
  EXPECT_EQ(o->client.channel.batching.size, 8);
  EXPECT_EQ(o->client.channel.batching.timeout, absl::Microseconds(30));
  EXPECT_EQ(o->client.channel.batching.idle_in_flight, 0);
  EXPECT_TRUE(o->client.channel.batching.sync_combine);
  EXPECT_EQ(o->client.channel.fetch.size, 128u);
  EXPECT_EQ(o->client.channel.fetch.retries, 3);
  EXPECT_EQ(o->client.channel.fetch.delay_miss_target, 0.25);
  EXPECT_FALSE(o->client.channel.fetch.adaptive_delay);
  EXPECT_FALSE(o->client.channel.batching.sizer.proportional_steps);
  EXPECT_EQ(o->client.channel.batching.sizer.holdoff_windows, 0);
  EXPECT_EQ(o->client.channel.batching.sizer.shrink_windows, 1);
  EXPECT_EQ(o->client.channel.batching.sizer.window, 200);
  EXPECT_EQ(o->client.channel.max_inline, 0u);
  EXPECT_EQ(o->client.channel.signal_every, 4);
  EXPECT_TRUE(o->shared_client);  // Batching shares the client by default.
  EXPECT_EQ(o->fieldcount, 1);
}

// Unset, the miss target is Jakiro's (not rfrpc's ChannelOptions default).
TEST(JakiroDbOptionsTest, FetchMissTargetDefaultsToJakiros) {
  absl::StatusOr<JakiroDbOptions> o =
      JakiroDbOptions::FromProperties(Props({{"jakiro.servers", "/a.sock"}}));
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->client.channel.fetch.delay_miss_target,
            kvstore::kJakiroFetchMissTarget);
  EXPECT_NE(kvstore::kJakiroFetchMissTarget,
            ChannelOptions().fetch.delay_miss_target);
}

// A bad ChannelOptions value through -p gets the library's message (the
// one Channel::Create and the --rfrpc_* flags give), named by its property.
TEST(JakiroDbOptionsTest, BadChannelValuesGetTheLibrarysMessage) {
  const absl::Status s = JakiroDbOptions::FromProperties(
                             Props({{"jakiro.servers", "/a"},
                                    {"jakiro.fetch_size", "8"}}))
                             .status();
  ChannelOptions bad;
  bad.fetch.size = 8;
  const absl::Status library = ValidateChannelOptions(bad);
  ASSERT_FALSE(library.ok());
  EXPECT_EQ(s.message(), absl::StrCat("jakiro.fetch_size: ", library.message()));
  const absl::Status slots = JakiroDbOptions::FromProperties(
                                 Props({{"jakiro.servers", "/a"},
                                        {"jakiro.slots", "0"}}))
                                 .status();
  EXPECT_EQ(slots.message(),
            "jakiro.slots: slots_per_connection 0 is outside [1, 4096]");
  // The upper bounds the driver had before the library check are the
  // library's now.
  const absl::Status big = JakiroDbOptions::FromProperties(
                               Props({{"jakiro.servers", "/a"},
                                      {"jakiro.batch_size", "2000"}}))
                               .status();
  EXPECT_EQ(big.message(),
            "jakiro.batch_size: batching.size 2000 is above 1024");
}

// Every ChannelOptions knob is a property, parsed as its --rfrpc_* flag is.
TEST(JakiroDbOptionsTest, EveryChannelKnobIsAProperty) {
  const ChannelOptions defaults;
  std::vector<std::pair<std::string, std::string>> kv = {
      {"jakiro.servers", "/a"}};
  // But connections, which the Jakiro client sets itself (one per server
  // worker): given, it is refused rather than ignored.
  for (const ChannelKnob& k : ChannelKnobs()) {
    if (std::string(k.name) == "connections") continue;
    kv.emplace_back(absl::StrCat("jakiro.", k.name), k.get(defaults));
  }
  absl::StatusOr<JakiroDbOptions> o = JakiroDbOptions::FromProperties(Props(kv));
  ASSERT_TRUE(o.ok()) << o.status();
  for (const ChannelKnob& k : ChannelKnobs()) {
    EXPECT_EQ(k.get(o->client.channel), k.get(defaults)) << k.name;
  }
  const absl::Status conns =
      JakiroDbOptions::FromProperties(
          Props({{"jakiro.servers", "/a"}, {"jakiro.connections", "7"}}))
          .status();
  EXPECT_EQ(conns.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(conns.message().find("jakiro.connections: the Jakiro client opens "
                                 "one connection per server worker"),
            std::string::npos)
      << conns;
  o = JakiroDbOptions::FromProperties(
      Props({{"jakiro.servers", "/a"},
             {"jakiro.post_lists", "false"},
             {"jakiro.batch_group", "2"},
             {"jakiro.switch_back_ratio", "0.5"},
             {"jakiro.rering_after_us", "250"},
             {"jakiro.sizer_rule", "paper"},
             {"jakiro.sizer_holdoff_windows", "3"}}));
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_FALSE(o->client.channel.post_lists);
  EXPECT_EQ(o->client.channel.batching.group, 2);
  EXPECT_EQ(o->client.channel.fetch.switch_back_ratio, 0.5);
  EXPECT_EQ(o->client.channel.rering_after, absl::Microseconds(250));
  EXPECT_FALSE(o->client.channel.batching.sizer.proportional_steps);
  EXPECT_EQ(o->client.channel.batching.sizer.holdoff_windows,
            3);  // After the rule.
  const absl::Status s = JakiroDbOptions::FromProperties(
                             Props({{"jakiro.servers", "/a"},
                                    {"jakiro.retries", "x"}}))
                             .status();
  EXPECT_EQ(s.message(), "-p: jakiro.retries: expected an integer in "
                         "[-2147483648, 2147483647], got \"x\"");
}

TEST(JakiroDbOptionsTest, RejectsBadProperties) {
  EXPECT_EQ(JakiroDbOptions::FromProperties(Props({})).status().code(),
            absl::StatusCode::kInvalidArgument);  // No servers.
  absl::Status s = JakiroDbOptions::FromProperties(
                       Props({{"jakiro.servers", "/a"}, {"jakiro.mdoe", "rf"}}))
                       .status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("unknown property \"jakiro.mdoe\""),
            std::string::npos)
      << s;
  s = JakiroDbOptions::FromProperties(
          Props({{"jakiro.servers", "/a"}, {"jakiro.mode", "fast"}}))
          .status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("-p: jakiro.mode"), std::string::npos) << s;
  s = JakiroDbOptions::FromProperties(
          Props({{"jakiro.servers", "/a"}, {"jakiro.retries", "0"}}))
          .status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  for (const char* bad : {"0", "0.6", "-1", "x"}) {
    s = JakiroDbOptions::FromProperties(
            Props({{"jakiro.servers", "/a"}, {"jakiro.fetch_miss_target", bad}}))
            .status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  for (const auto& [key, bad] : std::vector<std::pair<std::string, std::string>>{
           {"jakiro.fetch_policy", "eager"},
           {"jakiro.sizer_rule", "pid"},
           {"jakiro.signal_every", "0"},
           {"jakiro.signal_every", "65"},
           {"jakiro.max_inline", "2048"}}) {
    s = JakiroDbOptions::FromProperties(
            Props({{"jakiro.servers", "/a"}, {key, bad}}))
            .status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << key << "=" << bad;
    EXPECT_NE(s.message().find(key), std::string::npos) << s;
  }
}

// An empty entry was skipped: "A," ran against A alone, "" against nothing
// only because no server was left.
TEST(JakiroDbOptionsTest, RejectsEmptyServerEntries) {
  for (const char* bad : {"/a,", "/a,,/b", ",/a", "/a, ,/b", "", " "}) {
    absl::Status s =
        JakiroDbOptions::FromProperties(Props({{"jakiro.servers", bad}}))
            .status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(s.message(),
              absl::StrCat("-p: jakiro.servers: expected address[,address...] "
                           "with no empty entry, got \"",
                           bad, "\""));
  }
  absl::StatusOr<JakiroDbOptions> o =
      JakiroDbOptions::FromProperties(Props({{"jakiro.servers", " /a , /b "}}));
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->client.servers, (std::vector<std::string>{"/a", "/b"}));
}

class JakiroDbTest : public ::testing::Test {
 protected:
  void SetUp() override {
    kvstore::JakiroServiceOptions o;
    o.workers = 2;
    o.memory_bytes_per_partition = size_t{4} << 20;
    auto s = kvstore::JakiroService::Create(o);
    ASSERT_TRUE(s.ok()) << s.status();
    service_ = std::move(*s);
    ServerOptions so;
    so.workers = 2;
    so.idle_spin_rounds = 100;
    server_ = std::make_unique<Server>(so);
    ASSERT_TRUE(server_->RegisterService(service_.get()).ok());
    ASSERT_TRUE(server_->Start().ok());
  }

  std::unique_ptr<DB> NewDb(const std::string& mode) {
    absl::StatusOr<DriverFactory> f = FindDriver("jakiro");
    EXPECT_TRUE(f.ok()) << f.status();
    absl::StatusOr<std::unique_ptr<DB>> db = (*f)(Props(
        {{"jakiro.servers", server_->address()}, {"jakiro.mode", mode},
         {"fieldcount", "2"}}));
    EXPECT_TRUE(db.ok()) << db.status();
    EXPECT_TRUE((*db)->Init().ok());
    return std::move(*db);
  }

  std::unique_ptr<kvstore::JakiroService> service_;
  std::unique_ptr<Server> server_;
};

TEST_F(JakiroDbTest, EveryOperation) {
  for (const char* mode : {"rf", "server_reply", "hybrid"}) {
    SCOPED_TRACE(mode);
    std::unique_ptr<DB> db = NewDb(mode);
    const std::string key = std::string("user") + mode;
    Record r;
    EXPECT_EQ(db->Read("usertable", key, nullptr, &r).code(),
              absl::StatusCode::kNotFound);
    ASSERT_TRUE(
        db->Insert("usertable", key, {{"field0", "a"}, {"field1", "b"}}).ok());
    ASSERT_TRUE(db->Read("usertable", key, nullptr, &r).ok());
    EXPECT_EQ(r, (Record{{"field0", "a"}, {"field1", "b"}}));
    // Updating one field of two keeps the other (get + merge + put).
    ASSERT_TRUE(db->Update("usertable", key, {{"field1", "B"}}).ok());
    const std::vector<std::string> one = {"field1"};
    ASSERT_TRUE(db->Read("usertable", key, &one, &r).ok());
    EXPECT_EQ(r, (Record{{"field1", "B"}}));
    ASSERT_TRUE(db->Read("usertable", key, nullptr, &r).ok());
    EXPECT_EQ(r, (Record{{"field0", "a"}, {"field1", "B"}}));
    // Updating every field replaces the record.
    ASSERT_TRUE(
        db->Update("usertable", key, {{"field0", "x"}, {"field1", "y"}}).ok());
    ASSERT_TRUE(db->Read("usertable", key, nullptr, &r).ok());
    EXPECT_EQ(r, (Record{{"field0", "x"}, {"field1", "y"}}));
    EXPECT_EQ(db->Update("usertable", "nosuchkey", {{"field0", "x"}}).code(),
              absl::StatusCode::kNotFound);
    std::vector<Record> scanned;
    EXPECT_EQ(db->Scan("usertable", key, 10, nullptr, &scanned).code(),
              absl::StatusCode::kUnimplemented);
    ASSERT_TRUE(db->Delete("usertable", key).ok());
    EXPECT_EQ(db->Delete("usertable", key).code(), absl::StatusCode::kNotFound);
    EXPECT_TRUE(db->Cleanup().ok());
  }
}

// Waits for one async operation, polling the driver as the pipelined client
// does (a no-op when the channel has a progress thread).
absl::Status Wait(DB* db, std::future<absl::Status>* f) {
  while (f->wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
    db->Poll();
  }
  return f->get();
}

TEST_F(JakiroDbTest, AsyncOperations) {
  for (const char* progress_thread : {"false", "true"}) {
    SCOPED_TRACE(progress_thread);
    absl::StatusOr<DriverFactory> f = FindDriver("jakiro");
    ASSERT_TRUE(f.ok());
    absl::StatusOr<std::unique_ptr<DB>> made = (*f)(Props(
        {{"jakiro.servers", server_->address()}, {"jakiro.mode", "rf"},
         {"jakiro.progress_thread", progress_thread}, {"fieldcount", "2"}}));
    ASSERT_TRUE(made.ok()) << made.status();
    DB* db = made->get();
    ASSERT_TRUE(db->Init().ok());
    ASSERT_TRUE(db->SupportsAsync());
    auto start = [](std::promise<absl::Status>* p) {
      return [p](absl::Status s) { p->set_value(std::move(s)); };
    };
    const std::string key = std::string("async") + progress_thread;
    Record r;
    std::promise<absl::Status> p1;
    std::future<absl::Status> f1 = p1.get_future();
    db->ReadAsync("usertable", key, nullptr, &r, start(&p1));
    EXPECT_EQ(Wait(db, &f1).code(), absl::StatusCode::kNotFound);

    const Record both = {{"field0", "a"}, {"field1", "b"}};
    std::promise<absl::Status> p2;
    std::future<absl::Status> f2 = p2.get_future();
    db->InsertAsync("usertable", key, both, start(&p2));
    ASSERT_TRUE(Wait(db, &f2).ok());

    // One field of two: get + merge + put, chained in the callbacks.
    const Record one = {{"field1", "B"}};
    std::promise<absl::Status> p3;
    std::future<absl::Status> f3 = p3.get_future();
    db->UpdateAsync("usertable", key, one, start(&p3));
    ASSERT_TRUE(Wait(db, &f3).ok());

    std::promise<absl::Status> p4;
    std::future<absl::Status> f4 = p4.get_future();
    db->ReadAsync("usertable", key, nullptr, &r, start(&p4));
    ASSERT_TRUE(Wait(db, &f4).ok());
    EXPECT_EQ(r, (Record{{"field0", "a"}, {"field1", "B"}}));

    std::promise<absl::Status> p5;
    std::future<absl::Status> f5 = p5.get_future();
    db->UpdateAsync("usertable", "nosuchkey", one, start(&p5));
    EXPECT_EQ(Wait(db, &f5).code(), absl::StatusCode::kNotFound);
    EXPECT_TRUE(db->Cleanup().ok());
  }
}

int64_t Count(const RunResult& run, const std::string& op) {
  auto it = run.measurements.find(op);
  return it == run.measurements.end() ? 0 : it->second.latency_ns.count();
}

// The YCSB client's pipelined loop against the real server: every value read
// back is verified, and every operation issued completes exactly once.
TEST_F(JakiroDbTest, PipelinedYcsbRun) {
  struct Config {
    const char* name;
    std::vector<std::pair<std::string, std::string>> props;
  };
  const Config configs[] = {
      {"rf, YCSB thread polls", {{"jakiro.mode", "rf"}}},
      {"rf, progress thread",
       {{"jakiro.mode", "rf"}, {"jakiro.progress_thread", "true"}}},
      {"server_reply", {{"jakiro.mode", "server_reply"}}},
      {"rf, fixed batches of 4",
       {{"jakiro.mode", "rf"},
        {"jakiro.batch", "fixed"},
        {"jakiro.batch_size", "4"},
        {"jakiro.batch_timeout_us", "50"}}},
  };
  WorkloadSpec spec;
  spec.recordcount = spec.insertcount = 500;
  spec.operationcount = 3000;
  spec.fieldcount = 2;  // Updates of one field: get + merge + put.
  spec.fieldlength = 20;
  spec.readproportion = 0.5;
  spec.updateproportion = 0.25;
  spec.readmodifywriteproportion = 0.15;
  spec.insertproportion = 0.1;
  spec.requestdistribution = Distribution::kZipfian;
  spec.dataintegrity = true;
  spec.threadcount = 2;
  spec.outstanding = 16;
  spec.seed = 3;
  for (const Config& c : configs) {
    SCOPED_TRACE(c.name);
    Properties props = Props(c.props);
    props.Set("jakiro.servers", server_->address(), "-p");
    props.Set("fieldcount", "2", "-p");
    props.Set("outstanding", "16", "-p");
    absl::StatusOr<DriverFactory> f = FindDriver("jakiro");
    ASSERT_TRUE(f.ok());
    ClientOptions options;
    options.factory = *f;
    options.load = true;
    absl::StatusOr<RunResult> load = RunClient(spec, props, options);
    ASSERT_TRUE(load.ok()) << load.status();
    ASSERT_TRUE(load->ok());
    EXPECT_EQ(load->operations, 500);

    options.load = false;
    absl::StatusOr<RunResult> run = RunClient(spec, props, options);
    ASSERT_TRUE(run.ok()) << run.status();
    EXPECT_TRUE(run->ok()) << run->integrity_failures << " integrity failures";
    EXPECT_EQ(run->operations, 3000);
    EXPECT_EQ(run->integrity_failures, 0);
    // Each read verified, and nothing failed.
    EXPECT_EQ(run->measurements.at("VERIFY").returns.size(), 1u);
    EXPECT_EQ(run->measurements.at("VERIFY").returns.at("OK"),
              Count(*run, "READ"));
    int64_t calls = 0;
    for (const char* op : {"READ", "UPDATE", "INSERT"}) {
      const auto& returns = run->measurements.at(op).returns;
      EXPECT_EQ(returns.size(), 1u) << op;  // Return=OK only.
      calls += returns.at("OK");
    }
    // Exactly one completion per call: a read-modify-write is two calls.
    const int64_t rmw = Count(*run, "READ-MODIFY-WRITE");
    EXPECT_GT(rmw, 0);
    EXPECT_EQ(calls, 3000 + rmw);
  }
}

TEST_F(JakiroDbTest, InitFailsNamingAnAbsentServer) {
  absl::StatusOr<DriverFactory> f = FindDriver("jakiro");
  ASSERT_TRUE(f.ok());
  absl::StatusOr<std::unique_ptr<DB>> db =
      (*f)(Props({{"jakiro.servers", "/nonexistent/jakiro.sock"}}));
  ASSERT_TRUE(db.ok());
  absl::Status s = (*db)->Init();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("/nonexistent/jakiro.sock"), std::string::npos)
      << s;
}

}  // namespace
}  // namespace ycsb
}  // namespace rfrpc
