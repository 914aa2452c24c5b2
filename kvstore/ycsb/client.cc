// Copyright 2026 The rfrpc Authors.

#include "kvstore/ycsb/client.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/cpu_relax.h"
#include "base/mutex.h"
#include "kvstore/ycsb/workload.h"

namespace rfrpc {
namespace ycsb {
namespace {

// State shared by the threads of one run.
struct Shared {
  std::atomic<bool> stop{false};

  // rfrpc::Mutex, not absl::Mutex, so that TSan sees the start barrier and
  // the final wait (docs/fuzzing.md, "Sanitizers").
  Mutex mu;
  // Notified whenever `initialized` or `running` changes.
  std::condition_variable cv;
  int initialized ABSL_GUARDED_BY(mu) = 0;  // Threads past Init().
  bool init_failed ABSL_GUARDED_BY(mu) = false;
  int running ABSL_GUARDED_BY(mu) = 0;  // Threads not yet finished.
  absl::Status init_error ABSL_GUARDED_BY(mu);
  std::vector<std::string> thread_errors ABSL_GUARDED_BY(mu);
};

struct Worker {
  int index = 0;
  int64_t ops_todo = 0;  // 0: unlimited.
  std::atomic<int64_t> ops_done{0};
  Measurements measurements;
  std::unique_ptr<DB> db;
  std::thread thread;
};

// Sleeps until `deadline_ns` (NowNanos() clock) or until `stop` is set.
void SleepUntil(int64_t deadline_ns, const std::atomic<bool>& stop) {
  while (!stop.load(std::memory_order_relaxed)) {
    const int64_t left = deadline_ns - NowNanos();
    if (left <= 0) return;
    std::this_thread::sleep_for(
        std::chrono::nanoseconds(std::min<int64_t>(left, 100'000'000)));
  }
}

// Indices of pipelined operations whose step completed, pushed by the
// driver's completion threads and drained by the client thread.
class CompletionQueue {
 public:
  void Push(int index) {
    MutexLock lock(&mu_);
    ready_.push_back(index);
    size_.store(static_cast<int>(ready_.size()), std::memory_order_release);
  }
  bool Empty() const { return size_.load(std::memory_order_acquire) == 0; }
  // Moves every ready index into `*out` (cleared first).
  void Drain(std::vector<int>* out) {
    out->clear();
    MutexLock lock(&mu_);
    out->swap(ready_);
    size_.store(0, std::memory_order_release);
  }

 private:
  Mutex mu_;
  std::vector<int> ready_ ABSL_GUARDED_BY(mu_);
  std::atomic<int> size_{0};
};

// Spin rounds before a waiting client thread starts yielding the CPU (to
// the driver's completion thread, often on the same core).
constexpr int kWaitSpinRounds = 64;

// The run phase with up to `depth` operations in flight: issues operations
// while fewer than `depth` are outstanding (and the target rate allows),
// then waits for completions and records them on this thread. Stops issuing
// at ops_todo, at maxexecutiontime or on an error, and returns only after
// every issued operation completed (no completion is lost or left to run
// after the DB is cleaned up).
// Why thread `w` stops its run early, if it does: UNAVAILABLE once every
// operation it completed for `stop_ns` (> 0) returned SERVICE_UNAVAILABLE
// (its database is unreachable); FAILED_PRECONDITION once one (not a SCAN)
// returned NOT_IMPLEMENTED (the database does not serve it: every further
// call would fail the same way, and the run would still exit 0).
absl::Status EarlyStop(const Worker& w, int64_t stop_ns) {
  if (w.measurements.unsupported()) {
    return absl::FailedPreconditionError(
        "an operation returned NOT_IMPLEMENTED: the database does not serve "
        "it (is this the right server? its first such failure is printed "
        "above)");
  }
  const int64_t since = w.measurements.unavailable_since_ns();
  if (since == 0 || stop_ns <= 0) return absl::OkStatus();
  const int64_t for_ns = NowNanos() - since;
  if (for_ns < stop_ns) return absl::OkStatus();
  return absl::UnavailableError(absl::StrFormat(
      "every operation for %.1f s returned SERVICE_UNAVAILABLE: the database "
      "is unreachable (its first such failure is printed above)",
      static_cast<double>(for_ns) / 1e9));
}

absl::Status RunPipelined(const CoreWorkload& workload, DB* db,
                          CoreWorkload::ThreadState& state, int depth,
                          double tick_ns, int64_t unavailable_stop_ns,
                          Worker* w, Shared* shared, int64_t* done_out) {
  std::vector<PendingOp> ops(static_cast<size_t>(depth));
  std::vector<int> free_ops;
  for (int i = depth - 1; i >= 0; --i) free_ops.push_back(i);
  CompletionQueue completed;
  std::vector<int> ready;
  absl::Status error;
  int64_t issued = 0;
  int64_t done = 0;
  const int64_t start_ns = NowNanos();
  auto start = [&](int i) {
    workload.StartStep(db, &ops[i], [&completed, i] { completed.Push(i); });
  };
  for (;;) {
    const bool may_issue = error.ok() &&
                           (w->ops_todo == 0 || issued < w->ops_todo) &&
                           !shared->stop.load(std::memory_order_relaxed);
    int64_t next_issue_ns = 0;  // Throttled: when the next may go.
    while (may_issue && !free_ops.empty() &&
           (w->ops_todo == 0 || issued < w->ops_todo)) {
      if (tick_ns > 0) {
        next_issue_ns = start_ns + static_cast<int64_t>(issued * tick_ns);
        if (NowNanos() < next_issue_ns) break;
        next_issue_ns = 0;
      }
      const int i = free_ops.back();
      free_ops.pop_back();
      workload.NextTransaction(state, &ops[i]);
      ++issued;
      start(i);
    }
    const int in_flight = depth - static_cast<int>(free_ops.size());
    if (in_flight == 0) {
      if (!may_issue) break;
      if (next_issue_ns > 0) SleepUntil(next_issue_ns, shared->stop);
      continue;
    }
    // Wait for a completion (or the next throttled issue).
    for (int idle = 0; completed.Empty(); ++idle) {
      if (next_issue_ns > 0 && NowNanos() >= next_issue_ns) break;
      if (db->Poll()) {
        idle = 0;
      } else if (idle < kWaitSpinRounds) {
        CpuRelax();
      } else {
        std::this_thread::yield();
      }
    }
    completed.Drain(&ready);
    for (int i : ready) {
      absl::StatusOr<bool> finished =
          workload.FinishStep(&ops[i], &w->measurements);
      if (!finished.ok()) {
        if (error.ok()) error = finished.status();
        finished = true;
      }
      if (*finished) {
        free_ops.push_back(i);
        ++done;
        w->ops_done.store(done, std::memory_order_relaxed);
      } else {
        start(i);  // Read-modify-write's update.
      }
    }
    // Stops issuing; what is in flight still completes.
    if (error.ok()) error = EarlyStop(*w, unavailable_stop_ns);
  }
  *done_out = done;
  return error;
}

void RunWorker(const CoreWorkload& workload, const ClientOptions& options,
               int num_threads, uint64_t seed, Worker* w, Shared* shared) {
  MeasuredDb db(w->db.get(), &w->measurements);
  absl::Status init = db.Init();
  {
    MutexLock lock(&shared->mu);
    if (!init.ok() && !shared->init_failed) {
      shared->init_failed = true;
      shared->init_error = absl::Status(
          init.code(), absl::StrCat("thread ", w->index,
                                    ": driver Init failed: ", init.message()));
    }
    ++shared->initialized;
    shared->cv.notify_all();
    // Start together, and not at all if any thread could not initialize.
    shared->mu.Await(&shared->cv,
                     [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(shared->mu) {
                       return shared->initialized == num_threads;
                     });
    if (shared->init_failed) {
      --shared->running;
      shared->cv.notify_all();
      return;
    }
  }

  CoreWorkload::ThreadState state = workload.NewThreadState(seed);
  const WorkloadSpec& spec = workload.spec();
  // Each thread gets an equal share of the target rate.
  const double per_thread_target =
      spec.target > 0 ? spec.target / num_threads : 0.0;
  const double tick_ns = per_thread_target > 0 ? 1e9 / per_thread_target : 0;
  const int64_t start_ns = NowNanos();
  absl::Status error;
  int64_t done = 0;
  const int depth = OperationsInFlight(spec, options.load, *w->db);
  if (depth > 1) {
    error = RunPipelined(workload, w->db.get(), state, depth, tick_ns,
                         options.unavailable_stop_ns, w, shared, &done);
  }
  while (depth == 1 && (w->ops_todo == 0 || done < w->ops_todo) &&
         !shared->stop.load(std::memory_order_relaxed)) {
    error = options.load ? workload.DoInsert(db, state)
                         : workload.DoTransaction(db, state);
    if (error.ok()) error = EarlyStop(*w, options.unavailable_stop_ns);
    if (!error.ok()) break;
    ++done;
    w->ops_done.store(done, std::memory_order_relaxed);
    if (tick_ns > 0) {
      SleepUntil(start_ns + static_cast<int64_t>(done * tick_ns),
                 shared->stop);
    }
  }
  absl::Status cleanup = db.Cleanup();

  MutexLock lock(&shared->mu);
  if (!error.ok()) {
    shared->thread_errors.push_back(
        absl::StrCat("thread ", w->index, " stopped after ", done,
                     " operations: ", error.ToString()));
  }
  if (!cleanup.ok()) {
    shared->thread_errors.push_back(absl::StrCat(
        "thread ", w->index, ": driver Cleanup failed: ", cleanup.ToString()));
  }
  --shared->running;
  shared->cv.notify_all();
}

std::string StatusLine(const WorkloadSpec& spec, int64_t elapsed_ms,
                       int64_t total_ops, int64_t interval_ops,
                       int64_t interval_ms,
                       const MeasurementSnapshot& interval) {
  std::string line = absl::StrCat(
      spec.label,
      absl::FormatTime("%Y-%m-%d %H:%M:%E3S", absl::Now(),
                       absl::LocalTimeZone()),
      " ", elapsed_ms / 1000, " sec: ", total_ops, " operations; ");
  if (total_ops != 0 && interval_ms > 0) {
    absl::StrAppend(&line,
                    FormatTwoDecimals(1000.0 * static_cast<double>(interval_ops) /
                                      static_cast<double>(interval_ms)),
                    " current ops/sec; ");
  }
  absl::StrAppend(&line, IntervalSummary(interval));
  return line;
}

}  // namespace

int OperationsInFlight(const WorkloadSpec& spec, bool load, const DB& db) {
  return load || !db.SupportsAsync() ? 1 : static_cast<int>(spec.outstanding);
}

absl::Status CheckRunnable(const WorkloadSpec& spec) {
  if (spec.threadcount < 1 || spec.threadcount > kMaxThreadCount) {
    return absl::InvalidArgumentError(
        absl::StrCat("threadcount ", spec.threadcount, " is outside [1, ",
                     kMaxThreadCount, "]"));
  }
  return CoreWorkload::CheckSpec(spec);
}

absl::Status CheckDriverCanRun(const WorkloadSpec& spec, bool load,
                               const DB& db, std::string* warning) {
  if (warning != nullptr) warning->clear();
  if (load || !(spec.scanproportion > 0) || db.SupportsScan()) {
    return absl::OkStatus();
  }
  const std::string cannot =
      absl::StrCat("scanproportion=", spec.scanproportion, ": driver \"",
                   spec.db, "\" cannot scan (its keys have no order)");
  // As CoreWorkload's chooser: only positive proportions are drawn.
  const bool only_scans =
      !(spec.readproportion > 0) && !(spec.updateproportion > 0) &&
      !(spec.insertproportion > 0) && !(spec.readmodifywriteproportion > 0);
  if (only_scans) {
    return absl::InvalidArgumentError(absl::StrCat(
        cannot,
        " and the workload has no other operation: every one would return "
        "NOT_IMPLEMENTED; set scanproportion=0 and another proportion, or use "
        "a driver that scans"));
  }
  if (warning != nullptr) {
    *warning = absl::StrCat(
        cannot, ": every SCAN will return NOT_IMPLEMENTED, counted as failed");
  }
  return absl::OkStatus();
}

absl::Status CheckExportFile(const std::string& path) {
  if (path.empty()) return absl::OkStatus();
  struct stat st;
  const bool existed = ::stat(path.c_str(), &st) == 0;
  if (existed && S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat("exportfile: \"", path, "\" is a directory"));
  }
  if (existed && !S_ISREG(st.st_mode)) return absl::OkStatus();
  // No O_TRUNC: a report from an earlier run survives until this one ends.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "exportfile: cannot write \"", path, "\": ", std::strerror(errno)));
  }
  ::close(fd);
  if (!existed) ::unlink(path.c_str());
  return absl::OkStatus();
}

absl::StatusOr<RunResult> RunClient(const WorkloadSpec& spec,
                                    const Properties& props,
                                    const ClientOptions& options) {
  if (options.factory == nullptr) {
    return absl::InvalidArgumentError("ClientOptions.factory is not set");
  }
  // Before the cast below: threadcount is an int64_t property.
  if (absl::Status s = CheckRunnable(spec); !s.ok()) return s;
  absl::StatusOr<std::unique_ptr<CoreWorkload>> workload =
      CoreWorkload::Create(spec);
  if (!workload.ok()) return workload.status();

  const int num_threads = static_cast<int>(spec.threadcount);
  const int64_t total_ops = options.load ? spec.insertcount : spec.operationcount;
  std::vector<std::unique_ptr<Worker>> workers;
  for (int i = 0; i < num_threads; ++i) {
    auto w = std::make_unique<Worker>();
    w->index = i;
    w->ops_todo = total_ops / num_threads + (i < total_ops % num_threads);
    absl::StatusOr<std::unique_ptr<DB>> db = options.factory(props);
    if (!db.ok()) {
      return absl::Status(db.status().code(),
                          absl::StrCat("thread ", i, ": cannot create driver: ",
                                       db.status().message()));
    }
    w->db = std::move(*db);
    if (absl::Status s = CheckDriverCanRun(spec, options.load, *w->db);
        !s.ok()) {
      return s;
    }
    workers.push_back(std::move(w));
  }
  // A thread whose share is 0 ops would run unlimited; give it nothing to do.
  if (total_ops > 0) {
    workers.erase(std::remove_if(workers.begin(), workers.end(),
                                 [](const auto& w) { return w->ops_todo == 0; }),
                  workers.end());
  }
  const int started = static_cast<int>(workers.size());

  uint64_t base_seed = spec.seed;
  if (base_seed == 0) base_seed = std::random_device()() | 1;

  Shared shared;
  {
    MutexLock lock(&shared.mu);
    shared.running = started;
  }
  const int64_t start_ns = NowNanos();
  for (auto& w : workers) {
    Worker* wp = w.get();
    wp->thread = std::thread(RunWorker, std::cref(**workload),
                             std::cref(options), started,
                             base_seed + static_cast<uint64_t>(wp->index), wp,
                             &shared);
  }

  // Wait for the threads, waking for status lines and maxexecutiontime.
  const int64_t deadline_ns =
      spec.maxexecutiontime > 0
          ? start_ns + spec.maxexecutiontime * int64_t{1'000'000'000}
          : 0;
  const int64_t status_period_ns = spec.status_interval * int64_t{1'000'000'000};
  int64_t next_status_ns = start_ns + status_period_ns;
  int64_t last_status_ns = start_ns;
  int64_t last_status_ops = 0;
  RunResult result;
  auto ops_done = [&]() {
    int64_t n = 0;
    for (const auto& w : workers) n += w->ops_done.load(std::memory_order_relaxed);
    return n;
  };
  auto print_status = [&](int64_t now_ns) {
    MeasurementSnapshot interval;
    for (auto& w : workers) w->measurements.TakeInterval(&interval);
    const int64_t ops = ops_done();
    *options.status_out << StatusLine(spec, (now_ns - start_ns) / 1'000'000,
                                      ops, ops - last_status_ops,
                                      (now_ns - last_status_ns) / 1'000'000,
                                      interval)
                        << std::endl;
    last_status_ops = ops;
    last_status_ns = now_ns;
  };
  {
    MutexLock lock(&shared.mu);
    auto all_done = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(shared.mu) {
      return shared.running == 0;
    };
    while (!all_done()) {
      int64_t wake_ns = options.status ? next_status_ns : 0;
      if (deadline_ns > 0 && (wake_ns == 0 || deadline_ns < wake_ns)) {
        wake_ns = deadline_ns;
      }
      if (wake_ns == 0) {
        shared.mu.Await(&shared.cv, all_done);
        break;
      }
      if (shared.mu.AwaitWithTimeout(
              &shared.cv,
              absl::Nanoseconds(std::max<int64_t>(wake_ns - NowNanos(), 0)),
              all_done)) {
        break;
      }
      const int64_t now = NowNanos();
      if (deadline_ns > 0 && now >= deadline_ns &&
          !shared.stop.load(std::memory_order_relaxed)) {
        shared.stop.store(true, std::memory_order_relaxed);
        result.timed_out = true;
      }
      if (options.status && now >= next_status_ns) {
        shared.mu.Unlock();
        print_status(now);
        shared.mu.Lock();
        while (next_status_ns <= now) next_status_ns += status_period_ns;
      }
    }
  }
  for (auto& w : workers) w->thread.join();
  const int64_t end_ns = NowNanos();
  if (options.status) print_status(end_ns);

  {
    MutexLock lock(&shared.mu);
    if (shared.init_failed) return shared.init_error;
    result.thread_errors = shared.thread_errors;
  }
  result.runtime_ms = (end_ns - start_ns) / 1'000'000;
  result.operations = ops_done();
  for (auto& w : workers) w->measurements.MergeTotalInto(&result.measurements);
  auto verify = result.measurements.find("VERIFY");
  if (verify != result.measurements.end()) {
    for (const auto& [name, n] : verify->second.returns) {
      if (name != "OK") result.integrity_failures += n;
    }
  }
  return result;
}

void ExportReport(const RunResult& result, const WorkloadSpec& spec,
                  std::ostream& out) {
  TextExporter exporter(&out);
  exporter.Write("OVERALL", "RunTime(ms)", result.runtime_ms);
  exporter.Write("OVERALL", "Throughput(ops/sec)", result.throughput());
  ExportMeasurements(result.measurements, spec.percentiles, &exporter);
}

}  // namespace ycsb
}  // namespace rfrpc
