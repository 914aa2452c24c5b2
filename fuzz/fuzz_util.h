// Copyright 2026 The rfrpc Authors.
//
// Helpers shared by the libFuzzer harnesses.

#ifndef RFRPC_FUZZ_FUZZ_UTIL_H_
#define RFRPC_FUZZ_FUZZ_UTIL_H_

#include <cstdio>
#include <string>

#include "google/protobuf/stubs/logging.h"

namespace rfrpc {
namespace fuzz {

// protobuf logs an ERROR line for every string field with invalid UTF-8;
// fuzz inputs hit that on most executions, and writing it to stderr each
// time cost more than the parse (the parse still fails, and is checked).
// Only FATAL messages, which precede an abort, are still printed. Call from
// LLVMFuzzerInitialize.
inline void QuietProtobufLogs() {
  google::protobuf::SetLogHandler([](google::protobuf::LogLevel level,
                                     const char* file, int line,
                                     const std::string& message) {
    if (level >= google::protobuf::LOGLEVEL_FATAL) {
      fprintf(stderr, "[libprotobuf FATAL %s:%d] %s\n", file, line,
              message.c_str());
    }
  });
}

}  // namespace fuzz
}  // namespace rfrpc

#endif  // RFRPC_FUZZ_FUZZ_UTIL_H_
