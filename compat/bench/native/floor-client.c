/*
 * The client side of compat/bench/e2e-floor.ts shaped like librdkafka's: the producer and the consumer
 * each block in their own thread on their own socket (as librdkafka's broker threads do), so each of
 * the server's two answers per round wakes a different sleeping thread, as it does under rdkafka-e2e.
 * Speaks e2e-floor's framing (a 4-byte big-endian length, then a type byte 'P' or 'F', padding).
 *
 *   floor-client <port> <warmup rounds> <rounds> <produce bytes> <fetch bytes> <produce answer bytes> <fetch answer bytes>
 *   -> "warm"                          after the warm-up rounds
 *   <- any line                        run the timed rounds
 *   -> "done <latencies µs, comma-separated>"
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rdk-common.h"

static int consumer_fd;
static size_t fetch_bytes, fetch_answer_bytes;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static long fetched = 0; /* fetch answers received */

static int dial(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    perror("floor-client: connect");
    exit(1);
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

static void read_exact(int fd, char *buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = read(fd, buf + got, n - got);
    if (r <= 0) {
      fprintf(stderr, "floor-client: read: %s\n", r == 0 ? "closed" : "error");
      exit(1);
    }
    got += (size_t)r;
  }
}

static void write_all(int fd, const char *buf, size_t n) {
  size_t put = 0;
  while (put < n) {
    ssize_t w = write(fd, buf + put, n - put);
    if (w <= 0) {
      perror("floor-client: write");
      exit(1);
    }
    put += (size_t)w;
  }
}

/* a frame of `total` bytes: length prefix, type, padding */
static char *frame(char type, size_t total) {
  char *b = malloc(total);
  memset(b, 'a', total);
  uint32_t len = htonl((uint32_t)(total - 4));
  memcpy(b, &len, 4);
  b[4] = type;
  return b;
}

/* the consumer's thread: read an answer, send the next long-poll fetch at once, tell the main thread */
static void *consume(void *arg) {
  (void)arg;
  char *fetch = frame('F', fetch_bytes), *answer = malloc(fetch_answer_bytes);
  write_all(consumer_fd, fetch, fetch_bytes);
  for (;;) {
    read_exact(consumer_fd, answer, fetch_answer_bytes);
    write_all(consumer_fd, fetch, fetch_bytes);
    pthread_mutex_lock(&mu);
    fetched++;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 8) {
    fprintf(stderr, "usage: %s <port> <warmup> <rounds> <produce bytes> <fetch bytes> <produce answer bytes> <fetch answer bytes>\n", argv[0]);
    return 2;
  }
  int port = atoi(argv[1]);
  long warmup = atol(argv[2]), rounds = atol(argv[3]);
  size_t produce_bytes = (size_t)atol(argv[4]), produce_answer_bytes = (size_t)atol(argv[6]);
  fetch_bytes = (size_t)atol(argv[5]);
  fetch_answer_bytes = (size_t)atol(argv[7]);
  int producer_fd = dial(port);
  consumer_fd = dial(port);
  char *produce = frame('P', produce_bytes), *answer = malloc(produce_answer_bytes);
  long *lat = malloc(sizeof *lat * (size_t)(rounds > 0 ? rounds : 1));
  pthread_t th;
  pthread_create(&th, NULL, consume, NULL);
  for (long i = 0; i < warmup + rounds; i++) {
    if (i == warmup) {
      printf("warm\n");
      fflush(stdout);
      rdk_wait_line();
    }
    double t0 = rdk_now_seconds();
    write_all(producer_fd, produce, produce_bytes);
    read_exact(producer_fd, answer, produce_answer_bytes);
    pthread_mutex_lock(&mu);
    while (fetched <= i) pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    if (i >= warmup) lat[i - warmup] = (long)((rdk_now_seconds() - t0) * 1e6 + 0.5);
  }
  printf("done ");
  for (long i = 0; i < rounds; i++) printf(i == 0 ? "%ld" : ",%ld", lat[i]);
  printf("\n");
  fflush(stdout);
  return 0;
}
