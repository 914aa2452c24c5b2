"""Bazel macros that compile .proto files with the system protoc.

Debian's Bazel 4.2.3 cannot fetch rules_proto, so these macros run
/usr/bin/protoc in a genrule and wrap the outputs in one cc_library.

  load("//codegen:rfrpc.bzl", "rfrpc_cc_proto_library")

  rfrpc_cc_proto_library(
      name = "echo_proto",
      srcs = ["echo.proto"],
      deps = ["//proto:common_proto"],   # other rfrpc_cc_proto_library targets
  )

Imports are resolved from the workspace root (import "proto/common.proto")
and from /usr/include (the well-known types, e.g.
"google/protobuf/empty.proto").
"""

def _proto_import_dirs():
    return "-I. -I$(GENDIR) -I/usr/include"

def rfrpc_cc_proto_library(name, srcs, deps = [], services = False, visibility = None, testonly = False):
    """One cc_library with protoc's C++ output for `srcs`.

    Args:
      name: the cc_library's name.
      srcs: .proto files in this package.
      deps: other rfrpc_cc_proto_library targets whose .proto files these import.
      services: reserved for the rfrpc plugin (stubs); False generates messages only.
      visibility: as usual.
      testonly: as usual.
    """
    pkg = native.package_name()
    prefix = pkg + "/" if pkg else ""
    bases = [s[:-len(".proto")] for s in srcs]
    hdrs = [b + ".pb.h" for b in bases]
    cc_srcs = [b + ".pb.cc" for b in bases]
    dep_protos = [d + "_protos" for d in deps]
    native.filegroup(
        name = name + "_protos",
        srcs = srcs + dep_protos,
        visibility = visibility,
        testonly = testonly,
    )
    native.genrule(
        name = name + "_genproto",
        srcs = srcs + dep_protos,
        outs = hdrs + cc_srcs,
        cmd = "/usr/bin/protoc %s --cpp_out=$(GENDIR) %s" % (
            _proto_import_dirs(),
            " ".join([prefix + s for s in srcs]),
        ),
        testonly = testonly,
    )
    native.cc_library(
        name = name,
        srcs = cc_srcs,
        hdrs = hdrs,
        deps = deps + ["//third_party:protobuf"],
        copts = ["-Wno-unused-parameter"],
        visibility = visibility,
        testonly = testonly,
    )
