// Copyright 2026 The rfrpc Authors.

#include "rpc/tuner/calibrator.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "rpc/channel.h"
#include "rpc/server.h"
#include "base/status_macros.h"
#include "rpc/tuner/calibration_service.h"

namespace rfrpc {
namespace tuner {
namespace {

using transport::Completion;
using transport::CompletionQueue;
using transport::Connection;
using transport::Provider;
using transport::WorkRequest;

uint32_t RoundUp8(uint32_t v) { return (v + 7) & ~uint32_t{7}; }

// Settings after applying the full/short defaults.
struct Settings {
  absl::Duration point_time;
  absl::Duration warmup;
  std::vector<uint32_t> read_sizes;
  std::vector<uint32_t> mode_times;
  std::vector<uint32_t> table_times;
  int cap = 0;
};

Settings Resolve(const CalibratorOptions& o) {
  Settings s;
  const bool q = o.short_mode;
  s.point_time = o.point_time > absl::ZeroDuration()
                     ? o.point_time
                     : (q ? absl::Milliseconds(30) : absl::Milliseconds(200));
  s.warmup = o.warmup > absl::ZeroDuration()
                 ? o.warmup
                 : (q ? absl::Milliseconds(5) : absl::Milliseconds(20));
  s.read_sizes = o.read_sizes;
  if (s.read_sizes.empty()) {
    for (uint32_t v = 8; v <= 8192; v *= 2) {
      s.read_sizes.push_back(v);
      if (!q && v < 8192) s.read_sizes.push_back(v + v / 2);
    }
  }
  s.mode_times = o.mode_server_times_ns;
  if (s.mode_times.empty()) {
    if (q) {
      s.mode_times = {0, 2000, 4000, 8000, 12000};
    } else {
      for (uint32_t t = 0; t <= 12000; t += 1000) s.mode_times.push_back(t);
    }
  }
  s.table_times = o.table_server_times_ns;
  if (s.table_times.empty()) {
    s.table_times = q ? std::vector<uint32_t>{0, 2000}
                      : std::vector<uint32_t>{0, 2000, 5000};
  }
  s.cap = o.max_retries_cap > 0 ? o.max_retries_cap : (q ? 6 : 16);
  std::sort(s.read_sizes.begin(), s.read_sizes.end());
  std::sort(s.mode_times.begin(), s.mode_times.end());
  return s;
}

void Progress(const CalibratorOptions& o, const std::string& line) {
  if (o.progress) o.progress(line);
}

// --- (a) raw transport READs --------------------------------------------

struct RawLoopback {
  std::unique_ptr<Provider> provider;
  std::unique_ptr<CompletionQueue> server_cq, client_cq;
  std::unique_ptr<transport::MemoryRegion> server_mem, client_mem;
  std::unique_ptr<transport::Listener> listener;
  std::unique_ptr<Connection> server_conn, client_conn;
};

constexpr int kReadWindow = 8;
constexpr uint32_t kMaxReadSize = 64 * 1024;

// Where the raw loopback listens: beside the in-process server, which may
// be listening on listen_address already. An "ip:port" gets a fresh port
// ("ip:0"); a path (shm) gets a name the provider picks.
std::string LoopbackAddress(const std::string& listen_address) {
  const size_t colon = listen_address.rfind(':');
  if (colon == std::string::npos ||
      listen_address.find('/') != std::string::npos) {
    return "";
  }
  return listen_address.substr(0, colon) + ":0";
}

absl::StatusOr<std::unique_ptr<RawLoopback>> OpenLoopback(
    const CalibratorOptions& o) {
  auto lb = std::make_unique<RawLoopback>();
  RFRPC_ASSIGN_OR_RETURN(lb->provider,
                         Provider::Open(o.provider, o.provider_options));
  transport::CompletionQueueOptions cqo;
  RFRPC_ASSIGN_OR_RETURN(lb->server_cq, lb->provider->CreateCompletionQueue(cqo));
  cqo.poll_mode = transport::PollMode::kBusy;
  RFRPC_ASSIGN_OR_RETURN(lb->client_cq, lb->provider->CreateCompletionQueue(cqo));
  RFRPC_ASSIGN_OR_RETURN(lb->server_mem, lb->provider->AllocateMemory(kMaxReadSize));
  RFRPC_ASSIGN_OR_RETURN(lb->client_mem,
                         lb->provider->AllocateMemory(kMaxReadSize * kReadWindow));
  RFRPC_ASSIGN_OR_RETURN(
      lb->listener, lb->provider->Listen(LoopbackAddress(o.listen_address)));
  absl::Status accept_status;
  std::thread acceptor([&] {
    absl::StatusOr<std::unique_ptr<transport::IncomingConnection>> in =
        lb->listener->Next(absl::Seconds(5));
    if (!in.ok()) {
      accept_status = in.status();
      return;
    }
    transport::ConnectionSetup setup;
    setup.cq = lb->server_cq.get();
    setup.exposed.push_back({lb->server_mem.get(), 0, 0, false, true});
    absl::StatusOr<std::unique_ptr<Connection>> c = (*in)->Accept(setup);
    if (!c.ok()) {
      accept_status = c.status();
      return;
    }
    lb->server_conn = std::move(*c);
  });
  transport::ConnectionSetup setup;
  setup.cq = lb->client_cq.get();
  absl::StatusOr<std::unique_ptr<Connection>> c =
      lb->provider->Connect(lb->listener->address(), setup);
  acceptor.join();
  RFRPC_RETURN_IF_ERROR(accept_status);
  if (!c.ok()) return c.status();
  lb->client_conn = std::move(*c);
  if (lb->client_conn->peer().regions.empty()) {
    return absl::InternalError("loopback peer exposed no region");
  }
  return lb;
}

// READs of `size` per second with `window` outstanding.
absl::StatusOr<double> MeasureReads(RawLoopback* lb, uint32_t size, int window,
                                    absl::Duration warmup,
                                    absl::Duration time) {
  const transport::RemoteRegion remote = lb->client_conn->peer().regions[0];
  auto post = [&](int i) {
    WorkRequest wr = WorkRequest::Read(static_cast<uint64_t>(i),
                                       lb->client_mem.get(),
                                       size_t{kMaxReadSize} * i, size, remote, 0);
    return lb->client_conn->Post({&wr, 1});
  };
  for (int i = 0; i < window; ++i) RFRPC_RETURN_IF_ERROR(post(i));
  uint64_t done = 0;
  const absl::Time measure_from = absl::Now() + warmup;
  bool measuring = false;
  absl::Time t0;
  Completion cs[kReadWindow];
  for (;;) {
    absl::StatusOr<int> n =
        lb->client_cq->Wait(absl::MakeSpan(cs, kReadWindow), absl::Seconds(1));
    if (!n.ok()) return n.status();
    const absl::Time now = absl::Now();
    for (int k = 0; k < *n; ++k) {
      if (!cs[k].ok()) return cs[k].ToStatus();
    }
    if (!measuring) {
      // The interval starts at this stamp: these completions came before
      // it, so they are not counted. It ends `time` after it, not at a
      // fixed end, so a thread descheduled past that end (a loaded host)
      // still measures a whole interval instead of dividing by ~0.
      if (now >= measure_from) {
        measuring = true;
        t0 = now;
      }
    } else {
      done += static_cast<uint64_t>(*n);
    }
    if (measuring && done > 0 && now - t0 >= time) {
      // Drain the rest of the window before returning.
      int outstanding = window - *n;
      while (outstanding > 0) {
        absl::StatusOr<int> m = lb->client_cq->Wait(
            absl::MakeSpan(cs, kReadWindow), absl::Seconds(1));
        if (!m.ok()) return m.status();
        outstanding -= *m;
      }
      return done / absl::ToDoubleSeconds(now - t0);
    }
    for (int k = 0; k < *n; ++k) {
      RFRPC_RETURN_IF_ERROR(post(static_cast<int>(cs[k].wr_id)));
    }
  }
}

// --- rpc calls --------------------------------------------------------------

struct LoopResult {
  double ops = 0;
  double reads_per_call = 0;
};

absl::StatusOr<LoopResult> RunCalls(Channel* ch, uint32_t result_bytes,
                                    uint32_t delay_ns, absl::Duration warmup,
                                    absl::Duration time) {
  CalibrationRequest req;
  req.set_result_bytes(result_bytes);
  req.set_delay_ns(delay_ns);
  CalibrationResponse resp;
  uint64_t id = 0;
  const absl::Time warm_end = absl::Now() + warmup;
  while (absl::Now() < warm_end) {
    req.set_id(++id);
    RFRPC_RETURN_IF_ERROR(CallFetch(ch, nullptr, req, &resp));
  }
  const ChannelStats before = ch->stats();
  const absl::Time t0 = absl::Now();
  const absl::Time end = t0 + time;
  uint64_t calls = 0;
  absl::Time now = t0;
  while (now < end) {
    for (int i = 0; i < 16; ++i) {
      req.set_id(++id);
      RFRPC_RETURN_IF_ERROR(CallFetch(ch, nullptr, req, &resp));
      ++calls;
    }
    now = absl::Now();
  }
  const ChannelStats after = ch->stats();
  LoopResult r;
  r.ops = calls / absl::ToDoubleSeconds(now - t0);
  const uint64_t c = after.calls - before.calls;
  r.reads_per_call =
      c ? static_cast<double>(after.rdma_reads - before.rdma_reads) / c : 0;
  return r;
}

absl::StatusOr<std::unique_ptr<Channel>> OpenChannel(
    const CalibratorOptions& o, const std::string& address, RpcMode mode) {
  ChannelOptions co;
  co.provider = o.provider;
  co.provider_options = o.provider_options;
  co.mode = mode;
  co.fetch.adaptive_delay = o.adaptive_fetch_delay;
  co.max_response_bytes = 64 * 1024;
  return Channel::Create(address, co);
}

// Pool adjacent violators: the closest non-increasing sequence.
std::vector<double> NonIncreasing(const std::vector<double>& v) {
  std::vector<double> sums, counts;
  for (double x : v) {
    sums.push_back(x);
    counts.push_back(1);
    while (sums.size() > 1 &&
           sums[sums.size() - 2] / counts[counts.size() - 2] <
               sums.back() / counts.back()) {
      sums[sums.size() - 2] += sums.back();
      counts[counts.size() - 2] += counts.back();
      sums.pop_back();
      counts.pop_back();
    }
  }
  std::vector<double> out;
  for (size_t i = 0; i < sums.size(); ++i) {
    out.insert(out.end(), static_cast<size_t>(counts[i]), sums[i] / counts[i]);
  }
  return out;
}

std::string HostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "unknown";
  return buf;
}

}  // namespace

LowHigh DeriveLowHigh(const std::vector<SizePoint>& curve,
                      double flat_tolerance, double bandwidth_tolerance) {
  LowHigh lh{kMinFetchSize, kMinFetchSize};
  if (curve.empty()) return lh;
  std::vector<double> ops;
  for (const SizePoint& p : curve) ops.push_back(p.ops_per_sec());
  const std::vector<double> smooth = NonIncreasing(ops);
  size_t low_i = 0;
  while (low_i + 1 < curve.size() &&
         smooth[low_i + 1] >= (1 - flat_tolerance) * smooth[0]) {
    ++low_i;
  }
  double peak_bw = 0;
  for (size_t i = 0; i < curve.size(); ++i) {
    peak_bw = std::max(peak_bw, smooth[i] * curve[i].size());
  }
  // Bandwidth-bound from H on: every larger size is within tolerance of the
  // peak bytes/s.
  size_t high_i = curve.size() - 1;
  while (high_i > 0 && smooth[high_i - 1] * curve[high_i - 1].size() >=
                           (1 - bandwidth_tolerance) * peak_bw) {
    --high_i;
  }
  lh.low = std::max(kMinFetchSize, RoundUp8(curve[low_i].size()));
  lh.high = std::max(lh.low, RoundUp8(curve[high_i].size()));
  return lh;
}

namespace {

// Whether rf still beats server-reply by more than `threshold` at the
// largest P of `curve` (ascending in P): then P* is only that P.
bool PaysOffThroughout(
    const google::protobuf::RepeatedPtrField<ModePoint>& curve,
    double threshold) {
  return !curve.empty() && curve.rbegin()->rf_ops_per_sec() >
                               (1 + threshold) * curve.rbegin()->sr_ops_per_sec();
}

}  // namespace

Payoff DerivePayoff(const std::vector<ModePoint>& curve, double threshold,
                    double read_rtt_ns, int max_retries_cap) {
  Payoff p;
  if (curve.empty()) return p;
  // The smallest P from which rf never again beats server-reply by more than
  // the threshold; the largest P measured if rf pays off throughout.
  size_t k = curve.size();
  while (k > 0 && curve[k - 1].rf_ops_per_sec() <=
                      (1 + threshold) * curve[k - 1].sr_ops_per_sec()) {
    --k;
  }
  p.server_time_ns = k == curve.size() ? curve.back().server_time_ns()
                                       : curve[k].server_time_ns();
  const double n =
      read_rtt_ns > 0 ? std::ceil(p.server_time_ns / read_rtt_ns) : 1;
  p.max_retries = static_cast<int>(
      std::max(1.0, std::min<double>(n, std::max(1, max_retries_cap))));
  return p;
}

std::vector<uint32_t> MeasuredFetchSizes(uint32_t low, uint32_t high,
                                         bool short_mode) {
  std::vector<uint32_t> out = {low};
  for (uint32_t v = 16; v < high; v *= 2) {
    if (v > low) out.push_back(v);
    const uint32_t mid = v + v / 2;
    if (!short_mode && mid > low && mid < high) out.push_back(mid);
  }
  if (high > low) out.push_back(high);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

absl::StatusOr<Profile> Calibrate(const CalibratorOptions& o) {
  const Settings s = Resolve(o);
  TunerProfile proto;
  proto.set_format_version(kProfileFormatVersion);
  proto.set_host(HostName());
  proto.set_created(
      absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(), absl::UTCTimeZone()));
  proto.set_short_mode(o.short_mode);
  proto.set_flat_tolerance(o.flat_tolerance);
  proto.set_bandwidth_tolerance(o.bandwidth_tolerance);
  proto.set_payoff_threshold(o.payoff_threshold);
  proto.set_fetch_step(o.fetch_step);

  // The server: in this process unless an address was given.
  std::unique_ptr<Server> server;
  CalibrationService service;
  std::string address = o.address;
  if (address.empty()) {
    ServerOptions so;
    so.provider = o.provider;
    so.provider_options = o.provider_options;
    so.address = o.listen_address;
    so.workers = 1;
    server = std::make_unique<Server>(so);
    RFRPC_RETURN_IF_ERROR(server->RegisterService(&service));
    RFRPC_RETURN_IF_ERROR(server->Start());
    address = server->address();
  }

  // (a) ops/s vs READ size.
  if (o.address.empty()) {
    RFRPC_ASSIGN_OR_RETURN(std::unique_ptr<RawLoopback> lb, OpenLoopback(o));
    proto.set_provider(lb->provider->name());
    proto.set_read_curve_source("transport");
    for (size_t i = 0; i < s.read_sizes.size(); ++i) {
      const uint32_t size = std::min(s.read_sizes[i], kMaxReadSize);
      Progress(o, absl::StrFormat("[a %zu/%zu] READ %u B", i + 1,
                                  s.read_sizes.size(), size));
      RFRPC_ASSIGN_OR_RETURN(
          double ops, MeasureReads(lb.get(), size, kReadWindow, s.warmup,
                                   s.point_time));
      SizePoint* pt = proto.add_read_curve();
      pt->set_size(size);
      pt->set_ops_per_sec(ops);
    }
    RFRPC_ASSIGN_OR_RETURN(
        double one, MeasureReads(lb.get(), s.read_sizes.front(), 1, s.warmup,
                                 s.point_time));
    proto.set_read_rtt_ns(1e9 / one);
  } else {
    // Record what "auto" resolves to on this host.
    RFRPC_ASSIGN_OR_RETURN(
        std::string provider,
        Provider::ResolveName(o.provider, o.provider_options));
    proto.set_provider(provider);
    proto.set_read_curve_source("rpc");
    RFRPC_ASSIGN_OR_RETURN(std::unique_ptr<Channel> ch,
                           OpenChannel(o, address, RpcMode::kRemoteFetch));
    for (size_t i = 0; i < s.read_sizes.size(); ++i) {
      const uint32_t size = s.read_sizes[i];
      Progress(o, absl::StrFormat("[a %zu/%zu] rf call, %u B result", i + 1,
                                  s.read_sizes.size(), size));
      const uint32_t f = std::max(kMinFetchSize, RoundUp8(size));
      RFRPC_RETURN_IF_ERROR(ch->SetFetchParams(1, f));
      RFRPC_ASSIGN_OR_RETURN(LoopResult r,
                             RunCalls(ch.get(), size, 0, s.warmup, s.point_time));
      SizePoint* pt = proto.add_read_curve();
      pt->set_size(size);
      pt->set_ops_per_sec(r.ops);
    }
    proto.set_read_rtt_ns(1e9 / proto.read_curve(0).ops_per_sec());
  }
  const LowHigh lh = DeriveLowHigh(
      {proto.read_curve().begin(), proto.read_curve().end()},
      o.flat_tolerance, o.bandwidth_tolerance);
  proto.set_low_size(lh.low);
  proto.set_high_size(lh.high);
  Progress(o, absl::StrFormat("[a] done: L=%u H=%u, one READ %.0f ns", lh.low,
                              lh.high, proto.read_rtt_ns()));

  // (c) rf vs server-reply over P.
  {
    RFRPC_ASSIGN_OR_RETURN(std::unique_ptr<Channel> rf,
                           OpenChannel(o, address, RpcMode::kRemoteFetch));
    RFRPC_ASSIGN_OR_RETURN(std::unique_ptr<Channel> sr,
                           OpenChannel(o, address, RpcMode::kServerReply));
    RFRPC_RETURN_IF_ERROR(rf->SetFetchParams(1, kMinFetchSize));
    for (size_t i = 0; i < s.mode_times.size(); ++i) {
      const uint32_t t = s.mode_times[i];
      Progress(o, absl::StrFormat("[c %zu/%zu] rf vs server_reply, P=%u ns",
                                  i + 1, s.mode_times.size(), t));
      RFRPC_ASSIGN_OR_RETURN(
          LoopResult a, RunCalls(rf.get(), kMinFetchSize, t, s.warmup, s.point_time));
      RFRPC_ASSIGN_OR_RETURN(
          LoopResult b, RunCalls(sr.get(), kMinFetchSize, t, s.warmup, s.point_time));
      ModePoint* mp = proto.add_mode_curve();
      mp->set_server_time_ns(t);
      mp->set_rf_ops_per_sec(a.ops);
      mp->set_sr_ops_per_sec(b.ops);
    }
  }
  const Payoff payoff = DerivePayoff(
      {proto.mode_curve().begin(), proto.mode_curve().end()},
      o.payoff_threshold, proto.read_rtt_ns(), s.cap);
  proto.set_payoff_server_time_ns(payoff.server_time_ns);
  proto.set_max_retries(static_cast<uint32_t>(payoff.max_retries));
  Progress(o, absl::StrFormat(
                  "[c] done: rf pays off below P*=%u ns%s -> N=%d",
                  payoff.server_time_ns,
                  PaysOffThroughout(proto.mode_curve(), o.payoff_threshold)
                      ? " (and above: the largest P measured)"
                      : "",
                  payoff.max_retries));

  // (b) I(R, F) in hybrid mode.
  {
    RFRPC_ASSIGN_OR_RETURN(std::unique_ptr<Channel> ch,
                           OpenChannel(o, address, RpcMode::kHybrid));
    const std::vector<uint32_t> fs =
        MeasuredFetchSizes(lh.low, lh.high, o.short_mode);
    const size_t total = s.table_times.size() * fs.size() * payoff.max_retries;
    size_t done = 0;
    for (uint32_t t : s.table_times) {
      ThroughputTable* table = proto.add_throughput();
      table->set_server_time_ns(t);
      for (int r = 1; r <= payoff.max_retries; ++r) {
        for (uint32_t f : fs) {
          Progress(o, absl::StrFormat("[b %zu/%zu] I(R=%d, F=%u) at P=%u ns",
                                      ++done, total, r, f, t));
          RFRPC_RETURN_IF_ERROR(ch->SetFetchParams(r, f));
          RFRPC_ASSIGN_OR_RETURN(LoopResult res,
                                 RunCalls(ch.get(), f, t, s.warmup, s.point_time));
          ThroughputPoint* pt = table->add_points();
          pt->set_retries(static_cast<uint32_t>(r));
          pt->set_fetch_size(f);
          pt->set_ops_per_sec(res.ops);
          pt->set_reads_per_call(res.reads_per_call);
        }
      }
    }
  }
  if (server != nullptr) server->Shutdown();
  proto.set_notes(absl::StrCat(
      proto.provider() == "shm" ? "same-host shm figures (the initiator's CPU "
                                  "copies); not RNIC figures. "
                                : "",
      "one synchronous client thread, one server worker"));
  Progress(o, "[b] done");
  return Profile::FromProto(std::move(proto), "");
}

std::string FormatProfile(const Profile& profile) {
  const TunerProfile& p = profile.proto();
  std::string out = absl::StrFormat(
      "profile v%u provider=%s host=%s created=%s%s\n%s\n", p.format_version(),
      p.provider(), p.host(), p.created(), p.short_mode() ? " (short)" : "",
      p.notes());
  absl::StrAppendFormat(&out, "(a) ops/s vs READ size (%s):\n%8s %14s %12s\n",
                        p.read_curve_source(), "size", "ops/s", "MB/s");
  for (const SizePoint& pt : p.read_curve()) {
    absl::StrAppendFormat(&out, "%8u %14.0f %12.1f\n", pt.size(),
                          pt.ops_per_sec(), pt.ops_per_sec() * pt.size() / 1e6);
  }
  absl::StrAppendFormat(&out, "(c) calls/s vs server time P:\n%8s %12s %12s %8s\n",
                        "P_ns", "rf", "server_reply", "rf/sr");
  for (const ModePoint& m : p.mode_curve()) {
    absl::StrAppendFormat(&out, "%8u %12.0f %12.0f %8.3f\n", m.server_time_ns(),
                          m.rf_ops_per_sec(), m.sr_ops_per_sec(),
                          m.sr_ops_per_sec() > 0
                              ? m.rf_ops_per_sec() / m.sr_ops_per_sec()
                              : 0.0);
  }
  for (const ThroughputTable& t : p.throughput()) {
    absl::StrAppendFormat(&out, "(b) I(R,F) calls/s at P=%u ns (reads/call):\n",
                          t.server_time_ns());
    uint32_t last_r = 0;
    for (const ThroughputPoint& pt : t.points()) {
      if (pt.retries() != last_r) {
        absl::StrAppendFormat(&out, "%sR=%-3u", last_r ? "\n" : "", pt.retries());
        last_r = pt.retries();
      }
      absl::StrAppendFormat(&out, " F%u:%.0f(%.2f)", pt.fetch_size(),
                            pt.ops_per_sec(), pt.reads_per_call());
    }
    out += "\n";
  }
  // P* is where rf stops beating server-reply by more than the threshold,
  // or, where it never stops (DerivePayoff), the largest P measured.
  const bool pays_throughout =
      PaysOffThroughout(p.mode_curve(), p.payoff_threshold());
  const std::string payoff =
      pays_throughout
          ? absl::StrFormat("rf beats server_reply by more than %.0f%% up to "
                            "the largest P measured, P*=%u ns",
                            100 * p.payoff_threshold(),
                            p.payoff_server_time_ns())
          : absl::StrFormat("rf within %.0f%% of server_reply from P*=%u ns",
                            100 * p.payoff_threshold(),
                            p.payoff_server_time_ns());
  absl::StrAppendFormat(
      &out,
      "chosen: L=%u H=%u N=%u (%s; one READ %.0f ns); %zu candidate F (step "
      "%u) x N\n",
      p.low_size(), p.high_size(), p.max_retries(), payoff, p.read_rtt_ns(),
      profile.candidate_fetch_sizes().size(), p.fetch_step());
  return out;
}

}  // namespace tuner
}  // namespace rfrpc
