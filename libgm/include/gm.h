/*
 * gm.h: Myricom GM's C API (GM 2.x), provided by EtherGM's libgm.
 *
 * Written for EtherGM from GM's documented API: the names, enum values and
 * event layout are GM's, so that a GM program compiles unchanged against it
 * (cc prog.c $(pkg-config --cflags --libs gm)). What each call does on
 * Ethernet, and the calls that cannot be supported, are in EtherGM's
 * docs/GM-API.md.
 *
 * Every field of a receive event is in network byte order: read it with
 * gm_ntoh_u8/u16/u32/u64 and gm_ntohp. Define GM_STRONG_TYPES to 1 before
 * including this file to make a missing conversion a compile error (GM's
 * own header defaulted it to 1; here it defaults to 0, and a program's
 * "#define GM_STRONG_TYPES 0" turns it off as it did with GM).
 */
#ifndef _gm_h_
#define _gm_h_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- API versions ---------------------------------------------------------- */

/* GM_API_VERSION defaults to 2.0.16, as in GM's last header: programs test
   it (GASNet and Open MPI take a version below 2.0.12 for GM builds whose
   gm_get is broken). GM_HAVE_YP (2.0.16's gm_yp) is left undefined: libgm
   has no gm_yp, and programs that test it fall back to other calls. */

#define GM_API_VERSION_1_0 0x100
#define GM_API_VERSION_1_1 0x101
#define GM_API_VERSION_1_2 0x102
#define GM_API_VERSION_1_3 0x103
#define GM_API_VERSION_1_4 0x104
#define GM_API_VERSION_1_5 0x105
#define GM_API_VERSION_1_6 0x106
#define GM_API_VERSION_2_0 0x200
#define GM_API_VERSION_2_0_6 0x20006
#define GM_API_VERSION_2_0_12 0x2000c
#define GM_API_VERSION_2_0_16 0x20010
#ifndef GM_API_VERSION
#define GM_API_VERSION GM_API_VERSION_2_0_16
#endif
#if GM_API_VERSION < GM_API_VERSION_1_0
#error GM_API_VERSION is too small.
#elif GM_API_VERSION > GM_API_VERSION_2_0_16
#error GM_API_VERSION is too large.
#endif

/* The major, minor and subminor parts of GM_API_VERSION. */
#define GM_API_MAJOR ((GM_API_VERSION & 0xffff) == GM_API_VERSION \
		      ? GM_API_VERSION >> 8 : GM_API_VERSION >> 16)
#define GM_API_MINOR ((GM_API_VERSION & 0xffff) == GM_API_VERSION \
		      ? GM_API_VERSION & 0xff : (GM_API_VERSION >> 8) & 0xff)
#define GM_API_SUBMINOR ((GM_API_VERSION & 0xffff) == GM_API_VERSION \
			 ? 0 : GM_API_VERSION & 0xff)

/* EtherGM's libgm; programs may test for it. */
#define GM_ETHERGM 1

enum gm_api_version {
	_GM_API_VERSION_1_0 = GM_API_VERSION_1_0,
	_GM_API_VERSION_1_1 = GM_API_VERSION_1_1,
	_GM_API_VERSION_1_2 = GM_API_VERSION_1_2,
	_GM_API_VERSION_1_3 = GM_API_VERSION_1_3,
	_GM_API_VERSION_1_4 = GM_API_VERSION_1_4,
	_GM_API_VERSION_1_5 = GM_API_VERSION_1_5,
	_GM_API_VERSION_1_6 = GM_API_VERSION_1_6,
	_GM_API_VERSION_2_0 = GM_API_VERSION_2_0,
	_GM_API_VERSION_2_0_6 = GM_API_VERSION_2_0_6,
	_GM_API_VERSION_2_0_12 = GM_API_VERSION_2_0_12,
	_GM_API_VERSION_2_0_16 = GM_API_VERSION_2_0_16
};

/* ---- Compiler and CPU switches GM's header set -------------------------------- */

/* GM_BUILDING_GM etc. are 0 for programs; GM_KERNEL is 0 (no kernel API). */
#ifndef GM_BUILDING_GM
#define GM_BUILDING_GM 0
#define GM_BUILDING_FIRMWARE 0
#define GM_BUILDING_INTERNALS 0
#endif
#ifndef GM_KERNEL
#define GM_KERNEL 0
#endif
#ifndef GM_DEBUG
#define GM_DEBUG 0
#endif
#if defined(__x86_64__) && !defined(GM_CPU_x86_64)
#define GM_CPU_x86_64 1
#elif defined(__i386__) && !defined(GM_CPU_x86)
#define GM_CPU_x86 1
#elif defined(__ia64__) && !defined(GM_CPU_ia64)
#define GM_CPU_ia64 1
#elif (defined(__powerpc64__) || defined(__ppc64__)) && !defined(GM_CPU_powerpc64)
#define GM_CPU_powerpc64 1
#elif (defined(__powerpc__) || defined(__ppc__)) && !defined(GM_CPU_powerpc)
#define GM_CPU_powerpc 1
#elif defined(__sparc__) && defined(__arch64__) && !defined(GM_CPU_sparc64)
#define GM_CPU_sparc64 1
#elif defined(__sparc__) && !defined(GM_CPU_sparc)
#define GM_CPU_sparc 1
#elif defined(__alpha__) && !defined(GM_CPU_alpha)
#define GM_CPU_alpha 1
#elif defined(__mips__) && !defined(GM_CPU_mips)
#define GM_CPU_mips 1
#elif defined(__hppa__) && !defined(GM_CPU_hppa)
#define GM_CPU_hppa 1
#endif
#define GM_CPU_DEFINED 1
#ifndef GM_CPU_alpha
#define GM_CPU_alpha 0
#endif
#ifndef GM_CPU_ia64
#define GM_CPU_ia64 0
#endif
#ifndef GM_CPU_hppa
#define GM_CPU_hppa 0
#endif
#ifndef GM_CPU_lanai
#define GM_CPU_lanai 0
#endif
#ifndef GM_CPU_mips
#define GM_CPU_mips 0
#endif
#ifndef GM_CPU_powerpc
#define GM_CPU_powerpc 0
#endif
#ifndef GM_CPU_powerpc64
#define GM_CPU_powerpc64 0
#endif
#ifndef GM_CPU_sparc
#define GM_CPU_sparc 0
#endif
#ifndef GM_CPU_sparc64
#define GM_CPU_sparc64 0
#endif
#ifndef GM_CPU_x86
#define GM_CPU_x86 0
#endif
#ifndef GM_CPU_x86_64
#define GM_CPU_x86_64 0
#endif
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define GM_CPU_BIGENDIAN 1
#define GM_NET_SWAP 0
#else
#define GM_CPU_BIGENDIAN 0
#define GM_NET_SWAP 1
#endif

/* gm_inline has GNU C89 semantics, as with the compilers of GM's time: a
   program's non-static gm_inline function is also emitted out of line, so
   other files can call it (C99 semantics would leave it undefined). */
#ifndef gm_inline
#if defined(__GNUC__) && !defined(__cplusplus)
#define gm_inline __inline__ __attribute__((__gnu_inline__))
#else
#define gm_inline __inline__
#endif
#endif
#ifndef GM_ENTRY_POINT
#define GM_ENTRY_POINT
#endif

/* ---- Integer types --------------------------------------------------------- */

/* GM's own definitions (the 64-bit types are long long, as in GM on Linux). */
typedef signed char gm_s8_t;
typedef signed short gm_s16_t;
typedef signed int gm_s32_t;
typedef signed long long gm_s64_t;
typedef unsigned char gm_u8_t;
typedef unsigned short gm_u16_t;
typedef unsigned int gm_u32_t;
typedef unsigned long long gm_u64_t;
/* gm_up_t holds a user-space pointer; gm_size_t a length, gm_offset_t a
   signed one. */
#if __SIZEOF_POINTER__ == 8
typedef gm_u64_t gm_up_t;
#else
typedef gm_u32_t gm_up_t;
#endif
typedef unsigned long gm_size_t;
typedef signed long gm_offset_t;
/* gm_remote_ptr_t: an address in the memory of a remote port's process. */
typedef gm_u64_t gm_remote_ptr_t;
typedef gm_u64_t gm_dp_t;
typedef int gm_boolean_t;
#define GM_TRUE 1
#define GM_FALSE 0
#define GM_SIZEOF_VOID_P __SIZEOF_POINTER__
#define GM_SIZEOF_UP_T __SIZEOF_POINTER__

/*
 * Network-order ("_n_t") types. Plain integers by default; with
 * GM_STRONG_TYPES each is a struct, so that using one without gm_ntoh_*
 * does not compile.
 */
#ifndef GM_STRONG_TYPES
#define GM_STRONG_TYPES 0
#endif
#if GM_STRONG_TYPES
typedef struct { gm_u8_t n; } gm_u8_n_t;
typedef struct { gm_u16_t n; } gm_u16_n_t;
typedef struct { gm_u32_t n; } gm_u32_n_t;
typedef struct { gm_u64_t n; } gm_u64_n_t;
typedef struct { gm_s8_t n; } gm_s8_n_t;
typedef struct { gm_s16_t n; } gm_s16_n_t;
typedef struct { gm_s32_t n; } gm_s32_n_t;
typedef struct { gm_s64_t n; } gm_s64_n_t;
typedef struct { gm_up_t n; } gm_up_n_t;
typedef struct { gm_remote_ptr_t n; } gm_remote_ptr_n_t;
#define GM_N(x) ((x).n)
#define _GM_N(x) ((x).n)
#else
typedef gm_u8_t gm_u8_n_t;
typedef gm_u16_t gm_u16_n_t;
typedef gm_u32_t gm_u32_n_t;
typedef gm_u64_t gm_u64_n_t;
typedef gm_s8_t gm_s8_n_t;
typedef gm_s16_t gm_s16_n_t;
typedef gm_s32_t gm_s32_n_t;
typedef gm_s64_t gm_s64_n_t;
typedef gm_up_t gm_up_n_t;
typedef gm_remote_ptr_t gm_remote_ptr_n_t;
#define GM_N(x) (x)
#define _GM_N(x) (x)
#endif

/* A pointer-to-list member (gm_sent_t's message_list). */
typedef gm_up_n_t gm_up_n_up_n_t;

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define _GM_BE16(x) ((gm_u16_t)(x))
#define _GM_BE32(x) ((gm_u32_t)(x))
#define _GM_BE64(x) ((gm_u64_t)(x))
#else
#define _GM_BE16(x) __builtin_bswap16((gm_u16_t)(x))
#define _GM_BE32(x) __builtin_bswap32((gm_u32_t)(x))
#define _GM_BE64(x) __builtin_bswap64((gm_u64_t)(x))
#endif

static gm_inline gm_u8_t gm_ntoh_u8(gm_u8_n_t x) { return _GM_N(x); }
static gm_inline gm_u16_t gm_ntoh_u16(gm_u16_n_t x) { return _GM_BE16(_GM_N(x)); }
static gm_inline gm_u32_t gm_ntoh_u32(gm_u32_n_t x) { return _GM_BE32(_GM_N(x)); }
static gm_inline gm_u64_t gm_ntoh_u64(gm_u64_n_t x) { return _GM_BE64(_GM_N(x)); }
static gm_inline gm_s8_t gm_ntoh_s8(gm_s8_n_t x) { return _GM_N(x); }
static gm_inline gm_s16_t gm_ntoh_s16(gm_s16_n_t x) { return (gm_s16_t)_GM_BE16(_GM_N(x)); }
static gm_inline gm_s32_t gm_ntoh_s32(gm_s32_n_t x) { return (gm_s32_t)_GM_BE32(_GM_N(x)); }
static gm_inline gm_s64_t gm_ntoh_s64(gm_s64_n_t x) { return (gm_s64_t)_GM_BE64(_GM_N(x)); }
static gm_inline gm_u8_n_t gm_hton_u8(gm_u8_t x) { gm_u8_n_t r; GM_N(r) = x; return r; }
static gm_inline gm_u16_n_t gm_hton_u16(gm_u16_t x) { gm_u16_n_t r; GM_N(r) = _GM_BE16(x); return r; }
static gm_inline gm_u32_n_t gm_hton_u32(gm_u32_t x) { gm_u32_n_t r; GM_N(r) = _GM_BE32(x); return r; }
static gm_inline gm_u64_n_t gm_hton_u64(gm_u64_t x) { gm_u64_n_t r; GM_N(r) = _GM_BE64(x); return r; }
static gm_inline gm_s8_n_t gm_hton_s8(gm_s8_t x) { gm_s8_n_t r; GM_N(r) = x; return r; }
static gm_inline gm_s16_n_t gm_hton_s16(gm_s16_t x) { gm_s16_n_t r; GM_N(r) = (gm_s16_t)_GM_BE16(x); return r; }
static gm_inline gm_s32_n_t gm_hton_s32(gm_s32_t x) { gm_s32_n_t r; GM_N(r) = (gm_s32_t)_GM_BE32(x); return r; }
static gm_inline gm_s64_n_t gm_hton_s64(gm_s64_t x) { gm_s64_n_t r; GM_N(r) = (gm_s64_t)_GM_BE64(x); return r; }
#if __SIZEOF_POINTER__ == 8
static gm_inline void *gm_ntohp(gm_up_n_t x) { return (void *)(uintptr_t)_GM_BE64(_GM_N(x)); }
static gm_inline gm_up_n_t gm_htonp(void *p) { gm_up_n_t r; GM_N(r) = _GM_BE64((uintptr_t)p); return r; }
#else
static gm_inline void *gm_ntohp(gm_up_n_t x) { return (void *)(uintptr_t)_GM_BE32(_GM_N(x)); }
static gm_inline gm_up_n_t gm_htonp(void *p) { gm_up_n_t r; GM_N(r) = _GM_BE32((uintptr_t)p); return r; }
#endif

/* GM's own helpers behind the conversions, for programs that use them:
   __gm_swap_u* always swap; __gm_ntoh_u32 etc. convert a plain integer,
   _gm_ntoh_u32 etc. a network-order one. _GM_NTOH and _GM_HTON are
   defined as in GM (a program may test for them). */
static gm_inline gm_u8_t __gm_swap_u8(gm_u8_t x) { return x; }
static gm_inline gm_u16_t __gm_swap_u16(gm_u16_t x) { return __builtin_bswap16(x); }
static gm_inline gm_u32_t __gm_swap_u32(gm_u32_t x) { return __builtin_bswap32(x); }
static gm_inline gm_u64_t __gm_swap_u64(gm_u64_t x) { return __builtin_bswap64(x); }
#if GM_NET_SWAP
#define __GM_NET_SWAP(type, size, x) ((gm##type##size##_t)__gm_swap_u##size((gm_u##size##_t)(x)))
#else
#define __GM_NET_SWAP(type, size, x) ((gm##type##size##_t)(x))
#endif
#define _GM_NTOH(type, size) \
static gm_inline gm##type##size##_t __gm_ntoh##type##size(gm##type##size##_t x) \
{ return __GM_NET_SWAP(type, size, x); } \
static gm_inline gm##type##size##_t _gm_ntoh##type##size(gm##type##size##_n_t x) \
{ return __gm_ntoh##type##size(GM_N(x)); } \
struct gm_ignore_the_semicolon
#define _GM_HTON(type, size) \
static gm_inline gm##type##size##_t __gm_hton##type##size(gm##type##size##_t x) \
{ return __GM_NET_SWAP(type, size, x); } \
static gm_inline gm##type##size##_n_t _gm_hton##type##size(gm##type##size##_t x) \
{ gm##type##size##_n_t r; GM_N(r) = __gm_hton##type##size(x); return r; } \
struct gm_ignore_the_semicolon
_GM_NTOH(_u, 8);
_GM_NTOH(_u, 16);
_GM_NTOH(_u, 32);
_GM_NTOH(_u, 64);
_GM_NTOH(_s, 8);
_GM_NTOH(_s, 16);
_GM_NTOH(_s, 32);
_GM_NTOH(_s, 64);
_GM_HTON(_u, 8);
_GM_HTON(_u, 16);
_GM_HTON(_u, 32);
_GM_HTON(_u, 64);
_GM_HTON(_s, 8);
_GM_HTON(_s, 16);
_GM_HTON(_s, 32);
_GM_HTON(_s, 64);

/* GM-1's names. */
#define gm_ntohc(x) gm_ntoh_u8(x)
#define gm_ntohs(x) gm_ntoh_u16(x)
#define gm_ntohl(x) gm_ntoh_u32(x)
#define gm_ntohll(x) gm_ntoh_u64(x)
#define gm_htonc(x) gm_hton_u8(x)
#define gm_htons(x) gm_hton_u16(x)
#define gm_htonl(x) gm_hton_u32(x)
#define gm_htonll(x) gm_hton_u64(x)
/* Host to PCI (little-endian) order. */
static gm_inline gm_u32_t gm_htopci_u32(gm_u32_t x)
{
#if GM_CPU_BIGENDIAN
	return __builtin_bswap32(x);
#else
	return x;
#endif
}

/* ---- GM's utility macros ------------------------------------------------------ */

#define __GM_MISALIGNMENT(n, m) ((gm_size_t)(n) & ((gm_size_t)(m) - 1))
#define GM_ALIGNED(n, m) (__GM_MISALIGNMENT(n, m) == 0)
#define GM_MISALIGNMENT(n, m) __GM_MISALIGNMENT(n, m)
#define GM_OFFSETOF(type, field) ((gm_offset_t) & ((type *)0)->field)
#define GM_STRUCT_CONTAINING(type, field, field_instance) \
	((type *)((char *)(field_instance) - GM_OFFSETOF(type, field)))
#define GM_NUM_ELEM(ar) (sizeof(ar) / sizeof(*ar))
#define GM_POWER_OF_TWO(n) (!((n) & ((n) - 1)))
#define GM_PARAMETER_MAY_BE_UNUSED(p) ((void)(p))
#define GM_VAR_MAY_BE_UNUSED(v) ((void)(v))
#define GM_LOOPS_FOREVER() { if (0) break; }

/* Assertions: gm_assert checks only when GM_DEBUG is set (otherwise it only
   checks the syntax); gm_always_assert always checks. A failed one prints
   the expression, line and file and calls gm_abort. */
#if !defined __GNUC__ || defined __STRICT_ANSI__
#define __GM_COMPILE_TIME_ASSERT(a)
#define __gm_builtin_constant_p(x) 0
#else
#define __GM_COMPILE_TIME_ASSERT(a) do { \
	char (*__GM_COMPILE_TIME_ASSERT_var)[(a) ? 1 : -1] = 0; \
	(void)__GM_COMPILE_TIME_ASSERT_var; \
} while (0)
#define __gm_builtin_constant_p(x) __builtin_constant_p(x)
#endif
#define __gm_check_syntax(x) do { if (0) (void)(x); } while (0)
#ifndef __GM_FILE__
#define __GM_FILE__ __FILE__
#endif
#define __GM_ASSERTION_FAILED(txt, line, file) do { \
	gm_eprintf("GM: assertion failed: %s (line %d of %s)\n", (txt), (int)(line), (file)); \
	gm_abort(); \
} while (0)
#define _gm_always_assert(a, txt) do { \
	if (!(a)) \
		__GM_ASSERTION_FAILED(txt, __LINE__, __GM_FILE__); \
} while (0)
#define gm_always_assert(a) _gm_always_assert(a, #a)
#if GM_DEBUG
#define gm_assert(a) _gm_always_assert(a, #a)
#else
#define gm_assert(a) __gm_check_syntax(a)
#endif
#define gm_assert_p(a) gm_assert(a)
#define GM_ABORT() __GM_ASSERTION_FAILED("0", __LINE__, __GM_FILE__)

/* ---- Constants ------------------------------------------------------------- */

#define GM_NUM_PORTS 16
#define GM_NUM_PRIORITIES 2
#define GM_NUM_SIZES 32
#define GM_MIN_MESSAGE_SIZE 3
#define GM_MTU 4096
#define GM_PAGE_LEN 4096
#define GM_MAX_HOST_NAME_LEN 128
#define GM_MAX_PORT_NAME_LEN 32
#define GM_MAX_FAST_RECV_BYTES 128
#define GM_RDMA_GRANULARITY 64
#define GM_MAX_DMA_GRANULARITY 8
#define GM_DMA_GRANULARITY GM_MAX_DMA_GRANULARITY
#define GM_DMA_ALIGNED(p) GM_ALIGNED(p, GM_DMA_GRANULARITY)
#define GM_NO_SUCH_NODE_ID 0
#define GM_TICKS_PER_USEC 2
#define GM_DAEMON_PORT_ID 0
#define GM_MAPPER_PORT_ID 1
#define GM_ETHERNET_PORT_ID 3
#define GM_NUM_SEND_TOKENS 61
#define GM_NUM_RECV_TOKENS 253
#define GM_MAX_LENGTH_FOR_SIZE(size) ((size) < 3 ? 0 : ((gm_size_t)1 << (size)) - 8)

enum gm_priority {
	GM_LOW_PRIORITY = 0,
	GM_HIGH_PRIORITY = 1
};

enum gm_node_type {
	GM_NODE_TYPE_GM = 0,
	GM_NODE_TYPE_XM = 1,
	GM_NODE_TYPE_MX = 2,
	GM_NODE_TYPE_UNKNOWN = 98,
	GM_NODE_TYPE_PURGED = 99
};

/* ---- Status codes ---------------------------------------------------------- */

typedef enum gm_status {
	GM_SUCCESS = 0,
	GM_FAILURE = 1,
	GM_INPUT_BUFFER_TOO_SMALL = 2,
	GM_OUTPUT_BUFFER_TOO_SMALL = 3,
	GM_TRY_AGAIN = 4,
	GM_BUSY = 5,
	GM_MEMORY_FAULT = 6,
	GM_INTERRUPTED = 7,
	GM_INVALID_PARAMETER = 8,
	GM_OUT_OF_MEMORY = 9,
	GM_INVALID_COMMAND = 10,
	GM_PERMISSION_DENIED = 11,
	GM_INTERNAL_ERROR = 12,
	GM_UNATTACHED = 13,
	GM_UNSUPPORTED_DEVICE = 14,
	GM_SEND_TIMED_OUT = 15,
	GM_SEND_REJECTED = 16,
	GM_SEND_TARGET_PORT_CLOSED = 17,
	GM_SEND_TARGET_NODE_UNREACHABLE = 18,
	GM_SEND_DROPPED = 19,
	GM_SEND_PORT_CLOSED = 20,
	GM_NODE_ID_NOT_YET_SET = 21,
	GM_STILL_SHUTTING_DOWN = 22,
	GM_CLONE_BUSY = 23,
	GM_NO_SUCH_DEVICE = 24,
	GM_ABORTED = 25,
	GM_INCOMPATIBLE_LIB_AND_DRIVER = 26,
	GM_UNTRANSLATED_SYSTEM_ERROR = 27,
	GM_ACCESS_DENIED = 28,
	GM_NO_DRIVER_SUPPORT = 29,
	GM_PTE_REF_CNT_OVERFLOW = 30,
	GM_NOT_SUPPORTED_IN_KERNEL = 31,
	GM_NOT_SUPPORTED_ON_ARCH = 32,
	GM_NO_MATCH = 33,
	GM_USER_ERROR = 34,
	GM_TIMED_OUT = 35,
	GM_DATA_CORRUPTED = 36,
	GM_HARDWARE_FAULT = 37,
	GM_SEND_ORPHANED = 38,
	GM_MINOR_OVERFLOW = 39,
	GM_PAGE_TABLE_FULL = 40,
	GM_UC_ERROR = 41,
	GM_INVALID_PORT_NUMBER = 42,
	GM_DEV_NOT_FOUND = 43,
	GM_FIRMWARE_NOT_RUNNING = 44,
	GM_YP_NO_MATCH = 45,
	GM_SRAM_PARITY_ERROR = 46,
	GM_FIRMWARE_ABORT = 47,
	GM_NUM_STATUS_CODES
} gm_status_t;
#define GM_NUM_ERROR_CODES GM_NUM_STATUS_CODES

/* ---- Receive events -------------------------------------------------------- */

enum gm_recv_event_type {
	GM_NO_RECV_EVENT = 0,
	GM_SENDS_FAILED_EVENT = 1,
	GM_ALARM_EVENT = 2,
	GM_SENT_EVENT = 3,
	_GM_SLEEP_EVENT = 4,
	GM_RAW_RECV_EVENT = 5,
	GM_BAD_SEND_DETECTED_EVENT = 6,
	GM_SEND_TOKEN_VIOLATION_EVENT = 7,
	GM_RECV_TOKEN_VIOLATION_EVENT = 8,
	GM_BAD_RECV_TOKEN_EVENT = 9,
	GM_ALARM_VIOLATION_EVENT = 10,
	GM_RECV_EVENT = 11,
	GM_HIGH_RECV_EVENT = 12,
	GM_PEER_RECV_EVENT = 13,
	GM_HIGH_PEER_RECV_EVENT = 14,
	GM_FAST_RECV_EVENT = 15,
	GM_FAST_HIGH_RECV_EVENT = 16,
	GM_FAST_PEER_RECV_EVENT = 17,
	GM_FAST_HIGH_PEER_RECV_EVENT = 18,
	GM_REJECTED_SEND_EVENT = 19,
	GM_ORPHANED_SEND_EVENT = 20,
	GM_BAD_RESEND_DETECTED_EVENT = 24,
	GM_DROPPED_SEND_EVENT = 25,
	GM_BAD_SEND_VMA_EVENT = 26,
	GM_BAD_RECV_VMA_EVENT = 27,
	_GM_FLUSHED_ALARM_EVENT = 28,
	GM_SENT_TOKENS_EVENT = 29,
	GM_IGNORE_RECV_EVENT = 30,
	GM_ETHERNET_RECV_EVENT = 31,
	GM_FATAL_FIRMWARE_ERROR_EVENT = 32,
	/* GM's numbers for events as the firmware makes them (each is the
	   event's type + 128); a program never receives these. */
	GM_NEW_NO_RECV_EVENT = 128,
	GM_NEW_SENDS_FAILED_EVENT = 129,
	GM_NEW_ALARM_EVENT = 130,
	GM_NEW_SENT_EVENT = 131,
	_GM_NEW_SLEEP_EVENT = 132,
	GM_NEW_RAW_RECV_EVENT = 133,
	GM_NEW_BAD_SEND_DETECTED_EVENT = 134,
	GM_NEW_SEND_TOKEN_VIOLATION_EVENT = 135,
	GM_NEW_RECV_TOKEN_VIOLATION_EVENT = 136,
	GM_NEW_BAD_RECV_TOKEN_EVENT = 137,
	GM_NEW_ALARM_VIOLATION_EVENT = 138,
	GM_NEW_RECV_EVENT = 139,
	GM_NEW_HIGH_RECV_EVENT = 140,
	GM_NEW_PEER_RECV_EVENT = 141,
	GM_NEW_HIGH_PEER_RECV_EVENT = 142,
	GM_NEW_FAST_RECV_EVENT = 143,
	GM_NEW_FAST_HIGH_RECV_EVENT = 144,
	GM_NEW_FAST_PEER_RECV_EVENT = 145,
	GM_NEW_FAST_HIGH_PEER_RECV_EVENT = 146,
	GM_NEW_REJECTED_SEND_EVENT = 147,
	GM_NEW_ORPHANED_SEND_EVENT = 148,
	_GM_NEW_PUT_NOTIFICATION_EVENT = 149,
	GM_NEW_FREE_SEND_TOKEN_EVENT = 150,
	GM_NEW_FREE_HIGH_SEND_TOKEN_EVENT = 151,
	GM_NEW_BAD_RESEND_DETECTED_EVENT = 152,
	GM_NEW_DROPPED_SEND_EVENT = 153,
	GM_NEW_BAD_SEND_VMA_EVENT = 154,
	GM_NEW_BAD_RECV_VMA_EVENT = 155,
	_GM_NEW_FLUSHED_ALARM_EVENT = 156,
	GM_NEW_SENT_TOKENS_EVENT = 157,
	GM_NEW_IGNORE_RECV_EVENT = 158,
	GM_NEW_ETHERNET_RECV_EVENT = 159,
	GM_NEW_FATAL_FIRMWARE_ERROR_EVENT = 160,
	GM_NUM_RECV_EVENT_TYPES
};

/*
 * Every member is GM_RDMA_GRANULARITY (64) bytes and ends with its type
 * byte, so GM_RECV_EVENT_TYPE reads any of them. The field names and
 * offsets are GM's (for 64-bit pointers).
 */
typedef struct gm_recv {
	gm_u8_n_t _rdma_padding[GM_RDMA_GRANULARITY - 16 - 2 * sizeof(gm_up_n_t)];
	gm_up_n_t message;        /* FAST events: the message, in library memory */
	gm_up_n_t buffer;         /* the buffer the program provided */
	gm_u32_n_t reserved_after_buffer;
	gm_u32_n_t length;        /* bytes received */
	gm_u16_n_t sender_node_id;
	gm_u16_n_t reserved_after_sender_node_id;
	gm_u8_n_t tag;            /* the buffer's tag */
	gm_u8_n_t size;           /* the size class */
	gm_u8_n_t sender_port_id;
	gm_u8_n_t type;
} gm_recv_t;

/* GM_SENT_TOKENS_EVENT's reports (GM's; libgm makes no such event). */
struct _gm_sent_token_report {
	gm_u8_n_t token;
	gm_u8_n_t status;
};
#define GM_MAX_SENT_TOKEN_REPORTS_PER_EVENT ((GM_RDMA_GRANULARITY / 2) - 1)

typedef struct gm_tokens_sent {
	struct _gm_sent_token_report report[GM_MAX_SENT_TOKEN_REPORTS_PER_EVENT];
	gm_u8_n_t reserved_before_type;
	gm_u8_n_t type;
} gm_tokens_sent_t;

typedef struct gm_sent {
	gm_u8_n_t _rdma_padding[GM_RDMA_GRANULARITY - 8 - sizeof(gm_up_n_t)];
	gm_up_n_up_n_t message_list; /* points to a null-terminated gm_up_n_t list */
	gm_u8_n_t _reserved_after_message_list[8 - 1];
	gm_u8_n_t type;
} gm_sent_t;

typedef struct gm_failed_send_event {
	gm_u8_n_t _rdma_padding[GM_RDMA_GRANULARITY - 8 - sizeof(gm_up_n_t)];
	gm_up_n_t message;
	gm_u32_n_t reserved_after_message;
	gm_u16_n_t target_node_id;
	gm_u8_n_t target_subport_id;
	gm_u8_n_t type;
} gm_failed_send_event_t;

typedef struct gm_flushed_alarm {
	gm_u8_n_t _rdma_padding[GM_RDMA_GRANULARITY - 8];
	gm_u32_n_t usecs_remaining;
	gm_u8_n_t reserved_after_usecs_remaining[3];
	gm_u8_n_t type;
} gm_flushed_alarm_t;

typedef struct gm_fatal_firmware_error {
	gm_u8_n_t _rdma_padding[GM_RDMA_GRANULARITY - 8];
	gm_u32_n_t status;
	gm_u8_n_t reserved_after_status[3];
	gm_u8_n_t type;
} gm_fatal_firmware_error_t;

/* GM_ETHERNET_RECV_EVENT's layout (GM's; libgm makes no such event). */
typedef struct gm_ethernet_recv {
	gm_u8_n_t _rdma_padding[GM_RDMA_GRANULARITY - 16 - 2 * sizeof(gm_up_n_t)];
	gm_up_n_t message;
	gm_up_n_t buffer;
	gm_u16_n_t ip_checksum;
	gm_u16_n_t ip_header_len;
	gm_u32_n_t length;
	gm_u16_n_t sender_node_id;
	gm_u8_n_t flags;
#define GM_IPV4_PARTIAL_CHECKSUM 0x1
#define GM_TCP_UDP_HEADER_SPLIT 0x2
	gm_u8_n_t reserved_after_flags;
	gm_u8_n_t tag;
	gm_u8_n_t size;
	gm_u8_n_t sender_port_id;
	gm_u8_n_t type;
} gm_ethernet_recv_t;

typedef union gm_recv_event {
	gm_tokens_sent_t tokens_sent;
	gm_recv_t recv;
	gm_sent_t sent;
	gm_failed_send_event_t failed_send;
	gm_fatal_firmware_error_t fatal_firmware_error;
	gm_flushed_alarm_t flushed_alarm;
	gm_ethernet_recv_t ethernet_recv;
	gm_u8_n_t _bytes[GM_RDMA_GRANULARITY];
} gm_recv_event_t;

#define GM_RECV_EVENT_TYPE(e) (gm_ntoh_u8((e)->recv.type))

/* ---- Ports, callbacks and alarms ------------------------------------------- */

struct gm_port;
typedef struct gm_port gm_port_t;

typedef void (*gm_send_completion_callback_t)(struct gm_port *p, void *context, gm_status_t status);
typedef void (*gm_alarm_callback_t)(void *context);
typedef void (*gm_on_exit_callback_t)(gm_status_t status, void *arg);

/*
 * gm_alarm_t is the program's storage for one alarm: initialise it with
 * gm_initialize_alarm before its first use. Its fields are the library's.
 */
typedef struct gm_alarm {
	struct gm_alarm *_next;
	int _state;
	struct gm_port *_port;
	gm_alarm_callback_t _callback;
	void *_context;
	gm_u64_t _deadline;
	gm_u64_t _id;
} gm_alarm_t;

/* ---- Library and port lifetime --------------------------------------------- */

gm_status_t gm_init(void);
void gm_finalize(void);
gm_status_t gm_open(struct gm_port **p, unsigned int unit, unsigned int port,
		    const char *port_name, enum gm_api_version version);
void gm_close(struct gm_port *p);
unsigned int gm_num_ports(struct gm_port *p);
unsigned int gm_get_port_id(struct gm_port *p);
void gm_exit(gm_status_t status);
gm_status_t gm_on_exit(gm_on_exit_callback_t callback, void *arg);
void gm_abort(void);

/* ---- Identity and names ------------------------------------------------------ */

gm_status_t gm_get_node_id(struct gm_port *p, unsigned int *node_id);
gm_status_t gm_get_node_type(struct gm_port *p, int *node_type);
gm_status_t gm_node_id_to_global_id(struct gm_port *p, unsigned int node_id, unsigned int *global_id);
gm_status_t gm_global_id_to_node_id(struct gm_port *p, unsigned int global_id, unsigned int *node_id);
gm_status_t gm_get_host_name(struct gm_port *p, char name[GM_MAX_HOST_NAME_LEN]);
gm_status_t gm_max_node_id(struct gm_port *p, unsigned int *n);
gm_status_t gm_max_node_id_in_use(struct gm_port *p, unsigned int *n);
gm_status_t gm_max_node_id_inuse(struct gm_port *p, unsigned int *n);
unsigned int gm_host_name_to_node_id(struct gm_port *p, char *host_name);
gm_status_t gm_host_name_to_node_id_ex(struct gm_port *p, unsigned int timeout_usecs,
				       const char *host_name, unsigned int *node_id);
char *gm_node_id_to_host_name(struct gm_port *p, unsigned int node_id);
gm_status_t gm_node_id_to_host_name_ex(struct gm_port *p, unsigned int timeout_usecs,
				       unsigned int node_id, char (*name)[GM_MAX_HOST_NAME_LEN + 1]);
gm_status_t gm_node_id_to_unique_id(struct gm_port *p, unsigned int node_id, char unique[6]);
gm_status_t gm_unique_id_to_node_id(struct gm_port *p, char unique[6], unsigned int *node_id);
gm_status_t gm_unique_id(struct gm_port *p, char unique[6]);
gm_status_t gm_get_unique_board_id(struct gm_port *p, char unique[6]);
gm_status_t gm_get_mapper_unique_id(struct gm_port *p, char unique[6]);

/* ---- Memory -------------------------------------------------------------------- */

void *gm_dma_malloc(struct gm_port *p, gm_size_t length);
void *gm_dma_calloc(struct gm_port *p, gm_size_t count, gm_size_t length);
void gm_dma_free(struct gm_port *p, void *addr);
gm_status_t gm_register_memory(struct gm_port *p, void *ptr, gm_size_t length);
gm_status_t gm_register_memory_ex(struct gm_port *p, void *ptr, gm_size_t length, void *pvma);
gm_status_t gm_deregister_memory(struct gm_port *p, void *ptr, gm_size_t length);
gm_status_t gm_allow_remote_memory_access(struct gm_port *p);

/* ---- Sizes ----------------------------------------------------------------------- */

unsigned int gm_min_size_for_length(gm_size_t length);
gm_size_t gm_max_length_for_size(unsigned int size);
unsigned int gm_min_message_size(struct gm_port *p);
unsigned int gm_mtu(struct gm_port *p);

/* ---- Sending ---------------------------------------------------------------------- */

void gm_send_with_callback(struct gm_port *p, void *message, unsigned int size, gm_size_t len,
			   unsigned int priority, unsigned int target_node_id, unsigned int target_port_id,
			   gm_send_completion_callback_t callback, void *context);
void gm_send_to_peer_with_callback(struct gm_port *p, void *message, unsigned int size, gm_size_t len,
				   unsigned int priority, unsigned int target_node_id,
				   gm_send_completion_callback_t callback, void *context);
void gm_send(struct gm_port *p, void *message, unsigned int size, gm_size_t len,
	     unsigned int priority, unsigned int target_node_id, unsigned int target_port_id);
void gm_send_to_peer(struct gm_port *p, void *message, unsigned int size, gm_size_t len,
		     unsigned int priority, unsigned int target_node_id);
void gm_datagram_send(struct gm_port *p, void *message, unsigned int size, gm_size_t len,
		      unsigned int priority, unsigned int target_node_id, unsigned int target_port_id,
		      gm_send_completion_callback_t callback, void *context);
void gm_datagram_send_4(struct gm_port *p, gm_u32_t message, unsigned int size, gm_size_t len,
			unsigned int priority, unsigned int target_node_id, unsigned int target_port_id,
			gm_send_completion_callback_t callback, void *context);
void gm_directed_send(struct gm_port *p, void *source_buffer, gm_remote_ptr_t target_buffer,
		      gm_size_t len, enum gm_priority priority, unsigned int target_node_id,
		      unsigned int target_port_id);
void gm_directed_send_with_callback(struct gm_port *p, void *source_buffer, gm_remote_ptr_t target_buffer,
				    gm_size_t len, enum gm_priority priority, unsigned int target_node_id,
				    unsigned int target_port_id, gm_send_completion_callback_t callback,
				    void *context);
void gm_put(struct gm_port *p, void *local_buffer, gm_remote_ptr_t remote_buffer, gm_size_t len,
	    enum gm_priority priority, unsigned int target_node_id, unsigned int target_port_id,
	    gm_send_completion_callback_t callback, void *context);
void gm_get(struct gm_port *p, gm_remote_ptr_t remote_buffer, void *local_buffer, gm_size_t len,
	    enum gm_priority priority, unsigned int target_node_id, unsigned int target_port_id,
	    gm_send_completion_callback_t callback, void *context);
gm_status_t gm_directcopy_get(struct gm_port *p, void *source_addr, void *target_addr, gm_size_t length,
			      unsigned int source_instance_id, unsigned int source_port_id);

/* ---- Tokens ---------------------------------------------------------------------- */

unsigned int gm_num_send_tokens(struct gm_port *p);
unsigned int gm_num_receive_tokens(struct gm_port *p);
int gm_alloc_send_token(struct gm_port *p, unsigned int priority);
void gm_free_send_token(struct gm_port *p, unsigned int priority);
void gm_free_send_tokens(struct gm_port *p, unsigned int priority, unsigned int count);
int gm_send_token_available(struct gm_port *p, unsigned int priority);

/* ---- Receiving ------------------------------------------------------------------- */

void gm_provide_receive_buffer(struct gm_port *p, void *ptr, unsigned int size, unsigned int priority);
void gm_provide_receive_buffer_with_tag(struct gm_port *p, void *ptr, unsigned int size,
					unsigned int priority, unsigned int tag);
gm_status_t gm_set_acceptable_sizes(struct gm_port *p, enum gm_priority priority, gm_size_t mask);
gm_recv_event_t *gm_receive(struct gm_port *p);
gm_recv_event_t *gm_blocking_receive(struct gm_port *p);
gm_recv_event_t *gm_blocking_receive_no_spin(struct gm_port *p);
void gm_unknown(struct gm_port *p, gm_recv_event_t *e);
int gm_receive_pending(struct gm_port *p);
int gm_next_event_peek(struct gm_port *p, gm_u16_t *sender);
void *gm_memorize_message(void *message, void *buffer, unsigned int len);

/* ---- Alarms and time --------------------------------------------------------------- */

void gm_initialize_alarm(gm_alarm_t *alarm);
void gm_set_alarm(struct gm_port *p, gm_alarm_t *alarm, gm_u64_t usecs,
		  gm_alarm_callback_t callback, void *context);
void gm_cancel_alarm(gm_alarm_t *alarm);
void gm_flush_alarm(struct gm_port *p);
gm_u64_t gm_ticks(struct gm_port *p);

/* ---- Recovery after a failed send --------------------------------------------------- */

void gm_resume_sending(struct gm_port *p, unsigned int priority, unsigned int target_node_id,
		       unsigned int target_port_id, gm_send_completion_callback_t callback, void *context);
void gm_drop_sends(struct gm_port *p, unsigned int priority, unsigned int target_node_id,
		   unsigned int target_port_id, gm_send_completion_callback_t callback, void *context);
gm_status_t gm_set_enable_nack_down(struct gm_port *p, int flag);

/* ---- Errors -------------------------------------------------------------------------- */

char *gm_strerror(gm_status_t status);
void gm_perror(const char *message, gm_status_t status);

/* ---- Portable helpers ------------------------------------------------------------------ */

void gm_bcopy(const void *from, void *to, gm_size_t len);
void gm_bzero(void *ptr, gm_size_t len);
void *gm_memset(void *ptr, int value, gm_size_t len);
int gm_bcmp(const void *a, const void *b, gm_size_t len);
int gm_memcmp(const void *a, const void *b, gm_size_t len);
gm_size_t gm_strlen(const char *s);
char *gm_strncpy(char *to, const char *from, int len);
int gm_strcmp(const char *a, const char *b);
int gm_strncmp(const char *a, const char *b, int len);
char *gm_strdup(const char *s);
int gm_printf(const char *format, ...) __attribute__((format(printf, 1, 2)));
int gm_eprintf(const char *format, ...) __attribute__((format(printf, 1, 2)));
void *gm_malloc(gm_size_t len);
void *gm_calloc(gm_size_t count, gm_size_t len);
void gm_free(void *ptr);
void *gm_page_alloc(void);
void gm_page_free(void *addr);
/* Page-aligned, zeroed, not registered (register it for puts and gets). */
void *gm_alloc_pages(gm_size_t len);
void gm_free_pages(void *addr, gm_size_t len);
int gm_strncasecmp(const char *a, const char *b, int len);
int gm_isprint(int c);
/* GM's prototypes: the CRC is a 32-bit value in an unsigned long;
   gm_log2_roundup(n) is ceil(log2(n)), the exponent, not the power. */
unsigned long gm_crc(void *ptr, gm_size_t len);
unsigned long gm_crc_str(const char *s);
int gm_rand(void);
void gm_srand(int seed);
/* A value of gm_rand in [0, modulus); 0 for a modulus of 0. */
unsigned int gm_rand_mod(unsigned int modulus);
unsigned long gm_log2_roundup(unsigned long n);
typedef gm_u32_t gm_pid_t;
gm_pid_t gm_getpid(void);
int gm_sleep(unsigned int seconds);
void gm_hex_dump(const void *ptr, gm_size_t len);

#define GM_HASH_SMOOTH 1 /* GM's flag for gm_create_hash; not used */

/* Hash tables: keys and data either point to the caller's memory (size 0)
   or are copied into the table (their size in bytes). */
struct gm_hash;
struct gm_hash *gm_create_hash(long (*gm_client_compare)(void *key1, void *key2),
			       unsigned long (*gm_client_hash)(void *key), gm_size_t key_len,
			       gm_size_t data_len, gm_size_t gm_min_entries, int flags);
void gm_destroy_hash(struct gm_hash *h);
void *gm_hash_remove(struct gm_hash *h, void *key);
void *gm_hash_find(struct gm_hash *h, void *key);
gm_status_t gm_hash_insert(struct gm_hash *h, void *key, void *datum);
void gm_hash_rekey(struct gm_hash *h, void *old_key, void *new_key);
long gm_hash_compare_strings(void *key1, void *key2);
unsigned long gm_hash_hash_string(void *key);
long gm_hash_compare_longs(void *key1, void *key2);
unsigned long gm_hash_hash_long(void *key);
long gm_hash_compare_ints(void *key1, void *key2);
unsigned long gm_hash_hash_int(void *key);
long gm_hash_compare_ptrs(void *key1, void *key2);
unsigned long gm_hash_hash_ptr(void *key);

/* Lookaside lists: a free list of equal-sized entries. */
struct gm_lookaside;
struct gm_lookaside *gm_create_lookaside(gm_size_t entry_len, gm_size_t min_entry_cnt);
void gm_destroy_lookaside(struct gm_lookaside *l);
void *gm_lookaside_alloc(struct gm_lookaside *l);
void *gm_lookaside_zalloc(struct gm_lookaside *l);
void gm_lookaside_free(void *ptr);

/* GM's buffer-debugging and mark types (their calls are not provided). */
enum gm_buf_status {
	gm_in_send = 0,
	gm_in_recv,
	gm_in_app,
	gm_invalid_status
};
struct gm_buf_handle {
	void *addr;
	int size;
	enum gm_buf_status status;
	struct gm_buf_handle *next;
};
typedef gm_size_t gm_mark_t;
struct gm_mark_set;

#ifdef __cplusplus
}
#endif
#endif /* _gm_h_ */
