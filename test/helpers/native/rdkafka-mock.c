/*
 * Hosts librdkafka's in-process mock cluster for tests of the gregor CLI against "another Kafka":
 *   rdkafka-mock <brokers> [topic:partitions ...]
 * prints "bootstrap <host:port,...>" once the cluster is up, then serves until stdin closes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

int main(int argc, char **argv) {
  char errstr[512];
  if (argc < 2) {
    fprintf(stderr, "usage: %s <brokers> [topic:partitions ...]\n", argv[0]);
    return 2;
  }
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "log_level", "3", errstr, sizeof errstr);
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
  if (rk == NULL) {
    fprintf(stderr, "rd_kafka_new: %s\n", errstr);
    return 1;
  }
  rd_kafka_mock_cluster_t *mc = rd_kafka_mock_cluster_new(rk, atoi(argv[1]));
  if (mc == NULL) {
    fprintf(stderr, "rd_kafka_mock_cluster_new failed\n");
    return 1;
  }
  for (int i = 2; i < argc; i++) {
    char *spec = strdup(argv[i]);
    char *colon = strrchr(spec, ':');
    int partitions = 1;
    if (colon != NULL) {
      *colon = '\0';
      partitions = atoi(colon + 1);
    }
    rd_kafka_resp_err_t err = rd_kafka_mock_topic_create(mc, spec, partitions, 1);
    if (err) {
      fprintf(stderr, "topic %s: %s\n", spec, rd_kafka_err2str(err));
      return 1;
    }
    free(spec);
  }
  printf("bootstrap %s\n", rd_kafka_mock_cluster_bootstraps(mc));
  fflush(stdout);
  char line[256];
  while (fgets(line, sizeof line, stdin) != NULL) {
  }
  rd_kafka_mock_cluster_destroy(mc);
  rd_kafka_destroy(rk);
  return 0;
}
