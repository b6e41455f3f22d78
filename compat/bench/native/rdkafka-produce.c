/*
 * A librdkafka producer for the KAFKA-3565 and EOS benchmarks, in C so that the producing
 * application costs next to nothing and the figures are librdkafka's and the broker's (the
 * JavaScript client spends about a core calling produce() once per record). Built by
 * compat/bench/native-producer.ts against the librdkafka that scripts/setup-test-deps.sh builds for
 * @confluentinc/kafka-javascript.
 *
 *   rdkafka-produce <bootstrap> <topic> <warmup records> <timed records> <distinct values> [--option=N ...] [key=value ...]
 *
 * The key=value pairs are librdkafka configuration. Options (all optional; without them the program
 * behaves as it did for KAFKA-3565: 100-byte values, partition 0, no transactions):
 *   --value-bytes=N    value size (default 100)
 *   --partitions=P     records go round-robin to partitions 0..P-1 (default 1); the high watermark
 *                      reported is the sum over them
 *   --txn-ms=N         transactional (needs transactional.id): init_transactions once, then a
 *                      transaction is begun, records produced into it, and committed once N ms have
 *                      passed since it began (checked every 16 records), and so on; the last one is
 *                      committed before "warm" / "done"
 *   --txn-records=N    transactional: commit after every N records instead (or as well)
 *   --abort-every=K    with transactions: every K-th transaction (the K-th, 2K-th, ...) is flushed
 *                      (its records are written) and then aborted instead of committed; the first
 *                      byte of every value in it is '#', so a consumer can count them
 * Values are random uppercase letters; with <distinct values> 1 every record carries the same one
 * (as Kafka's ProducerPerformance sends), with more they cycle through that many (the same ones the
 * JavaScript variant of KAFKA-3565 sends at 100 bytes). Protocol on stdin/stdout, one line each, so
 * the parent can read CPU counters exactly around the timed part:
 *   -> "warm"                      after the warm-up records are delivered (and committed)
 *   <- any line                    start the timed part
 *   -> "done <seconds> <failed> <transactions> <commit seconds> <aborted records>"
 *                                  after the timed records are delivered (failed: delivery errors;
 *                                  the other three count the timed part only; commit seconds: time
 *                                  spent inside commit/abort, flush included)
 *   -> "hw <sum of high watermarks> <control records>"
 *                                  queried from the broker; control records: transaction markers
 *                                  written (one per partition per transaction, warm-up included)
 *   <- any line                    exit (so the parent can read this process's threads first)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdk-common.h"

#define PROG "rdkafka-produce"
#define MAX_PARTITIONS 1024

static long failed = 0;
static long value_bytes = 100;
static int partitions = 1;
static long txn_ms = 0, txn_records = 0, abort_every = 0;
static int transactional = 0;

/* transaction state */
static long txn_count = 0;       /* transactions ended (committed or aborted), all parts */
static long control_records = 0; /* markers: partitions touched per ended transaction */
static long aborted_records = 0; /* records in aborted transactions, all parts */
static double commit_seconds = 0;
static unsigned char touched[MAX_PARTITIONS];

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
  (void)rk;
  (void)opaque;
  if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    if (failed == 0) fprintf(stderr, "rdkafka-produce: delivery failed: %s\n", rd_kafka_err2str(m->err));
    failed++;
  }
}

static int txn_error(const char *what, rd_kafka_error_t *error) {
  if (error == NULL) return 0;
  fprintf(stderr, "rdkafka-produce: %s: %s\n", what, rd_kafka_error_string(error));
  rd_kafka_error_destroy(error);
  return -1;
}

static int begin_txn(rd_kafka_t *rk) {
  memset(touched, 0, sizeof touched);
  return txn_error("begin_transaction", rd_kafka_begin_transaction(rk));
}

/* Ends the open transaction: commits it, or (every abort_every-th) flushes and aborts it. */
static int end_txn(rd_kafka_t *rk, long records_in_txn) {
  double t0 = rdk_now_seconds();
  int abort = abort_every > 0 && (txn_count + 1) % abort_every == 0;
  if (abort) {
    rd_kafka_resp_err_t err = rd_kafka_flush(rk, 120000);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      fprintf(stderr, "rdkafka-produce: flush before abort: %s\n", rd_kafka_err2str(err));
      return -1;
    }
    if (txn_error("abort_transaction", rd_kafka_abort_transaction(rk, 120000)) != 0) return -1;
    aborted_records += records_in_txn;
  } else if (txn_error("commit_transaction", rd_kafka_commit_transaction(rk, 120000)) != 0) {
    return -1;
  }
  commit_seconds += rdk_now_seconds() - t0;
  txn_count++;
  for (int p = 0; p < partitions; p++) control_records += touched[p];
  return 0;
}

static int produce_all(rd_kafka_t *rk, rd_kafka_topic_t *topic, long n, char *values, char *aborted_values, long distinct) {
  long in_txn = 0;
  double txn_start = rdk_now_seconds();
  if (transactional && n > 0 && begin_txn(rk) != 0) return -1;
  for (long i = 0; i < n;) {
    int aborting = transactional && abort_every > 0 && (txn_count + 1) % abort_every == 0;
    char *v = (aborting ? aborted_values : values) + (i % distinct) * value_bytes;
    int32_t partition = (int32_t)(i % partitions);
    if (rd_kafka_produce(topic, partition, RD_KAFKA_MSG_F_COPY, v, (size_t)value_bytes, NULL, 0, NULL) == 0) {
      i++;
      if ((i & 8191) == 0) rd_kafka_poll(rk, 0);
      if (!transactional) continue;
      touched[partition] = 1;
      in_txn++;
      if (i < n && ((txn_records > 0 && in_txn >= txn_records) || (txn_ms > 0 && (i & 15) == 0 && rdk_now_seconds() - txn_start >= txn_ms / 1000.0))) {
        if (end_txn(rk, in_txn) != 0 || begin_txn(rk) != 0) return -1;
        in_txn = 0;
        txn_start = rdk_now_seconds();
      }
    } else if (rd_kafka_last_error() == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
      rd_kafka_poll(rk, 1);
    } else {
      fprintf(stderr, "rdkafka-produce: produce: %s\n", rd_kafka_err2str(rd_kafka_last_error()));
      return -1;
    }
  }
  if (transactional && in_txn > 0 && end_txn(rk, in_txn) != 0) return -1;
  while (rd_kafka_outq_len(rk) > 0) {
    rd_kafka_resp_err_t err = rd_kafka_flush(rk, 120000);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      fprintf(stderr, "rdkafka-produce: flush: %s\n", rd_kafka_err2str(err));
      return -1;
    }
  }
  return 0;
}

/* "--name=N": sets *out and returns 1 when arg is that option. */
static int option(const char *arg, const char *name, long *out) {
  size_t len = strlen(name);
  if (strncmp(arg, name, len) != 0 || arg[len] != '=') return 0;
  *out = atol(arg + len + 1);
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 6 || atol(argv[5]) < 1) {
    fprintf(stderr, "usage: %s <bootstrap> <topic> <warmup> <records> <distinct values> [--option=N ...] [key=value ...]\n", argv[0]);
    return 2;
  }
  long distinct = atol(argv[5]);
  char errstr[512];
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  if (rdk_conf_set(conf, PROG, "bootstrap.servers", argv[1]) != 0) return 2;
  for (int a = 6; a < argc; a++) {
    long parts = 0;
    if (strncmp(argv[a], "--", 2) == 0) {
      if (option(argv[a], "--value-bytes", &value_bytes) || option(argv[a], "--txn-ms", &txn_ms) || option(argv[a], "--txn-records", &txn_records) || option(argv[a], "--abort-every", &abort_every)) continue;
      if (option(argv[a], "--partitions", &parts)) {
        partitions = (int)parts;
        continue;
      }
      fprintf(stderr, "rdkafka-produce: unknown option %s\n", argv[a]);
      return 2;
    }
    const char *value = rdk_split_key_value(argv[a], PROG);
    if (value == NULL) return 2;
    if (strcmp(argv[a], "transactional.id") == 0) transactional = 1;
    if (rdk_conf_set(conf, PROG, argv[a], value) != 0) return 2;
  }
  if (value_bytes < 1 || partitions < 1 || partitions > MAX_PARTITIONS || txn_ms < 0 || txn_records < 0 || abort_every < 0) {
    fprintf(stderr, "rdkafka-produce: bad option value\n");
    return 2;
  }
  if (transactional != (txn_ms > 0 || txn_records > 0)) {
    fprintf(stderr, "rdkafka-produce: transactional.id goes with --txn-ms or --txn-records, and they with it\n");
    return 2;
  }
  rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
  if (rk == NULL) {
    fprintf(stderr, "rdkafka-produce: %s\n", errstr);
    return 2;
  }
  rd_kafka_topic_t *topic = rd_kafka_topic_new(rk, argv[2], NULL);
  if (transactional && txn_error("init_transactions", rd_kafka_init_transactions(rk, 60000)) != 0) return 1;

  char *values = malloc((size_t)distinct * (size_t)value_bytes);
  char *aborted_values = malloc((size_t)distinct * (size_t)value_bytes);
  unsigned int x = 987654321u;
  for (long i = 0; i < distinct * value_bytes; i++) {
    x = (x * 1103515245u + 12345u) & 0x7fffffffu;
    values[i] = (char)('A' + x % 26);
  }
  memcpy(aborted_values, values, (size_t)distinct * (size_t)value_bytes);
  for (long d = 0; d < distinct; d++) aborted_values[d * value_bytes] = '#';

  if (produce_all(rk, topic, atol(argv[3]), values, aborted_values, distinct) != 0 || failed > 0) return 1;
  printf("warm\n");
  fflush(stdout);
  rdk_wait_line();

  long txn0 = txn_count, aborted0 = aborted_records;
  commit_seconds = 0;
  double t0 = rdk_now_seconds();
  if (produce_all(rk, topic, atol(argv[4]), values, aborted_values, distinct) != 0) return 1;
  double seconds = rdk_now_seconds() - t0;
  printf("done %.6f %ld %ld %.6f %ld\n", seconds, failed, txn_count - txn0, commit_seconds, aborted_records - aborted0);
  fflush(stdout);

  long long high_sum = 0;
  for (int p = 0; p < partitions; p++) {
    int64_t low = -1, high = -1;
    rd_kafka_resp_err_t err = rd_kafka_query_watermark_offsets(rk, argv[2], p, &low, &high, 10000);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      fprintf(stderr, "rdkafka-produce: watermarks: %s\n", rd_kafka_err2str(err));
      return 1;
    }
    high_sum += high;
  }
  printf("hw %lld %ld\n", high_sum, control_records);
  fflush(stdout);
  rdk_wait_line();

  rd_kafka_topic_destroy(topic);
  rd_kafka_destroy(rk);
  free(values);
  free(aborted_values);
  return 0;
}
