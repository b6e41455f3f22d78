/*
 * Tiny N-API addon: SO_SNDBUF / SO_RCVBUF on a socket fd (Node has no API for them).
 *   setBufferSizes(fd, snd, rcv): a value < 0 leaves that option alone; throws on failure.
 *   getBufferSizes(fd) -> { snd, rcv }: what the kernel reports (Linux doubles what was set).
 * JS gets the fd from socket._handle.fd (Linux, macOS).
 */
#include <node_api.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#define CHECK(env, call)                                               \
  do {                                                                 \
    if ((call) != napi_ok) {                                           \
      napi_throw_error((env), "GREGOR_ERR_SOCKOPT", "N-API call failed"); \
      return NULL;                                                     \
    }                                                                  \
  } while (0)

static napi_value throw_errno(napi_env env, const char* what) {
  char msg[160];
  snprintf(msg, sizeof msg, "%s: %s", what, strerror(errno));
  napi_throw_error(env, "GREGOR_ERR_SOCKOPT", msg);
  return NULL;
}

static int get_int_arg(napi_env env, napi_value v, int32_t* out) {
  napi_valuetype t;
  if (napi_typeof(env, v, &t) != napi_ok || t != napi_number) return 0;
  return napi_get_value_int32(env, v, out) == napi_ok;
}

static napi_value set_buffer_sizes(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  int32_t fd, snd, rcv;
  CHECK(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 3 || !get_int_arg(env, argv[0], &fd) || !get_int_arg(env, argv[1], &snd) ||
      !get_int_arg(env, argv[2], &rcv) || fd < 0) {
    napi_throw_type_error(env, "GREGOR_ERR_SOCKOPT", "setBufferSizes(fd, snd, rcv) takes three integers, fd >= 0");
    return NULL;
  }
  if (snd >= 0 && setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &snd, sizeof snd) != 0) return throw_errno(env, "setsockopt(SO_SNDBUF)");
  if (rcv >= 0 && setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof rcv) != 0) return throw_errno(env, "setsockopt(SO_RCVBUF)");
  return NULL;
}

static napi_value get_buffer_sizes(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], out, v;
  int32_t fd;
  int snd = 0, rcv = 0;
  socklen_t len = sizeof snd;
  CHECK(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 1 || !get_int_arg(env, argv[0], &fd) || fd < 0) {
    napi_throw_type_error(env, "GREGOR_ERR_SOCKOPT", "getBufferSizes(fd) takes an integer fd >= 0");
    return NULL;
  }
  if (getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &snd, &len) != 0) return throw_errno(env, "getsockopt(SO_SNDBUF)");
  len = sizeof rcv;
  if (getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, &len) != 0) return throw_errno(env, "getsockopt(SO_RCVBUF)");
  CHECK(env, napi_create_object(env, &out));
  CHECK(env, napi_create_int32(env, snd, &v));
  CHECK(env, napi_set_named_property(env, out, "snd", v));
  CHECK(env, napi_create_int32(env, rcv, &v));
  CHECK(env, napi_set_named_property(env, out, "rcv", v));
  return out;
}

NAPI_MODULE_INIT(/* napi_env env, napi_value exports */) {
  napi_property_descriptor props[] = {
    { "setBufferSizes", NULL, set_buffer_sizes, NULL, NULL, NULL, napi_enumerable, NULL },
    { "getBufferSizes", NULL, get_buffer_sizes, NULL, NULL, NULL, napi_enumerable, NULL },
  };
  if (napi_define_properties(env, exports, sizeof props / sizeof props[0], props) != napi_ok) return NULL;
  return exports;
}
