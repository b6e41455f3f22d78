/*
 * N-API addon: a positional read that never waits for the disk.
 *
 *   preadNowait(fd, buf: Uint8Array, offset, length, position) -> number
 *     the bytes read into buf[offset, offset + length) from the file at `position`: > 0, fewer than
 *     asked when only the first pages are in the page cache (or the file ends), 0 at the end of the
 *     file; or -errno: -EAGAIN when the first page is not cached (the read would have to wait for the
 *     disk), -EOPNOTSUPP / -ENOSYS where the kernel or file system cannot say, any other error as is.
 *
 *   dropCached(fd) -> 0 or -errno
 *     asks the kernel to evict the file's clean pages from the page cache (posix_fadvise DONTNEED;
 *     fsync first for written ones): tests use it to make preadNowait meet a page that is not cached.
 *
 *   sendfileNowait(outFd, inFd, position, length) -> number
 *     sendfile(2) of the file's [position, position + length) to a non-blocking socket: the bytes
 *     sent (> 0; fewer than asked when the socket's buffer filled), 0 at the end of the file, or
 *     -errno (-EAGAIN: the socket's buffer is full). Call it only for a range the page cache holds
 *     (uncachedPages): sendfile has no way to refuse a read from the disk.
 *
 *   uncachedPages(fd, position, length) -> number
 *     how many pages of [position, position + length) the page cache does not hold (cachestat(2),
 *     Linux 6.5), or -errno (-ENOSYS on an older kernel).
 *
 *   dupFd(fd) -> number
 *     a new descriptor (close-on-exec) of the same open file, or -errno: what a response holds so
 *     that the segment may close its own descriptor while the response is still being sent.
 *
 *   sendNowait(fd, buffers: Uint8Array[]) -> number
 *     one sendmsg(2) of the buffers, in order, to a socket, never waiting and never raising SIGPIPE:
 *     the bytes sent (fewer than all when the socket's buffer filled, or when there are more than
 *     SEND_MAX_BUFFERS buffers: only those are offered), or -errno (-EAGAIN: the buffer is full).
 *     A response goes out this way when nothing of the connection's is queued in Node's stream
 *     (lib/network/direct-write.ts); what the kernel did not take goes through the stream.
 *
 * Linux's preadv2(..., RWF_NOWAIT) copies from the page cache and refuses to start I/O. The broker
 * serves Fetch reads of recently written segments this way on its main thread, skipping the round
 * trip through libuv's thread pool; whatever is not cached goes to the thread pool as before.
 * A Fetch of large stored batches on a plain-text connection skips even that copy: the response
 * names the segment's bytes and the connection sends them with sendfile (as Kafka's transferTo).
 */
#define _GNU_SOURCE
#include <node_api.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#ifdef __linux__
#include <sys/sendfile.h>
#endif
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#if defined(__linux__) && !defined(__NR_cachestat)
#if defined(__x86_64__) || defined(__aarch64__)
#define __NR_cachestat 451
#endif
#endif

/* cachestat(2)'s structures (linux/mman.h, which older headers lack) */
struct gregor_cachestat_range {
  uint64_t off;
  uint64_t len;
};
struct gregor_cachestat {
  uint64_t nr_cache;
  uint64_t nr_dirty;
  uint64_t nr_writeback;
  uint64_t nr_evicted;
  uint64_t nr_recently_evicted;
};

static napi_value number(napi_env env, double v) {
  napi_value out;
  if (napi_create_double(env, v, &out) != napi_ok) return NULL;
  return out;
}

static napi_value pread_nowait(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5];
  int32_t fd;
  int64_t offset, length, position;
  bool is_typedarray = false;
  napi_typedarray_type type;
  size_t size, byte_offset;
  void* data;
  napi_value arraybuffer;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 5 ||
      napi_get_value_int32(env, argv[0], &fd) != napi_ok || napi_is_typedarray(env, argv[1], &is_typedarray) != napi_ok ||
      !is_typedarray || napi_get_typedarray_info(env, argv[1], &type, &size, &data, &arraybuffer, &byte_offset) != napi_ok ||
      type != napi_uint8_array || napi_get_value_int64(env, argv[2], &offset) != napi_ok ||
      napi_get_value_int64(env, argv[3], &length) != napi_ok || napi_get_value_int64(env, argv[4], &position) != napi_ok ||
      fd < 0 || offset < 0 || length < 0 || position < 0 || (uint64_t)offset + (uint64_t)length > size) {
    napi_throw_type_error(env, "GREGOR_ERR_PREAD",
                          "preadNowait(fd, buf, offset, length, position): fd >= 0, a Uint8Array, and a range inside it");
    return NULL;
  }
  if (length == 0) return number(env, 0);
#ifdef RWF_NOWAIT
  struct iovec iov = {(char*)data + offset, (size_t)length};
  ssize_t n;
  do n = preadv2(fd, &iov, 1, (off_t)position, RWF_NOWAIT);
  while (n < 0 && errno == EINTR);
  return number(env, n >= 0 ? (double)n : -(double)errno);
#else
  (void)data;
  return number(env, -(double)ENOSYS);
#endif
}

static napi_value drop_cached(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  int32_t fd;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1 ||
      napi_get_value_int32(env, argv[0], &fd) != napi_ok || fd < 0) {
    napi_throw_type_error(env, "GREGOR_ERR_PREAD", "dropCached(fd): fd >= 0");
    return NULL;
  }
  /* posix_fadvise returns the error number itself */
  int e = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  return number(env, e == 0 ? 0 : -(double)e);
}

/* Reads `n` int64 arguments (the first an int32 descriptor is range-checked by the caller). */
static bool int_args(napi_env env, napi_callback_info info, size_t n, int64_t* out) {
  napi_value argv[4];
  size_t argc = 4;
  if (n > 4 || napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < n) return false;
  for (size_t i = 0; i < n; i++) {
    if (napi_get_value_int64(env, argv[i], &out[i]) != napi_ok || out[i] < 0) return false;
  }
  return true;
}

static napi_value sendfile_nowait(napi_env env, napi_callback_info info) {
  int64_t a[4];
  if (!int_args(env, info, 4, a) || a[0] > INT32_MAX || a[1] > INT32_MAX) {
    napi_throw_type_error(env, "GREGOR_ERR_SENDFILE", "sendfileNowait(outFd, inFd, position, length): integers >= 0");
    return NULL;
  }
  if (a[3] == 0) return number(env, 0);
#ifdef __linux__
  off_t position = (off_t)a[2];
  ssize_t n;
  do n = sendfile((int)a[0], (int)a[1], &position, (size_t)a[3]);
  while (n < 0 && errno == EINTR);
  return number(env, n >= 0 ? (double)n : -(double)errno);
#else
  return number(env, -(double)ENOSYS);
#endif
}

static napi_value uncached_pages(napi_env env, napi_callback_info info) {
  int64_t a[3];
  if (!int_args(env, info, 3, a) || a[0] > INT32_MAX) {
    napi_throw_type_error(env, "GREGOR_ERR_SENDFILE", "uncachedPages(fd, position, length): integers >= 0");
    return NULL;
  }
  if (a[2] == 0) return number(env, 0);
#ifdef __NR_cachestat
  long page = sysconf(_SC_PAGESIZE);
  if (page <= 0) page = 4096;
  uint64_t first = (uint64_t)a[1] / (uint64_t)page;
  uint64_t last = ((uint64_t)a[1] + (uint64_t)a[2] - 1) / (uint64_t)page;
  struct gregor_cachestat_range range = {first * (uint64_t)page, (last - first + 1) * (uint64_t)page};
  struct gregor_cachestat cs = {0, 0, 0, 0, 0};
  if (syscall(__NR_cachestat, (int)a[0], &range, &cs, 0) != 0) return number(env, -(double)errno);
  uint64_t pages = last - first + 1;
  return number(env, cs.nr_cache >= pages ? 0 : (double)(pages - cs.nr_cache));
#else
  return number(env, -(double)ENOSYS);
#endif
}

static napi_value dup_fd(napi_env env, napi_callback_info info) {
  int64_t a[1];
  if (!int_args(env, info, 1, a) || a[0] > INT32_MAX) {
    napi_throw_type_error(env, "GREGOR_ERR_SENDFILE", "dupFd(fd): an integer >= 0");
    return NULL;
  }
  int fd = fcntl((int)a[0], F_DUPFD_CLOEXEC, 0);
  return number(env, fd >= 0 ? fd : -(double)errno);
}

/* the most buffers one sendNowait offers (a response is rarely more than a few) */
#define SEND_MAX_BUFFERS 64

static napi_value send_nowait(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  int32_t fd;
  bool is_array = false;
  uint32_t count = 0;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 2 ||
      napi_get_value_int32(env, argv[0], &fd) != napi_ok || fd < 0 || napi_is_array(env, argv[1], &is_array) != napi_ok ||
      !is_array || napi_get_array_length(env, argv[1], &count) != napi_ok) {
    napi_throw_type_error(env, "GREGOR_ERR_SEND", "sendNowait(fd, buffers): fd >= 0 and an array of Uint8Arrays");
    return NULL;
  }
  struct iovec iov[SEND_MAX_BUFFERS];
  uint32_t used = count < SEND_MAX_BUFFERS ? count : SEND_MAX_BUFFERS;
  for (uint32_t i = 0; i < used; i++) {
    napi_value element, arraybuffer;
    bool is_typedarray = false;
    napi_typedarray_type type;
    size_t length, byte_offset;
    void* data;
    if (napi_get_element(env, argv[1], i, &element) != napi_ok || napi_is_typedarray(env, element, &is_typedarray) != napi_ok ||
        !is_typedarray || napi_get_typedarray_info(env, element, &type, &length, &data, &arraybuffer, &byte_offset) != napi_ok ||
        type != napi_uint8_array) {
      napi_throw_type_error(env, "GREGOR_ERR_SEND", "sendNowait(fd, buffers): every buffer a Uint8Array");
      return NULL;
    }
    iov[i].iov_base = data;
    iov[i].iov_len = length;
  }
  if (used == 0) return number(env, 0);
#ifdef MSG_NOSIGNAL
  struct msghdr msg;
  memset(&msg, 0, sizeof msg);
  msg.msg_iov = iov;
  msg.msg_iovlen = used;
  ssize_t n;
  do n = sendmsg(fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  return number(env, n >= 0 ? (double)n : -(double)errno);
#else
  return number(env, -(double)ENOSYS);
#endif
}

NAPI_MODULE_INIT(/* napi_env env, napi_value exports */) {
  napi_property_descriptor props[] = {
      {"preadNowait", NULL, pread_nowait, NULL, NULL, NULL, napi_enumerable, NULL},
      {"dropCached", NULL, drop_cached, NULL, NULL, NULL, napi_enumerable, NULL},
      {"sendfileNowait", NULL, sendfile_nowait, NULL, NULL, NULL, napi_enumerable, NULL},
      {"uncachedPages", NULL, uncached_pages, NULL, NULL, NULL, napi_enumerable, NULL},
      {"dupFd", NULL, dup_fd, NULL, NULL, NULL, napi_enumerable, NULL},
      {"sendNowait", NULL, send_nowait, NULL, NULL, NULL, napi_enumerable, NULL},
  };
  if (napi_define_properties(env, exports, sizeof props / sizeof props[0], props) != napi_ok) return NULL;
  return exports;
}
