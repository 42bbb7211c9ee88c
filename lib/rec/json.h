/*
 * json.h - the JSON face of CBOR records (jansson).
 *
 * Mapping (cats-records(5)): maps with text keys are objects, arrays are
 * arrays, text is text, integers and floats are numbers, true/false/null as
 * is, a byte string is {"$bytes": "<base64url, no padding>"}, a tag is
 * {"$tag": N, "value": X}, other simple values are {"$simple": N}, undefined
 * is null, a non-text map key is written as its JSON text.  Integers beyond
 * 2^63-1 become floats; records keep their integers below 2^53 so that jq
 * holds them exactly.
 */
#ifndef CATS_JSON_H
#define CATS_JSON_H

#include <jansson.h>

#include "rec/rec.h"

/* The item at tokens[i] as JSON; NULL on allocation failure. */
json_t *cats_toks_to_json(const struct cats_tok *t, size_t i);

/* Append the CBOR encoding of j to out; -1 with err on a bad $-object. */
int cats_json_to_cbor(const json_t *j, struct cats_buf *out,
    struct cats_err *err);

/* A decoded or built record as JSON (fields in schema order). */
json_t *cats_rec_to_json(const struct cats_rec *r);

/*
 * A record from JSON, through the one CBOR decoder so that JSON input gets
 * exactly the validation CBOR input gets.  The record lives in d.
 */
int cats_rec_from_json(struct cats_dec *d, const json_t *j,
    struct cats_rec *r, struct cats_err *err);

/* Write a record as one JSON line to f. */
int cats_rec_print_json(const struct cats_rec *r, FILE *f);

/* base64url without padding; out must hold 4*((n+2)/3)+1 bytes. */
void cats_b64url_encode(const uint8_t *p, size_t n, char *out, size_t outlen);
/* Returns the decoded length, or -1. */
long cats_b64url_decode(const char *s, size_t n, uint8_t *out, size_t cap);

#endif
