"""Bazel macros that compile .proto files with the system protoc.

Debian's Bazel 4.2.3 cannot fetch rules_proto, so these macros run
/usr/bin/protoc in genrules and wrap the outputs in one cc_library.

  load("//codegen:rfrpc.bzl", "rfrpc_cc_proto_library")

  rfrpc_cc_proto_library(
      name = "echo_proto",
      srcs = ["echo.proto"],
      deps = ["//proto:common_proto"],   # other rfrpc_cc_proto_library targets
      services = True,                   # also run protoc-gen-rfrpc
  )

`name` then provides echo.pb.h and, with services, echo.rfrpc.h (a
`Service` base class and a `Stub` per service; see
docs/define_a_service.md). Include them by workspace path:
#include "proto/echo.rfrpc.h".

Imports are resolved from the workspace root (import "proto/common.proto")
and from /usr/include (the well-known types, e.g.
"google/protobuf/empty.proto", whose C++ code is in //third_party:protobuf).
"""

_PLUGIN = "//codegen:protoc-gen-rfrpc"

# What generated .rfrpc.{h,cc} files include besides protobuf: rpc/service.h
# (service bases) and rpc/channel.h (stubs). Not the server: a client links
# none of it. A server binary depends on //rpc:server (or //rpc) itself;
# every binary links a transport provider (//transport/shm,
# //transport/verbs).
_RFRPC_RUNTIME_DEPS = [
    "//rpc:channel",
    "//rpc:service",
    "//third_party:absl",
]

# The generated rfrpc code must compile cleanly with the warnings the
# project-wide flags turn off (.bazelrc: -Wno-unused-parameter,
# -Wno-sign-compare), so they are turned back on for it. protoc's own .pb.cc
# output does not meet that bar and keeps the project defaults.
_RFRPC_COPTS = ["-Wunused-parameter", "-Wsign-compare"]

def _proto_import_dirs():
    return "-I. -I$(GENDIR) -I/usr/include"

def rfrpc_cc_proto_library(name, srcs, deps = [], services = False, visibility = None, testonly = False):
    """One cc_library with protoc's C++ output (and rfrpc stubs) for `srcs`.

    Args:
      name: the cc_library's name.
      srcs: .proto files in this package.
      deps: other rfrpc_cc_proto_library targets whose .proto files these import.
      services: also run protoc-gen-rfrpc, adding foo.rfrpc.h/.cc for each
        foo.proto (generated even for files without services, so every src
        has one). Streaming rpcs fail the build with the plugin's message.
      visibility: as usual.
      testonly: as usual.
    """
    pkg = native.package_name()
    prefix = pkg + "/" if pkg else ""
    bases = [s[:-len(".proto")] for s in srcs]
    hdrs = [b + ".pb.h" for b in bases]
    cc_srcs = [b + ".pb.cc" for b in bases]
    dep_protos = [d + "_protos" for d in deps]
    proto_paths = " ".join([prefix + s for s in srcs])
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
            proto_paths,
        ),
        testonly = testonly,
    )
    if not services:
        native.cc_library(
            name = name,
            srcs = cc_srcs,
            hdrs = hdrs,
            deps = deps + ["//third_party:protobuf"],
            copts = ["-Wno-unused-parameter"],
            visibility = visibility,
            testonly = testonly,
        )
        return

    # Messages alone, then the rfrpc code on top of them under `name`.
    native.cc_library(
        name = name + "_messages",
        srcs = cc_srcs,
        hdrs = hdrs,
        deps = deps + ["//third_party:protobuf"],
        copts = ["-Wno-unused-parameter"],
        visibility = ["//visibility:private"],
        testonly = testonly,
    )
    rfrpc_hdrs = [b + ".rfrpc.h" for b in bases]
    rfrpc_srcs = [b + ".rfrpc.cc" for b in bases]
    native.genrule(
        name = name + "_genrfrpc",
        srcs = srcs + dep_protos,
        outs = rfrpc_hdrs + rfrpc_srcs,
        tools = [_PLUGIN],
        cmd = ("/usr/bin/protoc %s --plugin=protoc-gen-rfrpc=$(location %s) " +
               "--rfrpc_out=$(GENDIR) %s") % (
            _proto_import_dirs(),
            _PLUGIN,
            proto_paths,
        ),
        testonly = testonly,
    )
    native.cc_library(
        name = name,
        srcs = rfrpc_srcs,
        hdrs = rfrpc_hdrs,
        deps = [":" + name + "_messages"] + _RFRPC_RUNTIME_DEPS,
        copts = _RFRPC_COPTS,
        visibility = visibility,
        testonly = testonly,
    )
