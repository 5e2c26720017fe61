/*
 * util_test.c: checks GM's portable helpers (gm.h, "Portable helpers").
 *
 * Prints one line per failed check and a summary; exits 0 only if every
 * check passed. Needs no port and no network:
 *
 *   cc -std=c11 -I libgm/include libgm/util.c util_test.c        (standalone)
 *   cc util_test.c $(pkg-config --cflags --libs gm)              (the library)
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gm.h"

static unsigned long checks, failures;

#define CHECK(cond, ...)                                               \
	do {                                                           \
		checks++;                                              \
		if (!(cond)) {                                         \
			failures++;                                    \
			fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__,  \
				__LINE__, #cond);                      \
			fprintf(stderr, __VA_ARGS__);                  \
			fputc('\n', stderr);                           \
		}                                                      \
	} while (0)

/* Runs fn with stderr sent to a temporary file; returns what it wrote
   (malloc'd, NUL-terminated) or NULL. */
static char *capture_stderr(void (*fn)(void *), void *arg)
{
	FILE *tmp = tmpfile();
	int saved;
	long n;
	char *out;

	if (tmp == NULL)
		return NULL;
	fflush(stderr);
	saved = dup(2);
	if (saved < 0 || dup2(fileno(tmp), 2) < 0) {
		fclose(tmp);
		return NULL;
	}
	fn(arg);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	n = (long)lseek(fileno(tmp), 0, SEEK_END); /* written through fd 2 */
	if (n < 0 || (out = malloc((size_t)n + 1)) == NULL) {
		fclose(tmp);
		return NULL;
	}
	lseek(fileno(tmp), 0, SEEK_SET);
	n = (long)read(fileno(tmp), out, (size_t)n);
	out[n < 0 ? 0 : n] = 0;
	fclose(tmp);
	return out;
}

/* ---- Memory and strings ----------------------------------------------- */

static void test_memory(void)
{
	char a[32], b[32];
	unsigned char *z;
	char *d;

	/* bcopy: plain, and overlapping in both directions (memmove's contract). */
	memcpy(a, "0123456789", 11);
	gm_bcopy(a, b, 11);
	CHECK(memcmp(b, "0123456789", 11) == 0, "bcopy plain: %s", b);
	gm_bcopy(a, a + 2, 8);
	CHECK(memcmp(a, "0101234567", 10) == 0, "bcopy overlap forward: %.10s", a);
	memcpy(a, "0123456789", 11);
	gm_bcopy(a + 2, a, 8);
	CHECK(memcmp(a, "2345678989", 10) == 0, "bcopy overlap backward: %.10s", a);
	gm_bcopy(NULL, NULL, 0);

	memset(a, 'x', sizeof a);
	gm_bzero(a + 4, 8);
	CHECK(a[3] == 'x' && a[4] == 0 && a[11] == 0 && a[12] == 'x', "bzero range");
	CHECK(gm_memset(a, 'q', 5) == a, "memset returns its pointer");
	CHECK(memcmp(a, "qqqqq", 5) == 0 && a[5] == 0, "memset fills");
	gm_bzero(NULL, 0);

	CHECK(gm_bcmp("abc", "abc", 3) == 0, "bcmp equal");
	CHECK(gm_bcmp("abc", "abd", 3) != 0, "bcmp differ");
	CHECK(gm_bcmp("abc", "xyz", 0) == 0, "bcmp length 0");
	CHECK(gm_memcmp("abc", "abd", 3) < 0, "memcmp less");
	CHECK(gm_memcmp("abd", "abc", 3) > 0, "memcmp greater");
	CHECK(gm_memcmp("\x80", "\x01", 1) > 0, "memcmp compares unsigned bytes");
	CHECK(gm_memcmp("abc", "abc", 3) == 0, "memcmp equal");

	CHECK(gm_strlen("") == 0, "strlen empty");
	CHECK(gm_strlen("hello") == 5, "strlen");

	/* strncpy: pads with NULs, leaves the result unterminated when full,
	   writes nothing for a length of 0 or less. */
	memset(a, 'x', sizeof a);
	CHECK(gm_strncpy(a, "ab", 6) == a, "strncpy returns to");
	CHECK(memcmp(a, "ab\0\0\0\0x", 7) == 0, "strncpy pads with NULs");
	memset(a, 'x', sizeof a);
	gm_strncpy(a, "abcdef", 3);
	CHECK(memcmp(a, "abcx", 4) == 0, "strncpy does not terminate a full copy");
	memset(a, 'x', sizeof a);
	gm_strncpy(a, "abc", 4);
	CHECK(memcmp(a, "abc\0x", 5) == 0, "strncpy exact fit");
	gm_strncpy(a, "zzz", 0);
	gm_strncpy(a, "zzz", -5);
	CHECK(a[0] == 'a', "strncpy length <= 0 writes nothing");

	CHECK(gm_strcmp("abc", "abc") == 0, "strcmp equal");
	CHECK(gm_strcmp("abc", "abd") < 0, "strcmp less");
	CHECK(gm_strcmp("abcd", "abc") > 0, "strcmp longer");
	CHECK(gm_strncmp("abcX", "abcY", 3) == 0, "strncmp prefix");
	CHECK(gm_strncmp("abcX", "abcY", 4) < 0, "strncmp differ");
	CHECK(gm_strncmp("a", "b", 0) == 0, "strncmp length 0");
	CHECK(gm_strncmp("a", "b", -1) == 0, "strncmp negative length");

	d = gm_strdup("duplicate me");
	CHECK(d != NULL && strcmp(d, "duplicate me") == 0, "strdup content");
	CHECK(d == NULL || d != (char *)"duplicate me", "strdup copies");
	gm_free(d);
	d = gm_strdup("");
	CHECK(d != NULL && d[0] == 0, "strdup empty");
	gm_free(d);

	d = gm_malloc(100);
	CHECK(d != NULL, "malloc");
	if (d)
		memset(d, 1, 100);
	gm_free(d);
	d = gm_malloc(0);
	CHECK(d != NULL, "malloc(0) is not NULL");
	gm_free(d);
	z = gm_calloc(50, 8);
	CHECK(z != NULL, "calloc");
	if (z) {
		int zero = 1;
		for (int i = 0; i < 400; i++)
			zero &= z[i] == 0;
		CHECK(zero, "calloc zeroes");
	}
	gm_free(z);
	z = gm_calloc(0, 8);
	CHECK(z != NULL, "calloc(0, n) is not NULL");
	gm_free(z);
	CHECK(gm_calloc((gm_size_t)-1, 16) == NULL, "calloc overflow gives NULL");
	CHECK(gm_calloc(16, (gm_size_t)-1 / 8) == NULL, "calloc overflow gives NULL");
	gm_free(NULL);

	/* Pages: aligned, zeroed, usable, distinct. */
	{
		unsigned char *pg[8];
		int ok_align = 1, ok_zero = 1, ok_distinct = 1;

		for (int i = 0; i < 8; i++) {
			pg[i] = gm_page_alloc();
			CHECK(pg[i] != NULL, "page_alloc %d", i);
			if (pg[i] == NULL)
				continue;
			ok_align &= (uintptr_t)pg[i] % GM_PAGE_LEN == 0;
			for (int k = 0; k < GM_PAGE_LEN; k++)
				ok_zero &= pg[i][k] == 0;
			memset(pg[i], i + 1, GM_PAGE_LEN);
		}
		for (int i = 0; i < 8; i++)
			for (int j = 0; j < i; j++)
				ok_distinct &= pg[i] != pg[j];
		for (int i = 0; i < 8; i++)
			if (pg[i])
				ok_zero &= pg[i][0] == i + 1 && pg[i][GM_PAGE_LEN - 1] == i + 1;
		CHECK(ok_align, "pages are GM_PAGE_LEN-aligned");
		CHECK(ok_zero, "pages are zeroed and keep their contents");
		CHECK(ok_distinct, "pages are distinct");
		for (int i = 0; i < 8; i++)
			gm_page_free(pg[i]);
		gm_page_free(NULL);
	}
}

/* ---- Output ------------------------------------------------------------ */

static void hex_dump_40(void *arg)
{
	gm_hex_dump(arg, 40);
	gm_hex_dump(arg, 0);
}

static void eprintf_hello(void *arg)
{
	*(int *)arg = gm_eprintf("hello %s %d\n", "stderr", 7);
}

static void test_output(void)
{
	char buf[64];
	unsigned char data[40];
	char *out;
	int n;

	n = gm_printf("util_test: gm_printf %s %d %c\n", "prints", 42, '!');
	CHECK(n == snprintf(buf, sizeof buf, "util_test: gm_printf %s %d %c\n", "prints", 42, '!'),
	      "printf returns the count: %d", n);
	CHECK(gm_printf("%s", "") == 0, "printf of nothing returns 0");
	fflush(stdout);

	n = -1;
	out = capture_stderr(eprintf_hello, &n);
	CHECK(n == 15, "eprintf returns the count: %d", n);
	CHECK(out && strcmp(out, "hello stderr 7\n") == 0, "eprintf writes to stderr: %s",
	      out ? out : "(capture failed)");
	free(out);

	for (int i = 0; i < 40; i++)
		data[i] = (unsigned char)(i < 26 ? 'A' + i : i);
	out = capture_stderr(hex_dump_40, data);
	CHECK(out != NULL, "hex_dump capture");
	if (out) {
		CHECK(strstr(out, "41 42 43 44") != NULL, "hex_dump shows bytes in hex:\n%s", out);
		CHECK(strstr(out, "|ABCDEFGHIJKLMNOP|") != NULL, "hex_dump shows ASCII:\n%s", out);
		CHECK(strstr(out, "1a 1b 1c") != NULL, "hex_dump shows the last line:\n%s", out);
		CHECK(strstr(out, "40 bytes") != NULL && strstr(out, "0 bytes") != NULL,
		      "hex_dump header:\n%s", out);
	}
	free(out);
}

/* ---- CRC, random, misc ------------------------------------------------- */

struct rand_thread {
	int bad;
};

static void *rand_worker(void *arg)
{
	struct rand_thread *t = arg;

	for (int i = 0; i < 20000; i++)
		if (gm_rand() < 0)
			t->bad++;
	return NULL;
}

static void test_crc_rand_misc(void)
{
	char s[] = "123456789";
	static char big[100000];
	unsigned long whole, again;

	/* The IEEE CRC-32 check values. */
	CHECK(gm_crc(s, 9) == 0xCBF43926ul, "crc(123456789) = %#lx", gm_crc(s, 9));
	CHECK(gm_crc_str("123456789") == 0xCBF43926ul, "crc_str(123456789)");
	CHECK(gm_crc(NULL, 0) == 0, "crc of nothing");
	CHECK(gm_crc_str("") == 0, "crc_str of empty");
	CHECK(gm_crc_str("a") == 0xE8B7BE43ul, "crc(a) = %#lx", gm_crc_str("a"));
	CHECK(gm_crc_str("The quick brown fox jumps over the lazy dog") == 0x414FA339ul,
	      "crc(fox) = %#lx", gm_crc_str("The quick brown fox jumps over the lazy dog"));
	{
		unsigned char zeros[32] = { 0 };
		CHECK(gm_crc(zeros, 32) == 0x190A55ADul, "crc(32 zeros) = %#lx", gm_crc(zeros, 32));
	}
	for (size_t i = 0; i < sizeof big; i++)
		big[i] = (char)(i * 7 + 3);
	whole = gm_crc(big, sizeof big);
	again = gm_crc(big, sizeof big);
	CHECK(whole == again && whole == 0xF730CAA8ul, "crc of 100000 bytes = %#lx", whole);
	big[5000] ^= 1;
	CHECK(gm_crc(big, sizeof big) != whole, "crc sees a one-bit change");

	/* rand: the same seed, the same sequence; values are non-negative. */
	{
		int first[100], ok_same = 1, ok_range = 1, differ = 0, ones = 0;

		gm_srand(42);
		for (int i = 0; i < 100; i++)
			first[i] = gm_rand();
		gm_srand(42);
		for (int i = 0; i < 100; i++)
			ok_same &= gm_rand() == first[i];
		CHECK(ok_same, "srand(42) repeats the sequence");
		gm_srand(43);
		for (int i = 0; i < 100; i++)
			differ += gm_rand() != first[i];
		CHECK(differ > 90, "another seed gives another sequence (%d differ)", differ);
		gm_srand(0);
		for (int i = 0; i < 10000; i++) {
			int r = gm_rand();
			ok_range &= r >= 0;
			ones += r & 1;
		}
		CHECK(ok_range, "rand is non-negative");
		CHECK(ones > 4700 && ones < 5300, "rand's low bit is balanced: %d/10000", ones);
		{
			int distinct = 1, prev = gm_rand();
			for (int i = 0; i < 50; i++) {
				int r = gm_rand();
				distinct &= r != prev;
				prev = r;
			}
			CHECK(distinct, "seed 0 does not stick");
		}
	}
	/* rand from several threads at once. */
	{
		pthread_t th[4];
		struct rand_thread t[4] = { { 0 } };
		int started = 0;

		for (int i = 0; i < 4; i++)
			if (pthread_create(&th[i], NULL, rand_worker, &t[i]) == 0)
				started++;
			else
				break;
		CHECK(started == 4, "pthread_create");
		for (int i = 0; i < started; i++) {
			pthread_join(th[i], NULL);
			CHECK(t[i].bad == 0, "rand in thread %d: %d negative values", i, t[i].bad);
		}
	}

	/* log2_roundup is ceil(log2(n)), as GM's. */
	CHECK(gm_log2_roundup(0) == 0, "log2_roundup(0) = %lu", gm_log2_roundup(0));
	CHECK(gm_log2_roundup(1) == 0, "log2_roundup(1) = %lu", gm_log2_roundup(1));
	CHECK(gm_log2_roundup(2) == 1, "log2_roundup(2) = %lu", gm_log2_roundup(2));
	CHECK(gm_log2_roundup(3) == 2, "log2_roundup(3) = %lu", gm_log2_roundup(3));
	CHECK(gm_log2_roundup(4) == 2, "log2_roundup(4) = %lu", gm_log2_roundup(4));
	CHECK(gm_log2_roundup(5) == 3, "log2_roundup(5) = %lu", gm_log2_roundup(5));
	CHECK(gm_log2_roundup(4096) == 12, "log2_roundup(4096)");
	CHECK(gm_log2_roundup(4097) == 13, "log2_roundup(4097)");
	CHECK(gm_log2_roundup(0x80000000ul) == 31, "log2_roundup(2^31)");
	CHECK(gm_log2_roundup(0x80000001ul) == 32, "log2_roundup(2^31+1)");
	CHECK(gm_log2_roundup(ULONG_MAX) == sizeof(unsigned long) * CHAR_BIT,
	      "log2_roundup(ULONG_MAX) = %lu", gm_log2_roundup(ULONG_MAX));
	{
		int ok = 1;
		for (unsigned long n = 2; n < 70000; n++) {
			unsigned long r = gm_log2_roundup(n);
			ok &= (1ul << r) >= n && (1ul << (r - 1)) < n;
		}
		CHECK(ok, "2^(r-1) < n <= 2^r for n in [2, 70000)");
	}

	CHECK(gm_getpid() == (gm_pid_t)getpid(), "getpid");

	CHECK(gm_sleep(0) == 0, "sleep(0)");
	{
		struct timespec a, b;
		double dt;

		clock_gettime(CLOCK_MONOTONIC, &a);
		CHECK(gm_sleep(1) == 0, "sleep(1) returns 0");
		clock_gettime(CLOCK_MONOTONIC, &b);
		dt = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
		CHECK(dt >= 0.99 && dt < 5, "sleep(1) slept %.3f s", dt);
	}
}

/* ---- Hash tables -------------------------------------------------------- */

#define KEYP(i) ((void *)(uintptr_t)((uintptr_t)(i) * 4096u))
#define DATP(i) ((void *)(uintptr_t)((uintptr_t)(i) + 1u))

/* Pointer keys and pointer data, past 10,000 entries. */
static void test_hash_pointers(void)
{
	struct gm_hash *h = gm_create_hash(gm_hash_compare_ptrs, gm_hash_hash_ptr, 0, 0, 0, 0);
	const int n = 20000;
	int ok;

	CHECK(h != NULL, "create pointer hash");
	if (h == NULL)
		return;
	CHECK(gm_hash_find(h, KEYP(1)) == NULL, "find in an empty table");
	CHECK(gm_hash_remove(h, KEYP(1)) == NULL, "remove from an empty table");

	ok = 1;
	for (int i = 0; i < n; i++)
		ok &= gm_hash_insert(h, KEYP(i), DATP(i)) == GM_SUCCESS;
	CHECK(ok, "insert %d pointer keys", n);
	ok = 1;
	for (int i = 0; i < n; i++)
		ok &= gm_hash_find(h, KEYP(i)) == DATP(i);
	CHECK(ok, "find all %d", n);
	ok = 1;
	for (int i = n; i < n + 1000; i++)
		ok &= gm_hash_find(h, KEYP(i)) == NULL;
	CHECK(ok, "absent keys are not found");
	CHECK(gm_hash_find(h, KEYP(0)) == DATP(0), "the NULL pointer is a valid key");

	/* One entry per key. */
	CHECK(gm_hash_insert(h, KEYP(7), DATP(999)) == GM_FAILURE, "a present key is refused");
	CHECK(gm_hash_find(h, KEYP(7)) == DATP(7), "a refused insert changes nothing");

	/* Remove the odd keys. */
	ok = 1;
	for (int i = 1; i < n; i += 2)
		ok &= gm_hash_remove(h, KEYP(i)) == DATP(i);
	CHECK(ok, "remove returns the datum");
	ok = 1;
	for (int i = 0; i < n; i++)
		ok &= gm_hash_find(h, KEYP(i)) == (i % 2 ? NULL : DATP(i));
	CHECK(ok, "removed keys are gone, the others stay");
	CHECK(gm_hash_remove(h, KEYP(1)) == NULL, "removing twice gives NULL");

	/* Reinsert with other data. */
	ok = 1;
	for (int i = 1; i < n; i += 2)
		ok &= gm_hash_insert(h, KEYP(i), DATP(i + 5)) == GM_SUCCESS;
	CHECK(ok, "reinsert removed keys");
	CHECK(gm_hash_find(h, KEYP(3)) == DATP(8), "reinserted datum");

	/* Rekey. */
	gm_hash_rekey(h, KEYP(4), KEYP(n + 4));
	CHECK(gm_hash_find(h, KEYP(4)) == NULL, "rekey: the old key is gone");
	CHECK(gm_hash_find(h, KEYP(n + 4)) == DATP(4), "rekey: the new key has the datum");
	gm_hash_rekey(h, KEYP(6), KEYP(8));
	CHECK(gm_hash_find(h, KEYP(6)) == DATP(6) && gm_hash_find(h, KEYP(8)) == DATP(8),
	      "rekey onto a present key does nothing");
	gm_hash_rekey(h, KEYP(n + 100), KEYP(n + 101));
	CHECK(gm_hash_find(h, KEYP(n + 101)) == NULL, "rekey of an absent key does nothing");
	gm_hash_rekey(h, KEYP(10), KEYP(10));
	CHECK(gm_hash_find(h, KEYP(10)) == DATP(10), "rekey onto itself");

	/* A datum may be NULL. */
	CHECK(gm_hash_insert(h, KEYP(n + 200), NULL) == GM_SUCCESS, "insert a NULL datum");
	CHECK(gm_hash_find(h, KEYP(n + 200)) == NULL, "find of a NULL datum");

	gm_destroy_hash(h);
	gm_destroy_hash(NULL);
}

struct big {
	int id;
	double x;
	char name[40];
	long fill[8];
};

/* Copied int keys and copied struct data, as in GM's manual. */
#define KEYI(i) ((i) * 3 - 5000)
static void test_hash_copies(void)
{
	struct gm_hash *h = gm_create_hash(gm_hash_compare_ints, gm_hash_hash_int, sizeof(int),
					   sizeof(struct big), 100, 0);
	const int n = 12000;
	int ok, key;
	struct big v, *p, *q;

	CHECK(h != NULL, "create copying hash");
	if (h == NULL)
		return;
	/* The preallocated 100, then past 10,000 through growth. The key and the
	   datum live on the stack and change: the table holds copies. */
	ok = 1;
	for (int i = 0; i < n; i++) {
		key = KEYI(i);
		memset(&v, 0, sizeof v);
		v.id = i;
		v.x = i * 0.5;
		snprintf(v.name, sizeof v.name, "entry %d", i);
		v.fill[7] = -i;
		ok &= gm_hash_insert(h, &key, &v) == GM_SUCCESS;
		key = 99999999;
		memset(&v, 0xee, sizeof v);
	}
	CHECK(ok, "insert %d copied entries", n);
	ok = 1;
	for (int i = 0; i < n; i++) {
		char name[40];

		key = KEYI(i);
		p = gm_hash_find(h, &key);
		snprintf(name, sizeof name, "entry %d", i);
		ok &= p != NULL && p->id == i && p->x == i * 0.5 && strcmp(p->name, name) == 0 &&
		      p->fill[7] == -i && p != &v;
		ok &= p == NULL || (uintptr_t)p % _Alignof(struct big) == 0;
	}
	CHECK(ok, "find returns intact, aligned copies");
	key = 99999999;
	CHECK(gm_hash_find(h, &key) == NULL, "absent copied key");

	/* The copy can be updated in place (the GM driver's reference counts). */
	key = KEYI(1667); /* 1 */
	p = gm_hash_find(h, &key);
	CHECK(p && p->id == 1667, "find key 1");
	if (p)
		p->fill[0] = 12345;
	q = gm_hash_find(h, &key);
	CHECK(q == p && q && q->fill[0] == 12345, "an update through find is kept");

	/* A present key is refused. */
	v.id = -1;
	CHECK(gm_hash_insert(h, &key, &v) == GM_FAILURE, "copied key already present");
	p = gm_hash_find(h, &key);
	CHECK(p && p->id == 1667, "the refused insert changed nothing");

	/* Remove hands back the table's copy, readable until the next call. */
	key = KEYI(3);
	p = gm_hash_remove(h, &key);
	CHECK(p != NULL && p->id == 3 && strcmp(p->name, "entry 3") == 0,
	      "remove returns the copied datum");
	CHECK(gm_hash_find(h, &key) == NULL, "removed copied key is gone");
	CHECK(p != NULL && p->id == 3, "the removed datum survives a find");
	key = KEYI(4);
	p = gm_hash_remove(h, &key);
	CHECK(p != NULL && p->id == 4, "second remove");

	/* Rekey copies the new key. */
	key = KEYI(5);
	{
		int nk = 777777;
		gm_hash_rekey(h, &key, &nk);
		nk = KEYI(5);
		CHECK(gm_hash_find(h, &key) == NULL, "copied rekey: old key gone");
		nk = 777777;
		p = gm_hash_find(h, &nk);
		CHECK(p != NULL && p->id == 5, "copied rekey: new key found");
	}

	/* A NULL datum makes a zeroed copy. */
	key = 424242;
	CHECK(gm_hash_insert(h, &key, NULL) == GM_SUCCESS, "insert a NULL datum into a copying table");
	p = gm_hash_find(h, &key);
	CHECK(p != NULL && p->id == 0 && p->fill[7] == 0, "a NULL datum is copied as zeros");
	CHECK(gm_hash_insert(h, NULL, &v) == GM_INVALID_PARAMETER, "a NULL copied key is refused");

	/* Drain everything, then refill: entries are reused. */
	ok = 1;
	for (int i = 0; i < n; i++) {
		key = KEYI(i);
		if (i == 3 || i == 4 || i == 5)
			continue;
		p = gm_hash_remove(h, &key);
		ok &= p != NULL && p->id == i;
	}
	CHECK(ok, "remove all");
	ok = 1;
	for (int i = 0; i < n; i++) {
		key = i;
		v.id = i;
		ok &= gm_hash_insert(h, &key, &v) == GM_SUCCESS;
	}
	CHECK(ok, "refill");
	key = n - 1;
	p = gm_hash_find(h, &key);
	CHECK(p && p->id == n - 1, "refilled entry");
	/* Destroy with a removed datum outstanding and entries in it. */
	key = 5;
	gm_hash_remove(h, &key);
	gm_destroy_hash(h);
}

/* String keys in the caller's memory, pointer data. */
static void test_hash_strings(void)
{
	struct gm_hash *h = gm_create_hash(gm_hash_compare_strings, gm_hash_hash_string, 0, 0, 0, 0);
	static char names[15000][16];
	char probe[16];
	int ok;

	CHECK(h != NULL, "create string hash");
	if (h == NULL)
		return;
	ok = 1;
	for (int i = 0; i < 15000; i++) {
		snprintf(names[i], sizeof names[i], "host-%05d", i);
		ok &= gm_hash_insert(h, names[i], &names[i][0]) == GM_SUCCESS;
	}
	CHECK(ok, "insert 15000 string keys");
	ok = 1;
	for (int i = 0; i < 15000; i++) {
		snprintf(probe, sizeof probe, "host-%05d", i); /* equal, not the same memory */
		ok &= gm_hash_find(h, probe) == names[i];
	}
	CHECK(ok, "find by equal strings");
	CHECK(gm_hash_find(h, "host-15000") == NULL, "absent string");
	CHECK(gm_hash_find(h, "") == NULL, "empty string absent");
	CHECK(gm_hash_insert(h, "host-00042", NULL) == GM_FAILURE, "equal string refused");
	CHECK(gm_hash_remove(h, "host-00042") == names[42], "remove by equal string");
	CHECK(gm_hash_insert(h, "", names[0]) == GM_SUCCESS, "empty string key");
	CHECK(gm_hash_find(h, "") == names[0], "find empty string key");
	gm_hash_rekey(h, "host-00043", "renamed");
	CHECK(gm_hash_find(h, "renamed") == names[43] && gm_hash_find(h, "host-00043") == NULL,
	      "rekey strings");
	gm_destroy_hash(h);

	/* Copied string keys: key_len bytes of a fixed buffer. */
	h = gm_create_hash(gm_hash_compare_strings, gm_hash_hash_string, 16, 0, 10, 0);
	CHECK(h != NULL, "create copied-string hash");
	if (h == NULL)
		return;
	ok = 1;
	for (int i = 0; i < 11000; i++) {
		char k[16] = { 0 };
		snprintf(k, sizeof k, "k%d", i);
		ok &= gm_hash_insert(h, k, DATP(i)) == GM_SUCCESS;
	}
	CHECK(ok, "insert 11000 copied string keys");
	ok = 1;
	for (int i = 0; i < 11000; i++) {
		char k[16] = { 0 };
		snprintf(k, sizeof k, "k%d", i);
		ok &= gm_hash_find(h, k) == DATP(i);
	}
	CHECK(ok, "find copied string keys");
	gm_destroy_hash(h);
}

/* Long keys copied, int data copied: the GM driver's page reference counts. */
static void test_hash_longs(void)
{
	struct gm_hash *h = gm_create_hash(gm_hash_compare_longs, gm_hash_hash_long,
					   sizeof(unsigned long), sizeof(int), 0, 0);
	unsigned long pfn;
	int counter, *cp, ok = 1;

	CHECK(h != NULL, "create long hash");
	if (h == NULL)
		return;
	for (long i = 0; i < 30000; i++) {
		pfn = (unsigned long)(i * 1000003L) ^ 0x5a5a5a5aul;
		cp = gm_hash_find(h, &pfn);
		if (cp) {
			cp[0]++;
		} else {
			counter = 1;
			ok &= gm_hash_insert(h, &pfn, &counter) == GM_SUCCESS;
		}
	}
	CHECK(ok, "insert 30000 long keys");
	pfn = (unsigned long)(5 * 1000003L) ^ 0x5a5a5a5aul;
	cp = gm_hash_find(h, &pfn);
	CHECK(cp && *cp == 1, "counter 1");
	if (cp)
		cp[0]++;
	cp = gm_hash_remove(h, &pfn);
	CHECK(cp && *cp == 2, "removed counter reads 2");
	{
		long neg = -5, neg2 = -5, pos = 5;
		CHECK(gm_hash_compare_longs(&neg, &neg2) == 0, "compare_longs equal");
		CHECK(gm_hash_compare_longs(&neg, &pos) < 0, "compare_longs less");
		CHECK(gm_hash_compare_longs(&pos, &neg) > 0, "compare_longs greater");
		CHECK(gm_hash_hash_long(&neg) == gm_hash_hash_long(&neg2), "hash_long equal keys");
		long mn = LONG_MIN, mx = LONG_MAX;
		CHECK(gm_hash_compare_longs(&mn, &mx) < 0, "compare_longs does not overflow");
	}
	{
		int a = 3, b = 3, c = INT_MIN, d = INT_MAX;
		CHECK(gm_hash_compare_ints(&a, &b) == 0, "compare_ints equal");
		CHECK(gm_hash_compare_ints(&c, &d) < 0, "compare_ints does not overflow");
		CHECK(gm_hash_compare_ints(&d, &c) > 0, "compare_ints greater");
		CHECK(gm_hash_hash_int(&a) == gm_hash_hash_int(&b), "hash_int equal keys");
	}
	{
		char x[] = "same", y[] = "same";
		CHECK(gm_hash_compare_strings(x, y) == 0, "compare_strings equal");
		CHECK(gm_hash_compare_strings("a", "b") < 0, "compare_strings less");
		CHECK(gm_hash_hash_string(x) == gm_hash_hash_string(y), "hash_string equal keys");
		CHECK(gm_hash_hash_string("ab") != gm_hash_hash_string("ba"), "hash_string order");
	}
	CHECK(gm_hash_compare_ptrs(KEYP(1), KEYP(1)) == 0, "compare_ptrs equal");
	CHECK(gm_hash_compare_ptrs(KEYP(1), KEYP(2)) < 0, "compare_ptrs less");
	CHECK(gm_hash_hash_ptr(KEYP(9)) == gm_hash_hash_ptr(KEYP(9)), "hash_ptr");
	gm_destroy_hash(h);
}

/* Pointer keys with copied data (GASNet's firehose table), and a weak
   client hash that sends everything to a few values. */
static unsigned long weak_hash(void *key)
{
	return (unsigned long)((uintptr_t)key % 3);
}

static void test_hash_mixed(void)
{
	struct { long refc; void *next; } d = { 1, NULL }, *p;
	struct gm_hash *h = gm_create_hash(gm_hash_compare_ptrs, gm_hash_hash_ptr, 0, sizeof d, 64, 0);
	int ok = 1;

	CHECK(h != NULL, "create mixed hash");
	if (h == NULL)
		return;
	for (int i = 0; i < 5000; i++) {
		d.refc = i;
		ok &= gm_hash_insert(h, KEYP(i), &d) == GM_SUCCESS;
	}
	CHECK(ok, "insert pointer keys with copied data");
	p = gm_hash_find(h, KEYP(4321));
	CHECK(p && p->refc == 4321 && p != &d, "copied datum for a pointer key");
	gm_destroy_hash(h);

	h = gm_create_hash(gm_hash_compare_ptrs, weak_hash, 0, 0, 0, 1 /* ignored */);
	CHECK(h != NULL, "create weak-hash table (flags ignored)");
	if (h == NULL)
		return;
	ok = 1;
	for (int i = 0; i < 2000; i++)
		ok &= gm_hash_insert(h, KEYP(i), DATP(i)) == GM_SUCCESS;
	for (int i = 0; i < 2000; i++)
		ok &= gm_hash_find(h, KEYP(i)) == DATP(i);
	for (int i = 0; i < 2000; i += 3)
		ok &= gm_hash_remove(h, KEYP(i)) == DATP(i);
	for (int i = 0; i < 2000; i++)
		ok &= gm_hash_find(h, KEYP(i)) == (i % 3 ? DATP(i) : NULL);
	CHECK(ok, "colliding hashes still work");
	gm_destroy_hash(h);

	CHECK(gm_create_hash(NULL, gm_hash_hash_ptr, 0, 0, 0, 0) == NULL, "NULL compare refused");
	CHECK(gm_create_hash(gm_hash_compare_ptrs, NULL, 0, 0, 0, 0) == NULL, "NULL hash refused");
}

/* Many entries quickly: inserts stay amortised O(1). */
static void test_hash_scale(void)
{
	struct gm_hash *h = gm_create_hash(gm_hash_compare_ptrs, gm_hash_hash_ptr, 0, 0, 0, 0);
	struct timespec a, b;
	const int n = 300000;
	int ok = 1;
	double dt;

	CHECK(h != NULL, "create scale hash");
	if (h == NULL)
		return;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int i = 0; i < n; i++)
		ok &= gm_hash_insert(h, KEYP(i), DATP(i)) == GM_SUCCESS;
	for (int i = 0; i < n; i++)
		ok &= gm_hash_find(h, KEYP(i)) == DATP(i);
	for (int i = 0; i < n; i++)
		ok &= gm_hash_remove(h, KEYP(i)) == DATP(i);
	clock_gettime(CLOCK_MONOTONIC, &b);
	dt = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
	CHECK(ok, "%d inserts, finds and removes", n);
	/* Generous: a quadratic table would take minutes, even under ASan. */
	CHECK(dt < 20, "%d inserts, finds and removes took %.2f s", n, dt);
	gm_destroy_hash(h);
}

/* ---- Lookaside lists -------------------------------------------------- */

static void double_free(void *arg)
{
	gm_lookaside_free(arg);
}

static void test_lookaside(void)
{
	struct gm_lookaside *l = gm_create_lookaside(40, 100), *l2;
	enum { N = 5000 };
	static unsigned char *e[N];
	int ok;

	CHECK(l != NULL, "create lookaside");
	if (l == NULL)
		return;

	/* Thousands at once: aligned, distinct, each keeps its contents. */
	ok = 1;
	for (int i = 0; i < N; i++) {
		e[i] = gm_lookaside_alloc(l);
		ok &= e[i] != NULL && (uintptr_t)e[i] % 64 == 0;
		if (e[i])
			memset(e[i], i & 0xff, 40);
	}
	CHECK(ok, "alloc %d entries, 64-byte aligned", N);
	ok = 1;
	for (int i = 0; i < N; i++)
		for (int k = 0; k < 40; k++)
			ok &= e[i] == NULL || e[i][k] == (i & 0xff);
	CHECK(ok, "entries do not overlap");
	for (int i = 0; i < N; i++)
		gm_lookaside_free(e[i]);

	/* Many alloc/free cycles in a shuffled order. */
	gm_srand(7);
	ok = 1;
	for (int round = 0; round < 2000; round++) {
		int m = 1 + gm_rand() % 64;

		for (int i = 0; i < m; i++) {
			e[i] = gm_lookaside_alloc(l);
			ok &= e[i] != NULL;
			if (e[i])
				memset(e[i], round & 0xff, 40);
		}
		for (int i = m - 1; i > 0; i--) {
			int j = gm_rand() % (i + 1);
			unsigned char *t = e[i];
			e[i] = e[j];
			e[j] = t;
		}
		for (int i = 0; i < m; i++) {
			ok &= e[i] == NULL || (e[i][0] == (round & 0xff) && e[i][39] == (round & 0xff));
			gm_lookaside_free(e[i]);
		}
	}
	CHECK(ok, "2000 shuffled alloc/free rounds");

	/* zalloc zeroes a reused, dirty entry. */
	e[0] = gm_lookaside_alloc(l);
	if (e[0])
		memset(e[0], 0xab, 40);
	gm_lookaside_free(e[0]);
	e[1] = gm_lookaside_zalloc(l);
	ok = e[1] != NULL;
	for (int k = 0; ok && k < 40; k++)
		ok &= e[1][k] == 0;
	CHECK(ok, "zalloc zeroes");
	gm_lookaside_free(e[1]);
	gm_lookaside_free(NULL);

	/* A second list: gm_lookaside_free finds each entry's own list. */
	l2 = gm_create_lookaside(10000, 0);
	CHECK(l2 != NULL, "create a list of large entries with no minimum");
	if (l2) {
		unsigned char *a[50], *b[50];

		ok = 1;
		for (int i = 0; i < 50; i++) {
			a[i] = gm_lookaside_alloc(l);
			b[i] = gm_lookaside_zalloc(l2);
			ok &= a[i] && b[i] && b[i][0] == 0 && b[i][9999] == 0;
			if (b[i])
				memset(b[i], 0x11, 10000);
		}
		for (int i = 0; i < 50; i++) {
			gm_lookaside_free(i % 2 ? a[i] : b[i]);
			gm_lookaside_free(i % 2 ? b[i] : a[i]);
		}
		for (int i = 0; i < 50; i++) {
			a[i] = gm_lookaside_alloc(l);
			b[i] = gm_lookaside_alloc(l2);
			ok &= a[i] && b[i];
		}
		for (int i = 0; i < 50; i++)
			for (int j = 0; j < 50; j++)
				ok &= a[i] != b[j];
		CHECK(ok, "two lists freed interleaved keep their entries apart");
		/* Destroy with entries still allocated: frees them all. */
		gm_destroy_lookaside(l2);
	}

	/* A freed entry freed again is reported and ignored. */
	{
		unsigned char *x = gm_lookaside_alloc(l), *y, *z;
		char *msg;

		gm_lookaside_free(x);
		msg = capture_stderr(double_free, x);
		CHECK(msg && strstr(msg, "gm_lookaside_free") != NULL, "double free reported: %s",
		      msg ? msg : "(capture failed)");
		free(msg);
		y = gm_lookaside_alloc(l);
		z = gm_lookaside_alloc(l);
		CHECK(y && z && y != z, "a double free does not hand one entry out twice");
		gm_lookaside_free(y);
		gm_lookaside_free(z);
	}

	/* Zero-length entries are still distinct. */
	{
		struct gm_lookaside *l0 = gm_create_lookaside(0, 3);
		void *p[10];

		CHECK(l0 != NULL, "zero-length list");
		ok = 1;
		for (int i = 0; l0 && i < 10; i++) {
			p[i] = gm_lookaside_zalloc(l0);
			ok &= p[i] != NULL;
			for (int j = 0; j < i; j++)
				ok &= p[i] != p[j];
		}
		CHECK(ok, "zero-length entries are distinct");
		gm_destroy_lookaside(l0);
	}

	/* Outstanding entries at destroy are freed (the leak checker agrees). */
	for (int i = 0; i < 1000; i++)
		e[i] = gm_lookaside_alloc(l);
	gm_destroy_lookaside(l);
	gm_destroy_lookaside(NULL);
	CHECK(gm_lookaside_alloc(NULL) == NULL, "alloc from NULL list");
}

/* The helpers that public GM programs (GASNet) call besides the above. */
static void test_more(void)
{
	unsigned char *p = gm_alloc_pages(5000);
	int zero = 1;

	CHECK(p != NULL, "gm_alloc_pages(5000)");
	if (p != NULL) {
		CHECK(((uintptr_t)p & (GM_PAGE_LEN - 1)) == 0, "gm_alloc_pages not page-aligned: %p", (void *)p);
		for (int i = 0; i < 2 * GM_PAGE_LEN; i++)
			zero &= p[i] == 0;
		CHECK(zero, "gm_alloc_pages: two pages not zeroed");
		memset(p, 0xa5, 2 * GM_PAGE_LEN); /* ASan: both pages are ours */
		gm_free_pages(p, 5000);
	}
	CHECK(gm_strncasecmp("GM_Port", "gm_pORT", 7) == 0, "strncasecmp equal");
	CHECK(gm_strncasecmp("abc", "abd", 2) == 0, "strncasecmp prefix");
	CHECK(gm_strncasecmp("abc", "ABD", 3) < 0, "strncasecmp order");
	CHECK(gm_strncasecmp("ab", "abc", 5) < 0, "strncasecmp shorter");
	CHECK(gm_isprint('a') && gm_isprint(' ') && !gm_isprint('\n') && !gm_isprint(0x7f), "isprint");
	CHECK(gm_rand_mod(0) == 0, "rand_mod(0)");
	for (int i = 0; i < 1000; i++) {
		unsigned int v = gm_rand_mod(7);
		if (v >= 7) {
			CHECK(v < 7, "rand_mod(7) = %u", v);
			break;
		}
	}
}

int main(void)
{
	test_memory();
	test_output();
	test_crc_rand_misc();
	test_hash_pointers();
	test_hash_copies();
	test_hash_strings();
	test_hash_longs();
	test_hash_mixed();
	test_hash_scale();
	test_lookaside();
	test_more();

	printf("util_test: %lu checks, %lu failed\n", checks, failures);
	return failures == 0 ? 0 : 1;
}
