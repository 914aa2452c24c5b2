// Copyright 2026 The rfrpc Authors.
//
// protoc-gen-rfrpc: protoc runs this binary for --rfrpc_out. All the work is
// in the generator library (codegen/generator.h).
//
//   protoc --plugin=protoc-gen-rfrpc=bazel-bin/codegen/protoc-gen-rfrpc
//       --cpp_out=OUT --rfrpc_out=OUT -I. proto/echo.proto

#include "codegen/generator.h"
#include "google/protobuf/compiler/plugin.h"

int main(int argc, char* argv[]) {
  rfrpc::codegen::RfrpcGenerator generator;
  return google::protobuf::compiler::PluginMain(argc, argv, &generator);
}
