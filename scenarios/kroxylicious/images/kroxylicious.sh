#!/bin/busybox sh
# The Kroxylicious proxy: `kroxylicious.sh --config FILE`, with the JVM options of the
# distribution's start script. The shell's tools are installed first for health checks.
/bin/busybox --install -s /bin
mkdir -p /tmp
exec /opt/java/bin/java ${KROXYLICIOUS_HEAP_OPTS:--Xmx1G} -XX:-UsePerfData \
    -Djava.awt.headless=true -Dlog4j2.configurationFile=/opt/kroxylicious/log4j2.properties \
    ${JAVA_OPTIONS:-} -cp '/opt/app/libs/*' ProxyMain "$@"
