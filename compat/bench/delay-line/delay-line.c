/*
 * delay-line: holds every packet of an NFQUEUE queue for a fixed time, then accepts it.
 *
 *   delay-line -q <queue-num> -d <delay ms> [-n <max queued packets>]
 *
 * Used by gregor's KAFKA-200 benchmark (compat/bench/kafka-200.ts) on kernels without sch_netem:
 * an nftables rule in a network namespace sends the veth's outgoing packets to the queue
 * (`queue num N`), this program reads the queue with libnetfilter_queue in metadata-copy mode,
 * stamps each packet id with its arrival time and gives the ACCEPT verdict once the delay has
 * passed. Packets are real and held, so TCP on both ends sees the added round-trip time and its
 * windows limit throughput as on a long link. The delay is constant, so packets leave in the order
 * they came (one batch verdict releases every packet that is due).
 *
 * NFQUEUE belongs to a network namespace: run one instance inside each namespace whose rule
 * queues packets. Prints "ready queue=N delay_ms=D" on stdout once bound; on SIGTERM/SIGINT it
 * releases what it holds and prints its counters on stderr.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/netfilter.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <libnetfilter_queue/libnetfilter_queue.h>

struct held {
  uint32_t id;
  uint64_t due_ns;
};

static struct held *ring;
static size_t ring_cap, ring_head, ring_len;
static uint64_t delay_ns;
static uint64_t n_packets, n_overflow, n_enobufs, max_held;
static volatile sig_atomic_t stop;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int on_packet(struct nfq_q_handle *qh, struct nfgenmsg *msg, struct nfq_data *nfa, void *data) {
  (void)msg;
  (void)data;
  struct nfqnl_msg_packet_hdr *ph = nfq_get_msg_packet_hdr(nfa);
  if (ph == NULL) return 0;
  uint32_t id = ntohl(ph->packet_id);
  n_packets++;
  if (ring_len == ring_cap) {
    /* cannot hold it: let it through at once rather than lose it */
    n_overflow++;
    return nfq_set_verdict(qh, id, NF_ACCEPT, 0, NULL);
  }
  ring[(ring_head + ring_len) % ring_cap] = (struct held){ id, now_ns() + delay_ns };
  ring_len++;
  if (ring_len > max_held) max_held = ring_len;
  return 0;
}

/* Accepts every held packet whose time has come (one batch verdict up to the last due id). */
static void release_due(struct nfq_q_handle *qh, int all) {
  uint64_t t = now_ns();
  int any = 0;
  uint32_t last = 0;
  while (ring_len > 0 && (all || ring[ring_head].due_ns <= t)) {
    last = ring[ring_head].id;
    any = 1;
    ring_head = (ring_head + 1) % ring_cap;
    ring_len--;
  }
  if (any) nfq_set_verdict_batch(qh, last, NF_ACCEPT);
}

static void on_signal(int sig) {
  (void)sig;
  stop = 1;
}

int main(int argc, char **argv) {
  int queue = 0;
  double delay_ms = 25;
  long cap = 1 << 20;
  int opt;
  while ((opt = getopt(argc, argv, "q:d:n:")) != -1) {
    switch (opt) {
      case 'q': queue = atoi(optarg); break;
      case 'd': delay_ms = atof(optarg); break;
      case 'n': cap = atol(optarg); break;
      default:
        fprintf(stderr, "usage: %s -q <queue-num> -d <delay ms> [-n <max queued packets>]\n", argv[0]);
        return 2;
    }
  }
  if (delay_ms < 0 || cap < 1) {
    fprintf(stderr, "delay-line: bad -d or -n\n");
    return 2;
  }
  delay_ns = (uint64_t)(delay_ms * 1e6);
  ring_cap = (size_t)cap;
  ring = calloc(ring_cap, sizeof *ring);
  if (ring == NULL) return 1;

  struct nfq_handle *h = nfq_open();
  if (h == NULL) { perror("delay-line: nfq_open"); return 1; }
  struct nfq_q_handle *qh = nfq_create_queue(h, (uint16_t)queue, on_packet, NULL);
  if (qh == NULL) { perror("delay-line: nfq_create_queue"); return 1; }
  if (nfq_set_mode(qh, NFQNL_COPY_META, 0) < 0) { perror("delay-line: nfq_set_mode"); return 1; }
  if (nfq_set_queue_maxlen(qh, (uint32_t)(cap > 1000000 ? 1000000 : cap)) < 0) perror("delay-line: nfq_set_queue_maxlen");
  /* hand over GSO packets whole (no segmentation in the kernel just for us) */
  if (nfq_set_queue_flags(qh, NFQA_CFG_F_GSO, NFQA_CFG_F_GSO) < 0) perror("delay-line: nfq_set_queue_flags(GSO)");
  nfnl_rcvbufsiz(nfq_nfnlh(h), 64u << 20);
  int fd = nfq_fd(h);

  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);

  printf("ready queue=%d delay_ms=%g\n", queue, delay_ms);
  fflush(stdout);

  static char buf[1 << 16] __attribute__((aligned));
  while (!stop) {
    struct timespec timeout, *tp = NULL;
    if (ring_len > 0) {
      uint64_t t = now_ns(), due = ring[ring_head].due_ns;
      uint64_t wait = due > t ? due - t : 0;
      timeout.tv_sec = (time_t)(wait / 1000000000ull);
      timeout.tv_nsec = (long)(wait % 1000000000ull);
      tp = &timeout;
    }
    struct pollfd pfd = { .fd = fd, .events = POLLIN };
    int r = ppoll(&pfd, 1, tp, NULL);
    if (r < 0 && errno != EINTR) { perror("delay-line: ppoll"); break; }
    if (r > 0) {
      for (;;) {
        ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n < 0) {
          if (errno == ENOBUFS) { n_enobufs++; continue; }
          break; /* EAGAIN / EINTR */
        }
        nfq_handle_packet(h, buf, (int)n);
      }
    }
    release_due(qh, 0);
  }
  release_due(qh, 1);
  fprintf(stderr, "delay-line queue=%d: packets=%llu max_held=%llu overflow_passed=%llu enobufs=%llu\n", queue,
          (unsigned long long)n_packets, (unsigned long long)max_held, (unsigned long long)n_overflow, (unsigned long long)n_enobufs);
  nfq_destroy_queue(qh);
  nfq_close(h);
  return 0;
}
