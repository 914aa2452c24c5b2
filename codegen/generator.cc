// Copyright 2026 The rfrpc Authors.

#include "codegen/generator.h"

#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "codegen/naming.h"
#include "google/protobuf/compiler/code_generator.h"
#include "google/protobuf/compiler/cpp/names.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/io/printer.h"
#include "google/protobuf/io/zero_copy_stream.h"
#include "proto/rfrpc_options.pb.h"

namespace rfrpc {
namespace codegen {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FileDescriptor;
using google::protobuf::MethodDescriptor;
using google::protobuf::ServiceDescriptor;
using google::protobuf::SourceLocation;
using google::protobuf::compiler::GeneratorContext;
using google::protobuf::io::Printer;
using Vars = std::map<std::string, std::string>;

constexpr char kStreamingError[] =
    "streaming rpcs are not supported by rfrpc (remote-fetching RPC is unary)";

// Everything the templates need about one rpc.
struct Method {
  const MethodDescriptor* descriptor;
  std::string name;       // As in the .proto.
  std::string ident;      // C++ member name (MethodIdentifier).
  std::string full_name;  // "/pkg.Service/Method".
  uint32_t id;
  std::string request;   // "::pkg::Req".
  std::string response;  // "::pkg::Resp".
  // The option (rfrpc.handler) (proto/rfrpc_options.proto).
  ::rfrpc::HandlerKind kind = ::rfrpc::HANDLER_SYNC;
};

struct Service {
  const ServiceDescriptor* descriptor;
  std::string class_name;      // "Foo" (ServiceClassName).
  std::string qualified_name;  // "::pkg::Foo".
  std::vector<Method> methods;
};

std::string ProtoBase(const std::string& proto_file) {
  return google::protobuf::compiler::cpp::StripProto(proto_file);
}

template <typename DescriptorT>
std::string LeadingComments(const DescriptorT* descriptor, int indent) {
  SourceLocation location;
  if (!descriptor->GetSourceLocation(&location)) return "";
  return FormatComment(location.leading_comments, indent);
}

std::string Where(const ServiceDescriptor* service,
                  const MethodDescriptor* method) {
  return absl::StrCat(service->file()->name(), ": service ",
                      service->full_name(), ", method ", method->name());
}

// Builds the model of `file`'s services, or explains in `*error` why the
// file cannot be generated.
bool BuildModel(const FileDescriptor* file, std::vector<Service>* services,
                std::string* error) {
  const std::string ns = PackageToNamespace(file->package());
  absl::flat_hash_map<uint32_t, std::string> ids;  // id -> full name.
  if (file->service_count() > 0 && file->options().cc_generic_services()) {
    *error = absl::StrCat(
        file->name(),
        ": option cc_generic_services = true makes protoc's C++ generator "
        "define a class for each service too, which rfrpc's classes of the "
        "same names collide with; leave it false (the default)");
    return false;
  }
  // C++ class name -> service that generated it ("Stub" becomes "Stub_").
  absl::flat_hash_map<std::string, std::string> classes;
  for (int s = 0; s < file->service_count(); ++s) {
    const ServiceDescriptor* sd = file->service(s);
    Service service;
    service.descriptor = sd;
    service.class_name = ServiceClassName(sd->name());
    service.qualified_name = absl::StrCat(ns, "::", service.class_name);
    const std::string where =
        absl::StrCat(file->name(), ": service ", sd->full_name());
    auto [cls, fresh] = classes.emplace(service.class_name, sd->name());
    if (!fresh) {
      *error = absl::StrCat(where, ": generated C++ class ",
                            service.class_name,
                            " collides with the one generated for service ",
                            cls->second, "; rename one of them");
      return false;
    }
    // A renamed class may take a name protoc gave something else in the
    // package (protoc checks only the proto names).
    if (service.class_name != sd->name()) {
      const std::string symbol = file->package().empty()
                                     ? service.class_name
                                     : absl::StrCat(file->package(), ".",
                                                    service.class_name);
      const auto* pool = file->pool();
      if (pool->FindMessageTypeByName(symbol) != nullptr ||
          pool->FindEnumTypeByName(symbol) != nullptr ||
          pool->FindEnumValueByName(symbol) != nullptr ||
          pool->FindServiceByName(symbol) != nullptr) {
        *error = absl::StrCat(where, ": generated C++ class ",
                              service.class_name, " collides with ", symbol,
                              " of the package; rename one of them");
        return false;
      }
    }
    // Without a package the class is at global scope, where the namespaces
    // the generated code names are.
    if (file->package().empty() &&
        (service.class_name == "rfrpc" || service.class_name == "absl" ||
         service.class_name == "std" || service.class_name == "google")) {
      *error = absl::StrCat(where, ": with no package its class ",
                            service.class_name, " would clash with namespace ::",
                            service.class_name,
                            "; add a package or rename the service");
      return false;
    }
    // C++ member name -> rpc that generated it, to catch collisions such as
    // rpcs `Get` and `GetAsync`.
    absl::flat_hash_map<std::string, std::string> members;
    for (int m = 0; m < sd->method_count(); ++m) {
      const MethodDescriptor* md = sd->method(m);
      if (md->client_streaming() || md->server_streaming()) {
        *error = absl::StrCat(Where(sd, md), ": ", kStreamingError);
        return false;
      }
      Method method;
      method.descriptor = md;
      method.name = md->name();
      method.ident = MethodIdentifier(md->name());
      method.full_name = absl::StrCat("/", sd->full_name(), "/", md->name());
      method.id = Fnv1a32MethodId(method.full_name);
      method.request =
          google::protobuf::compiler::cpp::QualifiedClassName(md->input_type());
      method.response = google::protobuf::compiler::cpp::QualifiedClassName(
          md->output_type());
      method.kind = md->options().GetExtension(::rfrpc::handler);
      if (!::rfrpc::HandlerKind_IsValid(method.kind)) {
        *error = absl::StrCat(Where(sd, md), ": unknown (rfrpc.handler) value ",
                              static_cast<int>(method.kind));
        return false;
      }
      for (const char* suffix : {"", "Async", "Future"}) {
        const std::string member = absl::StrCat(method.ident, suffix);
        auto [it, inserted] = members.emplace(member, md->name());
        if (!inserted) {
          *error = absl::StrCat(Where(sd, md), ": generated C++ name ", member,
                                " collides with the one generated for method ",
                                it->second, "; rename one of them");
          return false;
        }
      }
      auto [it, inserted] = ids.emplace(method.id, method.full_name);
      if (!inserted) {
        *error = absl::StrFormat(
            "%s: method id 0x%08x collides with that of %s; rename one of "
            "them",
            Where(sd, md), method.id, it->second);
        return false;
      }
      service.methods.push_back(std::move(method));
    }
    services->push_back(std::move(service));
  }
  return true;
}

// Rejects every parameter: the generator has none today (codegen/README.md).
bool CheckParameters(const std::string& parameter, std::string* error) {
  std::vector<std::pair<std::string, std::string>> options;
  google::protobuf::compiler::ParseGeneratorParameter(parameter, &options);
  if (options.empty()) return true;
  *error = absl::StrCat("unknown parameter '", options.front().first,
                        "' (protoc-gen-rfrpc takes no parameters)");
  return false;
}

void PrintPreamble(Printer* p, const FileDescriptor* file) {
  p->Print(
      "// Generated by protoc-gen-rfrpc. DO NOT EDIT.\n"
      "// source: $file$\n"
      "\n",
      "file", file->name());
}

void OpenNamespaces(Printer* p, const FileDescriptor* file) {
  if (file->package().empty()) return;
  for (absl::string_view part : absl::StrSplit(file->package(), '.')) {
    p->Print("namespace $part$ {\n", "part", std::string(part));
  }
  p->Print("\n");
}

void CloseNamespaces(Printer* p, const FileDescriptor* file) {
  if (file->package().empty()) return;
  std::vector<std::string> parts = absl::StrSplit(file->package(), '.');
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
    p->Print("}  // namespace $part$\n", "part", *it);
  }
}

Vars MethodVars(const Service& service, const Method& method) {
  return {
      {"Class", service.class_name},
      {"QClass", service.qualified_name},
      {"name", method.name},
      {"ident", method.ident},
      {"full_name", method.full_name},
      {"id", absl::StrFormat("0x%08xu", method.id)},
      {"Req", method.request},
      {"Resp", method.response},
  };
}

void PrintServiceDeclaration(Printer* p, const Service& service) {
  const ServiceDescriptor* sd = service.descriptor;
  Vars vars = {
      {"Class", service.class_name},
      {"full_name", sd->full_name()},
      {"count", absl::StrCat(service.methods.size())},
      {"comment", LeadingComments(sd, 0)},
  };
  p->Print(vars,
           "$comment$"
           "class $Class$ final {\n"
           " public:\n"
           "  static constexpr char kServiceName[] = \"$full_name$\";\n"
           "\n"
           "  // Per rpc: its full name and its id (rfrpc::MethodId of the "
           "full name).\n");
  for (const Method& method : service.methods) {
    p->Print(MethodVars(service, method),
             "  static constexpr char k$name$MethodName[] = \"$full_name$\";\n"
             "  static constexpr ::std::uint32_t k$name$MethodId = $id$;\n");
  }
  p->Print(vars,
           "\n"
           "  // The method table, in declaration order.\n"
           "  struct MethodInfo {\n"
           "    const char* name;       // As in the .proto.\n"
           "    const char* full_name;  // \"/package.Service/Method\".\n"
           "    ::std::uint32_t id;     // rfrpc::MethodId(full_name).\n"
           "  };\n"
           "  static constexpr ::std::array<MethodInfo, $count$> kMethods = "
           "{{\n");
  for (const Method& method : service.methods) {
    p->Print(MethodVars(service, method),
             "      {\"$name$\", k$name$MethodName, k$name$MethodId},\n");
  }
  p->Print(vars,
           "  }};\n"
           "\n"
           "  // The server side. Derive from it, override the rpcs you serve "
           "and pass\n"
           "  // the object to rfrpc::Server::RegisterService; rpcs not "
           "overridden return\n"
           "  // UNIMPLEMENTED. Overrides may run concurrently on several "
           "server workers.\n"
           "  class Service : public ::rfrpc::Service {\n"
           "   public:\n"
           "    Service();\n"
           "    ~Service() override;\n");
  for (const Method& method : service.methods) {
    Vars mv = MethodVars(service, method);
    mv["comment"] = LeadingComments(method.descriptor, 4);
    if (method.kind == ::rfrpc::HANDLER_ASYNC) {
      mv["comment_sep"] = mv["comment"].empty() ? "" : "    //\n";
      p->Print(mv,
               "\n"
               "$comment$"
               "$comment_sep$"
               "    // Async (rfrpc.handler): finish the call with done(status), "
               "once, from\n"
               "    // any thread; `ctx`, `request` and `response` live until "
               "then.\n"
               "    virtual void $ident$(::rfrpc::ServerContext* ctx,\n"
               "        const $Req$* request,\n"
               "        $Resp$* response,\n"
               "        ::rfrpc::ServerDone done);\n");
      continue;
    }
    if (method.kind == ::rfrpc::HANDLER_BLOCKING) {
      mv["comment_sep"] = mv["comment"].empty() ? "" : "    //\n";
      mv["comment"] += mv["comment_sep"] +
                       "    // Blocking (rfrpc.handler): runs on the server's "
                       "handler pool, not on\n"
                       "    // the worker that polls its connections.\n";
    }
    p->Print(mv,
             "\n"
             "$comment$"
             "    virtual ::absl::Status $ident$(::rfrpc::ServerContext* ctx,\n"
             "        const $Req$* request,\n"
             "        $Resp$* response);\n");
  }
  p->Print(
      "  };\n"
      "\n"
      "  // The client side: typed calls over a channel. As thread-safe as "
      "the\n"
      "  // channel; cheap to create.\n"
      "  class Stub final {\n"
      "   public:\n"
      "    // `channel` is not owned and must outlive the stub.\n"
      "    explicit Stub(::rfrpc::Channel* channel) : channel_(channel) {}\n");
  for (const Method& method : service.methods) {
    Vars mv = MethodVars(service, method);
    mv["comment"] = LeadingComments(method.descriptor, 4);
    mv["comment_sep"] = mv["comment"].empty() ? "" : "    //\n";
    p->Print(
        mv,
        "\n"
        "$comment$"
        "$comment_sep$"
        "    // Blocks until the call completes. `ctx` may be null.\n"
        "    ::absl::Status $ident$(::rfrpc::ClientContext* ctx,\n"
        "        const $Req$& request,\n"
        "        $Resp$* response);\n"
        "    // Returns at once; `done` runs exactly once with the status. "
        "`response`\n"
        "    // and `ctx` (may be null) must live until then.\n"
        "    void $ident$Async(::rfrpc::ClientContext* ctx,\n"
        "        const $Req$& request,\n"
        "        $Resp$* response,\n"
        "        ::std::function<void(::absl::Status)> done);\n"
        "    // As $ident$Async, with the status delivered through a future.\n"
        "    ::std::future<::absl::Status> $ident$Future(\n"
        "        ::rfrpc::ClientContext* ctx,\n"
        "        const $Req$& request,\n"
        "        $Resp$* response);\n");
  }
  p->Print(vars,
           "\n"
           "   private:\n"
           "    ::rfrpc::Channel* const channel_;  // Not owned.\n"
           "  };\n"
           "\n"
           "  $Class$() = delete;\n"
           "};\n"
           "\n");
}

void PrintServiceDefinition(Printer* p, const Service& service) {
  Vars vars = {
      {"Class", service.class_name},
      {"QClass", service.qualified_name},
      {"full_name", service.descriptor->full_name()},
  };
  p->Print(vars,
           "// $full_name$\n"
           "\n"
           "$Class$::Service::Service()\n"
           "    : ::rfrpc::Service($QClass$::kServiceName) {\n");
  for (const Method& method : service.methods) {
    Vars mv = MethodVars(service, method);
    mv["Handler"] = method.kind == ::rfrpc::HANDLER_ASYNC ? "AsyncUnaryHandler"
                                                          : "UnaryHandler";
    mv["kind"] = method.kind == ::rfrpc::HANDLER_BLOCKING
                     ? ",\n            ::rfrpc::MethodKind::kBlocking"
                 : method.kind == ::rfrpc::HANDLER_ASYNC
                     ? ",\n            ::rfrpc::MethodKind::kAsync"
                     : "";
    p->Print(mv,
             "  AddMethod(\"$name$\",\n"
             "            ::std::make_unique<::rfrpc::internal::$Handler$<\n"
             "                $QClass$::Service, $Req$,\n"
             "                $Resp$>>(\n"
             "                this, &$QClass$::Service::$ident$)$kind$);\n");
  }
  p->Print(vars,
           "}\n"
           "\n"
           "$Class$::Service::~Service() = default;\n");
  for (const Method& method : service.methods) {
    if (method.kind == ::rfrpc::HANDLER_ASYNC) {
      p->Print(MethodVars(service, method),
               "\n"
               "void $Class$::Service::$ident$(\n"
               "    ::rfrpc::ServerContext* /*ctx*/,\n"
               "    const $Req$* /*request*/,\n"
               "    $Resp$* /*response*/,\n"
               "    ::rfrpc::ServerDone done) {\n"
               "  done(::absl::UnimplementedError(\n"
               "      \"method $full_name$ is not implemented\"));\n"
               "}\n");
      continue;
    }
    p->Print(MethodVars(service, method),
             "\n"
             "::absl::Status $Class$::Service::$ident$(\n"
             "    ::rfrpc::ServerContext* /*ctx*/,\n"
             "    const $Req$* /*request*/,\n"
             "    $Resp$* /*response*/) {\n"
             "  return ::absl::UnimplementedError(\n"
             "      \"method $full_name$ is not implemented\");\n"
             "}\n");
  }
  for (const Method& method : service.methods) {
    p->Print(MethodVars(service, method),
             "\n"
             "::absl::Status $Class$::Stub::$ident$(\n"
             "    ::rfrpc::ClientContext* ctx,\n"
             "    const $Req$& request,\n"
             "    $Resp$* response) {\n"
             "  return channel_->Call(\n"
             "      $QClass$::k$name$MethodId, request, response, ctx);\n"
             "}\n"
             "\n"
             "void $Class$::Stub::$ident$Async(\n"
             "    ::rfrpc::ClientContext* ctx,\n"
             "    const $Req$& request,\n"
             "    $Resp$* response,\n"
             "    ::std::function<void(::absl::Status)> done) {\n"
             "  channel_->CallAsync(\n"
             "      $QClass$::k$name$MethodId, request, response, ctx,\n"
             "      ::std::move(done));\n"
             "}\n"
             "\n"
             "::std::future<::absl::Status> $Class$::Stub::$ident$Future(\n"
             "    ::rfrpc::ClientContext* ctx,\n"
             "    const $Req$& request,\n"
             "    $Resp$* response) {\n"
             "  return channel_->CallFuture(\n"
             "      $QClass$::k$name$MethodId, request, response, ctx);\n"
             "}\n");
  }
  p->Print("\n");
}

void GenerateHeader(const FileDescriptor* file,
                    const std::vector<Service>& services, Printer* p) {
  const std::string guard = IncludeGuard(file->name());
  PrintPreamble(p, file);
  p->Print(
      "#ifndef $guard$\n"
      "#define $guard$\n"
      "\n"
      "#include <array>\n"
      "#include <cstdint>\n"
      "#include <functional>\n"
      "#include <future>\n"
      "\n"
      "#include \"absl/status/status.h\"\n",
      "guard", guard);
  // The file's own messages, and those of imported files used as request or
  // response types (include what you use).
  std::set<std::string> pb_headers = {ProtoBase(file->name()) + ".pb.h"};
  for (const Service& service : services) {
    for (const Method& method : service.methods) {
      pb_headers.insert(
          ProtoBase(method.descriptor->input_type()->file()->name()) + ".pb.h");
      pb_headers.insert(
          ProtoBase(method.descriptor->output_type()->file()->name()) +
          ".pb.h");
    }
  }
  pb_headers.insert("rpc/channel.h");
  pb_headers.insert("rpc/service.h");
  for (const std::string& header : pb_headers) {
    p->Print("#include \"$header$\"\n", "header", header);
  }
  p->Print("\n");
  OpenNamespaces(p, file);
  for (const Service& service : services) PrintServiceDeclaration(p, service);
  CloseNamespaces(p, file);
  if (!file->package().empty()) p->Print("\n");
  p->Print("#endif  // $guard$\n", "guard", guard);
}

void GenerateSource(const FileDescriptor* file,
                    const std::vector<Service>& services, Printer* p) {
  PrintPreamble(p, file);
  p->Print(
      "#include \"$header$\"\n"
      "\n"
      "#include <functional>\n"
      "#include <future>\n"
      "#include <memory>\n"
      "#include <utility>\n"
      "\n"
      "#include \"absl/status/status.h\"\n"
      "#include \"rpc/channel.h\"\n"
      "#include \"rpc/service.h\"\n"
      "\n",
      "header", ProtoBase(file->name()) + ".rfrpc.h");
  OpenNamespaces(p, file);
  for (const Service& service : services) PrintServiceDefinition(p, service);
  CloseNamespaces(p, file);
}

}  // namespace

bool RfrpcGenerator::Generate(const FileDescriptor* file,
                              const std::string& parameter,
                              GeneratorContext* context,
                              std::string* error) const {
  if (!CheckParameters(parameter, error)) return false;
  std::vector<Service> services;
  if (!BuildModel(file, &services, error)) return false;

  const std::string base = ProtoBase(file->name());
  {
    std::unique_ptr<google::protobuf::io::ZeroCopyOutputStream> out(
        context->Open(base + ".rfrpc.h"));
    Printer printer(out.get(), '$');
    GenerateHeader(file, services, &printer);
    if (printer.failed()) {
      *error = absl::StrCat("failed writing ", base, ".rfrpc.h");
      return false;
    }
  }
  {
    std::unique_ptr<google::protobuf::io::ZeroCopyOutputStream> out(
        context->Open(base + ".rfrpc.cc"));
    Printer printer(out.get(), '$');
    GenerateSource(file, services, &printer);
    if (printer.failed()) {
      *error = absl::StrCat("failed writing ", base, ".rfrpc.cc");
      return false;
    }
  }
  return true;
}

}  // namespace codegen
}  // namespace rfrpc
