// Copyright 2026 The rfrpc Authors.
//
// Method ids are part of the wire protocol: a client and a server built from
// the same .proto must agree on them whatever generator or runtime version
// built each. These tests pin that the ids the generator computes equal
// rfrpc::MethodId of the full name, at compile time and at run time, and that
// the ids of rfrpc.echo.Echo never change.

#include <cstdint>
#include <string>

#include "codegen/naming.h"
#include "codegen/testdata/names.rfrpc.h"
#include "codegen/testdata/nested_package.rfrpc.h"
#include "codegen/testdata/no_package.rfrpc.h"
#include "gtest/gtest.h"
#include "proto/echo.rfrpc.h"
#include "rpc/service.h"

namespace rfrpc {
namespace codegen {
namespace {

using ::rfrpc::echo::Echo;

// Compile time: the generated constants are FNV-1a 32 of the full names.
// (Not under UBSan: GCC's instrumentation of absl::string_view's constexpr
// constructor makes these non-constant; the same comparisons run at run time
// in IdsMatchFnv1aAtRunTime below.)
#ifndef RFRPC_UBSAN
static_assert(Echo::kEchoMethodId == Fnv1a32MethodId(Echo::kEchoMethodName),
              "generated id differs from FNV-1a 32 of the full name");
static_assert(Echo::kUnimplementedMethodId ==
                  Fnv1a32MethodId(Echo::kUnimplementedMethodName),
              "generated id differs from FNV-1a 32 of the full name");
#endif

TEST(MethodIdTest, IdsMatchFnv1aAtRunTime) {
  EXPECT_EQ(Echo::kEchoMethodId, Fnv1a32MethodId(Echo::kEchoMethodName));
  EXPECT_EQ(Echo::kUnimplementedMethodId,
            Fnv1a32MethodId(Echo::kUnimplementedMethodName));
}
static_assert(Echo::kMethods.size() == 2, "");
static_assert(Echo::kMethods[0].id == Echo::kEchoMethodId, "");

// Pinned: changing these breaks every deployed client of rfrpc.echo.Echo.
TEST(MethodIdTest, EchoIdsAreStable) {
  EXPECT_STREQ(Echo::kEchoMethodName, "/rfrpc.echo.Echo/Echo");
  EXPECT_EQ(Echo::kEchoMethodId, 0xb7d00c2du);
  EXPECT_STREQ(Echo::kUnimplementedMethodName,
               "/rfrpc.echo.Echo/Unimplemented");
  EXPECT_EQ(Echo::kUnimplementedMethodId, 0x00a85641u);
}

// Run time: the generated table agrees with the runtime's MethodId and with
// what the generated Service registers.
template <typename ServiceClass>
void ExpectTableMatchesRuntime() {
  typename ServiceClass::Service service;
  ASSERT_EQ(service.methods().size(), ServiceClass::kMethods.size());
  for (size_t i = 0; i < ServiceClass::kMethods.size(); ++i) {
    const auto& info = ServiceClass::kMethods[i];
    SCOPED_TRACE(info.full_name);
    EXPECT_EQ(info.id, rfrpc::MethodId(info.full_name));
    EXPECT_EQ(info.id, Fnv1a32MethodId(info.full_name));
    EXPECT_EQ(std::string(info.full_name),
              std::string("/") + ServiceClass::kServiceName + "/" + info.name);
    EXPECT_EQ(service.methods()[i].id, info.id);
    EXPECT_EQ(service.methods()[i].full_name, info.full_name);
  }
  EXPECT_EQ(service.full_name(), ServiceClass::kServiceName);
}

TEST(MethodIdTest, EchoTableMatchesRuntime) {
  ExpectTableMatchesRuntime<Echo>();
}

TEST(MethodIdTest, NestedPackageTablesMatchRuntime) {
  using namespace ::rfrpc::codegen::testdata::deeply::nested;  // NOLINT
  ExpectTableMatchesRuntime<Lookup>();
  ExpectTableMatchesRuntime<Admin>();
  ExpectTableMatchesRuntime<Empty>();
  EXPECT_STREQ(Lookup::kFindMethodName,
               "/rfrpc.codegen.testdata.deeply.nested.Lookup/Find");
}

TEST(MethodIdTest, MangledNamesKeepTheProtoNameOnTheWire) {
  using ::rfrpc::codegen::testdata::names::Colliding;
  ExpectTableMatchesRuntime<Colliding>();
  ExpectTableMatchesRuntime<::rfrpc::codegen::testdata::names::namespace_>();
  ExpectTableMatchesRuntime<::rfrpc::codegen::testdata::names::Stub_>();
  // The C++ member is delete_, the method is still "delete".
  EXPECT_STREQ(Colliding::kdeleteMethodName,
               "/rfrpc.codegen.testdata.names.Colliding/delete");
  EXPECT_EQ(Colliding::kdeleteMethodId,
            rfrpc::MethodId("/rfrpc.codegen.testdata.names.Colliding/delete"));
}

TEST(MethodIdTest, NoPackage) {
  ExpectTableMatchesRuntime<::Ping>();
  EXPECT_STREQ(::Ping::kPingMethodName, "/Ping/Ping");
}

}  // namespace
}  // namespace codegen
}  // namespace rfrpc
