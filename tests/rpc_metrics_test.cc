// Copyright 2026 The rfrpc Authors.
//
// Metrics end to end, in one process: a server and channels make calls with
// known outcomes (OK, a handler error, an unknown method, a missed deadline,
// batched calls), then Server/Channel::method_stats(), the process-wide
// snapshots and the Prometheus text of RpcMetrics must show exactly those
// counts, also after the channel is gone, and /metrics must serve them over
// HTTP.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "civetweb.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "rpc/channel.h"
#include "rpc/metrics.h"
#include "rpc/metrics_endpoint.h"
#include "rpc/server.h"
#include "rpc/stats.h"
#include "tests/test_service.h"

namespace rfrpc {
namespace testing {
namespace {

using ::testing::HasSubstr;

constexpr int kNotFound = static_cast<int>(absl::StatusCode::kNotFound);
constexpr int kDeadline = static_cast<int>(absl::StatusCode::kDeadlineExceeded);
constexpr int kUnimplemented = static_cast<int>(absl::StatusCode::kUnimplemented);

// One sample of the text format: name{k="v",...} value.
struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

std::vector<Sample> Parse(const std::string& text) {
  std::vector<Sample> out;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    if (line[0] == '#') continue;
    Sample s;
    const size_t brace = line.find('{');
    const size_t space = line.rfind(' ');
    if (space == absl::string_view::npos) continue;
    absl::string_view head = line.substr(0, space);
    if (brace != absl::string_view::npos && brace < space) {
      s.name = std::string(line.substr(0, brace));
      absl::string_view labels = head.substr(brace + 1);
      labels = absl::StripSuffix(labels, "}");
      for (absl::string_view kv : absl::StrSplit(labels, "\",", absl::SkipEmpty())) {
        std::pair<std::string, std::string> p = absl::StrSplit(kv, absl::MaxSplits("=\"", 1));
        p.second = std::string(absl::StripSuffix(p.second, "\""));
        s.labels.insert(p);
      }
    } else {
      s.name = std::string(head);
    }
    std::string v(line.substr(space + 1));
    if (v == "+Inf") {
      s.value = INFINITY;
    } else {
      EXPECT_TRUE(absl::SimpleAtod(v, &s.value)) << line;
    }
    out.push_back(std::move(s));
  }
  return out;
}

// The value of the one sample `name` whose labels include `want`; -1 if none,
// -2 if several.
double Value(const std::vector<Sample>& samples, const std::string& name,
             const std::map<std::string, std::string>& want) {
  double found = -1;
  for (const Sample& s : samples) {
    if (s.name != name) continue;
    bool match = true;
    for (const auto& [k, v] : want) {
      auto it = s.labels.find(k);
      if (it == s.labels.end() || it->second != v) match = false;
    }
    if (!match) continue;
    if (found != -1) return -2;
    found = s.value;
  }
  return found;
}

class RpcMetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions so;
    so.provider = Provider();
    so.address = ListenAddress();
    so.workers = 2;
    so.idle_spin_rounds = 200;
    server_ = std::make_unique<Server>(so);
    ASSERT_TRUE(server_->RegisterService(&service_).ok());
    ASSERT_TRUE(server_->Start().ok());
    address_ = server_->address();
    echo_id_ = MethodId(kEchoMethod);
  }

  std::unique_ptr<Channel> Connect(ChannelOptions co = {}) {
    co.provider = Provider();
    co.connections = 0;  // One per worker.
    co.default_timeout = absl::Seconds(60);
    auto c = Channel::Create(address_, co);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? std::move(*c) : nullptr;
  }

  // The calls this test makes, with known outcomes.
  void MakeCalls(Channel* ch) {
    TestRequest req;
    TestResponse resp;
    for (int i = 0; i < kOk; ++i) {
      req.set_id(i);
      req.set_payload(std::string(100, 'x'));
      ASSERT_TRUE(CallEcho(ch, nullptr, req, &resp).ok());
    }
    req.set_fail_code(kNotFound);
    for (int i = 0; i < kNotFoundCalls; ++i) {
      EXPECT_EQ(CallEcho(ch, nullptr, req, &resp).code(),
                absl::StatusCode::kNotFound);
    }
    req.set_fail_code(0);
    // An id no service has.
    EXPECT_EQ(ch->Call(12345, req, &resp, nullptr).code(),
              absl::StatusCode::kUnimplemented);
    // A deadline missed: the server still runs (and counts) the call.
    req.set_sleep_ms(300);
    ClientContext ctx;
    ctx.set_timeout(absl::Milliseconds(30));
    EXPECT_EQ(CallEcho(ch, &ctx, req, &resp).code(),
              absl::StatusCode::kDeadlineExceeded);
    req.set_sleep_ms(0);
    // Async calls, counted when their callbacks run.
    std::atomic<int> done{0};
    std::vector<TestResponse> resps(kAsync);
    for (int i = 0; i < kAsync; ++i) {
      ch->CallAsync(echo_id_, req, &resps[i], nullptr,
                    [&done](absl::Status s) {
                      EXPECT_TRUE(s.ok()) << s;
                      done++;
                    });
    }
    ASSERT_TRUE(WaitForCount(done, kAsync, absl::Seconds(30)));
  }

  // Server calls of the Echo method, after the late one finished.
  void WaitForServerCalls(uint64_t n) {
    for (int i = 0; i < 500; ++i) {
      for (const MethodStats& m : server_->method_stats()) {
        if (m.method == kEchoMethod && m.calls >= n) return;
      }
      absl::SleepFor(absl::Milliseconds(10));
    }
    FAIL() << "server never counted " << n << " Echo calls";
  }

  static constexpr int kOk = 40, kNotFoundCalls = 3, kAsync = 20;
  // Every Echo call: OK, NOT_FOUND, the late one and the async ones.
  static constexpr int kEcho = kOk + kNotFoundCalls + 1 + kAsync;

  TestService service_;
  std::unique_ptr<Server> server_;
  std::string address_;
  uint32_t echo_id_ = 0;
};

TEST_F(RpcMetricsTest, ServerMethodStatsCountWhatHappened) {
  std::unique_ptr<Channel> ch = Connect();
  MakeCalls(ch.get());
  WaitForServerCalls(kEcho);
  const std::vector<MethodStats> ms = server_->method_stats();
  // The unknown id ("" sorts first), Echo, and EchoAgain (never called:
  // every registered method is listed).
  ASSERT_EQ(ms.size(), 3u);
  const MethodStats& unknown = ms[0];
  const MethodStats& echo = ms[1];
  EXPECT_EQ(ms[2].method, kEchoAgainMethod);
  EXPECT_EQ(ms[2].calls, 0u);
  EXPECT_EQ(unknown.method, "");
  EXPECT_EQ(unknown.calls, 1u);
  EXPECT_EQ(unknown.failures[kUnimplemented], 1u);
  EXPECT_EQ(echo.method, kEchoMethod);
  EXPECT_EQ(echo.method_id, echo_id_);
  EXPECT_EQ(echo.calls, uint64_t{kEcho});
  EXPECT_EQ(echo.failures[kNotFound], uint64_t{kNotFoundCalls});
  EXPECT_EQ(echo.failed(), uint64_t{kNotFoundCalls});
  EXPECT_EQ(echo.latency_ns.count(), uint64_t{kEcho});
  // The late call slept 300 ms in its handler.
  EXPECT_GE(echo.latency_ns.sum, 300u * 1000 * 1000);
  EXPECT_EQ(echo.result_bytes.count(), uint64_t{kEcho - kNotFoundCalls});
  const ServerStats st = server_->stats();
  EXPECT_EQ(st.connections, 2u);  // One connection per worker.
  EXPECT_EQ(st.connection_slots, 2u * ChannelOptions().slots_per_connection);
}

TEST_F(RpcMetricsTest, ChannelMethodStatsCountWhatTheCallerSaw) {
  std::unique_ptr<Channel> ch = Connect();
  MakeCalls(ch.get());
  const std::vector<MethodStats> ms = ch->method_stats();
  ASSERT_EQ(ms.size(), 2u);  // Sorted by id.
  const MethodStats& echo = ms[0].method_id == echo_id_ ? ms[0] : ms[1];
  const MethodStats& other = ms[0].method_id == echo_id_ ? ms[1] : ms[0];
  EXPECT_EQ(other.method_id, 12345u);
  EXPECT_EQ(other.calls, 1u);
  EXPECT_EQ(other.failures[kUnimplemented], 1u);
  EXPECT_EQ(echo.calls, uint64_t{kEcho});
  EXPECT_EQ(echo.failures[kNotFound], uint64_t{kNotFoundCalls});
  EXPECT_EQ(echo.failures[kDeadline], 1u);
  EXPECT_EQ(echo.latency_ns.count(), uint64_t{kEcho});
  // The timed-out call waited its 30 ms; nothing took a minute.
  EXPECT_GE(echo.latency_ns.sum, 30u * 1000 * 1000);
  EXPECT_LT(echo.latency_ns.sum, 60ull * 1000 * 1000 * 1000);
  EXPECT_GE(echo.latency_ns.Quantile(1.0), 30e6);
  EXPECT_TRUE(echo.result_bytes.counts.empty());
}

TEST_F(RpcMetricsTest, MethodStatsOffKeepsNone) {
  ChannelOptions co;
  co.method_stats = false;
  std::unique_ptr<Channel> ch = Connect(co);
  TestRequest req;
  TestResponse resp;
  ASSERT_TRUE(CallEcho(ch.get(), nullptr, req, &resp).ok());
  EXPECT_TRUE(ch->method_stats().empty());
  EXPECT_EQ(ch->stats().calls, 1u);  // The channel's own counters stay.
}

TEST_F(RpcMetricsTest, BatchedCallsAreCountedPerCall) {
  ChannelOptions co;
  co.batching.mode = BatchMode::kFixed;
  co.batching.size = 8;
  co.batching.timeout = absl::Microseconds(200);
  std::unique_ptr<Channel> ch = Connect(co);
  constexpr int kCalls = 64;
  std::atomic<int> done{0};
  std::vector<TestResponse> resps(kCalls);
  TestRequest req;
  req.set_payload("twelve bytes");
  for (int i = 0; i < kCalls; ++i) {
    ch->CallAsync(echo_id_, req, &resps[i], nullptr, [&done](absl::Status s) {
      EXPECT_TRUE(s.ok()) << s;
      done++;
    });
  }
  ASSERT_TRUE(WaitForCount(done, kCalls, absl::Seconds(30)));
  WaitForServerCalls(kCalls);
  const std::vector<MethodStats> ms = server_->method_stats();
  ASSERT_EQ(ms.size(), 2u);  // Echo, and EchoAgain never called.
  EXPECT_EQ(ms[0].method, kEchoMethod);
  EXPECT_EQ(ms[1].calls, 0u);
  EXPECT_EQ(ms[0].calls, uint64_t{kCalls});
  EXPECT_EQ(ms[0].latency_ns.count(), uint64_t{kCalls});
  EXPECT_GT(ms[0].latency_ns.sum, 0u);
  // A batch's run of calls adds its count and sums once (ServerWorker's
  // ServedRun): every call's bucket and bytes are still in.
  EXPECT_EQ(ms[0].result_bytes.count(), uint64_t{kCalls});
  uint64_t result_bytes = 0;
  for (const TestResponse& r : resps) result_bytes += r.ByteSizeLong();
  EXPECT_EQ(ms[0].result_bytes.sum, result_bytes);
  EXPECT_GT(server_->stats().batches, 0u);
  EXPECT_EQ(ch->method_stats()[0].calls, uint64_t{kCalls});
}

TEST_F(RpcMetricsTest, PrometheusTextShowsTheCountsAndKeepsThemAfterTheChannel) {
  auto registry = std::make_shared<prometheus::Registry>();
  auto metrics = metrics::RpcMetrics::Create(registry);
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  // One RpcMetrics per registry, or counters would advance twice.
  EXPECT_EQ(metrics::RpcMetrics::Create(registry).status().code(),
            absl::StatusCode::kAlreadyExists);

  std::unique_ptr<Channel> ch = Connect();
  MakeCalls(ch.get());
  WaitForServerCalls(kEcho);
  std::vector<Sample> s = Parse((*metrics)->Text());
  const std::map<std::string, std::string> server{{"server", address_}};
  const std::map<std::string, std::string> echo{{"server", address_},
                                                {"method", kEchoMethod}};
  auto with = [](std::map<std::string, std::string> m, const char* k,
                 const char* v) {
    m[k] = v;
    return m;
  };
  // Server side.
  EXPECT_EQ(Value(s, "rfrpc_server_calls_total", echo), kEcho);
  EXPECT_EQ(Value(s, "rfrpc_server_calls_total",
                  {{"server", address_}, {"method", "unknown"}}),
            1);
  EXPECT_EQ(Value(s, "rfrpc_server_call_failures_total",
                  with(echo, "code", "NOT_FOUND")),
            kNotFoundCalls);
  EXPECT_EQ(Value(s, "rfrpc_server_call_failures_total",
                  {{"server", address_}, {"method", "unknown"}, {"code", "UNIMPLEMENTED"}}),
            1);
  EXPECT_EQ(Value(s, "rfrpc_server_call_failures_total", with(echo, "code", "INTERNAL")),
            -1);  // No series for codes that never happened.
  EXPECT_EQ(Value(s, "rfrpc_server_handler_seconds_count", echo), kEcho);
  EXPECT_EQ(Value(s, "rfrpc_server_handler_seconds_bucket", with(echo, "le", "+Inf")),
            kEcho);
  EXPECT_GE(Value(s, "rfrpc_server_handler_seconds_sum", echo), 0.3);
  EXPECT_EQ(Value(s, "rfrpc_server_result_bytes_count", echo),
            kEcho - kNotFoundCalls);
  // The 300 ms call held the worker past the default 10 ms stall warning
  // (other calls may too, on a loaded host).
  EXPECT_GE(Value(s, "rfrpc_server_worker_stalls_total", server), 1);
  EXPECT_EQ(Value(s, "rfrpc_server_connections", server), 2);
  EXPECT_EQ(Value(s, "rfrpc_server_connections_accepted_total", server), 2);
  // Client side: ids named by the server in this process.
  EXPECT_EQ(Value(s, "rfrpc_client_calls_total", echo), kEcho);
  EXPECT_EQ(Value(s, "rfrpc_client_calls_total",
                  {{"server", address_}, {"method", "0x00003039"}}),
            1);  // 12345: no name.
  EXPECT_EQ(Value(s, "rfrpc_client_call_timeouts_total", echo), 1);
  EXPECT_EQ(Value(s, "rfrpc_client_call_duration_seconds_count", echo), kEcho);
  // The timed-out call's slot may still wait for its late result.
  EXPECT_GE(Value(s, "rfrpc_client_slots_in_use", server), 0);
  EXPECT_LE(Value(s, "rfrpc_client_slots_in_use", server), 1);
  EXPECT_EQ(Value(s, "rfrpc_client_channels", server), 1);
  const double fetched =
      Value(s, "rfrpc_client_results_total", with(server, "mode", "remote_fetch"));
  const double replied =
      Value(s, "rfrpc_client_results_total", with(server, "mode", "server_reply"));
  EXPECT_EQ(fetched + replied, ch->stats().calls);
  EXPECT_EQ(Value(s, "rfrpc_client_fetches_per_call_count", server), fetched);
  EXPECT_EQ(Value(s, "rfrpc_client_fetches_per_call_sum", server),
            ch->stats().fetched_call_fetches);
  EXPECT_EQ(Value(s, "rfrpc_client_fetches_per_call_bucket", with(server, "le", "1")),
            ch->stats().fetch_histogram[0]);
  EXPECT_EQ(Value(s, "rfrpc_client_fetches_per_call_bucket", with(server, "le", "15")),
            fetched - ch->stats().fetch_histogram[15]);
  EXPECT_EQ(Value(s, "rfrpc_client_rdma_ops_total", with(server, "opcode", "read")),
            ch->stats().rdma_reads);

  // The channel goes: its counts stay, its gauges go.
  ch.reset();
  s = Parse((*metrics)->Text());
  EXPECT_EQ(Value(s, "rfrpc_client_calls_total", echo), kEcho);
  EXPECT_EQ(Value(s, "rfrpc_client_call_duration_seconds_count", echo), kEcho);
  EXPECT_EQ(Value(s, "rfrpc_client_channels", server), -1);
  // A new channel adds to them.
  ch = Connect();
  TestRequest req;
  TestResponse resp;
  ASSERT_TRUE(CallEcho(ch.get(), nullptr, req, &resp).ok());
  s = Parse((*metrics)->Text());
  EXPECT_EQ(Value(s, "rfrpc_client_calls_total", echo), kEcho + 1);
}

TEST_F(RpcMetricsTest, MethodNamesComeFromNameMethod) {
  auto registry = std::make_shared<prometheus::Registry>();
  auto metrics = metrics::RpcMetrics::Create(registry);
  ASSERT_TRUE(metrics.ok());
  (*metrics)->NameMethod(12345, "/x.Y/Z");
  std::unique_ptr<Channel> ch = Connect();
  TestRequest req;
  TestResponse resp;
  EXPECT_EQ(ch->Call(12345, req, &resp, nullptr).code(),
            absl::StatusCode::kUnimplemented);
  const std::vector<Sample> s = Parse((*metrics)->Text());
  EXPECT_EQ(Value(s, "rfrpc_client_call_failures_total",
                  {{"server", address_}, {"method", "/x.Y/Z"}, {"code", "UNIMPLEMENTED"}}),
            1);
}

// GET `path` from 127.0.0.1:`port`; the whole response.
std::string HttpGet(int port, const std::string& path) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    return "";
  }
  const std::string req =
      absl::StrCat("GET ", path, " HTTP/1.0\r\nHost: localhost\r\n\r\n");
  if (write(fd, req.data(), req.size()) != static_cast<ssize_t>(req.size())) {
    close(fd);
    return "";
  }
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) out.append(buf, n);
  close(fd);
  return out;
}

TEST_F(RpcMetricsTest, EndpointServesMetricsOverHttp) {
  auto registry = std::make_shared<prometheus::Registry>();
  auto metrics = metrics::RpcMetrics::Create(registry);
  ASSERT_TRUE(metrics.ok());
  auto endpoint =
      metrics::MetricsEndpoint::Start("127.0.0.1", 0, (*metrics)->collectable());
  ASSERT_TRUE(endpoint.ok()) << endpoint.status();
  ASSERT_GT((*endpoint)->port(), 0);
  EXPECT_EQ((*endpoint)->url(),
            absl::StrCat("http://127.0.0.1:", (*endpoint)->port(), "/metrics"));
  std::unique_ptr<Channel> ch = Connect();
  TestRequest req;
  TestResponse resp;
  ASSERT_TRUE(CallEcho(ch.get(), nullptr, req, &resp).ok());
  WaitForServerCalls(1);
  const std::string reply = HttpGet((*endpoint)->port(), "/metrics");
  EXPECT_THAT(reply, HasSubstr("200 OK"));
  const size_t body = reply.find("\r\n\r\n");
  ASSERT_NE(body, std::string::npos);
  const std::vector<Sample> s = Parse(reply.substr(body + 4));
  EXPECT_EQ(Value(s, "rfrpc_server_calls_total",
                  {{"server", address_}, {"method", kEchoMethod}}),
            1);
  // The port is taken: a second endpoint there cannot listen, and says why
  // (civetweb's own words name no reason).
  const absl::Status taken =
      metrics::MetricsEndpoint::Start("127.0.0.1", (*endpoint)->port(),
                                      (*metrics)->collectable())
          .status();
  EXPECT_EQ(taken.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(taken.message()), HasSubstr(std::strerror(EADDRINUSE)));
  // An address of no interface of this host.
  const absl::Status foreign =
      metrics::MetricsEndpoint::Start("192.0.2.1", 0, (*metrics)->collectable())
          .status();
  EXPECT_EQ(foreign.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(foreign.message()),
              HasSubstr(std::strerror(EADDRNOTAVAIL)));
  EXPECT_EQ(metrics::MetricsEndpoint::Start("127.0.0.1", 70000,
                                            (*metrics)->collectable())
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  // A host that is no address literal is refused, not read civetweb's way
  // (999.1.1.1 listened on 231.1.1.1; an empty one threw).
  for (const char* host : {"999.1.1.1", "", "localhost", "[::1", "[nope]"}) {
    const absl::Status st =
        metrics::MetricsEndpoint::Start(host, 0, (*metrics)->collectable())
            .status();
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << host;
    EXPECT_THAT(std::string(st.message()),
                HasSubstr("is not an IPv4 address or a bracketed IPv6"))
        << host;
  }
  auto v6 =
      metrics::MetricsEndpoint::Start("[::1]", 0, (*metrics)->collectable());
  // A host without IPv6 may refuse to listen there; it must not call the
  // address malformed.
  if (!v6.ok()) {
    EXPECT_NE(v6.status().code(), absl::StatusCode::kInvalidArgument);
  }
  // Without IPv6 in civetweb it says so (it said "null context when
  // constructing CivetServer").
  if (mg_check_feature(8) == 0) {
    ASSERT_FALSE(v6.ok());
    EXPECT_THAT(std::string(v6.status().message()),
                HasSubstr("civetweb has no IPv6 support"));
  }
}

TEST(RpcMetricsNamesTest, ClashingFamilyIsAlreadyExists) {
  auto registry = std::make_shared<prometheus::Registry>();
  ASSERT_TRUE(metrics::AddGaugeFamily(registry.get(), "rfrpc_server_calls_total",
                                      "a gauge of that name")
                  .ok());
  EXPECT_EQ(metrics::RpcMetrics::Create(registry).status().code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(metrics::AddCounterFamily(registry.get(), "bad name", "").status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace testing
}  // namespace rfrpc
