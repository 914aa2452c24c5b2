// Copyright 2026 The rfrpc Authors.

#include "rpc/tuner/calibration_service.h"

#include <memory>
#include <string>

#include "absl/time/clock.h"
#include "rpc/wire_format.h"

namespace rfrpc {
namespace tuner {
namespace {

size_t VarintBytes(size_t v) {
  size_t n = 1;
  while (v >= 128) {
    v >>= 7;
    ++n;
  }
  return n;
}

}  // namespace

size_t CalibrationPayloadFor(size_t serialized_bytes) {
  if (serialized_bytes < 2) return 0;
  // Tag (1 B) + length varint + payload.
  size_t n = serialized_bytes - 2;
  while (n > 0 && 1 + VarintBytes(n) + n > serialized_bytes) --n;
  return n;
}

CalibrationService::CalibrationService() : Service("rfrpc.tuner.Calibration") {
  AddMethod("Fetch",
            std::make_unique<internal::UnaryHandler<
                CalibrationService, CalibrationRequest, CalibrationResponse>>(
                this, &CalibrationService::Fetch));
}

absl::Status CalibrationService::Fetch(ServerContext* ctx,
                                       const CalibrationRequest* req,
                                       CalibrationResponse* resp) {
  if (req->delay_ns() > 0) {
    const int64_t until = absl::GetCurrentTimeNanos() + req->delay_ns();
    while (absl::GetCurrentTimeNanos() < until) {
    }
  }
  // The result as fetched: header, payload rounded up to 8 bytes, tail
  // (wire::FramedBytes). The largest payload whose framing fits.
  constexpr size_t kFraming = wire::kHeaderBytes + wire::kTailBytes;
  const size_t bytes = req->result_bytes();
  const size_t want = bytes > kFraming ? (bytes - kFraming) & ~size_t{7} : 0;
  const size_t n = CalibrationPayloadFor(want);
  if (n > 0) resp->set_payload(std::string(n, static_cast<char>(req->id())));
  return absl::OkStatus();
}

absl::Status CallFetch(Channel* channel, ClientContext* ctx,
                       const CalibrationRequest& req,
                       CalibrationResponse* resp) {
  static const uint32_t id = MethodId(kCalibrationFetchMethod);
  return channel->Call(id, req, resp, ctx);
}

}  // namespace tuner
}  // namespace rfrpc
