/*
 * opt.h - option values of the tools' command lines: parse or exit.
 *
 * Contract: each parser returns the value of option opt given as v, or
 * prints one line "tool: OPT: reason" (cats_errorx; OPT exactly as passed,
 * e.g. "--gas") and exits with CATS_EXIT_USAGE (2).  The reasons are those
 * of the conf.h value parsers, so a value reads the same on the command
 * line and in a configuration file: "expected a number, got \"x\"",
 * "5 is out of range 1..4", "expected a duration (500ms, 2s, 5m, 1h), got
 * ...", "size ... is too large", "expected yes or no, got ...".
 * For mains only: library code returns errors instead of exiting.
 */
#ifndef CATS_OPT_H
#define CATS_OPT_H

#include <stdbool.h>
#include <stdint.h>

struct cats_key;
struct cats_keyring;

/* A decimal integer in min..max (both included). */
uint64_t cats_opt_u64(const char *opt, const char *v, uint64_t min,
    uint64_t max);
/* A duration in milliseconds, conf.h syntax ("250ms", "2s"; bare: ms). */
uint64_t cats_opt_ms(const char *opt, const char *v);
/* A size in bytes, conf.h syntax ("512", "64k", "16M", "1G"). */
uint64_t cats_opt_size(const char *opt, const char *v);
/* A boolean: yes/no, true/false, on/off, 1/0. */
bool cats_opt_bool(const char *opt, const char *v);
/*
 * Refuse option opt with a reason of the caller's (a check the parsers
 * above do not make, e.g. "must be positive"): "tool: OPT: reason", exit 2.
 */
void cats_opt_fail(const char *opt, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));
/*
 * Refuse the command line as a whole (a missing operand, an unknown
 * command, options that exclude each other): "tool: reason", exit 2.
 * Never a bare usage: the line says what was wrong.
 */
void cats_usage_fail(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));
/*
 * What getopt_long returned for an option it refused (ch is '?' or ':';
 * the optstring begins with ':' so that a missing value is ':'), said in
 * one line: "tool: --frob: unknown option", "tool: -k: needs a value",
 * "tool: --dump=x: takes no value"; exit 2.  The default case of every
 * tool's option switch.
 */
void cats_opt_refused(int ch, char *const argv[])
    __attribute__((noreturn));
/*
 * The default case of every tool's option switch, for the options all
 * tools take alike (cats(7)): -h/--help (usage, the tool's usage_text, and
 * exit 0), -v/--verbose (one more in *verbosity; NULL: a tool without -v),
 * -V/--version (exit 0 after the version), the TLS options of
 * CATS_TLS_LONGOPTS (net/tls.h: taken, and the case returns); anything else
 * is refused as cats_opt_refused() says (exit 2).
 */
void cats_opt_common(int ch, char *const argv[], const char *usage,
    int *verbosity);
/* After the options of a tool that takes no operands: the first refused. */
void cats_opt_no_operands(int argc, char *const argv[]);
/*
 * After the options of a tool that takes a command (cats-cbor, cats-key):
 * the command (argv[optind]), *argc and *argv left at it; none is "needs a
 * command: LIST" (exit 2).
 */
const char *cats_opt_command(int *argc, char ***argv, const char *list);

/*
 * The key file given as option opt (or a configuration key such as
 * "[northbound] key"), one key of kind (-1: any kind but a public key, which
 * cannot sign), into *k; refused, "tool: OPT: FILE: reason" and exit
 * CATS_EXIT_NOPERM (77).
 */
void cats_opt_key(const char *opt, const char *path, int kind,
    struct cats_key *k);
/*
 * The keyring file given as option opt, appended to *kr; unreadable, bad or
 * holding no key (cats_keyring_load's reasons), "tool: OPT: FILE: reason" and exit CATS_EXIT_NOPERM (77).
 */
void cats_opt_keyring(const char *opt, const char *path,
    struct cats_keyring *kr);

#endif
