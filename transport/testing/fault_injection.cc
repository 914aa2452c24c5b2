// Copyright 2026 The rfrpc Authors.

#include "transport/testing/fault_injection.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <map>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/status_macros.h"
#include "transport/send_queue_count.h"

namespace rfrpc {
namespace transport {
namespace testing {

// ---------------------------------------------------------------------------
// FaultKnobs

FaultKnobs* FaultKnobs::Named(const std::string& tag) {
  static std::mutex* mu = new std::mutex;
  static auto* knobs = new std::map<std::string, std::unique_ptr<FaultKnobs>>;
  std::lock_guard<std::mutex> lock(*mu);
  std::unique_ptr<FaultKnobs>& k = (*knobs)[tag];
  if (k == nullptr) k = std::make_unique<FaultKnobs>();
  return k.get();
}

void FaultKnobs::Reset() {
  drop_p_ = 0;
  drop_next_ = 0;
  delay_min_ns_ = 0;
  delay_max_ns_ = 0;
  fail_post_p_ = 0;
  fail_post_next_ = 0;
  post_error_ = absl::StatusCode::kUnavailable;
  fail_conn_p_ = 0;
  fail_conn_at_ = 0;
  corrupt_write_next_ = 0;
  drop_write_next_ = 0;
  writes_dropped_ = 0;
  tail_delay_ns_ = 0;
  writes_torn_ = 0;
  send_queue_ = false;
  send_queue_full_ = 0;
  corrupt_write_p_ = 0;
  corrupt_read_next_ = 0;
  corrupt_read_p_ = 0;
  for (auto* c : {&posts_, &work_requests_, &completions_, &completions_dropped_,
                  &completions_delayed_, &posts_failed_, &connections_failed_,
                  &writes_corrupted_, &reads_corrupted_, &connections_made_}) {
    c->store(0);
  }
}

void FaultKnobs::set_completion_delay(absl::Duration min, absl::Duration max) {
  delay_min_ns_ = absl::ToInt64Nanoseconds(min);
  delay_max_ns_ = std::max(absl::ToInt64Nanoseconds(max), delay_min_ns_.load());
}

void FaultKnobs::CorruptNextWrite(uint32_t offset, uint8_t xor_mask, int count) {
  corrupt_write_offset_ = offset;
  corrupt_write_mask_ = xor_mask == 0 ? 1 : xor_mask;
  corrupt_write_next_ = count;
}

void FaultKnobs::set_write_tail_delay(absl::Duration delay,
                                      uint32_t min_length) {
  tail_delay_min_length_ = std::max<uint32_t>(9, min_length);
  tail_delay_ns_ = std::max<int64_t>(0, absl::ToInt64Nanoseconds(delay));
}

void FaultKnobs::CorruptNextRead(uint32_t offset, uint8_t xor_mask, int count) {
  corrupt_read_offset_ = offset;
  corrupt_read_mask_ = xor_mask == 0 ? 1 : xor_mask;
  corrupt_read_next_ = count;
}

void FaultKnobs::set_corrupt_write_probability(double p, uint32_t max_offset) {
  corrupt_write_max_offset_ = std::max<uint32_t>(1, max_offset);
  corrupt_write_p_ = p;
}

void FaultKnobs::set_corrupt_read_probability(double p, uint32_t max_offset) {
  corrupt_read_max_offset_ = std::max<uint32_t>(1, max_offset);
  corrupt_read_p_ = p;
}

FaultKnobs::Counters FaultKnobs::counters() const {
  Counters c;
  c.posts = posts_.load();
  c.work_requests = work_requests_.load();
  c.completions = completions_.load();
  c.completions_dropped = completions_dropped_.load();
  c.completions_delayed = completions_delayed_.load();
  c.posts_failed = posts_failed_.load();
  c.connections_failed = connections_failed_.load();
  c.writes_corrupted = writes_corrupted_.load();
  c.reads_corrupted = reads_corrupted_.load();
  c.writes_dropped = writes_dropped_.load();
  c.writes_torn = writes_torn_.load();
  c.send_queue_full = send_queue_full_.load();
  c.connections_made = connections_made_.load();
  return c;
}

double FaultKnobs::Uniform() {
  // splitmix64 over an atomic counter: lock-free and good enough for dice.
  uint64_t z = rng_.fetch_add(0x9E3779B97F4A7C15ull, std::memory_order_relaxed);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

uint32_t FaultKnobs::UniformInt(uint32_t n) {
  return std::min<uint32_t>(n - 1, static_cast<uint32_t>(Uniform() * n));
}

bool FaultKnobs::CountDown(std::atomic<int>* at) {
  int n = at->load(std::memory_order_relaxed);
  while (n > 0) {
    if (at->compare_exchange_weak(n, n - 1)) return n == 1;
  }
  return false;
}

bool FaultKnobs::Fire(std::atomic<int>* next, const std::atomic<double>& p) {
  int n = next == nullptr ? 0 : next->load(std::memory_order_relaxed);
  while (n > 0) {
    if (next->compare_exchange_weak(n, n - 1)) return true;
  }
  const double prob = p.load(std::memory_order_relaxed);
  return prob > 0 && Uniform() < prob;
}

absl::Duration FaultKnobs::DelayForOne() {
  const int64_t lo = delay_min_ns_.load(std::memory_order_relaxed);
  const int64_t hi = delay_max_ns_.load(std::memory_order_relaxed);
  if (hi <= 0) return absl::ZeroDuration();
  return absl::Nanoseconds(lo + static_cast<int64_t>(Uniform() * (hi - lo)));
}

// ---------------------------------------------------------------------------
// The wrapped objects.

// FaultyConnection::Retire (defined below).
void RetireFromQueue(Connection* c, uint64_t wr_id);

class FaultyCompletionQueue final : public CompletionQueue {
 public:
  FaultyCompletionQueue(std::unique_ptr<CompletionQueue> inner,
                        FaultKnobs* knobs)
      : inner_(std::move(inner)), knobs_(knobs) {}

  CompletionQueue* inner() const { return inner_.get(); }

  int Poll(absl::Span<Completion> out) override {
    Completion tmp[16];
    const int n = inner_->Poll(
        absl::MakeSpan(tmp, std::min<size_t>(out.size(), 16)));
    std::lock_guard<std::mutex> lock(mu_);
    for (int i = 0; i < n; ++i) TakeLocked(tmp[i]);
    return ReleaseLocked(out);
  }

  absl::StatusOr<int> Wait(absl::Span<Completion> out,
                           absl::Duration timeout) override {
    const absl::Time deadline = absl::Now() + timeout;
    for (;;) {
      const int n = Poll(out);
      if (n > 0) return n;
      if (interrupted_.exchange(false)) {
        return absl::DeadlineExceededError("interrupted");
      }
      const absl::Time now = absl::Now();
      if (now >= deadline) return absl::DeadlineExceededError("no completion");
      absl::Duration step = deadline - now;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (!held_.empty()) {
          step = std::min(step, absl::FromUnixNanos(held_.front().first) - now);
        }
      }
      step = std::max(step, absl::Microseconds(1));
      Completion tmp[16];
      absl::StatusOr<int> got = inner_->Wait(
          absl::MakeSpan(tmp, std::min<size_t>(out.size(), 16)), step);
      if (got.ok()) {
        std::lock_guard<std::mutex> lock(mu_);
        for (int i = 0; i < *got; ++i) TakeLocked(tmp[i]);
      }
    }
  }

  void Interrupt() override {
    interrupted_.store(true);
    inner_->Interrupt();
  }

  void ArmWake() override { inner_->ArmWake(); }
  void Disarm() override { inner_->Disarm(); }

  absl::StatusOr<int> WaitArmed(absl::Span<Completion> out,
                                absl::Duration timeout) override {
    // Held (delayed) completions are due at known times: sleep no longer.
    int n = Poll(out);
    if (n > 0) {
      inner_->Disarm();
      return n;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!held_.empty()) {
        const absl::Duration until_due =
            absl::FromUnixNanos(held_.front().first) - absl::Now();
        timeout = std::min(timeout, std::max(until_due, absl::Microseconds(1)));
      }
    }
    Completion tmp[16];
    absl::StatusOr<int> got = inner_->WaitArmed(
        absl::MakeSpan(tmp, std::min<size_t>(out.size(), 16)), timeout);
    if (got.ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      for (int i = 0; i < *got; ++i) TakeLocked(tmp[i]);
    }
    n = Poll(out);
    if (n > 0 || got.ok()) return n;
    return got.status();
  }

  absl::Status WaitWoken(absl::Duration timeout) override {
    // Held (delayed) completions are due at known times: wait no longer.
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!held_.empty()) {
        const absl::Duration until_due =
            absl::FromUnixNanos(held_.front().first) - absl::Now();
        if (until_due <= absl::ZeroDuration()) return absl::OkStatus();
        timeout = std::min(timeout, until_due);
      }
    }
    return inner_->WaitWoken(timeout);
  }

  Stats stats() const override { return inner_->stats(); }

  void AddConnection(uint64_t id, Connection* c) {
    std::lock_guard<std::mutex> lock(mu_);
    conns_[id] = c;
  }
  void RemoveConnection(uint64_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    conns_.erase(id);
    for (auto it = corrupt_reads_.begin(); it != corrupt_reads_.end();) {
      if (it->first.first == id) {
        it = corrupt_reads_.erase(it);
      } else {
        ++it;
      }
    }
  }
  // The landing byte of READ (connection `id`, `wr_id`) is flipped when its
  // completion comes through.
  void ArmReadCorruption(uint64_t id, uint64_t wr_id, char* byte, uint8_t mask) {
    std::lock_guard<std::mutex> lock(mu_);
    corrupt_reads_[{id, wr_id}] = {byte, mask};
  }
  void DisarmReadCorruption(uint64_t id, uint64_t wr_id) {
    std::lock_guard<std::mutex> lock(mu_);
    corrupt_reads_.erase({id, wr_id});
  }

 private:
  void TakeLocked(Completion c) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto conn = conns_.find(c.connection_id);
    if (conn != conns_.end()) c.connection = conn->second;
    if (c.opcode == Opcode::kRead) {
      auto it = corrupt_reads_.find({c.connection_id, c.wr_id});
      if (it != corrupt_reads_.end()) {
        if (c.ok()) {
          *it->second.first ^= static_cast<char>(it->second.second);
          knobs_->reads_corrupted_.fetch_add(1);
        }
        corrupt_reads_.erase(it);
      }
    }
    if (c.ok() && knobs_->Fire(&knobs_->drop_next_, knobs_->drop_p_)) {
      knobs_->completions_dropped_.fetch_add(1);
      return;
    }
    const int64_t now = absl::GetCurrentTimeNanos();
    const absl::Duration d = knobs_->DelayForOne();
    int64_t due = now;
    if (d > absl::ZeroDuration()) {
      due = now + absl::ToInt64Nanoseconds(d);
      knobs_->completions_delayed_.fetch_add(1);
    }
    // FIFO: never overtake what is already held.
    if (!held_.empty()) due = std::max(due, held_.back().first);
    held_.emplace_back(due, c);
  }

  int ReleaseLocked(absl::Span<Completion> out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (held_.empty()) return 0;
    const int64_t now = absl::GetCurrentTimeNanos();
    int n = 0;
    while (!held_.empty() && static_cast<size_t>(n) < out.size() &&
           held_.front().first <= now) {
      out[n] = held_.front().second;
      held_.pop_front();
      if (out[n].connection != nullptr && knobs_->send_queue_.load()) {
        RetireFromQueue(out[n].connection, out[n].wr_id);
      }
      ++n;
    }
    knobs_->completions_.fetch_add(n);
    return n;
  }

  const std::unique_ptr<CompletionQueue> inner_;
  FaultKnobs* const knobs_;
  std::atomic<bool> interrupted_{false};
  std::mutex mu_;
  std::deque<std::pair<int64_t, Completion>> held_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, Connection*> conns_ ABSL_GUARDED_BY(mu_);
  std::map<std::pair<uint64_t, uint64_t>, std::pair<char*, uint8_t>>
      corrupt_reads_ ABSL_GUARDED_BY(mu_);
};

class FaultyConnection final : public Connection {
 public:
  FaultyConnection(std::shared_ptr<Provider> provider,
                   std::unique_ptr<Connection> inner,
                   FaultyCompletionQueue* cq, FaultKnobs* knobs,
                   uint32_t max_outstanding)
      : Connection(inner->id(), inner->peer()),
        provider_(std::move(provider)),
        inner_(std::move(inner)),
        cq_(cq),
        knobs_(knobs),
        max_outstanding_(max_outstanding) {
    cq_->AddConnection(id(), this);
    knobs_->Register(this);
  }
  ~FaultyConnection() override {
    knobs_->Unregister(this);
    cq_->RemoveConnection(id());
    inner_.reset();
  }

  absl::Status Post(absl::Span<const WorkRequest> wrs) override {
    knobs_->posts_.fetch_add(1, std::memory_order_relaxed);
    knobs_->work_requests_.fetch_add(wrs.size(), std::memory_order_relaxed);
    if (knobs_->CountDown(&knobs_->fail_conn_at_) ||
        knobs_->Fire(nullptr, knobs_->fail_conn_p_)) {
      knobs_->connections_failed_.fetch_add(1);
      inner_->Fail(absl::UnavailableError(
          "fault injection: connection failed mid-call"));
    }
    if (knobs_->Fire(&knobs_->fail_post_next_, knobs_->fail_post_p_)) {
      knobs_->posts_failed_.fetch_add(1);
      return absl::Status(knobs_->post_error_.load(),
                          "fault injection: post failed");
    }
    if (knobs_->send_queue_.load()) {
      std::lock_guard<std::mutex> lock(sq_mu_);
      if (sq_.in_use() + wrs.size() > max_outstanding_) {
        knobs_->send_queue_full_.fetch_add(1);
        return absl::ResourceExhaustedError(absl::StrCat(
            "fault injection: send queue full (", sq_.in_use(),
            " of max_outstanding ", max_outstanding_, " in use)"));
      }
      for (const WorkRequest& wr : wrs) sq_.Posted(wr.wr_id, wr.signaled);
    }
    std::vector<WorkRequest> copy;
    std::deque<std::string> inline_copies;  // Stable addresses.
    std::vector<uint64_t> armed_reads;
    for (size_t i = 0; i < wrs.size(); ++i) {
      const WorkRequest& wr = wrs[i];
      uint32_t offset = 0;
      uint8_t mask = 0;
      if (!Corrupt(wr, &offset, &mask)) continue;
      if (copy.empty()) copy.assign(wrs.begin(), wrs.end());
      WorkRequest& w = copy[i];
      if (w.opcode == Opcode::kRead) {
        cq_->ArmReadCorruption(id(), w.wr_id,
                               const_cast<char*>(w.local->data()) +
                                   w.local_offset + offset,
                               mask);
        armed_reads.push_back(w.wr_id);
        continue;
      }
      const char* src = w.inline_data != nullptr
                            ? static_cast<const char*>(w.inline_data)
                            : w.local->data() + w.local_offset;
      if (w.inline_write) {
        inline_copies.emplace_back(src, w.length);
        inline_copies.back()[offset] ^= static_cast<char>(mask);
        w.inline_data = inline_copies.back().data();
      } else {
        absl::StatusOr<std::unique_ptr<MemoryRegion>> scratch =
            provider_->AllocateMemory(w.length);
        if (!scratch.ok()) return scratch.status();
        std::memcpy((*scratch)->data(), src, w.length);
        (*scratch)->data()[offset] ^= static_cast<char>(mask);
        w.local = scratch->get();
        w.local_offset = 0;
        w.inline_data = nullptr;
        scratch_.push_back(std::move(*scratch));
        // Kept until well after the WRITE has executed (verbs reads it
        // asynchronously); shm executes at post time.
        if (scratch_.size() > 64) scratch_.pop_front();
      }
      knobs_->writes_corrupted_.fetch_add(1);
    }
    // Lost WRITEs: left out of the list.
    bool modified = !copy.empty();
    for (size_t i = wrs.size(); i-- > 0;) {
      const WorkRequest& wr = wrs[i];
      if (wr.opcode != Opcode::kWrite || wr.signaled ||
          wr.length != knobs_->drop_write_length_.load()) {
        continue;
      }
      int n = knobs_->drop_write_next_.load();
      bool take = false;
      while (n > 0 && !(take = knobs_->drop_write_next_.compare_exchange_weak(n, n - 1))) {
      }
      if (!take) continue;
      if (!modified) copy.assign(wrs.begin(), wrs.end());
      modified = true;
      copy.erase(copy.begin() + static_cast<long>(i));
      knobs_->writes_dropped_.fetch_add(1);
    }
    if (modified && copy.empty()) return absl::OkStatus();
    absl::Status s = knobs_->tail_delay_ns_.load() > 0
                         ? PostTorn(modified ? absl::MakeConstSpan(copy) : wrs)
                         : modified ? inner_->Post(copy) : inner_->Post(wrs);
    if (!s.ok()) {
      for (uint64_t wr_id : armed_reads) cq_->DisarmReadCorruption(id(), wr_id);
    }
    return s;
  }

  absl::Status status() const override { return inner_->status(); }
  void Fail(absl::Status reason) override { inner_->Fail(std::move(reason)); }
  uint32_t max_inline() const override { return inner_->max_inline(); }

  // A completion of `wr_id` reached the user: it and everything posted
  // before it leave the emulated send queue (FaultKnobs::
  // set_emulate_send_queue).
  void Retire(uint64_t wr_id) {
    std::lock_guard<std::mutex> lock(sq_mu_);
    sq_.Completed(wr_id);
  }

  // Posts `wrs` with each long enough WRITE split before its last 8 bytes
  // and a sleep between the halves (FaultKnobs::set_write_tail_delay).
  absl::Status PostTorn(absl::Span<const WorkRequest> wrs) {
    const int64_t delay_ns = knobs_->tail_delay_ns_.load();
    const uint32_t min_length = knobs_->tail_delay_min_length_.load();
    std::vector<WorkRequest> batch;
    for (const WorkRequest& wr : wrs) {
      if (wr.opcode != Opcode::kWrite || wr.length < min_length) {
        batch.push_back(wr);
        continue;
      }
      const uint32_t head = wr.length - 8;
      WorkRequest first = wr;
      first.length = head;
      first.signaled = false;
      first.notify = false;
      WorkRequest last = wr;
      last.length = 8;
      last.remote_offset += head;
      if (wr.inline_data != nullptr) {
        last.inline_data = static_cast<const char*>(wr.inline_data) + head;
      } else {
        last.local_offset += head;
      }
      batch.push_back(first);
      absl::Status s = inner_->Post(batch);
      if (!s.ok()) return s;
      batch.clear();
      knobs_->writes_torn_.fetch_add(1, std::memory_order_relaxed);
      absl::SleepFor(absl::Nanoseconds(delay_ns));
      batch.push_back(last);
    }
    return batch.empty() ? absl::OkStatus() : inner_->Post(batch);
  }

  void FailFromKnobs() {
    knobs_->connections_failed_.fetch_add(1);
    inner_->Fail(absl::UnavailableError("fault injection: connection failed"));
  }

 private:
  // Decides whether `wr` is corrupted and where.
  bool Corrupt(const WorkRequest& wr, uint32_t* offset, uint8_t* mask) {
    if (wr.length == 0) return false;
    const bool write = wr.opcode == Opcode::kWrite;
    if (!write && (!wr.signaled || wr.local == nullptr)) return false;
    std::atomic<int>& next =
        write ? knobs_->corrupt_write_next_ : knobs_->corrupt_read_next_;
    const uint32_t fixed = write ? knobs_->corrupt_write_offset_.load()
                                 : knobs_->corrupt_read_offset_.load();
    int n = next.load();
    while (n > 0 && fixed < wr.length) {
      if (next.compare_exchange_weak(n, n - 1)) {
        *offset = fixed;
        *mask = write ? knobs_->corrupt_write_mask_.load()
                      : knobs_->corrupt_read_mask_.load();
        return true;
      }
    }
    const double p =
        write ? knobs_->corrupt_write_p_.load() : knobs_->corrupt_read_p_.load();
    if (p > 0 && knobs_->Uniform() < p) {
      const uint32_t max_off = write ? knobs_->corrupt_write_max_offset_.load()
                                     : knobs_->corrupt_read_max_offset_.load();
      *offset = knobs_->UniformInt(std::min(wr.length, max_off));
      *mask = static_cast<uint8_t>(1u << knobs_->UniformInt(8));
      return true;
    }
    return false;
  }

  const std::shared_ptr<Provider> provider_;
  std::unique_ptr<Connection> inner_;
  FaultyCompletionQueue* const cq_;
  FaultKnobs* const knobs_;
  const uint32_t max_outstanding_;
  std::deque<std::unique_ptr<MemoryRegion>> scratch_;  // Posting thread only.
  std::mutex sq_mu_;
  SendQueueCount sq_ ABSL_GUARDED_BY(sq_mu_);
};

void RetireFromQueue(Connection* c, uint64_t wr_id) {
  static_cast<FaultyConnection*>(c)->Retire(wr_id);
}

void FaultKnobs::Register(FaultyConnection* c) {
  connections_made_.fetch_add(1);
  std::lock_guard<std::mutex> lock(mu_);
  live_.insert(c);
}

void FaultKnobs::Unregister(FaultyConnection* c) {
  std::lock_guard<std::mutex> lock(mu_);
  live_.erase(c);
}

void FaultKnobs::FailAllConnections() {
  std::lock_guard<std::mutex> lock(mu_);
  for (FaultyConnection* c : live_) c->FailFromKnobs();
}

std::vector<ConnectionInfo> FaultKnobs::LivePeers() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ConnectionInfo> out;
  for (FaultyConnection* c : live_) out.push_back(c->peer());
  return out;
}

size_t FaultKnobs::live_connections() const {
  std::lock_guard<std::mutex> lock(mu_);
  return live_.size();
}

namespace {

absl::StatusOr<FaultyCompletionQueue*> Unwrap(CompletionQueue* cq) {
  auto* f = dynamic_cast<FaultyCompletionQueue*>(cq);
  if (f == nullptr) {
    return absl::InvalidArgumentError(
        "a faulty provider's connection needs a completion queue made by the "
        "same faulty provider");
  }
  return f;
}

class FaultyIncoming final : public IncomingConnection {
 public:
  FaultyIncoming(std::shared_ptr<Provider> provider,
                 std::unique_ptr<IncomingConnection> inner, FaultKnobs* knobs)
      : provider_(std::move(provider)), inner_(std::move(inner)), knobs_(knobs) {}
  const ConnectionInfo& peer() const override { return inner_->peer(); }
  absl::StatusOr<std::unique_ptr<Connection>> Accept(
      const ConnectionSetup& setup) override {
    RFRPC_ASSIGN_OR_RETURN(FaultyCompletionQueue * cq, Unwrap(setup.cq));
    ConnectionSetup inner_setup = setup;
    inner_setup.cq = cq->inner();
    RFRPC_ASSIGN_OR_RETURN(std::unique_ptr<Connection> c,
                           inner_->Accept(inner_setup));
    return std::unique_ptr<Connection>(
        new FaultyConnection(provider_, std::move(c), cq, knobs_,
                             setup.max_outstanding));
  }
  void Reject(const absl::Status& reason) override { inner_->Reject(reason); }

 private:
  const std::shared_ptr<Provider> provider_;
  const std::unique_ptr<IncomingConnection> inner_;
  FaultKnobs* const knobs_;
};

class FaultyListener final : public Listener {
 public:
  FaultyListener(std::shared_ptr<Provider> provider,
                 std::unique_ptr<Listener> inner, FaultKnobs* knobs)
      : provider_(std::move(provider)), inner_(std::move(inner)), knobs_(knobs) {}
  absl::StatusOr<std::unique_ptr<IncomingConnection>> Next(
      absl::Duration timeout) override {
    RFRPC_ASSIGN_OR_RETURN(std::unique_ptr<IncomingConnection> in,
                           inner_->Next(timeout));
    return std::unique_ptr<IncomingConnection>(
        new FaultyIncoming(provider_, std::move(in), knobs_));
  }
  std::string address() const override { return inner_->address(); }
  void Shutdown() override { inner_->Shutdown(); }

 private:
  const std::shared_ptr<Provider> provider_;
  const std::unique_ptr<Listener> inner_;
  FaultKnobs* const knobs_;
};

}  // namespace

class FaultyProvider final : public Provider {
 public:
  FaultyProvider(std::unique_ptr<Provider> inner, FaultKnobs* knobs)
      : inner_(std::move(inner)), knobs_(knobs) {}

  std::string name() const override { return "faulty:" + inner_->name(); }

  absl::StatusOr<std::unique_ptr<MemoryRegion>> AllocateMemory(
      size_t size) override {
    return inner_->AllocateMemory(size);
  }

  absl::StatusOr<std::unique_ptr<CompletionQueue>> CreateCompletionQueue(
      const CompletionQueueOptions& options) override {
    RFRPC_ASSIGN_OR_RETURN(std::unique_ptr<CompletionQueue> cq,
                           inner_->CreateCompletionQueue(options));
    return std::unique_ptr<CompletionQueue>(
        new FaultyCompletionQueue(std::move(cq), knobs_));
  }

  absl::StatusOr<std::unique_ptr<Listener>> Listen(
      const std::string& address) override {
    RFRPC_ASSIGN_OR_RETURN(std::unique_ptr<Listener> l, inner_->Listen(address));
    return std::unique_ptr<Listener>(
        new FaultyListener(inner_, std::move(l), knobs_));
  }

  absl::StatusOr<std::unique_ptr<Connection>> Connect(
      const std::string& address, const ConnectionSetup& setup) override {
    RFRPC_ASSIGN_OR_RETURN(FaultyCompletionQueue * cq, Unwrap(setup.cq));
    ConnectionSetup inner_setup = setup;
    inner_setup.cq = cq->inner();
    RFRPC_ASSIGN_OR_RETURN(std::unique_ptr<Connection> c,
                           inner_->Connect(address, inner_setup));
    return std::unique_ptr<Connection>(
        new FaultyConnection(inner_, std::move(c), cq, knobs_,
                             setup.max_outstanding));
  }

 private:
  // Shared with listeners and connections, which may outlive this object.
  const std::shared_ptr<Provider> inner_;
  FaultKnobs* const knobs_;
};

std::unique_ptr<Provider> WrapWithFaults(std::unique_ptr<Provider> inner,
                                         FaultKnobs* knobs) {
  return std::make_unique<FaultyProvider>(std::move(inner), knobs);
}

namespace {

// "faulty:<inner>" or "faulty@<tag>:<inner>".
absl::StatusOr<std::unique_ptr<Provider>> OpenFaulty(
    const std::string& name, const ProviderOptions& options) {
  const size_t colon = name.find(':');
  if (colon == std::string::npos || colon + 1 == name.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "\"", name, "\": expected faulty:<provider> or faulty@<tag>:<provider>"));
  }
  std::string tag;
  const size_t at = name.find('@');
  if (at != std::string::npos && at < colon) {
    tag = name.substr(at + 1, colon - at - 1);
  }
  RFRPC_ASSIGN_OR_RETURN(std::unique_ptr<Provider> inner,
                         Provider::Open(name.substr(colon + 1), options));
  return WrapWithFaults(std::move(inner), FaultKnobs::Named(tag));
}

[[maybe_unused]] const bool kRegistered = RegisterProviderFamily("faulty", &OpenFaulty);

}  // namespace

}  // namespace testing
}  // namespace transport
}  // namespace rfrpc
