# The two commands of the README: `make run` and `make test`. Both bootstrap first.
.PHONY: all bootstrap build release test run clean

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

# Debug build (ASan+UBSan), then every test. CTest runs them in parallel.
test: build
	ctest --test-dir build/debug --output-on-failure -j $(JOBS) --timeout 300

# Release build, then `gpufleet up` in the foreground.
run: release
	@bash scripts/run.sh build/release/apps/gpufleet/gpufleet

clean:
	rm -rf build
