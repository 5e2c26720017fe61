/*
 * common.h: checks and small helpers shared by the C test programs of
 * libgm/ctest (not part of GM's API; the programs use GM only through
 * "gm.h").
 *
 * Conventions:
 *   - a check that fails prints "FAIL file:line: condition: detail" on
 *     stderr and the program goes on; finish() exits 1 if any failed;
 *   - a condition that makes going on pointless is FATAL (exit 2);
 *   - two-process programs take: ROLE PEER-HOST MY-PORT PEER-PORT [...],
 *     ROLE being "server" or "client"; a server prints "ready" once its
 *     port is open and its receive buffers are provided;
 *   - every wait is bounded (DEADLINE_SEC, 60 s) so that a lost message
 *     ends in a readable failure rather than a hang.
 */
#ifndef CTEST_COMMON_H
#define CTEST_COMMON_H

#include "gm.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEADLINE_SEC 60

static int failures;

#define CHECK(cond, ...)                                                          \
	do {                                                                      \
		if (!(cond)) {                                                    \
			failures++;                                               \
			fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__);                             \
			fputc('\n', stderr);                                      \
			fflush(stderr);                                           \
		}                                                                 \
	} while (0)

#define FATAL(...)                                                            \
	do {                                                                  \
		fprintf(stderr, "FATAL %s:%d: ", __FILE__, __LINE__);         \
		fprintf(stderr, __VA_ARGS__);                                 \
		fputc('\n', stderr);                                          \
		exit(2);                                                      \
	} while (0)

static inline int finish(const char *prog)
{
	fflush(stdout);
	if (failures) {
		fprintf(stderr, "%s: %d check(s) failed\n", prog, failures);
		return 1;
	}
	printf("%s: PASS\n", prog);
	return 0;
}

static inline double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* deadline_after returns the time DEADLINE_SEC from now, in µs. */
static inline double deadline_after(void) { return now_us() + DEADLINE_SEC * 1e6; }

/* expire fails the program if the deadline passed while waiting for what. */
static inline void expire(double deadline, const char *what)
{
	if (now_us() > deadline)
		FATAL("timed out after %d s waiting for %s", DEADLINE_SEC, what);
}

/* open_port opens port on board 0 as every GM program does, or exits. */
static inline struct gm_port *open_port(unsigned int port, const char *name)
{
	struct gm_port *p = NULL;
	gm_status_t st = gm_init();
	if (st != GM_SUCCESS) {
		gm_perror("gm_init", st);
		exit(2);
	}
	st = gm_open(&p, 0, port, name, GM_API_VERSION);
	if (st != GM_SUCCESS) {
		fprintf(stderr, "gm_open of port %u: ", port);
		fflush(stderr);
		gm_perror("gm_open", st);
		exit(2);
	}
	if (p == NULL)
		FATAL("gm_open returned GM_SUCCESS and no port");
	return p;
}

static inline void close_port(struct gm_port *p)
{
	gm_close(p);
	gm_finalize();
}

/* dma_alloc is gm_dma_malloc that exits on failure and remembers the
   memory for dma_free_port, which gives back a port's memory before
   gm_close (LeakSanitizer checks that nothing is left). */
static void *dma_mem[1024];
static struct gm_port *dma_port[1024];

static inline void *dma_alloc(struct gm_port *p, gm_size_t len)
{
	void *m = gm_dma_malloc(p, len);
	if (m == NULL)
		FATAL("gm_dma_malloc of %lu bytes failed", len);
	for (int i = 0; i < 1024; i++)
		if (dma_mem[i] == NULL) {
			dma_mem[i] = m;
			dma_port[i] = p;
			return m;
		}
	FATAL("more than 1024 gm_dma_malloc'd blocks");
}

static inline void dma_free_port(struct gm_port *p)
{
	for (int i = 0; i < 1024; i++)
		if (dma_mem[i] != NULL && dma_port[i] == p) {
			gm_dma_free(p, dma_mem[i]);
			dma_mem[i] = NULL;
		}
}

/* The arguments of a two-process program. */
struct peer {
	int server;            /* role */
	const char *host;      /* the other process's host name */
	unsigned int my_port;  /* GM port this process opens */
	unsigned int port;     /* the other process's port */
	unsigned int node;     /* the other process's node id (lookup_peer) */
};

static inline struct peer parse_peer(int argc, char **argv, int extra, const char *usage)
{
	struct peer pr;
	memset(&pr, 0, sizeof pr);
	if (argc < 5 + extra || (strcmp(argv[1], "server") && strcmp(argv[1], "client"))) {
		fprintf(stderr, "usage: %s server|client PEER-HOST MY-PORT PEER-PORT %s\n", argv[0], usage);
		exit(2);
	}
	pr.server = strcmp(argv[1], "server") == 0;
	pr.host = argv[2];
	pr.my_port = (unsigned int)atoi(argv[3]);
	pr.port = (unsigned int)atoi(argv[4]);
	return pr;
}

/* lookup_peer finds the peer's node id by host name, as GM programs do. */
static inline void lookup_peer(struct gm_port *p, struct peer *pr)
{
	pr->node = gm_host_name_to_node_id(p, (char *)pr->host);
	if (pr->node == GM_NO_SUCH_NODE_ID)
		FATAL("gm_host_name_to_node_id(%s): no such node", pr->host);
}

/* pattern_byte is byte i of the verification pattern seed. */
static inline unsigned char pattern_byte(unsigned int seed, size_t i)
{
	return (unsigned char)(seed * 131u + i * 7u + (i >> 8) * 3u + (i >> 16));
}

static inline void fill(void *buf, size_t len, unsigned int seed)
{
	unsigned char *b = buf;
	for (size_t i = 0; i < len; i++)
		b[i] = pattern_byte(seed, i);
}

/* verify returns the index of the first byte that differs from the
   pattern, or len. */
static inline size_t verify(const void *buf, size_t len, unsigned int seed)
{
	const unsigned char *b = buf;
	for (size_t i = 0; i < len; i++)
		if (b[i] != pattern_byte(seed, i))
			return i;
	return len;
}

static inline int is_recv_type(int type)
{
	return type >= GM_RECV_EVENT && type <= GM_FAST_HIGH_PEER_RECV_EVENT;
}

static inline int is_fast_type(int type)
{
	return type >= GM_FAST_RECV_EVENT && type <= GM_FAST_HIGH_PEER_RECV_EVENT;
}

static inline int is_high_type(int type)
{
	return type == GM_HIGH_RECV_EVENT || type == GM_HIGH_PEER_RECV_EVENT ||
	       type == GM_FAST_HIGH_RECV_EVENT || type == GM_FAST_HIGH_PEER_RECV_EVENT;
}

static inline int is_peer_type(int type)
{
	return type == GM_PEER_RECV_EVENT || type == GM_HIGH_PEER_RECV_EVENT ||
	       type == GM_FAST_PEER_RECV_EVENT || type == GM_FAST_HIGH_PEER_RECV_EVENT;
}

/* expected_type is the receive event type GM gives a message of len bytes
   and priority prio, sent from a port with the receiver's port number
   (peer) or not. */
static inline int expected_type(gm_size_t len, unsigned int prio, int peer)
{
	int t = prio == GM_HIGH_PRIORITY ? GM_HIGH_RECV_EVENT : GM_RECV_EVENT;
	if (peer)
		t = prio == GM_HIGH_PRIORITY ? GM_HIGH_PEER_RECV_EVENT : GM_PEER_RECV_EVENT;
	if (len <= GM_MAX_FAST_RECV_BYTES)
		t += GM_FAST_RECV_EVENT - GM_RECV_EVENT;
	return t;
}

/* event_data is where a receive event's message is: in library memory for
   FAST events, in the program's buffer otherwise. */
static inline void *event_data(gm_recv_event_t *e)
{
	if (is_fast_type(GM_RECV_EVENT_TYPE(e)))
		return gm_ntohp(e->recv.message);
	return gm_ntohp(e->recv.buffer);
}

/* A send's completion, recorded by record_cb. */
struct completion {
	int done;
	gm_status_t status; /* the last one */
	int failed;          /* how many were not GM_SUCCESS */
	gm_status_t first_bad;
};

/* send_tokens is the program's count of free send tokens: set it to
   gm_num_send_tokens() after gm_open, take one per send, give it back in
   the send's callback (record_cb does). */
static unsigned int send_tokens;

static inline void record_cb(struct gm_port *p, void *ctx, gm_status_t st)
{
	struct completion *c = ctx;
	(void)p;
	c->done++;
	c->status = st;
	if (st != GM_SUCCESS && c->failed++ == 0)
		c->first_bad = st;
	send_tokens++;
}

/* take_token takes one send token, or exits: callers wait for one first. */
static inline void take_token(void)
{
	if (send_tokens == 0)
		FATAL("no send token left");
	send_tokens--;
}

/* run_peer opens port my_port as name, finds the peer and the send
   tokens, runs server or client by the role, then gives back the port's
   gm_dma_malloc memory and closes it. */
static inline void run_peer(struct gm_port **port, struct peer *pr, const char *name,
			    void (*server)(void), void (*client)(void))
{
	*port = open_port(pr->my_port, name);
	lookup_peer(*port, pr);
	send_tokens = gm_num_send_tokens(*port);
	if (pr->server)
		server();
	else
		client();
	dma_free_port(*port);
	close_port(*port);
}

#endif
