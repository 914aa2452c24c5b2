// Copyright 2026 The rfrpc Authors.
//
// The rfrpc code generator: for each foo.proto, writes foo.rfrpc.h and
// foo.rfrpc.cc with, per service Foo, a class `Foo` holding the method names
// and ids, a server base class `Foo::Service` and a client `Foo::Stub`. See
// codegen/README.md for the generated API and the naming rules, and
// docs/define_a_service.md for a walk-through.
//
// protoc-gen-rfrpc (plugin_main.cc) runs this generator under protoc's plugin
// protocol; tests may also register it with a CommandLineInterface.
//
// The generator takes no parameters: any `--rfrpc_opt` / `--rfrpc_out=x:`
// parameter is rejected through `*error`, as are streaming rpcs (rfrpc is
// unary), rpcs whose generated C++ names collide, and two rpcs of a file
// whose method ids collide.
//
// Thread safety: Generate() is const and keeps no state between calls.

#ifndef RFRPC_CODEGEN_GENERATOR_H_
#define RFRPC_CODEGEN_GENERATOR_H_

#include <cstdint>
#include <string>

#include "google/protobuf/compiler/code_generator.h"
#include "google/protobuf/descriptor.h"

namespace rfrpc {
namespace codegen {

class RfrpcGenerator final : public google::protobuf::compiler::CodeGenerator {
 public:
  RfrpcGenerator() = default;
  ~RfrpcGenerator() override = default;

  bool Generate(const google::protobuf::FileDescriptor* file,
                const std::string& parameter,
                google::protobuf::compiler::GeneratorContext* context,
                std::string* error) const override;

  uint64_t GetSupportedFeatures() const override {
    return FEATURE_PROTO3_OPTIONAL;
  }
};

}  // namespace codegen
}  // namespace rfrpc

#endif  // RFRPC_CODEGEN_GENERATOR_H_
