/*
 * rdma: puts and gets by raw virtual address.
 *
 *   rdma server|client PEER-HOST MY-PORT PEER-PORT
 *
 * The server has two targets: DMA, gm_dma_malloc memory, and REG, four
 * pages of malloc memory registered as two adjacent registrations of two
 * pages each. It calls gm_allow_remote_memory_access and sends their
 * addresses (in network order) to the client in a message. The client
 * puts into both (gm_put, gm_directed_send_with_callback; one put spans
 * the two registrations) from gm_dma_malloc and from registered malloc
 * memory; once every put's callback said GM_SUCCESS it tells the server,
 * which checks its memory byte for byte (the puts' data in place, every
 * other byte as it was). Then the client refuses a size class at low
 * priority, and the server sends it a message of that class: it fails
 * with GM_SEND_REJECTED, which disables the server's low-priority sends to
 * the client, and a second message waits behind it. Meanwhile the client
 * gets from both targets, at both priorities (one get spans the two
 * registrations, one reads all four pages) into gm_dma_malloc and
 * registered malloc memory and checks what it read: gets are served by
 * the target whatever its own sends do, as GM's NIC serves them. Last the
 * server drops its held message with gm_drop_sends.
 */
#include "common.h"

#define PAGE 4096
/* The size class the client refuses at low priority. */
#define REFUSED_SIZE 7
#define DMA_LEN (3 * PAGE + 100)
#define REG_LEN (4 * PAGE)

struct put {
	int reg;         /* into REG (else DMA) */
	gm_size_t off, len;
	unsigned int seed;
};

/* The puts, in order; later ones win where they overlap. */
static const struct put plan[] = {
	{0, 100, 5000, 21},           /* DMA, across pages */
	{1, 2 * PAGE - 1500, 3000, 22}, /* REG, across the two registrations */
	{1, 0, 64, 23},               /* REG, the first bytes */
	{0, 9000, 100, 24},           /* DMA, by gm_directed_send_with_callback */
	{1, REG_LEN - 1, 1, 25},      /* REG, the last byte */
};
#define NPUT (int)(sizeof plan / sizeof plan[0])

/* want is what byte i of target reg holds after the puts. */
static unsigned char want(int reg, gm_size_t i)
{
	unsigned char b = pattern_byte(reg ? 12 : 11, i);
	for (int k = 0; k < NPUT; k++)
		if (plan[k].reg == reg && i >= plan[k].off && i < plan[k].off + plan[k].len)
			b = pattern_byte(plan[k].seed, i - plan[k].off);
	return b;
}

static struct gm_port *port;
static struct peer pr;
static unsigned char *ctl;

static void provide_ctl(int n)
{
	unsigned int size = gm_min_size_for_length(64);
	for (int i = 0; i < n; i++)
		gm_provide_receive_buffer(port, dma_alloc(port, gm_max_length_for_size(size)), size, GM_HIGH_PRIORITY);
}

/* Control messages that arrived while the program waited for something
   else (a receive event must never go to gm_unknown). */
static unsigned char ctlq[8][64];
static int ctlq_head, ctlq_tail;

/* pump handles one event. */
static void pump(void)
{
	gm_recv_event_t *e = gm_receive(port);
	int type = GM_RECV_EVENT_TYPE(e);
	if (is_recv_type(type)) {
		gm_size_t len = gm_ntoh_u32(e->recv.length);
		if (ctlq_tail - ctlq_head >= 8)
			FATAL("too many control messages");
		memcpy(ctlq[ctlq_tail++ % 8], event_data(e), len < 64 ? len : 64);
		gm_provide_receive_buffer(port, gm_ntohp(e->recv.buffer), gm_ntoh_u8(e->recv.size), GM_HIGH_PRIORITY);
	} else if (type != GM_NO_RECV_EVENT) {
		gm_unknown(port, e);
	}
}

/* recv_ctl waits for a control message and copies it into out[64]. */
static void recv_ctl(unsigned char *out, const char *what)
{
	double deadline = deadline_after();
	while (ctlq_head == ctlq_tail) {
		pump();
		expire(deadline, what);
	}
	memcpy(out, ctlq[ctlq_head++ % 8], 64);
}

static void wait_done(struct completion *c, int n, const char *what)
{
	double deadline = deadline_after();
	while (c->done < n) {
		pump();
		expire(deadline, what);
	}
}

static void send_ctl(gm_size_t len)
{
	static struct completion c = {0, GM_SUCCESS, 0, GM_SUCCESS};
	take_token();
	gm_send_with_callback(port, ctl, gm_min_size_for_length(64), len, GM_HIGH_PRIORITY, pr.node, pr.port, record_cb,
			      &c);
	wait_done(&c, c.done + 1, "a control message's completion");
	CHECK(c.failed == 0, "control message: %s", gm_strerror(c.first_bad));
}

static void server(void)
{
	unsigned char *dma = gm_dma_malloc(port, DMA_LEN);
	unsigned char *reg = NULL;
	if (dma == NULL || posix_memalign((void **)&reg, PAGE, REG_LEN) != 0)
		FATAL("no memory");
	fill(dma, DMA_LEN, 11);
	fill(reg, REG_LEN, 12);
	CHECK(gm_register_memory(port, reg, 2 * PAGE) == GM_SUCCESS, "gm_register_memory of REG's first half");
	CHECK(gm_register_memory(port, reg + 2 * PAGE, 2 * PAGE) == GM_SUCCESS, "gm_register_memory of REG's second half");
	CHECK(gm_allow_remote_memory_access(port) == GM_SUCCESS, "gm_allow_remote_memory_access");
	provide_ctl(4);
	printf("ready\n");
	fflush(stdout);

	unsigned char m[64];
	recv_ctl(m, "the client's hello");
	CHECK(m[0] == 'H', "'%c', want 'H'", m[0]);
	gm_u64_n_t addrs[4] = {gm_hton_u64((gm_u64_t)(uintptr_t)dma), gm_hton_u64(DMA_LEN),
			       gm_hton_u64((gm_u64_t)(uintptr_t)reg), gm_hton_u64(REG_LEN)};
	memcpy(ctl, addrs, sizeof addrs);
	send_ctl(sizeof addrs);

	recv_ctl(m, "the client's puts");
	CHECK(m[0] == 'P', "'%c', want 'P'", m[0]);
	gm_size_t bad_dma = DMA_LEN, bad_reg = REG_LEN;
	for (gm_size_t i = 0; i < DMA_LEN; i++)
		if (dma[i] != want(0, i)) {
			bad_dma = i;
			break;
		}
	for (gm_size_t i = 0; i < REG_LEN; i++)
		if (reg[i] != want(1, i)) {
			bad_reg = i;
			break;
		}
	CHECK(bad_dma == DMA_LEN, "DMA memory after the puts differs at byte %lu", bad_dma);
	CHECK(bad_reg == REG_LEN, "REG memory after the puts differs at byte %lu (registrations split at %d)", bad_reg,
	      2 * PAGE);
	ctl[0] = 'V';
	ctl[1] = bad_dma == DMA_LEN && bad_reg == REG_LEN;
	send_ctl(2);

	/* Disable the low-priority sends to the client: a message of a size
	   class it refuses, and one held behind it. */
	recv_ctl(m, "the client's refusal of a size class");
	CHECK(m[0] == 'A', "'%c', want 'A'", m[0]);
	unsigned char *refused = dma_alloc(port, 64), *held = dma_alloc(port, 64);
	memset(refused, 'r', 64);
	memset(held, 'h', 64);
	struct completion r = {0, GM_SUCCESS, 0, GM_SUCCESS}, h = r, d = r;
	take_token();
	gm_send_with_callback(port, refused, REFUSED_SIZE, 8, GM_LOW_PRIORITY, pr.node, pr.port, record_cb, &r);
	wait_done(&r, 1, "the refused message's completion");
	CHECK(r.status == GM_SEND_REJECTED, "the refused message: %s, want GM_SEND_REJECTED", gm_strerror(r.status));
	take_token();
	gm_send_with_callback(port, held, REFUSED_SIZE, 8, GM_LOW_PRIORITY, pr.node, pr.port, record_cb, &h);
	ctl[0] = 'D';
	send_ctl(1);

	recv_ctl(m, "the client's goodbye");
	CHECK(m[0] == 'B', "'%c', want 'B'", m[0]);
	CHECK(h.done == 0, "the held message completed (%s) while the sends were disabled", gm_strerror(h.status));
	take_token();
	gm_drop_sends(port, GM_LOW_PRIORITY, pr.node, pr.port, record_cb, &d);
	wait_done(&d, 1, "gm_drop_sends' callback");
	wait_done(&h, 1, "the held message's completion");
	CHECK(h.status == GM_SEND_DROPPED, "the held message: %s, want GM_SEND_DROPPED", gm_strerror(h.status));
	CHECK(d.status == GM_SUCCESS, "gm_drop_sends: %s", gm_strerror(d.status));
	CHECK(gm_deregister_memory(port, reg, 2 * PAGE) == GM_SUCCESS, "gm_deregister_memory");
	CHECK(gm_deregister_memory(port, reg + 2 * PAGE, 2 * PAGE) == GM_SUCCESS, "gm_deregister_memory");
	free(reg);
	gm_dma_free(port, dma);
}

static void client(void)
{
	provide_ctl(4);
	ctl[0] = 'H';
	send_ctl(1);
	unsigned char m[64];
	recv_ctl(m, "the server's addresses");
	gm_u64_n_t a[4];
	memcpy(a, m, sizeof a);
	gm_remote_ptr_t rdma = gm_ntoh_u64(a[0]), rreg = gm_ntoh_u64(a[2]);
	CHECK(gm_ntoh_u64(a[1]) == DMA_LEN && gm_ntoh_u64(a[3]) == REG_LEN, "lengths %llu %llu",
	      (unsigned long long)gm_ntoh_u64(a[1]), (unsigned long long)gm_ntoh_u64(a[3]));

	/* Local memory: gm_dma_malloc'd and registered malloc'd (not page
	   aligned). */
	enum { LLEN = 5 * PAGE };
	unsigned char *ldma = gm_dma_malloc(port, LLEN);
	unsigned char *lreg = malloc(LLEN + 3);
	if (ldma == NULL || lreg == NULL)
		FATAL("no memory");
	CHECK(gm_register_memory(port, lreg + 3, LLEN) == GM_SUCCESS, "gm_register_memory of malloc memory");
	unsigned char *lr = lreg + 3;

	/* Puts: sources alternate between the two kinds of memory. */
	struct completion c = {0, GM_SUCCESS, 0, GM_SUCCESS};
	gm_size_t srcoff = 0;
	for (int k = 0; k < NPUT; k++) {
		unsigned char *src = (k % 2 ? lr : ldma) + srcoff;
		fill(src, plan[k].len, plan[k].seed);
		gm_remote_ptr_t dst = (plan[k].reg ? rreg : rdma) + plan[k].off;
		unsigned int prio = k % 2 ? GM_HIGH_PRIORITY : GM_LOW_PRIORITY;
		take_token();
		if (k == 3)
			gm_directed_send_with_callback(port, src, dst, plan[k].len, prio, pr.node, pr.port, record_cb, &c);
		else
			gm_put(port, src, dst, plan[k].len, prio, pr.node, pr.port, record_cb, &c);
		srcoff += plan[k].len;
	}
	wait_done(&c, NPUT, "the puts");
	CHECK(c.failed == 0, "%d puts failed, the first with %s", c.failed, gm_strerror(c.first_bad));
	ctl[0] = 'P';
	send_ctl(1);
	recv_ctl(m, "the server's verdict");
	CHECK(m[0] == 'V' && m[1] == 1, "the server found its memory wrong after the puts");

	/* Refuse REFUSED_SIZE at low priority; the server's message of that
	   size then fails, disabling its low-priority sends to this port. */
	CHECK(gm_set_acceptable_sizes(port, GM_LOW_PRIORITY, ~((gm_size_t)1 << REFUSED_SIZE)) == GM_SUCCESS,
	      "gm_set_acceptable_sizes");
	ctl[0] = 'A';
	send_ctl(1);
	recv_ctl(m, "the server's disabled sends");
	CHECK(m[0] == 'D', "'%c', want 'D'", m[0]);

	/* Gets, while the server's low-priority sends to this port are
	   disabled. */
	struct get {
		int reg;
		gm_size_t off, len;
		int into_reg;
	} gets[] = {
		{0, 7, 9000, 0},
		{1, 2 * PAGE - 2000, 4000, 1}, /* across the registrations */
		{1, 0, REG_LEN, 0},            /* all of REG */
		{0, DMA_LEN - 1, 1, 1},
	};
	int ngets = (int)(sizeof gets / sizeof gets[0]);
	c = (struct completion){0, GM_SUCCESS, 0, GM_SUCCESS};
	for (int k = 0; k < ngets; k++) {
		unsigned char *dst = gets[k].into_reg ? lr : ldma;
		memset(dst, 0xEE, LLEN);
		take_token();
		gm_get(port, (gets[k].reg ? rreg : rdma) + gets[k].off, dst, gets[k].len,
		       k % 2 ? GM_HIGH_PRIORITY : GM_LOW_PRIORITY, pr.node, pr.port, record_cb, &c);
		wait_done(&c, k + 1, "a get");
		gm_size_t bad = gets[k].len;
		for (gm_size_t i = 0; i < gets[k].len; i++)
			if (dst[i] != want(gets[k].reg, gets[k].off + i)) {
				bad = i;
				break;
			}
		CHECK(c.failed == 0, "get %d: %s", k, gm_strerror(c.first_bad));
		CHECK(bad == gets[k].len, "get %d (%s+%lu, %lu bytes into %s memory) differs at byte %lu", k,
		      gets[k].reg ? "REG" : "DMA", gets[k].off, gets[k].len, gets[k].into_reg ? "registered" : "DMA",
		      bad);
		CHECK(dst[gets[k].len] == 0xEE, "get %d wrote beyond its length", k);
	}
	ctl[0] = 'B';
	send_ctl(1);
	CHECK(gm_deregister_memory(port, lr, LLEN) == GM_SUCCESS, "gm_deregister_memory");
	free(lreg);
	gm_dma_free(port, ldma);
	printf("%d puts and %d gets verified\n", NPUT, ngets);
}

int main(int argc, char **argv)
{
	pr = parse_peer(argc, argv, 0, "");
	port = open_port(pr.my_port, "rdma");
	lookup_peer(port, &pr);
	send_tokens = gm_num_send_tokens(port);
	ctl = gm_dma_malloc(port, 64);
	if (ctl == NULL)
		FATAL("gm_dma_malloc failed");
	if (pr.server)
		server();
	else
		client();
	gm_dma_free(port, ctl);
	dma_free_port(port);
	close_port(port);
	return finish(pr.server ? "rdma server" : "rdma client");
}
