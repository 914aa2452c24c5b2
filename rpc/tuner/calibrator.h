// Copyright 2026 The rfrpc Authors.
//
// The R/F calibrator: measures a Profile (profile.h) for one provider on one
// host, against a live server running CalibrationService.
//
//   (a) ops/s vs READ size, 8 B .. 8 KiB. In-process (no address): raw
//       transport READs of that size, a window of 8 outstanding. Against a
//       remote address: rf calls whose result has that size. L is the
//       largest size up to which ops/s stays within flat_tolerance of the
//       small-size rate; H the smallest size from which bytes/s stays within
//       bandwidth_tolerance of the peak (ops/s falls ~linearly with size).
//   (c) calls/s of mode rf vs mode server_reply over server processing time
//       P (0 .. 12 us), results of kMinFetchSize bytes. P* is the smallest P
//       from which rf stays within payoff_threshold of server-reply (paper:
//       10%); N = ceil(P* / one READ's round trip), in [1, max_retries_cap].
//   (b) I(R, F): calls/s in mode hybrid (the mode in which R acts: a call
//       needing more than R fetches counts toward switching to server-reply)
//       with retries R in [1, N] and fetch size F, results of F bytes, at
//       each of table_server_times_ns. F runs over {L, powers of two in
//       (L, H), H} (full mode adds 1.5 x powers of two); the profile
//       interpolates between them.
//
// Steps run in the order a, c, b (b needs L, H and N). One client thread
// makes synchronous calls, so figures are per-client (latency-bound) rates.
//
// Thread safety: Calibrate is reentrant; the progress callback runs on the
// calling thread.

#ifndef RFRPC_RPC_TUNER_CALIBRATOR_H_
#define RFRPC_RPC_TUNER_CALIBRATOR_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "rpc/tuner/profile.h"
#include "transport/transport.h"

namespace rfrpc {
namespace tuner {

struct CalibratorOptions {
  // Provider to calibrate: "shm", "verbs" or "auto" (the profile records
  // the one opened). Default: "shm".
  std::string provider = "shm";
  transport::ProviderOptions provider_options;
  // A server running CalibrationService; "" starts one in this process.
  // Default: "".
  std::string address;
  // Listen address of the in-process server ("" lets shm pick one; verbs
  // needs "ip:0"). Default: "".
  std::string listen_address;

  // Quick settings for tests and smoke runs (finishes in well under 30 s on
  // 2 cores): 30 ms points, fewer sizes and processing times, N <= 6.
  // Fields below left at 0 / empty take the full or short default.
  // Default: false.
  bool short_mode = false;
  // Measured time per point. Default: 200 ms (short: 30 ms).
  absl::Duration point_time = absl::ZeroDuration();
  // Unmeasured warm-up per point. Default: 20 ms (short: 5 ms).
  absl::Duration warmup = absl::ZeroDuration();
  // (a) READ sizes. Default: powers of two and 1.5 x powers of two from 8 to
  // 8192 (short: powers of two).
  std::vector<uint32_t> read_sizes;
  // (c) processing times, ns. Default: 0 .. 12 us in 1 us steps (short: 0,
  // 2, 4, 8, 12 us).
  std::vector<uint32_t> mode_server_times_ns;
  // (b) processing times of the I(R, F) tables, ns. Default: 0, 2, 5 us
  // (short: 0, 2 us).
  std::vector<uint32_t> table_server_times_ns;
  // Upper bound on N. Default: 16 (short: 6).
  int max_retries_cap = 0;

  // Default: 0.10.
  double flat_tolerance = 0.10;
  // Default: 0.15.
  double bandwidth_tolerance = 0.15;
  // rf "stops paying off" within this of server-reply (paper: 10%).
  // Default: 0.10.
  double payoff_threshold = 0.10;
  // Candidate F grid step (profile.h). Default: 64.
  uint32_t fetch_step = 64;
  // ChannelOptions::fetch.adaptive_delay of the measuring channels; set it
  // as the application's channels will. Default: true.
  bool adaptive_fetch_delay = true;

  // Called with a one-line status before each point and after each step.
  // May be null. Default: none.
  std::function<void(const std::string& line)> progress;
};

// Runs (a), (c), (b) and returns the validated profile. UNAVAILABLE if the
// provider or server cannot be reached; a failed call's status otherwise.
absl::StatusOr<Profile> Calibrate(const CalibratorOptions& options);

// The derivations, exposed for tests. `curve` ascending in size.
struct LowHigh {
  uint32_t low = 0;
  uint32_t high = 0;
};
// L and H per the header comment, on the curve made non-increasing (pool
// adjacent violators) first so noise does not end the flat part early.
// Clamped to L >= kMinFetchSize, rounded up to multiples of 8, L <= H.
LowHigh DeriveLowHigh(const std::vector<SizePoint>& curve,
                      double flat_tolerance, double bandwidth_tolerance);

struct Payoff {
  uint32_t server_time_ns = 0;  // P*.
  int max_retries = 1;          // N.
};
// `curve` ascending in server_time_ns.
Payoff DerivePayoff(const std::vector<ModePoint>& curve, double threshold,
                    double read_rtt_ns, int max_retries_cap);

// The F sizes (b) measures for [low, high].
std::vector<uint32_t> MeasuredFetchSizes(uint32_t low, uint32_t high,
                                         bool short_mode);

// A one-screen summary of a profile: curves, L, H, N, the I(R, F) table.
std::string FormatProfile(const Profile& profile);

}  // namespace tuner
}  // namespace rfrpc

#endif  // RFRPC_RPC_TUNER_CALIBRATOR_H_
