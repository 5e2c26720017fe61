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
 * gm_ntoh_u8/u16/u32/u64 and gm_ntohp. Define GM_STRONG_TYPES before
 * including this file to make a missing conversion a compile error.
 */
#ifndef _gm_h_
#define _gm_h_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- API versions (GM_API_VERSION defaults to GM 2.0's) ---------------- */

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
#define GM_API_VERSION GM_API_VERSION_2_0
#endif

/* EtherGM's libgm; programs may test for it. */
#define GM_ETHERGM 1

enum gm_api_version {
	_GM_API_VERSION_1_0 = GM_API_VERSION_1_0,
	_GM_API_VERSION_2_0 = GM_API_VERSION_2_0,
	_GM_API_VERSION_2_0_16 = GM_API_VERSION_2_0_16
};

/* ---- Integer types --------------------------------------------------------- */

typedef int8_t gm_s8_t;
typedef int16_t gm_s16_t;
typedef int32_t gm_s32_t;
typedef int64_t gm_s64_t;
typedef uint8_t gm_u8_t;
typedef uint16_t gm_u16_t;
typedef uint32_t gm_u32_t;
typedef uint64_t gm_u64_t;
/* gm_up_t holds a user-space pointer; gm_size_t a length. */
typedef uintptr_t gm_up_t;
typedef unsigned long gm_size_t;
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
#ifdef GM_STRONG_TYPES
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
#define _GM_N(x) ((x).n)
#define _GM_MK(t, v) ((t){ (v) })
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
#define _GM_N(x) (x)
#define _GM_MK(t, v) ((t)(v))
#endif

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define _GM_BE16(x) ((gm_u16_t)(x))
#define _GM_BE32(x) ((gm_u32_t)(x))
#define _GM_BE64(x) ((gm_u64_t)(x))
#else
#define _GM_BE16(x) __builtin_bswap16((gm_u16_t)(x))
#define _GM_BE32(x) __builtin_bswap32((gm_u32_t)(x))
#define _GM_BE64(x) __builtin_bswap64((gm_u64_t)(x))
#endif

static inline gm_u8_t gm_ntoh_u8(gm_u8_n_t x) { return _GM_N(x); }
static inline gm_u16_t gm_ntoh_u16(gm_u16_n_t x) { return _GM_BE16(_GM_N(x)); }
static inline gm_u32_t gm_ntoh_u32(gm_u32_n_t x) { return _GM_BE32(_GM_N(x)); }
static inline gm_u64_t gm_ntoh_u64(gm_u64_n_t x) { return _GM_BE64(_GM_N(x)); }
static inline gm_s8_t gm_ntoh_s8(gm_s8_n_t x) { return _GM_N(x); }
static inline gm_s16_t gm_ntoh_s16(gm_s16_n_t x) { return (gm_s16_t)_GM_BE16(_GM_N(x)); }
static inline gm_s32_t gm_ntoh_s32(gm_s32_n_t x) { return (gm_s32_t)_GM_BE32(_GM_N(x)); }
static inline gm_s64_t gm_ntoh_s64(gm_s64_n_t x) { return (gm_s64_t)_GM_BE64(_GM_N(x)); }
static inline gm_u8_n_t gm_hton_u8(gm_u8_t x) { return _GM_MK(gm_u8_n_t, x); }
static inline gm_u16_n_t gm_hton_u16(gm_u16_t x) { return _GM_MK(gm_u16_n_t, _GM_BE16(x)); }
static inline gm_u32_n_t gm_hton_u32(gm_u32_t x) { return _GM_MK(gm_u32_n_t, _GM_BE32(x)); }
static inline gm_u64_n_t gm_hton_u64(gm_u64_t x) { return _GM_MK(gm_u64_n_t, _GM_BE64(x)); }
static inline gm_s8_n_t gm_hton_s8(gm_s8_t x) { return _GM_MK(gm_s8_n_t, x); }
static inline gm_s16_n_t gm_hton_s16(gm_s16_t x) { return _GM_MK(gm_s16_n_t, (gm_s16_t)_GM_BE16(x)); }
static inline gm_s32_n_t gm_hton_s32(gm_s32_t x) { return _GM_MK(gm_s32_n_t, (gm_s32_t)_GM_BE32(x)); }
static inline gm_s64_n_t gm_hton_s64(gm_s64_t x) { return _GM_MK(gm_s64_n_t, (gm_s64_t)_GM_BE64(x)); }
#if __SIZEOF_POINTER__ == 8
static inline void *gm_ntohp(gm_up_n_t x) { return (void *)(uintptr_t)_GM_BE64(_GM_N(x)); }
static inline gm_up_n_t gm_htonp(void *p) { return _GM_MK(gm_up_n_t, _GM_BE64((uintptr_t)p)); }
#else
static inline void *gm_ntohp(gm_up_n_t x) { return (void *)(uintptr_t)_GM_BE32(_GM_N(x)); }
static inline gm_up_n_t gm_htonp(void *p) { return _GM_MK(gm_up_n_t, _GM_BE32((uintptr_t)p)); }
#endif
/* GM-1's names. */
#define gm_ntohc(x) gm_ntoh_u8(x)
#define gm_ntohs(x) gm_ntoh_u16(x)
#define gm_ntohl(x) gm_ntoh_u32(x)
#define gm_ntohll(x) gm_ntoh_u64(x)
#define gm_htonc(x) gm_hton_u8(x)
#define gm_htons(x) gm_hton_u16(x)
#define gm_htonl(x) gm_hton_u32(x)
#define gm_htonll(x) gm_hton_u64(x)

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
	GM_NUM_RECV_EVENT_TYPES
};

/*
 * Every member is GM_RDMA_GRANULARITY (64) bytes and ends with its type
 * byte, so GM_RECV_EVENT_TYPE reads any of them.
 */
typedef struct gm_recv {
	gm_u8_n_t _rdma_padding[GM_RDMA_GRANULARITY - 16 - 2 * sizeof(gm_up_n_t)];
	gm_up_n_t message;        /* FAST events: the message, in library memory */
	gm_up_n_t buffer;         /* the buffer the program provided */
	gm_u32_n_t ip_checksum;
	gm_u32_n_t length;        /* bytes received */
	gm_u16_n_t sender_node_id;
	gm_u16_n_t _reserved_after_sender_node_id;
	gm_u8_n_t tag;            /* the buffer's tag */
	gm_u8_n_t size;           /* the size class */
	gm_u8_n_t sender_port_id;
	gm_u8_n_t type;
} gm_recv_t;

typedef struct gm_sent {
	gm_u8_n_t _rdma_padding[GM_RDMA_GRANULARITY - 8 - sizeof(gm_up_n_t)];
	gm_up_n_t message_list;   /* points to a null-terminated gm_up_n_t list */
	gm_u8_n_t _reserved[7];
	gm_u8_n_t type;
} gm_sent_t;

typedef struct gm_failed_send_event {
	gm_u8_n_t _rdma_padding[GM_RDMA_GRANULARITY - 8 - sizeof(gm_up_n_t)];
	gm_up_n_t message;
	gm_u16_n_t target_node_id;
	gm_u8_n_t _reserved[3];
	gm_u8_n_t target_subport_id;
	gm_u8_n_t _reserved2;
	gm_u8_n_t type;
} gm_failed_send_event_t;

typedef struct gm_flushed_alarm {
	gm_u8_n_t _rdma_padding[GM_RDMA_GRANULARITY - 8];
	gm_u32_n_t usecs_remaining;
	gm_u8_n_t _reserved[3];
	gm_u8_n_t type;
} gm_flushed_alarm_t;

typedef struct gm_fatal_firmware_error {
	gm_u8_n_t _rdma_padding[GM_RDMA_GRANULARITY - 8];
	gm_u32_n_t status;
	gm_u8_n_t _reserved[3];
	gm_u8_n_t type;
} gm_fatal_firmware_error_t;

typedef union gm_recv_event {
	gm_recv_t recv;
	gm_sent_t sent;
	gm_failed_send_event_t failed_send;
	gm_flushed_alarm_t flushed_alarm;
	gm_fatal_firmware_error_t fatal_firmware_error;
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
/* GM's prototypes: the CRC is a 32-bit value in an unsigned long;
   gm_log2_roundup(n) is ceil(log2(n)), the exponent, not the power. */
unsigned long gm_crc(void *ptr, gm_size_t len);
unsigned long gm_crc_str(const char *s);
int gm_rand(void);
void gm_srand(int seed);
unsigned long gm_log2_roundup(unsigned long n);
typedef gm_u32_t gm_pid_t;
gm_pid_t gm_getpid(void);
int gm_sleep(unsigned int seconds);
void gm_hex_dump(const void *ptr, gm_size_t len);

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

#ifdef __cplusplus
}
#endif
#endif /* _gm_h_ */
