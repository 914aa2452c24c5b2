// Copyright 2026 The rfrpc Authors.

#include "rpc/run_delay.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"

namespace rfrpc {

RunDelay::~RunDelay() {
  if (fd_ >= 0) ::close(fd_);
}

bool RunDelay::Open() {
  if (fd_ >= 0) ::close(fd_);
  // The file names the opening thread's task for as long as it is open.
  fd_ = ::open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
  int64_t ns;
  if (fd_ >= 0 && !Read(&ns)) {
    ::close(fd_);
    fd_ = -1;
  }
  return fd_ >= 0;
}

bool RunDelay::Read(int64_t* run_delay_ns) const {
  if (fd_ < 0) return false;
  char buf[96];
  const ssize_t n = ::pread(fd_, buf, sizeof(buf), 0);
  if (n <= 0) return false;
  return Parse(absl::string_view(buf, static_cast<size_t>(n)), run_delay_ns);
}

bool RunDelay::Parse(absl::string_view line, int64_t* run_delay_ns) {
  const std::vector<absl::string_view> fields =
      absl::StrSplit(line, absl::ByAnyChar(" \n"), absl::SkipEmpty());
  if (fields.size() != 3) return false;
  int64_t values[3];
  for (int i = 0; i < 3; ++i) {
    if (!absl::SimpleAtoi(fields[i], &values[i]) || values[i] < 0) return false;
  }
  *run_delay_ns = values[1];
  return true;
}

int64_t RunDelay::WaitedAtLeast(int64_t grew_ns, int64_t window_ns,
                                int64_t held_ns) {
  const int64_t before = std::max<int64_t>(0, window_ns - held_ns);
  return std::clamp<int64_t>(grew_ns - before, 0, std::max<int64_t>(held_ns, 0));
}

}  // namespace rfrpc
