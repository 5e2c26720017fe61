/*
 * alarms: gm_set_alarm, gm_cancel_alarm, GM_ALARM_EVENT through gm_unknown.
 *
 *   alarms PORT
 *
 * Alarms fire in deadline order, never early, once each, only inside
 * gm_unknown (called for the GM_ALARM_EVENT that gm_receive returns); a
 * cancelled alarm never fires; setting a pending alarm again moves it; an
 * alarm callback may set another alarm; gm_blocking_receive_no_spin's
 * _GM_SLEEP_EVENT sleeps in gm_unknown until the next alarm is due. The
 * absence of the cancelled alarm is shown by a later alarm firing.
 */
#include "common.h"

struct al {
	const char *name;
	gm_alarm_t alarm;
	double set_at, due_us, fired_at;
	int fired, rank;
};

enum { A1, A2, A3, A4, A5, A6, NAL };
static struct al als[NAL] = {{.name = "a1"}, {.name = "a2"}, {.name = "a3"},
			     {.name = "a4"}, {.name = "a5"}, {.name = "a6"}};
static int in_unknown, nfired, wrong_ctx;
static struct gm_port *port;
static int a5_ctx_new;

static void set(int i, double usecs, gm_alarm_callback_t cb, void *ctx)
{
	als[i].set_at = now_us();
	als[i].due_us = usecs;
	gm_set_alarm(port, &als[i].alarm, (gm_u64_t)usecs, cb, ctx);
}

static void alarm_cb(void *ctx)
{
	struct al *a = ctx;
	if (a < als || a >= als + NAL) {
		wrong_ctx++;
		return;
	}
	CHECK(in_unknown, "alarm %s ran outside gm_unknown", a->name);
	a->fired++;
	a->fired_at = now_us();
	a->rank = nfired++;
	/* An alarm callback sets another alarm. */
	if (a == &als[A2])
		set(A6, 10000, alarm_cb, &als[A6]);
}

static void a5_new_cb(void *ctx)
{
	a5_ctx_new = ctx == (void *)&a5_ctx_new;
	alarm_cb(&als[A5]);
}

static void a5_old_cb(void *ctx)
{
	(void)ctx;
	CHECK(0, "a5 fired with its first callback after gm_set_alarm moved it");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: alarms PORT\n");
		return 2;
	}
	port = open_port((unsigned int)atoi(argv[1]), "alarms");
	for (int i = 0; i < NAL; i++)
		gm_initialize_alarm(&als[i].alarm);

	gm_u64_t t0 = gm_ticks(port);
	double start = now_us();
	set(A1, 200000, alarm_cb, &als[A1]);
	set(A2, 5000, alarm_cb, &als[A2]);
	set(A3, 500000, alarm_cb, &als[A3]);
	gm_cancel_alarm(&als[A3].alarm);
	set(A4, 600000, alarm_cb, &als[A4]);
	set(A5, 10000000, a5_old_cb, NULL);
	set(A5, 300000, a5_new_cb, &a5_ctx_new); /* moves the pending a5 */
	/* Cancelling an alarm that is not set is harmless. */
	gm_alarm_t idle;
	gm_initialize_alarm(&idle);
	gm_cancel_alarm(&idle);

	int alarm_events = 0, sleeps = 0;
	double deadline = deadline_after();
	/* Poll until a5 fired, then sleep (no spin) until a4 fires. */
	while (!als[A4].fired) {
		gm_recv_event_t *e = als[A5].fired ? gm_blocking_receive_no_spin(port) : gm_receive(port);
		switch (GM_RECV_EVENT_TYPE(e)) {
		case GM_NO_RECV_EVENT:
			break;
		case GM_ALARM_EVENT:
			alarm_events++;
			in_unknown = 1;
			gm_unknown(port, e);
			in_unknown = 0;
			break;
		case _GM_SLEEP_EVENT:
			sleeps++;
			in_unknown = 1;
			gm_unknown(port, e);
			in_unknown = 0;
			break;
		default:
			in_unknown = 1;
			gm_unknown(port, e);
			in_unknown = 0;
		}
		expire(deadline, "the alarms");
	}
	gm_u64_t t1 = gm_ticks(port);
	double elapsed = now_us() - start;

	CHECK(wrong_ctx == 0, "%d alarm callbacks with a foreign context", wrong_ctx);
	CHECK(alarm_events >= 1, "no GM_ALARM_EVENT");
	CHECK(sleeps >= 1, "gm_blocking_receive_no_spin never returned _GM_SLEEP_EVENT");
	CHECK(als[A3].fired == 0, "the cancelled alarm fired");
	CHECK(a5_ctx_new, "a5 fired without its new context");
	for (int i = 0; i < NAL; i++) {
		if (i == A3)
			continue;
		CHECK(als[i].fired == 1, "alarm %s fired %d times", als[i].name, als[i].fired);
		double waited = als[i].fired_at - als[i].set_at;
		CHECK(!als[i].fired || waited >= als[i].due_us - 1000, "alarm %s fired after %.0f us, set for %.0f us",
		      als[i].name, waited, als[i].due_us);
	}
	CHECK(als[A2].rank < als[A6].rank, "a6 (set by a2's callback) fired before a2");
	CHECK(als[A2].rank < als[A1].rank && als[A1].rank < als[A5].rank && als[A5].rank < als[A4].rank,
	      "order a2 %d, a1 %d, a5 %d, a4 %d", als[A2].rank, als[A1].rank, als[A5].rank, als[A4].rank);
	/* gm_ticks counts GM_TICKS_PER_USEC per microsecond. */
	double ticks_us = (double)(t1 - t0) / GM_TICKS_PER_USEC;
	CHECK(t1 > t0, "gm_ticks did not advance: %llu then %llu", (unsigned long long)t0, (unsigned long long)t1);
	CHECK(ticks_us > elapsed * 0.9 - 1000 && ticks_us < elapsed * 1.1 + 1000,
	      "gm_ticks advanced %.0f us in %.0f us", ticks_us, elapsed);
	printf("%d alarms fired, %d GM_ALARM_EVENTs, %d sleeps, %.0f us\n", nfired, alarm_events, sleeps, elapsed);
	close_port(port);
	return finish("alarms");
}
