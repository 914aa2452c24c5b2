// Copyright 2026 The rfrpc Authors.
//
// rfrpc_tune: the R/F tuner's command line (docs/tuner.md).
//
//   rfrpc_tune calibrate [--short] --out=profile.txt [--provider=shm]
//                        [--address=SERVER]   # default: in-process server
//   rfrpc_tune select --profile=profile.txt (--sizes=32,32,4000 |
//                     --sizes_file=FILE) [--server_time_ns=P]
//                     [--flagfile_out=tuned.flags]
//   rfrpc_tune serve [--provider=shm] [--listen=ADDR]   # calibration server
//
// The flagfile sets --rfrpc_retries and --rfrpc_fetch_size for binaries that
// define them (e.g. benchmarks/rpc_bench): `rpc_bench --flagfile=tuned.flags`.

#include <sys/stat.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cmath>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "flags/flagfile_check.h"
#include "flags/provider_flag.h"
#include "gflags/gflags.h"
#include "glog/logging.h"
#include "rpc/server.h"
#include "rpc/tuner/calibration_service.h"
#include "rpc/tuner/calibrator.h"
#include "rpc/tuner/profile.h"
#include "rpc/tuner/selector.h"
#include "transport/transport.h"

DEFINE_bool(short, false, "calibrate: quick settings (< 30 s, for smoke runs).");
DEFINE_string(out, "", "calibrate: where to write the profile.");
DEFINE_string(address, "",
              "calibrate: a server running the calibration service "
              "(rfrpc_tune serve); empty starts one in this process.");
DEFINE_string(listen, "", "serve: listen address (shm: socket path or empty).");
DEFINE_bool(progress, true, "calibrate: print a progress line to stderr.");
DEFINE_string(profile, "", "select: the profile to read.");
DEFINE_string(sizes, "", "select: result sizes, e.g. 32,32,4000 or 56:990,4016:10.");
DEFINE_string(sizes_file, "", "select: a file of result sizes (same syntax).");
DEFINE_double(server_time_ns, 0, "select: the workload's server time P, ns.");
DEFINE_int32(rows, 12, "select: fetch sizes to show in the score summary.");
DEFINE_double(tie_tolerance, rfrpc::tuner::kCliTieTolerance,
              "select: scores within this fraction of the best are ties, "
              "won by the smaller F (then R); 0 = strictly the best.");
DEFINE_string(flagfile_out, "", "select: write a gflags flagfile here.");
DEFINE_bool(check_provider, true,
            "select: refuse a profile made on another provider than --provider.");

namespace rfrpc {
namespace tuner {
namespace {

int Fail(const absl::Status& s) {
  std::fprintf(stderr, "rfrpc_tune: %s\n", s.ToString().c_str());
  return 1;
}

int RunCalibrate() {
  if (FLAGS_out.empty()) {
    return Fail(absl::InvalidArgumentError("calibrate needs --out=FILE"));
  }
  {
    // Before a calibration of minutes, not after it: Save writes here
    // first and then renames, which a directory in the way would refuse.
    struct stat st;
    if (stat(FLAGS_out.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      return Fail(absl::InvalidArgumentError(absl::StrCat(
          "--out=", FLAGS_out, " is a directory: name the profile file")));
    }
    const std::string probe = FLAGS_out + ".tmp";
    std::ofstream out(probe, std::ios::trunc);
    if (!out) {
      return Fail(absl::PermissionDeniedError(absl::StrCat(
          "cannot write ", probe, ": ", std::strerror(errno),
          " (--out must be in a writable directory)")));
    }
    out.close();
    std::remove(probe.c_str());
  }
  CalibratorOptions o;
  o.provider = FLAGS_provider;
  o.address = FLAGS_address;
  o.short_mode = FLAGS_short;
  if (FLAGS_progress) {
    o.progress = [](const std::string& line) {
      std::fprintf(stderr, "\r\033[Kcalibrate %s", line.c_str());
      if (line.find("done") != std::string::npos) std::fprintf(stderr, "\n");
      std::fflush(stderr);
    };
  }
  const absl::Time start = absl::Now();
  absl::StatusOr<Profile> p = tuner::Calibrate(o);
  if (!p.ok()) return Fail(p.status());
  std::printf("%s", FormatProfile(*p).c_str());
  absl::Status s = p->Save(FLAGS_out);
  if (!s.ok()) return Fail(s);
  std::printf("calibrated in %.1f s; profile written to %s\n",
              absl::ToDoubleSeconds(absl::Now() - start), FLAGS_out.c_str());
  return 0;
}

int RunSelect() {
  if (FLAGS_profile.empty()) {
    return Fail(absl::InvalidArgumentError("select needs --profile=FILE"));
  }
  if (!(FLAGS_server_time_ns >= 0) || !std::isfinite(FLAGS_server_time_ns) ||
      FLAGS_rows < 1 ||
      !(FLAGS_tie_tolerance >= 0 && FLAGS_tie_tolerance < 1)) {
    return Fail(absl::InvalidArgumentError(absl::StrCat(
        "select needs --server_time_ns >= 0 (got ", FLAGS_server_time_ns,
        "), --rows >= 1 (got ", FLAGS_rows, ") and --tie_tolerance in [0, 1) "
        "(got ", FLAGS_tie_tolerance, ")")));
  }
  if (FLAGS_check_provider && FLAGS_provider != "shm" &&
      FLAGS_provider != "verbs" && FLAGS_provider != "auto") {
    // Else the profile's provider check would report a mismatch instead.
    return Fail(absl::InvalidArgumentError(
        absl::StrCat("--provider=", FLAGS_provider,
                     ": not a provider (shm, verbs or auto)")));
  }
  std::string provider;
  if (FLAGS_check_provider) {
    // A profile names the provider it was made on, never "auto".
    absl::StatusOr<std::string> resolved =
        transport::Provider::ResolveName(FLAGS_provider);
    if (!resolved.ok()) return Fail(resolved.status());
    provider = *resolved;
  }
  absl::StatusOr<Profile> p = Profile::Load(FLAGS_profile, provider);
  if (!p.ok()) return Fail(p.status());
  std::string text = FLAGS_sizes;
  if (!FLAGS_sizes_file.empty()) {
    std::ifstream in(FLAGS_sizes_file);
    struct stat st;
    if (!in ||
        (::stat(FLAGS_sizes_file.c_str(), &st) == 0 && S_ISDIR(st.st_mode))) {
      return Fail(absl::NotFoundError(
          absl::StrCat("cannot open ", FLAGS_sizes_file)));
    }
    std::stringstream ss;
    ss << in.rdbuf();
    absl::StrAppend(&text, text.empty() ? "" : ",", ss.str());
  }
  absl::StatusOr<SizeHistogram> h = SizeHistogram::ParseList(text);
  if (!h.ok()) return Fail(h.status());
  absl::StatusOr<Selection> sel = tuner::Select(*p, *h, FLAGS_server_time_ns,
                                                 FLAGS_tie_tolerance);
  if (!sel.ok()) return Fail(sel.status());
  std::printf("profile %s: provider=%s host=%s L=%u H=%u N=%d\n",
              FLAGS_profile.c_str(), p->provider().c_str(),
              p->proto().host().c_str(), p->low_size(), p->high_size(),
              p->max_retries());
  std::printf("%llu results in %zu size buckets\n",
              static_cast<unsigned long long>(h->total()), h->buckets().size());
  std::printf("%s", FormatSelection(*sel, FLAGS_rows).c_str());
  if (!FLAGS_flagfile_out.empty()) {
    std::ofstream out(FLAGS_flagfile_out, std::ios::trunc);
    const int open_errno = out ? 0 : errno;
    out << "# rfrpc_tune select --profile=" << FLAGS_profile << "\n"
        << "--rfrpc_retries=" << sel->retries << "\n"
        << "--rfrpc_fetch_size=" << sel->fetch_size << "\n";
    out.close();
    if (!out) {
      // Say why (a missing folder is not a permission problem).
      return Fail(absl::UnavailableError(
          absl::StrCat("cannot write ", FLAGS_flagfile_out, ": ",
                       std::strerror(open_errno != 0 ? open_errno : EIO))));
    }
    std::printf("flagfile written to %s\n", FLAGS_flagfile_out.c_str());
  }
  return 0;
}

absl::Notification* g_stop = nullptr;

int RunServe() {
  ServerOptions so;
  so.provider = FLAGS_provider;
  so.address = FLAGS_listen;
  Server server(so);
  CalibrationService service;
  absl::Status s = server.RegisterService(&service);
  if (s.ok()) s = server.Start();
  if (!s.ok()) return Fail(s);
  std::printf("calibration server on %s (provider %s); Ctrl-C stops\n",
              server.address().c_str(), FLAGS_provider.c_str());
  std::fflush(stdout);
  absl::Notification stop;
  g_stop = &stop;
  std::signal(SIGINT, [](int) { g_stop->Notify(); });
  std::signal(SIGTERM, [](int) { g_stop->Notify(); });
  stop.WaitForNotification();
  server.Shutdown();
  return 0;
}

}  // namespace
}  // namespace tuner
}  // namespace rfrpc

int main(int argc, char** argv) {
  gflags::SetUsageMessage(
      "rfrpc_tune calibrate|select|serve [flags] (see docs/tuner.md)");
  if (absl::Status s = rfrpc::tools::CheckFlagfiles(argc, argv); !s.ok()) {
    std::fprintf(stderr, "rfrpc_tune: %s\n", std::string(s.message()).c_str());
    return 2;
  }
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  google::InitGoogleLogging(argv[0]);
  if (argc != 2) {
    gflags::ShowUsageWithFlagsRestrict(argv[0], "rfrpc_tune");
    return 2;
  }
  const std::string cmd = argv[1];
  // Each of this file's flags says in its help which subcommand reads it
  // ("select: ..."): one given to another subcommand would do nothing.
  std::vector<gflags::CommandLineFlagInfo> flags;
  gflags::GetAllFlags(&flags);
  for (const gflags::CommandLineFlagInfo& f : flags) {
    if (f.is_default || !absl::EndsWith(f.filename, "rfrpc_tune.cc")) continue;
    const std::string owner = f.description.substr(0, f.description.find(':'));
    if ((owner == "calibrate" || owner == "select" || owner == "serve") &&
        owner != cmd) {
      std::fprintf(stderr, "rfrpc_tune: --%s is a flag of %s, not of %s\n",
                   f.name.c_str(), owner.c_str(), cmd.c_str());
      return 2;
    }
  }
  if (cmd == "calibrate") return rfrpc::tuner::RunCalibrate();
  if (cmd == "select") return rfrpc::tuner::RunSelect();
  if (cmd == "serve") return rfrpc::tuner::RunServe();
  std::fprintf(stderr, "rfrpc_tune: unknown subcommand \"%s\"\n", cmd.c_str());
  return 2;
}
