/*
 * A librdkafka 2.15 share consumer (KIP-932, rd_kafka_share_*) for tests:
 *   rdkafka-share <bootstrap> <group> <topic> [key=value librdkafka config ...]
 * Explicit acknowledgement. Each record is acknowledged by what its value starts with:
 *   "release-once" -> RELEASE on its first delivery, ACCEPT after; "release" -> always RELEASE;
 *   "reject" -> REJECT; "hold" (first delivery) -> neither it nor the rest of its batch is acknowledged and the
 *   consumer stops polling (a stalled member: its records stay acquired until their locks expire);
 *   anything else -> ACCEPT.
 * Prints "R <partition> <offset> <delivery count> <ack: A|R|X|H>" per record, flushed at once, and
 * "E <code> <reason>" per poll error. Runs until stdin closes, then closes the consumer (which sends
 * the pending acknowledgements and leaves the group) and prints "CLOSED".
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rdk-common.h" /* compat/bench/native/: built together with every librdkafka program here */

static int stdin_closed(void) {
  struct pollfd p = {0, POLLIN, 0};
  if (poll(&p, 1, 0) <= 0) return 0;
  char buf[256];
  return read(0, buf, sizeof buf) <= 0;
}

static int starts_with(const rd_kafka_message_t *m, const char *prefix) {
  size_t n = strlen(prefix);
  return m->payload != NULL && m->len >= n && memcmp(m->payload, prefix, n) == 0;
}

int main(int argc, char **argv) {
  const char *prog = "rdkafka-share";
  if (argc < 4) {
    fprintf(stderr, "usage: %s <bootstrap> <group> <topic> [key=value ...]\n", prog);
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  if (rdk_conf_set(conf, prog, "bootstrap.servers", argv[1]) != 0 || rdk_conf_set(conf, prog, "group.id", argv[2]) != 0 ||
      rdk_conf_set(conf, prog, "share.acknowledgement.mode", "explicit") != 0)
    return 2;
  for (int i = 4; i < argc; i++) {
    char *value = rdk_split_key_value(argv[i], prog);
    if (value == NULL || rdk_conf_set(conf, prog, argv[i], value) != 0) return 2;
  }
  char errstr[512];
  rd_kafka_share_t *rks = rd_kafka_share_consumer_new(conf, errstr, sizeof errstr);
  if (rks == NULL) {
    fprintf(stderr, "%s: %s\n", prog, errstr);
    return 1;
  }
  rd_kafka_topic_partition_list_t *topics = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(topics, argv[3], RD_KAFKA_PARTITION_UA);
  rd_kafka_resp_err_t err = rd_kafka_share_subscribe(rks, topics);
  rd_kafka_topic_partition_list_destroy(topics);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    fprintf(stderr, "%s: subscribe: %s\n", prog, rd_kafka_err2str(err));
    return 1;
  }
  printf("SUBSCRIBED\n");
  int holding = 0;
  while (!stdin_closed()) {
    if (holding) {
      usleep(100 * 1000);
      continue;
    }
    rd_kafka_messages_t *batch = NULL;
    rd_kafka_error_t *error = rd_kafka_share_poll(rks, 200, &batch);
    if (error != NULL) {
      printf("E %d %s\n", (int)rd_kafka_error_code(error), rd_kafka_error_string(error));
      rd_kafka_error_destroy(error);
    }
    size_t n = batch == NULL ? 0 : rd_kafka_messages_count(batch);
    for (size_t i = 0; i < n; i++) {
      rd_kafka_message_t *m = rd_kafka_messages_get(batch, i);
      if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        printf("E %d %s\n", (int)m->err, rd_kafka_message_errstr(m));
        continue;
      }
      int count = (int)rd_kafka_message_delivery_count(m);
      char ack = 'A';
      rd_kafka_share_AcknowledgeType_t type = RD_KAFKA_SHARE_ACKNOWLEDGE_TYPE_ACCEPT;
      if (holding || (starts_with(m, "hold") && count <= 1)) {
        ack = 'H';
        holding = 1;
      } else if (starts_with(m, "release-once")) {
        if (count <= 1) ack = 'R', type = RD_KAFKA_SHARE_ACKNOWLEDGE_TYPE_RELEASE;
      } else if (starts_with(m, "release")) {
        ack = 'R', type = RD_KAFKA_SHARE_ACKNOWLEDGE_TYPE_RELEASE;
      } else if (starts_with(m, "reject")) {
        ack = 'X', type = RD_KAFKA_SHARE_ACKNOWLEDGE_TYPE_REJECT;
      }
      printf("R %d %lld %d %c\n", (int)m->partition, (long long)m->offset, count, ack);
      if (ack != 'H') {
        rd_kafka_resp_err_t aerr = rd_kafka_share_acknowledge_type(rks, m, type);
        if (aerr != RD_KAFKA_RESP_ERR_NO_ERROR) printf("E %d acknowledge: %s\n", (int)aerr, rd_kafka_err2str(aerr));
      }
    }
    rd_kafka_messages_destroy(batch);
  }
  if (!holding) {
    rd_kafka_error_t *error = rd_kafka_share_consumer_close(rks);
    if (error != NULL) {
      printf("E %d close: %s\n", (int)rd_kafka_error_code(error), rd_kafka_error_string(error));
      rd_kafka_error_destroy(error);
    }
    rd_kafka_share_destroy(rks);
  }
  printf("CLOSED\n");
  return 0;
}
