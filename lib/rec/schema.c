/*
 * schema.c - the record schema as text (see schema.h).
 */
#include <inttypes.h>
#include <stdbool.h>
#include <string.h>

#include "base/cats.h"
#include "rec/rec.h"
#include "rec/schema.h"

static const char *
kind_text(const struct cats_field *f)
{
	switch (f->kind) {
	case CATS_F_U64: return "uint";
	case CATS_F_BOOL: return "bool";
	case CATS_F_TEXT: return "text";
	case CATS_F_BYTES: return "bytes";
	case CATS_F_ENUM: return "enum";
	case CATS_F_ADDR: return "address";
	case CATS_F_MAP: return "map";
	case CATS_F_ARR_U64: return "[uint]";
	case CATS_F_ARR_TEXT: return "[text]";
	case CATS_F_ARR_ADDR: return "[address]";
	case CATS_F_ARR_MAP: return "[map]";
	default: return "{text:uint}";
	}
}

static void
print_one(FILE *f, const struct cats_schema *s, bool top)
{
	fprintf(f, "%s %s: %s\n", top ? "record" : "map", s->name, s->doc);
	for (size_t i = 0; i < s->nfields; i++) {
		const struct cats_field *fd = &s->fields[i];
		fprintf(f, "  %-15s %-11s %s", fd->name, kind_text(fd),
		    fd->required ? "required" : "optional");
		if (fd->kind == CATS_F_U64)
			fprintf(f, " %" PRIu64 "..%" PRIu64, fd->min, fd->max);
		else if (fd->kind == CATS_F_TEXT || fd->kind == CATS_F_BYTES ||
		    fd->kind >= CATS_F_ARR_U64)
			fprintf(f, " max %" PRIu64, fd->max);
		if (fd->unit && fd->unit[0])
			fprintf(f, " %s", fd->unit);
		if (fd->sub)
			fprintf(f, " (%s)", fd->sub->name);
		if (fd->enums) {
			fprintf(f, " (");
			for (size_t k = 0; fd->enums[k]; k++)
				fprintf(f, "%s%s", k ? "|" : "", fd->enums[k]);
			fprintf(f, ")");
		}
		fprintf(f, " - %s\n", fd->doc);
	}
}

int
cats_schema_print(FILE *f, const char *name)
{
	static const struct cats_schema *const maps[] = {
		&cats_schema_address, &cats_schema_bind_fwd,
		&cats_schema_bind_rev, &cats_schema_constraints,
		&cats_schema_decision, &cats_schema_entry, &cats_schema_flow,
		&cats_schema_segment, &cats_schema_site,
	};
	bool found = false;
	for (int t = 0; t < CATS_T__N; t++) {
		const struct cats_schema *s = cats_type_schema(t);
		if (name == NULL || strcmp(name, s->name) == 0) {
			print_one(f, s, true);
			found = true;
		}
	}
	for (size_t i = 0; i < CATS_ARRAY_LEN(maps); i++) {
		if (name == NULL || strcmp(name, maps[i]->name) == 0) {
			print_one(f, maps[i], false);
			found = true;
		}
	}
	return found ? 0 : -1;
}
