/*
 * librdkafka's ACL admin APIs against a broker over SASL_PLAINTEXT (PLAIN), for tests (the Node
 * bindings expose none):
 *   rdkafka-acls <bootstrap> <user> <password> create   <restype> <name> <pattern> <principal> <host> <op> <perm>
 *   rdkafka-acls <bootstrap> <user> <password> describe <restype> <name> <pattern> <principal> <host> <op> <perm>
 *   rdkafka-acls <bootstrap> <user> <password> delete   <restype> <name> <pattern> <principal> <host> <op> <perm>
 * Codes are Kafka's (resource type, pattern type, operation, permission type); in a filter "-" is NULL.
 * Prints one JSON line: {"err":code,"msg":..,"acls":[[restype,name,pattern,principal,host,op,perm],..]}
 * (create: no acls; describe: the matching ones; delete: those deleted).
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

static const char *arg_or_null(const char *s) { return strcmp(s, "-") == 0 ? NULL : s; }

static void print_acls(const rd_kafka_AclBinding_t **acls, size_t n) {
  fputs(",\"acls\":[", stdout);
  for (size_t i = 0; i < n; i++) {
    const rd_kafka_AclBinding_t *a = acls[i];
    printf("%s[%d,", i == 0 ? "" : ",", (int)rd_kafka_AclBinding_restype(a));
    json_str(rd_kafka_AclBinding_name(a));
    printf(",%d,", (int)rd_kafka_AclBinding_resource_pattern_type(a));
    json_str(rd_kafka_AclBinding_principal(a));
    putchar(',');
    json_str(rd_kafka_AclBinding_host(a));
    printf(",%d,%d]", (int)rd_kafka_AclBinding_operation(a), (int)rd_kafka_AclBinding_permission_type(a));
  }
  putchar(']');
}

static void print_err(rd_kafka_resp_err_t err, const char *msg) {
  printf("{\"err\":%d,\"msg\":", (int)err);
  json_str(err == RD_KAFKA_RESP_ERR_NO_ERROR ? NULL : msg);
}

static void print_error_object(const rd_kafka_error_t *e) {
  if (e == NULL) print_err(RD_KAFKA_RESP_ERR_NO_ERROR, NULL);
  else print_err(rd_kafka_error_code(e), rd_kafka_error_string(e));
}

int main(int argc, char **argv) {
  if (argc != 12) {
    fprintf(stderr, "usage: %s <bootstrap> <user> <password> create|describe|delete <restype> <name> <pattern> <principal> <host> <op> <perm>\n", argv[0]);
    return 2;
  }
  char errstr[512];
  rd_kafka_t *rk = rdk_sasl_plain_producer(argv[0], argv[1], argv[2], argv[3]);
  if (rk == NULL) return 1;
  const char *cmd = argv[4];
  int restype = atoi(argv[5]), pattern = atoi(argv[7]), op = atoi(argv[10]), perm = atoi(argv[11]);
  const char *name = arg_or_null(argv[6]), *principal = arg_or_null(argv[8]), *host = arg_or_null(argv[9]);
  rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
  rd_kafka_AclBinding_t *b = strcmp(cmd, "create") == 0
                                 ? rd_kafka_AclBinding_new(restype, name, pattern, principal, host, op, perm, errstr, sizeof errstr)
                                 : rd_kafka_AclBindingFilter_new(restype, name, pattern, principal, host, op, perm, errstr, sizeof errstr);
  if (b == NULL) {
    fprintf(stderr, "invalid binding: %s\n", errstr);
    return 1;
  }
  if (strcmp(cmd, "create") == 0) rd_kafka_CreateAcls(rk, &b, 1, NULL, q);
  else if (strcmp(cmd, "describe") == 0) rd_kafka_DescribeAcls(rk, b, NULL, q);
  else if (strcmp(cmd, "delete") == 0) rd_kafka_DeleteAcls(rk, &b, 1, NULL, q);
  else {
    fprintf(stderr, "unknown command %s\n", cmd);
    return 2;
  }
  rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 20000);
  if (ev == NULL) {
    fprintf(stderr, "no result within 20 s\n");
    return 1;
  }
  if (rd_kafka_event_error(ev) != RD_KAFKA_RESP_ERR_NO_ERROR) {
    print_err(rd_kafka_event_error(ev), rd_kafka_event_error_string(ev));
    fputs(",\"acls\":[]", stdout);
  } else if (strcmp(cmd, "create") == 0) {
    size_t n = 0;
    const rd_kafka_acl_result_t **rs = rd_kafka_CreateAcls_result_acls(rd_kafka_event_CreateAcls_result(ev), &n);
    print_error_object(n > 0 ? rd_kafka_acl_result_error(rs[0]) : NULL);
    fputs(",\"acls\":[]", stdout);
  } else if (strcmp(cmd, "describe") == 0) {
    size_t n = 0;
    const rd_kafka_AclBinding_t **acls = rd_kafka_DescribeAcls_result_acls(rd_kafka_event_DescribeAcls_result(ev), &n);
    print_err(RD_KAFKA_RESP_ERR_NO_ERROR, NULL);
    print_acls(acls, n);
  } else {
    size_t n = 0, m = 0;
    const rd_kafka_DeleteAcls_result_response_t **rs = rd_kafka_DeleteAcls_result_responses(rd_kafka_event_DeleteAcls_result(ev), &n);
    print_error_object(n > 0 ? rd_kafka_DeleteAcls_result_response_error(rs[0]) : NULL);
    const rd_kafka_AclBinding_t **acls = n > 0 ? rd_kafka_DeleteAcls_result_response_matching_acls(rs[0], &m) : NULL;
    print_acls(acls, m);
  }
  puts("}");
  rd_kafka_event_destroy(ev);
  rd_kafka_AclBinding_destroy(b);
  rd_kafka_queue_destroy(q);
  rd_kafka_destroy(rk);
  return 0;
}
