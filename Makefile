# SPDX-License-Identifier: BSD-3-Clause
# ringcast — one Makefile for everything. Every dependency comes from pkg-config.
#   make            build library, tools and tests
#   make test       install missing packages, build, run every test (also under sanitizers, and fuzz)
#   make run        install missing packages, build, run the daemon on the simulated card
#   make bench      run the benchmarks
#   make install PREFIX=/usr/local DESTDIR=   (LIBDIR=$(PREFIX)/lib, INCLUDEDIR=$(PREFIX)/include)
#   make CC=clang   build with clang
# make's built-in default CC is "cc": `CC ?= gcc` would never apply.
ifeq ($(origin CC),default)
CC       := gcc
endif
PREFIX   ?= /usr/local
DESTDIR  ?=
LIBDIR   ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
DOCDIR   ?= $(PREFIX)/share/doc/ringcast
DATADIR  ?= $(PREFIX)/share
UNITDIR  ?= $(PREFIX)/lib/systemd/system
BUILD    ?= build
NPROC    := $(shell nproc 2>/dev/null || echo 2)
VERSION  := $(shell cat VERSION 2>/dev/null || echo 0.0.0)
SOVERSION := $(firstword $(subst ., ,$(VERSION)))

PKGS      := libfabric libdpdk liburcu-memb liburcu-cds inih libcurl jansson numa libmicrohttpd libsystemd
TEST_PKGS := cunit

# DPDK's pkg-config flags pull in -march=corei7 and many warnings-as-errors
# unfriendly defines; keep our own warning set strict.
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
TEST_CFLAGS := $(shell pkg-config --cflags $(TEST_PKGS) 2>/dev/null)
TEST_LIBS   := $(shell pkg-config --libs $(TEST_PKGS) 2>/dev/null)

OPT      ?= -O2 -g
CFLAGS   ?= $(OPT)
WARN     := -Wall -Wextra -Werror -Wno-missing-field-initializers
CPPFLAGS += -I. -Iinclude -DRCI_VERSION=\"$(VERSION)\" -D_GNU_SOURCE
ALL_CFLAGS = -std=gnu11 $(WARN) -fPIC $(VISIBILITY) $(CPPFLAGS) $(PKG_CFLAGS) $(CFLAGS) $(EXTRA_CFLAGS)
LDLIBS   += $(PKG_LIBS) -lpthread -lm

LIB_SRC   := $(wildcard common/*.c config/*.c dma/*.c readout/*.c readout/sim/*.c net/*.c pipeline/*.c api/*.c)
LIB_OBJ   := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
# The client library: subscriber and client publisher (include/ringcast/sub.h,
# pub.h) need net/, dma/ (the RMA receive ring of net/sub_rma.c) and the public
# wrappers api/client_*.c. It links libfabric
# liburcu-cds (the lock-free stacks of net/mem_pool.c and net/mr_cache.c) and,
# for discovery (net/discovery*.c: a client finds its publishers in etcd or a
# directory), libcurl and jansson; no DPDK, no inih. A block-stream subscriber
# (api/client_stream.c) decodes with the daemon's decoder: readout/'s decoder
# files come along (they need liburcu-cds only; the card code never runs).
CLIENT_READOUT := readout/readout.c readout/decoder.c readout/block_parse.c readout/chunk_pool.c \
                  readout/readout_thread.c readout/wupper_dma.c readout/card_bar.c
CLIENT_SRC := $(filter-out common/control_proto.c common/prom_text.c,$(wildcard common/*.c dma/*.c net/*.c api/client_*.c)) readout/sim/pattern.c $(CLIENT_READOUT)
CLIENT_OBJ := $(CLIENT_SRC:%.c=$(BUILD)/obj/%.o)
CLIENT_LIBS := $(shell pkg-config --libs libfabric liburcu-cds libcurl jansson numa 2>/dev/null)
API_HEADERS := $(wildcard include/ringcast/*.h)
TOOL_MAIN := $(wildcard tools/ringcast-*.c)
TOOL_AUX  := $(filter-out $(TOOL_MAIN),$(wildcard tools/*.c))
TOOL_AUX_OBJ := $(TOOL_AUX:%.c=$(BUILD)/obj/%.o)
TOOL_AUX_LIB := $(BUILD)/obj/tools/libringcast-tools.a
TOOLS     := $(TOOL_MAIN:tools/%.c=$(BUILD)/bin/%)
TEST_SRC  := $(wildcard tests/unit/test_*.c)
TEST_AUX  := $(filter-out $(TEST_SRC),$(wildcard tests/unit/*.c))
TEST_AUX_OBJ := $(TEST_AUX:%.c=$(BUILD)/obj/%.o)
TESTS     := $(TEST_SRC:tests/unit/%.c=$(BUILD)/tests/%)
# Helper programs of the integration tests (misbehaving peers): not installed.
IT_SRC    := $(wildcard tests/integration/*.c)
IT_PROGS  := $(IT_SRC:tests/integration/%.c=$(BUILD)/tests/integration/%)
STATIC_LIB := $(BUILD)/lib/libringcast.a
# Versioned shared libraries (SONAME lib*.so.$(SOVERSION)), built with
# -fvisibility=hidden: only functions declared RC_API in include/ringcast/ are
# exported. Our tools and tests link the static library, where the internal
# symbols stay reachable.
SHARED_LIB := $(BUILD)/lib/libringcast.so.$(VERSION)
CLIENT_LIB := $(BUILD)/lib/libringcast-client.so.$(VERSION)
# A shared library must name every library it needs (sanitizer builds clear
# this: their runtime is linked into the programs only).
SO_LDFLAGS ?= -Wl,--no-undefined -Wl,--as-needed
# LD_PRELOAD allocation counter for ringcast-bench (not part of the library).
ALLOC_SHIM := $(BUILD)/lib/librc_alloc_count.so

.PHONY: all programs deps test unit-test integration-test run bench soak install clean config-example check-example check-clang deb deb-test
all: programs $(TESTS) $(IT_PROGS) $(ALLOC_SHIM)
# What is installed: the libraries and the programs (not the tests).
programs: $(STATIC_LIB) $(SHARED_LIB) $(CLIENT_LIB) $(TOOLS)

deps:
	@./deploy/install-deps.sh

# Objects of tools and tests are built through pattern rules; without this make
# would delete them as intermediate files and rebuild them every time.
.SECONDARY:

# Objects depend on the compiler and flags they were built with: a change
# (CC=clang, OPT=-O0, EXTRA_CFLAGS=...) rebuilds them instead of linking
# stale objects. The stamp is rewritten only when the line differs.
FLAGS_LINE := $(CC) $(ALL_CFLAGS) $(TEST_CFLAGS) $(LDFLAGS) $(LDLIBS)
$(shell mkdir -p $(BUILD) && { [ -f $(BUILD)/flags ] && [ "$$(cat $(BUILD)/flags)" = '$(subst ','\'',$(FLAGS_LINE))' ] || printf '%s\n' '$(subst ','\'',$(FLAGS_LINE))' > $(BUILD)/flags; })

$(BUILD)/obj/%.o: %.c $(BUILD)/flags
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/obj/tests/%.o: tests/%.c $(BUILD)/flags
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(TEST_CFLAGS) -MMD -MP -c $< -o $@

$(LIB_OBJ): VISIBILITY := -fvisibility=hidden

# include/ringcast/version.h's numbers must be the VERSION file's.
$(BUILD)/obj/api/client_version.o: $(BUILD)/version-checked
$(BUILD)/version-checked: VERSION include/ringcast/version.h
	@mkdir -p $(dir $@)
	@v=$$(sed -n 's/^#define RINGCAST_VERSION_\(MAJOR\|MINOR\|PATCH\) *\([0-9][0-9]*\)$$/\2/p' \
	  include/ringcast/version.h | paste -sd.); [ "$$v" = "$(VERSION)" ] || \
	  { echo "include/ringcast/version.h says '$$v' but VERSION says '$(VERSION)'"; exit 1; }
	@touch $@

$(STATIC_LIB): $(LIB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

# so_link NAME,LIBS: link $@ from $^ with SONAME NAME.so.$(SOVERSION) and the
# symlinks NAME.so.$(SOVERSION) and NAME.so next to it.
define so_link
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,-soname,$(1).so.$(SOVERSION) $(SO_LDFLAGS) -o $@ $^ $(2) $(LDFLAGS)
	ln -sf $(notdir $@) $(dir $@)$(1).so.$(SOVERSION)
	ln -sf $(notdir $@) $(dir $@)$(1).so
endef

$(SHARED_LIB): $(LIB_OBJ)
	$(call so_link,libringcast,$(LDLIBS))

$(CLIENT_LIB): $(CLIENT_OBJ)
	$(call so_link,libringcast-client,$(CLIENT_LIBS))

$(ALLOC_SHIM): tools/alloc_count/alloc_count.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 $(WARN) -fPIC -shared $(CFLAGS) -o $@ $<

# A tool takes from the tools' shared parts (an archive) and from the
# libraries only what it uses (--as-needed). Linking them all made every tool
# load libfabric, whose psm provider loads libinfinipath, whose constructor
# sleeps about 0.2 s: ringcast-ctl took 0.29 s to print --help, 0.005 s now.
$(TOOL_AUX_LIB): $(TOOL_AUX_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/bin/%: $(BUILD)/obj/tools/%.o $(TOOL_AUX_LIB) $(STATIC_LIB)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $< $(TOOL_AUX_LIB) $(STATIC_LIB) -Wl,--as-needed $(LDLIBS) $(LDFLAGS)

# ringcast-sub is built as an outside program would be: from the public
# headers (tests/check-includes.sh) against the client library's exported
# symbols only (a use of an internal function fails to link), plus the
# tools' log. It finds the library next to it ($ORIGIN/../lib: the build
# tree and $(PREFIX)) or where the system's loader looks.
$(BUILD)/bin/ringcast-sub: $(BUILD)/obj/tools/ringcast-sub.o $(BUILD)/obj/tools/log.o $(CLIENT_LIB)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $(filter %.o,$^) -L$(BUILD)/lib -lringcast-client -Wl,-rpath,'$$ORIGIN/../lib' -lpthread -lm $(LDFLAGS)

$(BUILD)/tests/integration/%: $(BUILD)/obj/tests/integration/%.o $(STATIC_LIB)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $< $(STATIC_LIB) $(LDLIBS) $(LDFLAGS)

$(BUILD)/tests/%: $(BUILD)/obj/tests/unit/%.o $(TEST_AUX_OBJ) $(STATIC_LIB)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $< $(TEST_AUX_OBJ) $(STATIC_LIB) $(TEST_LIBS) $(LDLIBS) $(LDFLAGS)

# The documented example configuration is generated from the schema table;
# so is the one installed for a server (/etc/ringcast/ringcast.ini of the
# package): the example with a simulated card at a modest rate instead of
# unlimited (a whole core busy with nobody subscribed).
SERVER_CONFIG_SET := -o sim.0.rate=10MB/s -o control.socket=/run/ringcast/control
config-example: $(BUILD)/bin/ringcast-readout
	$(BUILD)/bin/ringcast-readout --print-example-config > deploy/ringcast.ini
	$(BUILD)/bin/ringcast-readout --print-example-config $(SERVER_CONFIG_SET) > deploy/ringcast-server.ini

check-example: $(BUILD)/bin/ringcast-readout
	@$(BUILD)/bin/ringcast-readout --print-example-config | diff -u deploy/ringcast.ini - \
	  || { echo "deploy/ringcast.ini is out of date: run 'make config-example'"; exit 1; }
	@$(BUILD)/bin/ringcast-readout --print-example-config $(SERVER_CONFIG_SET) | \
	  diff -u deploy/ringcast-server.ini - \
	  || { echo "deploy/ringcast-server.ini is out of date: run 'make config-example'"; exit 1; }

unit-test: all
	@./tests/run-unit-tests.sh $(BUILD)

integration-test: all
	@./tests/run-integration-tests.sh $(BUILD)

# The standards say gcc and clang: make test compiles everything with clang too.
check-clang:
	@$(MAKE) --no-print-directory -j$(NPROC) CC=clang BUILD=$(BUILD)-clang all

test: deps
	@$(MAKE) --no-print-directory -j$(NPROC) all
	@$(MAKE) --no-print-directory check-example
	@$(MAKE) --no-print-directory check-clang
	@./tests/run-all-tests.sh $(BUILD)
	@$(MAKE) --no-print-directory test-asan test-tsan test-fuzz

run: deps
	@$(MAKE) --no-print-directory -j$(NPROC) all
	@./tools/run-demo.sh $(BUILD)

# make bench BENCH_ARGS="--plot build/bench --json" passes options to ringcast-bench.
bench: deps
	@$(MAKE) --no-print-directory -j$(NPROC) all
	$(BUILD)/bin/ringcast-bench all $(BENCH_ARGS)

# Not in CI: 10 minutes at full rate (tests/soak.sh; SOAK_SECONDS to change).
soak: deps
	@$(MAKE) --no-print-directory -j$(NPROC) all
	@./tests/loaded-rxm.sh $(BUILD)
	@./tests/soak.sh $(BUILD)

# pc_file NAME,LIBS.PRIVATE: deploy/pkgconfig/NAME.pc.in with this install's
# directories into $(DESTDIR)$(LIBDIR)/pkgconfig/NAME.pc.
define pc_file
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' \
	  -e 's|@VERSION@|$(VERSION)|g' -e 's|@LIBS_PRIVATE@|$(strip $(2))|g' \
	  deploy/pkgconfig/$(1).pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/$(1).pc
endef

install: programs
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR)/ringcast \
	  $(DESTDIR)$(DATADIR)/ringcast $(DESTDIR)$(DOCDIR) $(DESTDIR)$(UNITDIR)
	install -m 755 $(TOOLS) $(DESTDIR)$(PREFIX)/bin/
	install -m 755 deploy/memlock-need.sh $(DESTDIR)$(PREFIX)/bin/ringcast-memlock-need
	sed -e 's|@BINDIR@|$(PREFIX)/bin|g' -e 's|@DATADIR@|$(DATADIR)|g' deploy/ringcast-readout.service \
	  > $(DESTDIR)$(UNITDIR)/ringcast-readout.service
	install -m 644 $(STATIC_LIB) $(DESTDIR)$(LIBDIR)/
	install -m 755 $(SHARED_LIB) $(CLIENT_LIB) $(DESTDIR)$(LIBDIR)/
	for l in libringcast libringcast-client; do \
	  ln -sf $$l.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$$l.so.$(SOVERSION) && \
	  ln -sf $$l.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$$l.so || exit 1; done
	install -m 644 $(API_HEADERS) $(DESTDIR)$(INCLUDEDIR)/ringcast/
	$(call pc_file,ringcast-client,$(CLIENT_LIBS))
	$(call pc_file,ringcast,$(LDLIBS))
	install -m 644 include/README.md $(DESTDIR)$(DOCDIR)/API.md
	install -m 644 LICENSE $(DESTDIR)$(DOCDIR)/
	install -m 644 deploy/ringcast.ini deploy/ringcast-server.ini $(DESTDIR)$(DATADIR)/ringcast/

# ---- Debian packages ---------------------------------------------------------
#   make deb        ringcast, libringcast0, libringcast-client0, libringcast-dev
#                   (debian/, debhelper) into $(BUILD)/deb/, then lintian on them
#   make deb-test   builds them and checks them unpacked (tests/deb-test.sh)
# dpkg-buildpackage writes its packages next to the source tree, so the tree
# (tracked and new files, not the build directories) is copied to
# $(BUILD)/deb/ringcast-$(VERSION)/ and built there.
DEB_DIR := $(BUILD)/deb
deb:
	@command -v dpkg-buildpackage >/dev/null && command -v lintian >/dev/null || \
	  { echo "make deb needs debhelper, devscripts and lintian (apt-get install debhelper devscripts lintian)"; exit 1; }
	rm -rf $(DEB_DIR) && mkdir -p $(DEB_DIR)/ringcast-$(VERSION)
	git ls-files -co --exclude-standard | grep -v '^build' | tar -cf - -T - | tar -xf - -C $(DEB_DIR)/ringcast-$(VERSION)
	cd $(DEB_DIR)/ringcast-$(VERSION) && dpkg-buildpackage -us -uc -b
	lintian --fail-on error,warning $(DEB_DIR)/*.changes

deb-test: deb
	@./tests/deb-test.sh $(DEB_DIR)

# ---- Sanitizers and fuzzing (make test runs all three; clang builds) --------
#   make test-asan    every unit and integration test, AddressSanitizer + UBSan (build-asan)
#   make test-tsan    the threaded unit tests and a daemon run, ThreadSanitizer (build-tsan)
#   make test-fuzz    each libFuzzer target tests/fuzz/fuzz_*.c for FUZZ_TIME s (build-fuzz)
#   make fuzz-corpus  regenerate the seed corpus tests/fuzz/corpus/ from valid input
# A report from any sanitizer fails the stage (tests/run-sanitizer-tests.sh,
# tests/run-fuzz-tests.sh).
SAN_OPT    := -O1 -g -fno-omit-frame-pointer
ASAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined
# DPDK's inline rte_ring code uses __atomic builtins (which TSan follows)
# instead of barriers in inline assembly only with RTE_USE_C11_MEM_MODEL.
TSAN_FLAGS := -fsanitize=thread -DRTE_USE_C11_MEM_MODEL
FUZZ_FLAGS := -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
# Not test_sub_table: every race TSan reports there crosses liburcu's grace
# periods, which it cannot see (suppressed in tests/tsan.supp), and matching
# the suppression for each of its ~10^5 RCU frees once took past the 600 s
# limit. Its property is checked by its own snapshot invariant and under ASan
# (a reader of a freed version is a use-after-free); the daemon run below
# still exercises the table under TSan.
TSAN_TESTS := test_roundtrip test_dma_ring test_chunk_queue test_fanout test_card \
              test_net_subscriber test_mem test_views
FUZZ_SRC   := $(wildcard tests/fuzz/fuzz_*.c)
FUZZERS    := $(FUZZ_SRC:tests/fuzz/%.c=$(BUILD)/fuzz/%)
FUZZ_TIME  ?= 10
, := ,
.PHONY: test-asan test-tsan test-fuzz fuzzers fuzz-corpus

# san_build DIR,CFLAGS,LDFLAGS,TARGETS: a clang build in DIR. make does not
# track flags, so DIR starts from scratch when they differ from its last build.
define san_build
	@echo '$(2) | $(3)' | cmp -s - $(1)/.flags || { rm -rf $(1); mkdir -p $(1); echo '$(2) | $(3)' > $(1)/.flags; }
	@$(MAKE) --no-print-directory -j$(NPROC) CC=clang BUILD=$(1) OPT="$(SAN_OPT)" EXTRA_CFLAGS="$(2)" \
	  LDFLAGS="$(3)" SO_LDFLAGS= $(4)
endef

test-asan:
	$(call san_build,build-asan,$(ASAN_FLAGS),$(ASAN_FLAGS),all)
	@./tests/run-sanitizer-tests.sh asan build-asan

test-tsan:
	$(call san_build,build-tsan,$(TSAN_FLAGS),-fsanitize=thread,$(TSAN_TESTS:%=build-tsan/tests/%) \
	  build-tsan/bin/ringcast-readout build-tsan/bin/ringcast-sub)
	@./tests/run-sanitizer-tests.sh tsan build-tsan $(TSAN_TESTS)

# The fuzz targets link libFuzzer's main; the library is instrumented for it.
$(BUILD)/fuzz/fuzz_%: $(BUILD)/obj/tests/fuzz/fuzz_%.o $(STATIC_LIB)
	@mkdir -p $(dir $@)
	$(CC) -fsanitize=fuzzer -o $@ $< $(STATIC_LIB) $(LDLIBS) $(LDFLAGS)

$(BUILD)/fuzz/make_corpus: $(BUILD)/obj/tests/fuzz/make_corpus.o $(STATIC_LIB)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $< $(STATIC_LIB) $(LDLIBS) $(LDFLAGS)

fuzzers: $(FUZZERS) $(BUILD)/fuzz/make_corpus

test-fuzz:
	$(call san_build,build-fuzz,$(FUZZ_FLAGS),-fsanitize=address$(,)undefined,fuzzers)
	@./tests/run-fuzz-tests.sh build-fuzz $(FUZZ_TIME)

fuzz-corpus:
	$(call san_build,build-fuzz,$(FUZZ_FLAGS),-fsanitize=address$(,)undefined,fuzzers)
	build-fuzz/fuzz/make_corpus tests/fuzz/corpus

clean:
	rm -rf $(BUILD) build-asan build-tsan build-fuzz

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
