/*
 * dropresume: gm_drop_sends and gm_resume_sending after a failed send.
 *
 *   dropresume server|client PEER-HOST MY-PORT PEER-PORT CLOSED-PORT
 *
 * CLOSED-PORT is a port of the server's host that nobody has open.
 * The client:
 *   1. sends m1 and m2 to it: m1 fails with GM_SEND_TARGET_PORT_CLOSED
 *      and m2 waits; gm_drop_sends drops m2 (GM_SEND_DROPPED, before the
 *      drop's own callback, GM_SUCCESS);
 *   2. sends m3 and m4 to it: m3 fails and m4 waits; it asks the server
 *      (on its open port) to open CLOSED-PORT, and when the server says it
 *      did, gm_resume_sending sends m4; then m5 follows;
 *   3. the server reports what its new port received: m4 then m5 (m3
 *      failed and is not sent again, m1 and m2 never arrive).
 * The control messages travel at high priority between the two open ports.
 */
#include "common.h"

#define LEN 16

static struct gm_port *port;
static struct peer pr;
static unsigned int closed_port;

struct sent {
	int calls;
	gm_status_t status;
	int rank;
};
static struct sent s[8]; /* m1..m5 at 1..5; 6: drop, 7: resume */
static int ranks;

static void cb(struct gm_port *p, void *ctx, gm_status_t st)
{
	struct sent *x = ctx;
	(void)p;
	x->calls++;
	x->status = st;
	x->rank = ranks++;
	send_tokens++;
}

static unsigned char *msg[8];

static void send_m(int i, unsigned int prio, unsigned int target_port)
{
	take_token();
	gm_send_with_callback(port, msg[i], gm_min_size_for_length(LEN), LEN, prio, pr.node, target_port, cb, &s[i]);
}

/* Control messages that arrived while the program waited for something
   else: a receive event must never go to gm_unknown (its message and its
   buffer would be lost). */
static unsigned char ctlq[32];
static int ctlq_head, ctlq_tail;

/* pump handles one event of the control port. */
static void pump(void)
{
	gm_recv_event_t *e = gm_receive(port);
	int type = GM_RECV_EVENT_TYPE(e);
	if (is_recv_type(type)) {
		ctlq[ctlq_tail++ % 32] = ((unsigned char *)event_data(e))[0];
		gm_provide_receive_buffer(port, gm_ntohp(e->recv.buffer), gm_ntoh_u8(e->recv.size),
					  is_high_type(type) ? GM_HIGH_PRIORITY : GM_LOW_PRIORITY);
	} else if (type != GM_NO_RECV_EVENT) {
		gm_unknown(port, e);
	}
}

static void wait_calls(int i, const char *what)
{
	double deadline = deadline_after();
	while (s[i].calls == 0) {
		pump();
		expire(deadline, what);
	}
}

/* receive_ctl waits for a message on the control port and returns its
   first byte; meanwhile it receives on other, if not NULL. */
static unsigned char receive_ctl(struct gm_port *other, int *other_got, unsigned char *other_ids)
{
	double deadline = deadline_after();
	while (ctlq_head == ctlq_tail) {
		pump();
		if (other) {
			gm_recv_event_t *e = gm_receive(other);
			int type = GM_RECV_EVENT_TYPE(e);
			if (is_recv_type(type)) {
				other_ids[(*other_got)++ & 7] = ((unsigned char *)event_data(e))[0];
			} else if (type != GM_NO_RECV_EVENT) {
				gm_unknown(other, e);
			}
		}
		expire(deadline, "a control message");
	}
	return ctlq[ctlq_head++ % 32];
}

static void send_ctl(unsigned char what)
{
	static unsigned char *b;
	if (b == NULL)
		b = dma_alloc(port, 8);
	/* b is reused: the previous control message must be complete. */
	static struct completion c = {0, GM_SUCCESS, 0, GM_SUCCESS};
	b[0] = what;
	take_token();
	int before = c.done;
	gm_send_with_callback(port, b, gm_min_size_for_length(8), 8, GM_HIGH_PRIORITY, pr.node, pr.port, record_cb, &c);
	double deadline = deadline_after();
	while (c.done == before) {
		pump();
		expire(deadline, "a control message's completion");
	}
	CHECK(c.status == GM_SUCCESS, "control message '%c': %s", what, gm_strerror(c.status));
}

static void provide_ctl(struct gm_port *p, int n)
{
	for (int i = 0; i < n; i++)
		gm_provide_receive_buffer(p, dma_alloc(p, gm_max_length_for_size(gm_min_size_for_length(8))),
					  gm_min_size_for_length(8), GM_HIGH_PRIORITY);
}

static void server(void)
{
	provide_ctl(port, 4);
	printf("ready\n");
	fflush(stdout);
	unsigned char c = receive_ctl(NULL, NULL, NULL);
	CHECK(c == 'O', "control message '%c', want 'O'", c);
	struct gm_port *p2 = open_port(closed_port, "dropresume-late");
	unsigned int size = gm_min_size_for_length(LEN);
	for (int i = 0; i < 4; i++)
		gm_provide_receive_buffer(p2, dma_alloc(p2, gm_max_length_for_size(size)), size, GM_LOW_PRIORITY);
	send_ctl('K');
	/* Receive on the new port until the client says it is done. */
	int got = 0;
	unsigned char ids[8] = {0};
	c = receive_ctl(p2, &got, ids);
	CHECK(c == 'D', "control message '%c', want 'D'", c);
	/* Everything the client sent is in (its callbacks said so). */
	double deadline = deadline_after();
	while (got < 2) {
		gm_recv_event_t *e = gm_receive(p2);
		int type = GM_RECV_EVENT_TYPE(e);
		if (is_recv_type(type))
			ids[got++ & 7] = ((unsigned char *)event_data(e))[0];
		else if (type != GM_NO_RECV_EVENT)
			gm_unknown(p2, e);
		expire(deadline, "m4 and m5");
	}
	for (int i = 0; i < got && i < 8; i++)
		printf("port %u received m%d\n", closed_port, ids[i]);
	fflush(stdout);
	/* The report: how many, then which. */
	send_ctl((unsigned char)('0' + got));
	for (int i = 0; i < got && i < 8; i++)
		send_ctl((unsigned char)('0' + ids[i]));
	dma_free_port(p2);
	close_port(p2);
}

static void client(void)
{
	provide_ctl(port, 8);
	for (int i = 1; i <= 5; i++) {
		msg[i] = dma_alloc(port, LEN);
		memset(msg[i], 0, LEN);
		msg[i][0] = (unsigned char)i;
	}
	unsigned int tokens0 = send_tokens;

	/* 1. Failure, then drop. */
	send_m(1, GM_LOW_PRIORITY, closed_port);
	send_m(2, GM_LOW_PRIORITY, closed_port);
	wait_calls(1, "m1's failure");
	CHECK(s[1].status == GM_SEND_TARGET_PORT_CLOSED, "m1: %s, want %s", gm_strerror(s[1].status),
	      gm_strerror(GM_SEND_TARGET_PORT_CLOSED));
	CHECK(s[2].calls == 0, "m2 completed (%s) before gm_drop_sends", gm_strerror(s[2].status));
	take_token();
	gm_drop_sends(port, GM_LOW_PRIORITY, pr.node, closed_port, cb, &s[6]);
	wait_calls(6, "gm_drop_sends' callback");
	wait_calls(2, "m2's callback");
	CHECK(s[2].status == GM_SEND_DROPPED, "m2: %s, want %s", gm_strerror(s[2].status), gm_strerror(GM_SEND_DROPPED));
	CHECK(s[6].status == GM_SUCCESS, "gm_drop_sends: %s", gm_strerror(s[6].status));
	CHECK(s[2].rank < s[6].rank, "gm_drop_sends completed before the send it dropped");

	/* 2. Failure, the port opens, resume. */
	send_m(3, GM_LOW_PRIORITY, closed_port);
	send_m(4, GM_LOW_PRIORITY, closed_port);
	wait_calls(3, "m3's failure");
	CHECK(s[3].status == GM_SEND_TARGET_PORT_CLOSED, "m3 after gm_drop_sends: %s, want %s",
	      gm_strerror(s[3].status), gm_strerror(GM_SEND_TARGET_PORT_CLOSED));
	CHECK(s[4].calls == 0, "m4 completed (%s) before gm_resume_sending", gm_strerror(s[4].status));
	send_ctl('O');
	unsigned char k = receive_ctl(NULL, NULL, NULL);
	CHECK(k == 'K', "control message '%c', want 'K'", k);
	CHECK(s[4].calls == 0, "m4 completed (%s) before gm_resume_sending", gm_strerror(s[4].status));
	take_token();
	gm_resume_sending(port, GM_LOW_PRIORITY, pr.node, closed_port, cb, &s[7]);
	send_m(5, GM_LOW_PRIORITY, closed_port);
	wait_calls(7, "gm_resume_sending's callback");
	wait_calls(4, "m4");
	wait_calls(5, "m5");
	CHECK(s[7].status == GM_SUCCESS, "gm_resume_sending: %s", gm_strerror(s[7].status));
	CHECK(s[4].status == GM_SUCCESS, "m4 after gm_resume_sending: %s", gm_strerror(s[4].status));
	CHECK(s[5].status == GM_SUCCESS, "m5 after gm_resume_sending: %s", gm_strerror(s[5].status));
	CHECK(s[4].rank < s[5].rank, "m5 completed before m4");
	send_ctl('D');

	/* 3. The server's report. */
	unsigned char n = receive_ctl(NULL, NULL, NULL);
	char ids[9] = {0};
	for (int i = 0; i < n - '0' && i < 8; i++)
		ids[i] = (char)receive_ctl(NULL, NULL, NULL);
	CHECK(strcmp(ids, "45") == 0, "the new port received m%s (by number), want m4 then m5", ids);
	for (int i = 1; i <= 7; i++)
		if (i != 6 && i != 7)
			CHECK(s[i].calls == 1, "m%d: %d callbacks", i, s[i].calls);
	CHECK(s[6].calls == 1 && s[7].calls == 1, "drop %d, resume %d callbacks", s[6].calls, s[7].calls);
	double deadline = deadline_after();
	while (send_tokens < tokens0) {
		gm_recv_event_t *e = gm_receive(port);
		if (GM_RECV_EVENT_TYPE(e) != GM_NO_RECV_EVENT)
			gm_unknown(port, e);
		expire(deadline, "the tokens");
	}
}

int main(int argc, char **argv)
{
	pr = parse_peer(argc, argv, 1, "CLOSED-PORT");
	closed_port = (unsigned int)atoi(argv[5]);
	run_peer(&port, &pr, "dropresume", server, client);
	return finish(pr.server ? "dropresume server" : "dropresume client");
}
