// Copyright 2026 The rfrpc Authors.
//
// CpuRelax(): the body of a spin-wait loop. On x86 the PAUSE instruction
// (it tells the core this is a spin, saving power and the pipeline flush on
// exit, and lets a hyper-thread sibling run); on aarch64 YIELD; elsewhere a
// compiler barrier, so the loop re-reads what it waits for.
//
// Thread-safe (it touches nothing).

#ifndef RFRPC_BASE_CPU_RELAX_H_
#define RFRPC_BASE_CPU_RELAX_H_

namespace rfrpc {

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#else
  asm volatile("" ::: "memory");
#endif
}

}  // namespace rfrpc

#endif  // RFRPC_BASE_CPU_RELAX_H_
