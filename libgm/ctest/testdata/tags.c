/*
 * tags: receive buffer tags, both priorities, FAST and PEER event types.
 *
 *   tags server|client PEER-HOST MY-PORT PEER-PORT
 *
 * The server provides NB buffers per priority and length with
 * gm_provide_receive_buffer_with_tag, each with a tag of its own; the
 * client sends NB messages of each priority and length (SHORT_LEN, a FAST
 * message, and LONG_LEN), with gm_send_to_peer_with_callback when the two
 * ports are equal and gm_send_with_callback otherwise. For every event the
 * server checks the type (GM_HIGH_* for high priority, GM_FAST_* for at
 * most GM_MAX_FAST_RECV_BYTES bytes, *_PEER_* when the sender's port is
 * the server's), that recv.buffer is one of its buffers, used once, and
 * recv.tag that buffer's tag, and the payload; gm_memorize_message copies
 * a FAST message into its buffer. Then the server sends itself one message
 * per priority with gm_send_to_peer_with_callback: PEER events.
 */
#include "common.h"

#define NB 4
#define SHORT_LEN 100
#define LONG_LEN 1000
#define NMSG (GM_NUM_PRIORITIES * 2 * NB)

static struct gm_port *port;
static struct peer pr;

struct buf {
	unsigned char *mem;
	unsigned int size, prio, tag;
	int used;
};
static struct buf bufs[NMSG + GM_NUM_PRIORITIES];
static int nbufs;

static void provide_tagged(gm_size_t len, unsigned int prio, unsigned int tag)
{
	struct buf *b = &bufs[nbufs++];
	b->size = gm_min_size_for_length(len);
	b->prio = prio;
	b->tag = tag;
	b->mem = dma_alloc(port, gm_max_length_for_size(b->size));
	if (b->mem == NULL)
		FATAL("gm_dma_malloc failed");
	gm_provide_receive_buffer_with_tag(port, b->mem, b->size, prio, tag);
}

static unsigned int seed_of(unsigned int prio, gm_size_t len, int k) { return prio * 1000u + (unsigned int)len + (unsigned int)k; }

/* check_recv checks a receive event from node:sport; returns 1 if fine. */
static void check_recv(gm_recv_event_t *e, unsigned int node, unsigned int sport)
{
	int type = GM_RECV_EVENT_TYPE(e);
	unsigned char *b = gm_ntohp(e->recv.buffer);
	gm_size_t len = gm_ntoh_u32(e->recv.length);
	unsigned int prio = is_high_type(type) ? GM_HIGH_PRIORITY : GM_LOW_PRIORITY;
	struct buf *mine = NULL;
	for (int i = 0; i < nbufs; i++)
		if (bufs[i].mem == b)
			mine = &bufs[i];
	CHECK(mine != NULL, "recv.buffer %p is none of ours", (void *)b);
	if (mine == NULL)
		return;
	mine->used++;
	CHECK(mine->used == 1, "buffer with tag %u used %d times", mine->tag, mine->used);
	CHECK(gm_ntoh_u8(e->recv.tag) == mine->tag, "recv.tag %u for the buffer of tag %u", gm_ntoh_u8(e->recv.tag),
	      mine->tag);
	CHECK(gm_ntoh_u8(e->recv.size) == mine->size, "recv.size %u, buffer of size %u", gm_ntoh_u8(e->recv.size),
	      mine->size);
	CHECK(prio == mine->prio, "a priority %u message in a priority %u buffer", prio, mine->prio);
	int want = expected_type(len, prio, sport == pr.my_port);
	CHECK(type == want, "len %lu prio %u from port %u: event type %d, want %d", len, prio, sport, type, want);
	CHECK(gm_ntoh_u16(e->recv.sender_node_id) == node, "sender node %u, want %u", gm_ntoh_u16(e->recv.sender_node_id),
	      node);
	CHECK(gm_ntoh_u8(e->recv.sender_port_id) == sport, "sender port %u, want %u", gm_ntoh_u8(e->recv.sender_port_id),
	      sport);
	const unsigned char *d = event_data(e);
	int k = d[0];
	size_t bad = verify(d + 1, len - 1, seed_of(prio, len, k));
	CHECK(bad == len - 1, "len %lu prio %u message %d: payload differs at %zu", len, prio, k, bad + 1);
	if (is_fast_type(type)) {
		CHECK(d != b, "a FAST event's message is in the receive buffer");
		void *r = gm_memorize_message((void *)d, b, (unsigned int)len);
		CHECK(r == b, "gm_memorize_message returned %p, want the buffer %p", r, (void *)b);
		CHECK(verify(b + 1, len - 1, seed_of(prio, len, k)) == len - 1 && b[0] == k,
		      "gm_memorize_message did not copy the message");
	}
}

static void build(unsigned char *m, unsigned int prio, gm_size_t len, int k)
{
	m[0] = (unsigned char)k;
	fill(m + 1, len - 1, seed_of(prio, len, k));
}

static void drain_until(int *counter, int want, const char *what)
{
	double deadline = deadline_after();
	while (*counter < want) {
		gm_recv_event_t *e = gm_receive(port);
		int type = GM_RECV_EVENT_TYPE(e);
		if (type == GM_NO_RECV_EVENT) {
			expire(deadline, what);
			continue;
		}
		if (is_recv_type(type)) {
			check_recv(e, gm_ntoh_u16(e->recv.sender_node_id), gm_ntoh_u8(e->recv.sender_port_id));
			(*counter)++;
			continue;
		}
		gm_unknown(port, e);
	}
}

int main(int argc, char **argv)
{
	pr = parse_peer(argc, argv, 0, "");
	port = open_port(pr.my_port, "tags");
	lookup_peer(port, &pr);
	send_tokens = gm_num_send_tokens(port);
	unsigned int tokens0 = send_tokens;
	gm_size_t lens[2] = {SHORT_LEN, LONG_LEN};
	struct completion c = {0, GM_SUCCESS, 0, GM_SUCCESS};
	unsigned char *out = dma_alloc(port, (NMSG + GM_NUM_PRIORITIES) * (gm_size_t)LONG_LEN);
	if (out == NULL)
		FATAL("gm_dma_malloc failed");

	if (pr.server) {
		unsigned int tag = 1;
		for (unsigned int prio = 0; prio < GM_NUM_PRIORITIES; prio++)
			for (int l = 0; l < 2; l++)
				for (int k = 0; k < NB; k++)
					provide_tagged(lens[l], prio, tag++ * 7 % 251);
		printf("ready\n");
		fflush(stdout);
		int got = 0;
		drain_until(&got, NMSG, "the client's messages");
		for (int i = 0; i < nbufs; i++)
			CHECK(bufs[i].used == 1, "buffer with tag %u used %d times", bufs[i].tag, bufs[i].used);

		/* To itself: PEER events, one per priority. */
		unsigned int self = 0;
		CHECK(gm_get_node_id(port, &self) == GM_SUCCESS, "gm_get_node_id");
		int first = nbufs;
		provide_tagged(SHORT_LEN, GM_LOW_PRIORITY, 200);
		provide_tagged(LONG_LEN, GM_HIGH_PRIORITY, 201);
		build(out, GM_LOW_PRIORITY, SHORT_LEN, 0);
		build(out + LONG_LEN, GM_HIGH_PRIORITY, LONG_LEN, 0);
		take_token();
		gm_send_to_peer_with_callback(port, out, gm_min_size_for_length(SHORT_LEN), SHORT_LEN, GM_LOW_PRIORITY,
					      self, record_cb, &c);
		take_token();
		gm_send_to_peer_with_callback(port, out + LONG_LEN, gm_min_size_for_length(LONG_LEN), LONG_LEN,
					      GM_HIGH_PRIORITY, self, record_cb, &c);
		got = 0;
		drain_until(&got, 2, "the messages to itself");
		for (int i = first; i < nbufs; i++)
			CHECK(bufs[i].used == 1, "own buffer with tag %u used %d times", bufs[i].tag, bufs[i].used);
	} else {
		int k = 0;
		for (unsigned int prio = 0; prio < GM_NUM_PRIORITIES; prio++)
			for (int l = 0; l < 2; l++)
				for (int j = 0; j < NB; j++, k++) {
					unsigned char *m = out + k * LONG_LEN;
					build(m, prio, lens[l], j);
					take_token();
					if (pr.port == pr.my_port)
						gm_send_to_peer_with_callback(port, m, gm_min_size_for_length(lens[l]), lens[l],
									      prio, pr.node, record_cb, &c);
					else
						gm_send_with_callback(port, m, gm_min_size_for_length(lens[l]), lens[l], prio,
								      pr.node, pr.port, record_cb, &c);
				}
	}
	double deadline = deadline_after();
	while (send_tokens < tokens0) {
		gm_recv_event_t *e = gm_receive(port);
		if (GM_RECV_EVENT_TYPE(e) != GM_NO_RECV_EVENT)
			gm_unknown(port, e);
		expire(deadline, "the send completions");
	}
	CHECK(c.failed == 0, "%d sends failed, the first with %s", c.failed, gm_strerror(c.first_bad));
	printf("%d sends completed\n", c.done);
	dma_free_port(port);
	close_port(port);
	return finish(pr.server ? "tags server" : "tags client");
}
