/*
 * schema.h - the record schema (rec.h) as text, as `cats-cbor schema`
 * prints it and man/records.sh turns it into cats-records(5): a line per
 * record type or nested map ("record NAME: doc", "map NAME: doc"), then a
 * line per field: name, kind, required or optional, the range or the
 * largest length, the unit, the nested map, the enum values, the doc.
 */
#ifndef CATS_SCHEMA_H
#define CATS_SCHEMA_H

#include <stdio.h>

/*
 * Every record type and then every nested map, or only the one named
 * name (NULL: all), to f: 0, or -1 if no type or map has that name
 * (nothing written).
 */
int cats_schema_print(FILE *f, const char *name);

#endif
