/*
 * util.c: GM's portable helpers (gm.h, "Portable helpers"), in C so that
 * they cost a C program no crossing into Go.
 *
 * Semantics chosen where GM's documentation leaves room:
 *  - gm_crc is the IEEE 802.3 CRC-32 (reflected polynomial 0xEDB88320,
 *    initial value and final XOR 0xFFFFFFFF; "123456789" gives 0xCBF43926).
 *    GM promises only "a 32-bit CRC"; gm_crc_str(s) is gm_crc of s's bytes
 *    without the terminating NUL.
 *  - gm_log2_roundup(n) is ceil(log2(n)) as in GM (programs pass it as a
 *    size class and shift by it); 0 and 1 both give 0.
 *  - gm_rand/gm_srand: one process-wide generator behind a mutex; the same
 *    seed gives the same sequence; values are in [0, 2^31 - 1]; unseeded it
 *    behaves as if seeded with 1, like rand().
 *  - gm_sleep sleeps the whole time even when signals interrupt it (a Go
 *    runtime lives in this process) and returns 0.
 *  - gm_malloc(0) and gm_calloc(0, n) return a unique pointer, not NULL, so
 *    that NULL always means out of memory. Free it all with gm_free.
 *  - Hash tables and lookaside lists are not thread-safe, as in GM: a
 *    program serialises the calls on one table or list. Distinct tables and
 *    lists share nothing.
 *  - Hash tables hold each key at most once: gm_hash_insert of a key that
 *    is present returns GM_FAILURE and changes nothing. The "flags"
 *    argument of gm_create_hash is ignored (GM's only flag, GM_HASH_SMOOTH,
 *    was never supported by GM either).
 *  - gm_hash_remove on a table that copies data returns a pointer to the
 *    table's copy, valid until the next gm_hash_insert, gm_hash_remove,
 *    gm_hash_rekey or gm_destroy_hash on that table (gm_hash_find leaves
 *    it alone).
 *  - gm_hash_rekey does nothing when old_key is absent or when new_key
 *    already names another entry.
 *  - Lookaside entries are 64-byte (cache line) aligned, as GM's are. Freed
 *    entries stay in their list for reuse until gm_destroy_lookaside, which
 *    frees every entry, allocated or not. Freeing an entry twice is
 *    reported on stderr and otherwise ignored.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* getpid, nanosleep under -std=c11 */
#endif

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gm.h"

/* Under AddressSanitizer, free lookaside entries (and so removed hash
   entries) are poisoned: a use after gm_lookaside_free is reported. */
#if defined(__SANITIZE_ADDRESS__)
#define GM_UTIL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GM_UTIL_ASAN 1
#endif
#endif
#ifdef GM_UTIL_ASAN
#include <sanitizer/asan_interface.h>
#define LA_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define LA_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define LA_POISON(p, n) ((void)(p), (void)(n))
#define LA_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/* ---- Memory and strings ------------------------------------------------- */

void gm_bcopy(const void *from, void *to, gm_size_t len)
{
	if (len)
		memmove(to, from, len); /* bcopy allows overlap */
}

void gm_bzero(void *ptr, gm_size_t len)
{
	if (len)
		memset(ptr, 0, len);
}

void *gm_memset(void *ptr, int value, gm_size_t len)
{
	if (len)
		memset(ptr, value, len);
	return ptr;
}

int gm_bcmp(const void *a, const void *b, gm_size_t len)
{
	return len ? memcmp(a, b, len) : 0;
}

int gm_memcmp(const void *a, const void *b, gm_size_t len)
{
	return len ? memcmp(a, b, len) : 0;
}

gm_size_t gm_strlen(const char *s)
{
	return strlen(s);
}

/* strncpy's contract: at most len bytes, NUL-padded, unterminated if from
   has len or more characters. A len of 0 or less writes nothing. */
char *gm_strncpy(char *to, const char *from, int len)
{
	if (len > 0)
		strncpy(to, from, (size_t)len);
	return to;
}

int gm_strcmp(const char *a, const char *b)
{
	return strcmp(a, b);
}

int gm_strncmp(const char *a, const char *b, int len)
{
	return len > 0 ? strncmp(a, b, (size_t)len) : 0;
}

void *gm_malloc(gm_size_t len)
{
	return malloc(len ? len : 1);
}

void *gm_calloc(gm_size_t count, gm_size_t len)
{
	/* Checked here: a sanitizer aborts on calloc's own overflow. */
	if (count && len > SIZE_MAX / count)
		return NULL;
	if (count == 0 || len == 0)
		count = len = 1;
	return calloc(count, len);
}

void gm_free(void *ptr)
{
	free(ptr);
}

char *gm_strdup(const char *s)
{
	size_t n;
	char *d;

	if (s == NULL)
		return NULL;
	n = strlen(s) + 1;
	d = malloc(n);
	if (d)
		memcpy(d, s, n);
	return d;
}

void *gm_page_alloc(void)
{
	void *p = aligned_alloc(GM_PAGE_LEN, GM_PAGE_LEN);

	if (p)
		memset(p, 0, GM_PAGE_LEN);
	return p;
}

void gm_page_free(void *addr)
{
	free(addr);
}

void *gm_alloc_pages(gm_size_t len)
{
	gm_size_t n = (len + GM_PAGE_LEN - 1) & ~(gm_size_t)(GM_PAGE_LEN - 1);
	void *p;

	if (n < len)
		return NULL;
	if (n == 0)
		n = GM_PAGE_LEN;
	if (posix_memalign(&p, GM_PAGE_LEN, n) != 0)
		return NULL;
	memset(p, 0, n);
	return p;
}

void gm_free_pages(void *addr, gm_size_t len)
{
	(void)len;
	free(addr);
}

int gm_strncasecmp(const char *a, const char *b, int len)
{
	for (int i = 0; i < len; i++) {
		int x = tolower((unsigned char)a[i]), y = tolower((unsigned char)b[i]);

		if (x != y)
			return x - y;
		if (x == 0)
			break;
	}
	return 0;
}

int gm_isprint(int c)
{
	return c >= 0x20 && c < 0x7f;
}

/* ---- Output -------------------------------------------------------------- */

int gm_printf(const char *format, ...)
{
	va_list ap;
	int n;

	va_start(ap, format);
	n = vprintf(format, ap);
	va_end(ap);
	return n;
}

int gm_eprintf(const char *format, ...)
{
	va_list ap;
	int n;

	va_start(ap, format);
	n = vfprintf(stderr, format, ap);
	va_end(ap);
	return n;
}

/* 16 bytes a line: offset, hex, printable ASCII. Each line is written with
   one call so that lines from several threads do not interleave. */
void gm_hex_dump(const void *ptr, gm_size_t len)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = ptr;
	char line[96];

	fprintf(stderr, "gm_hex_dump: %lu bytes at %p\n", (unsigned long)len, ptr);
	for (gm_size_t off = 0; off < len; off += 16) {
		gm_size_t n = len - off < 16 ? len - off : 16;
		int k = snprintf(line, sizeof line, "%08lx ", (unsigned long)off);

		for (gm_size_t i = 0; i < 16; i++) {
			line[k++] = ' ';
			line[k++] = i < n ? hex[p[off + i] >> 4] : ' ';
			line[k++] = i < n ? hex[p[off + i] & 15] : ' ';
		}
		line[k++] = ' ';
		line[k++] = ' ';
		line[k++] = '|';
		for (gm_size_t i = 0; i < n; i++) {
			unsigned char c = p[off + i];
			line[k++] = c >= 0x20 && c < 0x7f ? (char)c : '.';
		}
		line[k++] = '|';
		line[k++] = '\n';
		fwrite(line, 1, (size_t)k, stderr);
	}
}

/* ---- CRC-32 ---------------------------------------------------------------- */

/* IEEE CRC-32, reflected, a nibble at a time: a 16-entry table needs no
   initialisation (so no thread-safety question) and is fast enough. */
static const uint32_t crc_nibble[16] = {
	0x00000000, 0x1db71064, 0x3b6e20c8, 0x26d930ac,
	0x76dc4190, 0x6b6b51f4, 0x4db26158, 0x5005713c,
	0xedb88320, 0xf00f9344, 0xd6d6a3e8, 0xcb61b38c,
	0x9b64c2b0, 0x86d3d2d4, 0xa00ae278, 0xbdbdf21c,
};

unsigned long gm_crc(void *ptr, gm_size_t len)
{
	const unsigned char *p = ptr;
	uint32_t c = 0xffffffffu;

	for (gm_size_t i = 0; i < len; i++) {
		c ^= p[i];
		c = (c >> 4) ^ crc_nibble[c & 15];
		c = (c >> 4) ^ crc_nibble[c & 15];
	}
	return c ^ 0xffffffffu;
}

unsigned long gm_crc_str(const char *s)
{
	return gm_crc((void *)s, strlen(s));
}

/* ---- Random numbers ------------------------------------------------------- */

static pthread_mutex_t rand_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t rand_state = 1; /* as if gm_srand(1) */

void gm_srand(int seed)
{
	pthread_mutex_lock(&rand_lock);
	rand_state = (uint64_t)(unsigned int)seed;
	pthread_mutex_unlock(&rand_lock);
}

/* splitmix64: any seed, including 0, gives a full-period, well-mixed
   sequence; the top 31 bits are returned. */
int gm_rand(void)
{
	uint64_t z;

	pthread_mutex_lock(&rand_lock);
	rand_state += 0x9e3779b97f4a7c15u;
	z = rand_state;
	pthread_mutex_unlock(&rand_lock);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	z ^= z >> 31;
	return (int)(z >> 33);
}

unsigned int gm_rand_mod(unsigned int modulus)
{
	if (modulus == 0)
		return 0;
	return (unsigned int)gm_rand() % modulus;
}

/* ---- Miscellany -------------------------------------------------------------- */

unsigned long gm_log2_roundup(unsigned long n)
{
	unsigned long r = 0;

	/* ceil(log2(n)) = number of bits needed to write n - 1. */
	for (n = n ? n - 1 : 0; n; n >>= 1)
		r++;
	return r;
}

gm_pid_t gm_getpid(void)
{
	return (gm_pid_t)getpid();
}

int gm_sleep(unsigned int seconds)
{
	struct timespec left = { .tv_sec = (time_t)seconds, .tv_nsec = 0 };

	while (nanosleep(&left, &left) != 0 && errno == EINTR)
		;
	return 0;
}

/* ---- Lookaside lists ------------------------------------------------------ */

/*
 * A list owns segments: aligned blocks of equal slots. Each entry is
 * LA_ALIGN-aligned and preceded by a header naming its list, which is how
 * gm_lookaside_free finds the list. Segment layout:
 *
 *   [segment link ... header 0][entry 0 ... header 1][entry 1 ... header 2]...
 *   |<------ LA_ALIGN -------->|<-------- stride ---->|
 *
 * Entry k starts at LA_ALIGN + k * stride; its header sits in the tail of
 * the slot before (or of the first LA_ALIGN bytes for entry 0).
 */
#define LA_ALIGN 64
#define LA_USED 0x4c415553u /* "LAUS": catches double frees */
#define LA_FREE 0x4c414652u /* "LAFR" */
#define LA_SEGMENT_MAX (1ul << 20) /* bytes: bounds one growth step */

struct la_segment {
	struct la_segment *next;
};

struct la_header {
	struct gm_lookaside *owner;
	struct la_header *next_free;
	unsigned int state;
};

struct gm_lookaside {
	size_t entry_len;
	size_t stride;
	size_t total;           /* entries in all segments */
	struct la_header *free; /* free entries, LIFO for cache warmth */
	struct la_segment *segments;
};

_Static_assert(sizeof(struct la_segment) + sizeof(struct la_header) <= LA_ALIGN,
	       "segment link and first header share the first line");

static struct la_header *la_header_of(void *entry)
{
	return (struct la_header *)((char *)entry - sizeof(struct la_header));
}

/* Adds a segment of n entries to l's free list; 0 on success. */
static int la_grow(struct gm_lookaside *l, size_t n)
{
	struct la_segment *seg;
	char *first;
	size_t bytes;

	if (n == 0 || n > (SIZE_MAX - LA_ALIGN) / l->stride)
		return -1;
	bytes = LA_ALIGN + n * l->stride; /* a multiple of LA_ALIGN */
	seg = aligned_alloc(LA_ALIGN, bytes);
	if (seg == NULL)
		return -1;
	seg->next = l->segments;
	l->segments = seg;
	first = (char *)seg + LA_ALIGN;
	/* Pushed last to first so that entries are handed out in address order. */
	for (size_t k = n; k-- > 0;) {
		struct la_header *h = la_header_of(first + k * l->stride);

		h->owner = l;
		h->state = LA_FREE;
		h->next_free = l->free;
		l->free = h;
		LA_POISON(h + 1, l->entry_len);
	}
	l->total += n;
	return 0;
}

struct gm_lookaside *gm_create_lookaside(gm_size_t entry_len, gm_size_t min_entry_cnt)
{
	struct gm_lookaside *l;
	size_t slot;

	if (entry_len > SIZE_MAX / 2)
		return NULL;
	slot = (size_t)entry_len + sizeof(struct la_header);
	l = calloc(1, sizeof *l);
	if (l == NULL)
		return NULL;
	l->entry_len = entry_len;
	l->stride = (slot + LA_ALIGN - 1) / LA_ALIGN * LA_ALIGN;
	/* The minimum is allocated now, so that many allocations always succeed. */
	if (min_entry_cnt && la_grow(l, min_entry_cnt) != 0) {
		free(l);
		return NULL;
	}
	return l;
}

void gm_destroy_lookaside(struct gm_lookaside *l)
{
	if (l == NULL)
		return;
	while (l->segments) {
		struct la_segment *next = l->segments->next;

		free(l->segments);
		l->segments = next;
	}
	free(l);
}

void *gm_lookaside_alloc(struct gm_lookaside *l)
{
	struct la_header *h;

	if (l == NULL)
		return NULL;
	if (l->free == NULL) {
		/* Grow by half of what exists (amortised O(1) per entry), at least a
		   page's worth and at most LA_SEGMENT_MAX bytes; fall back to one. */
		size_t page = (GM_PAGE_LEN - LA_ALIGN) / l->stride;
		size_t cap = LA_SEGMENT_MAX / l->stride;
		size_t n = l->total / 2;

		if (n < page)
			n = page;
		if (n > cap)
			n = cap;
		if (n == 0)
			n = 1;
		if (la_grow(l, n) != 0 && (n == 1 || la_grow(l, 1) != 0))
			return NULL;
	}
	h = l->free;
	l->free = h->next_free;
	h->next_free = NULL;
	h->state = LA_USED;
	LA_UNPOISON(h + 1, l->entry_len);
	return (char *)h + sizeof *h;
}

void *gm_lookaside_zalloc(struct gm_lookaside *l)
{
	void *p = gm_lookaside_alloc(l);

	if (p && l->entry_len)
		memset(p, 0, l->entry_len);
	return p;
}

void gm_lookaside_free(void *ptr)
{
	struct la_header *h;

	if (ptr == NULL)
		return;
	h = la_header_of(ptr);
	if (h->state != LA_USED) {
		fprintf(stderr, "gm_lookaside_free: %p is not an allocated lookaside entry"
			" (freed twice?); ignored\n", ptr);
		return;
	}
	h->state = LA_FREE;
	h->next_free = h->owner->free;
	h->owner->free = h;
	LA_POISON(ptr, h->owner->entry_len);
}

/* ---- Hash tables ---------------------------------------------------------- */

/*
 * Separate chaining over a power-of-two bucket array that doubles when the
 * entries outnumber the buckets, so inserts are amortised O(1). Entries come
 * from a lookaside list preallocated with gm_min_entries entries, which
 * keeps GM's promise that that many inserts succeed. A copied key or datum
 * lives inside its entry, after the fixed part.
 */
struct hash_entry {
	struct hash_entry *next;
	unsigned long hash; /* the client's hash of the key, kept for regrowth */
	void *key;          /* the client's pointer, or the copy in this entry */
	void *data;         /* likewise */
};

struct gm_hash {
	long (*compare)(void *, void *);
	unsigned long (*hash)(void *);
	size_t key_len, data_len;
	size_t key_off, data_off; /* offsets of the copies in an entry */
	struct hash_entry **buckets;
	size_t nbuckets;          /* a power of two */
	size_t count;
	struct gm_lookaside *entries;
	struct hash_entry *removed; /* returned by gm_hash_remove, freed later */
};

#define HASH_MIN_BUCKETS 16
#define HASH_COPY_ALIGN 16 /* copies are aligned for any type */

static size_t round_up(size_t n, size_t a)
{
	return (n + a - 1) / a * a;
}

/* Spreads a client hash over the bucket bits: client hashes of aligned
   pointers or small integers differ only in a few bits. */
static size_t hash_bucket(const struct gm_hash *h, unsigned long hv)
{
	uint64_t x = hv;

	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdu;
	x ^= x >> 33;
	return (size_t)x & (h->nbuckets - 1);
}

/* Frees the entry that the last gm_hash_remove handed out. */
static void hash_release_removed(struct gm_hash *h)
{
	if (h->removed) {
		gm_lookaside_free(h->removed);
		h->removed = NULL;
	}
}

/* The link that points to key's entry (or to NULL at its bucket's end). */
static struct hash_entry **hash_lookup(struct gm_hash *h, void *key, unsigned long hv)
{
	struct hash_entry **pp = &h->buckets[hash_bucket(h, hv)];

	for (; *pp; pp = &(*pp)->next)
		if ((*pp)->hash == hv && h->compare((*pp)->key, key) == 0)
			break;
	return pp;
}

static void hash_link(struct gm_hash *h, struct hash_entry *e)
{
	struct hash_entry **b = &h->buckets[hash_bucket(h, e->hash)];

	e->next = *b;
	*b = e;
}

/* Doubles the buckets. On failure the table keeps working, only slower. */
static void hash_grow(struct gm_hash *h)
{
	struct hash_entry **old = h->buckets;
	size_t oldn = h->nbuckets;

	if (oldn > SIZE_MAX / 2 / sizeof *old)
		return;
	h->buckets = calloc(oldn * 2, sizeof *old);
	if (h->buckets == NULL) {
		h->buckets = old;
		return;
	}
	h->nbuckets = oldn * 2;
	for (size_t i = 0; i < oldn; i++) {
		struct hash_entry *e = old[i], *next;

		for (; e; e = next) {
			next = e->next;
			hash_link(h, e);
		}
	}
	free(old);
}

struct gm_hash *gm_create_hash(long (*gm_client_compare)(void *key1, void *key2),
			       unsigned long (*gm_client_hash)(void *key), gm_size_t key_len,
			       gm_size_t data_len, gm_size_t gm_min_entries, int flags)
{
	struct gm_hash *h;
	size_t entry_len, n = HASH_MIN_BUCKETS;

	(void)flags; /* documented as ignored */
	if (gm_client_compare == NULL || gm_client_hash == NULL ||
	    key_len > SIZE_MAX / 4 || data_len > SIZE_MAX / 4 ||
	    gm_min_entries > SIZE_MAX / 4 / sizeof(struct hash_entry *))
		return NULL;
	h = calloc(1, sizeof *h);
	if (h == NULL)
		return NULL;
	h->compare = gm_client_compare;
	h->hash = gm_client_hash;
	h->key_len = key_len;
	h->data_len = data_len;
	h->key_off = round_up(sizeof(struct hash_entry), HASH_COPY_ALIGN);
	h->data_off = round_up(h->key_off + key_len, HASH_COPY_ALIGN);
	entry_len = data_len ? h->data_off + data_len : h->data_off;
	while (n < gm_min_entries)
		n *= 2;
	h->nbuckets = n;
	h->buckets = calloc(n, sizeof *h->buckets);
	h->entries = gm_create_lookaside(entry_len, gm_min_entries);
	if (h->buckets == NULL || h->entries == NULL) {
		free(h->buckets);
		gm_destroy_lookaside(h->entries);
		free(h);
		return NULL;
	}
	return h;
}

void gm_destroy_hash(struct gm_hash *h)
{
	if (h == NULL)
		return;
	free(h->buckets);
	gm_destroy_lookaside(h->entries); /* every entry, removed or not */
	free(h);
}

gm_status_t gm_hash_insert(struct gm_hash *h, void *key, void *datum)
{
	struct hash_entry *e;
	unsigned long hv;

	if (h == NULL || (key == NULL && h->key_len))
		return GM_INVALID_PARAMETER;
	hash_release_removed(h);
	hv = h->hash(key);
	if (*hash_lookup(h, key, hv))
		return GM_FAILURE; /* one entry per key */
	e = gm_lookaside_alloc(h->entries);
	if (e == NULL)
		return GM_OUT_OF_MEMORY;
	e->hash = hv;
	if (h->key_len) {
		e->key = (char *)e + h->key_off;
		memcpy(e->key, key, h->key_len);
	} else {
		e->key = key;
	}
	if (h->data_len) {
		e->data = (char *)e + h->data_off;
		if (datum)
			memcpy(e->data, datum, h->data_len);
		else
			memset(e->data, 0, h->data_len);
	} else {
		e->data = datum;
	}
	if (h->count >= h->nbuckets)
		hash_grow(h);
	hash_link(h, e);
	h->count++;
	return GM_SUCCESS;
}

void *gm_hash_find(struct gm_hash *h, void *key)
{
	struct hash_entry *e;

	if (h == NULL || (key == NULL && h->key_len))
		return NULL;
	e = *hash_lookup(h, key, h->hash(key));
	return e ? e->data : NULL;
}

void *gm_hash_remove(struct gm_hash *h, void *key)
{
	struct hash_entry **pp, *e;
	void *data;

	if (h == NULL || (key == NULL && h->key_len))
		return NULL;
	hash_release_removed(h);
	pp = hash_lookup(h, key, h->hash(key));
	e = *pp;
	if (e == NULL)
		return NULL;
	*pp = e->next;
	h->count--;
	data = e->data;
	if (h->data_len)
		h->removed = e; /* data points into e: keep it until the next call */
	else
		gm_lookaside_free(e);
	return data;
}

void gm_hash_rekey(struct gm_hash *h, void *old_key, void *new_key)
{
	struct hash_entry **pp, *e, *other;
	unsigned long nh;

	if (h == NULL || (h->key_len && (old_key == NULL || new_key == NULL)))
		return;
	hash_release_removed(h);
	pp = hash_lookup(h, old_key, h->hash(old_key));
	e = *pp;
	if (e == NULL)
		return;
	nh = h->hash(new_key);
	other = *hash_lookup(h, new_key, nh);
	if (other && other != e)
		return; /* keys stay unique */
	*pp = e->next;
	e->hash = nh;
	if (h->key_len)
		memmove(e->key, new_key, h->key_len);
	else
		e->key = new_key;
	hash_link(h, e);
}

/* The standard keys. A compare returns 0 for equal keys and otherwise a
   negative or positive value, ordered like the keys. */

long gm_hash_compare_strings(void *key1, void *key2)
{
	return strcmp(key1, key2);
}

/* FNV-1a over the bytes of the string. */
unsigned long gm_hash_hash_string(void *key)
{
	uint64_t x = 0xcbf29ce484222325u;

	for (const unsigned char *p = key; *p; p++)
		x = (x ^ *p) * 0x100000001b3u;
	return (unsigned long)(x ^ (x >> 32));
}

long gm_hash_compare_longs(void *key1, void *key2)
{
	long a = *(long *)key1, b = *(long *)key2;

	return (a > b) - (a < b);
}

unsigned long gm_hash_hash_long(void *key)
{
	return (unsigned long)*(long *)key;
}

long gm_hash_compare_ints(void *key1, void *key2)
{
	int a = *(int *)key1, b = *(int *)key2;

	return (a > b) - (a < b);
}

unsigned long gm_hash_hash_int(void *key)
{
	return (unsigned long)(unsigned int)*(int *)key;
}

/* Pointer keys are the pointers themselves (key_len 0), as GM programs use
   them: addresses and integers cast to void *. */
long gm_hash_compare_ptrs(void *key1, void *key2)
{
	uintptr_t a = (uintptr_t)key1, b = (uintptr_t)key2;

	return (a > b) - (a < b);
}

unsigned long gm_hash_hash_ptr(void *key)
{
	return (unsigned long)(uintptr_t)key;
}
