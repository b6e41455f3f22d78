/*
 * What the C librdkafka programs share: compat/bench/native/rdkafka-{produce,consume,e2e,mock-bench}.c
 * and test/helpers/native/rdkafka-mock.c are each compiled together with rdk-common.c
 * (compat/bench/native-build.ts does it, with -I for this folder and librdkafka's src/).
 *
 * A monotonic clock, the wait of the stdin/stdout line protocols, librdkafka configuration from
 * key=value arguments, and the host of librdkafka's in-process mock cluster.
 */
#ifndef RDK_COMMON_H
#define RDK_COMMON_H

#include "rdkafka.h"
#include "rdkafka_mock.h"

/* Seconds on the monotonic clock. */
double rdk_now_seconds(void);

/* Reads one line of stdin; exits with status 3 when stdin is closed (the parent has gone). */
void rdk_wait_line(void);

/* Sets one configuration property; returns 0, or -1 after printing "<prog>: <librdkafka's reason>". */
int rdk_conf_set(rd_kafka_conf_t *conf, const char *prog, const char *key, const char *value);

/* A producer handle (for admin calls) on a SASL_PLAINTEXT listener with PLAIN as `user`; NULL after
 * printing "<prog>: <librdkafka's reason>". */
rd_kafka_t *rdk_sasl_plain_producer(const char *prog, const char *bootstrap, const char *user, const char *password);

/* Splits a "key=value" argument in place (its '=' becomes '\0', so arg is the key); returns the
 * value, or NULL after printing "<prog>: not key=value: <arg>". */
char *rdk_split_key_value(char *arg, const char *prog);

/* Starts a mock cluster of `brokers` brokers inside a producer handle (log_level 3), stored in *rk;
 * returns it, or NULL after printing why. */
rd_kafka_mock_cluster_t *rdk_mock_cluster_start(int brokers, rd_kafka_t **rk);

/* Creates a topic for each "name[:partitions]" spec (1 partition without one, replication factor 1)
 * and, when `created` is not NULL, calls it with the new topic's name; returns 0, or -1 after
 * printing why (or when `created` returned non-zero). */
int rdk_mock_create_topics(rd_kafka_mock_cluster_t *mc, char **specs, int count,
                           int (*created)(rd_kafka_mock_cluster_t *mc, const char *name));

/* Prints "bootstrap <host:port,...>", serves until stdin closes, then destroys the cluster and rk. */
void rdk_mock_serve(rd_kafka_mock_cluster_t *mc, rd_kafka_t *rk);

#endif
