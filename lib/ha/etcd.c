/*
 * etcd.c - the etcd v3 gateway client (etcd.h): the answer decoder, the
 * request builders, the synchronous calls.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <jansson.h>
#include <sodium.h>

#include "base/clock.h"
#include "ha/etcd.h"

const char *const etcd_kind_names[] = { "range", "put", "delete", "txn",
	"grant", "keepalive", "revoke", "watch", NULL };
const char *const etcd_kind_paths[] = { "/v3/kv/range", "/v3/kv/put",
	"/v3/kv/deleterange", "/v3/kv/txn", "/v3/lease/grant",
	"/v3/lease/keepalive", "/v3/lease/revoke", "/v3/watch", NULL };

void
etcd_limits_default(struct etcd_limits *l)
{
	l->max_body = (size_t)4 << 20;
	l->max_kvs = 10000;
	l->max_key = 1024;
	l->max_value = (size_t)64 << 10;
	l->max_responses = 1024;
	l->max_message = 240;
}

void
etcd_resp_init(struct etcd_resp *r)
{
	memset(r, 0, sizeof(*r));
}

void
etcd_resp_free(struct etcd_resp *r)
{
	cats_arena_free(&r->arena);
	memset(r, 0, sizeof(*r));
}

/* ---- the decoder ---- */

struct pctx {
	const struct etcd_limits *lim;
	struct etcd_resp *r;
	char *err;
	size_t errlen;
	size_t kvcap;
};

static int
bad(struct pctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int
bad(struct pctx *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->err, c->errlen, fmt, ap);
	va_end(ap);
	return -1;
}

/*
 * An int64 field: proto3 JSON writes it as a decimal string (an integer
 * is accepted too); absent is 0.  Only 0 .. INT64_MAX is valid here.
 */
static int
get_int(struct pctx *c, const json_t *o, const char *name, int64_t *out)
{
	const json_t *v = json_object_get(o, name);
	*out = 0;
	if (v == NULL || json_is_null(v))
		return 0;
	if (json_is_integer(v)) {
		json_int_t x = json_integer_value(v);
		if (x < 0)
			return bad(c, "%s: negative", name);
		*out = (int64_t)x;
		return 0;
	}
	if (!json_is_string(v))
		return bad(c, "%s: not an int64 string", name);
	const char *s = json_string_value(v);
	size_t n = json_string_length(v);
	if (n == 0 || n > 19 || strspn(s, "0123456789") != n)
		return bad(c, "%s: not a decimal int64", name);
	uint64_t x = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned d = (unsigned)(s[i] - '0');
		if (x > ((uint64_t)INT64_MAX - d) / 10)
			return bad(c, "%s: out of range", name);
		x = x * 10 + d;
	}
	*out = (int64_t)x;
	return 0;
}

static int
get_bool(struct pctx *c, const json_t *o, const char *name, bool *out)
{
	const json_t *v = json_object_get(o, name);
	*out = false;
	if (v == NULL || json_is_null(v))
		return 0;
	if (!json_is_boolean(v))
		return bad(c, "%s: not a boolean", name);
	*out = json_is_true(v);
	return 0;
}

/* A base64 field, decoded into the arena (NUL-terminated); absent: "". */
static int
get_bytes(struct pctx *c, const json_t *o, const char *name, size_t max,
    const uint8_t **out, size_t *len)
{
	const json_t *v = json_object_get(o, name);
	*out = (const uint8_t *)"";
	*len = 0;
	if (v == NULL || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return bad(c, "%s: not a base64 string", name);
	size_t n = json_string_length(v);
	/* The cap before the allocation: n base64 bytes hold n/4*3. */
	if (n / 4 * 3 > max + 2)
		return bad(c, "%s: longer than %zu bytes", name, max);
	uint8_t *p = cats_arena_alloc(&c->r->arena, n / 4 * 3 + 4);
	if (p == NULL)
		return bad(c, "%s: out of memory", name);
	size_t got = 0;
	if (sodium_base642bin(p, n / 4 * 3 + 3, json_string_value(v), n, NULL,
	    &got, NULL, sodium_base64_VARIANT_ORIGINAL) != 0)
		return bad(c, "%s: bad base64", name);
	if (got > max)
		return bad(c, "%s: longer than %zu bytes", name, max);
	p[got] = '\0';
	*out = p;
	*len = got;
	return 0;
}

static int
get_obj(struct pctx *c, const json_t *o, const char *name, const json_t **out)
{
	const json_t *v = json_object_get(o, name);
	*out = NULL;
	if (v == NULL || json_is_null(v))
		return 0;
	if (!json_is_object(v))
		return bad(c, "%s: not an object", name);
	*out = v;
	return 0;
}

static int
get_arr(struct pctx *c, const json_t *o, const char *name, size_t max,
    const json_t **out)
{
	const json_t *v = json_object_get(o, name);
	*out = NULL;
	if (v == NULL || json_is_null(v))
		return 0;
	if (!json_is_array(v))
		return bad(c, "%s: not an array", name);
	if (json_array_size(v) > max)
		return bad(c, "%s: more than %zu entries", name, max);
	*out = v;
	return 0;
}

static int
parse_header(struct pctx *c, const json_t *o)
{
	const json_t *h;
	if (get_obj(c, o, "header", &h) < 0)
		return -1;
	if (h == NULL)
		return 0;
	int64_t rev, term;
	if (get_int(c, h, "revision", &rev) < 0 ||
	    get_int(c, h, "raft_term", &term) < 0)
		return -1;
	/* A txn's inner responses have headers too: the outer one counts. */
	if (c->r->revision == 0)
		c->r->revision = rev;
	if (c->r->raft_term == 0)
		c->r->raft_term = term;
	return 0;
}

/* One key-value object into kv. */
static int
parse_kv(struct pctx *c, const json_t *e, struct etcd_kv *kv)
{
	memset(kv, 0, sizeof(*kv));
	if (get_bytes(c, e, "key", c->lim->max_key, &kv->key, &kv->klen) < 0 ||
	    get_bytes(c, e, "value", c->lim->max_value, &kv->value,
	    &kv->vlen) < 0 ||
	    get_int(c, e, "create_revision", &kv->create_rev) < 0 ||
	    get_int(c, e, "mod_revision", &kv->mod_rev) < 0 ||
	    get_int(c, e, "version", &kv->version) < 0 ||
	    get_int(c, e, "lease", &kv->lease) < 0)
		return -1;
	return 0;
}

static int
parse_kvs(struct pctx *c, const json_t *o)
{
	const json_t *a;
	if (get_arr(c, o, "kvs", c->lim->max_kvs, &a) < 0)
		return -1;
	if (a == NULL)
		return 0;
	size_t n = json_array_size(a);
	if (c->r->nkvs + n > c->lim->max_kvs)
		return bad(c, "kvs: more than %zu entries", c->lim->max_kvs);
	if (c->r->nkvs + n > c->kvcap) {
		size_t cap = c->r->nkvs + n;
		struct etcd_kv *v = cats_arena_alloc(&c->r->arena,
		    cap * sizeof(*v));
		if (v == NULL)
			return bad(c, "kvs: out of memory");
		if (c->r->nkvs)
			memcpy(v, c->r->kvs, c->r->nkvs * sizeof(*v));
		c->r->kvs = v;
		c->kvcap = cap;
	}
	for (size_t i = 0; i < n; i++) {
		const json_t *e = json_array_get(a, i);
		struct etcd_kv *kv = &c->r->kvs[c->r->nkvs];
		if (!json_is_object(e))
			return bad(c, "kvs[%zu]: not an object", i);
		if (parse_kv(c, e, kv) < 0)
			return -1;
		if (kv->klen == 0)
			return bad(c, "kvs[%zu]: no key", i);
		c->r->nkvs++;
	}
	return 0;
}

/*
 * A watch stream's message: {"result": {header, created, canceled,
 * compact_revision, events: [{type, kv}]}}; an event's kv is one of
 * r->kvs, its type (absent: PUT) in kv->deleted.
 */
static int
parse_watch(struct pctx *c, const json_t *o)
{
	const json_t *x, *a;
	if (get_obj(c, o, "result", &x) < 0)
		return -1;
	if (x == NULL)
		return bad(c, "result: missing");
	if (parse_header(c, x) < 0 ||
	    get_bool(c, x, "created", &c->r->created) < 0 ||
	    get_bool(c, x, "canceled", &c->r->canceled) < 0 ||
	    get_int(c, x, "compact_revision", &c->r->compact_rev) < 0 ||
	    get_arr(c, x, "events", c->lim->max_kvs, &a) < 0)
		return -1;
	if (a == NULL)
		return 0;
	size_t n = json_array_size(a);
	c->r->kvs = cats_arena_alloc(&c->r->arena, (n ? n : 1) *
	    sizeof(*c->r->kvs));
	if (c->r->kvs == NULL)
		return bad(c, "events: out of memory");
	for (size_t i = 0; i < n; i++) {
		const json_t *e = json_array_get(a, i), *kvo, *t;
		struct etcd_kv *kv = &c->r->kvs[c->r->nkvs];
		if (!json_is_object(e))
			return bad(c, "events[%zu]: not an object", i);
		if (get_obj(c, e, "kv", &kvo) < 0)
			return -1;
		if (kvo == NULL)
			return bad(c, "events[%zu]: no kv", i);
		if (parse_kv(c, kvo, kv) < 0)
			return -1;
		if (kv->klen == 0)
			return bad(c, "events[%zu]: no key", i);
		t = json_object_get(e, "type");
		if (t != NULL && !json_is_null(t)) {
			if (!json_is_string(t))
				return bad(c, "events[%zu]: type: not a "
				    "string", i);
			if (strcmp(json_string_value(t), "DELETE") == 0)
				kv->deleted = true;
			else if (strcmp(json_string_value(t), "PUT") != 0)
				return bad(c, "events[%zu]: type: not PUT or "
				    "DELETE", i);
		}
		c->r->nkvs++;
	}
	return 0;
}

static int
parse_range(struct pctx *c, const json_t *o)
{
	bool more;
	int64_t count;
	if (parse_header(c, o) < 0 || parse_kvs(c, o) < 0 ||
	    get_bool(c, o, "more", &more) < 0 ||
	    get_int(c, o, "count", &count) < 0)
		return -1;
	c->r->more |= more;
	c->r->count += count;
	return 0;
}

static int
parse_txn(struct pctx *c, const json_t *o)
{
	const json_t *a;
	if (parse_header(c, o) < 0 ||
	    get_bool(c, o, "succeeded", &c->r->succeeded) < 0 ||
	    get_arr(c, o, "responses", c->lim->max_responses, &a) < 0)
		return -1;
	if (a == NULL)
		return 0;
	for (size_t i = 0; i < json_array_size(a); i++) {
		const json_t *e = json_array_get(a, i), *x;
		if (!json_is_object(e))
			return bad(c, "responses[%zu]: not an object", i);
		c->r->nresponses++;
		if (get_obj(c, e, "response_range", &x) < 0)
			return -1;
		if (x != NULL && parse_range(c, x) < 0)
			return -1;
		if (get_obj(c, e, "response_delete_range", &x) < 0)
			return -1;
		if (x != NULL) {
			int64_t d;
			if (get_int(c, x, "deleted", &d) < 0)
				return -1;
			if (d > INT64_MAX - c->r->deleted)
				return bad(c, "deleted: out of range");
			c->r->deleted += d;
		}
		if (get_obj(c, e, "response_put", &x) < 0)
			return -1;
		/* Nested txns are not sent, so not read. */
	}
	return 0;
}

static int
parse_error(struct pctx *c, const json_t *o)
{
	const json_t *m = json_object_get(o, "message");
	const json_t *e = json_object_get(o, "error");
	const json_t *k = json_object_get(o, "code");
	if (m == NULL || !json_is_string(m))
		m = e;
	if (m != NULL && !json_is_string(m))
		return bad(c, "error: not a string");
	if (k != NULL && !json_is_integer(k))
		return bad(c, "code: not an integer");
	c->r->error = true;
	c->r->code = k != NULL && json_integer_value(k) >= 0 &&
	    json_integer_value(k) < 1000 ? (int)json_integer_value(k) : 2;
	size_t max = c->lim->max_message < sizeof(c->r->message) ?
	    c->lim->max_message + 1 : sizeof(c->r->message);
	const char *s = m != NULL ? json_string_value(m) : "no message";
	/* Shown in one log line: control characters become '?'. */
	size_t i;
	for (i = 0; s[i] != '\0' && i + 1 < max; i++)
		c->r->message[i] = (unsigned char)s[i] < 0x20 ||
		    s[i] == 0x7f ? '?' : s[i];
	c->r->message[i] = '\0';
	return 0;
}

int
etcd_parse(const struct etcd_limits *lim, int kind, const char *body,
    size_t len, struct etcd_resp *r, char *err, size_t errlen)
{
	struct etcd_limits dl;
	if (lim == NULL) {
		etcd_limits_default(&dl);
		lim = &dl;
	}
	cats_arena_free(&r->arena);
	memset(r, 0, sizeof(*r));
	r->kind = kind;
	/* The kvs, their keys and values fit in about the body's size. */
	r->arena.cap = len * 2 + 4096;
	struct pctx c = { lim, r, err, errlen, 0 };
	if (kind < 0 || kind >= ETCD__N)
		return bad(&c, "unknown call kind");
	if (len > lim->max_body)
		return bad(&c, "answer longer than %zu bytes", lim->max_body);
	json_error_t je;
	json_t *o = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
	if (o == NULL)
		return bad(&c, "not JSON: %s at %d", je.text, je.position);
	int rc = -1;
	if (!json_is_object(o)) {
		bad(&c, "not a JSON object");
		goto out;
	}
	if (json_object_get(o, "error") != NULL ||
	    (json_object_get(o, "code") != NULL &&
	    json_object_get(o, "header") == NULL &&
	    json_object_get(o, "result") == NULL)) {
		rc = parse_error(&c, o);
		goto out;
	}
	const json_t *x = o;
	switch (kind) {
	case ETCD_RANGE:
		rc = parse_range(&c, o);
		break;
	case ETCD_TXN:
		rc = parse_txn(&c, o);
		break;
	case ETCD_WATCH:
		rc = parse_watch(&c, o);
		break;
	case ETCD_DELETE:
		rc = parse_header(&c, o) < 0 || get_int(&c, o, "deleted",
		    &r->deleted) < 0 ? -1 : 0;
		break;
	case ETCD_KEEPALIVE:
		/* A stream's message: {"result": {...}}. */
		if (get_obj(&c, o, "result", &x) < 0)
			break;
		if (x == NULL) {
			bad(&c, "result: missing");
			break;
		}
		/* FALLTHROUGH */
	case ETCD_GRANT:
		rc = parse_header(&c, x) < 0 ||
		    get_int(&c, x, "ID", &r->id) < 0 ||
		    get_int(&c, x, "TTL", &r->ttl) < 0 ? -1 : 0;
		if (rc == 0 && kind == ETCD_GRANT && (r->id == 0 || r->ttl == 0))
			rc = bad(&c, "grant: no lease ID or TTL");
		break;
	default:
		rc = parse_header(&c, o);
		break;
	}
	if (rc == 0 && !r->error && r->revision == 0)
		rc = bad(&c, "header: no revision");
out:
	json_decref(o);
	return rc;
}

/* Printable bytes as they are, others as \xHH. */
static void
fmt_bytes(struct cats_buf *out, const uint8_t *p, size_t n)
{
	char h[8];
	for (size_t i = 0; i < n; i++) {
		if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '\\') {
			cats_buf_add(out, &p[i], 1);
		} else {
			snprintf(h, sizeof(h), "\\x%02x", p[i]);
			cats_buf_add(out, h, 4);
		}
	}
}

static void
fmt_add(struct cats_buf *out, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
fmt_add(struct cats_buf *out, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n > 0)
		cats_buf_add(out, line, (size_t)n < sizeof(line) ? (size_t)n :
		    sizeof(line) - 1);
}

void
etcd_resp_fmt(const struct etcd_resp *r, struct cats_buf *out)
{
	fmt_add(out, "%s", r->kind >= 0 && r->kind < ETCD__N ?
	    etcd_kind_names[r->kind] : "?");
	if (r->error) {
		fmt_add(out, " error code=%d message=%s\n", r->code,
		    r->message);
		return;
	}
	fmt_add(out, " rev=%" PRId64 " term=%" PRId64, r->revision,
	    r->raft_term);
	if (r->kind == ETCD_TXN)
		fmt_add(out, " succeeded=%d responses=%zu", r->succeeded,
		    r->nresponses);
	if (r->kind == ETCD_RANGE || r->kind == ETCD_TXN)
		fmt_add(out, " count=%" PRId64 " more=%d", r->count, r->more);
	if (r->kind == ETCD_DELETE || r->deleted)
		fmt_add(out, " deleted=%" PRId64, r->deleted);
	if (r->kind == ETCD_GRANT || r->kind == ETCD_KEEPALIVE)
		fmt_add(out, " id=%" PRId64 " ttl=%" PRId64, r->id, r->ttl);
	if (r->kind == ETCD_WATCH)
		fmt_add(out, " created=%d canceled=%d compact=%" PRId64,
		    r->created, r->canceled, r->compact_rev);
	for (size_t i = 0; i < r->nkvs; i++) {
		const struct etcd_kv *kv = &r->kvs[i];
		cats_buf_add(out, kv->deleted ? " [DELETE " : " [", kv->deleted ?
		    9 : 2);
		fmt_bytes(out, kv->key, kv->klen);
		cats_buf_add(out, "=", 1);
		fmt_bytes(out, kv->value, kv->vlen);
		fmt_add(out, " c=%" PRId64 " m=%" PRId64 " v=%" PRId64
		    " l=%" PRId64 "]", kv->create_rev, kv->mod_rev, kv->version,
		    kv->lease);
	}
	cats_buf_add(out, "\n", 1);
}

/* ---- requests ---- */

json_t *
etcd_j_bytes(const void *p, size_t n)
{
	size_t len = sodium_base64_encoded_len(n,
	    sodium_base64_VARIANT_ORIGINAL);
	char *s = malloc(len);
	if (s == NULL)
		return NULL;
	sodium_bin2base64(s, len, p, n, sodium_base64_VARIANT_ORIGINAL);
	json_t *j = json_string(s);
	free(s);
	return j;
}

json_t *
etcd_j_int(int64_t v)
{
	char s[24];
	snprintf(s, sizeof(s), "%" PRId64, v);
	return json_string(s);
}

size_t
etcd_prefix_end(const void *prefix, size_t n, uint8_t *out)
{
	memcpy(out, prefix, n);
	while (n > 0) {
		if (out[n - 1] != 0xff) {
			out[n - 1]++;
			return n;
		}
		n--;
	}
	/* Every key: "\0". */
	out[0] = 0;
	return 1;
}

json_t *
etcd_op_put(const void *k, size_t kl, const void *v, size_t vl,
    int64_t lease)
{
	json_t *p = json_object();
	json_object_set_new(p, "key", etcd_j_bytes(k, kl));
	json_object_set_new(p, "value", etcd_j_bytes(v, vl));
	if (lease)
		json_object_set_new(p, "lease", etcd_j_int(lease));
	return json_pack("{s:o}", "requestPut", p);
}

json_t *
etcd_op_delete(const void *k, size_t kl, const void *end, size_t el)
{
	json_t *p = json_object();
	json_object_set_new(p, "key", etcd_j_bytes(k, kl));
	if (end != NULL)
		json_object_set_new(p, "range_end", etcd_j_bytes(end, el));
	return json_pack("{s:o}", "requestDeleteRange", p);
}

json_t *
etcd_op_range(const void *k, size_t kl, const void *end, size_t el,
    int64_t limit, int64_t rev)
{
	json_t *p = json_object();
	json_object_set_new(p, "key", etcd_j_bytes(k, kl));
	if (end != NULL)
		json_object_set_new(p, "range_end", etcd_j_bytes(end, el));
	if (limit)
		json_object_set_new(p, "limit", etcd_j_int(limit));
	if (rev)
		json_object_set_new(p, "revision", etcd_j_int(rev));
	return p;
}

json_t *
etcd_cmp_create(const void *k, size_t kl, int64_t rev)
{
	return json_pack("{s:s,s:s,s:o,s:o}", "target", "CREATE", "result",
	    "EQUAL", "key", etcd_j_bytes(k, kl), "create_revision",
	    etcd_j_int(rev));
}

/* ---- the client ---- */

/* One transfer of etcd_call_many(). */
struct xfer {
	struct etcd *e;
	CURL *h;
	struct cats_buf body;
	bool too_big;
	char curl_err[CURL_ERROR_SIZE];
};

struct etcd {
	CURL *h;
	CURLM *m;
	struct xfer x[ETCD_PARALLEL];
	char **urls;
	size_t nurls, cur;
	uint64_t timeout_ms;
	struct etcd_limits lim;
	struct cats_buf body;
	bool too_big;
	struct etcd_stats st;
	char curl_err[CURL_ERROR_SIZE];
};

struct etcd *
etcd_new(const char *urls, uint64_t timeout_ms, const struct etcd_limits *lim,
    char *err, size_t errlen)
{
	static bool inited;
	struct etcd *e = calloc(1, sizeof(*e));
	char *copy = strdup(urls), *save = NULL;
	if (e == NULL || copy == NULL) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	if (!inited) {
		curl_global_init(CURL_GLOBAL_DEFAULT);
		inited = true;
	}
	if (lim != NULL)
		e->lim = *lim;
	else
		etcd_limits_default(&e->lim);
	e->timeout_ms = timeout_ms ? timeout_ms : 1000;
	for (char *s = strtok_r(copy, ",", &save); s != NULL;
	    s = strtok_r(NULL, ",", &save)) {
		if (strncmp(s, "http://", 7) != 0 &&
		    strncmp(s, "https://", 8) != 0) {
			snprintf(err, errlen, "%s: not an http:// or https:// "
			    "URL", s);
			goto fail;
		}
		size_t n = strlen(s);
		while (n > 0 && s[n - 1] == '/')
			s[--n] = '\0';
		char **v = realloc(e->urls, (e->nurls + 1) * sizeof(*v));
		if (v == NULL || (v[e->nurls] = strdup(s)) == NULL) {
			if (v != NULL)
				e->urls = v;
			snprintf(err, errlen, "out of memory");
			goto fail;
		}
		e->urls = v;
		e->nurls++;
	}
	if (e->nurls == 0) {
		snprintf(err, errlen, "no endpoint");
		goto fail;
	}
	e->h = curl_easy_init();
	if (e->h == NULL) {
		snprintf(err, errlen, "cannot create a curl handle");
		goto fail;
	}
	free(copy);
	return e;
fail:
	free(copy);
	etcd_free(e);
	return NULL;
}

void
etcd_free(struct etcd *e)
{
	if (e == NULL)
		return;
	if (e->h != NULL)
		curl_easy_cleanup(e->h);
	for (size_t i = 0; i < ETCD_PARALLEL; i++) {
		if (e->x[i].h != NULL)
			curl_easy_cleanup(e->x[i].h);
		cats_buf_free(&e->x[i].body);
	}
	if (e->m != NULL)
		curl_multi_cleanup(e->m);
	for (size_t i = 0; i < e->nurls; i++)
		free(e->urls[i]);
	free(e->urls);
	cats_buf_free(&e->body);
	free(e);
}

const struct etcd_stats *
etcd_stats(const struct etcd *e)
{
	return &e->st;
}

const char *
etcd_endpoint(const struct etcd *e)
{
	return e->urls[e->cur];
}

/*
 * n bytes of an answer added to body under the cap max: false past it (too_big
 * set) or out of memory, and curl then aborts the transfer.
 */
static bool
body_add(struct cats_buf *body, bool *too_big, size_t max, const char *p,
    size_t n)
{
	if (body->len + n > max) {
		*too_big = true;
		return false;
	}
	return cats_buf_add(body, p, n) == 0;
}

/* The body as it arrives, under the cap (past it the transfer aborts). */
static size_t
on_data(char *p, size_t size, size_t nmemb, void *arg)
{
	struct etcd *e = arg;
	size_t n = size * nmemb;
	return body_add(&e->body, &e->too_big, e->lim.max_body, p, n) ? n : 0;
}

static size_t
on_xdata(char *p, size_t size, size_t nmemb, void *arg)
{
	struct xfer *x = arg;
	size_t n = size * nmemb;
	return body_add(&x->body, &x->too_big, x->e->lim.max_body, p, n) ? n :
	    0;
}

/* The options of every POST to url (the headers hd, the body req). */
static void
set_post(struct etcd *e, CURL *h, const char *url, struct curl_slist *hd,
    const char *req, size_t len)
{
	curl_easy_reset(h);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_POST, 1L);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, req);
	curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)len);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)e->timeout_ms);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)e->timeout_ms);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
}

/* One POST to endpoint i: 0 with the body, or -1 with err (no answer). */
static int
post(struct etcd *e, size_t i, const char *path, const char *req,
    size_t len, char *err, size_t errlen)
{
	char url[4200];
	snprintf(url, sizeof(url), "%s%s", e->urls[i], path);
	CURL *h = e->h;
	struct curl_slist *hd = curl_slist_append(NULL,
	    "Content-Type: application/json");
	set_post(e, h, url, hd, req, len);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, e);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, e->curl_err);
	e->body.len = 0;
	e->too_big = false;
	e->curl_err[0] = '\0';
	CURLcode rc = curl_easy_perform(h);
	curl_slist_free_all(hd);
	long status = 0;
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	if (e->too_big) {
		snprintf(err, errlen, "%s: answer longer than %zu bytes", url,
		    e->lim.max_body);
		return -1;
	}
	if (rc != CURLE_OK) {
		snprintf(err, errlen, "%s: %s", url, e->curl_err[0] ?
		    e->curl_err : curl_easy_strerror(rc));
		return -1;
	}
	/* The gateway answers errors with 4xx/5xx and a JSON body. */
	if (e->body.len == 0) {
		snprintf(err, errlen, "%s: HTTP %ld, no body", url, status);
		return -1;
	}
	e->st.bytes_in += e->body.len;
	return 0;
}

int
etcd_call(struct etcd *e, int kind, json_t *req, struct etcd_resp *r,
    char *err, size_t errlen)
{
	uint64_t t0 = cats_clock_mono_ns();
	char *s = json_dumps(req, JSON_COMPACT);
	int rc = -1;
	if (kind < 0 || kind >= ETCD__N || s == NULL) {
		snprintf(err, errlen, "cannot encode the request");
		goto out;
	}
	size_t len = strlen(s);
	e->st.calls++;
	for (size_t k = 0; k < 2 && k < e->nurls; k++) {
		size_t i = (e->cur + k) % e->nurls;
		e->st.bytes_out += len;
		if (post(e, i, etcd_kind_paths[kind], s, len, err, errlen) < 0)
			continue;
		if (k > 0) {
			e->cur = i;
			e->st.failovers++;
		}
		char perr[256];
		if (etcd_parse(&e->lim, kind, (const char *)e->body.p,
		    e->body.len, r, perr, sizeof(perr)) < 0) {
			snprintf(err, errlen, "%s%s: %s", e->urls[i],
			    etcd_kind_paths[kind], perr);
			break;
		}
		if (r->error)
			e->st.errors++;
		rc = 0;
		break;
	}
	if (rc < 0)
		e->st.failures++;
out:
	free(s);
	e->st.ms += (cats_clock_mono_ns() - t0) / 1000000;
	return rc;
}

/* A watch under way: its messages, one a line, handed to cb as they come. */
struct watch {
	struct etcd *e;
	int (*cb)(void *, const struct etcd_resp *);
	void *arg;
	struct etcd_resp *r;
	bool stopped, bad;
	char *err;
	size_t errlen;
};

static size_t
on_wdata(char *p, size_t size, size_t nmemb, void *arg)
{
	struct watch *w = arg;
	struct etcd *e = w->e;
	size_t n = size * nmemb;
	if (!body_add(&e->body, &e->too_big, e->lim.max_body, p, n))
		return 0;
	e->st.bytes_in += n;
	size_t start = 0;
	for (size_t i = 0; i < e->body.len; i++) {
		if (e->body.p[i] != '\n')
			continue;
		if (i > start) {
			char perr[256];
			if (etcd_parse(&e->lim, ETCD_WATCH, (const char *)
			    e->body.p + start, i - start, w->r, perr,
			    sizeof(perr)) < 0) {
				snprintf(w->err, w->errlen, "%s%s: %s",
				    e->urls[e->cur], etcd_kind_paths[ETCD_WATCH],
				    perr);
				w->bad = true;
				return 0;
			}
			if (w->r->error)
				e->st.errors++;
			if (w->cb(w->arg, w->r) != 0) {
				w->stopped = true;
				return 0;
			}
		}
		start = i + 1;
	}
	memmove(e->body.p, e->body.p + start, e->body.len - start);
	e->body.len -= start;
	return n;
}

int
etcd_watch(struct etcd *e, json_t *req, uint64_t ms,
    int (*cb)(void *, const struct etcd_resp *), void *arg,
    struct etcd_resp *r, char *err, size_t errlen)
{
	uint64_t t0 = cats_clock_mono_ns();
	char url[4200];
	char *s = json_dumps(req, JSON_COMPACT);
	if (s == NULL) {
		snprintf(err, errlen, "cannot encode the request");
		return -1;
	}
	size_t len = strlen(s);
	snprintf(url, sizeof(url), "%s%s", e->urls[e->cur],
	    etcd_kind_paths[ETCD_WATCH]);
	struct curl_slist *hd = curl_slist_append(NULL,
	    "Content-Type: application/json");
	struct watch w = { e, cb, arg, r, false, false, err, errlen };
	set_post(e, e->h, url, hd, s, len);
	curl_easy_setopt(e->h, CURLOPT_TIMEOUT_MS, (long)ms);
	curl_easy_setopt(e->h, CURLOPT_WRITEFUNCTION, on_wdata);
	curl_easy_setopt(e->h, CURLOPT_WRITEDATA, &w);
	curl_easy_setopt(e->h, CURLOPT_ERRORBUFFER, e->curl_err);
	e->body.len = 0;
	e->too_big = false;
	e->curl_err[0] = '\0';
	e->st.calls++;
	e->st.bytes_out += len;
	CURLcode rc = curl_easy_perform(e->h);
	curl_slist_free_all(hd);
	free(s);
	e->st.ms += (cats_clock_mono_ns() - t0) / 1000000;
	if (w.stopped || rc == CURLE_OPERATION_TIMEDOUT)
		return 0;
	if (!w.bad && e->too_big)
		snprintf(err, errlen, "%s: a message longer than %zu bytes",
		    url, e->lim.max_body);
	else if (!w.bad)
		snprintf(err, errlen, "%s: %s", url, rc != CURLE_OK ?
		    (e->curl_err[0] ? e->curl_err : curl_easy_strerror(rc)) :
		    "the stream ended");
	e->st.failures++;
	/* The next endpoint for the next call. */
	if (e->nurls > 1 && !w.bad) {
		e->cur = (e->cur + 1) % e->nurls;
		e->st.failovers++;
	}
	return -1;
}

int
etcd_call_many(struct etcd *e, int kind, json_t **reqs, size_t n,
    struct etcd_resp *rs, char *err, size_t errlen)
{
	int rc = 0;
	if (kind < 0 || kind >= ETCD__N) {
		snprintf(err, errlen, "unknown call kind");
		return -1;
	}
	if (e->m == NULL && (e->m = curl_multi_init()) == NULL) {
		snprintf(err, errlen, "cannot create a curl multi handle");
		return -1;
	}
	char url[4200];
	snprintf(url, sizeof(url), "%s%s", e->urls[e->cur],
	    etcd_kind_paths[kind]);
	struct curl_slist *hd = curl_slist_append(NULL,
	    "Content-Type: application/json");
	for (size_t base = 0; base < n; base += ETCD_PARALLEL) {
		size_t k = n - base < ETCD_PARALLEL ? n - base : ETCD_PARALLEL;
		char *body[ETCD_PARALLEL] = { NULL };
		bool done[ETCD_PARALLEL] = { false };
		uint64_t t0 = cats_clock_mono_ns();
		for (size_t i = 0; i < k; i++) {
			struct xfer *x = &e->x[i];
			x->e = e;
			if (x->h == NULL && (x->h = curl_easy_init()) == NULL)
				continue;
			body[i] = json_dumps(reqs[base + i], JSON_COMPACT);
			if (body[i] == NULL)
				continue;
			size_t len = strlen(body[i]);
			set_post(e, x->h, url, hd, body[i], len);
			curl_easy_setopt(x->h, CURLOPT_WRITEFUNCTION, on_xdata);
			curl_easy_setopt(x->h, CURLOPT_WRITEDATA, x);
			curl_easy_setopt(x->h, CURLOPT_ERRORBUFFER, x->curl_err);
			curl_easy_setopt(x->h, CURLOPT_PRIVATE, x);
			x->body.len = 0;
			x->too_big = false;
			x->curl_err[0] = '\0';
			e->st.calls++;
			e->st.bytes_out += len;
			curl_multi_add_handle(e->m, x->h);
		}
		int running = 1;
		while (running) {
			if (curl_multi_perform(e->m, &running) != CURLM_OK)
				break;
			if (running)
				curl_multi_poll(e->m, NULL, 0, 100, NULL);
		}
		CURLMsg *msg;
		int left;
		while ((msg = curl_multi_info_read(e->m, &left)) != NULL) {
			if (msg->msg != CURLMSG_DONE)
				continue;
			struct xfer *x = NULL;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE,
			    (char **)&x);
			size_t i = (size_t)(x - e->x);
			char perr[256];
			if (msg->data.result == CURLE_OK && !x->too_big &&
			    x->body.len > 0 && etcd_parse(&e->lim, kind,
			    (const char *)x->body.p, x->body.len, &rs[base + i],
			    perr, sizeof(perr)) == 0) {
				e->st.bytes_in += x->body.len;
				if (rs[base + i].error)
					e->st.errors++;
				done[i] = true;
			}
		}
		for (size_t i = 0; i < k; i++) {
			if (e->x[i].h != NULL)
				curl_multi_remove_handle(e->m, e->x[i].h);
			free(body[i]);
		}
		e->st.ms += (cats_clock_mono_ns() - t0) / 1000000;
		/* Whatever got no answer, alone (and on the next endpoint). */
		for (size_t i = 0; i < k; i++)
			if (!done[i] && etcd_call(e, kind, reqs[base + i],
			    &rs[base + i], err, errlen) < 0)
				rc = -1;
	}
	curl_slist_free_all(hd);
	return rc;
}
