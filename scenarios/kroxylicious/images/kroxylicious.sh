#!/bin/busybox sh
# The Kroxylicious proxy: `kroxylicious.sh --config FILE`, with the JVM options of the
# distribution's start script, and the GC log where the runner reads each measured phase's
# pauses (src/gc.rs), and the image's archive of the proxy's classes (recipes.yaml, class_data)
# when it has one. The shell's tools are installed first for health checks.
/bin/busybox --install -s /bin
mkdir -p /tmp
exec /opt/java/bin/java ${KROXYLICIOUS_HEAP_OPTS:--Xmx1G} -XX:-UsePerfData \
    -Xlog:gc:file=/tmp/perf-tests-gc.log:utctime,level,tags \
    ${PERF_TESTS_CLASS_DATA:+-XX:SharedArchiveFile=$PERF_TESTS_CLASS_DATA} \
    -Djava.awt.headless=true -Dlog4j2.configurationFile=/opt/kroxylicious/log4j2.properties \
    ${JAVA_OPTIONS:-} -cp '/opt/app/libs/*' ProxyMain "$@"
