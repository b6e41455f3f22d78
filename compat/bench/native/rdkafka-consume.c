/*
 * A librdkafka consumer for the read_committed benchmark (compat/bench/read-committed.ts), in C so
 * that the application's per-record cost is next to nothing and the figures are librdkafka's and the
 * broker's. Built by compat/bench/native-producer.ts like rdkafka-produce.c.
 *
 *   rdkafka-consume <bootstrap> <topic> <partitions> [key=value ...]
 *
 * The key=value pairs are librdkafka configuration (isolation.level, fetch.* ...); group.id is set
 * to a fresh name unless given (the consumer assigns partitions itself and commits nothing).
 * Protocol on stdin/stdout, one line each:
 *   -> "ready"                     connected (metadata of the topic fetched)
 *   <- any line                    assign partitions 0..P-1 from the beginning: the timed part
 *   -> "done <seconds> <records> <value bytes> <marked records> <seconds to EOF> <seconds to first>"
 *                                  once every partition has reached its end (partition EOF: the
 *                                  high watermark, or the last stable offset for read_committed);
 *                                  seconds: from the assign to the last record delivered (librdkafka
 *                                  reports EOF only after a fetch at the end comes back empty, i.e.
 *                                  after fetch.wait.max.ms); records: messages delivered to the
 *                                  application; marked: those whose value starts with '#'
 *                                  (rdkafka-produce.c writes it into aborted transactions' records);
 *                                  seconds to first: from the assign to the first record delivered
 *                                  (-1: none), what starting costs before records flow
 *   <- any line                    exit (so the parent can read this process's threads first)
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "rdk-common.h"

#define PROG "rdkafka-consume"
#define BATCH 10000

static int set(rd_kafka_conf_t *conf, const char *k, const char *v) { return rdk_conf_set(conf, PROG, k, v); }

int main(int argc, char **argv) {
  if (argc < 4 || atoi(argv[3]) < 1) {
    fprintf(stderr, "usage: %s <bootstrap> <topic> <partitions> [key=value ...]\n", argv[0]);
    return 2;
  }
  int partitions = atoi(argv[3]);
  char errstr[512], group[64];
  snprintf(group, sizeof group, "rdkafka-consume-%ld", (long)getpid());
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  if (set(conf, "bootstrap.servers", argv[1]) || set(conf, "group.id", group) || set(conf, "enable.auto.commit", "false") ||
      set(conf, "enable.auto.offset.store", "false") || set(conf, "enable.partition.eof", "true") || set(conf, "auto.offset.reset", "earliest")) {
    return 2;
  }
  for (int a = 4; a < argc; a++) {
    const char *value = rdk_split_key_value(argv[a], PROG);
    if (value == NULL || set(conf, argv[a], value) != 0) return 2;
  }
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
  if (rk == NULL) {
    fprintf(stderr, "rdkafka-consume: %s\n", errstr);
    return 2;
  }
  rd_kafka_topic_t *topic = rd_kafka_topic_new(rk, argv[2], NULL);
  const struct rd_kafka_metadata *md = NULL;
  rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 0, topic, &md, 10000);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    fprintf(stderr, "rdkafka-consume: metadata: %s\n", rd_kafka_err2str(err));
    return 1;
  }
  rd_kafka_metadata_destroy(md);
  rd_kafka_queue_t *queue = rd_kafka_queue_get_consumer(rk);
  rd_kafka_message_t **msgs = malloc(sizeof *msgs * BATCH);
  printf("ready\n");
  fflush(stdout);
  rdk_wait_line();

  double t0 = rdk_now_seconds();
  rd_kafka_topic_partition_list_t *tps = rd_kafka_topic_partition_list_new(partitions);
  for (int p = 0; p < partitions; p++) rd_kafka_topic_partition_list_add(tps, argv[2], p)->offset = RD_KAFKA_OFFSET_BEGINNING;
  err = rd_kafka_assign(rk, tps);
  rd_kafka_topic_partition_list_destroy(tps);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    fprintf(stderr, "rdkafka-consume: assign: %s\n", rd_kafka_err2str(err));
    return 1;
  }
  long records = 0, marked = 0, eofs = 0;
  long long bytes = 0;
  double last = t0, first = -1;
  char *at_eof = calloc((size_t)partitions, 1);
  while (eofs < partitions) {
    /* what is queued, without waiting (with a timeout, consume_batch_queue waits for a full batch);
       when nothing is, wait for one message */
    ssize_t n = rd_kafka_consume_batch_queue(queue, 0, msgs, BATCH);
    if (n < 0) {
      fprintf(stderr, "rdkafka-consume: consume: %s\n", rd_kafka_err2str(rd_kafka_last_error()));
      return 1;
    }
    if (n == 0) {
      msgs[0] = rd_kafka_consume_queue(queue, 100);
      if (msgs[0] != NULL) n = 1;
    }
    long before = records;
    for (ssize_t i = 0; i < n; i++) {
      rd_kafka_message_t *m = msgs[i];
      if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
        if (m->partition >= 0 && m->partition < partitions && !at_eof[m->partition]) {
          at_eof[m->partition] = 1;
          eofs++;
        }
      } else if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        fprintf(stderr, "rdkafka-consume: %s\n", rd_kafka_message_errstr(m));
        return 1;
      } else {
        records++;
        bytes += (long long)m->len;
        if (m->len > 0 && ((const char *)m->payload)[0] == '#') marked++;
      }
      rd_kafka_message_destroy(m);
    }
    if (records > before) {
      last = rdk_now_seconds();
      if (first < 0) first = last;
    }
  }
  double to_eof = rdk_now_seconds() - t0;
  printf("done %.6f %ld %lld %ld %.6f %.6f\n", last - t0, records, bytes, marked, to_eof, first < 0 ? -1.0 : first - t0);
  fflush(stdout);
  rdk_wait_line();

  rd_kafka_queue_destroy(queue);
  rd_kafka_topic_destroy(topic);
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  free(msgs);
  free(at_eof);
  return 0;
}
