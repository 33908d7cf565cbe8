#!/bin/busybox sh
# Apache Kafka, one node in KRaft combined mode, started as the apache/kafka image starts it:
# every KAFKA_* variable becomes a line of server.properties (KAFKA_LOG_DIRS -> log.dirs;
# `___` stands for `-`, `__` for `_`), the storage is formatted, then the broker runs.
/bin/busybox --install -s /bin
set -eu
mkdir -p /tmp /opt/kafka/config
props=/opt/kafka/config/server.properties
: >"$props"
env | sort | while IFS='=' read -r name value; do
    case "$name" in
    KAFKA_HEAP_OPTS | KAFKA_JVM_OPTS | KAFKA_CLUSTER_ID) ;;
    KAFKA_*)
        key=$(echo "${name#KAFKA_}" | tr 'A-Z' 'a-z' | sed 's/___/-/g; s/__/@/g; s/_/./g; s/@/_/g')
        echo "$key=$value" >>"$props"
        ;;
    esac
done
java=/opt/java/bin/java
cp='/opt/app/libs/*'
log="-Dlog4j2.configurationFile=/opt/kafka/config/log4j2.properties"
# The image's archive of the broker's classes (recipes.yaml, class_data), when it has one.
cds=${PERF_TESTS_CLASS_DATA:+-XX:SharedArchiveFile=$PERF_TESTS_CLASS_DATA}
# Storage is the container's own: formatted at every start.
$java $cds $log -cp "$cp" kafka.tools.StorageTool format --ignore-formatted \
    -t "${KAFKA_CLUSTER_ID:-5L6g3nShT-eMCtK--X86sw}" -c "$props"
# Kafka's own defaults from kafka-server-start.sh and kafka-run-class.sh; the GC log where the
# runner reads each measured phase's pauses (src/gc.rs).
exec $java ${KAFKA_HEAP_OPTS:--Xmx1G -Xms1G} \
    -server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 \
    -XX:+ExplicitGCInvokesConcurrent -XX:-UsePerfData -Djava.awt.headless=true \
    -Xlog:gc:file=/tmp/perf-tests-gc.log:utctime,level,tags $cds \
    ${KAFKA_JVM_OPTS:-} $log -cp "$cp" kafka.Kafka "$props"
