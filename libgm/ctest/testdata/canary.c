/*
 * canary: deliberate memory errors, to show that the AddressSanitizer
 * variant of the suite sees them (so that its silence means something).
 *
 *   canary heap      writes one byte past a malloc'd block (in C)
 *   canary leak      loses a malloc'd block (LeakSanitizer at exit)
 *   canary short P   provides a 100-byte malloc'd receive buffer as size
 *                    10 (1016 bytes) on port P and sends itself 1000
 *                    bytes: libgm's Go code writes past the buffer
 *
 * Each mode is a bug of this program; run only under ASan.
 */
#include "common.h"

static void *volatile keep;

/* leak loses a 64-byte block. It runs in a frame of its own and scrub
   then overwrites that stack, so that no stale copy of the pointer is left
   where LeakSanitizer looks (it scans stacks and registers
   conservatively, and a leftover copy would hide the leak). */
static __attribute__((noinline)) void leak(void)
{
	keep = malloc(64);
	keep = NULL;
}

static __attribute__((noinline)) void scrub(void)
{
	volatile unsigned char stack[4096];

	for (size_t i = 0; i < sizeof stack; i++)
		stack[i] = 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		FATAL("usage: canary heap|leak|short PORT");
	CHECK(gm_init() == GM_SUCCESS, "gm_init");
	if (strcmp(argv[1], "heap") == 0) {
		volatile size_t eight = 8; /* hidden from the compiler's bound checks */
		size_t n = eight;
		unsigned char *b = malloc(8);
		keep = b;
		b[n] = 1;
		free(b);
	} else if (strcmp(argv[1], "leak") == 0) {
		leak();
		scrub();
	} else if (strcmp(argv[1], "short") == 0 && argc > 2) {
		struct gm_port *p = open_port((unsigned int)atoi(argv[2]), "canary");
		unsigned int self = 0;
		CHECK(gm_get_node_id(p, &self) == GM_SUCCESS, "gm_get_node_id");
		send_tokens = gm_num_send_tokens(p);
		unsigned char *small = malloc(100);
		CHECK(gm_register_memory(p, small, 100) == GM_SUCCESS, "gm_register_memory");
		gm_provide_receive_buffer(p, small, 10, GM_LOW_PRIORITY);
		unsigned char *m = dma_alloc(p, 1000);
		memset(m, 7, 1000);
		struct completion c = {0, GM_SUCCESS, 0, GM_SUCCESS};
		take_token();
		gm_send_with_callback(p, m, 10, 1000, GM_LOW_PRIORITY, self, gm_get_port_id(p), record_cb, &c);
		double deadline = deadline_after();
		int got = 0;
		while (!got || !c.done) {
			gm_recv_event_t *e = gm_receive(p);
			int type = GM_RECV_EVENT_TYPE(e);
			if (is_recv_type(type))
				got = 1;
			else if (type != GM_NO_RECV_EVENT)
				gm_unknown(p, e);
			expire(deadline, "the message");
		}
		gm_deregister_memory(p, small, 100);
		free(small);
		dma_free_port(p);
		close_port(p);
	} else {
		FATAL("unknown mode %s", argv[1]);
	}
	gm_finalize();
	return finish("canary (no error seen)");
}
