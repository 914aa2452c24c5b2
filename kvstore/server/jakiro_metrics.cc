// Copyright 2026 The rfrpc Authors.

#include "kvstore/server/jakiro_metrics.h"

#include <memory>
#include <string>

#include "prometheus/labels.h"
#include "base/status_macros.h"

namespace rfrpc {
namespace kvstore {
namespace {

struct Families {
  std::unique_ptr<metrics::GaugeFold> items, live_bytes, arena_bytes,
      index_bytes;
  std::unique_ptr<metrics::CounterFold> hits, misses, puts, deletes, evictions,
      compactions, compacted_bytes;
};

}  // namespace

absl::Status ExportJakiroMetrics(const JakiroService* service,
                                 metrics::RpcMetrics* metrics) {
  prometheus::Registry* r = metrics->registry().get();
  auto f = std::make_shared<Families>();
  auto gauge = [r](std::unique_ptr<metrics::GaugeFold>* out, const char* name,
                   const char* help) -> absl::Status {
    RFRPC_ASSIGN_OR_RETURN(auto* family, metrics::AddGaugeFamily(r, name, help));
    *out = std::make_unique<metrics::GaugeFold>(family);
    return absl::OkStatus();
  };
  auto counter = [r](std::unique_ptr<metrics::CounterFold>* out,
                     const char* name, const char* help) -> absl::Status {
    RFRPC_ASSIGN_OR_RETURN(auto* family, metrics::AddCounterFamily(r, name, help));
    *out = std::make_unique<metrics::CounterFold>(family);
    return absl::OkStatus();
  };
  RFRPC_RETURN_IF_ERROR(gauge(&f->items, "rfrpc_jakiro_items",
                              "Live items in a Jakiro partition."));
  RFRPC_RETURN_IF_ERROR(gauge(&f->live_bytes, "rfrpc_jakiro_live_bytes",
                              "Arena bytes of live items (headers, keys, "
                              "values, padding)."));
  RFRPC_RETURN_IF_ERROR(gauge(&f->arena_bytes, "rfrpc_jakiro_arena_bytes",
                              "Item memory of a partition (its budget)."));
  RFRPC_RETURN_IF_ERROR(gauge(&f->index_bytes, "rfrpc_jakiro_index_bytes",
                              "Bucket index memory of a partition."));
  RFRPC_RETURN_IF_ERROR(counter(&f->hits, "rfrpc_jakiro_hits_total",
                                "Gets that found their key."));
  RFRPC_RETURN_IF_ERROR(counter(&f->misses, "rfrpc_jakiro_misses_total",
                                "Gets that did not find their key."));
  RFRPC_RETURN_IF_ERROR(counter(&f->puts, "rfrpc_jakiro_puts_total",
                                "Successful Puts (inserts and overwrites)."));
  RFRPC_RETURN_IF_ERROR(counter(&f->deletes, "rfrpc_jakiro_deletes_total",
                                "Deletes that removed an item."));
  RFRPC_RETURN_IF_ERROR(counter(
      &f->evictions, "rfrpc_jakiro_evictions_total",
      "Items evicted, by reason: bucket_full (the key's bucket had no free "
      "slot) or memory (global LRU, to free a segment)."));
  RFRPC_RETURN_IF_ERROR(counter(&f->compactions, "rfrpc_jakiro_compactions_total",
                                "Arena segments compacted."));
  RFRPC_RETURN_IF_ERROR(counter(&f->compacted_bytes,
                                "rfrpc_jakiro_compacted_bytes_total",
                                "Live bytes copied by compaction."));
  metrics->AddFold([service, f] {
    for (int w = 0; w < service->workers(); ++w) {
      const PartitionStats s = service->PublishedStats(w);
      const std::string p = std::to_string(w);
      const prometheus::Labels l{{"partition", p}};
      f->items->Set(l, static_cast<double>(s.items));
      f->live_bytes->Set(l, static_cast<double>(s.live_bytes));
      f->arena_bytes->Set(l, static_cast<double>(s.arena_bytes));
      f->index_bytes->Set(l, static_cast<double>(s.index_bytes));
      f->hits->Set(l, static_cast<double>(s.hits));
      f->misses->Set(l, static_cast<double>(s.misses));
      f->puts->Set(l, static_cast<double>(s.puts));
      f->deletes->Set(l, static_cast<double>(s.deletes));
      f->evictions->Set({{"partition", p}, {"reason", "bucket_full"}},
                        static_cast<double>(s.evictions_bucket_full));
      f->evictions->Set({{"partition", p}, {"reason", "memory"}},
                        static_cast<double>(s.evictions_memory));
      f->compactions->Set(l, static_cast<double>(s.compactions));
      f->compacted_bytes->Set(l, static_cast<double>(s.compacted_bytes));
    }
  });
  return absl::OkStatus();
}

}  // namespace kvstore
}  // namespace rfrpc
