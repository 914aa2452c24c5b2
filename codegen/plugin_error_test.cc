// Copyright 2026 The rfrpc Authors.
//
// Runs protoc with protoc-gen-rfrpc on inputs it must reject and checks the
// message protoc prints (the plugin reports through CodeGenerator's *error).

#include <string>

#include "codegen/protoc_runner.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rfrpc {
namespace codegen {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class PluginErrorTest : public testing::Test {
 protected:
  void SetUp() override {
    out_dir_ = MakeTempDir();
    ASSERT_FALSE(out_dir_.empty());
  }
  std::string out_dir_;
};

TEST_F(PluginErrorTest, ClientStreamingIsRejected) {
  ProtocResult r = RunRfrpcPlugin(
      {"codegen/testdata/errors/client_streaming.proto"}, "", out_dir_);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.stderr_text,
              HasSubstr("codegen/testdata/errors/client_streaming.proto: "
                        "service pkg.Foo, method Bar: streaming rpcs are not "
                        "supported by rfrpc (remote-fetching RPC is unary)"));
}

TEST_F(PluginErrorTest, ServerStreamingIsRejected) {
  ProtocResult r = RunRfrpcPlugin(
      {"codegen/testdata/errors/server_streaming.proto"}, "", out_dir_);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.stderr_text,
              HasSubstr("codegen/testdata/errors/server_streaming.proto: "
                        "service pkg.Foo, method Bar: streaming rpcs are not "
                        "supported by rfrpc (remote-fetching RPC is unary)"));
}

TEST_F(PluginErrorTest, CollidingGeneratedNamesAreRejected) {
  ProtocResult r = RunRfrpcPlugin(
      {"codegen/testdata/errors/name_collision.proto"}, "", out_dir_);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.stderr_text,
              HasSubstr("codegen/testdata/errors/name_collision.proto: "
                        "service pkg.Foo, method GetAsync: generated C++ name "
                        "GetAsync collides with the one generated for method "
                        "Get; rename one of them"));
}

TEST_F(PluginErrorTest, CollidingMethodIdsAreRejected) {
  ProtocResult r = RunRfrpcPlugin(
      {"codegen/testdata/errors/id_collision.proto"}, "", out_dir_);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.stderr_text,
              HasSubstr("codegen/testdata/errors/id_collision.proto: "
                        "service pkg.Foo, method MlCaA: method id 0xfe926bdd "
                        "collides with that of /pkg.Foo/MTaiO; rename one of "
                        "them"));
}

// Each of these compiled to C++ that g++ refused (redefinition, redeclared
// as a different kind of entity); now the plugin says why.
TEST_F(PluginErrorTest, ARenamedServiceClassTakingATakenNameIsRejected) {
  ProtocResult r = RunRfrpcPlugin(
      {"codegen/testdata/errors/class_collision.proto"}, "", out_dir_);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.stderr_text,
              HasSubstr("codegen/testdata/errors/class_collision.proto: "
                        "service pkg.Stub: generated C++ class Stub_ collides "
                        "with pkg.Stub_ of the package; rename one of them"));
}

TEST_F(PluginErrorTest, AServiceNamedLikeANamespaceWithoutPackageIsRejected) {
  ProtocResult r = RunRfrpcPlugin(
      {"codegen/testdata/errors/global_namespace.proto"}, "", out_dir_);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.stderr_text,
              HasSubstr("service rfrpc: with no package its class rfrpc would "
                        "clash with namespace ::rfrpc"));
}

TEST_F(PluginErrorTest, GenericServicesAreRejected) {
  ProtocResult r = RunRfrpcPlugin(
      {"codegen/testdata/errors/generic_services.proto"}, "", out_dir_);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.stderr_text,
              HasSubstr("option cc_generic_services = true makes protoc's C++ "
                        "generator define a class for each service too"));
}

TEST_F(PluginErrorTest, UnknownParameterIsRejected) {
  ProtocResult r =
      RunRfrpcPlugin({"proto/echo.proto"}, "no_such_option=1", out_dir_);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.stderr_text,
              HasSubstr("unknown parameter 'no_such_option' "
                        "(protoc-gen-rfrpc takes no parameters)"));
}

TEST_F(PluginErrorTest, UnknownFlagParameterIsRejected) {
  ProtocResult r = RunRfrpcPlugin({"proto/echo.proto"}, "lite", out_dir_);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.stderr_text, HasSubstr("unknown parameter 'lite'"));
}

TEST_F(PluginErrorTest, ValidInputSucceedsQuietly) {
  ProtocResult r = RunRfrpcPlugin({"proto/echo.proto"}, "", out_dir_);
  EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stderr_text, Not(HasSubstr("rfrpc")));
}

}  // namespace
}  // namespace codegen
}  // namespace rfrpc
