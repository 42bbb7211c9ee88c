# cats - Computing-Aware Traffic Steering toolkit.
#
#   make                build everything (build/)
#   make check          install missing Debian packages, build, run every test
#   make SAN=1 check    the same with ASan + UBSan (build-san/)
#   make fuzz           libFuzzer targets with clang, each run FUZZ_SECONDS
#   make bench          benchmarks, ratios against their baselines
#   make demo           the whole loop in network namespaces
#   make install PREFIX=/usr/local DESTDIR=
#   make deb            the Debian package (debian/) in build/deb/
#   make deps           install the Debian 12 packages the build and tests need
#
# Sources are found by name: lib/FOLDER/*.c is libcats (one folder per
# stage of the loop and per layer of the foundation, see HACKING.md),
# cmd/cats-*.c one tool each, tests/unit/test_*.c one unit test each,
# tests/tools/*.c test helpers, fuzz/fuzz_*.c one fuzz target each,
# bench/bench_*.c one benchmark each, bench/lib/*.c code only benchmarks and
# tests link (libcats-bench.a).

PREFIX ?= /usr/local
DESTDIR ?=
BINDIR = $(PREFIX)/bin
MANDIR = $(PREFIX)/share/man
FUZZ_SECONDS ?= 20

# The one list of Debian packages the build, the tests, the fuzzers, the
# benchmarks and the demo need.
DEB_PACKAGES = build-essential pkg-config clang lld llvm libclang-rt-14-dev \
	libcbor-dev libsodium-dev libevent-dev libcurl4-openssl-dev \
	libjansson-dev libssl-dev zlib1g-dev libigraph-dev bats jq curl iproute2 procps psmisc \
	python3 python3-scapy tshark tcpdump socat nftables iperf3 \
	netsniff-ng valgrind kmod openssl libbpf-dev ethtool frr \
	libmosquitto-dev mosquitto prometheus debhelper devscripts lintian \
	dpkg-dev fakeroot gnuplot-nox etcd-server etcd-client \
	qemu-system-x86 busybox-static conntrack

# The builds inside check, fuzz, bench and demo use every core (JOBS=1: one).
JOBS ?= $(shell nproc 2>/dev/null || echo 2)

CC ?= cc
ifeq ($(SAN),1)
BUILD ?= build-san
SANFLAGS = -fsanitize=address,undefined -fno-sanitize-recover=undefined \
	-fno-omit-frame-pointer
OPT = -O1 -g
else
BUILD ?= build
SANFLAGS =
OPT = -O2 -g
endif

PKGS = libcbor libsodium libevent libevent_openssl openssl libcurl jansson \
	libbpf libmosquitto zlib
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
ifeq ($(PKG_LIBS),)
PKG_LIBS = -lcbor -lsodium -levent -levent_openssl -lssl -lcrypto -lcurl \
	-ljansson -lbpf -lmosquitto -lz
endif

WARN = -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	-Wno-unused-parameter
CFLAGS ?= $(OPT)
ALL_CFLAGS = -std=c11 -D_GNU_SOURCE -D_FORTIFY_SOURCE=2 $(WARN) $(CFLAGS) \
	$(SANFLAGS) -Ilib -Ibench/lib $(PKG_CFLAGS) -MMD -MP
LDLIBS = $(PKG_LIBS) -lm
ALL_LDFLAGS = $(LDFLAGS) $(SANFLAGS)

LIB_SRC := $(sort $(wildcard lib/*/*.c))
BLIB_SRC := $(sort $(wildcard bench/lib/*.c))
CMD_SRC := $(sort $(wildcard cmd/cats-*.c))
UNIT_SRC := $(sort $(wildcard tests/unit/test_*.c))
TOOL_SRC := $(sort $(wildcard tests/tools/*.c))
BENCH_SRC := $(sort $(wildcard bench/bench_*.c))
FUZZ_SRC := $(sort $(wildcard fuzz/fuzz_*.c))

LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o) $(BUILD)/lib/fwd/fwd_fast_obj.o
LIBCATS := $(BUILD)/libcats.a
BLIB_OBJ := $(BLIB_SRC:%.c=$(BUILD)/%.o)
LIBBENCH := $(BUILD)/libcats-bench.a
BINS := $(CMD_SRC:cmd/%.c=$(BUILD)/bin/%)
UNITS := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
TOOLS := $(TOOL_SRC:tests/tools/%.c=$(BUILD)/tests/tools/%)
BENCHES := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)
MANPAGES := $(sort $(wildcard man/*.[1-8]))

.PHONY: all bins check check-unit check-bats deps install uninstall clean fuzz \
	fuzz-build bench demo deb
.DEFAULT_GOAL := all
.SECONDARY:

all: $(BINS) $(UNITS) $(TOOLS)

bins: $(BINS)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

# The --help of each tool is made from its page's SYNOPSIS and OPTIONS
# (man/help.awk), so that the two cannot drift.
CMD_OBJ := $(CMD_SRC:cmd/%.c=$(BUILD)/cmd/%.o)
HELPS := $(CMD_SRC:cmd/%.c=$(BUILD)/gen/%.help.h)
$(HELPS): $(BUILD)/gen/%.help.h: man/%.1 man/help.awk
	@mkdir -p $(dir $@)
	awk -f man/help.awk $< >$@.tmp && mv $@.tmp $@
$(CMD_OBJ): $(BUILD)/cmd/%.o: cmd/%.c $(BUILD)/gen/%.help.h
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -I$(BUILD)/gen -c -o $@ $<

# The fast path of cats-fwd: a BPF object (always built with clang), then
# embedded in libcats by fwd_fast_obj.S.
BPF_CFLAGS = -O2 -g -target bpf -Wall -Werror \
	-I/usr/include/$(shell gcc -print-multiarch 2>/dev/null)
$(BUILD)/bpf/fwd_fast.o: lib/fwd/bpf/fwd_fast.c lib/fwd/fwd_fast.h
	@mkdir -p $(dir $@)
	clang $(BPF_CFLAGS) -c -o $@ $<
$(BUILD)/lib/fwd/fwd_fast_obj.o: lib/fwd/fwd_fast_obj.S $(BUILD)/bpf/fwd_fast.o
	@mkdir -p $(dir $@)
	$(CC) -DCATS_FP_OBJ='"$(BUILD)/bpf/fwd_fast.o"' -c -o $@ $<

$(LIBCATS): $(LIB_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^

$(LIBBENCH): $(BLIB_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^

$(BUILD)/bin/%: $(BUILD)/cmd/%.o $(LIBCATS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(LIBCATS) $(LDLIBS)

$(BUILD)/tests/%: $(BUILD)/tests/unit/%.o $(LIBBENCH) $(LIBCATS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(LIBBENCH) $(LIBCATS) $(LDLIBS)

$(BUILD)/tests/tools/%: $(BUILD)/tests/tools/%.o $(LIBBENCH) $(LIBCATS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(LIBBENCH) $(LIBCATS) $(LDLIBS)

# Benchmarks may use igraph (the PCE baseline).
BENCH_LIBS = $(shell pkg-config --libs igraph 2>/dev/null)
BENCH_CFLAGS = $(shell pkg-config --cflags igraph 2>/dev/null)
$(BUILD)/bench/%.o: bench/%.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(BENCH_CFLAGS) -c -o $@ $<
$(BUILD)/bench/%: $(BUILD)/bench/%.o $(LIBBENCH) $(LIBCATS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(LIBBENCH) $(LIBCATS) $(LDLIBS) $(BENCH_LIBS)

# Install what is missing; a no-op when everything is there.
deps:
	@sh tests/deps.sh $(DEB_PACKAGES)

check: deps
	@$(MAKE) --no-print-directory -j$(JOBS) all
	@BUILD=$(BUILD) sh tests/run.sh

check-unit: deps
	@$(MAKE) --no-print-directory -j$(JOBS) all
	@BUILD=$(BUILD) UNIT_ONLY=1 sh tests/run.sh

# libFuzzer targets are built with clang, ASan and UBSan, in build-fuzz/.
FUZZ_BUILD = build-fuzz
FUZZ_FLAGS = -std=c11 -D_GNU_SOURCE -g -O1 -Ilib -Ibench/lib $(PKG_CFLAGS) \
	-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer \
	-MMD -MP
FUZZ_LIB_OBJ := $(LIB_SRC:%.c=$(FUZZ_BUILD)/%.o)
FUZZERS := $(FUZZ_SRC:fuzz/%.c=$(FUZZ_BUILD)/%)
$(FUZZ_BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	clang $(FUZZ_FLAGS) -c -o $@ $<
$(FUZZ_BUILD)/libcats.a: $(FUZZ_LIB_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^
$(FUZZ_BUILD)/fuzz_%: $(FUZZ_BUILD)/fuzz/fuzz_%.o $(FUZZ_BUILD)/libcats.a
	clang -fsanitize=fuzzer,address,undefined -o $@ $^ $(LDLIBS)
fuzz-build: deps
	@$(MAKE) --no-print-directory -j$(JOBS) $(FUZZERS)
fuzz: fuzz-build
	@FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_BUILD=$(FUZZ_BUILD) sh fuzz/run.sh

bench: deps
	@$(MAKE) --no-print-directory -j$(JOBS) all $(BENCHES)
	@BUILD=$(BUILD) sh bench/run.sh

demo: deps
	@$(MAKE) --no-print-directory -j$(JOBS) all
	@BUILD=$(BUILD) bash examples/demo/demo.sh

install: $(BINS)
	install -d $(DESTDIR)$(BINDIR)
	install -m 0755 $(BINS) $(DESTDIR)$(BINDIR)/
	@for m in $(MANPAGES); do \
		s=$${m##*.}; \
		install -d $(DESTDIR)$(MANDIR)/man$$s; \
		echo install -m 0644 $$m $(DESTDIR)$(MANDIR)/man$$s/; \
		install -m 0644 $$m $(DESTDIR)$(MANDIR)/man$$s/; \
	done

uninstall:
	rm -f $(BINS:$(BUILD)/bin/%=$(DESTDIR)$(BINDIR)/%)
	@for m in $(MANPAGES); do \
		s=$${m##*.}; rm -f $(DESTDIR)$(MANDIR)/man$$s/$${m##*/}; \
	done

# The Debian package: dpkg-buildpackage in a copy of the tree (no build
# directories, no .git) under $(BUILD)/deb/src, so that what it writes in
# the tree and beside it (the .deb, .changes, .buildinfo) stays out of the
# working tree; they are left in $(BUILD)/deb/.  DEB_BUILD_OPTIONS
# (nocheck, parallel=N) is dpkg-buildpackage's.
DEB_OUT = $(BUILD)/deb
deb: deps
	rm -rf $(DEB_OUT) && mkdir -p $(DEB_OUT)/src
	tar -cf - --exclude=./.git --exclude=./build --exclude='./build-*' \
		--exclude=./$(BUILD) . | tar -C $(DEB_OUT)/src -xf -
	cd $(DEB_OUT)/src && dpkg-buildpackage -us -uc -b >../build.log 2>&1 || \
		{ tail -40 ../build.log >&2; echo "deb: dpkg-buildpackage failed (all of it in $(DEB_OUT)/build.log)" >&2; exit 1; }
	rm -rf $(DEB_OUT)/src
	@ls $(DEB_OUT)/*.deb $(DEB_OUT)/*.changes

clean:
	rm -rf build build-san build-fuzz

-include $(LIB_OBJ:.o=.d) $(BLIB_OBJ:.o=.d) $(CMD_SRC:%.c=$(BUILD)/%.d) \
	$(UNIT_SRC:%.c=$(BUILD)/%.d) $(TOOL_SRC:%.c=$(BUILD)/%.d) \
	$(FUZZ_LIB_OBJ:.o=.d) $(FUZZ_SRC:%.c=$(FUZZ_BUILD)/%.d)
