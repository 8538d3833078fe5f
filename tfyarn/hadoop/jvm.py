"""Options for the JVMs that live a short while: skein's driver, its AppMaster, the probe.

A module of its own so that both the submitting side (tfyarn/hadoop/driver.py) and the spec it
submits (tfyarn/submission/appspec.py) can read them without importing each other.
"""

import os

# Start fast, stay lean: C1 only, the serial collector.
QUICK_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"

# skein's Java AppMaster keeps a registry of a few KB per task and serves a gRPC channel per
# container: its RSS was heap grown to the size of its first young generation, Netty's
# pooled direct-memory arenas and per-thread malloc arenas, not data (issue 14). skein
# fixes -Xmx128M on its command line; these start the heap small and give it back after a
# collection, keep Netty's buffers unpooled (grpc-netty-shaded reads the relocated names),
# and trim the code cache and stacks that a C1-only, short-lived JVM never fills.
LEAN_AM_JVM_OPTIONS = (
    "-Xms16m -Xmn12m -XX:MinHeapFreeRatio=10 -XX:MaxHeapFreeRatio=30 "
    "-XX:ReservedCodeCacheSize=32m -Xss512k -XX:-UsePerfData "
    "-Dio.netty.allocator.type=unpooled -Dio.grpc.netty.shaded.io.netty.allocator.type=unpooled "
    "-Dio.netty.noPreferDirect=true -Dio.grpc.netty.shaded.io.netty.noPreferDirect=true"
)
# glibc gives each thread that allocates its own 64 MB arena; two are plenty for the AM.
LEAN_AM_ENV = {"MALLOC_ARENA_MAX": "2"}


def am_java_options() -> str:
    """The AppMaster's lean options; TFYARN_AM_JAVA_OPTIONS replaces them (to compare)."""
    return os.environ.get("TFYARN_AM_JAVA_OPTIONS", LEAN_AM_JVM_OPTIONS)
