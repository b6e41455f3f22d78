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
 * Linux's preadv2(..., RWF_NOWAIT) copies from the page cache and refuses to start I/O. The broker
 * serves Fetch reads of recently written segments this way on its main thread, skipping the round
 * trip through libuv's thread pool; whatever is not cached goes to the thread pool as before.
 */
#define _GNU_SOURCE
#include <node_api.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

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

NAPI_MODULE_INIT(/* napi_env env, napi_value exports */) {
  napi_property_descriptor props[] = {
      {"preadNowait", NULL, pread_nowait, NULL, NULL, NULL, napi_enumerable, NULL},
      {"dropCached", NULL, drop_cached, NULL, NULL, NULL, napi_enumerable, NULL},
  };
  if (napi_define_properties(env, exports, sizeof props / sizeof props[0], props) != napi_ok) return NULL;
  return exports;
}
