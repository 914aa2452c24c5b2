// Copyright 2026 The rfrpc Authors.

#include "kvstore/ycsb/jakiro_db.h"

#include <atomic>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "kvstore/ycsb/basic_db.h"
#include "kvstore/ycsb/record_codec.h"
#include "rpc/option_knobs.h"
#include "rpc/options.h"

namespace rfrpc {
namespace ycsb {
namespace {

absl::Status BadProperty(const Properties::Entry& e, absl::string_view key,
                         absl::string_view expected) {
  return absl::InvalidArgumentError(absl::StrCat(
      e.origin, ": ", key, ": expected ", expected, ", got \"", e.value, "\""));
}

// The driver's own properties; every other jakiro.<name> is the
// ChannelOptions knob <name> (rpc/option_knobs.h).
constexpr const char* kDriverProperties[] = {
    "jakiro.servers",          "jakiro.provider",
    "jakiro.max_value_bytes",  "jakiro.virtual_nodes",
    "jakiro.connect_retry_ms", "jakiro.shared_client",
    "jakiro.print_stats",      "jakiro.profile",
    "jakiro.tuner_interval_ms",
};

bool IsDriverProperty(absl::string_view key) {
  for (const char* k : kDriverProperties) {
    if (key == k) return true;
  }
  return false;
}

// Reads an integer property in [min, max] into *out if set.
absl::Status IntProperty(const Properties& p, absl::string_view key,
                         int64_t min, int64_t max, int64_t* out) {
  const Properties::Entry* e = p.Find(key);
  if (e == nullptr) return absl::OkStatus();
  int64_t v;
  if (!absl::SimpleAtoi(e->value, &v) || v < min || v > max) {
    return BadProperty(*e, key,
                       absl::StrCat("an integer in [", min, ", ", max, "]"));
  }
  *out = v;
  return absl::OkStatus();
}

absl::Status BoolProperty(const Properties& p, absl::string_view key,
                          bool* out) {
  const Properties::Entry* e = p.Find(key);
  if (e == nullptr) return absl::OkStatus();
  const std::string v = absl::AsciiStrToLower(e->value);
  if (v != "true" && v != "false") return BadProperty(*e, key, "true or false");
  *out = v == "true";
  return absl::OkStatus();
}

// Clients shared between the threads of a run, by configuration.
struct SharedClients {
  absl::Mutex mu;
  std::map<std::string, std::weak_ptr<kvstore::JakiroClient>> clients
      ABSL_GUARDED_BY(mu);
};
SharedClients& Shared() {
  static SharedClients* s = new SharedClients;
  return *s;
}

absl::StatusOr<std::unique_ptr<kvstore::JakiroClient>> ConnectWithRetry(
    const JakiroDbOptions& o) {
  const absl::Time give_up = absl::Now() + o.connect_retry;
  for (;;) {
    absl::StatusOr<std::unique_ptr<kvstore::JakiroClient>> c =
        kvstore::JakiroClient::Connect(o.client);
    if (c.ok() || c.status().code() == absl::StatusCode::kInvalidArgument ||
        absl::Now() >= give_up) {
      return c;
    }
    absl::SleepFor(absl::Milliseconds(100));
  }
}

}  // namespace

absl::StatusOr<JakiroDbOptions> JakiroDbOptions::FromProperties(
    const Properties& p) {
  for (const auto& [key, entry] : p.entries()) {
    if (!absl::StartsWith(key, "jakiro.")) continue;
    if (!IsDriverProperty(key) &&
        FindChannelKnob(absl::string_view(key).substr(strlen("jakiro."))) ==
            nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          entry.origin, ": unknown property \"", key, "\" of the jakiro driver"));
    }
  }
  // A knob the Jakiro client sets itself: taken, it would be ignored.
  if (const Properties::Entry* e = p.Find("jakiro.connections")) {
    return absl::InvalidArgumentError(absl::StrCat(
        e->origin,
        ": jakiro.connections: the Jakiro client opens one connection per "
        "server worker (docs/jakiro.md); it cannot be set"));
  }
  JakiroDbOptions o;
  ChannelOptions& c = o.client.channel;
  if (const Properties::Entry* e = p.Find("jakiro.servers")) {
    // An empty entry ("a,", "a,,b", "") is refused rather than skipped: it
    // is most likely a server lost to an unset shell variable, and a run
    // against fewer servers than meant measures something else.
    for (absl::string_view s : absl::StrSplit(e->value, ',')) {
      s = absl::StripAsciiWhitespace(s);
      if (s.empty()) {
        return BadProperty(*e, "jakiro.servers",
                           "address[,address...] with no empty entry");
      }
      o.client.servers.emplace_back(s);
    }
  } else {
    return absl::InvalidArgumentError(
        "jakiro.servers is not set (e.g. -p jakiro.servers=/tmp/jakiro.sock)");
  }
  if (const Properties::Entry* e = p.Find("jakiro.provider")) {
    const std::string v = absl::AsciiStrToLower(e->value);
    if (v != "shm" && v != "verbs" && v != "auto") {
      return BadProperty(*e, "jakiro.provider", "shm, verbs or auto");
    }
    c.provider = v;
  }
  int64_t v;
  absl::Status s;
  v = o.client.virtual_nodes;
  s = IntProperty(p, "jakiro.virtual_nodes", 1, 1 << 16, &v);
  if (!s.ok()) return s;
  o.client.virtual_nodes = static_cast<int>(v);
  if (const Properties::Entry* e = p.Find("jakiro.profile")) {
    o.client.profile = e->value;
  }
  v = absl::ToInt64Milliseconds(o.client.tuner_interval);
  s = IntProperty(p, "jakiro.tuner_interval_ms", 1, int64_t{1} << 30, &v);
  if (!s.ok()) return s;
  o.client.tuner_interval = absl::Milliseconds(v);
  v = static_cast<int64_t>(o.client.max_value_bytes);
  s = IntProperty(p, "jakiro.max_value_bytes", 1, 1 << 30, &v);
  if (!s.ok()) return s;
  o.client.max_value_bytes = static_cast<size_t>(v);
  v = 0;
  s = IntProperty(p, "jakiro.connect_retry_ms", 0, int64_t{1} << 40, &v);
  if (!s.ok()) return s;
  o.connect_retry = absl::Milliseconds(v);
  s = BoolProperty(p, "jakiro.print_stats", &o.print_stats);
  if (!s.ok()) return s;
  // Pipelined YCSB threads poll their own calls (DB::Poll) unless asked:
  // the default before jakiro.progress_thread (a knob) is applied.
  int64_t outstanding = 1;
  s = IntProperty(p, "outstanding", 1, int64_t{1} << 31, &outstanding);
  if (!s.ok()) return s;
  c.progress_thread = outstanding <= 1;
  // The ChannelOptions knobs, parsed as the --rfrpc_* flags parse them, in
  // the knobs' order (a rule before the fields it sets).
  for (const ChannelKnob& k : ChannelKnobs()) {
    const std::string key = absl::StrCat("jakiro.", k.name);
    const Properties::Entry* e = p.Find(key);
    if (e == nullptr) continue;
    s = k.set(e->value, &c);
    if (!s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(e->origin, ": ", key, ": ", s.message()));
    }
  }
  if (c.batching.mode == BatchMode::kOff) {
    // Batching knobs given without batching: taken, but they do nothing.
    std::vector<std::string> idle;
    for (const ChannelKnob& k : ChannelKnobs()) {
      if (absl::StartsWith(k.field, "batching.") && k.name != "batch" &&
          p.Find(absl::StrCat("jakiro.", k.name)) != nullptr) {
        idle.push_back(absl::StrCat("jakiro.", k.name));
      }
    }
    static std::atomic<bool> said{false};  // Once, not per thread's DB.
    if (!idle.empty() && !said.exchange(true)) {
      std::fprintf(stderr,
                   "ycsb: %s: no effect with jakiro.batch=off (the default)\n",
                   absl::StrJoin(idle, ", ").c_str());
    }
  }
  o.shared_client = c.batching.mode != BatchMode::kOff;
  s = BoolProperty(p, "jakiro.shared_client", &o.shared_client);
  if (!s.ok()) return s;
  s = IntProperty(p, "fieldcount", 1, int64_t{1} << 31, &o.fieldcount);
  if (!s.ok()) return s;
  // The library's own bounds, with the same message as Channel::Create and
  // the --rfrpc_* flags give, named by the property that sets the field.
  std::string field;
  s = ValidateChannelOptions(c, &field);
  if (!s.ok()) {
    const ChannelKnob* k = FindChannelKnobOfField(field);
    return absl::InvalidArgumentError(absl::StrCat(
        k != nullptr ? absl::StrCat("jakiro.", k->name)
                     : absl::StrCat("(ChannelOptions) ", field),
        ": ", s.message()));
  }
  return o;
}

JakiroDb::JakiroDb(JakiroDbOptions options) : options_(std::move(options)) {}

JakiroDb::~JakiroDb() = default;

absl::Status JakiroDb::Init() {
  if (!options_.shared_client) {
    absl::StatusOr<std::unique_ptr<kvstore::JakiroClient>> c =
        ConnectWithRetry(options_);
    if (!c.ok()) return c.status();
    client_ = std::move(*c);
    return absl::OkStatus();
  }
  // One client per configuration, created by the first thread to get here;
  // the others wait for it under the mutex.
  const std::string key =
      absl::StrCat(absl::StrJoin(options_.client.servers, ","), "|",
                   options_.client.channel.provider, "|",
                   RpcModeName(options_.client.channel.mode), "|",
                   BatchModeName(options_.client.channel.batching.mode), "|",
                   options_.client.channel.progress_thread);
  SharedClients& shared = Shared();
  absl::MutexLock lock(&shared.mu);
  std::weak_ptr<kvstore::JakiroClient>& slot = shared.clients[key];
  client_ = slot.lock();
  if (client_ != nullptr) return absl::OkStatus();
  absl::StatusOr<std::unique_ptr<kvstore::JakiroClient>> c =
      ConnectWithRetry(options_);
  if (!c.ok()) return c.status();
  client_ = std::move(*c);
  slot = client_;
  return absl::OkStatus();
}

absl::Status JakiroDb::Cleanup() {
  if (client_ == nullptr) return absl::OkStatus();
  // A shared client reports once, from the last thread to leave it.
  if (options_.print_stats && client_.use_count() == 1) {
    const ChannelStats st = client_->TotalStats();
    std::fprintf(
        stderr,
        "jakiro client: provider=%s mode=%s batch=%s calls=%llu "
        "remote_fetch=%llu server_reply=%llu failed=%llu reads/call=%.2f "
        "fetches=%llu switches(to_sr/to_rf)=%llu/%llu batches=%llu "
        "calls/batch=%.2f fetch_delay_ns=%.0f rtt_ns=%.0f\n",
        options_.client.channel.provider.c_str(),
        std::string(RpcModeName(options_.client.channel.mode)).c_str(),
        std::string(BatchModeName(options_.client.channel.batching.mode))
            .c_str(),
        static_cast<unsigned long long>(st.calls),
        static_cast<unsigned long long>(st.calls_remote_fetch),
        static_cast<unsigned long long>(st.calls_server_reply),
        static_cast<unsigned long long>(st.calls_failed), st.ReadsPerCall(),
        static_cast<unsigned long long>(st.fetches),
        static_cast<unsigned long long>(st.switches_to_server_reply),
        static_cast<unsigned long long>(st.switches_to_remote_fetch),
        static_cast<unsigned long long>(st.batches), st.CallsPerBatch(),
        st.fetch_delay_ns, st.fetch_rtt_ns);
    for (int i = 0; i < client_->num_servers(); ++i) {
      const tuner::OnlineTuner* t = client_->tuner(i);
      if (t == nullptr) continue;
      const tuner::OnlineTunerStats ts = t->stats();
      std::fprintf(stderr,
                   "jakiro client: server %d R/F tuner: R=%d F=%u "
                   "reselections=%llu samples=%llu\n",
                   i, ts.retries, ts.fetch_size,
                   static_cast<unsigned long long>(ts.reselections),
                   static_cast<unsigned long long>(ts.samples));
    }
  }
  client_.reset();
  return absl::OkStatus();
}

absl::Status JakiroDb::Read(absl::string_view table, absl::string_view key,
                            const std::vector<std::string>* fields,
                            Record* result) {
  absl::Status s = client_->Get(key, &value_);
  if (!s.ok()) {
    result->clear();
    return s;
  }
  return DecodeRecordInto(value_, fields, result);
}

absl::Status JakiroDb::Scan(absl::string_view, absl::string_view, int64_t,
                            const std::vector<std::string>*,
                            std::vector<Record>* result) {
  result->clear();
  return absl::UnimplementedError("Jakiro keys have no order: no scan");
}

absl::Status JakiroDb::Update(absl::string_view table, absl::string_view key,
                              const Record& values) {
  if (static_cast<int64_t>(values.size()) >= options_.fieldcount) {
    return Insert(table, key, values);  // Every field: a plain replace.
  }
  absl::Status s = client_->Get(key, &value_);
  if (!s.ok()) return s;
  absl::StatusOr<Record> record = DecodeRecord(value_);
  if (!record.ok()) return record.status();
  MergeFields(values, &*record);
  encoded_.clear();
  EncodeRecord(*record, &encoded_);
  return client_->Put(key, encoded_);
}

absl::Status JakiroDb::Insert(absl::string_view table, absl::string_view key,
                              const Record& values) {
  encoded_.clear();
  EncodeRecord(values, &encoded_);
  return client_->Put(key, encoded_);
}

absl::Status JakiroDb::Delete(absl::string_view table, absl::string_view key) {
  return client_->Delete(key);
}

void JakiroDb::ReadAsync(absl::string_view table, absl::string_view key,
                         const std::vector<std::string>* fields,
                         Record* result, Done done) {
  result->clear();
  auto value = std::make_shared<std::string>();
  client_->GetAsync(key, value.get(),
                    [value, fields, result, done = std::move(done)](
                        absl::Status s) {
                      if (s.ok()) s = DecodeRecordInto(*value, fields, result);
                      done(std::move(s));
                    });
}

void JakiroDb::UpdateAsync(absl::string_view table, absl::string_view key,
                           const Record& values, Done done) {
  if (static_cast<int64_t>(values.size()) >= options_.fieldcount) {
    InsertAsync(table, key, values, std::move(done));  // A plain replace.
    return;
  }
  // Get, then merge and Put from the Get's callback (the caller keeps `key`
  // and `values`, and this DB, alive until `done`). The callback holds the
  // client by pointer, not by a shared_ptr: a copy it held could be the
  // last one once `done` has let the caller destroy the DB, and the client's
  // channel would then be destroyed on its own progress thread, which
  // cannot join itself (std::terminate).
  auto value = std::make_shared<std::string>();
  kvstore::JakiroClient* client = client_.get();
  client_->GetAsync(
      key, value.get(),
      [client, value, key, &values, done = std::move(done)](absl::Status s) {
        if (!s.ok()) return done(std::move(s));
        absl::StatusOr<Record> record = DecodeRecord(*value);
        if (!record.ok()) return done(record.status());
        MergeFields(values, &*record);
        value->clear();
        EncodeRecord(*record, value.get());
        client->PutAsync(key, *value, std::move(done));
      });
}

void JakiroDb::InsertAsync(absl::string_view table, absl::string_view key,
                           const Record& values, Done done) {
  std::string encoded;
  EncodeRecord(values, &encoded);
  client_->PutAsync(key, encoded, std::move(done));  // Copies the value.
}

namespace {
const bool kRegistered = RegisterDriver(
    "jakiro",
    [](const Properties& props) -> absl::StatusOr<std::unique_ptr<DB>> {
      absl::StatusOr<JakiroDbOptions> o = JakiroDbOptions::FromProperties(props);
      if (!o.ok()) return o.status();
      return std::make_unique<JakiroDb>(std::move(*o));
    });
}  // namespace

}  // namespace ycsb
}  // namespace rfrpc
