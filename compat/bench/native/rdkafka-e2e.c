/*
 * End-to-end latency as Kafka's EndToEndLatency tool (and compat/bench/e2e-latency.ts) measures it,
 * in C for compat/bench/mock-vs-gregor.ts: produce one record, wait for its delivery report, then
 * wait until a consumer has it; one record at a time. In C so that the client adds little of its own
 * (no event loop between librdkafka and the clock). Built by compat/bench/mock-vs-gregor.ts like
 * rdkafka-produce.c (against the librdkafka that scripts/setup-test-deps.sh builds).
 *
 *   rdkafka-e2e <bootstrap> <topic> <warmup rounds> <rounds> <max seconds> [key=value | p.key=value | c.key=value ...]
 *
 * key=value goes to both clients, p.key=value to the producer only, c.key=value to the consumer only
 * (defaults: producer acks=all, linger.ms=0; consumer assigned to partition 0 at the partition's
 * high watermark, queried first, so that it sees every record produced after "ready").
 * Values are 100 bytes: the round number in 10 digits, then 'x's.
 * Protocol on stdin/stdout, one line each:
 *   -> "ready"                     both clients up, the consumer assigned
 *   <- any line                    run the warm-up rounds (at most 3 s of them, or
 *                                  $RDKAFKA_E2E_WARMUP_MAX_S)
 *   -> "warm"
 *   <- any line                    run the timed rounds: <rounds>, or fewer once <max seconds> have passed
 *   -> "done <rounds> <seconds> <latencies µs, comma-separated> <acks µs, comma-separated> <starts µs, comma-separated>"
 *                                  latency: produce() -> the consumer has the record; ack: produce()
 *                                  -> delivery report; start: when produce() was called, CLOCK_MONOTONIC
 *                                  (the clock Node's process.hrtime and performance.now read, so a
 *                                  broker's own timestamps can be set beside each round)
 *   <- any line                    exit (so the parent can read this process's threads first)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rdk-common.h"

#define PROG "rdkafka-e2e"

#define VALUE_BYTES 100
#define WAIT_S 10.0
#define WARMUP_MAX_S 3.0 /* the warm-up stops after this long even if rounds remain (env RDKAFKA_E2E_WARMUP_MAX_S) */

static int delivered = 0;
static rd_kafka_resp_err_t delivery_err = RD_KAFKA_RESP_ERR_NO_ERROR;

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
  (void)rk;
  (void)opaque;
  delivered = 1;
  delivery_err = m->err;
}

static int set(rd_kafka_conf_t *conf, const char *k, const char *v) { return rdk_conf_set(conf, PROG, k, v); }

static rd_kafka_t *producer, *consumer;
static rd_kafka_topic_t *ptopic;

/* One round: returns 0 and the two times in µs, or -1. */
static int one_round(long n, long *latency_us, long *ack_us, double *start_s) {
  char value[VALUE_BYTES];
  memset(value, 'x', sizeof value);
  char digits[24];
  snprintf(digits, sizeof digits, "%010ld", n);
  memcpy(value, digits, 10);
  delivered = 0;
  double t0 = rdk_now_seconds();
  *start_s = t0;
  if (rd_kafka_produce(ptopic, 0, RD_KAFKA_MSG_F_COPY, value, sizeof value, NULL, 0, NULL) != 0) {
    fprintf(stderr, "rdkafka-e2e: produce: %s\n", rd_kafka_err2str(rd_kafka_last_error()));
    return -1;
  }
  while (!delivered) {
    rd_kafka_poll(producer, 100);
    if (rdk_now_seconds() - t0 > WAIT_S) {
      fprintf(stderr, "rdkafka-e2e: round %ld: no delivery report within %.0f s\n", n, WAIT_S);
      return -1;
    }
  }
  if (delivery_err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    fprintf(stderr, "rdkafka-e2e: round %ld: delivery failed: %s\n", n, rd_kafka_err2str(delivery_err));
    return -1;
  }
  double tack = rdk_now_seconds();
  for (;;) {
    rd_kafka_message_t *m = rd_kafka_consumer_poll(consumer, 100);
    if (m != NULL) {
      int match = m->err == RD_KAFKA_RESP_ERR_NO_ERROR && m->len >= 10 && memcmp(m->payload, digits, 10) == 0;
      if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR && m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
        fprintf(stderr, "rdkafka-e2e: consumer: %s\n", rd_kafka_message_errstr(m));
        rd_kafka_message_destroy(m);
        return -1;
      }
      rd_kafka_message_destroy(m);
      if (match) break;
    }
    if (rdk_now_seconds() - t0 > WAIT_S) {
      fprintf(stderr, "rdkafka-e2e: round %ld: the consumer did not see the record within %.0f s\n", n, WAIT_S);
      return -1;
    }
  }
  double t1 = rdk_now_seconds();
  *latency_us = (long)((t1 - t0) * 1e6 + 0.5);
  *ack_us = (long)((tack - t0) * 1e6 + 0.5);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 6 || atol(argv[4]) < 1) {
    fprintf(stderr, "usage: %s <bootstrap> <topic> <warmup> <rounds> <max seconds> [key=value | p.key=value | c.key=value ...]\n", argv[0]);
    return 2;
  }
  long warmup = atol(argv[3]), rounds = atol(argv[4]);
  double max_seconds = atof(argv[5]);
  char errstr[512], group[64];
  snprintf(group, sizeof group, "rdkafka-e2e-%ld", (long)getpid());
  rd_kafka_conf_t *pconf = rd_kafka_conf_new(), *cconf = rd_kafka_conf_new();
  if (set(pconf, "bootstrap.servers", argv[1]) || set(pconf, "acks", "all") || set(pconf, "linger.ms", "0") || set(cconf, "bootstrap.servers", argv[1]) ||
      set(cconf, "group.id", group) || set(cconf, "enable.auto.commit", "false") || set(cconf, "enable.auto.offset.store", "false")) {
    return 2;
  }
  for (int a = 6; a < argc; a++) {
    const char *v = rdk_split_key_value(argv[a], PROG);
    if (v == NULL) return 2;
    const char *k = argv[a];
    int to_p = 1, to_c = 1;
    if (strncmp(k, "p.", 2) == 0) k += 2, to_c = 0;
    else if (strncmp(k, "c.", 2) == 0) k += 2, to_p = 0;
    if ((to_p && set(pconf, k, v)) || (to_c && set(cconf, k, v))) return 2;
  }
  rd_kafka_conf_set_dr_msg_cb(pconf, on_delivery);
  producer = rd_kafka_new(RD_KAFKA_PRODUCER, pconf, errstr, sizeof errstr);
  if (producer == NULL) {
    fprintf(stderr, "rdkafka-e2e: producer: %s\n", errstr);
    return 2;
  }
  consumer = rd_kafka_new(RD_KAFKA_CONSUMER, cconf, errstr, sizeof errstr);
  if (consumer == NULL) {
    fprintf(stderr, "rdkafka-e2e: consumer: %s\n", errstr);
    return 2;
  }
  rd_kafka_poll_set_consumer(consumer);
  ptopic = rd_kafka_topic_new(producer, argv[2], NULL);
  int64_t low = -1, high = -1;
  rd_kafka_resp_err_t err = rd_kafka_query_watermark_offsets(producer, argv[2], 0, &low, &high, 10000);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    fprintf(stderr, "rdkafka-e2e: watermarks: %s\n", rd_kafka_err2str(err));
    return 1;
  }
  rd_kafka_topic_partition_list_t *tps = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(tps, argv[2], 0)->offset = high;
  err = rd_kafka_assign(consumer, tps);
  rd_kafka_topic_partition_list_destroy(tps);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    fprintf(stderr, "rdkafka-e2e: assign: %s\n", rd_kafka_err2str(err));
    return 1;
  }
  long *lat = malloc(sizeof *lat * (size_t)rounds), *ack = malloc(sizeof *ack * (size_t)rounds);
  double *start = malloc(sizeof *start * (size_t)rounds), s;
  printf("ready\n");
  fflush(stdout);
  rdk_wait_line();

  long n = 0, l, a;
  const char *wmax = getenv("RDKAFKA_E2E_WARMUP_MAX_S");
  double warmup_max_s = wmax != NULL ? atof(wmax) : WARMUP_MAX_S;
  double w0 = rdk_now_seconds();
  for (long i = 0; i < warmup && (i == 0 || rdk_now_seconds() - w0 < warmup_max_s); i++, n++)
    if (one_round(n, &l, &a, &s) != 0) return 1;
  printf("warm\n");
  fflush(stdout);
  rdk_wait_line();

  double t0 = rdk_now_seconds();
  long done = 0;
  while (done < rounds && (done == 0 || rdk_now_seconds() - t0 < max_seconds)) {
    if (one_round(n++, &lat[done], &ack[done], &start[done]) != 0) return 1;
    done++;
  }
  double seconds = rdk_now_seconds() - t0;
  printf("done %ld %.6f ", done, seconds);
  for (long i = 0; i < done; i++) printf(i == 0 ? "%ld" : ",%ld", lat[i]);
  printf(" ");
  for (long i = 0; i < done; i++) printf(i == 0 ? "%ld" : ",%ld", ack[i]);
  printf(" ");
  for (long i = 0; i < done; i++) printf(i == 0 ? "%.0f" : ",%.0f", start[i] * 1e6);
  printf("\n");
  fflush(stdout);
  rdk_wait_line();

  rd_kafka_consumer_close(consumer);
  rd_kafka_destroy(consumer);
  rd_kafka_topic_destroy(ptopic);
  rd_kafka_destroy(producer);
  free(lat);
  free(ack);
  free(start);
  return 0;
}
