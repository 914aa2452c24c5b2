// Copyright 2026 The rfrpc Authors.

#include "rpc/tuner/test_profiles.h"

namespace rfrpc {
namespace tuner {

TunerProfile MakeSyntheticProto(const SyntheticSpec& spec) {
  TunerProfile p;
  p.set_format_version(kProfileFormatVersion);
  p.set_provider(spec.provider);
  p.set_host("synthetic");
  p.set_created("2026-01-01T00:00:00Z");
  p.set_notes("synthetic profile for tests");
  p.set_low_size(spec.low);
  p.set_high_size(spec.high);
  p.set_max_retries(static_cast<uint32_t>(spec.max_retries));
  p.set_fetch_step(spec.step);
  for (uint32_t size = 8; size <= 8192; size *= 2) {
    SizePoint* pt = p.add_read_curve();
    pt->set_size(size);
    pt->set_ops_per_sec(size <= spec.low ? 1e7 : 1e7 * spec.low / size);
  }
  p.set_read_curve_source("synthetic");
  for (uint32_t t : spec.server_times_ns) {
    ThroughputTable* table = p.add_throughput();
    table->set_server_time_ns(t);
    for (int r = 1; r <= spec.max_retries; ++r) {
      for (uint32_t f : CandidateFetchSizes(spec.low, spec.high, spec.step)) {
        ThroughputPoint* pt = table->add_points();
        pt->set_retries(static_cast<uint32_t>(r));
        pt->set_fetch_size(f);
        pt->set_ops_per_sec(spec.ops(r, f, t));
        pt->set_reads_per_call(1.0);
      }
    }
  }
  return p;
}

}  // namespace tuner
}  // namespace rfrpc
