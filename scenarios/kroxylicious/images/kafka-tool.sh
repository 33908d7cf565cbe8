#!/bin/busybox sh
# Apache Kafka's command-line tools, installed under the names of the distribution's scripts
# (/opt/kafka/bin/kafka-topics.sh, …): the name this file is run by picks the tool's class.
case "${0##*/}" in
kafka-topics.sh) class=org.apache.kafka.tools.TopicCommand ;;
kafka-producer-perf-test.sh) class=org.apache.kafka.tools.ProducerPerformance ;;
kafka-consumer-perf-test.sh) class=org.apache.kafka.tools.ConsumerPerformance ;;
*)
    echo "kafka-tool.sh: unknown tool ${0##*/}" >&2
    exit 2
    ;;
esac
# The distribution's kafka-run-class.sh defaults: a 256 MiB heap, warnings only; the image's
# archive of the clients' classes (recipes.yaml, class_data), when it has one.
exec /opt/java/bin/java ${KAFKA_HEAP_OPTS:--Xmx256M} -XX:-UsePerfData -Djava.awt.headless=true \
    ${PERF_TESTS_CLASS_DATA:+-XX:SharedArchiveFile=$PERF_TESTS_CLASS_DATA} \
    -Dlog4j2.configurationFile=/opt/kafka/config/tools-log4j2.properties \
    -cp '/opt/app/libs/*' "$class" "$@"
