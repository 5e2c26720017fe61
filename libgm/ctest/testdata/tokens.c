/*
 * tokens: send-token accounting with every token in flight.
 *
 *   tokens server|client PEER-HOST MY-PORT PEER-PORT
 *
 * The client has N = gm_num_send_tokens() tokens. It deposits N-1 low and
 * 1 high priority tokens with gm_free_send_tokens, takes one with
 * gm_alloc_send_token before each send and gives it back with
 * gm_free_send_token in the send's callback. It sends N-1 low priority
 * messages, which the server cannot receive yet (it has provided no low
 * priority buffer), so all of them stay in flight; then one high priority
 * message, the server's signal to provide N-1 low buffers. With all N
 * tokens in flight, gm_alloc_send_token and gm_send_token_available say
 * none is left for either priority. Then every send completes, in order,
 * and every token is available again.
 */
#include "common.h"

#define LEN 16

static struct gm_port *port;
static int completions, low_next, failed;

static void tok_cb(struct gm_port *p, void *ctx, gm_status_t st)
{
	long i = (long)(intptr_t)ctx;
	unsigned int prio = i < 0 ? GM_HIGH_PRIORITY : GM_LOW_PRIORITY;
	CHECK(st == GM_SUCCESS, "send %ld: %s", i, gm_strerror(st));
	if (st != GM_SUCCESS)
		failed++;
	if (i >= 0) {
		CHECK(i == low_next, "low send %ld completed in place of %d", i, low_next);
		low_next++;
	}
	completions++;
	send_tokens++;
	gm_free_send_token(p, prio);
}

static void server(struct peer *pr)
{
	unsigned int size = gm_min_size_for_length(LEN);
	unsigned char *go = gm_dma_malloc(port, gm_max_length_for_size(size));
	gm_provide_receive_buffer(port, go, size, GM_HIGH_PRIORITY);
	printf("ready\n");
	fflush(stdout);
	unsigned int want = 0, got = 0;
	int have_go = 0;
	unsigned char *low = NULL;
	double deadline = deadline_after();
	while (!have_go || got < want) {
		gm_recv_event_t *e = gm_receive(port);
		int type = GM_RECV_EVENT_TYPE(e);
		if (type == GM_NO_RECV_EVENT) {
			expire(deadline, have_go ? "the low priority messages" : "the high priority signal");
			continue;
		}
		if (!is_recv_type(type)) {
			gm_unknown(port, e);
			continue;
		}
		const unsigned char *d = event_data(e);
		if (is_high_type(type)) {
			CHECK(!have_go, "a second high priority message");
			CHECK(got == 0, "%u low priority messages before any low buffer", got);
			have_go = 1;
			want = d[0];
			/* Now the low buffers: the waiting sends complete. */
			gm_size_t blen = gm_max_length_for_size(size);
			low = gm_dma_malloc(port, want * blen);
			if (low == NULL)
				FATAL("gm_dma_malloc failed");
			for (unsigned int i = 0; i < want; i++)
				gm_provide_receive_buffer(port, low + i * blen, size, GM_LOW_PRIORITY);
			continue;
		}
		CHECK(d[0] == got, "low message %u arrived as number %u", d[0], got);
		CHECK(verify(d + 1, LEN - 1, d[0]) == LEN - 1, "low message %u: payload", d[0]);
		got++;
	}
	(void)pr;
	printf("received %u low priority messages after the signal\n", got);
	if (low)
		gm_dma_free(port, low);
	gm_dma_free(port, go);
}

static void client(struct peer *pr)
{
	unsigned int n = send_tokens;
	unsigned int size = gm_min_size_for_length(LEN);
	CHECK(n == GM_NUM_SEND_TOKENS, "gm_num_send_tokens: %u, want GM's %d", n, GM_NUM_SEND_TOKENS);
	CHECK(gm_num_receive_tokens(port) > 0, "gm_num_receive_tokens: %u", gm_num_receive_tokens(port));
	if (n < 2 || n > 255)
		FATAL("cannot test with %u send tokens", n);

	/* The accounting counters start empty. */
	CHECK(!gm_send_token_available(port, GM_LOW_PRIORITY), "a low token available before any deposit");
	CHECK(!gm_alloc_send_token(port, GM_HIGH_PRIORITY), "a high token allocated before any deposit");
	gm_free_send_tokens(port, GM_LOW_PRIORITY, n - 1);
	gm_free_send_tokens(port, GM_HIGH_PRIORITY, 1);
	CHECK(gm_send_token_available(port, GM_LOW_PRIORITY), "no low token after depositing %u", n - 1);
	CHECK(gm_send_token_available(port, GM_HIGH_PRIORITY), "no high token after depositing 1");

	unsigned char *msgs = gm_dma_malloc(port, (gm_size_t)n * LEN);
	if (msgs == NULL)
		FATAL("gm_dma_malloc failed");
	for (unsigned int i = 0; i < n - 1; i++) {
		unsigned char *m = msgs + i * LEN;
		m[0] = (unsigned char)i;
		fill(m + 1, LEN - 1, i);
		CHECK(gm_alloc_send_token(port, GM_LOW_PRIORITY), "no low token for send %u of %u", i, n - 1);
		take_token();
		gm_send_with_callback(port, m, size, LEN, GM_LOW_PRIORITY, pr->node, pr->port, tok_cb,
				      (void *)(intptr_t)i);
	}
	CHECK(!gm_send_token_available(port, GM_LOW_PRIORITY), "a low token left with %u sends in flight", n - 1);
	CHECK(!gm_alloc_send_token(port, GM_LOW_PRIORITY), "allocated a low token with %u sends in flight", n - 1);

	/* The signal, at high priority: the last real token. */
	unsigned char *go = msgs + (n - 1) * LEN;
	go[0] = (unsigned char)(n - 1);
	CHECK(gm_alloc_send_token(port, GM_HIGH_PRIORITY), "no high token for the signal");
	take_token();
	gm_send_with_callback(port, go, size, LEN, GM_HIGH_PRIORITY, pr->node, pr->port, tok_cb, (void *)(intptr_t)-1);
	CHECK(send_tokens == 0, "%u tokens left by our count", send_tokens);
	CHECK(!gm_send_token_available(port, GM_HIGH_PRIORITY), "a high token left with every token in flight");
	CHECK(!gm_alloc_send_token(port, GM_HIGH_PRIORITY), "allocated a high token with every token in flight");

	double deadline = deadline_after();
	while (completions < (int)n) {
		gm_recv_event_t *e = gm_receive(port);
		if (GM_RECV_EVENT_TYPE(e) != GM_NO_RECV_EVENT)
			gm_unknown(port, e);
		expire(deadline, "the completions");
	}
	CHECK(low_next == (int)n - 1, "%d low completions, want %u", low_next, n - 1);
	CHECK(failed == 0, "%d sends failed", failed);
	CHECK(gm_num_send_tokens(port) == n, "gm_num_send_tokens changed to %u", gm_num_send_tokens(port));

	/* Every accounted token is back: N-1 low ones can be taken again, not N. */
	unsigned int taken = 0;
	while (taken <= n && gm_alloc_send_token(port, GM_LOW_PRIORITY))
		taken++;
	CHECK(taken == n - 1, "took %u low tokens after the sends, want %u", taken, n - 1);
	for (unsigned int i = 0; i < taken; i++)
		gm_free_send_token(port, GM_LOW_PRIORITY);
	CHECK(gm_alloc_send_token(port, GM_HIGH_PRIORITY), "the high token is not back");
	gm_free_send_token(port, GM_HIGH_PRIORITY);
	printf("%u sends in flight at once, %d completions\n", n, completions);
	gm_dma_free(port, msgs);
}

int main(int argc, char **argv)
{
	struct peer pr = parse_peer(argc, argv, 0, "");
	port = open_port(pr.my_port, "tokens");
	lookup_peer(port, &pr);
	send_tokens = gm_num_send_tokens(port);
	if (pr.server)
		server(&pr);
	else
		client(&pr);
	close_port(port);
	return finish(pr.server ? "tokens server" : "tokens client");
}
