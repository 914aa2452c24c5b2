// Copyright 2026 The rfrpc Authors.
//
// The "jakiro" YCSB driver: Jakiro (proto/kvstore.proto) through
// JakiroClient. A record is one Jakiro value holding the record_codec.h
// encoding of its fields (the memcached driver's format); the table name is
// not part of the key.
//
//   Read    Get, then the wanted fields
//   Insert  Put (replaces an existing record)
//   Update  Put when the update writes every field (fieldcount of them);
//           otherwise Get + merge + Put (not atomic: concurrent updates of one
//           record's different fields may lose one, as in Java YCSB bindings
//           without CAS; values stay valid for dataintegrity, which derives
//           them from key and field only)
//   Delete  Delete
//   Scan    NOT_IMPLEMENTED (Jakiro keys have no order); counted as failed
//
// Pipelined (`outstanding` > 1): ReadAsync / UpdateAsync / InsertAsync do the
// same through JakiroClient::GetAsync / PutAsync. By default the client
// thread itself drives them (Poll, jakiro.progress_thread=false), so their
// callbacks (decode, merge, a partial update's Put) run on that thread inside
// Poll; with a progress thread they run there. Each async operation has its
// own buffers, so they overlap freely.
//
// Properties (with -p or in a workload file); unknown jakiro.* names are an
// error:
//   jakiro.servers          comma-separated server addresses (shm socket
//                           paths or verbs host:port). Required.
//   jakiro.provider         shm | verbs | auto. Default: shm
//   jakiro.mode             rf | server_reply | hybrid. Default: hybrid
//   jakiro.retries          R. Default: 5
//   jakiro.fetch_size       F, bytes. Default: 256
//   jakiro.switch_after     K. Default: 2
//   jakiro.slots            calls in flight per connection. Default: 8
//   jakiro.batch            off | fixed | auto | adaptive. Default: off
//   jakiro.batch_size       N. Default: 16
//   jakiro.batch_bytes      L. Default: 2048
//   jakiro.batch_timeout_us T. Default: 5000
//   jakiro.batch_idle_in_flight
//                           idle flush: an open batch nobody is adding to
//                           goes as soon as a caller would wait for it,
//                           while fewer than this many batches are in
//                           flight; 0: N, L and T only. Default: 1
//   jakiro.batch_sync_combine
//                           true: batches of sync calls wait for company too
//                           (callers adding, batches in flight), so sync
//                           threads combine. Default: false
//   jakiro.max_outstanding  Default: 256
//   jakiro.latency_limit_us auto sizer bound. Default: 100
//   jakiro.latency_alpha    auto sizer alpha. Default: 0.05
//   jakiro.fetch_miss_target
//                           share of calls whose first fetch may come too
//                           early (ChannelOptions::fetch.delay_miss_target):
//                           higher trades READs for latency. Default:
//                           kJakiroFetchMissTarget (0.2)
//   jakiro.fetch_policy     adaptive | paper (fetch at once, R times; see
//                           rfrpc::SetFetchPolicy). Default: adaptive
//   jakiro.sizer_rule       auto sizer: proportional | paper (-1/+1 per
//                           window; rfrpc::SetSizerRule). Default:
//                           proportional
//   jakiro.sizer_window     auto sizer: calls per window. Default: 1000
//   jakiro.max_inline       WRITEs up to this go inline; 0: none.
//                           Default: 128
//   jakiro.signal_every     a post list is signaled once this many WRITEs
//                           went unsignaled, in [1, 64]. Default: 16
//   jakiro.profile          a calibrated R/F profile (rfrpc_tune calibrate
//                           --out=FILE): each server's channel is tuned
//                           online from it (docs/tuner.md). Default: none
//   jakiro.tuner_interval_ms
//                           the online tuner's period. Default: 1000
//   jakiro.timeout_ms       per-call deadline. Default: 5000
//   jakiro.auth_token       handshake secret. Default: none
//   jakiro.max_value_bytes  largest value. Default: 32768
//   jakiro.virtual_nodes    ring points per server. Default: 160
//   jakiro.connect_retry_ms keep retrying the first connection this long
//                           (a server still starting). Default: 0
//   jakiro.shared_client    true: all client threads share one JakiroClient
//                           (one set of connections), so their concurrent
//                           calls can share request batches. Default: true if
//                           jakiro.batch is not off, else false (each thread
//                           has its own connections, as the paper's clients).
//   jakiro.progress_thread  true: each channel runs a progress thread for
//                           async calls; false: the YCSB thread polls them
//                           itself (DB::Poll). Default: false if the
//                           `outstanding` property is > 1, else true.
//   jakiro.print_stats      true: print channel counters (fetches, modes,
//                           batches) to stderr at the end. Default: false
//   jakiro.<knob>           every other ChannelOptions knob
//                           (rpc/option_knobs.h), in the syntax of its
//                           --rfrpc_<knob> flag: switch_back_ratio,
//                           connections, max_request_bytes,
//                           max_response_bytes, rering_after_us,
//                           connect_timeout_ms, post_lists, batch_group,
//                           sizer_min_window_ms, sizer_max_window_ms,
//                           sizer_holdoff_windows, sizer_shrink_windows,
//                           sizer_peak_guard, sizer_grow_to,
//                           max_fetch_delay_us, busy_wait,
//                           method_stats, device, ib_port, gid_index,
//                           socket_dir. Default: ChannelOptions'.
//
// Thread-safety: one JakiroDb per client thread; a shared JakiroClient is
// thread-safe.

#ifndef RFRPC_KVSTORE_YCSB_JAKIRO_DB_H_
#define RFRPC_KVSTORE_YCSB_JAKIRO_DB_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "kvstore/client/jakiro_client.h"
#include "kvstore/ycsb/db.h"
#include "kvstore/ycsb/properties.h"

namespace rfrpc {
namespace ycsb {

struct JakiroDbOptions {
  kvstore::JakiroClientOptions client;
  bool shared_client = false;
  bool print_stats = false;
  // Default: 0 (fail at once if no server answers).
  absl::Duration connect_retry = absl::ZeroDuration();
  // The workload's fieldcount: an update of this many fields replaces the
  // record. Default: 10 (YCSB's).
  int64_t fieldcount = 10;

  // Reads the jakiro.* properties (and fieldcount). InvalidArgument naming
  // the property's origin for a malformed value or an unknown jakiro.* name.
  static absl::StatusOr<JakiroDbOptions> FromProperties(const Properties& p);
};

class JakiroDb final : public DB {
 public:
  explicit JakiroDb(JakiroDbOptions options);
  ~JakiroDb() override;

  // Connects (or joins the shared client). The connection error, naming the
  // server, otherwise.
  absl::Status Init() override;
  absl::Status Cleanup() override;

  absl::Status Read(absl::string_view table, absl::string_view key,
                    const std::vector<std::string>* fields,
                    Record* result) override;
  absl::Status Scan(absl::string_view table, absl::string_view start_key,
                    int64_t count, const std::vector<std::string>* fields,
                    std::vector<Record>* result) override;
  absl::Status Update(absl::string_view table, absl::string_view key,
                      const Record& values) override;
  absl::Status Insert(absl::string_view table, absl::string_view key,
                      const Record& values) override;
  absl::Status Delete(absl::string_view table, absl::string_view key) override;
  bool SupportsScan() const override { return false; }

  bool SupportsAsync() const override { return true; }
  void ReadAsync(absl::string_view table, absl::string_view key,
                 const std::vector<std::string>* fields, Record* result,
                 Done done) override;
  void UpdateAsync(absl::string_view table, absl::string_view key,
                   const Record& values, Done done) override;
  void InsertAsync(absl::string_view table, absl::string_view key,
                   const Record& values, Done done) override;
  // Drives the calls from this thread, unless a progress thread does.
  bool Poll() override {
    return !options_.client.channel.progress_thread && client_->Poll();
  }

 private:
  const JakiroDbOptions options_;
  std::shared_ptr<kvstore::JakiroClient> client_;
  std::string value_;    // Reused buffers of this thread.
  std::string encoded_;
};

}  // namespace ycsb
}  // namespace rfrpc

#endif  // RFRPC_KVSTORE_YCSB_JAKIRO_DB_H_
