// Copyright 2026 The rfrpc Authors.
//
// CalibrationService: the service the R/F calibrator calls. Fetch returns a
// result of CalibrationRequest::result_bytes bytes as the client fetches it
// (16-byte response header and 8-byte tail included: what F must cover;
// exact for multiples of 8 from 24 up, at most that otherwise) after
// spinning delay_ns, which stands for the server processing time P.
//
// Run it in-process (Calibrate does when no address is given) or in a server
// of its own (`rfrpc_tune serve`) to calibrate across hosts.
//
//   CalibrationService svc;
//   server.RegisterService(&svc);
//   ...
//   CalibrationRequest req;
//   req.set_result_bytes(512);
//   CalibrationResponse resp;
//   absl::Status s = CallFetch(channel, nullptr, req, &resp);
//
// Thread safety: Fetch is thread-safe (stateless).

#ifndef RFRPC_RPC_TUNER_CALIBRATION_SERVICE_H_
#define RFRPC_RPC_TUNER_CALIBRATION_SERVICE_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "rpc/channel.h"
#include "rpc/service.h"
#include "rpc/tuner/calibration.pb.h"

namespace rfrpc {
namespace tuner {

inline constexpr char kCalibrationFetchMethod[] = "/rfrpc.tuner.Calibration/Fetch";

// The payload length whose serialized CalibrationResponse is as large as
// possible but at most `serialized_bytes` (exact except where the length
// varint grows, e.g. 130 B gives 129 B).
size_t CalibrationPayloadFor(size_t serialized_bytes);

class CalibrationService final : public Service {
 public:
  CalibrationService();
  absl::Status Fetch(ServerContext* ctx, const CalibrationRequest* req,
                     CalibrationResponse* resp);
};

// Calls Fetch on `channel` (not null; not kept). `ctx` may be null.
absl::Status CallFetch(Channel* channel, ClientContext* ctx,
                       const CalibrationRequest& req,
                       CalibrationResponse* resp);

}  // namespace tuner
}  // namespace rfrpc

#endif  // RFRPC_RPC_TUNER_CALIBRATION_SERVICE_H_
