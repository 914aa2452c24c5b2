// Copyright 2026 The rfrpc Authors.
//
// What every benchmark binary does around its measurement: parse flags and
// start logging, start a server with its services, and give up on bad
// flags or a set-up that cannot work with one clear line, not a stack
// trace (a bad flag is the user's mistake, not the benchmark's bug; CHECK
// stays for what the benchmark itself asserts, such as a reply's content).
//
//   int main(int argc, char** argv) {
//     rfrpc::bench::Init(&argc, &argv);
//     std::unique_ptr<rfrpc::Server> server =
//         rfrpc::bench::StartServer(options, {&service});
//     auto channel = rfrpc::bench::ValueOrExit(
//         rfrpc::Channel::Create(server->address(), channel_options),
//         "channel");
//     ...
//   }

#ifndef RFRPC_BENCHMARKS_HARNESS_H_
#define RFRPC_BENCHMARKS_HARNESS_H_

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "flags/provider_flag.h"
#include "rpc/options.h"
#include "rpc/server.h"
#include "rpc/service.h"

namespace rfrpc {
namespace bench {

// Parses the command line's flags (removing them) and starts glog; later
// errors name the program as argv[0]'s last component.
void Init(int* argc, char*** argv);

// A --rfrpc_* flag a benchmark sets itself for each point, and what to use
// instead (its own flag, or why it is fixed).
struct OwnFlag {
  const char* flag;     // Without "--", e.g. "rfrpc_batch_size".
  const char* instead;  // E.g. "use --batch_sizes".
};
// Exits (status 2) naming the first of `flags` given on the command line
// (or in a --flagfile): the benchmark would replace its value silently.
void RejectFlagsItSets(std::initializer_list<OwnFlag> flags);

// Prints "<program>: <what>: <status>" to stderr and exits with status 2,
// without running destructors: safe from any thread. The listen socket file
// of every server StartServer started (shm's Unix socket under /tmp or
// $TEST_TMPDIR) is removed first, so an exit after the server started
// leaves no stale file behind.
[[noreturn]] void Exit(absl::string_view what, const absl::Status& status);

inline void OkOrExit(const absl::Status& status, absl::string_view what) {
  if (!status.ok()) Exit(what, status);
}

template <typename T>
T ValueOrExit(absl::StatusOr<T> value, absl::string_view what) {
  if (!value.ok()) Exit(what, value.status());
  return std::move(*value);
}

// The longest duration flag a benchmark takes: an hour. A longer
// --seconds is a typo (or inf), and the run would look hung.
inline constexpr double kMaxSeconds = 3600;

// Flag checks, chained; the first that fails is kept, and OrExit ends the
// run with it. Every check refuses inf and nan:
//   bench::FlagCheck()
//       .AtLeast("--threads", FLAGS_threads, 1)
//       .Seconds("--seconds", FLAGS_seconds)
//       .EachInRange("--sizes", FLAGS_sizes, 0, 1 << 24)
//       .OrExit();
class FlagCheck {
 public:
  FlagCheck& AtLeast(absl::string_view flag, double value, double min);
  FlagCheck& Positive(absl::string_view flag, double value);
  // A duration in seconds: in (0, kMaxSeconds].
  FlagCheck& Seconds(absl::string_view flag, double value);
  // A duration that may be 0 (a warm-up): in [0, kMaxSeconds].
  FlagCheck& SecondsOrZero(absl::string_view flag, double value);
  FlagCheck& InRange(absl::string_view flag, double value, double min,
                     double max);
  // Every entry of the comma-separated list `value` (bench::ParseInts).
  FlagCheck& EachInRange(absl::string_view flag, absl::string_view value,
                         int min, int max);
  // A list flag the run needs at least one entry of.
  FlagCheck& NotEmpty(absl::string_view flag, absl::string_view value);
  // A flag the benchmark copies into a ServerOptions field, e.g.
  //   .ServerField("--workers", FLAGS_workers, &ServerOptions::workers)
  // must be in the range the server takes (ValidateServerOptions), so the
  // error names the flag typed rather than the field.
  FlagCheck& ServerField(absl::string_view flag, int value,
                         int ServerOptions::*field);
  // The connections a run opens to its one server, in all, made by the
  // flags `flags` (e.g. "--threads=4 x --connections=8"): at most what the
  // server accepts, `server.max_connections` (--rfrpc_max_connections). A
  // run past it cannot work, and would first open all the server takes.
  FlagCheck& ServerConnections(absl::string_view flags, int64_t connections,
                               const ServerOptions& server);
  void OrExit() const { OkOrExit(status_, "flags"); }

 private:
  void Fail(absl::string_view flag, double value, absl::string_view want);
  absl::Status status_;
};

// A started server with `services` registered (they must outlive it), or
// Exit.
std::unique_ptr<Server> StartServer(const ServerOptions& options,
                                    std::initializer_list<Service*> services);

}  // namespace bench
}  // namespace rfrpc

#endif  // RFRPC_BENCHMARKS_HARNESS_H_
