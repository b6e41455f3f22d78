/*
 * One member of a consumer group for the share-group throughput benchmark (compat/bench/share-throughput.ts):
 *
 *   rdkafka-group-bench <share|classic> <bootstrap> <group> <topic> [key=value ...]
 *
 * share: librdkafka 2.15's share consumer (rd_kafka_share_*) with implicit acknowledgement (every record
 * a poll returned is accepted by the next poll); classic: a classic consumer group member
 * (subscribe, auto.offset.reset=earliest, auto commit) reading with rd_kafka_consume_batch_queue.
 * The key=value pairs are librdkafka configuration. Protocol, one line each:
 *   -> "ready"                     subscribed
 *   -> "b <records> <seconds>"     per non-empty batch: its size and when it was delivered
 *                                  (CLOCK_MONOTONIC, comparable across the members' processes)
 *   <- end of stdin                stop: close the consumer (acknowledging / committing), print "done", exit
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rdk-common.h"

#define PROG "rdkafka-group-bench"
#define BATCH 10000

static int stdin_closed(void) {
  struct pollfd p = {0, POLLIN, 0};
  if (poll(&p, 1, 0) <= 0) return 0;
  char buf[256];
  return read(0, buf, sizeof buf) <= 0;
}

static rd_kafka_topic_partition_list_t *topic_list(const char *topic) {
  rd_kafka_topic_partition_list_t *t = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(t, topic, RD_KAFKA_PARTITION_UA);
  return t;
}

static int run_share(rd_kafka_conf_t *conf, const char *topic) {
  char errstr[512];
  if (rdk_conf_set(conf, PROG, "share.acknowledgement.mode", "implicit") != 0) return 2;
  rd_kafka_share_t *rks = rd_kafka_share_consumer_new(conf, errstr, sizeof errstr);
  if (rks == NULL) {
    fprintf(stderr, "%s: %s\n", PROG, errstr);
    return 1;
  }
  rd_kafka_topic_partition_list_t *topics = topic_list(topic);
  rd_kafka_resp_err_t err = rd_kafka_share_subscribe(rks, topics);
  rd_kafka_topic_partition_list_destroy(topics);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    fprintf(stderr, "%s: subscribe: %s\n", PROG, rd_kafka_err2str(err));
    return 1;
  }
  printf("ready\n");
  while (!stdin_closed()) {
    rd_kafka_messages_t *batch = NULL;
    rd_kafka_error_t *error = rd_kafka_share_poll(rks, 100, &batch);
    if (error != NULL) {
      fprintf(stderr, "%s: poll: %s\n", PROG, rd_kafka_error_string(error));
      rd_kafka_error_destroy(error);
    }
    size_t n = batch == NULL ? 0 : rd_kafka_messages_count(batch);
    size_t ok = 0;
    for (size_t i = 0; i < n; i++)
      if (rd_kafka_messages_get(batch, i)->err == RD_KAFKA_RESP_ERR_NO_ERROR) ok++;
    if (ok > 0) printf("b %zu %.6f\n", ok, rdk_now_seconds());
    if (batch != NULL) rd_kafka_messages_destroy(batch);
  }
  rd_kafka_error_t *error = rd_kafka_share_consumer_close(rks);
  if (error != NULL) rd_kafka_error_destroy(error);
  rd_kafka_share_destroy(rks);
  return 0;
}

static int run_classic(rd_kafka_conf_t *conf, const char *topic) {
  char errstr[512];
  if (rdk_conf_set(conf, PROG, "auto.offset.reset", "earliest") != 0) return 2;
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
  if (rk == NULL) {
    fprintf(stderr, "%s: %s\n", PROG, errstr);
    return 1;
  }
  rd_kafka_poll_set_consumer(rk);
  rd_kafka_topic_partition_list_t *topics = topic_list(topic);
  rd_kafka_resp_err_t err = rd_kafka_subscribe(rk, topics);
  rd_kafka_topic_partition_list_destroy(topics);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    fprintf(stderr, "%s: subscribe: %s\n", PROG, rd_kafka_err2str(err));
    return 1;
  }
  rd_kafka_queue_t *queue = rd_kafka_queue_get_consumer(rk);
  rd_kafka_message_t **msgs = malloc(sizeof *msgs * BATCH);
  printf("ready\n");
  while (!stdin_closed()) {
    /* what is queued, without waiting; when nothing is, wait for one message */
    ssize_t n = rd_kafka_consume_batch_queue(queue, 0, msgs, BATCH);
    if (n <= 0) {
      msgs[0] = rd_kafka_consume_queue(queue, 100);
      n = msgs[0] != NULL ? 1 : 0;
    }
    size_t ok = 0;
    for (ssize_t i = 0; i < n; i++) {
      if (msgs[i]->err == RD_KAFKA_RESP_ERR_NO_ERROR) ok++;
      rd_kafka_message_destroy(msgs[i]);
    }
    if (ok > 0) printf("b %zu %.6f\n", ok, rdk_now_seconds());
  }
  free(msgs);
  rd_kafka_queue_destroy(queue);
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 5 || (strcmp(argv[1], "share") != 0 && strcmp(argv[1], "classic") != 0)) {
    fprintf(stderr, "usage: %s <share|classic> <bootstrap> <group> <topic> [key=value ...]\n", PROG);
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  if (rdk_conf_set(conf, PROG, "bootstrap.servers", argv[2]) != 0 || rdk_conf_set(conf, PROG, "group.id", argv[3]) != 0) return 2;
  for (int i = 5; i < argc; i++) {
    char *value = rdk_split_key_value(argv[i], PROG);
    if (value == NULL || rdk_conf_set(conf, PROG, argv[i], value) != 0) return 2;
  }
  int rc = strcmp(argv[1], "share") == 0 ? run_share(conf, argv[4]) : run_classic(conf, argv[4]);
  printf("done\n");
  return rc;
}
