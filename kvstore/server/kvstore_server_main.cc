// Copyright 2026 The rfrpc Authors.
//
// kvstore_server: a Jakiro key-value server (proto/kvstore.proto).
//
//   kvstore_server --provider=shm --address=/tmp/jakiro.sock --workers=2
//       --kv_memory_mb=64 [--address_file=F] [--rfrpc_* server knobs]
//       [--rfrpc_metrics_port=N]
//
// Prints "listening on <address>" on stdout once clients can connect (and
// writes the address to --address_file, atomically, if given). With
// --rfrpc_metrics_port it serves Prometheus metrics (rfrpc's and Jakiro's
// partitions', docs/observability.md) and prints "metrics on <url>" first. Runs
// until SIGINT or SIGTERM, then shuts the server down, logs the partitions'
// statistics and exits 0. Exit status 1: the server could not start; 2: bad
// flags.
//
// Signals: SIGINT and SIGTERM are blocked in every thread (the mask is set
// before any thread starts and inherited) and taken by sigwait() on the main
// thread, so no code runs in signal-handler context.

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "flags/flagfile_check.h"
#include "flags/metrics_flags.h"
#include "flags/provider_flag.h"
#include "flags/server_flags.h"
#include "gflags/gflags.h"
#include "glog/logging.h"
#include "kvstore/server/jakiro_metrics.h"
#include "kvstore/server/jakiro_service.h"
#include "kvstore/server/kv_flags.h"
#include "kvstore/server/message_limits.h"
#include "rpc/server.h"

DEFINE_string(address, "",
              "Where to listen. shm: a Unix socket path (empty picks one); "
              "verbs: host:port (port 0 picks one).");
DEFINE_string(address_file, "",
              "If set, the listening address is written to this file "
              "(atomically) once the server is up.");
DEFINE_int32(workers, 1,
             "Server worker threads; each owns one partition (EREW).");
DEFINE_int64(kv_memory_mb, 64,
             "Item memory per partition, MiB (below 32 GiB: at most 32767).");
DEFINE_int64(kv_max_value_bytes, 32 << 10,
             "Largest value a Put accepts; larger ones are "
             "RESOURCE_EXHAUSTED.");

namespace rfrpc {
namespace kvstore {
namespace {

absl::Status WriteAddressFile(const std::string& path,
                              const std::string& address) {
  const std::string tmp = absl::StrCat(path, ".tmp.", getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out.is_open()) {
      return absl::UnavailableError(
          absl::StrCat("cannot write ", tmp, ": ", std::strerror(errno)));
    }
    out << address << "\n";
    out.close();
    if (!out) {
      return absl::UnavailableError(absl::StrCat("cannot write ", tmp));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    std::remove(tmp.c_str());  // Nothing left behind (e.g. path is a folder).
    return absl::UnavailableError(absl::StrCat("cannot rename ", tmp, " to ",
                                               path, ": ", std::strerror(e)));
  }
  return absl::OkStatus();
}

int Main() {
  // The server's own bound (ValidateServerOptions), checked before the
  // store builds a partition per worker and weighs their memory.
  if (FLAGS_workers < 1 || FLAGS_workers > 1024) {
    LOG(ERROR) << "--workers=" << FLAGS_workers << ": must be in [1, 1024]";
    return 2;
  }
  // Also keeps MiB to bytes and the message size from wrapping.
  if (absl::Status s =
          CheckKvFlags(FLAGS_kv_memory_mb, FLAGS_kv_max_value_bytes);
      !s.ok()) {
    LOG(ERROR) << s.message();
    return 2;
  }
  // Partitions take their memory as items arrive: more than the machine has
  // works until it fills. Say so at start rather than at the OOM killer.
  const int64_t ram_mb = static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) *
                         sysconf(_SC_PAGESIZE) / (1 << 20);
  if (ram_mb > 0 && FLAGS_kv_memory_mb > ram_mb / FLAGS_workers) {
    LOG(WARNING) << "--kv_memory_mb=" << FLAGS_kv_memory_mb << " x "
                 << FLAGS_workers << " worker(s) is more than this machine's "
                 << ram_mb << " MiB of memory";
  }
  JakiroServiceOptions kv;
  kv.workers = FLAGS_workers;
  kv.memory_bytes_per_partition = static_cast<size_t>(FLAGS_kv_memory_mb) << 20;
  kv.max_value_bytes = static_cast<size_t>(FLAGS_kv_max_value_bytes);

  ServerOptions so;
  absl::Status s = tools::ApplyServerFlags(&so);
  if (!s.ok()) {
    LOG(ERROR) << s;
    return 2;
  }
  so.provider = FLAGS_provider;
  so.address = FLAGS_address;
  so.workers = FLAGS_workers;
  // A Jakiro client connects to every worker: fewer connections than
  // workers would refuse every client.
  if (so.max_connections < so.workers) {
    LOG(ERROR) << "--rfrpc_max_connections=" << so.max_connections
               << " is below --workers=" << so.workers
               << ": a Jakiro client holds one connection per worker, so no "
                  "client could connect";
    return 2;
  }
  // Requests and responses must carry a key and a value of the maximum size.
  // CheckKvFlags bounded it by kServerMaxMessageBytes: it fits 32 bits.
  const uint32_t message_bytes =
      static_cast<uint32_t>(JakiroMaxMessageBytes(kv.max_value_bytes));
  for (const std::string& raised :
       RaiseMessageLimits(&so, message_bytes, "--rfrpc_server_")) {
    LOG(WARNING) << "kvstore_server: " << raised << " raised to "
                 << message_bytes << ", what a value of " << kv.max_value_bytes
                 << " bytes (--kv_max_value_bytes) needs";
  }

  LOG(INFO) << "kvstore_server: " << tools::DescribeServerOptions(so);
  LOG(INFO) << "kvstore_server: partitions=" << kv.workers
            << " memory_per_partition=" << FLAGS_kv_memory_mb
            << "MiB max_value_bytes=" << kv.max_value_bytes
            << " max_key_bytes=" << Partition::kMaxKeyBytes;

  absl::StatusOr<std::unique_ptr<JakiroService>> service =
      JakiroService::Create(kv);
  if (!service.ok()) {
    LOG(ERROR) << "cannot create the store: " << service.status();
    return service.status().code() == absl::StatusCode::kInvalidArgument ? 2
                                                                         : 1;
  }
  // The segment size comes from the store (PartitionOptions::segment_bytes):
  // a small --kv_memory_mb caps it below the largest item.
  s = CheckValueFitsSegment(FLAGS_kv_memory_mb, FLAGS_kv_max_value_bytes,
                            (*service)->segment_bytes());
  if (!s.ok()) {
    LOG(ERROR) << s.message();
    return 2;
  }
  // Before the server: destroyed after it, its folds read the service.
  absl::StatusOr<std::unique_ptr<tools::FlagMetrics>> metrics =
      tools::FlagMetrics::Create();
  if (!metrics.ok()) {
    LOG(ERROR) << metrics.status();
    return 2;
  }
  if (*metrics != nullptr) {
    s = ExportJakiroMetrics(service->get(), (*metrics)->metrics());
    if (s.ok()) s = (*metrics)->Serve();
    if (!s.ok()) {
      LOG(ERROR) << "cannot export metrics: " << s;
      return 1;
    }
  }
  Server server(so);
  s = server.RegisterService(service->get());
  if (s.ok()) s = server.Start();
  if (!s.ok()) {
    LOG(ERROR) << "cannot start the server: " << s;
    return 1;
  }
  const std::string address = server.address();
  if (!FLAGS_address_file.empty()) {
    s = WriteAddressFile(FLAGS_address_file, address);
    if (!s.ok()) {
      LOG(ERROR) << s;
      server.Shutdown();
      return 1;
    }
  }
  if (*metrics != nullptr && (*metrics)->serving()) {
    std::printf("metrics on %s\n", (*metrics)->url().c_str());
    LOG(INFO) << "metrics on " << (*metrics)->url();
  }
  std::printf("listening on %s\n", address.c_str());
  std::fflush(stdout);
  LOG(INFO) << "listening on " << address;

  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  int sig = 0;
  while (sigwait(&stop, &sig) != 0) {
  }
  LOG(INFO) << "got " << strsignal(sig) << ", shutting down";
  server.Shutdown();
  const ServerStats st = server.stats();
  LOG(INFO) << "server: calls=" << st.calls
            << " server_reply=" << st.calls_server_reply
            << " failed=" << st.calls_failed << " batches=" << st.batches
            << " connections=" << st.connections_accepted;
  // The workers are joined: the partitions are ours to read now.
  for (int w = 0; w < (*service)->workers(); ++w) {
    const PartitionStats& p = (*service)->partition_stats(w);
    LOG(INFO) << "partition " << w << ": items=" << p.items
              << " live_bytes=" << p.live_bytes << " hits=" << p.hits
              << " misses=" << p.misses << " puts=" << p.puts
              << " deletes=" << p.deletes
              << " evictions(bucket/memory)=" << p.evictions_bucket_full << "/"
              << p.evictions_memory << " compactions=" << p.compactions;
  }
  int rc = 0;
  if (*metrics != nullptr) {
    s = (*metrics)->WriteFile();
    if (!s.ok()) {
      LOG(ERROR) << s;
      rc = 1;  // As ycsb does: the metrics asked for were not written.
    }
  }
  if (!FLAGS_address_file.empty()) std::remove(FLAGS_address_file.c_str());
  LOG(INFO) << "kvstore_server: stopped";
  return rc;
}

}  // namespace
}  // namespace kvstore
}  // namespace rfrpc

int main(int argc, char** argv) {
  // Before any thread exists, so every thread inherits the mask and only
  // sigwait() in Main takes these signals.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  // A closed stderr (`kvstore_server ... 2>&1 | grep -m1 listening`) must
  // not kill the server at its next log line: writes fail with EPIPE.
  signal(SIGPIPE, SIG_IGN);

  FLAGS_logtostderr = true;
  gflags::SetUsageMessage(
      "kvstore_server --provider=shm|verbs --address=ADDR --workers=N "
      "--kv_memory_mb=MB [--rfrpc_* knobs]. --helpshort lists its own "
      "flags; --helpmatch=flags/ the --provider and --rfrpc_* server "
      "flags (docs/jakiro.md).");
  if (absl::Status s = rfrpc::tools::CheckFlagfiles(argc, argv); !s.ok()) {
    std::cerr << "kvstore_server: " << s.message() << "\n";
    return 2;
  }
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  google::InitGoogleLogging(argv[0]);
  if (absl::Status s = rfrpc::kvstore::CheckNoPositionalArgs(argc, argv);
      !s.ok()) {
    LOG(ERROR) << s.message();
    return 2;
  }
  return rfrpc::kvstore::Main();
}
