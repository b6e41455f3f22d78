/*
 * A librdkafka producer for the KAFKA-3565 benchmark, in C so that the producing application costs
 * next to nothing and the figures are librdkafka's and the broker's (the JavaScript client spends
 * about a core calling produce() once per record). Built by compat/bench/kafka-3565.ts against the
 * librdkafka that scripts/setup-test-deps.sh builds for @confluentinc/kafka-javascript.
 *
 *   rdkafka-produce <bootstrap> <topic> <warmup records> <timed records> <distinct values> [key=value ...]
 *
 * The key=value pairs are librdkafka configuration. Values are 100 random uppercase letters; with
 * <distinct values> 1 every record carries the same one (as Kafka's ProducerPerformance sends), with
 * more they cycle through that many (the same ones the JavaScript variant sends). Protocol on stdin/stdout, one line
 * each, so the parent can read CPU counters exactly around the timed part:
 *   -> "warm"                      after the warm-up records are delivered
 *   <- any line                    start the timed part
 *   -> "done <seconds> <failed>"   after the timed records are delivered (failed: delivery errors)
 *   -> "hw <high watermark>"       partition 0's high watermark, queried from the broker
 *   <- any line                    exit (so the parent can read this process's threads first)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rdkafka.h"

#define VALUE_BYTES 100

static long failed = 0;

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
  (void)rk;
  (void)opaque;
  if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    if (failed == 0) fprintf(stderr, "rdkafka-produce: delivery failed: %s\n", rd_kafka_err2str(m->err));
    failed++;
  }
}

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int produce_all(rd_kafka_t *rk, rd_kafka_topic_t *topic, long n, char *values, long distinct) {
  for (long i = 0; i < n;) {
    char *v = values + (i % distinct) * VALUE_BYTES;
    if (rd_kafka_produce(topic, 0, RD_KAFKA_MSG_F_COPY, v, VALUE_BYTES, NULL, 0, NULL) == 0) {
      i++;
      if ((i & 8191) == 0) rd_kafka_poll(rk, 0);
    } else if (rd_kafka_last_error() == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
      rd_kafka_poll(rk, 1);
    } else {
      fprintf(stderr, "rdkafka-produce: produce: %s\n", rd_kafka_err2str(rd_kafka_last_error()));
      return -1;
    }
  }
  while (rd_kafka_outq_len(rk) > 0) {
    rd_kafka_resp_err_t err = rd_kafka_flush(rk, 120000);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      fprintf(stderr, "rdkafka-produce: flush: %s\n", rd_kafka_err2str(err));
      return -1;
    }
  }
  return 0;
}

static void wait_line(void) {
  char line[64];
  if (fgets(line, sizeof line, stdin) == NULL) exit(3);
}

int main(int argc, char **argv) {
  if (argc < 6 || atol(argv[5]) < 1) {
    fprintf(stderr, "usage: %s <bootstrap> <topic> <warmup> <records> <distinct values> [key=value ...]\n", argv[0]);
    return 2;
  }
  long distinct = atol(argv[5]);
  char errstr[512];
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  if (rd_kafka_conf_set(conf, "bootstrap.servers", argv[1], errstr, sizeof errstr) != RD_KAFKA_CONF_OK) {
    fprintf(stderr, "rdkafka-produce: %s\n", errstr);
    return 2;
  }
  for (int a = 6; a < argc; a++) {
    char *eq = strchr(argv[a], '=');
    if (eq == NULL) {
      fprintf(stderr, "rdkafka-produce: not key=value: %s\n", argv[a]);
      return 2;
    }
    *eq = '\0';
    if (rd_kafka_conf_set(conf, argv[a], eq + 1, errstr, sizeof errstr) != RD_KAFKA_CONF_OK) {
      fprintf(stderr, "rdkafka-produce: %s\n", errstr);
      return 2;
    }
  }
  rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
  if (rk == NULL) {
    fprintf(stderr, "rdkafka-produce: %s\n", errstr);
    return 2;
  }
  rd_kafka_topic_t *topic = rd_kafka_topic_new(rk, argv[2], NULL);

  char *values = malloc((size_t)distinct * VALUE_BYTES);
  unsigned int x = 987654321u;
  for (long i = 0; i < distinct * VALUE_BYTES; i++) {
    x = (x * 1103515245u + 12345u) & 0x7fffffffu;
    values[i] = (char)('A' + x % 26);
  }

  if (produce_all(rk, topic, atol(argv[3]), values, distinct) != 0 || failed > 0) return 1;
  printf("warm\n");
  fflush(stdout);
  wait_line();

  double t0 = now_seconds();
  if (produce_all(rk, topic, atol(argv[4]), values, distinct) != 0) return 1;
  double seconds = now_seconds() - t0;
  printf("done %.6f %ld\n", seconds, failed);
  fflush(stdout);

  int64_t low = -1, high = -1;
  rd_kafka_resp_err_t err = rd_kafka_query_watermark_offsets(rk, argv[2], 0, &low, &high, 10000);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    fprintf(stderr, "rdkafka-produce: watermarks: %s\n", rd_kafka_err2str(err));
    return 1;
  }
  printf("hw %lld\n", (long long)high);
  fflush(stdout);
  wait_line();

  rd_kafka_topic_destroy(topic);
  rd_kafka_destroy(rk);
  free(values);
  return 0;
}
