// Copyright 2026 The rfrpc Authors.
//
// Setup code of the shm provider: memory, queues, the bootstrap handshake
// with SCM_RIGHTS segment passing, the listener and the liveness monitor.
// The data path is in shm_datapath.cc.

#include "transport/shm/shm_provider.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>              // NOLINT
#include <condition_variable>  // NOLINT
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "base/errno_text.h"
#include "base/status_macros.h"
#include "glog/logging.h"
#include "transport/auth_token.h"
#include "transport/bootstrap.h"
#include "transport/handshake.pb.h"
#include "transport/shm/shm_internal.h"

namespace rfrpc {
namespace transport {
namespace shm {
namespace {

constexpr char kProviderName[] = "shm";
// Segment fds per SCM_RIGHTS message (the kernel allows 253).
constexpr size_t kFdsPerMessage = 64;
constexpr char kFdMarker = 'F';
// How long a listener spends sending an error reply to a bad peer.
constexpr absl::Duration kReplyTimeout = absl::Milliseconds(200);

// ---------------------------------------------------------------------------
// Addresses.

struct UnixAddress {
  sockaddr_un sa{};
  socklen_t len = 0;
  std::string display;  // What Listener::address() returns.
  std::string unlink_path;  // Filesystem socket to remove, or "".
};

std::string DefaultSocketDir(const ProviderOptions& options) {
  if (!options.socket_dir.empty()) return options.socket_dir;
  for (const char* var : {"TEST_TMPDIR", "TMPDIR"}) {
    const char* v = std::getenv(var);
    if (v != nullptr && *v != '\0') return v;
  }
  return "/tmp";
}

absl::StatusOr<UnixAddress> ResolveAddress(const std::string& address,
                                           const ProviderOptions& options) {
  UnixAddress a;
  a.sa.sun_family = AF_UNIX;
  if (!address.empty() && address[0] == '@') {  // Abstract namespace.
    const std::string name = address.substr(1);
    if (name.empty() || name.size() + 1 > sizeof(a.sa.sun_path)) {
      return absl::InvalidArgumentError(
          absl::StrCat("bad abstract socket name \"", address, "\""));
    }
    a.sa.sun_path[0] = '\0';
    std::memcpy(a.sa.sun_path + 1, name.data(), name.size());
    a.len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 +
                                   name.size());
    a.display = address;
    return a;
  }
  std::string path = address;
  if (path.find('/') == std::string::npos) {
    // An IP host:port is a verbs address; taken as a name it became a
    // socket file such as /tmp/127.0.0.1:0.
    const std::string host = AddressHost(address);
    unsigned char ip[sizeof(in6_addr)];
    if (!host.empty() && (inet_pton(AF_INET, host.c_str(), ip) == 1 ||
                          inet_pton(AF_INET6, host.c_str(), ip) == 1)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "shm address \"", address,
          "\" is an IP host:port; shm listens on Unix sockets (a path, a name "
          "under the socket directory, or @name); host:port is for "
          "--provider=verbs"));
    }
    path = absl::StrCat(DefaultSocketDir(options), "/", address);
  }
  if (path.size() + 1 > sizeof(a.sa.sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Unix socket path \"", path, "\" is longer than ",
        sizeof(a.sa.sun_path) - 1, " bytes"));
  }
  std::memcpy(a.sa.sun_path, path.data(), path.size());
  a.len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) +
                                 path.size() + 1);
  a.display = path;
  a.unlink_path = path;
  return a;
}

std::string FreshName(ProviderCore& core) {
  absl::BitGen gen;
  return absl::StrFormat("rfrpc-shm-%d-%d-%08x.sock", ::getpid(),
                         core.NextSocketSerial(),
                         absl::Uniform<uint32_t>(gen));
}

std::string PeerNameOf(int sock) {
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (::getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
    return absl::StrCat("pid ", cred.pid);
  }
  return "unknown peer";
}

// ---------------------------------------------------------------------------
// Segment fds over SCM_RIGHTS.

absl::Status SendFds(int sock, const std::vector<ScopedFd>& fds,
                     absl::Time deadline) {
  for (size_t start = 0; start < fds.size(); start += kFdsPerMessage) {
    const size_t n = std::min(kFdsPerMessage, fds.size() - start);
    char byte = kFdMarker;
    iovec iov{&byte, 1};
    std::vector<char> control(CMSG_SPACE(sizeof(int) * n), 0);
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.data();
    msg.msg_controllen = control.size();
    cmsghdr* cm = CMSG_FIRSTHDR(&msg);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int) * n);
    int* out = reinterpret_cast<int*>(CMSG_DATA(cm));
    for (size_t i = 0; i < n; ++i) out[i] = fds[start + i].get();
    for (;;) {
      const ssize_t r = ::sendmsg(sock, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (r == 1) break;
      if (r < 0 && (errno == EAGAIN || errno == EINTR)) {
        const absl::Duration left = deadline - absl::Now();
        if (left <= absl::ZeroDuration()) {
          return absl::DeadlineExceededError("sending segment fds timed out");
        }
        pollfd p{sock, POLLOUT, 0};
        ::poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(left)) + 1);
        continue;
      }
      return absl::UnavailableError(ErrnoText("sending segment fds"));
    }
  }
  return absl::OkStatus();
}

absl::Status RecvFds(int sock, size_t want, absl::Time deadline,
                     std::vector<ScopedFd>* fds) {
  while (fds->size() < want) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) {
      return absl::DeadlineExceededError(absl::StrCat(
          "timed out waiting for segment fds (", fds->size(), " of ", want,
          ")"));
    }
    pollfd p{sock, POLLIN, 0};
    const int pr =
        ::poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(left)) + 1);
    if (pr <= 0) continue;
    char byte = 0;
    iovec iov{&byte, 1};
    std::vector<char> control(CMSG_SPACE(sizeof(int) * kFdsPerMessage), 0);
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.data();
    msg.msg_controllen = control.size();
    const ssize_t r = ::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (r < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (r == 0) {
      return absl::UnavailableError(
          "peer closed the connection while passing segment fds");
    }
    if (r < 0) return absl::UnavailableError(ErrnoText("receiving segment fds"));
    // Take ownership of whatever arrived before judging it.
    size_t got = 0;
    for (cmsghdr* cm = CMSG_FIRSTHDR(&msg); cm != nullptr;
         cm = CMSG_NXTHDR(&msg, cm)) {
      if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS) continue;
      const size_t n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      const int* in = reinterpret_cast<const int*>(CMSG_DATA(cm));
      for (size_t i = 0; i < n; ++i) fds->emplace_back(in[i]);
      got += n;
    }
    if ((msg.msg_flags & MSG_CTRUNC) != 0) {
      // The kernel drops passed fds it cannot install: almost always this
      // process's RLIMIT_NOFILE.
      rlimit lim{};
      getrlimit(RLIMIT_NOFILE, &lim);
      return absl::ResourceExhaustedError(absl::StrCat(
          "could not receive the peer's segment fds (out of file "
          "descriptors? RLIMIT_NOFILE is ",
          static_cast<uint64_t>(lim.rlim_cur), ")"));
    }
    if (byte != kFdMarker || got == 0) {
      return absl::InvalidArgumentError(
          "malformed segment-fd message after the handshake frame");
    }
  }
  if (fds->size() != want) {
    return absl::InvalidArgumentError(absl::StrCat(
        "peer passed ", fds->size(), " segment fds; its hello names ", want));
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Hello construction and peer mapping.

absl::Status BuildHello(const ConnectionSetup& setup,
                        std::vector<ScopedFd>* fds, Hello* hello) {
  hello->set_provider(kProviderName);
  hello->set_user_data(setup.user_data);
  hello->set_peer_name(absl::StrCat("pid ", ::getpid()));
  hello->set_max_inline(setup.max_inline);
  for (size_t i = 0; i < setup.exposed.size(); ++i) {
    const ExposedRegion& e = setup.exposed[i];
    const auto* region = dynamic_cast<const ShmMemoryRegion*>(e.region);
    if (region == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "exposed region ", i,
          " is null or was not allocated by an shm provider"));
    }
    const uint64_t length =
        e.length == 0 && e.offset <= region->size() ? region->size() - e.offset
                                                     : e.length;
    if (e.offset > region->size() || length > region->size() - e.offset) {
      return absl::InvalidArgumentError(absl::StrCat(
          "exposed region ", i, ": [", e.offset, ", +", length,
          ") lies outside the ", region->size(), "-byte region"));
    }
    RegionDescriptor* d = hello->add_regions();
    d->set_addr(reinterpret_cast<uint64_t>(region->data()) + e.offset);
    d->set_length(length);
    d->set_rkey(region->rkey());
    d->set_remote_write(e.remote_write);
    d->set_remote_read(e.remote_read);
    d->set_segment(static_cast<uint32_t>(i));
    d->set_segment_offset(e.offset);
    d->set_segment_size(region->segment().mapping.size());
    RFRPC_ASSIGN_OR_RETURN(ScopedFd fd,
                           region->segment().FdForPeer(e.remote_write));
    fds->push_back(std::move(fd));
  }
  // The queue's wake word, so the peer's notify WRITEs can wake it.
  const auto* cq = dynamic_cast<const ShmCompletionQueue*>(setup.cq);
  if (cq != nullptr && cq->wake_segment() != nullptr) {
    RFRPC_ASSIGN_OR_RETURN(ScopedFd fd,
                           cq->wake_segment()->FdForPeer(/*writable=*/true));
    fds->push_back(std::move(fd));
    hello->set_wake(true);
    hello->set_wake_offset(cq->wake_offset());
  }
  return absl::OkStatus();
}

// Segment fds a Hello announces: one per region descriptor's segment index
// range, plus the wake segment.
size_t FdsOf(const Hello& hello) {
  return static_cast<size_t>(hello.regions_size()) + (hello.wake() ? 1 : 0);
}

absl::StatusOr<PeerMemory> MapPeer(const Hello& hello,
                                   std::vector<ScopedFd> fds) {
  PeerMemory mem;
  if (hello.wake()) {
    if (fds.empty()) {
      return absl::InvalidArgumentError("hello announces a wake segment but "
                                        "passed no fd for it");
    }
    RFRPC_ASSIGN_OR_RETURN(mem.wake_mapping,
                           MapPeerSegmentShared(fds.back().get(),
                                                kWakeSegmentBytes,
                                                /*writable=*/true));
    if (hello.wake_offset() % kWakeWordStride != 0 ||
        hello.wake_offset() >= kWakeSegmentBytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "hello's wake word offset ", hello.wake_offset(),
          " is not a word of a ", kWakeSegmentBytes, "-byte wake segment"));
    }
    mem.wake_word = reinterpret_cast<std::atomic<uint32_t>*>(
        mem.wake_mapping->data() + hello.wake_offset());
    fds.pop_back();
  }
  std::vector<int> map_index(fds.size(), -1);
  // A segment is mapped writable only if some descriptor grants WRITE.
  std::vector<bool> writable(fds.size(), false);
  for (const RegionDescriptor& d : hello.regions()) {
    if (d.segment() < fds.size() && d.remote_write()) writable[d.segment()] = true;
  }
  for (int i = 0; i < hello.regions_size(); ++i) {
    const RegionDescriptor& d = hello.regions(i);
    uint64_t end = 0, addr_end = 0;
    if (d.segment() >= fds.size() || d.segment_size() == 0 ||
        __builtin_add_overflow(d.segment_offset(), d.length(), &end) ||
        end > d.segment_size() ||
        __builtin_add_overflow(d.addr(), d.length(), &addr_end)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "region descriptor ", i, " is inconsistent (segment ", d.segment(),
          " of ", fds.size(), ", offset ", d.segment_offset(), ", length ",
          d.length(), ", segment size ", d.segment_size(), ")"));
    }
    int& idx = map_index[d.segment()];
    if (idx < 0) {
      RFRPC_ASSIGN_OR_RETURN(
          std::shared_ptr<const Mapping> m,
          MapPeerSegmentShared(fds[d.segment()].get(), d.segment_size(),
                               writable[d.segment()]));
      idx = static_cast<int>(mem.mappings.size());
      mem.mappings.push_back(std::move(m));
    }
    const Mapping& m = *mem.mappings[static_cast<size_t>(idx)];
    if (m.size() != d.segment_size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "region descriptors disagree on the size of segment ", d.segment()));
    }
    PeerRegion r;
    r.addr = d.addr();
    r.length = d.length();
    r.rkey = d.rkey();
    r.remote_write = d.remote_write();
    r.remote_read = d.remote_read();
    r.base = m.data() + d.segment_offset();
    mem.regions.push_back(r);
  }
  return mem;
}

ConnectionInfo InfoFromHello(const Hello& hello, std::string peer_name) {
  ConnectionInfo info;
  info.provider = hello.provider();
  info.user_data = hello.user_data();
  info.peer_name = std::move(peer_name);
  for (const RegionDescriptor& d : hello.regions()) {
    info.regions.push_back(RemoteRegion{d.addr(), d.length(), d.rkey()});
  }
  return info;
}

void SendErrorReply(int sock, const absl::Status& status,
                    bool retry_later = false) {
  HelloReply reply;
  reply.set_status_code(static_cast<int32_t>(status.code()));
  reply.set_error_message(std::string(status.message()));
  reply.set_retry_later(retry_later);
  // Best effort: the peer may be gone or not speak our framing at all.
  (void)SendFrame(sock, reply, kReplyTimeout);
}

absl::StatusOr<std::unique_ptr<Connection>> MakeConnection(
    const std::shared_ptr<ProviderCore>& core, const ConnectionSetup& setup,
    ScopedFd sock, PeerMemory peer, ConnectionInfo info) {
  auto* cq = dynamic_cast<ShmCompletionQueue*>(setup.cq);
  const uint64_t id = core->NextConnectionId();
  auto state =
      std::make_shared<ConnState>(std::move(sock), std::move(peer),
                                  info.peer_name);
  RFRPC_RETURN_IF_ERROR(core->monitor().Add(
      id, state->sock(),
      [weak = std::weak_ptr<ConnState>(state)](absl::string_view why) {
        std::shared_ptr<ConnState> conn = weak.lock();
        if (conn == nullptr || conn->failed()) return;
        conn->Fail(absl::UnavailableError(
            absl::StrCat("shm peer ", conn->peer_name(), " ", why)));
      }));
  return std::unique_ptr<Connection>(
      new ShmConnection(id, std::move(info), core, std::move(state), cq,
                        setup.max_inline, setup.max_outstanding));
}

absl::Status CheckSetup(const ConnectionSetup& setup) {
  if (dynamic_cast<ShmCompletionQueue*>(setup.cq) == nullptr) {
    return absl::InvalidArgumentError(
        "ConnectionSetup::cq is null or not an shm completion queue");
  }
  if (setup.max_outstanding == 0) {
    return absl::InvalidArgumentError("ConnectionSetup::max_outstanding is 0");
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Incoming connection (listener side, after the peer's Hello parsed).

class ShmIncoming final : public IncomingConnection {
 public:
  ShmIncoming(std::shared_ptr<ProviderCore> core, ScopedFd sock, Hello hello,
              PeerMemory peer, std::string peer_name)
      : core_(std::move(core)),
        sock_(std::move(sock)),
        hello_(std::move(hello)),
        peer_mem_(std::move(peer)),
        info_(InfoFromHello(hello_, std::move(peer_name))) {}

  ~ShmIncoming() override {
    if (sock_.valid()) {
      Reject(absl::UnavailableError(
          "the listener dropped the connection request without accepting it"));
    }
  }

  const ConnectionInfo& peer() const override { return info_; }

  absl::StatusOr<std::unique_ptr<Connection>> Accept(
      const ConnectionSetup& setup) override {
    if (!sock_.valid()) {
      return absl::FailedPreconditionError(
          "connection request was already accepted or rejected");
    }
    absl::Status s =
        CheckAuthToken(setup.auth_token, hello_.auth_token(), info_.peer_name);
    if (s.ok()) s = CheckSetup(setup);
    Hello mine;
    std::vector<ScopedFd> fds;
    if (s.ok()) s = BuildHello(setup, &fds, &mine);
    if (!s.ok()) {
      LOG(WARNING) << "shm: refusing " << info_.peer_name << ": " << s;
      Reject(s);
      return s;
    }
    const absl::Time deadline = absl::Now() + setup.handshake_timeout;
    HelloReply reply;
    reply.set_status_code(0);
    *reply.mutable_hello() = std::move(mine);
    RFRPC_RETURN_IF_ERROR(
        SendFrame(sock_.get(), reply, deadline - absl::Now()));
    RFRPC_RETURN_IF_ERROR(SendFds(sock_.get(), fds, deadline));
    return MakeConnection(core_, setup, std::move(sock_), std::move(peer_mem_),
                          info_);
  }

  void Reject(const absl::Status& reason) override {
    if (!sock_.valid()) return;
    SendErrorReply(sock_.get(), reason.ok() ? absl::UnknownError(
                                                  "rejected with OK status")
                                            : reason);
    sock_.reset();
  }

 private:
  const std::shared_ptr<ProviderCore> core_;
  ScopedFd sock_;
  const Hello hello_;
  PeerMemory peer_mem_;
  const ConnectionInfo info_;
};

// ---------------------------------------------------------------------------
// Listener.

// Why bind() found `addr` in use, for a filesystem path: bind says "Address
// already in use" for a directory, a regular file and a socket left by a
// server that died alike, and only the last is worth a retry.
std::string WhyInUse(const UnixAddress& addr) {
  if (addr.unlink_path.empty()) return "another listener holds that name";
  struct stat st;
  if (::lstat(addr.unlink_path.c_str(), &st) != 0) return "";
  if (S_ISDIR(st.st_mode)) return "it is a directory";
  if (!S_ISSOCK(st.st_mode)) {
    return "a file that is not a socket is there; remove it or pick another "
           "address";
  }
  ScopedFd probe(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (probe.valid() &&
      ::connect(probe.get(), reinterpret_cast<const sockaddr*>(&addr.sa),
                addr.len) != 0 &&
      errno == ECONNREFUSED) {
    return "a socket file left by a server that is no longer running (nothing "
           "accepts on it); remove it or pick another address";
  }
  return "a server is listening there";
}

class ShmListener final : public Listener {
 public:
  static absl::StatusOr<std::unique_ptr<ShmListener>> Create(
      std::shared_ptr<ProviderCore> core, const UnixAddress& addr) {
    ScopedFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
                         0));
    if (!fd.valid()) return absl::InternalError(ErrnoText("socket"));
    if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr.sa),
               addr.len) != 0) {
      const int err = errno;
      std::string msg = absl::StrCat("shm listen on \"", addr.display,
                                     "\": bind: ", strerror(err));
      if (err == EADDRINUSE) {
        const std::string why = WhyInUse(addr);
        if (!why.empty()) absl::StrAppend(&msg, ": ", why);
      }
      return err == EADDRINUSE ? absl::AlreadyExistsError(msg)
                               : absl::InvalidArgumentError(msg);
    }
    if (::listen(fd.get(), SOMAXCONN) != 0) {
      return absl::InternalError(ErrnoText("listen"));
    }
    ScopedFd stop(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (!stop.valid()) return absl::InternalError(ErrnoText("eventfd"));
    return std::unique_ptr<ShmListener>(new ShmListener(
        std::move(core), std::move(fd), std::move(stop), addr));
  }

  ~ShmListener() override {
    Shutdown();
    acceptor_.join();
    std::map<uint64_t, std::thread> workers;
    std::deque<std::unique_ptr<ShmIncoming>> ready;
    {
      std::lock_guard<std::mutex> lock(mu_);
      // Wake handshakes blocked on their sockets.
      for (int fd : in_progress_) ::shutdown(fd, SHUT_RDWR);
      workers.swap(workers_);
    }
    for (auto& [id, t] : workers) t.join();
    {
      std::lock_guard<std::mutex> lock(mu_);
      ready.swap(ready_);
    }
    ready.clear();  // Rejects them.
    if (!addr_.unlink_path.empty()) ::unlink(addr_.unlink_path.c_str());
  }

  absl::StatusOr<std::unique_ptr<IncomingConnection>> Next(
      absl::Duration timeout) override {
    std::unique_lock<std::mutex> lock(mu_);
    const auto deadline =
        std::chrono::steady_clock::now() +
        absl::ToChronoNanoseconds(std::min(timeout, absl::Hours(24 * 365)));
    ready_cv_.wait_until(lock, deadline,
                         [this] { return !ready_.empty() || shutdown_; });
    if (!ready_.empty()) {
      std::unique_ptr<IncomingConnection> inc = std::move(ready_.front());
      ready_.pop_front();
      --half_open_;
      return inc;
    }
    if (shutdown_) {
      return absl::CancelledError(
          absl::StrCat("shm listener ", addr_.display, " shut down"));
    }
    return absl::DeadlineExceededError(absl::StrCat(
        "no connection request at ", addr_.display, " within ",
        absl::FormatDuration(timeout)));
  }

  std::string address() const override { return addr_.display; }

  void Shutdown() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      shutdown_ = true;
      ready_cv_.notify_all();
    }
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t r = ::write(stop_.get(), &one, sizeof(one));
  }

 private:
  ShmListener(std::shared_ptr<ProviderCore> core, ScopedFd fd, ScopedFd stop,
              UnixAddress addr)
      : core_(std::move(core)),
        fd_(std::move(fd)),
        stop_(std::move(stop)),
        addr_(std::move(addr)) {
    acceptor_ = std::thread([this] { AcceptLoop(); });
  }

  void AcceptLoop() {
    for (;;) {
      pollfd p[2] = {{fd_.get(), POLLIN, 0}, {stop_.get(), POLLIN, 0}};
      ::poll(p, 2, 100);
      if (p[1].revents != 0) return;
      Reap();
      if ((p[0].revents & POLLIN) == 0) continue;
      for (;;) {
        ScopedFd sock(::accept4(fd_.get(), nullptr, nullptr,
                                SOCK_CLOEXEC | SOCK_NONBLOCK));
        if (!sock.valid()) {
          if (DescriptorReserve::OutOfDescriptors(errno)) ShedOne(errno);
          break;
        }
        mu_.lock();
        if (shutdown_) {
          mu_.unlock();
          return;
        }
        if (half_open_ >= kMaxHalfOpenHandshakes) {
          const int pending = half_open_;
          mu_.unlock();
          const std::string who = PeerNameOf(sock.get());
          // Connectors retry these (HelloReply::retry_later): a storm of
          // them logs one line in 100, not one each.
          LOG_EVERY_N(WARNING, 100)
              << "shm listener " << addr_.display << ": refusing " << who
              << ": " << pending << " handshakes already pending ("
              << google::COUNTER << " refused so)";
          SendErrorReply(sock.get(),
                         absl::ResourceExhaustedError(absl::StrCat(
                             "shm listener ", addr_.display, " has ", pending,
                             " handshakes pending; retry later")),
                         /*retry_later=*/true);
          continue;
        }
        ++half_open_;
        const uint64_t id = next_worker_++;
        const int raw = sock.release();
        in_progress_.insert(raw);
        workers_.emplace(id, std::thread([this, raw, id] {
                           Handshake(ScopedFd(raw), id);
                         }));
        mu_.unlock();
      }
    }
  }

  // The process is out of descriptors (`err`): the peer waiting in the
  // backlog is told so and closed, with the reserve (DescriptorReserve).
  void ShedOne(int err) {
    const absl::Status why = absl::ResourceExhaustedError(absl::StrCat(
        "shm listener ", addr_.display, " is out of file descriptors (accept: ",
        ErrnoDetail(err), "); raise its RLIMIT_NOFILE (ulimit -n) or close "
        "connections"));
    LOG_EVERY_N(WARNING, 1000) << why.message() << " (" << google::COUNTER
                               << " peers refused so)";
    reserve_.Shed(fd_.get(), [&](int sock) {
      SendErrorReply(sock, why, /*retry_later=*/true);
    });
  }

  void Reap() {
    std::vector<std::thread> done;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto it = finished_.begin(); it != finished_.end();) {
        auto w = workers_.find(*it);
        if (w == workers_.end()) {
          ++it;
          continue;
        }
        done.push_back(std::move(w->second));
        workers_.erase(w);
        it = finished_.erase(it);
      }
    }
    for (std::thread& t : done) t.join();
  }

  // Runs on a worker thread: reads and checks the peer's Hello and segment
  // fds. Failures are answered, logged, and counted out of half_open_.
  void Handshake(ScopedFd sock, uint64_t id) {
    const int raw = sock.get();
    const std::string who = PeerNameOf(raw);
    const absl::Time deadline = absl::Now() + kListenerHandshakeTimeout;
    std::unique_ptr<ShmIncoming> inc;
    absl::Status s;
    Hello hello;
    s = RecvFrame(sock.get(), &hello, kListenerHandshakeTimeout);
    if (s.ok() && hello.provider() != kProviderName) {
      s = absl::FailedPreconditionError(absl::StrCat(
          "provider mismatch: the peer speaks \"", hello.provider(),
          "\"; this listener is \"", kProviderName, "\""));
    }
    std::vector<ScopedFd> fds;
    if (s.ok()) s = RecvFds(sock.get(), FdsOf(hello), deadline, &fds);
    absl::StatusOr<PeerMemory> mem = absl::UnknownError("");
    if (s.ok()) {
      mem = MapPeer(hello, std::move(fds));
      s = mem.status();
    }
    if (s.ok()) {
      inc = std::make_unique<ShmIncoming>(core_, std::move(sock),
                                          std::move(hello), std::move(*mem),
                                          who);
    } else {
      LOG(WARNING) << "shm listener " << addr_.display
                   << ": rejected handshake from " << who << ": " << s;
      SendErrorReply(sock.get(), s);
    }
    std::lock_guard<std::mutex> lock(mu_);
    in_progress_.erase(raw);
    finished_.push_back(id);
    if (inc != nullptr && !shutdown_) {
      ready_.push_back(std::move(inc));
      ready_cv_.notify_one();
    } else {
      --half_open_;
    }
    // (A rejected `inc` is destroyed after the lock is released.)
  }

  const std::shared_ptr<ProviderCore> core_;
  const ScopedFd fd_;
  const ScopedFd stop_;
  const UnixAddress addr_;
  DescriptorReserve reserve_;  // Only the acceptor uses it.
  std::thread acceptor_;

  std::mutex mu_;
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
  int half_open_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t next_worker_ ABSL_GUARDED_BY(mu_) = 1;
  std::set<int> in_progress_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, std::thread> workers_ ABSL_GUARDED_BY(mu_);
  std::vector<uint64_t> finished_ ABSL_GUARDED_BY(mu_);
  std::deque<std::unique_ptr<ShmIncoming>> ready_ ABSL_GUARDED_BY(mu_);
  std::condition_variable ready_cv_;
};

// ---------------------------------------------------------------------------
// Provider.

class ShmProvider final : public Provider {
 public:
  explicit ShmProvider(std::shared_ptr<ProviderCore> core)
      : core_(std::move(core)) {}

  std::string name() const override { return kProviderName; }

  absl::StatusOr<std::unique_ptr<MemoryRegion>> AllocateMemory(
      size_t size) override {
    RFRPC_ASSIGN_OR_RETURN(std::unique_ptr<Segment> seg, Segment::Create(size));
    return std::unique_ptr<MemoryRegion>(
        new ShmMemoryRegion(std::move(seg), size, core_->NewRkey()));
  }

  absl::StatusOr<std::unique_ptr<CompletionQueue>> CreateCompletionQueue(
      const CompletionQueueOptions& options) override {
    RFRPC_ASSIGN_OR_RETURN(std::unique_ptr<ShmCompletionQueue> cq,
                           ShmCompletionQueue::Create(options));
    return std::unique_ptr<CompletionQueue>(std::move(cq));
  }

  absl::StatusOr<std::unique_ptr<Listener>> Listen(
      const std::string& address) override {
    std::string where = address;
    if (where.empty()) {
      where = absl::StrCat(DefaultSocketDir(core_->options()), "/",
                           FreshName(*core_));
      // Bazel's $TEST_TMPDIR can exceed sun_path; fall back to the abstract
      // namespace, which leaves no file behind either.
      if (where.size() + 1 > sizeof(sockaddr_un::sun_path)) {
        where = absl::StrCat("@", FreshName(*core_));
      }
    }
    RFRPC_ASSIGN_OR_RETURN(UnixAddress addr,
                           ResolveAddress(where, core_->options()));
    RFRPC_ASSIGN_OR_RETURN(std::unique_ptr<ShmListener> l,
                           ShmListener::Create(core_, addr));
    return std::unique_ptr<Listener>(std::move(l));
  }

  absl::StatusOr<std::unique_ptr<Connection>> Connect(
      const std::string& address, const ConnectionSetup& setup) override {
    RFRPC_RETURN_IF_ERROR(CheckSetup(setup));
    RFRPC_ASSIGN_OR_RETURN(UnixAddress addr,
                           ResolveAddress(address, core_->options()));
    Hello hello;
    std::vector<ScopedFd> fds;
    RFRPC_RETURN_IF_ERROR(BuildHello(setup, &fds, &hello));
    hello.set_auth_token(setup.auth_token);  // Only the connector sends one.
    const absl::Time deadline = absl::Now() + setup.handshake_timeout;
    ScopedFd sock(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
                           0));
    if (!sock.valid()) return absl::InternalError(ErrnoText("socket"));
    if (::connect(sock.get(), reinterpret_cast<const sockaddr*>(&addr.sa),
                  addr.len) != 0) {
      const int err = errno;
      absl::Status s = absl::UnavailableError(absl::StrCat(
          "shm connect to \"", addr.display, "\": ", ErrnoString(err)));
      // EAGAIN: the listener's backlog is full (a storm of connects).
      return err == EAGAIN ? MarkRetryLater(std::move(s)) : s;
    }
    auto prefix = [&](const absl::Status& s) {
      return absl::Status(s.code(), absl::StrCat("shm handshake with \"",
                                                 addr.display,
                                                 "\": ", s.message()));
    };
    absl::Status s = SendFrame(sock.get(), hello, deadline - absl::Now());
    if (s.ok()) s = SendFds(sock.get(), fds, deadline);
    // A listener that refuses at once (handshakes at their cap) may close
    // before the hello is all sent: then its refusal is what counts.
    HelloReply reply;
    const absl::Status got =
        RecvFrame(sock.get(), &reply,
                  s.ok() ? deadline - absl::Now() : absl::Milliseconds(100));
    if (!got.ok()) return prefix(s.ok() ? got : s);
    if (!s.ok() && reply.status_code() == 0) return prefix(s);
    if (reply.status_code() != 0) {
      absl::Status refused(
          static_cast<absl::StatusCode>(reply.status_code()),
          absl::StrCat("shm listener at \"", addr.display,
                       "\" refused the connection: ", reply.error_message()));
      return reply.retry_later() ? MarkRetryLater(std::move(refused)) : refused;
    }
    const Hello& theirs = reply.hello();
    if (theirs.provider() != kProviderName) {
      return prefix(absl::FailedPreconditionError(absl::StrCat(
          "provider mismatch: listener speaks \"", theirs.provider(), "\"")));
    }
    std::vector<ScopedFd> peer_fds;
    s = RecvFds(sock.get(), FdsOf(theirs), deadline, &peer_fds);
    if (!s.ok()) return prefix(s);
    absl::StatusOr<PeerMemory> mem = MapPeer(theirs, std::move(peer_fds));
    if (!mem.ok()) return prefix(mem.status());
    std::string who = PeerNameOf(sock.get());
    return MakeConnection(core_, setup, std::move(sock), std::move(*mem),
                          InfoFromHello(theirs, std::move(who)));
  }

 private:
  const std::shared_ptr<ProviderCore> core_;
};

}  // namespace

// ---------------------------------------------------------------------------
// ConnState, ProviderCore, ShmConnection setup parts.

ConnState::~ConnState() {
  // Shut down (not just close) so a copy of the fd inherited by a forked
  // child cannot keep the peer believing we are alive.
  if (sock_.valid()) ::shutdown(sock_.get(), SHUT_RDWR);
}

void ConnState::Fail(const absl::Status& reason) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (failed_.load(std::memory_order_relaxed)) return;
    status_ = reason.code() == absl::StatusCode::kUnavailable
                  ? reason
                  : absl::UnavailableError(absl::StrCat(
                        "connection failed: ", reason.ToString()));
    failed_.store(true, std::memory_order_release);
  }
  transport::internal::CountConnectionFailure();
  ::shutdown(sock_.get(), SHUT_RDWR);
}

absl::Status ConnState::status() const {
  if (!failed()) return absl::OkStatus();
  std::lock_guard<std::mutex> lock(mu_);
  return status_;
}

uint32_t ProviderCore::NewRkey() {
  std::lock_guard<std::mutex> lock(mu_);
  uint32_t k = 0;
  while (k == 0) k = absl::Uniform<uint32_t>(gen_);
  return k;
}

ShmConnection::ShmConnection(uint64_t id, ConnectionInfo info,
                             std::shared_ptr<ProviderCore> core,
                             std::shared_ptr<ConnState> state,
                             ShmCompletionQueue* cq, uint32_t max_inline,
                             uint32_t max_outstanding)
    : Connection(id, std::move(info)),
      core_(std::move(core)),
      cq_(cq),
      cq_wake_(cq->wake_word()),
      max_inline_(max_inline),
      max_outstanding_(max_outstanding),
      state_(std::move(state)),
      targets_([this] {
        absl::InlinedVector<Target, 3> t;
        for (const PeerRegion& r : state_->peer().regions) {
          t.push_back(Target{r.addr, r.addr + r.length, r.base, r.rkey,
                             r.remote_write, r.remote_read});
        }
        return t;
      }()),
      peer_wake_(state_->peer().wake_word) {}

ShmConnection::~ShmConnection() { core_->monitor().Remove(id()); }

// Providers opened with the same options in one process share one core:
// one liveness monitor thread (and its epoll and eventfd) for all of them,
// so a process holding thousands of channels holds one monitor, not one per
// channel. A forked child never reuses its parent's core (the monitor
// thread did not survive the fork).
absl::StatusOr<std::unique_ptr<Provider>> OpenShmProvider(
    const ProviderOptions& options) {
  static std::mutex mu;
  static std::weak_ptr<ProviderCore>* shared = new std::weak_ptr<ProviderCore>;
  static pid_t shared_pid = 0;
  std::lock_guard<std::mutex> lock(mu);
  if ((!options.device.empty() && options.device != "auto") ||
      options.port != 0 || options.gid_index != -1) {
    // Set for verbs (or for auto, which fell back to shm): say so once
    // rather than take them without a word.
    LOG_FIRST_N(WARNING, 1)
        << "shm ignores the verbs options device=\"" << options.device
        << "\" port=" << options.port << " gid_index=" << options.gid_index;
  }
  std::shared_ptr<ProviderCore> core = shared->lock();
  if (core == nullptr || shared_pid != ::getpid() ||
      core->options().socket_dir != options.socket_dir) {
    RFRPC_ASSIGN_OR_RETURN(std::unique_ptr<LivenessMonitor> monitor,
                           LivenessMonitor::Create("shm"));
    core = std::make_shared<ProviderCore>(options, std::move(monitor));
    *shared = core;
    shared_pid = ::getpid();
  }
  return std::unique_ptr<Provider>(new ShmProvider(std::move(core)));
}

namespace {
[[maybe_unused]] const bool kRegistered =
    RegisterProvider(kProviderName, &OpenShmProvider);
}  // namespace

}  // namespace shm
}  // namespace transport
}  // namespace rfrpc
