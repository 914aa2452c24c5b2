// Copyright 2026 The rfrpc Authors.
//
// The shm provider's data path: Post() executes WRITEs and READs with the
// initiator's CPU, right away, against the peer's segments mapped into this
// process. The target process does nothing.
//
// Ordering (transport.h contract), made explicit instead of trusting memcpy's
// store order (glibc's memcpy stores the first vector of a large copy last
// and may use non-temporal stores):
//
//   WRITE  copy bytes [0, n-8); then SFENCE on x86 for copies large enough
//          that memcpy may have used non-temporal stores (a release
//          fence/store alone is a compiler barrier on x86-TSO and does not
//          order those); store the last 8 bytes with release semantics. When those 8 bytes are 8-byte aligned at the
//          target they go out as ONE release store, so a LoadAcquire64 of
//          that word sees either the old or the new value and, seeing the
//          new one, every earlier byte (likewise a 4-byte WRITE to an
//          aligned word: one release store). Otherwise (unaligned tail, or a
//          short WRITE) the tail is stored byte by byte, each a release
//          store: every earlier byte is visible before any tail byte, but
//          the tail itself may be observed half-written.
//   READ   load the first 8 bytes (one acquire load when 8-byte aligned at
//          the source, else acquire byte loads), then
//          copy the rest. A header the owner stores last with release
//          semantics therefore vouches for the payload behind it.
//   Order  requests of one post list, and of successive Post() calls on one
//          connection, execute in order on the posting thread.

#include <cstring>

#include "absl/strings/str_cat.h"
#include "transport/shm/shm_internal.h"

namespace rfrpc {
namespace transport {
namespace shm {
namespace {

// Copies at least this big may use non-temporal stores inside memcpy on some
// CPUs/libcs; fence them explicitly. (glibc already SFENCEs after its
// non-temporal loop; this does not rely on it.)
constexpr size_t kSfenceThreshold = 256;

inline void Bump(std::atomic<uint64_t>& c, uint64_t by = 1) {
  // One posting thread per connection: a plain load/store pair suffices and
  // avoids a locked RMW; readers on other threads still see atomic values.
  c.store(c.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
}

inline bool Aligned(const void* p, uintptr_t a) {
  return (reinterpret_cast<uintptr_t>(p) & (a - 1)) == 0;
}

// Stores the final `n` (<= 8) bytes of a WRITE after everything before them.
inline void StoreTail(char* dst, const char* src, size_t n) {
  if (n == 8 && Aligned(dst, 8)) {
    uint64_t v;
    std::memcpy(&v, src, 8);
    __atomic_store_n(reinterpret_cast<uint64_t*>(dst), v, __ATOMIC_RELEASE);
    return;
  }
  if (n == 4 && Aligned(dst, 4)) {
    uint32_t v;
    std::memcpy(&v, src, 4);
    __atomic_store_n(reinterpret_cast<uint32_t*>(dst), v, __ATOMIC_RELEASE);
    return;
  }
  // Unaligned or odd-sized tail: one release store per byte (free on x86,
  // and unlike a standalone fence, understood by ThreadSanitizer).
  for (size_t i = 0; i < n; ++i) {
    __atomic_store_n(dst + i, src[i], __ATOMIC_RELEASE);
  }
}

void OrderedWrite(char* dst, const char* src, size_t n) {
  if (n > 8) {
    std::memcpy(dst, src, n - 8);
#if defined(__x86_64__) || defined(__i386__)
    if (n - 8 >= kSfenceThreshold) __builtin_ia32_sfence();
#endif
    dst += n - 8;
    src += n - 8;
    n = 8;
  }
  StoreTail(dst, src, n);
}

void OrderedRead(char* dst, const char* src, size_t n) {
  const size_t head = n < 8 ? n : 8;
  if (head == 8 && Aligned(src, 8)) {
    const uint64_t v =
        __atomic_load_n(reinterpret_cast<const uint64_t*>(src), __ATOMIC_ACQUIRE);
    std::memcpy(dst, &v, 8);
  } else if (head == 4 && Aligned(src, 4)) {
    const uint32_t v =
        __atomic_load_n(reinterpret_cast<const uint32_t*>(src), __ATOMIC_ACQUIRE);
    std::memcpy(dst, &v, 4);
  } else {
    for (size_t i = 0; i < head; ++i) {
      dst[i] = __atomic_load_n(src + i, __ATOMIC_ACQUIRE);
    }
  }
  if (n > head) std::memcpy(dst + head, src + head, n - head);
}

}  // namespace

char* ShmConnection::Translate(uint32_t rkey, uint64_t addr, uint64_t len,
                               bool write) const {
  uint64_t end;
  if (__builtin_add_overflow(addr, len, &end)) return nullptr;
  for (const Target& r : targets_) {
    if (r.rkey != rkey || addr < r.addr || end > r.end) continue;
    if (write ? !r.remote_write : !r.remote_read) continue;
    return r.base + (addr - r.addr);
  }
  return nullptr;
}

WcStatus ShmConnection::Resolve(const WorkRequest& wr, const char** src,
                                char** dst, const char** why) const {
  const bool write = wr.opcode == Opcode::kWrite;
  char* local = nullptr;
  if (write && wr.inline_write && wr.inline_data != nullptr) {
    *src = static_cast<const char*>(wr.inline_data);
  } else {
    uint64_t end;
    if (wr.local == nullptr ||
        __builtin_add_overflow(wr.local_offset, wr.length, &end) ||
        end > wr.local->size()) {
      *why = "local buffer null or range outside the local region";
      return WcStatus::kLocalError;
    }
    local = wr.local->data() + wr.local_offset;
    *src = local;
  }
  uint64_t target;
  char* remote = nullptr;
  if (!__builtin_add_overflow(wr.remote.addr, wr.remote_offset, &target)) {
    remote = Translate(wr.remote.rkey, target, wr.length, write);
  }
  if (remote == nullptr) {
    *why = "rkey unknown to this connection, range outside the exposed "
           "region, or access right not granted";
    return WcStatus::kRemoteAccessError;
  }
  if (write) {
    *dst = remote;
  } else {
    *src = remote;
    *dst = local;
  }
  return WcStatus::kSuccess;
}

void ShmConnection::Run(const WorkRequest& wr, const char* src, char* dst) {
  if (wr.opcode == Opcode::kWrite) {
    OrderedWrite(dst, src, wr.length);
    Bump(counters_.writes);
    Bump(counters_.bytes_written, wr.length);
    if (wr.inline_write) Bump(counters_.inline_writes);
  } else {
    OrderedRead(dst, src, wr.length);
    Bump(counters_.reads);
    Bump(counters_.bytes_read, wr.length);
  }
}

void ShmConnection::NotifyPeer() {
  Bump(counters_.notifies);
  if (peer_wake_ == nullptr) return;
  // The WRITEs before this (release stores) must be visible before we look
  // at the peer's wake word: the other half of ArmWake's store-then-check.
  FullFence();
  WakeWord(peer_wake_);
}

absl::Status ShmConnection::CheckPostable(const WorkRequest& wr) const {
  if (wr.opcode != Opcode::kWrite && wr.opcode != Opcode::kRead) {
    return absl::InvalidArgumentError(
        absl::StrCat("wr_id ", wr.wr_id, ": unknown opcode"));
  }
  if (wr.notify && wr.opcode != Opcode::kWrite) {
    return absl::InvalidArgumentError(
        absl::StrCat("wr_id ", wr.wr_id, ": only a WRITE can notify"));
  }
  if (wr.inline_write &&
      (wr.opcode != Opcode::kWrite || wr.length > max_inline_)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "wr_id ", wr.wr_id, ": inline ",
        wr.opcode == Opcode::kWrite ? "WRITE of " : "READ (not allowed) of ",
        wr.length, " bytes; max_inline is ", max_inline_));
  }
  return absl::OkStatus();
}

Completion ShmConnection::MakeCompletion(const WorkRequest& wr,
                                         WcStatus st) const {
  Completion c;
  c.wr_id = wr.wr_id;
  c.opcode = wr.opcode;
  c.status = st;
  c.byte_len = st == WcStatus::kSuccess ? wr.length : 0;
  c.connection = const_cast<ShmConnection*>(this);
  c.connection_id = id();
  return c;
}

absl::Status ShmConnection::PostOnFailed(absl::Span<const WorkRequest> wrs) {
  uint64_t flushed = 0;
  for (const WorkRequest& wr : wrs) {
    if (!wr.signaled) continue;
    if (inline_ != nullptr) {
      inline_->Push(MakeCompletion(wr, WcStatus::kFlushed));
    } else {
      cq_->PushExtra(MakeCompletion(wr, WcStatus::kFlushed));
    }
    ++flushed;
  }
  Bump(counters_.errors, flushed);
  Bump(counters_.completions, flushed);
  if (flushed > 0) WakeWord(cq_wake_);
  return state_->status();
}

int ShmConnection::HotLines(absl::Span<const RemoteRegion> writes,
                            const void** out, int max) const {
  // The object (counters, targets) and the failed flag.
  int n = 0;
  const char* p = reinterpret_cast<const char*>(this);
  for (size_t off = 0; off < sizeof(*this) && n < max; off += 64) {
    out[n++] = p + off;
  }
  if (n < max) out[n++] = state_->failed_line();
  for (const RemoteRegion& w : writes) {
    const char* at = Translate(w.rkey, w.addr, w.length, /*write=*/true);
    if (at != nullptr && n < max) out[n++] = at;
  }
  return n;
}

absl::Status ShmConnection::QueueFull() const {
  return absl::ResourceExhaustedError(
      absl::StrCat("completion queue full (depth ",
                   inline_ != nullptr ? inline_->capacity()
                                      : static_cast<size_t>(cq_->depth()),
                   inline_ != nullptr ? ", inline" : "",
                   "): poll it before posting more signaled requests"));
}

absl::Status ShmConnection::Post(absl::Span<const WorkRequest> wrs) {
  // Fast path: one request that validates. Same checks, same effects and
  // same counters as PostList, minus its bookkeeping; every error case
  // (which executes nothing here) is left to PostList to report.
  if (wrs.size() == 1 && !state_->failed()) {
    const WorkRequest& wr = wrs[0];
    const bool postable =
        (wr.opcode == Opcode::kWrite && (!wr.inline_write ||
                                         wr.length <= max_inline_)) ||
        (wr.opcode == Opcode::kRead && !wr.inline_write && !wr.notify);
    const char* src;
    char* dst;
    const char* why;
    if (postable && max_outstanding_ >= 1 &&
        Resolve(wr, &src, &dst, &why) == WcStatus::kSuccess) {
      uint64_t ticket = 0;
      if (wr.signaled && (inline_ != nullptr ? !inline_->HasRoom(1)
                                             : !cq_->Claim(1, &ticket))) {
        Bump(counters_.post_lists);
        return QueueFull();
      }
      Bump(counters_.post_lists);
      Run(wr, src, dst);
      if (wr.notify) NotifyPeer();
      if (wr.signaled) {
        if (inline_ != nullptr) {
          inline_->Push(MakeCompletion(wr, WcStatus::kSuccess));
        } else {
          cq_->Publish(ticket, MakeCompletion(wr, WcStatus::kSuccess));
        }
        Bump(counters_.signaled);
        Bump(counters_.completions);
        WakeWord(cq_wake_);
      }
      return absl::OkStatus();
    }
  }
  return PostList(wrs);
}

absl::Status ShmConnection::PostList(absl::Span<const WorkRequest> wrs) {
  Bump(counters_.post_lists);
  if (state_->failed()) return PostOnFailed(wrs);
  if (wrs.size() > max_outstanding_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "post list of ", wrs.size(), " requests exceeds max_outstanding ",
        max_outstanding_));
  }
  uint32_t signaled = 0;
  for (const WorkRequest& wr : wrs) signaled += wr.signaled ? 1 : 0;
  uint64_t first = 0;
  if (signaled > 0 && (inline_ != nullptr ? !inline_->HasRoom(signaled)
                                          : !cq_->Claim(signaled, &first))) {
    return QueueFull();
  }
  // Completions go into the claimed cells (or the sink) in order; any
  // beyond them (error and flush completions of unsignaled requests) only
  // if there is room.
  uint32_t used = 0;
  uint64_t pushed = 0;
  auto push = [&](const Completion& c) {
    if (inline_ != nullptr) {
      inline_->Push(c);
    } else if (used < signaled) {
      cq_->Publish(first + used++, c);
    } else {
      cq_->PushExtra(c);
    }
    ++pushed;
  };
  absl::Status post_error;
  for (size_t i = 0; i < wrs.size(); ++i) {
    const WorkRequest& wr = wrs[i];
    post_error = CheckPostable(wr);
    if (!post_error.ok()) break;
    const char* src = nullptr;
    char* dst = nullptr;
    const char* why = "";
    const WcStatus st = Resolve(wr, &src, &dst, &why);
    if (st == WcStatus::kSuccess) {
      Run(wr, src, dst);
      if (wr.notify) NotifyPeer();
      if (wr.signaled) {
        push(MakeCompletion(wr, WcStatus::kSuccess));
        Bump(counters_.signaled);
      }
      continue;
    }
    // An error completion (even for an unsignaled request, as on verbs)
    // fails the connection; the rest of the list is flushed.
    push(MakeCompletion(wr, st));
    Bump(counters_.errors);
    state_->Fail(absl::UnavailableError(absl::StrCat(
        wr.opcode == Opcode::kRead ? "READ" : "WRITE", " wr_id ", wr.wr_id,
        " on shm connection ", id(), " to ", state_->peer_name(), ": ",
        WcStatusName(st), " (", why, ")")));
    for (size_t j = i + 1; j < wrs.size(); ++j) {
      push(MakeCompletion(wrs[j], WcStatus::kFlushed));
      Bump(counters_.errors);
    }
    break;
  }
  Bump(counters_.completions, pushed);
  // Cells claimed for requests a post-time error kept from running.
  if (inline_ == nullptr) {
    while (used < signaled) cq_->PublishHole(first + used++);
  }
  if (signaled > 0 || pushed > 0) WakeWord(cq_wake_);
  return post_error;
}

}  // namespace shm
}  // namespace transport
}  // namespace rfrpc
