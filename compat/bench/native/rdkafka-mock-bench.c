/*
 * librdkafka's mock cluster (rd_kafka_mock_cluster_new) as the reference broker of
 * compat/bench/mock-vs-gregor.ts: one broker, the topics given on the command line, and the
 * partitions' log limits lifted.
 *
 *   rdkafka-mock-bench <topic>[:partitions] ...
 *
 * The mock keeps each partition's log in memory and drops its oldest message sets once a partition
 * holds more than 5 MB or 100,000 of them (rd_kafka_mock_partition_init sets max_size/max_cnt, and no
 * public call changes them): 1M records of 100 bytes would be cut to their last ~45,000 and a
 * consumer reading "from the start" would get only those. This host sets both limits of every
 * partition it creates to SIZE_MAX, through the mock's internal header (rdkafka_mock_int.h, built
 * with the same config.h as the library, so the struct layout is the library's). Topics that clients
 * create later (CreateTopics, auto-create) keep the mock's limits.
 *
 * Prints "bootstrap <host:port>" once the cluster is up (the start-up benchmark times spawn -> this
 * line), then serves until stdin closes. The mock serves every connection from one thread,
 * "rdk:mock"; the process's main thread only waits on stdin.
 */
/* librdkafka's internal headers first: rd.h defines _GNU_SOURCE, as the library was built */
#include "rdkafka_int.h"
#include "rdkafka_mock.h"
#include "rdkafka_mock_int.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "rdk-common.h"

/* Lifts the log limits of every partition of `name` (called right after the topic is created,
 * before any client connects, so the mock thread is not touching it); 0, or -1 after printing why. */
static int unlimit(rd_kafka_mock_cluster_t *mc, const char *name) {
  rd_kafka_mock_topic_t *t;
  int found = 0;
  mtx_lock(&mc->lock);
  TAILQ_FOREACH(t, &mc->topics, link) {
    if (strcmp(t->name, name) != 0) continue;
    for (int p = 0; p < t->partition_cnt; p++) {
      t->partitions[p].max_size = SIZE_MAX;
      t->partitions[p].max_cnt = SIZE_MAX;
    }
    found = 1;
  }
  mtx_unlock(&mc->lock);
  if (!found) fprintf(stderr, "topic %s: not found after creating it\n", name);
  return found ? 0 : -1;
}

int main(int argc, char **argv) {
  rd_kafka_t *rk;
  rd_kafka_mock_cluster_t *mc = rdk_mock_cluster_start(1, &rk);
  if (mc == NULL || rdk_mock_create_topics(mc, argv + 1, argc - 1, unlimit) != 0) return 1;
  rdk_mock_serve(mc, rk);
  return 0;
}
