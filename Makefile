# The two commands of the README: `make run` and `make test`. Both bootstrap first.
.PHONY: all bootstrap build release deb test run clean lint lint-changed format-check fuzz screenshots

JOBS ?= $(shell nproc)

all: build

bootstrap:
	@bash scripts/bootstrap.sh

build: bootstrap
	cmake --preset debug
	cmake --build --preset debug -j $(JOBS)

release: bootstrap
	cmake --preset release
	cmake --build --preset release -j $(JOBS) --target gpufleet

# The Debian package of the release build (docs/install.md): the binary, its manual page, the
# settings file and the systemd units, in build/release/gpufleet_VERSION-1_ARCH.deb.
deb: release
	cmake --build --preset release -j $(JOBS) --target gpufleet_man
	cd build/release && cpack -G DEB

# Debug build (ASan+UBSan), then every test. CTest runs them in parallel.
test: build
	ctest --test-dir build/debug --output-on-failure -j $(JOBS) --timeout 300

# clang-tidy (the repo's .clang-tidy, every finding an error) over the project's own sources,
# with the debug build's compile_commands.json. Slow (minutes), so `make test` does not run it.
CLANG_TIDY ?= clang-tidy
CLANG_FORMAT ?= clang-format
LINT_SOURCES = $(shell find src apps tests/fakenvml -name '*.cpp' | sort)
FORMAT_SOURCES = $(shell find src apps tests bench -name '*.h' -o -name '*.cpp' | sort)

lint:
	@test -f build/debug/compile_commands.json || cmake --preset debug
	printf '%s\n' $(LINT_SOURCES) | xargs -P $(JOBS) -n 1 $(CLANG_TIDY) -p build/debug --quiet

# clang-tidy as `make lint`, over the .cpp files changed since LINT_BASE (default: the commit in
# .ci/lint-base, up to which the tree was last linted): scripts/lint_changed.sh. CI runs it
# after `make test`, whose build writes the compile_commands.json it needs.
LINT_BASE ?=
lint-changed:
	CLANG_TIDY=$(CLANG_TIDY) JOBS=$(JOBS) bash scripts/lint_changed.sh $(LINT_BASE)

# Fails if any source differs from what .clang-format would write; changes nothing.
format-check:
	$(CLANG_FORMAT) --dry-run -Werror $(FORMAT_SOURCES)

# libFuzzer (clang, the `fuzz` preset): every target of tests/fuzz for FUZZ_SECONDS each, inputs up
# to the API's 1 MiB body limit; a finding is kept in tests/fuzz/regressions/ and fails the run.
# CI runs it after `make test` (.ci/run).
FUZZ_SECONDS ?= 60
fuzz: bootstrap
	bash scripts/fuzz.sh $(FUZZ_SECONDS)

# The dashboard's screenshots in docs/images/dashboard/ (docs/dashboard.md), from the debug
# build on a scripted demo cluster: scripts/dashboard-screenshots.sh. Run as root.
screenshots: build
	bash scripts/dashboard-screenshots.sh build/debug

# Release build, then `gpufleet up` in the foreground.
run: release
	@bash scripts/run.sh build/release/apps/gpufleet/gpufleet

clean:
	rm -rf build
