/*
 * perror: gm_perror's exact output and gm_strerror's texts.
 *
 *   perror
 *
 * gm_perror(msg, status) writes "msg: <gm_strerror(status)>\n" on standard
 * error (checked by capturing file descriptor 2 in a temporary file) for
 * several statuses; every status code 0..GM_NUM_STATUS_CODES-1 has a text
 * of its own, non-empty and distinct from the others; the text of an
 * unknown code is not NULL. Needs no port.
 */
#include "common.h"

#include <unistd.h>

/* capture runs gm_perror(msg, st) with fd 2 redirected to a file and
   returns what it wrote (static storage). */
static const char *capture(const char *msg, gm_status_t st)
{
	static char out[1024];
	FILE *f = tmpfile();
	if (f == NULL)
		FATAL("tmpfile");
	fflush(stderr);
	int saved = dup(2);
	if (saved < 0 || dup2(fileno(f), 2) < 0)
		FATAL("dup2");
	gm_perror(msg, st);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(f);
	size_t n = fread(out, 1, sizeof out - 1, f);
	out[n] = 0;
	fclose(f);
	return out;
}

int main(void)
{
	static const gm_status_t sts[] = {GM_SUCCESS, GM_FAILURE, GM_BUSY, GM_SEND_TIMED_OUT,
					  GM_SEND_TARGET_PORT_CLOSED, GM_SEND_DROPPED, GM_FIRMWARE_ABORT};
	for (size_t i = 0; i < sizeof sts / sizeof sts[0]; i++) {
		char want[1024];
		const char *text = gm_strerror(sts[i]);
		if (text == NULL) {
			CHECK(text != NULL, "gm_strerror(%d) is NULL", sts[i]);
			continue;
		}
		snprintf(want, sizeof want, "msg: %s\n", text);
		const char *got = capture("msg", sts[i]);
		CHECK(strcmp(got, want) == 0, "gm_perror(\"msg\", %d) wrote \"%s\", want \"%s\"", sts[i], got, want);
	}
	/* A longer message, with spaces. */
	char want[1024];
	snprintf(want, sizeof want, "gm_open of port 2: %s\n", gm_strerror(GM_BUSY));
	const char *got = capture("gm_open of port 2", GM_BUSY);
	CHECK(strcmp(got, want) == 0, "wrote \"%s\", want \"%s\"", got, want);

	for (int a = 0; a < GM_NUM_STATUS_CODES; a++) {
		const char *ta = gm_strerror((gm_status_t)a);
		CHECK(ta != NULL && ta[0] != 0, "gm_strerror(%d) is empty", a);
		if (ta == NULL)
			continue;
		for (int b = 0; b < a; b++) {
			const char *tb = gm_strerror((gm_status_t)b);
			CHECK(tb == NULL || strcmp(ta, tb) != 0, "gm_strerror(%d) and gm_strerror(%d) are both \"%s\"", a, b,
			      ta);
		}
	}
	CHECK(gm_strerror((gm_status_t)1000) != NULL, "gm_strerror(1000) is NULL");
	printf("gm_perror(\"msg\", GM_SEND_TIMED_OUT) writes: msg: %s\n", gm_strerror(GM_SEND_TIMED_OUT));
	return finish("perror");
}
