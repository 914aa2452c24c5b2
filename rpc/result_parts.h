// Copyright 2026 The rfrpc Authors.
//
// ResultPartWriter: lays a request batch's results out as result parts in a
// response buffer (rpc/batch_format.h, docs/wire_formats.md section 6), one
// entry at a time, in request order (internal to rpc/).
//
// The server writes each result where NextPayload() says, then Commit()s it.
// A part closes when it holds `max_entries` results or the next result would
// take its payload past `part_bytes_limit` (unless the part is empty); the
// result that does not fit is moved into the next part, whose head word is
// cleared first, and Commit returns the closed part for the caller to
// publish (wire::PublishResponse at its offset). Room is kept so that every
// remaining entry can still get at least an empty result in a part of its
// own: a result larger than NextPayload's capacity cannot be committed (the
// caller commits an error message in its place).
//
// Used the same way whether the results are written in place by sync
// handlers, or copied in as async handlers finish (in request order: a
// result is committed only once every earlier one has been).
//
// Pure logic over the buffer it is given (tested in result_parts_test.cc);
// thread-compatible.

#ifndef RFRPC_RPC_RESULT_PARTS_H_
#define RFRPC_RPC_RESULT_PARTS_H_

#include <cstddef>
#include <cstdint>

#include "rpc/batch_format.h"
#include "rpc/wire_format.h"

namespace rfrpc {
namespace internal {

class ResultPartWriter {
 public:
  // A part ready to publish: its offset in the buffer, payload bytes and
  // result entries.
  struct Part {
    size_t offset = 0;
    uint32_t size = 0;
    uint16_t entries = 0;
  };

  // Per part: header and tail.
  static constexpr size_t kPartOverhead = 16 + 8;

  ResultPartWriter() = default;
  // `buf` (not owned) is the response buffer of `buf_bytes`; `entries`
  // results are to come. REQUIRES: Fits(entries, buf_bytes).
  ResultPartWriter(char* buf, size_t buf_bytes, uint32_t entries,
                   uint32_t max_entries, size_t part_bytes_limit);

  // Whether a buffer of `buf_bytes` has room for `entries` results, each
  // empty and in a part of its own (the worst case).
  static bool Fits(uint32_t entries, size_t buf_bytes);

  // Where the next result's payload goes, and (in `*cap`, a multiple of 8)
  // how many bytes it may take. REQUIRES: !done().
  char* NextPayload(size_t* cap) const {
    const uint32_t remaining_after = entries_ - committed_ - 1;
    // Where this entry's result goes if it stays in the current part, and
    // what must stay free for the rest (each in a part of its own, plus a
    // possible move of this one into a new part).
    char* out = buf_ + part_ + wire::kHeaderBytes + part_size_;
    const size_t used = part_ + wire::kHeaderBytes + part_size_ +
                        wire::kEntryHeaderBytes + wire::kTailBytes;
    const size_t reserve =
        size_t{remaining_after} * (kPartOverhead + wire::kEntryHeaderBytes) +
        kPartOverhead + 8;
    const size_t c = buf_bytes_ > used + reserve ? buf_bytes_ - used - reserve : 0;
    *cap = c & ~size_t{7};
    return out + wire::kEntryHeaderBytes;
  }

  // Commits the next result: `len` bytes at NextPayload() with status
  // `status_code` (non-zero: the bytes are the error message). REQUIRES:
  // len <= NextPayload's cap. If the result closed the current part, returns
  // true with that part in `*closed` (publish it before the next Commit:
  // the writer never writes into a closed part).
  bool Commit(uint32_t len, uint16_t status_code, Part* closed) {
    const size_t eb = wire::EntryBytes(len);
    if (part_entries_ > 0 && (part_entries_ >= max_entries_ ||
                              part_size_ + eb > part_bytes_limit_)) {
      return CommitClosing(len, status_code, closed);
    }
    wire::PutResultEntry(buf_ + part_ + wire::kHeaderBytes + part_size_, len,
                         status_code);
    part_size_ += eb;
    ++part_entries_;
    ++committed_;
    return false;
  }

  // Room in the current part for a run of up to `*count` results written
  // back to back, as result entries (header and padded payload), from the
  // returned position. Lowers `*count` to the entries the part may still
  // take (0: the next result closes it; commit it alone) and sets `*room`
  // to the bytes the run may take: what keeps the part within its byte
  // limit and leaves the worst case free for every result after the
  // run's first, as NextPayload does for one result. (A run may stop after
  // any of its results, and each result still to come needs its worst case
  // then; a fuzzer found the buffer overrun when the run's own later
  // results were left out of the reserve.)
  // REQUIRES: 0 < *count <= results to come.
  char* RunSpace(uint32_t* count, size_t* room) const {
    const uint32_t left =
        part_entries_ < max_entries_ ? max_entries_ - part_entries_ : 0;
    if (*count > left) *count = left;
    const size_t used =
        part_ + wire::kHeaderBytes + part_size_ + wire::kTailBytes;
    const size_t reserve = size_t{entries_ - committed_ - 1} *
                               (kPartOverhead + wire::kEntryHeaderBytes) +
                           kPartOverhead + 8;
    size_t r = buf_bytes_ > used + reserve ? buf_bytes_ - used - reserve : 0;
    const size_t limit_left =
        part_size_ < part_bytes_limit_ ? part_bytes_limit_ - part_size_ : 0;
    if (r > limit_left) r = limit_left;
    *room = r;
    return buf_ + part_ + wire::kHeaderBytes + part_size_;
  }

  // Commits `count` results that a run wrote at RunSpace's position,
  // `bytes` in all. REQUIRES: count and bytes within RunSpace's.
  void CommitRun(uint32_t count, size_t bytes) {
    part_size_ += bytes;
    part_entries_ += count;
    committed_ += count;
  }

  // Closes the current part early, if it holds results (the next result
  // must wait: a client should not wait for those before it). Returns true
  // with the part in `*closed` (publish it before the next Commit); the
  // next part's head word is cleared first.
  bool Close(Part* closed);

  // After the last Commit: the last part, if it holds results.
  bool Finish(Part* last) const;

  bool done() const { return committed_ == entries_; }
  uint32_t committed() const { return committed_; }
  // Offset of the part being filled.
  size_t part_offset() const { return part_; }

 private:
  // Commit's slow path: the result closes the current part and moves into
  // a new one.
  bool CommitClosing(uint32_t len, uint16_t status_code, Part* closed);

  char* buf_ = nullptr;
  size_t buf_bytes_ = 0;
  uint32_t entries_ = 0;
  uint32_t max_entries_ = 1;
  size_t part_bytes_limit_ = 0;
  size_t part_ = 0;         // Offset of the current part.
  size_t part_size_ = 0;    // Its payload bytes so far.
  uint32_t part_entries_ = 0;
  uint32_t committed_ = 0;
};

}  // namespace internal
}  // namespace rfrpc

#endif  // RFRPC_RPC_RESULT_PARTS_H_
