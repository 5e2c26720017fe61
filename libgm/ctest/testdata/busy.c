/*
 * busy: gm_open of a port that is open gives GM_BUSY.
 *
 *   busy HELD-PORT
 *
 * HELD-PORT is open in another process. Checked: gm_open of it gives
 * GM_BUSY; a GM program's loop over the ports (2, 4, 5, ...) finds the
 * first free one; opening that one again in this process gives GM_BUSY;
 * after gm_close it opens again; reserved and out-of-range port numbers
 * are refused.
 */
#include "common.h"

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: busy HELD-PORT\n");
		return 2;
	}
	unsigned int held = (unsigned int)atoi(argv[1]);
	CHECK(gm_init() == GM_SUCCESS, "gm_init");
	struct gm_port *p = NULL;
	gm_status_t st = gm_open(&p, 0, held, "busy", GM_API_VERSION);
	CHECK(st == GM_BUSY, "gm_open of port %u, open in another process: %d (%s), want GM_BUSY", held, st,
	      gm_strerror(st));
	if (st == GM_SUCCESS)
		gm_close(p);

	/* The usual loop: the first port that opens (not 0, 1 or 3, GM's
	   daemon, mapper and Ethernet ports). */
	struct gm_port *q = NULL;
	unsigned int got = 0, want = 2 == held ? 4 : 2;
	for (unsigned int i = 2; i < GM_NUM_PORTS; i++) {
		if (i == 3)
			continue;
		st = gm_open(&q, 0, i, "busy", GM_API_VERSION);
		if (st == GM_SUCCESS) {
			got = i;
			break;
		}
		CHECK(st == GM_BUSY, "gm_open of port %u: %s, want GM_SUCCESS or GM_BUSY", i, gm_strerror(st));
	}
	CHECK(got == want, "the loop opened port %u, want %u", got, want);
	CHECK(q == NULL || gm_get_port_id(q) == got, "gm_get_port_id: %u, want %u", gm_get_port_id(q), got);
	CHECK(q == NULL || gm_num_ports(q) == GM_NUM_PORTS, "gm_num_ports: %u", gm_num_ports(q));

	/* Open in this process: busy too. */
	struct gm_port *r = NULL;
	st = gm_open(&r, 0, got, "busy-again", GM_API_VERSION);
	CHECK(st == GM_BUSY, "second gm_open of port %u in one process: %s, want GM_BUSY", got, gm_strerror(st));
	if (st == GM_SUCCESS)
		gm_close(r);
	/* Closed, it opens again. */
	if (q)
		gm_close(q);
	q = NULL;
	st = gm_open(&q, 0, got, "busy-reopen", GM_API_VERSION);
	CHECK(st == GM_SUCCESS, "gm_open of port %u after gm_close: %s", got, gm_strerror(st));
	if (st == GM_SUCCESS)
		gm_close(q);

	/* Not ports a program may open. */
	unsigned int bad[] = {0, 1, 3, GM_NUM_PORTS, 1000};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		r = NULL;
		st = gm_open(&r, 0, bad[i], "busy-bad", GM_API_VERSION);
		CHECK(st != GM_SUCCESS, "gm_open of port %u succeeded", bad[i]);
		if (st == GM_SUCCESS)
			gm_close(r);
	}
	gm_finalize();
	return finish("busy");
}
