/*
 * callbacks: send completion callbacks and gm_unknown.
 *
 *   callbacks server|client PEER-HOST MY-PORT PEER-PORT
 *
 * The client sends NLOW low and NHIGH high priority messages with
 * gm_send_with_callback (FAST-sized and longer ones), each with a context
 * of its own, and two with the legacy gm_send, whose completion is a
 * GM_SENT_EVENT the program handles itself. Checked: every callback runs
 * exactly once, with its context and GM_SUCCESS, only inside gm_unknown,
 * in send order per priority; a callback may call back into libgm (one
 * sends a further message from inside its callback); the GM_SENT_EVENT
 * lists the legacy messages; the tokens all come back. The server checks
 * every message and answers with the number it received.
 */
#include "common.h"

#define NLOW 16
#define NHIGH 8
#define NLEGACY 2
#define NTOTAL (NLOW + NHIGH + 1 + NLEGACY) /* +1: sent from a callback */
#define SHORT_LEN 32
#define LONG_LEN 3000

struct msg {
	int index;
	unsigned int prio;
	gm_size_t len;
	int calls;
	gm_status_t status;
	int order; /* completion rank within its priority */
	unsigned char *buf;
};

static struct msg msgs[NTOTAL];
static int in_unknown, done_rank[GM_NUM_PRIORITIES];
static struct peer pr;
static struct gm_port *port;

static unsigned int size_of(gm_size_t len) { return gm_min_size_for_length(len); }

static void send_msg(int i, gm_send_completion_callback_t cb);

static void msg_cb(struct gm_port *p, void *ctx, gm_status_t st)
{
	struct msg *m = ctx;
	CHECK(p == port, "callback for port %p, want %p", (void *)p, (void *)port);
	CHECK(m >= msgs && m < msgs + NTOTAL, "callback with a context that is not ours: %p", ctx);
	if (m < msgs || m >= msgs + NTOTAL)
		return;
	CHECK(in_unknown, "message %d: callback outside gm_unknown", m->index);
	m->calls++;
	m->status = st;
	m->order = done_rank[m->prio]++;
	send_tokens++;
	/* Back into libgm from a callback: more calls and a send. */
	if (m->index == 3) {
		unsigned int id = 0;
		CHECK(gm_get_node_id(p, &id) == GM_SUCCESS && id != GM_NO_SUCH_NODE_ID, "gm_get_node_id in a callback");
		CHECK(gm_num_send_tokens(p) > 0, "gm_num_send_tokens in a callback");
		send_msg(NLOW + NHIGH, msg_cb);
	}
}

static void send_msg(int i, gm_send_completion_callback_t cb)
{
	struct msg *m = &msgs[i];
	take_token();
	gm_send_with_callback(port, m->buf, size_of(m->len), m->len, m->prio, pr.node, pr.port, cb, m);
}

/* The message layout: byte 0 is the index, then pattern(index). */
static void init_msgs(void)
{
	for (int i = 0; i < NTOTAL; i++) {
		struct msg *m = &msgs[i];
		m->index = i;
		m->prio = i >= NLOW && i < NLOW + NHIGH ? GM_HIGH_PRIORITY : GM_LOW_PRIORITY;
		m->len = i % 2 ? LONG_LEN : SHORT_LEN;
		m->order = -1;
		m->status = GM_NUM_STATUS_CODES;
		m->buf = dma_alloc(port, m->len);
		if (m->buf == NULL)
			FATAL("gm_dma_malloc failed");
		fill(m->buf, m->len, (unsigned int)i);
		m->buf[0] = (unsigned char)i;
	}
}

static void server(void)
{
	enum { PER = NTOTAL };
	static void *bufs[2][GM_NUM_PRIORITIES][PER];
	gm_size_t lens[2] = {SHORT_LEN, LONG_LEN};
	for (int k = 0; k < 2; k++)
		for (unsigned int prio = 0; prio < GM_NUM_PRIORITIES; prio++)
			for (int j = 0; j < PER; j++) {
				bufs[k][prio][j] = dma_alloc(port, gm_max_length_for_size(size_of(lens[k])));
				if (bufs[k][prio][j] == NULL)
					FATAL("gm_dma_malloc failed");
				gm_provide_receive_buffer(port, bufs[k][prio][j], size_of(lens[k]), prio);
			}
	printf("ready\n");
	fflush(stdout);
	int seen[NTOTAL] = {0}, got = 0;
	double deadline = deadline_after();
	while (got < NTOTAL) {
		gm_recv_event_t *e = gm_receive(port);
		int type = GM_RECV_EVENT_TYPE(e);
		if (type == GM_NO_RECV_EVENT) {
			expire(deadline, "the client's messages");
			continue;
		}
		if (!is_recv_type(type)) {
			gm_unknown(port, e);
			continue;
		}
		const unsigned char *d = event_data(e);
		gm_size_t len = gm_ntoh_u32(e->recv.length);
		int i = d[0];
		CHECK(i < NTOTAL, "message index %d", i);
		if (i >= NTOTAL)
			continue;
		seen[i]++;
		got++;
		CHECK(len == msgs[i].len, "message %d: length %lu, want %lu", i, len, msgs[i].len);
		size_t bad = len;
		for (size_t b = 1; b < len; b++)
			if (d[b] != pattern_byte((unsigned int)i, b)) {
				bad = b;
				break;
			}
		CHECK(bad == len, "message %d: payload differs at byte %zu", i, bad);
		CHECK(is_high_type(type) == (msgs[i].prio == GM_HIGH_PRIORITY), "message %d: event type %d", i, type);
		gm_provide_receive_buffer(port, gm_ntohp(e->recv.buffer), gm_ntoh_u8(e->recv.size),
					  is_high_type(type) ? GM_HIGH_PRIORITY : GM_LOW_PRIORITY);
	}
	for (int i = 0; i < NTOTAL; i++)
		CHECK(seen[i] == 1, "message %d received %d times", i, seen[i]);

	/* The answer: how many arrived. */
	unsigned char *ack = dma_alloc(port, 8);
	ack[0] = (unsigned char)got;
	struct completion c = {0, GM_SUCCESS, 0, GM_SUCCESS};
	take_token();
	gm_send_with_callback(port, ack, size_of(8), 8, GM_HIGH_PRIORITY, pr.node, pr.port, record_cb, &c);
	while (c.done == 0) {
		gm_recv_event_t *e = gm_receive(port);
		if (GM_RECV_EVENT_TYPE(e) != GM_NO_RECV_EVENT)
			gm_unknown(port, e);
		expire(deadline, "the answer's completion");
	}
	CHECK(c.status == GM_SUCCESS, "answer: %s", gm_strerror(c.status));
}

static void client(void)
{
	unsigned char *ackbuf = dma_alloc(port, gm_max_length_for_size(size_of(8)));
	gm_provide_receive_buffer(port, ackbuf, size_of(8), GM_HIGH_PRIORITY);
	unsigned int tokens0 = send_tokens;

	for (int i = 0; i < NLOW + NHIGH; i++)
		send_msg(i, msg_cb);
	/* Legacy sends: no callback; GM_SENT_EVENT reports them. */
	for (int i = NLOW + NHIGH + 1; i < NTOTAL; i++) {
		take_token();
		gm_send(port, msgs[i].buf, size_of(msgs[i].len), msgs[i].len, msgs[i].prio, pr.node, pr.port);
	}

	int acked = 0, legacy_done = 0, other = 0;
	double deadline = deadline_after();
	while (!acked || send_tokens < tokens0) {
		gm_recv_event_t *e = gm_receive(port);
		int type = GM_RECV_EVENT_TYPE(e);
		switch (type) {
		case GM_NO_RECV_EVENT:
			expire(deadline, acked ? "the callbacks" : "the server's answer");
			break;
		case GM_SENT_EVENT: {
			gm_up_n_t *list = gm_ntohp(e->sent.message_list);
			CHECK(list != NULL, "GM_SENT_EVENT without a message list");
			for (; list && gm_ntohp(*list) != NULL; list++) {
				void *sent = gm_ntohp(*list);
				int found = 0;
				for (int i = NLOW + NHIGH + 1; i < NTOTAL; i++)
					if (sent == msgs[i].buf) {
						msgs[i].calls++;
						found = 1;
					}
				CHECK(found, "GM_SENT_EVENT lists %p, not a legacy message", sent);
				legacy_done++;
				send_tokens++;
			}
			break;
		}
		case GM_FAST_HIGH_RECV_EVENT:
		case GM_FAST_HIGH_PEER_RECV_EVENT: {
			const unsigned char *d = event_data(e);
			CHECK(d[0] == NTOTAL, "the server received %d messages, want %d", d[0], NTOTAL);
			acked = 1;
			break;
		}
		default:
			if (is_recv_type(type)) {
				CHECK(0, "unexpected receive event %d", type);
				break;
			}
			if (type != GM_SENT_TOKENS_EVENT && type != GM_ALARM_EVENT)
				other++;
			in_unknown = 1;
			gm_unknown(port, e);
			in_unknown = 0;
		}
	}
	CHECK(legacy_done == NLEGACY, "GM_SENT_EVENT listed %d legacy messages, want %d", legacy_done, NLEGACY);
	for (int i = 0; i < NTOTAL; i++) {
		CHECK(msgs[i].calls == 1, "message %d completed %d times", i, msgs[i].calls);
		if (i < NLOW + NHIGH + 1)
			CHECK(msgs[i].status == GM_SUCCESS, "message %d: %s", i, gm_strerror(msgs[i].status));
	}
	/* Order per priority: the callback-sent message (index NLOW+NHIGH,
	   low) was sent after every other low one. */
	int rank = 0;
	for (int i = 0; i < NLOW; i++, rank++)
		CHECK(msgs[i].order == rank, "low message %d completed as number %d, want %d", i, msgs[i].order, rank);
	CHECK(msgs[NLOW + NHIGH].order == NLOW, "the callback's message completed as number %d, want %d",
	      msgs[NLOW + NHIGH].order, NLOW);
	for (int i = NLOW; i < NLOW + NHIGH; i++)
		CHECK(msgs[i].order == i - NLOW, "high message %d completed as number %d, want %d", i, msgs[i].order,
		      i - NLOW);
	CHECK(send_tokens == tokens0, "%u send tokens back, want %u", send_tokens, tokens0);
	printf("%d callbacks, %d legacy completions, %d other events through gm_unknown\n", NLOW + NHIGH + 1,
	       legacy_done, other);
}

int main(int argc, char **argv)
{
	pr = parse_peer(argc, argv, 0, "");
	port = open_port(pr.my_port, "callbacks");
	lookup_peer(port, &pr);
	send_tokens = gm_num_send_tokens(port);
	init_msgs();
	if (pr.server)
		server();
	else
		client();
	dma_free_port(port);
	close_port(port);
	return finish(pr.server ? "callbacks server" : "callbacks client");
}
