/*
 * json.c - CBOR <-> JSON through jansson.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cbor.h>
#include <sodium.h>

#include "rec/json.h"

void
cats_b64url_encode(const uint8_t *p, size_t n, char *out, size_t outlen)
{
	sodium_bin2base64(out, outlen, p, n,
	    sodium_base64_VARIANT_URLSAFE_NO_PADDING);
}

long
cats_b64url_decode(const char *s, size_t n, uint8_t *out, size_t cap)
{
	size_t len = 0;
	if (sodium_base642bin(out, cap, s, n, NULL, &len, NULL,
	    sodium_base64_VARIANT_URLSAFE_NO_PADDING) != 0)
		return -1;
	return (long)len;
}

static json_t *
bytes_json(const uint8_t *p, size_t n)
{
	size_t cap = sodium_base64_ENCODED_LEN(n,
	    sodium_base64_VARIANT_URLSAFE_NO_PADDING);
	char *s = malloc(cap);
	if (s == NULL)
		return NULL;
	cats_b64url_encode(p, n, s, cap);
	json_t *j = json_pack("{s:s}", "$bytes", s);
	free(s);
	return j;
}

/* A map key as an object key: text as is, anything else as its JSON. */
static char *
key_text(const struct cats_tok *t, size_t i)
{
	if (t[i].kind == CATS_TK_TEXT)
		return strndup((const char *)t[i].v.p, t[i].n);
	json_t *j = cats_toks_to_json(t, i);
	char *s = j ? json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	json_decref(j);
	return s;
}

json_t *
cats_toks_to_json(const struct cats_tok *t, size_t i)
{
	const struct cats_tok *k = &t[i];
	switch (k->kind) {
	case CATS_TK_UINT:
		if (k->v.u > (uint64_t)INT64_MAX)
			return json_real((double)k->v.u);
		return json_integer((json_int_t)k->v.u);
	case CATS_TK_NINT:
		if (k->v.u > (uint64_t)INT64_MAX)
			return json_real(-1.0 - (double)k->v.u);
		return json_integer(-1 - (json_int_t)k->v.u);
	case CATS_TK_BYTES:
		return bytes_json(k->v.p, k->n);
	case CATS_TK_TEXT:
		return json_stringn((const char *)k->v.p, k->n);
	case CATS_TK_ARRAY: {
		json_t *a = json_array();
		size_t j = i + 1;
		for (uint32_t n = 0; a && n < k->n; n++) {
			if (json_array_append_new(a, cats_toks_to_json(t, j)) < 0) {
				json_decref(a);
				return NULL;
			}
			j = t[j].next;
		}
		return a;
	}
	case CATS_TK_MAP: {
		json_t *o = json_object();
		size_t j = i + 1;
		for (uint32_t n = 0; o && n < k->n; n++) {
			size_t v = t[j].next;
			char *key = key_text(t, j);
			if (key == NULL || json_object_set_new(o, key,
			    cats_toks_to_json(t, v)) < 0) {
				free(key);
				json_decref(o);
				return NULL;
			}
			free(key);
			j = t[v].next;
		}
		return o;
	}
	case CATS_TK_TAG:
		return json_pack("{s:I,s:o}", "$tag", (json_int_t)(k->v.u &
		    INT64_MAX), "value", cats_toks_to_json(t, i + 1));
	case CATS_TK_FALSE:
		return json_false();
	case CATS_TK_TRUE:
		return json_true();
	case CATS_TK_NULL:
	case CATS_TK_UNDEF:
		return json_null();
	case CATS_TK_FLOAT:
		if (k->v.f != k->v.f || k->v.f == __builtin_inf() ||
		    k->v.f == -__builtin_inf())
			return json_null();
		return json_real(k->v.f);
	default:
		return json_pack("{s:I}", "$simple", (json_int_t)k->v.u);
	}
}

#define HEAD 9

static int
head(struct cats_buf *b, size_t (*fn)(size_t, unsigned char *, size_t),
    size_t n)
{
	if (cats_buf_reserve(b, HEAD) < 0)
		return -1;
	b->len += fn(n, b->p + b->len, HEAD);
	return 0;
}

static int
text(struct cats_buf *b, const char *s, size_t n)
{
	if (head(b, cbor_encode_string_start, n) < 0)
		return -1;
	return cats_buf_add(b, s, n);
}

int
cats_json_to_cbor(const json_t *j, struct cats_buf *out, struct cats_err *err)
{
	if (cats_buf_reserve(out, HEAD) < 0)
		return cats_err_set(err, "", "out of memory");
	uint8_t *p = out->p + out->len;
	switch (json_typeof(j)) {
	case JSON_NULL:
		out->len += cbor_encode_null(p, HEAD);
		return 0;
	case JSON_TRUE:
	case JSON_FALSE:
		out->len += cbor_encode_bool(json_is_true(j), p, HEAD);
		return 0;
	case JSON_INTEGER: {
		json_int_t v = json_integer_value(j);
		if (v >= 0)
			out->len += cbor_encode_uint((uint64_t)v, p, HEAD);
		else
			out->len += cbor_encode_negint((uint64_t)(-1 - v), p,
			    HEAD);
		return 0;
	}
	case JSON_REAL:
		out->len += cbor_encode_double(json_real_value(j), p, HEAD);
		return 0;
	case JSON_STRING:
		return text(out, json_string_value(j), json_string_length(j));
	case JSON_ARRAY: {
		size_t i;
		json_t *v;
		if (head(out, cbor_encode_array_start, json_array_size(j)) < 0)
			return cats_err_set(err, "", "out of memory");
		json_array_foreach(j, i, v)
			if (cats_json_to_cbor(v, out, err) < 0)
				return -1;
		return 0;
	}
	case JSON_OBJECT: {
		json_t *b64 = json_object_get(j, "$bytes");
		if (b64 != NULL && json_object_size(j) == 1) {
			if (!json_is_string(b64))
				return cats_err_set(err, "$bytes",
				    "expected base64url text");
			size_t n = json_string_length(b64);
			uint8_t *bin = malloc(n + 1);
			long len = bin ? cats_b64url_decode(json_string_value(b64),
			    n, bin, n + 1) : -1;
			if (len < 0) {
				free(bin);
				return cats_err_set(err, "$bytes",
				    "not base64url without padding");
			}
			int r = head(out, cbor_encode_bytestring_start,
			    (size_t)len);
			if (r == 0)
				r = cats_buf_add(out, bin, (size_t)len);
			free(bin);
			return r;
		}
		json_t *tag = json_object_get(j, "$tag");
		if (tag != NULL && json_object_size(j) == 2 &&
		    json_object_get(j, "value") != NULL) {
			if (!json_is_integer(tag) || json_integer_value(tag) < 0)
				return cats_err_set(err, "$tag",
				    "expected a tag number");
			if (cats_buf_reserve(out, HEAD) < 0)
				return -1;
			out->len += cbor_encode_tag(
			    (uint64_t)json_integer_value(tag), out->p + out->len,
			    HEAD);
			return cats_json_to_cbor(json_object_get(j, "value"),
			    out, err);
		}
		json_t *simple = json_object_get(j, "$simple");
		if (simple != NULL && json_object_size(j) == 1) {
			json_int_t v = json_integer_value(simple);
			if (!json_is_integer(simple) || v < 0 || v > 255 ||
			    (v >= 20 && v < 32))
				return cats_err_set(err, "$simple",
				    "expected 0..19 or 32..255");
			if (cats_buf_reserve(out, 2) < 0)
				return -1;
			out->len += cbor_encode_ctrl((uint8_t)v, out->p +
			    out->len, 2);
			return 0;
		}
		const char *k;
		json_t *v;
		if (head(out, cbor_encode_map_start, json_object_size(j)) < 0)
			return cats_err_set(err, "", "out of memory");
		json_object_foreach((json_t *)j, k, v) {
			if (text(out, k, strlen(k)) < 0 ||
			    cats_json_to_cbor(v, out, err) < 0)
				return -1;
		}
		return 0;
	}
	}
	return cats_err_set(err, "", "unknown JSON value");
}

json_t *
cats_rec_to_json(const struct cats_rec *r)
{
	struct cats_buf b = { 0 };
	struct cats_toks t = { 0 };
	struct cats_err e;
	size_t used;
	json_t *j = NULL;
	struct cats_limits lim = cats_limits_default;
	lim.max_record = SIZE_MAX / 4;
	lim.max_tokens = 1u << 20;
	lim.max_count = 1u << 20;
	if (cats_rec_encode(r, &b, true) == 0 &&
	    cats_scan(b.p, b.len, true, &lim, &t, NULL, &used, NULL, &e) ==
	    CATS_SCAN_OK)
		j = cats_toks_to_json(t.t, 0);
	cats_toks_free(&t);
	cats_buf_free(&b);
	return j;
}

int
cats_rec_from_json(struct cats_dec *d, const json_t *j, struct cats_rec *r,
    struct cats_err *err)
{
	cats_buf_reset(&d->scratch);
	if (cats_json_to_cbor(j, &d->scratch, err) < 0)
		return -1;
	return cats_rec_decode(d, d->scratch.p, d->scratch.len, r, err);
}

int
cats_rec_print_json(const struct cats_rec *r, FILE *f)
{
	json_t *j = cats_rec_to_json(r);
	if (j == NULL)
		return -1;
	int rc = json_dumpf(j, f, JSON_COMPACT);
	json_decref(j);
	if (rc == 0 && fputc('\n', f) == EOF)
		rc = -1;
	return rc;
}
