/*
 * pingpong: a GM ping-pong, also libgm's C latency benchmark.
 *
 *   pingpong server|client PEER-HOST MY-PORT PEER-PORT COUNT LEN [WARMUP]
 *
 * The client sends COUNT+WARMUP messages of LEN bytes at low priority, one
 * at a time; the server sends each back. The client checks every reply
 * (its sequence number and payload) and prints the round trip's
 * percentiles over the last COUNT, among them a line "rtt_p50_us=X".
 * Both poll with gm_receive, as a latency-bound GM program does.
 */
#include "common.h"

static unsigned int count, warmup, len, size;

/* seq_put/seq_get: a message's first (up to 4) bytes are its sequence
   number; the rest is pattern 1. */
static void seq_put(unsigned char *b, unsigned int seq)
{
	for (unsigned int i = 0; i < 4 && i < len; i++)
		b[i] = (unsigned char)(seq >> (8 * i));
}

static int seq_ok(const unsigned char *b, unsigned int seq)
{
	for (unsigned int i = 0; i < 4 && i < len; i++)
		if (b[i] != (unsigned char)(seq >> (8 * i)))
			return 0;
	return 1;
}

static int body_ok(const unsigned char *b)
{
	/* The first and last bytes of the body: enough to catch a wrong
	   buffer without costing the benchmark a full compare. */
	if (len > 4 && b[4] != pattern_byte(1, 4))
		return 0;
	if (len > 4 && b[len - 1] != pattern_byte(1, len - 1))
		return 0;
	return 1;
}

/* Send buffers: a send's buffer is the library's until its callback, which
   may come after the reply, so messages rotate over NSBUF buffers and a
   buffer is reused once its send completed. */
enum { NSBUF = 8 };
static unsigned char *sbuf[NSBUF];
static int sbuf_busy[NSBUF];
static struct completion c = {0, GM_SUCCESS, 0, GM_SUCCESS};

static void slot_cb(struct gm_port *p, void *ctx, gm_status_t st)
{
	sbuf_busy[(int *)ctx - sbuf_busy] = 0;
	record_cb(p, &c, st);
}

/* slot returns a free send buffer (and a send token) for message i; no
   message can arrive meanwhile (the peer waits for this one). */
static int slot(struct gm_port *p, unsigned int i, double deadline)
{
	int k = (int)(i % NSBUF);
	while (sbuf_busy[k] || send_tokens == 0) {
		gm_recv_event_t *e = gm_receive(p);
		if (GM_RECV_EVENT_TYPE(e) != GM_NO_RECV_EVENT)
			gm_unknown(p, e);
		expire(deadline, "a send buffer");
	}
	sbuf_busy[k] = 1;
	take_token();
	return k;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	struct peer pr = parse_peer(argc, argv, 2, "COUNT LEN [WARMUP]");
	count = (unsigned int)atoi(argv[5]);
	len = (unsigned int)atoi(argv[6]);
	warmup = argc > 7 ? (unsigned int)atoi(argv[7]) : 100;
	if (count == 0)
		FATAL("COUNT must be at least 1");
	size = gm_min_size_for_length(len);
	CHECK(gm_max_length_for_size(size) >= len, "size %u holds %lu bytes, not %u", size,
	      gm_max_length_for_size(size), len);

	struct gm_port *p = open_port(pr.my_port, "pingpong");
	lookup_peer(p, &pr);
	send_tokens = gm_num_send_tokens(p);
	unsigned int tokens0 = send_tokens;

	/* Receive buffers of the message's size class, in DMA memory. */
	enum { NBUF = 4 };
	void *rbuf[NBUF];
	for (int i = 0; i < NBUF; i++) {
		rbuf[i] = gm_dma_malloc(p, gm_max_length_for_size(size) + 1);
		if (rbuf[i] == NULL)
			FATAL("gm_dma_malloc of %lu bytes failed", gm_max_length_for_size(size) + 1);
		gm_provide_receive_buffer(p, rbuf[i], size, GM_LOW_PRIORITY);
	}
	for (int k = 0; k < NSBUF; k++) {
		sbuf[k] = gm_dma_malloc(p, len + 1);
		if (sbuf[k] == NULL)
			FATAL("gm_dma_malloc failed");
		fill(sbuf[k], len, 1);
	}

	unsigned char *stage = malloc(len + 1);
	unsigned int total = count + warmup;
	double *rtt = calloc(count, sizeof *rtt);
	int bad_status = 0;
	if (pr.server) {
		printf("ready\n");
		fflush(stdout);
	}

	for (unsigned int i = 0; i < total; i++) {
		double deadline = deadline_after();
		double t0 = 0;
		if (!pr.server) {
			int k = slot(p, i, deadline);
			seq_put(sbuf[k], i);
			t0 = now_us();
			gm_send_with_callback(p, sbuf[k], size, len, GM_LOW_PRIORITY, pr.node, pr.port, slot_cb,
					      &sbuf_busy[k]);
		}
		/* Wait for the message (server) or the reply (client). */
		for (;;) {
			gm_recv_event_t *e = gm_receive(p);
			int type = GM_RECV_EVENT_TYPE(e);
			if (type == GM_NO_RECV_EVENT) {
				expire(deadline, pr.server ? "a ping" : "a pong");
				continue;
			}
			if (!is_recv_type(type)) {
				gm_unknown(p, e);
				continue;
			}
			double t1 = now_us();
			const unsigned char *m = event_data(e);
			void *buf = gm_ntohp(e->recv.buffer);
			CHECK(gm_ntoh_u32(e->recv.length) == len, "message %u: length %u, want %u", i,
			      gm_ntoh_u32(e->recv.length), len);
			CHECK(gm_ntoh_u8(e->recv.size) == size, "message %u: size %u, want %u", i,
			      gm_ntoh_u8(e->recv.size), size);
			CHECK(gm_ntoh_u16(e->recv.sender_node_id) == pr.node, "message %u: sender node %u, want %u", i,
			      gm_ntoh_u16(e->recv.sender_node_id), pr.node);
			CHECK(seq_ok(m, i), "message %u: wrong sequence number", i);
			CHECK(body_ok(m), "message %u: wrong payload", i);
			if (pr.server) {
				/* m lives until the next receive call, and slot() may
				   have to receive (completions) when the buffer is busy:
				   then m goes to stage first. No message can arrive
				   meanwhile: the client waits for this echo. */
				int k = (int)(i % NSBUF);
				if (sbuf_busy[k] || send_tokens == 0) {
					memcpy(stage, m, len);
					m = stage;
				}
				k = slot(p, i, deadline);
				memcpy(sbuf[k], m, len);
				gm_provide_receive_buffer(p, buf, size, GM_LOW_PRIORITY);
				gm_send_with_callback(p, sbuf[k], size, len, GM_LOW_PRIORITY, pr.node, pr.port, slot_cb,
						      &sbuf_busy[k]);
			} else {
				if (i >= warmup)
					rtt[i - warmup] = t1 - t0;
				gm_provide_receive_buffer(p, buf, size, GM_LOW_PRIORITY);
			}
			break;
		}
		if (c.failed && !bad_status) {
			bad_status = 1;
			CHECK(!c.failed, "a send completed with %s", gm_strerror(c.first_bad));
		}
	}

	/* All sends complete: every token back. */
	double deadline = deadline_after();
	while (send_tokens < tokens0) {
		gm_recv_event_t *e = gm_receive(p);
		if (GM_RECV_EVENT_TYPE(e) != GM_NO_RECV_EVENT)
			gm_unknown(p, e);
		expire(deadline, "the last send completions");
	}
	CHECK(c.done == (int)total, "%d send completions, want %u", c.done, total);
	CHECK(c.failed == 0, "%d sends failed, the first with %s", c.failed, gm_strerror(c.first_bad));

	if (!pr.server) {
		qsort(rtt, count, sizeof *rtt, cmp_double);
		printf("count=%u len=%u size=%u\n", count, len, size);
		printf("rtt_min_us=%.2f\n", rtt[0]);
		printf("rtt_p50_us=%.2f\n", rtt[count / 2]);
		printf("rtt_p99_us=%.2f\n", rtt[(count * 99) / 100 < count ? (count * 99) / 100 : count - 1]);
		printf("rtt_max_us=%.2f\n", rtt[count - 1]);
	}
	free(rtt);
	free(stage);
	for (int i = 0; i < NBUF; i++)
		gm_dma_free(p, rbuf[i]);
	for (int k = 0; k < NSBUF; k++)
		gm_dma_free(p, sbuf[k]);
	close_port(p);
	return finish(pr.server ? "pingpong server" : "pingpong client");
}
