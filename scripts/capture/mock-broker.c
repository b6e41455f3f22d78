/*
 * Minimal Kafka-protocol broker for frame captures: librdkafka's in-memory mock cluster
 * (Debian librdkafka-dev 2.0.2). Compiled on the fly by scripts/capture/capture-all.mjs:
 *   gcc -O1 -o mock-broker mock-broker.c -lrdkafka
 * Usage: mock-broker [topic:partitions ...]   (default: golden:3)
 * Prints the bootstrap address ("127.0.0.1:PORT") on stdout, then sleeps until killed.
 */
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t run = 1;
static void stop(int sig) { (void)sig; run = 0; }

int main(int argc, char **argv) {
        char errstr[512];
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        /* The mock cluster needs a host rd_kafka_t; it never connects anywhere itself. */
        rd_kafka_conf_set(conf, "bootstrap.servers", "", errstr, sizeof(errstr));
        rd_kafka_conf_set(conf, "log_level", "3", errstr, sizeof(errstr));
        rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
        if (!rk) {
                fprintf(stderr, "mock-broker: rd_kafka_new: %s\n", errstr);
                return 1;
        }
        rd_kafka_mock_cluster_t *mc = rd_kafka_mock_cluster_new(rk, 1);
        if (!mc) {
                fprintf(stderr, "mock-broker: rd_kafka_mock_cluster_new failed\n");
                return 1;
        }
        if (argc < 2) {
                rd_kafka_mock_topic_create(mc, "golden", 3, 1);
        }
        for (int i = 1; i < argc; i++) {
                char name[256];
                int parts = 1;
                const char *colon = strchr(argv[i], ':');
                size_t len = colon ? (size_t)(colon - argv[i]) : strlen(argv[i]);
                if (len >= sizeof(name)) len = sizeof(name) - 1;
                memcpy(name, argv[i], len);
                name[len] = '\0';
                if (colon) parts = atoi(colon + 1);
                rd_kafka_resp_err_t err = rd_kafka_mock_topic_create(mc, name, parts, 1);
                if (err) {
                        fprintf(stderr, "mock-broker: topic %s: %s\n", name, rd_kafka_err2str(err));
                        return 1;
                }
        }
        signal(SIGINT, stop);
        signal(SIGTERM, stop);
        printf("%s\n", rd_kafka_mock_cluster_bootstraps(mc));
        fflush(stdout);
        while (run) usleep(100 * 1000);
        rd_kafka_mock_cluster_destroy(mc);
        rd_kafka_destroy(rk);
        return 0;
}
