/*
 * librdkafka's admin config APIs against a broker, for tests (the Node bindings expose none):
 *   rdkafka-configs <bootstrap> describe <topic|broker> <name>
 *   rdkafka-configs <bootstrap> set <topic|broker> <name> <key> <value>     (IncrementalAlterConfigs SET)
 *   rdkafka-configs <bootstrap> delete <topic|broker> <name> <key>          (IncrementalAlterConfigs DELETE)
 * prints one JSON line: describe -> {"err":code,"msg":..,"configs":[{"name","value","source","readOnly",
 * "sensitive","default","synonyms":[[name,value,source],..]},..]}; set/delete -> {"err":code,"msg":..}.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdk-common.h" /* compat/bench/native/: built together with every librdkafka program here */

static void json_str(const char *s) {
  if (s == NULL) {
    fputs("null", stdout);
    return;
  }
  putchar('"');
  for (; *s != '\0'; s++) {
    if (*s == '"' || *s == '\\') printf("\\%c", *s);
    else if ((unsigned char)*s < 0x20) printf("\\u%04x", (unsigned char)*s);
    else putchar(*s);
  }
  putchar('"');
}

static rd_kafka_event_t *wait_result(rd_kafka_queue_t *q) {
  rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 20000);
  if (ev == NULL) {
    fprintf(stderr, "no result within 20 s\n");
    exit(1);
  }
  return ev;
}

/* Prints `{"err":<code>,"msg":<message or null>` for the request's error, else the first resource's. */
static void print_error(rd_kafka_event_t *ev, const rd_kafka_ConfigResource_t **rs, size_t n) {
  rd_kafka_resp_err_t err = rd_kafka_event_error(ev);
  const char *msg = rd_kafka_event_error_string(ev);
  if (err == RD_KAFKA_RESP_ERR_NO_ERROR && n > 0) {
    err = rd_kafka_ConfigResource_error(rs[0]);
    msg = rd_kafka_ConfigResource_error_string(rs[0]);
  }
  printf("{\"err\":%d,\"msg\":", (int)err);
  json_str(err == RD_KAFKA_RESP_ERR_NO_ERROR ? NULL : msg);
}

static void print_describe(rd_kafka_event_t *ev) {
  size_t n = 0;
  const rd_kafka_ConfigResource_t **rs = rd_kafka_DescribeConfigs_result_resources(rd_kafka_event_DescribeConfigs_result(ev), &n);
  print_error(ev, rs, n);
  fputs(",\"configs\":[", stdout);
  size_t cnt = 0;
  const rd_kafka_ConfigEntry_t **es = n > 0 ? rd_kafka_ConfigResource_configs(rs[0], &cnt) : NULL;
  for (size_t i = 0; i < cnt; i++) {
    const rd_kafka_ConfigEntry_t *e = es[i];
    fputs(i == 0 ? "{\"name\":" : ",{\"name\":", stdout);
    json_str(rd_kafka_ConfigEntry_name(e));
    fputs(",\"value\":", stdout);
    json_str(rd_kafka_ConfigEntry_value(e));
    printf(",\"source\":%d,\"readOnly\":%s,\"sensitive\":%s,\"default\":%s,\"synonyms\":[", (int)rd_kafka_ConfigEntry_source(e),
           rd_kafka_ConfigEntry_is_read_only(e) ? "true" : "false", rd_kafka_ConfigEntry_is_sensitive(e) ? "true" : "false",
           rd_kafka_ConfigEntry_is_default(e) ? "true" : "false");
    size_t scnt = 0;
    const rd_kafka_ConfigEntry_t **ss = rd_kafka_ConfigEntry_synonyms(e, &scnt);
    for (size_t j = 0; j < scnt; j++) {
      fputs(j == 0 ? "[" : ",[", stdout);
      json_str(rd_kafka_ConfigEntry_name(ss[j]));
      putchar(',');
      json_str(rd_kafka_ConfigEntry_value(ss[j]));
      printf(",%d]", (int)rd_kafka_ConfigEntry_source(ss[j]));
    }
    fputs("]}", stdout);
  }
  puts("]}");
}

static void print_alter(rd_kafka_event_t *ev) {
  size_t n = 0;
  const rd_kafka_ConfigResource_t **rs =
      rd_kafka_IncrementalAlterConfigs_result_resources(rd_kafka_event_IncrementalAlterConfigs_result(ev), &n);
  print_error(ev, rs, n);
  puts("}");
}

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: %s <bootstrap> describe|set|delete topic|broker <name> [key [value]]\n", argv[0]);
    return 2;
  }
  char errstr[512];
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  if (rd_kafka_conf_set(conf, "bootstrap.servers", argv[1], errstr, sizeof errstr) != RD_KAFKA_CONF_OK) {
    fprintf(stderr, "%s\n", errstr);
    return 1;
  }
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
  if (rk == NULL) {
    fprintf(stderr, "%s\n", errstr);
    return 1;
  }
  rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
  rd_kafka_ResourceType_t type = strcmp(argv[3], "topic") == 0 ? RD_KAFKA_RESOURCE_TOPIC : RD_KAFKA_RESOURCE_BROKER;
  rd_kafka_ConfigResource_t *res = rd_kafka_ConfigResource_new(type, argv[4]);
  if (strcmp(argv[2], "describe") == 0) {
    rd_kafka_DescribeConfigs(rk, &res, 1, NULL, q);
    rd_kafka_event_t *ev = wait_result(q);
    print_describe(ev);
    rd_kafka_event_destroy(ev);
  } else {
    int set = strcmp(argv[2], "set") == 0;
    if (argc < (set ? 7 : 6)) {
      fprintf(stderr, "set needs <key> <value>, delete needs <key>\n");
      return 2;
    }
    rd_kafka_error_t *e = rd_kafka_ConfigResource_add_incremental_config(
        res, argv[5], set ? RD_KAFKA_ALTER_CONFIG_OP_TYPE_SET : RD_KAFKA_ALTER_CONFIG_OP_TYPE_DELETE, set ? argv[6] : NULL);
    if (e != NULL) {
      fprintf(stderr, "%s\n", rd_kafka_error_string(e));
      return 1;
    }
    rd_kafka_IncrementalAlterConfigs(rk, &res, 1, NULL, q);
    rd_kafka_event_t *ev = wait_result(q);
    print_alter(ev);
    rd_kafka_event_destroy(ev);
  }
  rd_kafka_ConfigResource_destroy(res);
  rd_kafka_queue_destroy(q);
  rd_kafka_destroy(rk);
  return 0;
}
