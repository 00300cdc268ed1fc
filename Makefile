# The two commands a new user runs: `make demo` and `make test`. Both install the Debian
# packages the build needs (when missing) and then build.
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=

.PHONY: all deps build test demo install clean

all: build

deps:
	@scripts/install-deps

build: deps
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j$(JOBS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

demo: build
	$(BUILD)/dnnjit demo

install: build
	cmake --install $(BUILD)

clean:
	rm -rf $(BUILD)
