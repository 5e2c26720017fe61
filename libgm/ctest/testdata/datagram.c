/*
 * datagram: gm_datagram_send and gm_datagram_send_4.
 *
 *   datagram server|client PEER-HOST MY-PORT PEER-PORT
 *
 * The client sends N datagrams (each numbered, with a pattern) and one
 * gm_datagram_send_4, each callback checked (GM_SUCCESS, once, with its
 * context), then a reliable message "end" at high priority. The server
 * keeps buffers provided, verifies every datagram (numbered, intact, none
 * twice, never FAST: a datagram is an ordinary receive), and after "end"
 * answers with how many it received. Datagrams are unreliable, but a veth
 * pair with buffers always provided loses none: the client checks that at
 * least half arrived and that the server saw no duplicate or corruption.
 */
#include "common.h"

#define N 32
#define LEN 200

static struct gm_port *port;
static struct peer pr;
static struct completion dg[N + 1];

static void server(void)
{
	unsigned int size = gm_min_size_for_length(LEN);
	unsigned int csize = gm_min_size_for_length(8);
	int seen[N + 1] = {0}, got = 0, end = 0;
	double deadline = deadline_after();

	for (int i = 0; i < 2 * N; i++)
		gm_provide_receive_buffer(port, dma_alloc(port, gm_max_length_for_size(size)), size, GM_LOW_PRIORITY);
	gm_provide_receive_buffer(port, dma_alloc(port, 8), csize, GM_HIGH_PRIORITY);
	/* gm_datagram_send_4's size class. */
	gm_provide_receive_buffer(port, dma_alloc(port, 8), gm_min_size_for_length(4), GM_LOW_PRIORITY);
	printf("ready\n");
	fflush(stdout);
	while (!end) {
		gm_recv_event_t *e = gm_receive(port);
		int t = GM_RECV_EVENT_TYPE(e);

		expire(deadline, "the datagrams and the end message");
		if (!is_recv_type(t)) {
			if (t != GM_NO_RECV_EVENT)
				gm_unknown(port, e);
			continue;
		}
		unsigned char *d = event_data(e);
		unsigned int len = gm_ntoh_u32(e->recv.length);
		if (is_high_type(t)) {
			end = 1;
		} else if (len == 4) {
			gm_u32_t w;
			memcpy(&w, d, 4);
			CHECK(w == 0xfeedf00du, "gm_datagram_send_4 carried %#x", (unsigned)w);
			CHECK(seen[N]++ == 0, "gm_datagram_send_4's datagram twice");
			got++;
		} else {
			unsigned int i = d[0];
			CHECK(!is_fast_type(t), "datagram %u as a FAST event (type %d)", i, t);
			CHECK(len == LEN && i < N, "datagram of %u bytes numbered %u", len, i);
			if (len == LEN && i < N) {
				CHECK(verify(d + 1, LEN - 1, i) == LEN - 1, "datagram %u corrupted", i);
				CHECK(seen[i]++ == 0, "datagram %u delivered twice", i);
				got++;
			}
		}
		gm_provide_receive_buffer(port, gm_ntohp(e->recv.buffer), gm_ntoh_u8(e->recv.size),
					  is_high_type(t) ? GM_HIGH_PRIORITY : GM_LOW_PRIORITY);
	}
	unsigned char *answer = dma_alloc(port, 8);
	struct completion c = {0, GM_SUCCESS, 0, GM_SUCCESS};
	answer[0] = (unsigned char)got;
	take_token();
	gm_send_with_callback(port, answer, csize, 8, GM_HIGH_PRIORITY, pr.node, pr.port, record_cb, &c);
	while (!c.done) {
		gm_recv_event_t *e = gm_receive(port);
		if (GM_RECV_EVENT_TYPE(e) != GM_NO_RECV_EVENT && !is_recv_type(GM_RECV_EVENT_TYPE(e)))
			gm_unknown(port, e);
		expire(deadline, "the answer's completion");
	}
	CHECK(c.status == GM_SUCCESS, "answer: %s", gm_strerror(c.status));
	printf("received %d of %d datagrams\n", got, N + 1);
}

static void client(void)
{
	unsigned int size = gm_min_size_for_length(LEN);
	unsigned int csize = gm_min_size_for_length(8);
	unsigned char *m[N];
	double deadline = deadline_after();
	int answered = -1;

	gm_provide_receive_buffer(port, dma_alloc(port, 8), csize, GM_HIGH_PRIORITY);
	for (int i = 0; i < N; i++) {
		m[i] = dma_alloc(port, LEN);
		m[i][0] = (unsigned char)i;
		fill(m[i] + 1, LEN - 1, (unsigned int)i);
		while (send_tokens == 0) {
			gm_recv_event_t *e = gm_receive(port);
			if (GM_RECV_EVENT_TYPE(e) != GM_NO_RECV_EVENT && !is_recv_type(GM_RECV_EVENT_TYPE(e)))
				gm_unknown(port, e);
			expire(deadline, "a send token");
		}
		take_token();
		gm_datagram_send(port, m[i], size, LEN, GM_LOW_PRIORITY, pr.node, pr.port, record_cb, &dg[i]);
	}
	take_token();
	gm_datagram_send_4(port, 0xfeedf00du, gm_min_size_for_length(4), 4, GM_LOW_PRIORITY, pr.node, pr.port,
			   record_cb, &dg[N]);
	for (int i = 0; i <= N; i++) {
		while (!dg[i].done) {
			gm_recv_event_t *e = gm_receive(port);
			if (GM_RECV_EVENT_TYPE(e) != GM_NO_RECV_EVENT && !is_recv_type(GM_RECV_EVENT_TYPE(e)))
				gm_unknown(port, e);
			expire(deadline, "a datagram's callback");
		}
		CHECK(dg[i].done == 1 && dg[i].status == GM_SUCCESS, "datagram %d: %d callbacks, %s", i, dg[i].done,
		      gm_strerror(dg[i].status));
	}
	/* The end message follows the datagrams (reliable, high priority). */
	unsigned char *end = dma_alloc(port, 8);
	struct completion c = {0, GM_SUCCESS, 0, GM_SUCCESS};
	take_token();
	gm_send_with_callback(port, end, csize, 8, GM_HIGH_PRIORITY, pr.node, pr.port, record_cb, &c);
	while (answered < 0 || !c.done) {
		gm_recv_event_t *e = gm_receive(port);
		int t = GM_RECV_EVENT_TYPE(e);
		if (is_recv_type(t))
			answered = ((unsigned char *)event_data(e))[0];
		else if (t != GM_NO_RECV_EVENT)
			gm_unknown(port, e);
		expire(deadline, "the server's count");
	}
	CHECK(c.status == GM_SUCCESS, "end message: %s", gm_strerror(c.status));
	CHECK(answered >= (N + 1) / 2 && answered <= N + 1, "the server received %d of %d datagrams", answered, N + 1);
	printf("the server received %d of %d datagrams\n", answered, N + 1);
}

int main(int argc, char **argv)
{
	pr = parse_peer(argc, argv, 0, "");
	run_peer(&port, &pr, "datagram", server, client);
	return finish(pr.server ? "datagram server" : "datagram client");
}
