#!/bin/busybox sh
# Run once in a Java image as it is built (a maven recipe's `class_data`): starts the recipe's
# command with every JVM it starts recording the classes it loads, until the command listens on
# the given TCP port (0: until it exits), stops it, and archives those classes for class-data
# sharing (`java -Xshare:dump`) at the path the entrypoints pass to `-XX:SharedArchiveFile`.
# A JVM started from the archive maps those classes parsed and verified instead of loading them
# from the jars: a broker or a proxy starts on about half the CPU.
#
#   class-data.sh ARCHIVE PORT COMMAND...
/bin/busybox --install -s /bin
set -eu
archive=$1 port=$2
shift 2
mkdir -p /tmp
list=/tmp/perf-tests-class-data.lst
log=/tmp/perf-tests-class-data.log
# The JVM writes the list as it loads; JAVA_TOOL_OPTIONS reaches every JVM the command starts
# (a later one's list replaces an earlier one's: the last JVM is the application).
JAVA_TOOL_OPTIONS="-XX:DumpLoadedClassList=$list" "$@" >"$log" 2>&1 &
pid=$!
hex=$(printf '%04X' "$port")
waited=0
while kill -0 "$pid" 2>/dev/null; do
    # A socket of this network namespace listening (state 0A) on the port.
    if [ "$port" != 0 ] && grep -qE ":$hex [0-9A-F]+:0000 0A" /proc/net/tcp /proc/net/tcp6 2>/dev/null; then
        kill "$pid"
        break
    fi
    waited=$((waited + 1))
    if [ "$waited" -ge 1200 ]; then
        echo "class data: the command did not listen on port $port within 120 s: $*" >&2
        tail -n 30 "$log" >&2
        kill -9 "$pid"
        exit 1
    fi
    sleep 0.1
done
status=0
wait "$pid" || status=$?
# Stopped by us (SIGTERM: 143) or done by itself with success: anything else is the command's
# own failure.
if [ "$status" != 0 ] && [ "$status" != 143 ]; then
    echo "class data: the command failed (exit $status): $*" >&2
    tail -n 30 "$log" >&2
    exit 1
fi
if ! [ -s "$list" ]; then
    echo "class data: no JVM of the command recorded its classes: $*" >&2
    tail -n 30 "$log" >&2
    exit 1
fi
/opt/java/bin/java -Xshare:dump -XX:SharedClassListFile="$list" -XX:SharedArchiveFile="$archive" \
    -cp '/opt/app/libs/*' >"$log" 2>&1 || {
    echo "class data: java -Xshare:dump failed" >&2
    tail -n 30 "$log" >&2
    exit 1
}
rm -rf /tmp/* /tmp/.[!.]* 2>/dev/null || true
