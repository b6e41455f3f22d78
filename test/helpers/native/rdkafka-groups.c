/*
 * librdkafka's DescribeConsumerGroups (ConsumerGroupDescribe first, DescribeGroups for classic groups)
 * over SASL_PLAINTEXT (PLAIN), for tests: the Node bindings' describeGroups crashes on a group answered
 * with an error (it makes a JS string of the NULL assignor name of such a group).
 *   rdkafka-groups <bootstrap> <user> <password> <group>...
 * Prints one line per group: "<group>\t<error code>\t<member count>\t<error message or empty>", or one
 * line "E\t<code>\t<message>" when the whole request failed.
 */
#include <stdio.h>

#include "rdk-common.h" /* compat/bench/native/: built together with every librdkafka program here */

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: %s <bootstrap> <user> <password> <group>...\n", argv[0]);
    return 2;
  }
  rd_kafka_t *rk = rdk_sasl_plain_producer(argv[0], argv[1], argv[2], argv[3]);
  if (rk == NULL) return 1;
  rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
  rd_kafka_DescribeConsumerGroups(rk, (const char **)&argv[4], (size_t)(argc - 4), NULL, q);
  rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 20000);
  if (ev == NULL) {
    fprintf(stderr, "no result within 20 s\n");
    return 1;
  }
  if (rd_kafka_event_error(ev) != RD_KAFKA_RESP_ERR_NO_ERROR) {
    printf("E\t%d\t%s\n", (int)rd_kafka_event_error(ev), rd_kafka_event_error_string(ev));
  } else {
    size_t n = 0;
    const rd_kafka_ConsumerGroupDescription_t **groups =
        rd_kafka_DescribeConsumerGroups_result_groups(rd_kafka_event_DescribeConsumerGroups_result(ev), &n);
    for (size_t i = 0; i < n; i++) {
      const rd_kafka_error_t *e = rd_kafka_ConsumerGroupDescription_error(groups[i]);
      printf("%s\t%d\t%zu\t%s\n", rd_kafka_ConsumerGroupDescription_group_id(groups[i]), e == NULL ? 0 : (int)rd_kafka_error_code(e),
             rd_kafka_ConsumerGroupDescription_member_count(groups[i]), e == NULL ? "" : rd_kafka_error_string(e));
    }
  }
  rd_kafka_event_destroy(ev);
  rd_kafka_queue_destroy(q);
  rd_kafka_destroy(rk);
  return 0;
}
