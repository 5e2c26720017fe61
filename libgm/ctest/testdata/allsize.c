/*
 * allsize: every size class, both priorities, verified payloads (as
 * gm_allsize --verify does).
 *
 *   allsize server|client PEER-HOST MY-PORT PEER-PORT MAX-SIZE
 *
 * For each size class 3..MAX-SIZE and each priority the client sends
 * messages of the smallest, a middle and the largest length of the class,
 * one at a time; the server checks every event (type: FAST or not by
 * length, HIGH or not by priority, PEER when the two ports are equal;
 * length, size, sender, tag, buffer) and the payload's pattern, and sends
 * the message back with the same size and priority; the client checks the
 * echo the same way. Receive buffers are exactly as long as their size
 * class holds, alternately gm_dma_malloc memory and registered malloc
 * memory.
 */
#include "common.h"

#define MIN_SIZE 3

struct point {
	unsigned int size, prio;
	gm_size_t len;
};

static struct point plan[64 * 3 * 2];
static int nplan;

static void make_plan(unsigned int max_size)
{
	for (unsigned int s = MIN_SIZE; s <= max_size; s++) {
		gm_size_t hi = gm_max_length_for_size(s);
		gm_size_t lo = s == MIN_SIZE ? 0 : gm_max_length_for_size(s - 1) + 1;
		gm_size_t lens[3] = {lo, lo + (hi - lo) / 2, hi};
		for (unsigned int prio = 0; prio < GM_NUM_PRIORITIES; prio++)
			for (int k = 0; k < 3; k++) {
				if (k > 0 && lens[k] == lens[k - 1])
					continue;
				plan[nplan++] = (struct point){s, prio, lens[k]};
			}
	}
}

static unsigned int seed_of(unsigned int size, unsigned int prio, gm_size_t len)
{
	return size * 1000u + prio * 100u + (unsigned int)(len % 97);
}

/* Receive buffers: one per size class and priority. */
static void *rbuf[64][GM_NUM_PRIORITIES];
static int rbuf_dma[64][GM_NUM_PRIORITIES];

static void provide(struct gm_port *p, unsigned int size, unsigned int prio)
{
	gm_provide_receive_buffer(p, rbuf[size][prio], size, prio);
}

/* check_event checks a receive event against the plan point it should
   be, and returns its message. */
static const unsigned char *check_event(gm_recv_event_t *e, const struct point *pt, const struct peer *pr, int i)
{
	int type = GM_RECV_EVENT_TYPE(e);
	int want = expected_type(pt->len, pt->prio, pr->my_port == pr->port);
	CHECK(type == want, "point %d (size %u len %lu prio %u): event type %d, want %d", i, pt->size, pt->len, pt->prio,
	      type, want);
	CHECK(gm_ntoh_u32(e->recv.length) == pt->len, "point %d: length %u, want %lu", i, gm_ntoh_u32(e->recv.length),
	      pt->len);
	CHECK(gm_ntoh_u8(e->recv.size) == pt->size, "point %d: size %u, want %u", i, gm_ntoh_u8(e->recv.size), pt->size);
	CHECK(gm_ntoh_u16(e->recv.sender_node_id) == pr->node, "point %d: sender node %u, want %u", i,
	      gm_ntoh_u16(e->recv.sender_node_id), pr->node);
	CHECK(gm_ntoh_u8(e->recv.sender_port_id) == pr->port, "point %d: sender port %u, want %u", i,
	      gm_ntoh_u8(e->recv.sender_port_id), pr->port);
	CHECK(gm_ntoh_u8(e->recv.tag) == 0, "point %d: tag %u, want 0", i, gm_ntoh_u8(e->recv.tag));
	CHECK(gm_ntohp(e->recv.buffer) == rbuf[pt->size][pt->prio], "point %d: buffer %p, want %p", i,
	      gm_ntohp(e->recv.buffer), rbuf[pt->size][pt->prio]);
	const unsigned char *m = event_data(e);
	if (is_fast_type(type))
		CHECK(m != rbuf[pt->size][pt->prio], "point %d: FAST event's message is the receive buffer", i);
	else
		CHECK(gm_ntohp(e->recv.message) == gm_ntohp(e->recv.buffer),
		      "point %d: recv.message %p is not recv.buffer %p (GM's examples read message)", i,
		      gm_ntohp(e->recv.message), gm_ntohp(e->recv.buffer));
	size_t bad = verify(m, pt->len, seed_of(pt->size, pt->prio, pt->len));
	CHECK(bad == pt->len, "point %d (size %u len %lu prio %u): payload differs at byte %zu", i, pt->size, pt->len,
	      pt->prio, bad);
	return m;
}

int main(int argc, char **argv)
{
	struct peer pr = parse_peer(argc, argv, 1, "MAX-SIZE");
	unsigned int max_size = (unsigned int)atoi(argv[5]);
	if (max_size < MIN_SIZE || max_size > 30)
		FATAL("MAX-SIZE %u: want 3..30", max_size);
	make_plan(max_size);

	struct gm_port *p = open_port(pr.my_port, "allsize");
	lookup_peer(p, &pr);
	send_tokens = gm_num_send_tokens(p);
	unsigned int tokens0 = send_tokens;

	/* The size helpers agree with GM's definition. */
	for (unsigned int s = MIN_SIZE; s <= max_size; s++) {
		CHECK(gm_max_length_for_size(s) == GM_MAX_LENGTH_FOR_SIZE(s), "gm_max_length_for_size(%u) = %lu", s,
		      gm_max_length_for_size(s));
		CHECK(gm_min_size_for_length(gm_max_length_for_size(s)) == s, "gm_min_size_for_length(%lu) = %u",
		      gm_max_length_for_size(s), gm_min_size_for_length(gm_max_length_for_size(s)));
		if (s > MIN_SIZE)
			CHECK(gm_min_size_for_length(gm_max_length_for_size(s - 1) + 1) == s,
			      "gm_min_size_for_length(%lu) = %u, want %u", gm_max_length_for_size(s - 1) + 1,
			      gm_min_size_for_length(gm_max_length_for_size(s - 1) + 1), s);
	}

	for (unsigned int s = MIN_SIZE; s <= max_size; s++)
		for (unsigned int prio = 0; prio < GM_NUM_PRIORITIES; prio++) {
			gm_size_t n = gm_max_length_for_size(s);
			if ((s + prio) % 2 == 0) {
				rbuf[s][prio] = gm_dma_malloc(p, n ? n : 1);
				rbuf_dma[s][prio] = 1;
			} else {
				rbuf[s][prio] = malloc(n ? n : 1);
				if (rbuf[s][prio] && gm_register_memory(p, rbuf[s][prio], n ? n : 1) != GM_SUCCESS)
					FATAL("gm_register_memory of %lu bytes failed", n);
			}
			if (rbuf[s][prio] == NULL)
				FATAL("no memory for a %lu-byte buffer", n);
			provide(p, s, prio);
		}
	gm_size_t maxlen = gm_max_length_for_size(max_size);
	unsigned char *sbuf = gm_dma_malloc(p, maxlen);
	if (sbuf == NULL)
		FATAL("gm_dma_malloc of %lu bytes failed", maxlen);

	if (pr.server) {
		printf("ready\n");
		fflush(stdout);
	}
	struct completion c = {0, GM_SUCCESS, 0, GM_SUCCESS};
	int sends = 0, failed = 0;
	for (int i = 0; i < nplan; i++) {
		const struct point *pt = &plan[i];
		double deadline = deadline_after();
		if (!pr.server) {
			fill(sbuf, pt->len, seed_of(pt->size, pt->prio, pt->len));
			take_token();
			gm_send_with_callback(p, sbuf, pt->size, pt->len, pt->prio, pr.node, pr.port, record_cb, &c);
			sends++;
		}
		for (;;) {
			gm_recv_event_t *e = gm_receive(p);
			int type = GM_RECV_EVENT_TYPE(e);
			if (type == GM_NO_RECV_EVENT) {
				expire(deadline, "a message");
				continue;
			}
			if (!is_recv_type(type)) {
				gm_unknown(p, e);
				if (c.failed && !failed) {
					failed = 1;
					CHECK(!c.failed, "point %d: a send failed: %s", i, gm_strerror(c.first_bad));
				}
				continue;
			}
			const unsigned char *m = check_event(e, pt, &pr, i);
			if (pr.server) {
				/* The echo: copy first (a FAST message lives only until
				   the next receive call), wait for the previous echo
				   (sbuf is reused), then send. */
				while (send_tokens < tokens0) {
					gm_recv_event_t *e2 = gm_receive(p);
					if (GM_RECV_EVENT_TYPE(e2) != GM_NO_RECV_EVENT)
						gm_unknown(p, e2);
					expire(deadline, "the previous echo's completion");
				}
				memcpy(sbuf, m, pt->len);
				take_token();
				gm_send_with_callback(p, sbuf, pt->size, pt->len, pt->prio, pr.node, pr.port, record_cb, &c);
				sends++;
			}
			provide(p, pt->size, pt->prio);
			break;
		}
		/* The client reuses sbuf: its send must be complete (it is,
		   its echo came back, but the callback may still be queued). */
		while (!pr.server && send_tokens < tokens0) {
			gm_recv_event_t *e = gm_receive(p);
			if (GM_RECV_EVENT_TYPE(e) != GM_NO_RECV_EVENT)
				gm_unknown(p, e);
			expire(deadline, "a send's completion");
		}
	}
	double deadline = deadline_after();
	while (send_tokens < tokens0) {
		gm_recv_event_t *e = gm_receive(p);
		if (GM_RECV_EVENT_TYPE(e) != GM_NO_RECV_EVENT)
			gm_unknown(p, e);
		expire(deadline, "the last completion");
	}
	CHECK(c.done == sends, "%d completions for %d sends", c.done, sends);
	CHECK(c.failed == 0, "%d sends failed, the first with %s", c.failed, gm_strerror(c.first_bad));
	printf("%d points, sizes %d..%u, both priorities\n", nplan, MIN_SIZE, max_size);

	gm_dma_free(p, sbuf);
	for (unsigned int s = MIN_SIZE; s <= max_size; s++)
		for (unsigned int prio = 0; prio < GM_NUM_PRIORITIES; prio++) {
			if (rbuf_dma[s][prio]) {
				gm_dma_free(p, rbuf[s][prio]);
			} else {
				gm_size_t n = gm_max_length_for_size(s);
				CHECK(gm_deregister_memory(p, rbuf[s][prio], n ? n : 1) == GM_SUCCESS, "deregister");
			}
		}
	close_port(p);
	for (unsigned int s = MIN_SIZE; s <= max_size; s++)
		for (unsigned int prio = 0; prio < GM_NUM_PRIORITIES; prio++)
			if (!rbuf_dma[s][prio])
				free(rbuf[s][prio]);
	return finish(pr.server ? "allsize server" : "allsize client");
}
