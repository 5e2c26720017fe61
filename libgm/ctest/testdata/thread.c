/*
 * thread: a second thread sends while the first sleeps in gm_unknown.
 *
 *   thread server|client PEER-HOST MY-PORT PEER-PORT COUNT
 *
 * The client's main thread loops on gm_blocking_receive_no_spin with the
 * program's own lock held, and drops the lock around gm_unknown when the
 * event is _GM_SLEEP_EVENT (as an MPI device does). A second thread
 * (pthread) waits until the main thread is about to sleep, then takes the
 * lock and sends a message; the server sends it back, which wakes the
 * main thread. COUNT rounds. A watchdog ends the program with a readable
 * message if the two threads deadlock (a library that holds the port's
 * lock while it sleeps would block the second thread's send).
 */
#include "common.h"

#include <pthread.h>
#include <unistd.h>

#define LEN 64

static struct gm_port *port;
static struct peer pr;
static unsigned int count, size;

static pthread_mutex_t lk = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int sleeping;        /* main is (about to be) in gm_unknown, asleep */
static unsigned int replies; /* replies main has received */
static unsigned int sent_while_sleeping, sleeps;
static int done;
static struct completion comp = {0, GM_SUCCESS, 0, GM_SUCCESS};
static const char *volatile stage = "starting";

static void *watchdog(void *arg)
{
	(void)arg;
	for (int i = 0; i < DEADLINE_SEC * 10; i++) {
		usleep(100000);
		if (__atomic_load_n(&done, __ATOMIC_SEQ_CST))
			return NULL;
	}
	fprintf(stderr, "FATAL: no progress after %d s: %s (replies %u, sleeps %u)\n", DEADLINE_SEC, stage, replies,
		sleeps);
	fflush(stderr);
	_exit(3);
}

static void *sender(void *arg)
{
	unsigned char *msgs = arg;
	pthread_mutex_lock(&lk);
	for (unsigned int i = 0; i < count; i++) {
		while (!(sleeping && replies == i))
			pthread_cond_wait(&cv, &lk);
		/* The main thread has dropped the lock to sleep in gm_unknown. */
		sent_while_sleeping++;
		stage = "the second thread is in gm_send_with_callback";
		unsigned char *m = msgs + (i % 2) * LEN;
		m[0] = (unsigned char)i;
		fill(m + 1, LEN - 1, i);
		take_token();
		gm_send_with_callback(port, m, size, LEN, GM_LOW_PRIORITY, pr.node, pr.port, record_cb, &comp);
		stage = "the main thread sleeps in gm_unknown after the second thread's send";
	}
	pthread_mutex_unlock(&lk);
	return NULL;
}

static void server(void)
{
	unsigned char *b = dma_alloc(port, gm_max_length_for_size(size));
	unsigned char *out = dma_alloc(port, count * LEN);
	gm_provide_receive_buffer(port, b, size, GM_LOW_PRIORITY);
	printf("ready\n");
	fflush(stdout);
	/* Echo every message. The client sends message i+1 once it has echo
	   i, maybe before echo i's callback ran here: so the loop takes
	   messages and completions as they come, and every echo has its own
	   slot in out[] (a send's buffer is the library's until its callback,
	   which may come after the client has the echo). */
	unsigned int got = 0;
	double deadline = deadline_after();
	while (got < count || comp.done < (int)count) {
		gm_recv_event_t *e = gm_receive(port);
		int type = GM_RECV_EVENT_TYPE(e);
		if (type == GM_NO_RECV_EVENT) {
			expire(deadline, got < count ? "a message" : "the last echo's completion");
			continue;
		}
		if (!is_recv_type(type)) {
			gm_unknown(port, e);
			continue;
		}
		unsigned char *o = out + got * LEN;
		memcpy(o, event_data(e), LEN);
		gm_provide_receive_buffer(port, b, size, GM_LOW_PRIORITY);
		CHECK(o[0] == (unsigned char)got, "message %u arrived as number %u", o[0], got);
		take_token();
		gm_send_with_callback(port, o, size, LEN, GM_LOW_PRIORITY, pr.node, pr.port, record_cb, &comp);
		got++;
		deadline = deadline_after();
	}
	CHECK(comp.failed == 0, "%d echoes failed: %s", comp.failed, gm_strerror(comp.first_bad));
}

static void client(void)
{
	unsigned char *b = dma_alloc(port, gm_max_length_for_size(size));
	unsigned char *msgs = dma_alloc(port, 2 * LEN);
	gm_provide_receive_buffer(port, b, size, GM_LOW_PRIORITY);
	unsigned int tokens0 = send_tokens;

	pthread_t t;
	if (pthread_create(&t, NULL, sender, msgs) != 0)
		FATAL("pthread_create");
	pthread_mutex_lock(&lk);
	while (replies < count || send_tokens < tokens0) {
		gm_recv_event_t *e = gm_blocking_receive_no_spin(port);
		int type = GM_RECV_EVENT_TYPE(e);
		if (type == _GM_SLEEP_EVENT) {
			sleeps++;
			sleeping = 1;
			pthread_cond_broadcast(&cv);
			pthread_mutex_unlock(&lk);
			gm_unknown(port, e);
			pthread_mutex_lock(&lk);
			sleeping = 0;
			continue;
		}
		if (is_recv_type(type)) {
			const unsigned char *d = event_data(e);
			CHECK(d[0] == (unsigned char)replies, "reply %u arrived as number %u", d[0], replies);
			CHECK(verify(d + 1, LEN - 1, replies) == LEN - 1, "reply %u: payload", replies);
			gm_provide_receive_buffer(port, b, size, GM_LOW_PRIORITY);
			replies++;
			stage = "the main thread waits for the next sleep";
			continue;
		}
		if (type != GM_NO_RECV_EVENT)
			gm_unknown(port, e);
	}
	pthread_mutex_unlock(&lk);
	pthread_join(t, NULL);
	CHECK(sent_while_sleeping == count, "%u of %u sends while the main thread slept", sent_while_sleeping, count);
	CHECK(sleeps >= count, "%u _GM_SLEEP_EVENTs for %u rounds", sleeps, count);
	CHECK(comp.done == (int)count && comp.failed == 0, "%d completions, %d failed (%s)", comp.done, comp.failed,
	      gm_strerror(comp.first_bad));
	printf("%u rounds, %u sleeps\n", count, sleeps);
}

int main(int argc, char **argv)
{
	pr = parse_peer(argc, argv, 1, "COUNT");
	count = (unsigned int)atoi(argv[5]);
	size = gm_min_size_for_length(LEN);
	pthread_t wd;
	if (pthread_create(&wd, NULL, watchdog, NULL) != 0)
		FATAL("pthread_create");
	run_peer(&port, &pr, "thread", server, client);
	__atomic_store_n(&done, 1, __ATOMIC_SEQ_CST);
	pthread_join(wd, NULL);
	return finish(pr.server ? "thread server" : "thread client");
}
