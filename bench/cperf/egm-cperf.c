/*
 * egm-cperf: the C program of EtherGM's benchmarks, on libgm (gm.h).
 *
 *   egm-cperf -mode pingpong -server [-port 2]
 *   egm-cperf -mode pingpong -client -peer HOST [-n 20000] [-warmup 2000] [-size 8]
 *   egm-cperf -mode calls [-n 1000000]
 *
 * pingpong is egm-gmperf's ping-pong written against GM's C API: 8-byte
 * messages at high priority, gm_send_to_peer_with_callback and a
 * gm_receive polling loop on both sides; the client prints a JSON
 * result.Latency record (bench/internal/result) on stdout, the server
 * prints "ready" on stderr once its buffers are provided and echoes until
 * SIGTERM. calls times n gm_receive calls on an idle port and n gm_ticks
 * calls, the cost of a call from C into libgm, and prints a JSON record.
 *
 * The unit is ETHERGM_UNIT (or the only interface that is up), the host
 * ETHERGM_HOST, as for any GM program on EtherGM.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gm.h"

#define BUFFERS 16

static volatile sig_atomic_t stop;
static int send_failures;
static gm_status_t send_status;
static int free_bufs[BUFFERS];
static int nfree;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void die(const char *what, gm_status_t s)
{
	fprintf(stderr, "egm-cperf: %s: %s\n", what, gm_strerror(s));
	exit(1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A send buffer is free again when its callback runs (inside gm_unknown). */
static void sent(struct gm_port *p, void *ctx, gm_status_t s)
{
	(void)p;
	if (s != GM_SUCCESS) {
		send_failures++;
		send_status = s;
	}
	free_bufs[nfree++] = (int)(intptr_t)ctx;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static double pct(uint64_t *v, size_t n, double q)
{
	size_t i = (size_t)(q * (double)(n - 1) + 0.5);

	return (double)v[i] / 1000.0;
}

/* high_recv reports whether e is a high-priority receive event (the only
   kind the ping-pong sends), and gives its message and length. GM points
   recv.message at the data of every receive event (FAST ones in library
   memory, the others in the buffer). */
static int high_recv(gm_recv_event_t *e, void **msg, unsigned *len)
{
	switch (GM_RECV_EVENT_TYPE(e)) {
	case GM_FAST_HIGH_PEER_RECV_EVENT:
	case GM_HIGH_PEER_RECV_EVENT:
	case GM_FAST_HIGH_RECV_EVENT:
	case GM_HIGH_RECV_EVENT:
		*msg = gm_ntohp(e->recv.message);
		*len = gm_ntoh_u32(e->recv.length);
		return 1;
	}
	return 0;
}

static struct gm_port *open_port(unsigned int id)
{
	struct gm_port *p;
	gm_status_t s = gm_open(&p, 0, id, "egm-cperf", GM_API_VERSION);

	if (s != GM_SUCCESS)
		die("gm_open", s);
	return p;
}

static void provide(struct gm_port *p, unsigned size, unsigned len)
{
	for (int i = 0; i < BUFFERS; i++) {
		void *b = gm_dma_malloc(p, len ? len : 1);
		if (b == NULL)
			die("gm_dma_malloc", GM_OUT_OF_MEMORY);
		gm_provide_receive_buffer(p, b, size, GM_HIGH_PRIORITY);
	}
}

/* send_buffers gives every send buffer (at least 8 bytes: the client's
   sequence number) and marks it free. */
static void send_buffers(struct gm_port *p, void *out[BUFFERS], unsigned len)
{
	for (int i = 0; i < BUFFERS; i++) {
		out[i] = gm_dma_malloc(p, len >= 8 ? len : 8);
		if (out[i] == NULL)
			die("gm_dma_malloc", GM_OUT_OF_MEMORY);
		free_bufs[nfree++] = i;
	}
}

static int server(unsigned int port, unsigned len)
{
	struct gm_port *p = open_port(port);
	unsigned size = gm_min_size_for_length(len);
	void *out[BUFFERS];

	provide(p, size, len);
	send_buffers(p, out, len);
	fprintf(stderr, "ready\n");
	while (!stop) {
		gm_recv_event_t *e = gm_receive(p);
		void *msg;
		unsigned n;

		if (high_recv(e, &msg, &n)) {
			unsigned node = gm_ntoh_u16(e->recv.sender_node_id);
			int b;

			while (nfree == 0)
				gm_unknown(p, gm_blocking_receive(p)); /* never: one reply in flight */
			b = free_bufs[--nfree];
			memcpy(out[b], msg, n);
			gm_provide_receive_buffer(p, gm_ntohp(e->recv.buffer), gm_ntoh_u8(e->recv.size), GM_HIGH_PRIORITY);
			gm_send_to_peer_with_callback(p, out[b], size, n, GM_HIGH_PRIORITY, node, sent, (void *)(intptr_t)b);
		} else if (GM_RECV_EVENT_TYPE(e) != GM_NO_RECV_EVENT) {
			gm_unknown(p, e);
		}
		if (send_failures)
			die("echo", send_status);
	}
	gm_close(p);
	return 0;
}

static int client(unsigned int port, const char *peer, int n, int warmup, unsigned len, double timeout)
{
	struct gm_port *p = open_port(port);
	unsigned size = gm_min_size_for_length(len);
	unsigned node;
	gm_status_t s;
	void *out[BUFFERS];
	uint64_t *rtt = calloc((size_t)n, sizeof *rtt);
	uint64_t total = 0, t_end;
	double sum = 0;

	if (rtt == NULL || n <= 0)
		die("-n", GM_INVALID_PARAMETER);
	s = gm_host_name_to_node_id_ex(p, 10000000, peer, &node);
	if (s != GM_SUCCESS)
		die(peer, s);
	provide(p, size, len);
	send_buffers(p, out, len);
	for (int i = 0; i < warmup + n; i++) {
		uint64_t seq = (uint64_t)i + 1, t0;
		int b, got = 0;

		while (nfree == 0)
			gm_unknown(p, gm_receive(p));
		b = free_bufs[--nfree];
		if (len >= 8)
			memcpy(out[b], &seq, 8);
		t0 = now_ns();
		gm_send_to_peer_with_callback(p, out[b], size, len, GM_HIGH_PRIORITY, node, sent, (void *)(intptr_t)b);
		for (unsigned long spins = 0; !got; spins++) {
			gm_recv_event_t *e = gm_receive(p);
			void *msg;
			unsigned l;

			if (high_recv(e, &msg, &l)) {
				uint64_t v = 0;

				if (l >= 8)
					memcpy(&v, msg, 8);
				gm_provide_receive_buffer(p, gm_ntohp(e->recv.buffer), gm_ntoh_u8(e->recv.size),
							  GM_HIGH_PRIORITY);
				if (l != len || (len >= 8 && v != seq)) {
					fprintf(stderr, "egm-cperf: reply to message %llu: length %u carries %llu\n",
						(unsigned long long)seq, l, (unsigned long long)v);
					exit(1);
				}
				got = 1;
			} else if (GM_RECV_EVENT_TYPE(e) != GM_NO_RECV_EVENT) {
				gm_unknown(p, e);
			} else if ((spins & 1023) == 1023) {
				if (stop)
					die("interrupted", GM_INTERRUPTED);
				if ((double)(now_ns() - t0) / 1e9 > timeout) {
					fprintf(stderr, "egm-cperf: no reply to message %llu after %.0f s\n",
						(unsigned long long)seq, timeout);
					exit(1);
				}
			}
		}
		t_end = now_ns() - t0;
		if (send_failures)
			die("send", send_status);
		if (i >= warmup) {
			rtt[i - warmup] = t_end;
			total += t_end;
		}
	}
	qsort(rtt, (size_t)n, sizeof *rtt, cmp_u64);
	sum = (double)total / 1000.0;
	printf("{\"tool\":\"egm-cperf\",\"mode\":\"pingpong-poll\",\"p50_us\":%.3f,\"p99_us\":%.3f,"
	       "\"mean_us\":%.3f,\"p999_us\":%.3f,\"min_us\":%.3f,\"max_us\":%.3f,\"n\":%d,\"retries\":0,"
	       "\"payload_bytes\":%u,\"note\":\"libgm from C, %u-byte messages at high priority, "
	       "gm_send_to_peer_with_callback + gm_receive polling loop on both sides\",\"warmup\":%d,"
	       "\"seconds\":%.6f}\n",
	       pct(rtt, (size_t)n, 0.5), pct(rtt, (size_t)n, 0.99), sum / n, pct(rtt, (size_t)n, 0.999),
	       pct(rtt, (size_t)n, 0), pct(rtt, (size_t)n, 1), n, len, len, warmup, sum / 1e6);
	free(rtt);
	gm_close(p);
	return 0;
}

/* calls: the cost of one call into libgm, on an idle port. */
static int calls(unsigned int port, int n)
{
	struct gm_port *p = open_port(port);
	uint64_t t0, t1, t2;
	volatile gm_u64_t sink = 0;

	for (int i = 0; i < 1000; i++)
		gm_unknown(p, gm_receive(p));
	t0 = now_ns();
	for (int i = 0; i < n; i++) {
		gm_recv_event_t *e = gm_receive(p);
		if (GM_RECV_EVENT_TYPE(e) != GM_NO_RECV_EVENT)
			gm_unknown(p, e);
	}
	t1 = now_ns();
	for (int i = 0; i < n; i++)
		sink += gm_ticks(p);
	t2 = now_ns();
	(void)sink;
	printf("{\"tool\":\"egm-cperf\",\"mode\":\"calls\",\"n\":%d,\"receive_ns\":%.1f,\"ticks_ns\":%.1f}\n", n,
	       (double)(t1 - t0) / n, (double)(t2 - t1) / n);
	gm_close(p);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = "pingpong", *peer = NULL;
	int is_server = 0, is_client = 0, n = 20000, warmup = 2000;
	unsigned port = 2, len = 8;
	double timeout = 10;
	struct sigaction sa;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(a, "-server") == 0)
			is_server = 1;
		else if (strcmp(a, "-client") == 0)
			is_client = 1;
		else if (strcmp(a, "-mode") == 0 && v)
			mode = argv[++i];
		else if (strcmp(a, "-peer") == 0 && v)
			peer = argv[++i];
		else if (strcmp(a, "-n") == 0 && v)
			n = atoi(argv[++i]);
		else if (strcmp(a, "-warmup") == 0 && v)
			warmup = atoi(argv[++i]);
		else if (strcmp(a, "-port") == 0 && v)
			port = (unsigned)atoi(argv[++i]);
		else if (strcmp(a, "-size") == 0 && v)
			len = (unsigned)atoi(argv[++i]);
		else if (strcmp(a, "-timeout") == 0 && v)
			timeout = atof(argv[++i]);
		else {
			fprintf(stderr, "egm-cperf: unknown or incomplete argument %s (see the comment at the top of egm-cperf.c)\n", a);
			return 2;
		}
	}
	/* SA_ONSTACK: the Go runtime inside libgm needs it on every handler. */
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_ONSTACK;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	if (strcmp(mode, "calls") == 0)
		return calls(port, n > 0 ? n : 1000000);
	if (strcmp(mode, "pingpong") != 0 || is_server == is_client || (is_client && peer == NULL)) {
		fprintf(stderr, "egm-cperf: want -mode pingpong with exactly one of -server and -client (-peer HOST), or -mode calls\n");
		return 2;
	}
	if (len > 4096) {
		fprintf(stderr, "egm-cperf: -size %u: at most 4096\n", len);
		return 2;
	}
	return is_server ? server(port, len) : client(port, peer, n, warmup, len, timeout);
}
