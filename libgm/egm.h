/*
 * egm.h: libgm's private declarations, shared by its Go (cgo) and C files.
 * Not installed.
 */
#ifndef _egm_h_
#define _egm_h_

#include "gm.h"

/*
 * struct gm_port is the C side of a port: the program holds a pointer to
 * it; the Go side (type port) is found by slot. It is C memory, so the
 * events gm_receive returns and the FAST messages they point to stay put
 * while the program reads them (Go memory may not be kept by C).
 */
/* Receive buffers provided and not yet handed to the port (see api.c). */
#define EGM_PROVIDE_QUEUE 64
struct egm_provide {
	void *ptr;
	unsigned int size, priority, tag;
};

struct gm_port {
	int slot;               /* index of the Go port in libgm's port table */
	unsigned int id;        /* the port id */
	/*
	 * The provide queue: gm_provide_receive_buffer appends here, in C,
	 * and the next call into Go hands the buffers to the port, in order,
	 * before anything else (so a buffer provided before gm_receive is
	 * there for the frames that gm_receive reads). lock is a spinlock that
	 * C (__atomic builtins) and Go (sync/atomic) both take; sleeping is
	 * set, under it, while a thread of the program sleeps in the library:
	 * providers then call into Go themselves, so that a buffer never waits
	 * in the queue for a sleeper.
	 */
	gm_u32_t lock;
	gm_u32_t sleeping;
	gm_u32_t nprovide;
	struct egm_provide provide[EGM_PROVIDE_QUEUE];
	gm_recv_event_t ev;     /* the event gm_receive returned last */
	gm_u8_t fast[GM_MAX_FAST_RECV_BYTES] __attribute__((aligned(16)));
	gm_up_n_t sent_list[GM_NUM_SEND_TOKENS + 2]; /* GM_SENT_EVENT's list */
	char host_name[GM_MAX_HOST_NAME_LEN + 1];    /* gm_node_id_to_host_name */
};

/* Calls from Go to the program's function pointers (Go cannot call them). */
void egm_call_send(gm_send_completion_callback_t f, struct gm_port *p, void *ctx, gm_status_t s);
void egm_call_alarm(gm_alarm_callback_t f, void *ctx);
/* Offsets of the recv and sent members' fields, checked by Go at start. */
int egm_layout(int field);

#endif
