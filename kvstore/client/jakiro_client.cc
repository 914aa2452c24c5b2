// Copyright 2026 The rfrpc Authors.

#include "kvstore/client/jakiro_client.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "kvstore/server/message_limits.h"
#include "kvstore/store/key_hash.h"
#include "transport/transport.h"

namespace rfrpc {
namespace kvstore {
namespace {

// The request and response messages of one thread's synchronous calls of
// one kind, kept from call to call: a message's string fields keep their
// buffers when it is refilled or re-parsed, so once warm a Get or Put
// allocates nothing for its key, value or result.
template <typename Request, typename Response>
struct ReusedMessages {
  Request request;
  Response response;
  bool busy = false;
};

// The calling thread's ReusedMessages for the length of one call, or
// messages of its own when they are in use: a callback that a synchronous
// call runs while it waits (Channel::Call runs finished async calls'
// callbacks) may make a synchronous call itself.
template <typename Request, typename Response>
class MessageLease {
 public:
  explicit MessageLease(ReusedMessages<Request, Response>* reused)
      : m_(reused) {
    if (m_->busy) {
      own_ = std::make_unique<ReusedMessages<Request, Response>>();
      m_ = own_.get();
    }
    m_->busy = true;
  }
  ~MessageLease() { m_->busy = false; }
  MessageLease(const MessageLease&) = delete;
  MessageLease& operator=(const MessageLease&) = delete;

  Request& request() { return m_->request; }
  Response& response() { return m_->response; }

 private:
  ReusedMessages<Request, Response>* m_;
  std::unique_ptr<ReusedMessages<Request, Response>> own_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<JakiroClient>> JakiroClient::Connect(
    const JakiroClientOptions& options) {
  if (options.servers.empty()) {
    return absl::InvalidArgumentError("no Jakiro server given");
  }
  if (std::set<std::string>(options.servers.begin(), options.servers.end())
          .size() != options.servers.size()) {
    return absl::InvalidArgumentError("a Jakiro server is listed twice");
  }
  if (options.virtual_nodes < 1) {
    return absl::InvalidArgumentError("virtual_nodes must be >= 1");
  }
  std::unique_ptr<JakiroClient> client(new JakiroClient(options));
  ChannelOptions co = options.channel;
  co.connections = 0;
  const uint32_t message_bytes =
      static_cast<uint32_t>(JakiroMaxMessageBytes(options.max_value_bytes));
  // Raised to fit the largest value, and said so when the caller asked
  // for less.
  for (const std::string& raised :
       RaiseMessageLimits(&co, message_bytes, /*prefix=*/"")) {
    LOG(WARNING) << "Jakiro client: " << raised << " raised to "
                 << message_bytes << ", what a value of "
                 << options.max_value_bytes << " bytes (max_value_bytes) needs";
  }
  std::optional<tuner::Profile> profile;
  if (!options.profile.empty()) {
    // The profile must have been made on the provider the channels use
    // ("auto": the one it picks on this host).
    absl::StatusOr<std::string> provider =
        transport::Provider::ResolveName(options.channel.provider);
    if (!provider.ok()) return provider.status();
    absl::StatusOr<tuner::Profile> p =
        tuner::Profile::Load(options.profile, *provider);
    if (!p.ok()) {
      return absl::Status(p.status().code(),
                          absl::StrCat("R/F profile ", options.profile, ": ",
                                       p.status().message()));
    }
    profile = std::move(*p);
  }
  for (size_t i = 0; i < options.servers.size(); ++i) {
    const std::string& address = options.servers[i];
    std::unique_ptr<tuner::OnlineTuner> tuner;
    if (profile.has_value()) {
      tuner::OnlineTunerOptions to;
      to.interval = options.tuner_interval;
      absl::StatusOr<std::unique_ptr<tuner::OnlineTuner>> t =
          tuner::OnlineTuner::Create(*profile, to);
      if (!t.ok()) return t.status();
      tuner = std::move(*t);
      // The tuner samples every result; a caller's own hook still runs.
      auto observe = tuner->Observer();
      auto user = options.channel.on_result;
      co.on_result = [observe, user](uint32_t bytes, absl::Duration server) {
        observe(bytes, server);
        if (user) user(bytes, server);
      };
    }
    absl::StatusOr<std::unique_ptr<Channel>> channel =
        Channel::Create(address, co);
    if (!channel.ok()) {
      return absl::Status(channel.status().code(),
                          absl::StrCat("Jakiro server ", address, ": ",
                                       channel.status().message()));
    }
    ServerConn conn;
    conn.channel = std::move(*channel);
    conn.stub = std::make_unique<rfrpc::kv::Jakiro::Stub>(conn.channel.get());
    if (tuner != nullptr) {
      tuner->Attach(conn.channel.get());
      client->tuners_.push_back(std::move(tuner));
    }
    client->servers_.push_back(std::move(conn));
    for (int v = 0; v < options.virtual_nodes; ++v) {
      const std::string point = absl::StrCat(address, "#", v);
      client->ring_.emplace_back(XxHash64(point.data(), point.size(), 0),
                                 static_cast<int>(i));
    }
  }
  std::sort(client->ring_.begin(), client->ring_.end());
  return client;
}

JakiroClient::JakiroClient(const JakiroClientOptions& options)
    : options_(options) {}

JakiroClient::~JakiroClient() {
  // Calls still in flight are aborted as their channels go; their
  // callbacks must not send them again.
  closing_.store(true, std::memory_order_release);
}

int JakiroClient::ServerOf(absl::string_view key) const {
  if (servers_.size() == 1) return 0;
  const uint64_t h = XxHash64(key.data(), key.size(), kRingSeed);
  auto it = std::lower_bound(ring_.begin(), ring_.end(), h,
                             [](const std::pair<uint64_t, int>& p, uint64_t v) {
                               return p.first < v;
                             });
  if (it == ring_.end()) it = ring_.begin();  // The ring wraps around.
  return it->second;
}

int JakiroClient::WorkerOf(absl::string_view key) const {
  return static_cast<int>(
      PartitionOfHash(KeyHash(key), workers(ServerOf(key))));
}

JakiroClient::ServerConn& JakiroClient::Route(absl::string_view key,
                                              ClientContext* ctx,
                                              int* workers) {
  ServerConn& s = servers_[ServerOf(key)];
  // At least 1: the handshake refuses a server that says fewer.
  *workers = s.channel->server_workers();
  ctx->set_shard(PartitionOfHash(KeyHash(key), *workers));
  return s;
}

bool JakiroClient::Misrouted(const ServerConn& s, int workers,
                             const absl::Status& st) const {
  return st.code() == absl::StatusCode::kFailedPrecondition &&
         s.channel->server_workers() != workers &&
         !closing_.load(std::memory_order_acquire);
}

template <typename Call>
absl::Status JakiroClient::CallRouted(absl::string_view key, Call call) {
  for (;;) {
    ClientContext ctx;
    int workers;
    ServerConn& server = Route(key, &ctx, &workers);
    absl::Status s = call(*server.stub, &ctx);
    if (!Misrouted(server, workers, s)) return s;
  }
}

// An async call's messages and context, kept until its callback, which may
// send the request again (Misrouted): each send gets a fresh context.
template <typename Request, typename Response>
struct JakiroClient::AsyncCall {
  Request req;
  Response resp;
  std::optional<ClientContext> ctx;
  int workers = 1;  // The worker count the last send was routed by.
  // Runs once, with the final status (resp filled in when it is OK).
  std::function<void(absl::Status)> done;
};

template <typename Request, typename Response>
void JakiroClient::SendRouted(
    std::shared_ptr<AsyncCall<Request, Response>> call,
    AsyncMethod<Request, Response> method) {
  AsyncCall<Request, Response>* c = call.get();
  c->ctx.emplace();
  ServerConn& s = Route(c->req.key(), &*c->ctx, &c->workers);
  // The request is serialized before the stub returns (Channel::CallAsync),
  // so a resend may reuse it.
  ((*s.stub).*method)(
      &*c->ctx, c->req, &c->resp,
      [this, &s, method, call = std::move(call)](absl::Status st) mutable {
        if (Misrouted(s, call->workers, st)) {
          SendRouted(std::move(call), method);
          return;
        }
        call->done(std::move(st));
      });
}

absl::Status JakiroClient::Get(absl::string_view key, std::string* value) {
  thread_local ReusedMessages<rfrpc::kv::GetRequest, rfrpc::kv::GetResponse>
      reused;
  MessageLease<rfrpc::kv::GetRequest, rfrpc::kv::GetResponse> m(&reused);
  m.request().set_key(key.data(), key.size());
  const absl::Status s =
      CallRouted(key, [&](rfrpc::kv::Jakiro::Stub& stub, ClientContext* ctx) {
        return stub.Get(ctx, m.request(), &m.response());
      });
  // Swapped, not moved: the response keeps the caller's old buffer for the
  // next call to parse into.
  if (s.ok()) value->swap(*m.response().mutable_value());
  return s;
}

void JakiroClient::GetAsync(absl::string_view key, std::string* value,
                            std::function<void(absl::Status)> done) {
  using Call = AsyncCall<rfrpc::kv::GetRequest, rfrpc::kv::GetResponse>;
  auto call = std::make_shared<Call>();
  call->req.set_key(key.data(), key.size());
  // The callback that runs `done` holds `call`, so `c` outlives it.
  Call* c = call.get();
  call->done = [c, value, done = std::move(done)](absl::Status st) {
    if (st.ok()) *value = std::move(*c->resp.mutable_value());
    done(std::move(st));
  };
  SendRouted(std::move(call), &rfrpc::kv::Jakiro::Stub::GetAsync);
}

absl::Status JakiroClient::Put(absl::string_view key, absl::string_view value) {
  thread_local ReusedMessages<rfrpc::kv::PutRequest, rfrpc::kv::PutResponse>
      reused;
  MessageLease<rfrpc::kv::PutRequest, rfrpc::kv::PutResponse> m(&reused);
  m.request().set_key(key.data(), key.size());
  m.request().set_value(value.data(), value.size());
  return CallRouted(key,
                    [&](rfrpc::kv::Jakiro::Stub& stub, ClientContext* ctx) {
                      return stub.Put(ctx, m.request(), &m.response());
                    });
}

void JakiroClient::PutAsync(absl::string_view key, absl::string_view value,
                            std::function<void(absl::Status)> done) {
  auto call = std::make_shared<
      AsyncCall<rfrpc::kv::PutRequest, rfrpc::kv::PutResponse>>();
  call->req.set_key(key.data(), key.size());
  call->req.set_value(value.data(), value.size());
  call->done = std::move(done);
  SendRouted(std::move(call), &rfrpc::kv::Jakiro::Stub::PutAsync);
}

absl::Status JakiroClient::Delete(absl::string_view key) {
  rfrpc::kv::DeleteRequest req;
  req.set_key(key.data(), key.size());
  rfrpc::kv::DeleteResponse resp;
  return CallRouted(key,
                    [&](rfrpc::kv::Jakiro::Stub& stub, ClientContext* ctx) {
                      return stub.Delete(ctx, req, &resp);
                    });
}

bool JakiroClient::Poll() {
  bool progressed = false;
  for (ServerConn& s : servers_) progressed |= s.channel->Poll();
  return progressed;
}

ChannelStats JakiroClient::stats(int server) const {
  return servers_[server].channel->stats();
}

ChannelStats JakiroClient::TotalStats() const {
  ChannelStats t;
  for (const ServerConn& s : servers_) {
    const ChannelStats c = s.channel->stats();
    t.AddCounters(c);
    // Per-connection figures: averaged over the servers below.
    t.fetch_rtt_ns += c.fetch_rtt_ns;
    t.fetch_delay_ns += c.fetch_delay_ns;
  }
  if (!servers_.empty()) {
    t.fetch_rtt_ns /= static_cast<double>(servers_.size());
    t.fetch_delay_ns /= static_cast<double>(servers_.size());
  }
  return t;
}

}  // namespace kvstore
}  // namespace rfrpc
