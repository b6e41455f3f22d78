/* The shared part of the C librdkafka programs; see rdk-common.h. */
#include "rdk-common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double rdk_now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void rdk_wait_line(void) {
  char line[64];
  if (fgets(line, sizeof line, stdin) == NULL) exit(3);
}

int rdk_conf_set(rd_kafka_conf_t *conf, const char *prog, const char *key, const char *value) {
  char errstr[512];
  if (rd_kafka_conf_set(conf, key, value, errstr, sizeof errstr) != RD_KAFKA_CONF_OK) {
    fprintf(stderr, "%s: %s\n", prog, errstr);
    return -1;
  }
  return 0;
}

rd_kafka_t *rdk_sasl_plain_producer(const char *prog, const char *bootstrap, const char *user, const char *password) {
  char errstr[512];
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  const char *keys[] = {"bootstrap.servers", "security.protocol", "sasl.mechanisms", "sasl.username", "sasl.password"};
  const char *vals[] = {bootstrap, "sasl_plaintext", "PLAIN", user, password};
  for (int i = 0; i < 5; i++)
    if (rdk_conf_set(conf, prog, keys[i], vals[i]) != 0) {
      rd_kafka_conf_destroy(conf);
      return NULL;
    }
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
  if (rk == NULL) fprintf(stderr, "%s: rd_kafka_new: %s\n", prog, errstr);
  return rk;
}

char *rdk_split_key_value(char *arg, const char *prog) {
  char *eq = strchr(arg, '=');
  if (eq == NULL) {
    fprintf(stderr, "%s: not key=value: %s\n", prog, arg);
    return NULL;
  }
  *eq = '\0';
  return eq + 1;
}

rd_kafka_mock_cluster_t *rdk_mock_cluster_start(int brokers, rd_kafka_t **rk) {
  char errstr[512];
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "log_level", "3", errstr, sizeof errstr);
  *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
  if (*rk == NULL) {
    fprintf(stderr, "rd_kafka_new: %s\n", errstr);
    return NULL;
  }
  rd_kafka_mock_cluster_t *mc = rd_kafka_mock_cluster_new(*rk, brokers);
  if (mc == NULL) fprintf(stderr, "rd_kafka_mock_cluster_new failed\n");
  return mc;
}

int rdk_mock_create_topics(rd_kafka_mock_cluster_t *mc, char **specs, int count,
                           int (*created)(rd_kafka_mock_cluster_t *mc, const char *name)) {
  for (int i = 0; i < count; i++) {
    char *name = strdup(specs[i]);
    char *colon = strrchr(name, ':');
    int partitions = 1;
    if (colon != NULL) {
      *colon = '\0';
      partitions = atoi(colon + 1);
    }
    rd_kafka_resp_err_t err = rd_kafka_mock_topic_create(mc, name, partitions, 1);
    int failed = err != RD_KAFKA_RESP_ERR_NO_ERROR;
    if (failed) fprintf(stderr, "topic %s: %s\n", name, rd_kafka_err2str(err));
    else if (created != NULL) failed = created(mc, name) != 0;
    free(name);
    if (failed) return -1;
  }
  return 0;
}

void rdk_mock_serve(rd_kafka_mock_cluster_t *mc, rd_kafka_t *rk) {
  printf("bootstrap %s\n", rd_kafka_mock_cluster_bootstraps(mc));
  fflush(stdout);
  char line[256];
  while (fgets(line, sizeof line, stdin) != NULL) {
  }
  rd_kafka_mock_cluster_destroy(mc);
  rd_kafka_destroy(rk);
}
