/*
 * api.c: GM's public C functions. Most call libgm's Go side (the egm_*
 * functions exported from the Go files); the ones that need no port state
 * are plain C here, so that they cost no call into Go.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "egm.h"
#include "_cgo_export.h"

#if defined(__x86_64__) || defined(__i386__)
#define egm_pause() __builtin_ia32_pause()
#else
#define egm_pause() __atomic_thread_fence(__ATOMIC_SEQ_CST)
#endif

void egm_call_send(gm_send_completion_callback_t f, struct gm_port *p, void *ctx, gm_status_t s)
{
	f(p, ctx, s);
}

void egm_call_alarm(gm_alarm_callback_t f, void *ctx)
{
	f(ctx);
}

int egm_layout(int field)
{
	switch (field) {
	case 0: return (int)sizeof(gm_recv_event_t);
	case 1: return (int)offsetof(gm_recv_t, message);
	case 2: return (int)offsetof(gm_recv_t, buffer);
	case 3: return (int)offsetof(gm_recv_t, length);
	case 4: return (int)offsetof(gm_recv_t, sender_node_id);
	case 5: return (int)offsetof(gm_recv_t, tag);
	case 6: return (int)offsetof(gm_recv_t, size);
	case 7: return (int)offsetof(gm_recv_t, sender_port_id);
	case 8: return (int)offsetof(gm_recv_t, type);
	case 9: return (int)offsetof(gm_sent_t, message_list);
	case 10: return (int)sizeof(gm_up_n_t);
	}
	return -1;
}

/* ---- Library and port lifetime ---- */

gm_status_t gm_init(void) { return egm_init(); }
void gm_finalize(void) { egm_finalize(); }

gm_status_t gm_open(struct gm_port **pp, unsigned int unit, unsigned int port,
		    const char *port_name, enum gm_api_version version)
{
	struct gm_port *p;
	gm_status_t s;

	if (pp == NULL)
		return GM_INVALID_PARAMETER;
	*pp = NULL;
	if (posix_memalign((void **)&p, 64, sizeof *p) != 0)
		return GM_OUT_OF_MEMORY;
	memset(p, 0, sizeof *p);
	p->slot = -1;
	p->id = port;
	s = egm_open(p, unit, port, (char *)(port_name ? port_name : ""), (unsigned int)version);
	if (s != GM_SUCCESS) {
		free(p);
		return s;
	}
	*pp = p;
	return GM_SUCCESS;
}

void gm_close(struct gm_port *p)
{
	if (p == NULL)
		return;
	egm_close(p);
	free(p);
}

unsigned int gm_num_ports(struct gm_port *p) { (void)p; return GM_NUM_PORTS; }
unsigned int gm_get_port_id(struct gm_port *p) { return p->id; }

struct on_exit_handler {
	gm_on_exit_callback_t f;
	void *arg;
};
static pthread_mutex_t on_exit_mu = PTHREAD_MUTEX_INITIALIZER;
static struct on_exit_handler *on_exit_list;
static size_t on_exit_len, on_exit_cap;

gm_status_t gm_on_exit(gm_on_exit_callback_t callback, void *arg)
{
	gm_status_t s = GM_SUCCESS;

	if (callback == NULL)
		return GM_INVALID_PARAMETER;
	pthread_mutex_lock(&on_exit_mu);
	if (on_exit_len == on_exit_cap) {
		size_t n = on_exit_cap ? 2 * on_exit_cap : 8;
		struct on_exit_handler *l = realloc(on_exit_list, n * sizeof *l);
		if (l == NULL) {
			s = GM_OUT_OF_MEMORY;
			goto out;
		}
		on_exit_list = l;
		on_exit_cap = n;
	}
	on_exit_list[on_exit_len].f = callback;
	on_exit_list[on_exit_len].arg = arg;
	on_exit_len++;
out:
	pthread_mutex_unlock(&on_exit_mu);
	return s;
}

/* gm_exit runs the gm_on_exit handlers, last registered first, closes the
   ports still open and exits with the status as exit code (0 for
   GM_SUCCESS). */
void gm_exit(gm_status_t status)
{
	for (;;) {
		struct on_exit_handler h;

		pthread_mutex_lock(&on_exit_mu);
		if (on_exit_len == 0) {
			pthread_mutex_unlock(&on_exit_mu);
			break;
		}
		h = on_exit_list[--on_exit_len];
		pthread_mutex_unlock(&on_exit_mu);
		h.f(status, h.arg);
	}
	egm_close_all();
	exit(status == GM_SUCCESS ? 0 : (int)status);
}

void gm_abort(void)
{
	abort();
}

/*
 * _gm_get_kernel_build_id is one of GM's undocumented calls that a
 * communication library (ARMCI) declares itself and calls to tell GM 1.x
 * from 2.x; gm.h does not declare it, as GM's did not.
 */
char *_gm_get_kernel_build_id(struct gm_port *p);
char *_gm_get_kernel_build_id(struct gm_port *p)
{
	static char id[] = "2.0.16 EtherGM";

	(void)p;
	return id;
}

/* ---- Identity and names ---- */

gm_status_t gm_get_node_id(struct gm_port *p, unsigned int *n) { return egm_get_node_id(p, n); }
gm_status_t gm_get_node_type(struct gm_port *p, int *t)
{
	(void)p;
	if (t == NULL)
		return GM_INVALID_PARAMETER;
	*t = GM_NODE_TYPE_GM;
	return GM_SUCCESS;
}
gm_status_t gm_node_id_to_global_id(struct gm_port *p, unsigned int n, unsigned int *g)
{
	return egm_node_id_to_global_id(p, n, g);
}
gm_status_t gm_global_id_to_node_id(struct gm_port *p, unsigned int g, unsigned int *n)
{
	return egm_global_id_to_node_id(p, g, n);
}
gm_status_t gm_get_host_name(struct gm_port *p, char name[GM_MAX_HOST_NAME_LEN])
{
	return egm_get_host_name(p, name, GM_MAX_HOST_NAME_LEN);
}
gm_status_t gm_max_node_id(struct gm_port *p, unsigned int *n) { return egm_max_node_id(p, n, 0); }
gm_status_t gm_max_node_id_in_use(struct gm_port *p, unsigned int *n) { return egm_max_node_id(p, n, 1); }
gm_status_t gm_max_node_id_inuse(struct gm_port *p, unsigned int *n) { return egm_max_node_id(p, n, 1); }

unsigned int gm_host_name_to_node_id(struct gm_port *p, char *name)
{
	unsigned int n = GM_NO_SUCH_NODE_ID;

	if (egm_host_name_to_node_id(p, name, &n) != GM_SUCCESS)
		return GM_NO_SUCH_NODE_ID;
	return n;
}
gm_status_t gm_host_name_to_node_id_ex(struct gm_port *p, unsigned int timeout_usecs,
				       const char *name, unsigned int *n)
{
	(void)timeout_usecs; /* the lookup is local: it never waits */
	return egm_host_name_to_node_id(p, (char *)name, n);
}
char *gm_node_id_to_host_name(struct gm_port *p, unsigned int n)
{
	if (egm_node_id_to_host_name(p, n, p->host_name, sizeof p->host_name) != GM_SUCCESS)
		return NULL;
	return p->host_name;
}
gm_status_t gm_node_id_to_host_name_ex(struct gm_port *p, unsigned int timeout_usecs,
				       unsigned int n, char (*name)[GM_MAX_HOST_NAME_LEN + 1])
{
	(void)timeout_usecs;
	if (name == NULL)
		return GM_INVALID_PARAMETER;
	return egm_node_id_to_host_name(p, n, *name, GM_MAX_HOST_NAME_LEN + 1);
}
gm_status_t gm_node_id_to_unique_id(struct gm_port *p, unsigned int n, char unique[6])
{
	return egm_node_id_to_unique_id(p, n, unique);
}
gm_status_t gm_unique_id_to_node_id(struct gm_port *p, char unique[6], unsigned int *n)
{
	return egm_unique_id_to_node_id(p, unique, n);
}
gm_status_t gm_unique_id(struct gm_port *p, char unique[6]) { return egm_unique_id(p, unique, 0); }
gm_status_t gm_get_unique_board_id(struct gm_port *p, char unique[6]) { return egm_unique_id(p, unique, 0); }
gm_status_t gm_get_mapper_unique_id(struct gm_port *p, char unique[6]) { return egm_unique_id(p, unique, 1); }

/* ---- Memory ---- */

void *gm_dma_malloc(struct gm_port *p, gm_size_t length)
{
	void *m;
	gm_size_t n = (length + GM_PAGE_LEN - 1) & ~(gm_size_t)(GM_PAGE_LEN - 1);

	if (n == 0)
		n = GM_PAGE_LEN;
	if (n < length || posix_memalign(&m, GM_PAGE_LEN, n) != 0)
		return NULL;
	if (egm_dma_register(p, m, n) != GM_SUCCESS) {
		free(m);
		return NULL;
	}
	return m;
}

void *gm_dma_calloc(struct gm_port *p, gm_size_t count, gm_size_t length)
{
	void *m;

	if (length != 0 && count > (gm_size_t)-1 / length)
		return NULL;
	m = gm_dma_malloc(p, count * length);
	if (m != NULL)
		memset(m, 0, count * length);
	return m;
}

void gm_dma_free(struct gm_port *p, void *addr)
{
	if (addr == NULL)
		return;
	if (egm_dma_deregister(p, addr) == GM_SUCCESS)
		free(addr);
}

gm_status_t gm_register_memory(struct gm_port *p, void *ptr, gm_size_t length)
{
	return egm_register_memory(p, ptr, length, 1);
}
gm_status_t gm_register_memory_ex(struct gm_port *p, void *ptr, gm_size_t length, void *pvma)
{
	(void)pvma;
	return egm_register_memory(p, ptr, length, 1);
}
gm_status_t gm_deregister_memory(struct gm_port *p, void *ptr, gm_size_t length)
{
	return egm_register_memory(p, ptr, length, 0);
}
gm_status_t gm_allow_remote_memory_access(struct gm_port *p) { return egm_allow_remote_memory_access(p); }

/* ---- Sizes ---- */

unsigned int gm_min_size_for_length(gm_size_t length)
{
	unsigned int s = 3;

	while (s < 63 && ((gm_size_t)1 << s) - 8 < length)
		s++;
	return s;
}
gm_size_t gm_max_length_for_size(unsigned int size)
{
	if (size >= 8 * sizeof(gm_size_t))
		return 0;
	return GM_MAX_LENGTH_FOR_SIZE(size);
}
unsigned int gm_min_message_size(struct gm_port *p) { (void)p; return GM_MIN_MESSAGE_SIZE; }
unsigned int gm_mtu(struct gm_port *p) { (void)p; return GM_MTU; }

/* ---- Sending ---- */

enum { SEND, SEND_LEGACY, DATAGRAM, PUT, GET, RESUME, DROP, PUT_LEGACY };

void gm_send_with_callback(struct gm_port *p, void *message, unsigned int size, gm_size_t len,
			   unsigned int priority, unsigned int node, unsigned int port,
			   gm_send_completion_callback_t cb, void *ctx)
{
	egm_send(p, SEND, message, 0, len, size, priority, node, (int)port, cb, ctx);
}
void gm_send_to_peer_with_callback(struct gm_port *p, void *message, unsigned int size, gm_size_t len,
				   unsigned int priority, unsigned int node,
				   gm_send_completion_callback_t cb, void *ctx)
{
	egm_send(p, SEND, message, 0, len, size, priority, node, (int)p->id, cb, ctx);
}
void gm_send(struct gm_port *p, void *message, unsigned int size, gm_size_t len,
	     unsigned int priority, unsigned int node, unsigned int port)
{
	egm_send(p, SEND_LEGACY, message, 0, len, size, priority, node, (int)port, NULL, NULL);
}
void gm_send_to_peer(struct gm_port *p, void *message, unsigned int size, gm_size_t len,
		     unsigned int priority, unsigned int node)
{
	egm_send(p, SEND_LEGACY, message, 0, len, size, priority, node, (int)p->id, NULL, NULL);
}
void gm_datagram_send(struct gm_port *p, void *message, unsigned int size, gm_size_t len,
		      unsigned int priority, unsigned int node, unsigned int port,
		      gm_send_completion_callback_t cb, void *ctx)
{
	egm_send(p, DATAGRAM, message, 0, len, size, priority, node, (int)port, cb, ctx);
}
void gm_datagram_send_4(struct gm_port *p, gm_u32_t message, unsigned int size, gm_size_t len,
			unsigned int priority, unsigned int node, unsigned int port,
			gm_send_completion_callback_t cb, void *ctx)
{
	/* The four bytes travel as they lie in memory; the library keeps them. */
	egm_send(p, DATAGRAM, NULL, message, len, size, priority, node, (int)port, cb, ctx);
}
void gm_directed_send(struct gm_port *p, void *source, gm_remote_ptr_t target, gm_size_t len,
		      enum gm_priority priority, unsigned int node, unsigned int port)
{
	egm_send(p, PUT_LEGACY, source, target, len, 0, priority, node, (int)port, NULL, NULL);
}
void gm_directed_send_with_callback(struct gm_port *p, void *source, gm_remote_ptr_t target,
				    gm_size_t len, enum gm_priority priority, unsigned int node,
				    unsigned int port, gm_send_completion_callback_t cb, void *ctx)
{
	egm_send(p, PUT, source, target, len, 0, priority, node, (int)port, cb, ctx);
}
void gm_put(struct gm_port *p, void *local, gm_remote_ptr_t remote, gm_size_t len,
	    enum gm_priority priority, unsigned int node, unsigned int port,
	    gm_send_completion_callback_t cb, void *ctx)
{
	egm_send(p, PUT, local, remote, len, 0, priority, node, (int)port, cb, ctx);
}
void gm_get(struct gm_port *p, gm_remote_ptr_t remote, void *local, gm_size_t len,
	    enum gm_priority priority, unsigned int node, unsigned int port,
	    gm_send_completion_callback_t cb, void *ctx)
{
	egm_send(p, GET, local, remote, len, 0, priority, node, (int)port, cb, ctx);
}
void gm_resume_sending(struct gm_port *p, unsigned int priority, unsigned int node,
		       unsigned int port, gm_send_completion_callback_t cb, void *ctx)
{
	egm_send(p, RESUME, NULL, 0, 0, 0, priority, node, (int)port, cb, ctx);
}
void gm_drop_sends(struct gm_port *p, unsigned int priority, unsigned int node,
		   unsigned int port, gm_send_completion_callback_t cb, void *ctx)
{
	egm_send(p, DROP, NULL, 0, 0, 0, priority, node, (int)port, cb, ctx);
}
gm_status_t gm_set_enable_nack_down(struct gm_port *p, int flag)
{
	/* A closed port is always answered with a nack at once (the sender's
	   GM_SEND_TARGET_PORT_CLOSED): the behaviour GM's flag turns on. */
	(void)p;
	(void)flag;
	return GM_SUCCESS;
}
gm_status_t gm_directcopy_get(struct gm_port *p, void *source_addr, void *target_addr, gm_size_t length,
			      unsigned int source_instance_id, unsigned int source_port_id)
{
	return egm_directcopy_get(p, source_addr, target_addr, length, source_instance_id, source_port_id);
}

/* ---- Tokens ---- */

unsigned int gm_num_send_tokens(struct gm_port *p) { return egm_tokens(p, 0); }
unsigned int gm_num_receive_tokens(struct gm_port *p) { return egm_tokens(p, 1); }
int gm_alloc_send_token(struct gm_port *p, unsigned int priority) { return egm_send_token(p, 0, priority, 1); }
void gm_free_send_token(struct gm_port *p, unsigned int priority) { egm_send_token(p, 1, priority, 1); }
void gm_free_send_tokens(struct gm_port *p, unsigned int priority, unsigned int count)
{
	egm_send_token(p, 3, priority, count);
}
int gm_send_token_available(struct gm_port *p, unsigned int priority) { return egm_send_token(p, 2, priority, 1); }

/* ---- Receiving ---- */

/*
 * Providing a buffer queues it in C, at no call into Go: a ping-pong
 * provides once per message on each side, and a call into Go costs far
 * more than the queueing. The queue goes to the port at the next call into
 * Go; see struct gm_port.
 */
static void provide(struct gm_port *p, void *ptr, unsigned int size, unsigned int priority, unsigned int tag)
{
	int queued = 0;

	if (p == NULL) {
		egm_provide_receive_buffer(p, ptr, size, priority, tag); /* reports the misuse */
		return;
	}
	while (__atomic_exchange_n(&p->lock, 1, __ATOMIC_ACQUIRE) != 0)
		egm_pause();
	if (!p->sleeping && p->nprovide < EGM_PROVIDE_QUEUE) {
		struct egm_provide *q = &p->provide[p->nprovide++];
		q->ptr = ptr;
		q->size = size;
		q->priority = priority;
		q->tag = tag;
		queued = 1;
	}
	__atomic_store_n(&p->lock, 0, __ATOMIC_RELEASE);
	if (!queued)
		egm_provide_receive_buffer(p, ptr, size, priority, tag);
}

void gm_provide_receive_buffer(struct gm_port *p, void *ptr, unsigned int size, unsigned int priority)
{
	provide(p, ptr, size, priority, 0);
}
void gm_provide_receive_buffer_with_tag(struct gm_port *p, void *ptr, unsigned int size,
					unsigned int priority, unsigned int tag)
{
	provide(p, ptr, size, priority, tag);
}
gm_status_t gm_set_acceptable_sizes(struct gm_port *p, enum gm_priority priority, gm_size_t mask)
{
	return egm_set_acceptable_sizes(p, priority, mask);
}
gm_recv_event_t *gm_receive(struct gm_port *p) { return egm_receive(p, 0); }
gm_recv_event_t *gm_blocking_receive(struct gm_port *p) { return egm_receive(p, 1); }
gm_recv_event_t *gm_blocking_receive_no_spin(struct gm_port *p) { return egm_receive(p, 2); }
void gm_unknown(struct gm_port *p, gm_recv_event_t *e) { egm_unknown(p, e); }
int gm_receive_pending(struct gm_port *p) { return egm_receive_pending(p); }
int gm_next_event_peek(struct gm_port *p, gm_u16_t *sender) { return egm_next_event_peek(p, sender); }

void *gm_memorize_message(void *message, void *buffer, unsigned int len)
{
	if (message != buffer && len > 0)
		memmove(buffer, message, len);
	return buffer;
}

/* ---- Alarms and time ---- */

void gm_initialize_alarm(gm_alarm_t *a) { egm_initialize_alarm(a); }
void gm_set_alarm(struct gm_port *p, gm_alarm_t *a, gm_u64_t usecs, gm_alarm_callback_t cb, void *ctx)
{
	egm_set_alarm(p, a, usecs, cb, ctx);
}
void gm_cancel_alarm(gm_alarm_t *a) { egm_cancel_alarm(a); }
void gm_flush_alarm(struct gm_port *p)
{
	/* No NIC alarm to flush: alarms are the library's own. */
	(void)p;
}
gm_u64_t gm_ticks(struct gm_port *p) { return egm_ticks(p); }

/* ---- Errors ---- */

char *gm_strerror(gm_status_t status) { return egm_strerror(status); }
void gm_perror(const char *message, gm_status_t status)
{
	if (message != NULL && *message != '\0')
		fprintf(stderr, "%s: %s\n", message, gm_strerror(status));
	else
		fprintf(stderr, "%s\n", gm_strerror(status));
}
