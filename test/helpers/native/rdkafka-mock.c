/*
 * Hosts librdkafka's in-process mock cluster for tests of the gregor CLI against "another Kafka":
 *   rdkafka-mock <brokers> [topic:partitions ...]
 * prints "bootstrap <host:port,...>" once the cluster is up, then serves until stdin closes.
 */
#include <stdio.h>
#include <stdlib.h>

#include "rdk-common.h" /* compat/bench/native/: the mock host shared with rdkafka-mock-bench.c */

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s <brokers> [topic:partitions ...]\n", argv[0]);
    return 2;
  }
  rd_kafka_t *rk;
  rd_kafka_mock_cluster_t *mc = rdk_mock_cluster_start(atoi(argv[1]), &rk);
  if (mc == NULL || rdk_mock_create_topics(mc, argv + 2, argc - 2, NULL) != 0) return 1;
  rdk_mock_serve(mc, rk);
  return 0;
}
