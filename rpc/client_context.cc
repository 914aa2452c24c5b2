// Copyright 2026 The rfrpc Authors.

#include "rpc/client_context.h"

#include <atomic>
#include <cstdint>

namespace rfrpc {

void ClientContext::TryCancel() {
  if (cancelled_.exchange(true, std::memory_order_seq_cst)) return;
  // A call in flight: its channel's connections look for cancelled calls
  // in their next round. (One that starts after this finds cancelled_ set
  // in ClientContextAccess::BindCancel.)
  std::atomic<uint64_t>* cancels = cancels_.load(std::memory_order_seq_cst);
  if (cancels != nullptr) cancels->fetch_add(1, std::memory_order_acq_rel);
}

}  // namespace rfrpc
