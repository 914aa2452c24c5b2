// Copyright 2026 The rfrpc Authors.

#include "rpc/result_parts.h"

#include <cstring>

#include "transport/transport.h"

namespace rfrpc {
namespace internal {

static_assert(ResultPartWriter::kPartOverhead ==
                  wire::kHeaderBytes + wire::kTailBytes,
              "a part is a response frame");

ResultPartWriter::ResultPartWriter(char* buf, size_t buf_bytes,
                                   uint32_t entries, uint32_t max_entries,
                                   size_t part_bytes_limit)
    : buf_(buf),
      buf_bytes_(buf_bytes),
      entries_(entries),
      max_entries_(max_entries == 0 ? 1 : max_entries),
      part_bytes_limit_(part_bytes_limit) {}

bool ResultPartWriter::Fits(uint32_t entries, size_t buf_bytes) {
  return size_t{entries} * (kPartOverhead + wire::kEntryHeaderBytes) <=
         buf_bytes;
}

bool ResultPartWriter::CommitClosing(uint32_t len, uint16_t status_code,
                                     Part* closed) {
  char* out = buf_ + part_ + wire::kHeaderBytes + part_size_;
  // Close the current part and move this result into a new one: the move is
  // kPartOverhead bytes forward, which NextPayload's reserve kept free. The
  // result lies where the next part's header goes, so it moves first and
  // that head word is cleared before the caller publishes the closed part: a
  // client READs the next part's head as soon as this part is visible, and
  // raw result bytes there could pass for a header with the expected seq.
  const size_t next_part = part_ + wire::FramedBytes(part_size_);
  char* moved = buf_ + next_part + wire::kHeaderBytes;
  std::memmove(moved + wire::kEntryHeaderBytes, out + wire::kEntryHeaderBytes,
               len);
  transport::StoreRelease64(buf_ + next_part, 0);
  closed->offset = part_;
  closed->size = static_cast<uint32_t>(part_size_);
  closed->entries = static_cast<uint16_t>(part_entries_);
  part_ = next_part;
  wire::PutResultEntry(moved, len, status_code);
  part_size_ = wire::EntryBytes(len);
  part_entries_ = 1;
  ++committed_;
  return true;
}

bool ResultPartWriter::Close(Part* closed) {
  if (part_entries_ == 0) return false;
  const size_t next_part = part_ + wire::FramedBytes(part_size_);
  transport::StoreRelease64(buf_ + next_part, 0);
  closed->offset = part_;
  closed->size = static_cast<uint32_t>(part_size_);
  closed->entries = static_cast<uint16_t>(part_entries_);
  part_ = next_part;
  part_size_ = 0;
  part_entries_ = 0;
  return true;
}

bool ResultPartWriter::Finish(Part* last) const {
  if (part_entries_ == 0) return false;
  last->offset = part_;
  last->size = static_cast<uint32_t>(part_size_);
  last->entries = static_cast<uint16_t>(part_entries_);
  return true;
}

}  // namespace internal
}  // namespace rfrpc
