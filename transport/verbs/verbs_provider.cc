// Copyright 2026 The rfrpc Authors.
//
// Setup code of the verbs provider: device opening, memory, completion
// queues, the TCP bootstrap (listener, connect, handshake), queue pair state
// transitions and the liveness monitor. The data path is in
// verbs_datapath.cc.
//
// Handshake on the bootstrap socket (frames per transport/bootstrap.h):
//   1. connector -> listener  Hello       (QP in INIT; its regions, token)
//   2. listener  -> connector HelloReply  (status; on success the listener's
//                                          Hello, its QP already in RTS)
//   3. connector -> listener  HelloReply  (status of the connector moving its
//                                          QP to RTS; empty hello)
// Frame 3 lets Accept() return only when both QPs are in RTS, so either side
// may post as soon as its call returns. The socket then stays open as the
// liveness channel.

#include "base/errno_text.h"
#include "transport/verbs/verbs_provider.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <mutex>  // NOLINT
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "glog/logging.h"
#include "base/status_macros.h"
#include "transport/auth_token.h"
#include "transport/bootstrap.h"
#include "transport/handshake.pb.h"
#include "transport/verbs/verbs_internal.h"

namespace rfrpc {
namespace transport {
namespace verbs {
namespace {

constexpr char kProviderName[] = "verbs";
// Handshakes a listener keeps in progress at once; more are refused with
// RESOURCE_EXHAUSTED so a flood of idle sockets cannot pin memory or fds.
constexpr size_t kMaxHalfOpen = 64;
// A connector must deliver its Hello within this.
constexpr absl::Duration kHalfOpenTimeout = absl::Seconds(5);
// QP tuning: local ACK timeout 4.096 us * 2^14 ~ 67 ms, 7 retries.
constexpr uint8_t kAckTimeout = 14;
constexpr uint8_t kRetryCount = 7;
constexpr uint8_t kRnrRetry = 7;
constexpr uint8_t kMinRnrTimer = 12;
constexpr uint32_t kMaxRdAtomic = 16;

std::atomic<uint64_t> next_connection_id{1};
std::atomic<uint64_t> next_region_serial{1};

uint32_t RandomPsn() {
  static thread_local std::mt19937 rng{std::random_device{}()};
  return rng() & 0xffffff;
}

// Splits "host:port" / "[v6]:port".
absl::Status SplitHostPort(const std::string& address, std::string* host,
                           std::string* port) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "verbs address \"", address, "\" is not host:port"));
  }
  *host = address.substr(0, colon);
  *port = address.substr(colon + 1);
  if (host->size() >= 2 && host->front() == '[' && host->back() == ']') {
    *host = host->substr(1, host->size() - 2);
  }
  uint32_t p;
  if (!absl::SimpleAtoi(*port, &p) || p > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("verbs address \"", address, "\": bad port"));
  }
  return absl::OkStatus();
}

std::string SockaddrText(const sockaddr_storage& ss) {
  char buf[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (ss.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &in->sin_addr, buf, sizeof(buf));
    port = ntohs(in->sin_port);
    return absl::StrCat(buf, ":", port);
  }
  if (ss.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &in6->sin6_addr, buf, sizeof(buf));
    port = ntohs(in6->sin6_port);
    return absl::StrCat("[", buf, "]:", port);
  }
  return "?";
}

std::string PeerName(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) {
    return "?";
  }
  return SockaddrText(ss);
}

void SetNoDelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

// Sends a refusal (best effort, short timeout) on a bootstrap socket.
void SendRefusal(int fd, const absl::Status& status, bool retry_later = false) {
  HelloReply reply;
  reply.set_status_code(static_cast<int>(status.code()));
  reply.set_error_message(std::string(status.message()));
  reply.set_retry_later(retry_later);
  absl::Status s = SendFrame(fd, reply, absl::Milliseconds(200));
  if (!s.ok()) VLOG(1) << "verbs: refusal not delivered: " << s;
}

absl::Status StatusFromReply(const HelloReply& reply, const std::string& who) {
  absl::Status s(static_cast<absl::StatusCode>(reply.status_code()),
                 absl::StrCat(who, " refused the verbs connection: ",
                              reply.error_message()));
  return reply.retry_later() ? MarkRetryLater(std::move(s)) : s;
}

// Checks a peer's Hello for what this provider needs.
absl::Status ValidateHello(const Hello& hello) {
  if (hello.provider() != kProviderName) {
    return absl::FailedPreconditionError(absl::StrCat(
        "provider mismatch: this side speaks \"verbs\", the peer \"",
        hello.provider(), "\""));
  }
  if (hello.qp().gid().size() != 16) {
    return absl::InvalidArgumentError(absl::StrCat(
        "handshake: GID is ", hello.qp().gid().size(), " bytes, want 16"));
  }
  if (hello.qp().mtu() < IBV_MTU_256 || hello.qp().mtu() > IBV_MTU_4096) {
    return absl::InvalidArgumentError(
        absl::StrCat("handshake: bad MTU enum ", hello.qp().mtu()));
  }
  if (hello.qp().qpn() == 0 || hello.qp().qpn() > 0xffffff) {
    return absl::InvalidArgumentError(
        absl::StrCat("handshake: bad QPN ", hello.qp().qpn()));
  }
  return absl::OkStatus();
}

absl::StatusOr<VerbsCompletionQueue*> CheckSetup(const Device* device,
                                                 const ConnectionSetup& setup) {
  auto* cq = dynamic_cast<VerbsCompletionQueue*>(setup.cq);
  if (cq == nullptr) {
    return absl::InvalidArgumentError(
        "ConnectionSetup::cq must be a completion queue of this verbs "
        "provider");
  }
  if (cq->device() != device) {
    return absl::InvalidArgumentError(
        "ConnectionSetup::cq belongs to another verbs provider (device)");
  }
  if (setup.max_outstanding == 0) {
    return absl::InvalidArgumentError("max_outstanding must be > 0");
  }
  return cq;
}

// Creates the PD and QP (moved to INIT), registers the exposed regions in
// that PD, and fills `hello` with what the peer needs.
absl::StatusOr<QpResources> PrepareQp(const Device& device,
                                      VerbsCompletionQueue* cq,
                                      const ConnectionSetup& setup,
                                      Hello* hello) {
  QpResources res;
  RFRPC_ASSIGN_OR_RETURN(res.pd, VerbsPd::Create(device.context->get()));

  hello->set_provider(kProviderName);
  hello->set_user_data(setup.user_data);
  hello->set_peer_name(absl::StrCat("pid ", getpid(), " ", device.name, " ",
                                    device.port.gid_text));
  for (size_t i = 0; i < setup.exposed.size(); ++i) {
    const ExposedRegion& e = setup.exposed[i];
    if (e.region == nullptr ||
        dynamic_cast<const VerbsMemoryRegion*>(e.region) == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "exposed region ", i,
          " is null or was not allocated by the verbs provider"));
    }
    const uint64_t size = e.region->size();
    const uint64_t length = e.length == 0 && e.offset < size
                                ? size - e.offset
                                : e.length;
    if (e.offset >= size || length == 0 || length > size - e.offset) {
      return absl::OutOfRangeError(absl::StrCat(
          "exposed region ", i, ": [", e.offset, ", +", e.length,
          ") is outside its ", size, "-byte region"));
    }
    // Exactly the exposed range, exactly the exposed rights: the target NIC
    // enforces both (an access outside is a remote access error).
    int access = IBV_ACCESS_LOCAL_WRITE;
    if (e.remote_write) access |= IBV_ACCESS_REMOTE_WRITE;
    if (e.remote_read) access |= IBV_ACCESS_REMOTE_READ;
    char* start = e.region->data() + e.offset;
    RFRPC_ASSIGN_OR_RETURN(
        std::unique_ptr<VerbsMr> mr,
        VerbsMr::Register(res.pd->get(), start, length, access));
    RegionDescriptor* d = hello->add_regions();
    d->set_addr(reinterpret_cast<uintptr_t>(start));
    d->set_length(length);
    d->set_rkey(mr->get()->rkey);
    d->set_remote_write(e.remote_write);
    d->set_remote_read(e.remote_read);
    res.exposed.push_back(std::move(mr));
  }

  ibv_qp_init_attr init{};
  init.send_cq = cq->cq();
  init.recv_cq = cq->cq();
  init.qp_type = IBV_QPT_RC;
  init.sq_sig_all = 0;
  init.cap.max_send_wr = std::min<uint32_t>(
      setup.max_outstanding, static_cast<uint32_t>(device.attr.max_qp_wr));
  init.cap.max_recv_wr = kNotifyReceives;
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  init.cap.max_inline_data = setup.max_inline;
  RFRPC_ASSIGN_OR_RETURN(res.qp, VerbsQp::Create(res.pd->get(), &init));
  // The provider may grant more inline space than asked; never less.
  res.max_inline = std::min(setup.max_inline, init.cap.max_inline_data);

  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = device.port.port;
  a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                      IBV_ACCESS_REMOTE_READ;
  if (int rc = ibv_modify_qp(res.qp->get(), &a,
                             IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                                 IBV_QP_ACCESS_FLAGS);
      rc != 0) {
    return absl::InternalError(
        absl::StrCat("ibv_modify_qp(INIT): ", ErrnoDetail(rc)));
  }
  if (int rc = PostNotifyReceives(res.qp->get(), kNotifyReceives); rc != 0) {
    return absl::InternalError(absl::StrCat(
        "ibv_post_recv (notify receives): ", ErrnoDetail(rc)));
  }
  res.psn = RandomPsn();
  VerbsQpInfo* qi = hello->mutable_qp();
  qi->set_qpn(res.qp->get()->qp_num);
  qi->set_psn(res.psn);
  qi->set_lid(device.port.lid);
  qi->set_gid(std::string(reinterpret_cast<const char*>(device.port.gid.raw),
                          16));
  qi->set_mtu(device.port.active_mtu);
  hello->set_max_inline(res.max_inline);
  return res;
}

// Moves the QP INIT -> RTR -> RTS towards `remote`.
absl::Status ConnectQp(const Device& device, const QpResources& res,
                       const VerbsQpInfo& remote) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = std::min(device.port.active_mtu,
                        static_cast<ibv_mtu>(remote.mtu()));
  a.dest_qp_num = remote.qpn();
  a.rq_psn = remote.psn() & 0xffffff;
  a.max_dest_rd_atomic = static_cast<uint8_t>(std::min<uint32_t>(
      kMaxRdAtomic, static_cast<uint32_t>(device.attr.max_qp_rd_atom)));
  a.min_rnr_timer = kMinRnrTimer;
  a.ah_attr.port_num = device.port.port;
  a.ah_attr.dlid = static_cast<uint16_t>(remote.lid());
  a.ah_attr.sl = 0;
  a.ah_attr.src_path_bits = 0;
  ibv_gid dgid{};
  memcpy(dgid.raw, remote.gid().data(), 16);
  bool zero_gid = true;
  for (uint8_t b : dgid.raw) zero_gid = zero_gid && b == 0;
  if (device.port.ethernet || !zero_gid) {
    a.ah_attr.is_global = 1;
    a.ah_attr.grh.dgid = dgid;
    a.ah_attr.grh.sgid_index = static_cast<uint8_t>(device.port.gid_index);
    a.ah_attr.grh.hop_limit = 64;
  }
  if (int rc = ibv_modify_qp(res.qp->get(), &a,
                             IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
                                 IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                 IBV_QP_MAX_DEST_RD_ATOMIC |
                                 IBV_QP_MIN_RNR_TIMER);
      rc != 0) {
    return absl::InternalError(absl::StrCat(
        "ibv_modify_qp(RTR, remote qpn ", remote.qpn(), ", mtu enum ",
        a.path_mtu, "): ", ErrnoDetail(rc)));
  }
  a = ibv_qp_attr{};
  a.qp_state = IBV_QPS_RTS;
  a.timeout = kAckTimeout;
  a.retry_cnt = kRetryCount;
  a.rnr_retry = kRnrRetry;
  a.sq_psn = res.psn;
  a.max_rd_atomic = static_cast<uint8_t>(std::min<uint32_t>(
      kMaxRdAtomic, static_cast<uint32_t>(device.attr.max_qp_init_rd_atom)));
  if (int rc = ibv_modify_qp(res.qp->get(), &a,
                             IBV_QP_STATE | IBV_QP_TIMEOUT |
                                 IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                 IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
      rc != 0) {
    return absl::InternalError(
        absl::StrCat("ibv_modify_qp(RTS): ", ErrnoDetail(rc)));
  }
  return absl::OkStatus();
}

ConnectionInfo InfoFromHello(const Hello& hello, const std::string& addr) {
  ConnectionInfo info;
  info.provider = hello.provider();
  info.user_data = hello.user_data();
  info.peer_name = addr;
  for (const RegionDescriptor& d : hello.regions()) {
    info.regions.push_back(RemoteRegion{d.addr(), d.length(), d.rkey()});
  }
  return info;
}

// ---------------------------------------------------------------------------

class VerbsIncoming final : public IncomingConnection {
 public:
  VerbsIncoming(std::shared_ptr<Device> device, ScopedFd fd, Hello hello,
                std::string peer_addr)
      : device_(std::move(device)),
        fd_(std::move(fd)),
        hello_(std::move(hello)),
        info_(InfoFromHello(hello_, peer_addr)) {}
  ~VerbsIncoming() override {
    if (fd_.valid()) {
      Reject(absl::UnavailableError(
          "connection request dropped by the listener"));
    }
  }

  const ConnectionInfo& peer() const override { return info_; }

  absl::StatusOr<std::unique_ptr<Connection>> Accept(
      const ConnectionSetup& setup) override {
    if (!fd_.valid()) {
      return absl::FailedPreconditionError(
          "connection request already answered");
    }
    absl::Status s = AcceptImpl(setup);
    if (!s.ok()) {
      if (fd_.valid()) Reject(s);
      return s;
    }
    return std::move(conn_);
  }

  void Reject(const absl::Status& reason) override {
    if (!fd_.valid()) return;
    SendRefusal(fd_.get(), reason.ok() ? absl::UnknownError("rejected")
                                       : reason);
    fd_.reset();
  }

 private:
  absl::Status AcceptImpl(const ConnectionSetup& setup) {
    const absl::Time deadline = absl::Now() + setup.handshake_timeout;
    RFRPC_RETURN_IF_ERROR(
        CheckAuthToken(setup.auth_token, hello_.auth_token(), info_.peer_name));
    RFRPC_ASSIGN_OR_RETURN(VerbsCompletionQueue * cq,
                           CheckSetup(device_.get(), setup));
    HelloReply reply;
    RFRPC_ASSIGN_OR_RETURN(
        QpResources res,
        PrepareQp(*device_, cq, setup, reply.mutable_hello()));
    RFRPC_RETURN_IF_ERROR(ConnectQp(*device_, res, hello_.qp()));
    reply.set_status_code(0);
    absl::Status s = SendFrame(fd_.get(), reply, deadline - absl::Now());
    if (!s.ok()) {
      fd_.reset();
      return s;
    }
    HelloReply ready;
    s = RecvFrame(fd_.get(), &ready, deadline - absl::Now());
    if (!s.ok()) {
      fd_.reset();
      return absl::Status(s.code(), absl::StrCat("verbs handshake with ",
                                                 info_.peer_name,
                                                 " (ready): ", s.message()));
    }
    if (ready.status_code() != 0) {
      fd_.reset();
      return StatusFromReply(ready, info_.peer_name);
    }
    conn_ = std::make_unique<VerbsConnection>(
        next_connection_id.fetch_add(1), info_, device_, cq, std::move(res),
        std::move(fd_));
    return absl::OkStatus();
  }

  const std::shared_ptr<Device> device_;
  ScopedFd fd_;
  const Hello hello_;
  const ConnectionInfo info_;
  std::unique_ptr<Connection> conn_;
};

class VerbsListener final : public Listener {
 public:
  static absl::StatusOr<std::unique_ptr<VerbsListener>> Create(
      std::shared_ptr<Device> device, const std::string& address) {
    std::string host, port;
    RFRPC_RETURN_IF_ERROR(SplitHostPort(address, &host, &port));
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    addrinfo* ai = nullptr;
    if (int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(),
                             port.c_str(), &hints, &ai);
        rc != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "verbs listen address \"", address, "\": ", gai_strerror(rc)));
    }
    std::unique_ptr<addrinfo, void (*)(addrinfo*)> ai_owner(ai, freeaddrinfo);
    ScopedFd fd(::socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd.valid()) {
      return absl::InternalError(absl::StrCat("socket: ", ErrnoDetail(errno)));
    }
    int one = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0 ||
        ::listen(fd.get(), SOMAXCONN) != 0) {
      return absl::UnavailableError(absl::StrCat(
          "verbs listen on \"", address, "\": ", ErrnoDetail(errno)));
    }
    RFRPC_RETURN_IF_ERROR(MakeNonBlocking(fd.get()));
    sockaddr_storage ss{};
    socklen_t len = sizeof(ss);
    ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&ss), &len);
    ScopedFd wake(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    if (!wake.valid()) {
      return absl::InternalError(absl::StrCat("eventfd: ", ErrnoDetail(errno)));
    }
    std::string bound = SockaddrText(ss);
    return std::unique_ptr<VerbsListener>(new VerbsListener(
        std::move(device), std::move(fd), std::move(wake), bound));
  }

  absl::StatusOr<std::unique_ptr<IncomingConnection>> Next(
      absl::Duration timeout) override {
    const absl::Time deadline = absl::Now() + timeout;
    for (;;) {
      if (shutdown_.load(std::memory_order_acquire)) {
        return absl::CancelledError("verbs listener shut down");
      }
      const absl::Time now = absl::Now();
      // Expire handshakes that took too long.
      for (size_t i = 0; i < pending_.size();) {
        if (pending_[i].deadline <= now) {
          LOG(WARNING) << "verbs listener " << address_ << ": handshake from "
                       << pending_[i].peer << " timed out; closed";
          SendRefusal(pending_[i].fd.get(),
                      absl::DeadlineExceededError("handshake timed out"));
          pending_.erase(pending_.begin() + i);
        } else {
          ++i;
        }
      }
      if (now >= deadline) {
        return absl::DeadlineExceededError("no connection request");
      }
      absl::Time wake_at = deadline;
      std::vector<pollfd> fds;
      fds.push_back({listen_fd_.get(), POLLIN, 0});
      fds.push_back({wake_fd_.get(), POLLIN, 0});
      for (const Pending& p : pending_) {
        fds.push_back({p.fd.get(), POLLIN | POLLRDHUP, 0});
        wake_at = std::min(wake_at, p.deadline);
      }
      const int ms = static_cast<int>(std::min<int64_t>(
          absl::ToInt64Milliseconds(
              absl::Ceil(wake_at - now, absl::Milliseconds(1))),
          1 << 30));
      const int r = ::poll(fds.data(), fds.size(), ms);
      if (r < 0 && errno != EINTR) {
        return absl::InternalError(absl::StrCat("poll: ", ErrnoDetail(errno)));
      }
      if (r <= 0) continue;
      if (fds[1].revents & POLLIN) {
        uint64_t v;
        while (::read(wake_fd_.get(), &v, sizeof(v)) == sizeof(v)) {
        }
      }
      // Pending sockets first (indices match fds[2...]).
      std::unique_ptr<IncomingConnection> ready;
      std::vector<size_t> done;
      for (size_t i = 0; i < pending_.size(); ++i) {
        if (fds[i + 2].revents == 0) continue;
        if (ready == nullptr &&
            Progress(&pending_[i], fds[i + 2].revents, &ready)) {
          done.push_back(i);
        }
      }
      for (auto it = done.rbegin(); it != done.rend(); ++it) {
        pending_.erase(pending_.begin() + *it);
      }
      if (fds[0].revents & POLLIN) AcceptAll();
      if (ready != nullptr) return ready;
    }
  }

  std::string address() const override { return address_; }

  void Shutdown() override {
    shutdown_.store(true, std::memory_order_release);
    const uint64_t one = 1;
    if (::write(wake_fd_.get(), &one, sizeof(one)) < 0) {
      LOG(WARNING) << "verbs listener: eventfd write: " << strerror(errno);
    }
  }

 private:
  struct Pending {
    ScopedFd fd;
    absl::Time deadline;
    std::string peer;
    uint32_t want = sizeof(FrameHeader);  // Bytes needed before parsing.
  };

  VerbsListener(std::shared_ptr<Device> device, ScopedFd fd, ScopedFd wake,
                std::string address)
      : device_(std::move(device)),
        listen_fd_(std::move(fd)),
        wake_fd_(std::move(wake)),
        address_(std::move(address)) {}

  void AcceptAll() {
    for (;;) {
      sockaddr_storage ss{};
      socklen_t len = sizeof(ss);
      ScopedFd fd(::accept4(listen_fd_.get(), reinterpret_cast<sockaddr*>(&ss),
                            &len, SOCK_NONBLOCK | SOCK_CLOEXEC));
      if (!fd.valid()) {
        if (DescriptorReserve::OutOfDescriptors(errno)) ShedOne(errno);
        return;  // EAGAIN or a transient error.
      }
      const std::string peer = SockaddrText(ss);
      if (pending_.size() >= kMaxHalfOpen) {
        LOG_EVERY_N(WARNING, 100)
            << "verbs listener " << address_ << ": " << kMaxHalfOpen
            << " handshakes in progress; refusing " << peer << " ("
            << google::COUNTER << " refused so)";
        SendRefusal(fd.get(),
                    absl::ResourceExhaustedError(
                        "too many handshakes in progress; retry later"),
                    /*retry_later=*/true);
        continue;
      }
      SetNoDelay(fd.get());
      // poll() reports the socket readable only once `want` bytes arrived.
      int lowat = sizeof(FrameHeader);
      ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVLOWAT, &lowat, sizeof(lowat));
      pending_.push_back(
          Pending{std::move(fd), absl::Now() + kHalfOpenTimeout, peer});
    }
  }

  // The process is out of descriptors (`err`): the peer waiting in the
  // backlog is told so and closed, with the reserve (DescriptorReserve).
  void ShedOne(int err) {
    const absl::Status why = absl::ResourceExhaustedError(absl::StrCat(
        "verbs listener ", address_, " is out of file descriptors (accept: ",
        ErrnoDetail(err), "); raise its RLIMIT_NOFILE (ulimit -n) or close "
        "connections"));
    LOG_EVERY_N(WARNING, 1000) << why.message() << " (" << google::COUNTER
                               << " peers refused so)";
    reserve_.Shed(listen_fd_.get(), [&](int sock) {
      SendRefusal(sock, why, /*retry_later=*/true);
    });
  }

  // Advances one half-open handshake without blocking. Returns true when the
  // socket is finished with (handed out in *ready, refused, or closed).
  bool Progress(Pending* p, short revents,
                std::unique_ptr<IncomingConnection>* ready) {
    FrameHeader h{};
    const ssize_t n = ::recv(p->fd.get(), &h, sizeof(h), MSG_PEEK);
    if (n == 0) {
      VLOG(1) << "verbs listener: " << p->peer << " closed before its hello";
      return true;
    }
    if (n < 0) return errno != EAGAIN && errno != EINTR;
    if (n == static_cast<ssize_t>(sizeof(h)) && h.magic == kFrameMagic &&
        h.version == kHandshakeVersion && h.length <= kMaxFrameBytes) {
      const uint32_t need = sizeof(h) + h.length;
      int avail = 0;
      ::ioctl(p->fd.get(), FIONREAD, &avail);
      if (avail < static_cast<int>(need)) {
        if (p->want != need) {
          p->want = need;
          int lowat = static_cast<int>(need);
          ::setsockopt(p->fd.get(), SOL_SOCKET, SO_RCVLOWAT, &lowat,
                       sizeof(lowat));
        }
        return false;
      }
    } else if (n < static_cast<ssize_t>(sizeof(h))) {
      // Header incomplete: wait for more, unless the peer is done sending.
      if ((revents & (POLLRDHUP | POLLHUP | POLLERR)) == 0) return false;
      LOG(WARNING) << "verbs listener " << address_ << ": " << p->peer
                   << " sent a truncated handshake header; closed";
      return true;
    }
    // A whole frame, or a header RecvFrame will reject: parse it (no wait).
    // Low-water mark back to 1 first: RecvFrame polls between its reads.
    int lowat = 1;
    ::setsockopt(p->fd.get(), SOL_SOCKET, SO_RCVLOWAT, &lowat, sizeof(lowat));
    Hello hello;
    absl::Status s = RecvFrame(p->fd.get(), &hello, absl::Milliseconds(100));
    if (s.ok()) s = ValidateHello(hello);
    if (!s.ok()) {
      LOG(WARNING) << "verbs listener " << address_ << ": bad handshake from "
                   << p->peer << ": " << s;
      SendRefusal(p->fd.get(), s);
      return true;
    }
    *ready = std::make_unique<VerbsIncoming>(device_, std::move(p->fd),
                                             std::move(hello), p->peer);
    return true;
  }

  const std::shared_ptr<Device> device_;
  ScopedFd listen_fd_;
  ScopedFd wake_fd_;
  const std::string address_;
  std::atomic<bool> shutdown_{false};
  std::vector<Pending> pending_;  // Next()'s thread only.
  DescriptorReserve reserve_;     // Next()'s thread only.
};

absl::StatusOr<ScopedFd> TcpConnect(const std::string& address,
                                    absl::Time deadline) {
  std::string host, port;
  RFRPC_RETURN_IF_ERROR(SplitHostPort(address, &host, &port));
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* ai = nullptr;
  if (int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &ai); rc != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "verbs address \"", address, "\": ", gai_strerror(rc)));
  }
  std::unique_ptr<addrinfo, void (*)(addrinfo*)> ai_owner(ai, freeaddrinfo);
  ScopedFd fd(::socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) {
    return absl::InternalError(absl::StrCat("socket: ", ErrnoDetail(errno)));
  }
  RFRPC_RETURN_IF_ERROR(MakeNonBlocking(fd.get()));
  if (::connect(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0) {
    if (errno != EINPROGRESS) {
      return absl::UnavailableError(absl::StrCat(
          "verbs connect to ", address, ": ", ErrnoDetail(errno)));
    }
    pollfd p{fd.get(), POLLOUT, 0};
    const int64_t ms = std::max<int64_t>(
        0, absl::ToInt64Milliseconds(deadline - absl::Now()));
    int r;
    do {
      r = ::poll(&p, 1, static_cast<int>(ms));
    } while (r < 0 && errno == EINTR);
    if (r == 0) {
      return absl::DeadlineExceededError(
          absl::StrCat("verbs connect to ", address, ": timed out"));
    }
    int err = 0;
    socklen_t len = sizeof(err);
    ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      return absl::UnavailableError(absl::StrCat(
          "verbs connect to ", address, ": ", ErrnoDetail(err)));
    }
  }
  SetNoDelay(fd.get());
  return fd;
}

class VerbsProvider final : public Provider {
 public:
  explicit VerbsProvider(std::shared_ptr<Device> device)
      : device_(std::move(device)) {}

  std::string name() const override { return kProviderName; }

  absl::StatusOr<std::unique_ptr<MemoryRegion>> AllocateMemory(
      size_t size) override {
    RFRPC_ASSIGN_OR_RETURN(auto region, VerbsMemoryRegion::Allocate(size));
    return std::unique_ptr<MemoryRegion>(std::move(region));
  }

  absl::StatusOr<std::unique_ptr<CompletionQueue>> CreateCompletionQueue(
      const CompletionQueueOptions& options) override {
    RFRPC_ASSIGN_OR_RETURN(auto cq,
                           VerbsCompletionQueue::Create(device_, options));
    return std::unique_ptr<CompletionQueue>(std::move(cq));
  }

  absl::StatusOr<std::unique_ptr<Listener>> Listen(
      const std::string& address) override {
    RFRPC_ASSIGN_OR_RETURN(auto listener,
                           VerbsListener::Create(device_, address));
    return std::unique_ptr<Listener>(std::move(listener));
  }

  absl::StatusOr<std::unique_ptr<Connection>> Connect(
      const std::string& address, const ConnectionSetup& setup) override {
    const absl::Time deadline = absl::Now() + setup.handshake_timeout;
    RFRPC_ASSIGN_OR_RETURN(VerbsCompletionQueue * cq,
                           CheckSetup(device_.get(), setup));
    RFRPC_ASSIGN_OR_RETURN(ScopedFd fd, TcpConnect(address, deadline));
    Hello hello;
    RFRPC_ASSIGN_OR_RETURN(QpResources res,
                           PrepareQp(*device_, cq, setup, &hello));
    hello.set_auth_token(setup.auth_token);  // Only the connector sends one.
    const std::string peer = PeerName(fd.get());
    RFRPC_RETURN_IF_ERROR(SendFrame(fd.get(), hello, deadline - absl::Now()));
    HelloReply reply;
    absl::Status s = RecvFrame(fd.get(), &reply, deadline - absl::Now());
    if (!s.ok()) {
      return absl::Status(s.code(), absl::StrCat("verbs handshake with ",
                                                 address, ": ", s.message()));
    }
    if (reply.status_code() != 0) {
      return StatusFromReply(reply, absl::StrCat("listener ", address));
    }
    s = ValidateHello(reply.hello());
    if (s.ok()) s = ConnectQp(*device_, res, reply.hello().qp());
    HelloReply ready;
    ready.set_status_code(static_cast<int>(s.code()));
    ready.set_error_message(std::string(s.message()));
    absl::Status sent = SendFrame(fd.get(), ready, deadline - absl::Now());
    RFRPC_RETURN_IF_ERROR(s);
    RFRPC_RETURN_IF_ERROR(sent);
    return std::unique_ptr<Connection>(std::make_unique<VerbsConnection>(
        next_connection_id.fetch_add(1), InfoFromHello(reply.hello(), peer),
        device_, cq, std::move(res), std::move(fd)));
  }

 private:
  const std::shared_ptr<Device> device_;
};

}  // namespace

// ---------------------------------------------------------------------------
// VerbsMemoryRegion

absl::StatusOr<std::unique_ptr<VerbsMemoryRegion>> VerbsMemoryRegion::Allocate(
    size_t size) {
  if (size == 0) {
    return absl::InvalidArgumentError("AllocateMemory: size 0");
  }
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t mapped = (size + page - 1) / page * page;
  void* p = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    return absl::ResourceExhaustedError(
        absl::StrCat("mmap(", mapped, "): ", ErrnoDetail(errno)));
  }
  return std::unique_ptr<VerbsMemoryRegion>(
      new VerbsMemoryRegion(static_cast<char*>(p), size, mapped,
                            next_region_serial.fetch_add(1)));
}

VerbsMemoryRegion::~VerbsMemoryRegion() { ::munmap(data(), mapped_); }

// ---------------------------------------------------------------------------
// VerbsCompletionQueue setup

absl::StatusOr<std::unique_ptr<VerbsCompletionQueue>>
VerbsCompletionQueue::Create(std::shared_ptr<Device> device,
                             const CompletionQueueOptions& options) {
  if (options.depth <= 0 || options.max_poll_wc <= 0 ||
      options.max_retry < 0) {
    return absl::InvalidArgumentError(
        "CompletionQueueOptions: depth and max_poll_wc must be > 0, "
        "max_retry >= 0");
  }
  std::unique_ptr<VerbsCompletionQueue> q(
      new VerbsCompletionQueue(std::move(device), options));
  ibv_context* ctx = q->device_->context->get();
  RFRPC_ASSIGN_OR_RETURN(q->channel_, VerbsCompChannel::Create(ctx));
  const int depth = std::min(options.depth, q->device_->attr.max_cqe);
  RFRPC_ASSIGN_OR_RETURN(q->cq_,
                         VerbsCq::Create(ctx, depth, q->channel_->get()));
  q->wake_fd_.reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!q->wake_fd_.valid()) {
    return absl::InternalError(absl::StrCat("eventfd: ", ErrnoDetail(errno)));
  }
  return q;
}

VerbsCompletionQueue::~VerbsCompletionQueue() {
  absl::MutexLock lock(&mu_);
  if (!conns_.empty()) {
    LOG(ERROR) << "verbs: completion queue destroyed while " << conns_.size()
               << " connection(s) still use it (REQUIRES: the queue "
                  "outlives its connections)";
  }
}

void VerbsCompletionQueue::Attach(uint32_t qpn, VerbsConnection* conn) {
  absl::MutexLock lock(&mu_);
  conns_[qpn] = conn;
}

void VerbsCompletionQueue::Detach(uint32_t qpn, const VerbsConnection* conn) {
  absl::MutexLock lock(&mu_);
  conns_.erase(qpn);
  // Software completions naming the departing connection would dangle.
  software_.erase(std::remove_if(software_.begin(), software_.end(),
                                 [conn](const Completion& c) {
                                   return c.connection == conn;
                                 }),
                  software_.end());
  software_count_.store(software_.size(), std::memory_order_release);
}

// ---------------------------------------------------------------------------
// VerbsConnection setup, liveness and failure

VerbsConnection::VerbsConnection(uint64_t id, ConnectionInfo peer,
                                 std::shared_ptr<Device> device,
                                 VerbsCompletionQueue* cq,
                                 QpResources resources, ScopedFd socket)
    : Connection(id, std::move(peer)),
      device_(std::move(device)),
      cq_(cq),
      max_inline_(resources.max_inline),
      pd_(std::move(resources.pd)),
      exposed_mrs_(std::move(resources.exposed)),
      qp_(std::move(resources.qp)),
      qpn_(qp_->get()->qp_num),
      socket_(std::move(socket)) {
  cq_->Attach(qpn_, this);
  absl::Status s = device_->monitor->Add(
      Connection::id(), socket_.get(), [this](absl::string_view why) {
        MarkFailed(absl::UnavailableError(absl::StrCat(
            "the peer ", why, " (bootstrap liveness socket)")));
      });
  if (!s.ok()) {
    MarkFailed(s);
    return;
  }
  watched_ = true;
}

VerbsConnection::~VerbsConnection() {
  cq_->Detach(qpn_, this);  // Waits for a poller that is using this connection.
  // Waits for a liveness callback that is running on this connection.
  if (watched_) device_->monitor->Remove(Connection::id());
  // Members go in reverse order: socket (the peer sees EOF), QP, MRs, PD.
}


void VerbsConnection::MarkFailed(const absl::Status& reason) {
  absl::Status now_failed;
  {
    absl::MutexLock lock(&mu_);
    if (!status_.ok()) return;
    status_ = absl::UnavailableError(absl::StrCat(
        "verbs connection ", id(), " to ", peer().peer_name, " failed: ",
        reason.code() == absl::StatusCode::kUnavailable
            ? std::string(reason.message())
            : reason.ToString()));
    failed_.store(true, std::memory_order_release);
    now_failed = status_;
  }
  transport::internal::CountConnectionFailure();
  // A peer that leaves or a local close is the normal end of a connection;
  // completion errors and the like are worth a warning.
  if (reason.code() == absl::StatusCode::kCancelled ||
      reason.code() == absl::StatusCode::kUnavailable) {
    VLOG(1) << now_failed;
  } else {
    LOG(WARNING) << now_failed;
  }
  // Flush outstanding work with errors and tell the peer.
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_ERR;
  if (int rc = ibv_modify_qp(qp_->get(), &a, IBV_QP_STATE); rc != 0) {
    LOG(ERROR) << "verbs connection " << id()
               << ": ibv_modify_qp(ERR): " << ErrnoDetail(rc);
  }
  ::shutdown(socket_.get(), SHUT_RDWR);
}

absl::Status VerbsConnection::status() const {
  absl::MutexLock lock(&mu_);
  return status_;
}

void VerbsConnection::Fail(absl::Status reason) {
  MarkFailed(reason.ok() ? absl::UnavailableError("failed by the caller")
                         : reason);
}

// ---------------------------------------------------------------------------

namespace {

absl::StatusOr<std::shared_ptr<Device>> OpenDevice(
    const ProviderOptions& options) {
  auto device = std::make_shared<Device>();
  RFRPC_ASSIGN_OR_RETURN(device->monitor, LivenessMonitor::Create("verbs"));
  RFRPC_ASSIGN_OR_RETURN(OpenedPort opened,
                         OpenPort(options.device, options.port,
                                  options.gid_index, options.address_hint));
  device->context = std::move(opened.context);
  device->port = opened.port;
  device->name = device->context->device_name();
  if (int rc = ibv_query_device(device->context->get(), &device->attr);
      rc != 0) {
    return absl::UnavailableError(absl::StrCat(
        "ibv_query_device(", device->name, "): ", ErrnoDetail(rc)));
  }
  LOG(INFO) << "verbs provider: device " << device->name << " port "
            << static_cast<int>(device->port.port) << " GID "
            << device->port.gid_text << " active MTU "
            << (128 << device->port.active_mtu);
  return device;
}

}  // namespace

// Providers opened with the same options in one process share one Device:
// one device context and one liveness monitor thread for all of them, so a
// process holding thousands of channels (a provider each) holds one of
// each, not thousands. A forked child opens its own.
absl::StatusOr<std::unique_ptr<Provider>> OpenVerbsProvider(
    const ProviderOptions& options) {
  static std::mutex mu;
  static auto* shared =
      new std::map<std::string, std::weak_ptr<Device>>;
  static pid_t shared_pid = 0;
  const std::string key =
      absl::StrCat(options.device, "|", options.port, "|", options.gid_index,
                   "|", options.address_hint);
  std::lock_guard<std::mutex> lock(mu);
  if (shared_pid != ::getpid()) {
    shared->clear();
    shared_pid = ::getpid();
  }
  std::shared_ptr<Device> device = (*shared)[key].lock();
  if (device == nullptr) {
    RFRPC_ASSIGN_OR_RETURN(device, OpenDevice(options));
    (*shared)[key] = device;
  }
  return std::unique_ptr<Provider>(new VerbsProvider(std::move(device)));
}

namespace {
[[maybe_unused]] const bool kRegistered = RegisterProvider("verbs", &OpenVerbsProvider);
}  // namespace

}  // namespace verbs
}  // namespace transport
}  // namespace rfrpc
