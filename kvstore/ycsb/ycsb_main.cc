// Copyright 2026 The rfrpc Authors.
//
// ycsb: the YCSB client, with Java YCSB's command line.
//
//   ycsb -load|-t -db NAME [-P workloadfile]... [-p key=value]...
//        [-threads N] [-target OPS] [-s] [-l LABEL] [--gflags...]
//
// Single-dash arguments are YCSB's and parsed here; double-dash arguments are
// gflags extras (--list_drivers, --print_properties). As in Java YCSB,
// property files load in order, then -p, -threads, -target, -db and -l
// override them in command-line order.
//
// --rfrpc_metrics_port=N serves the client's rfrpc metrics (the jakiro
// driver's channels, docs/observability.md) while it runs and prints
// "metrics on <url>" on stderr; --rfrpc_metrics_file=F writes them to F when
// the run ends (every channel closed by then: the final counts).
//
// Exit status: 0 on success; 1 if the run failed (driver error, a thread
// stopped early, a data-integrity mismatch); 2 on a usage or configuration
// error.

#include <algorithm>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "flags/flagfile_check.h"
#include "flags/metrics_flags.h"
#include "gflags/gflags.h"
#include "glog/logging.h"
#include "kvstore/ycsb/client.h"
#include "kvstore/ycsb/db.h"
#include "kvstore/ycsb/properties.h"
#include "proto/kvstore.rfrpc.h"

DEFINE_bool(list_drivers, false, "Print the registered drivers and exit.");
DEFINE_bool(print_properties, false,
            "Print every effective property with its origin before running.");
DEFINE_string(rfrpc_profile, "",
              "jakiro: a calibrated R/F profile (rfrpc_tune calibrate "
              "--out=FILE) the client starts from, re-selecting R and F "
              "online; the same as -p jakiro.profile=FILE, which wins if "
              "both are given.");

namespace rfrpc {
namespace ycsb {
namespace {

constexpr char kUsage[] =
    "Usage: ycsb -load|-t -db NAME [options]\n"
    "  -load          load phase: insert insertcount records\n"
    "  -t             run phase: operationcount operations\n"
    "  -db NAME       driver (see --list_drivers); property `db`\n"
    "  -P FILE        load a workload property file (repeatable, in order)\n"
    "  -p KEY=VALUE   set a property, overriding files (repeatable)\n"
    "  -threads N     client threads (1 to 4096); property `threadcount`\n"
    "  -target N      total target ops/sec; property `target`\n"
    "  -s             print a status line every status.interval seconds\n"
    "  -l LABEL       prefix of the status lines; property `label`\n"
    "  -p outstanding=N  run-phase operations in flight per thread (drivers\n"
    "                 with async support: jakiro, redis); default 1\n"
    "  --rfrpc_profile=FILE  jakiro: start from a calibrated R/F profile\n"
    "                 and re-select R and F online (-p jakiro.profile)\n"
    "  --list_drivers, --print_properties, --help: extras\n";

struct CommandLine {
  bool phase_given = false;
  bool load = false;
  bool status = false;
  std::vector<std::string> files;
  // (key, value, origin) in command-line order.
  std::vector<std::pair<std::string, std::string>> overrides;
  std::vector<std::string> override_origins;
};

absl::Status ParseYcsbArgs(const std::vector<std::string>& args,
                           CommandLine* cl) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](absl::string_view what) -> absl::StatusOr<std::string> {
      if (i + 1 >= args.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat(a, ": missing ", what));
      }
      return args[++i];
    };
    if (a == "-load" || a == "-t") {
      const bool load = a == "-load";
      if (cl->phase_given && cl->load != load) {
        return absl::InvalidArgumentError("give one of -load and -t, not both");
      }
      cl->phase_given = true;
      cl->load = load;
    } else if (a == "-s") {
      cl->status = true;
    } else if (a == "-P") {
      absl::StatusOr<std::string> v = value("property file");
      if (!v.ok()) return v.status();
      cl->files.push_back(*v);
    } else if (a == "-p") {
      absl::StatusOr<std::string> v = value("key=value");
      if (!v.ok()) return v.status();
      const size_t eq = v->find('=');
      if (eq == std::string::npos || eq == 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("-p ", *v, ": expected key=value"));
      }
      cl->overrides.emplace_back(v->substr(0, eq), v->substr(eq + 1));
      cl->override_origins.push_back("-p");
    } else if (a == "-threads" || a == "-target" || a == "-db" || a == "-l") {
      static const std::pair<const char*, const char*> kProperty[] = {
          {"-threads", "threadcount"},
          {"-target", "target"},
          {"-db", "db"},
          {"-l", "label"}};
      const char* property = nullptr;
      for (const auto& [flag, name] : kProperty) {
        if (a == flag) property = name;
      }
      absl::StatusOr<std::string> v = value("value");
      if (!v.ok()) return v.status();
      if (a == "-threads") {
        // Digits, and not 0; the upper bound is threadcount's (checked with
        // the other properties), so that a number past what an int64_t
        // holds is reported as above it, not as no integer.
        int64_t n;
        const bool digits =
            !v->empty() && std::all_of(v->begin(), v->end(), [](char c) {
              return absl::ascii_isdigit(static_cast<unsigned char>(c));
            });
        if (!digits || (absl::SimpleAtoi(*v, &n) && n < 1)) {
          return absl::InvalidArgumentError(absl::StrCat(
              "-threads: expected a positive integer, got \"", *v, "\""));
        }
      } else if (a == "-target") {
        double n;
        if (!absl::SimpleAtod(*v, &n) || n < 0) {
          return absl::InvalidArgumentError(absl::StrCat(
              "-target: expected a non-negative number, got \"", *v, "\""));
        }
      }
      cl->overrides.emplace_back(property, *v);
      cl->override_origins.push_back(a);
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown argument \"", a, "\""));
    }
  }
  // Without -load or -t the phase may come from dotransactions (Main).
  return absl::OkStatus();
}

// The phase: -load or -t, else the dotransactions property (as Java YCSB,
// whose flags set that property). A property that contradicts the flag, or
// is no boolean, is an error rather than ignored.
absl::Status ResolvePhase(const Properties& props, CommandLine* cl) {
  const Properties::Entry* e = props.Find("dotransactions");
  if (e == nullptr) {
    if (cl->phase_given) return absl::OkStatus();
    return absl::InvalidArgumentError(
        "give -load (load phase) or -t (run), or dotransactions=false|true");
  }
  bool transactions;
  if (e->value == "true") {
    transactions = true;
  } else if (e->value == "false") {
    transactions = false;
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "dotransactions=", e->value, " (", e->origin,
        "): expected true or false"));
  }
  if (cl->phase_given && transactions == cl->load) {
    return absl::InvalidArgumentError(absl::StrCat(
        "dotransactions=", e->value, " (", e->origin, ") contradicts ",
        cl->load ? "-load" : "-t"));
  }
  cl->phase_given = true;
  cl->load = !transactions;
  return absl::OkStatus();
}

int Main(int argc, char** argv) {
  // Double-dash arguments go to gflags, the rest is YCSB's.
  std::vector<char*> gflags_argv = {argv[0]};
  std::vector<std::string> ycsb_args;
  for (int i = 1; i < argc; ++i) {
    if (absl::StartsWith(argv[i], "--")) {
      gflags_argv.push_back(argv[i]);
    } else {
      ycsb_args.emplace_back(argv[i]);
    }
  }
  gflags::SetUsageMessage(kUsage);
  int gflags_argc = static_cast<int>(gflags_argv.size());
  char** gflags_argv_ptr = gflags_argv.data();
  FLAGS_logtostderr = true;  // Drivers (rfrpc) log warnings through glog.
  if (absl::Status s = tools::CheckFlagfiles(gflags_argc, gflags_argv_ptr);
      !s.ok()) {
    std::cerr << "ycsb: " << s.message() << "\n";
    return 2;
  }
  gflags::ParseCommandLineFlags(&gflags_argc, &gflags_argv_ptr, true);
  google::InitGoogleLogging(argv[0]);

  if (FLAGS_list_drivers) {
    std::cout << absl::StrJoin(RegisteredDrivers(), "\n") << "\n";
    return 0;
  }
  absl::StatusOr<std::unique_ptr<tools::FlagMetrics>> metrics =
      tools::FlagMetrics::Create();
  if (!metrics.ok()) {
    std::cerr << "ycsb: " << metrics.status().message() << "\n";
    return 2;
  }
  if (*metrics != nullptr) {
    (*metrics)->metrics()->NameMethods<rfrpc::kv::Jakiro>();
    if (absl::Status s = (*metrics)->Serve(); !s.ok()) {
      std::cerr << "ycsb: " << s.message() << "\n";
      return 1;
    }
    if ((*metrics)->serving()) {
      std::cerr << "metrics on " << (*metrics)->url() << "\n";
    }
  }

  CommandLine cl;
  if (absl::Status s = ParseYcsbArgs(ycsb_args, &cl); !s.ok()) {
    std::cerr << "ycsb: " << s.message() << "\n\n" << kUsage;
    return 2;
  }
  Properties props;
  for (const std::string& file : cl.files) {
    if (absl::Status s = props.LoadFile(file); !s.ok()) {
      std::cerr << "ycsb: " << s.message() << "\n";
      return 2;
    }
  }
  for (size_t i = 0; i < cl.overrides.size(); ++i) {
    props.Set(cl.overrides[i].first, cl.overrides[i].second,
              cl.override_origins[i]);
  }
  if (!FLAGS_rfrpc_profile.empty() && props.Find("jakiro.profile") == nullptr) {
    props.Set("jakiro.profile", FLAGS_rfrpc_profile, "--rfrpc_profile");
  }
  if (absl::Status s = ResolvePhase(props, &cl); !s.ok()) {
    std::cerr << "ycsb: " << s.message() << "\n\n" << kUsage;
    return 2;
  }
  if (FLAGS_print_properties) {
    for (const auto& [key, entry] : props.entries()) {
      std::cerr << key << "=" << entry.value << "  (" << entry.origin << ")\n";
    }
  }

  std::vector<std::string> warnings;
  absl::StatusOr<WorkloadSpec> spec =
      ParseWorkloadSpec(props, RegisteredDrivers(), &warnings);
  for (const std::string& w : warnings) std::cerr << "warning: " << w << "\n";
  if (!spec.ok()) {
    std::cerr << "ycsb: " << spec.status().message() << "\n";
    return 2;
  }
  // Configuration errors RunClient would find, and an exportfile that
  // cannot take the report, are refused before anything runs.
  absl::Status runnable = CheckRunnable(*spec);
  if (runnable.ok()) runnable = CheckExportFile(spec->exportfile);
  if (!runnable.ok()) {
    std::cerr << "ycsb: " << runnable.message() << "\n";
    return 2;
  }
  absl::StatusOr<DriverFactory> factory = FindDriver(spec->db);
  if (!factory.ok()) {
    std::cerr << "ycsb: " << factory.status().message() << "\n";
    return 2;
  }

  // A driver instance only to ask whether it can pipeline (factories parse
  // properties; nothing connects before Init).
  absl::StatusOr<std::unique_ptr<DB>> probe = (*factory)(props);
  if (!probe.ok()) {
    std::cerr << "ycsb: " << probe.status().message() << "\n";
    return 2;
  }
  const int in_flight = OperationsInFlight(*spec, cl.load, **probe);
  // A run of scans only against a driver that cannot scan would fail every
  // operation and exit 0.
  std::string scan_warning;
  if (absl::Status s =
          CheckDriverCanRun(*spec, cl.load, **probe, &scan_warning);
      !s.ok()) {
    std::cerr << "ycsb: " << s.message() << "\n";
    return 2;
  }
  if (!scan_warning.empty()) std::cerr << "warning: " << scan_warning << "\n";
  probe->reset();

  std::vector<std::string> command(argv, argv + argc);
  std::cerr << "YCSB client (rfrpc)\nCommand line: "
            << absl::StrJoin(command, " ") << "\n"
            << (cl.load ? "Loading" : "Running") << " workload with driver \""
            << spec->db << "\", " << spec->threadcount << " thread(s), "
            << in_flight << " operation(s) in flight per thread";
  if (in_flight != spec->outstanding) {
    std::cerr << " (outstanding=" << spec->outstanding << ": "
              << (cl.load ? "the load phase" : "this driver")
              << " is synchronous)";
  }
  std::cerr << "\n";

  ClientOptions options;
  options.load = cl.load;
  options.status = cl.status;
  options.factory = *factory;
  options.unavailable_stop_ns = spec->unavailablestop * int64_t{1'000'000'000};
  absl::StatusOr<RunResult> result = RunClient(*spec, props, options);
  if (*metrics != nullptr) {
    if (absl::Status s = (*metrics)->WriteFile(); !s.ok()) {
      std::cerr << "ycsb: " << s.message() << "\n";
      return 1;
    }
  }
  if (!result.ok()) {
    std::cerr << "ycsb: " << result.status() << "\n";
    return 1;
  }

  if (spec->exportfile.empty()) {
    ExportReport(*result, *spec, std::cout);
    std::cout.flush();
  } else {
    std::ofstream out(spec->exportfile);
    ExportReport(*result, *spec, out);
    if (!out) {
      std::cerr << "ycsb: cannot write " << spec->exportfile << "\n";
      return 1;
    }
  }
  for (const std::string& e : result->thread_errors) {
    std::cerr << "ycsb: " << e << "\n";
  }
  if (result->integrity_failures > 0) {
    // A read that failed (the server gone) is not verified either: the
    // message must not call it wrong data.
    std::cerr << "ycsb: DATA INTEGRITY FAILURE: " << result->integrity_failures
              << " read(s) not verified OK (see [VERIFY]: UNEXPECTED_STATE is "
                 "wrong data; ERROR a read that failed or found nothing, see "
                 "the [READ] returns)\n";
  }
  if (result->timed_out) {
    std::cerr << "ycsb: stopped at maxexecutiontime=" << spec->maxexecutiontime
              << "s\n";
  }
  return result->ok() ? 0 : 1;
}

}  // namespace
}  // namespace ycsb
}  // namespace rfrpc

int main(int argc, char** argv) { return rfrpc::ycsb::Main(argc, argv); }
