# simpler — top-level entry points. See README.md.
#   make run    install what is missing, build, run the demonstration (the
#               vector example traced: build/vector-trace.{json,svg} and its
#               summary by tools/simpler-trace), the other examples, and
#               the vector example from Python (examples/python/vector.py),
#               and the cluster example (over two MPI ranks too, with MPI;
#               and from Python, examples/python/cluster.py)
#   make test   install what is missing, build and run every test:
#               the model check (make verify), normal build, then ASan+UBSan, then TSan, then a short soak
#               (SOAK_SHORT_N runs of the pipeline, fault, review and engine tests
#               in each of the three builds), then the optimised build
#               (compiled, not run), then a bounded fuzzing run of each fuzz
#               target (FUZZ_SECONDS each)
#   make verify the SPIN model check of the round gate (model/round_gate.pml)
#   make soak   the pipeline, fault, review and engine tests SOAK_N times each under
#               the normal, ASan and TSan builds (about thirty minutes;
#               SOAK_N=, SOAK_BUILDS="normal asan tsan", tools/soak.sh)
#   make fuzz-long  each fuzz target for FUZZ_LONG_SECONDS (default 600)
#   make bench  install the peers (OpenMP, StarPU, BLAS), build optimised and
#               run simpler side by side with them (docs/performance.md)
#   make bench-components  the component benchmarks (device, runtime,
#               program mode, kernel mode, tracing) on their own
#   make bench-trace  what tracing costs a run, level 0 to 4 (bench_trace)
#   make install  install headers, libraries, simpler.pc, the CMake
#               package and the Python package under PREFIX (default
#               /usr/local; docs/install.md, docs/python.md)
#   make uninstall  remove exactly the files the last `make install` wrote
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
FUZZ_SECONDS ?= 15
FUZZ_LONG_SECONDS ?= 600
SOAK_SHORT_N ?= 3
SOAK_BUILDS ?= normal asan tsan
PREFIX ?= /usr/local
# The sanitizer options of every run of those builds (ctest and soak).
ASAN_ENV = ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
TSAN_ENV = TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1

.PHONY: all deps bench-deps verify build build-asan build-tsan run test test-normal test-asan test-tsan test-soak-short soak test-release test-fuzz fuzz-long bench bench-components bench-trace install uninstall clean

all: build

deps:
	@bash tools/install-deps.sh

build: deps
	cmake -S . -B build $(CMAKE_FLAGS)
	cmake --build build -j $(JOBS)

run: build
	./build/examples/device_demo
	./build/examples/runtime_demo
	./build/examples/kernel_mode_demo
	SIMPLER_TRACE=4,build/vector-trace.json ./build/examples/vector_example
	./build/tools/simpler-trace --svg build/vector-trace.svg build/vector-trace.json
	./build/examples/matmul_example
	./build/examples/attention_example
	./build/examples/cluster_example
	@# over two MPI ranks, when the build found MPI (it then registered the test)
	if grep -q example_cluster_mpi build/examples/CTestTestfile.cmake; then mpiexec -n 2 ./build/examples/cluster_example --mpi; fi
	/usr/bin/python3 examples/python/vector.py build/examples/libvector_orch.so build/examples/libvector_kernels.so
	/usr/bin/python3 examples/python/cluster.py build/examples/libmatmul_orch.so build/examples/libmatmul_kernels.so build/examples/libchol_orch.so build/examples/libchol_kernels.so

test: deps verify test-normal test-asan test-tsan test-soak-short test-release test-fuzz
	@echo "simpler: all test builds passed (model check, normal, asan+ubsan, tsan, short soak, release build, fuzz)"

# The Promela models (the kernel-mode round gate and round handshake; the
# sleeper bit of simdev's wait words), checked exhaustively by SPIN, with
# their mutants (model/, tools/verify.sh).
verify: deps
	bash tools/verify.sh

test-normal: build
	cd build && ctest --output-on-failure -j $(JOBS)

build-asan: deps
	cmake -S . -B build-asan -DSIMPLER_SANITIZE=address -DCMAKE_BUILD_TYPE=Debug $(CMAKE_FLAGS)
	cmake --build build-asan -j $(JOBS)

test-asan: build-asan
	cd build-asan && $(ASAN_ENV) ctest --output-on-failure -j $(JOBS)

build-tsan: deps
	cmake -S . -B build-tsan -DSIMPLER_SANITIZE=thread -DCMAKE_BUILD_TYPE=Debug $(CMAKE_FLAGS)
	cmake --build build-tsan -j $(JOBS)

test-tsan: build-tsan
	cd build-tsan && $(TSAN_ENV) ctest --output-on-failure -j $(JOBS)

# The soak runs in the same build directories as the tests (normal -> build,
# asan -> build-asan, tsan -> build-tsan), so nothing is compiled twice.
SOAK_DIRS = $(patsubst normal,build,$(patsubst asan,build-asan,$(patsubst tsan,build-tsan,$(SOAK_BUILDS))))
SOAK_RUN = SOAK_BUILDS="$(SOAK_BUILDS)" SOAK_ENV_asan="$(ASAN_ENV)" SOAK_ENV_tsan="$(TSAN_ENV)" \
	bash tools/soak.sh

soak: $(SOAK_DIRS)
	$(SOAK_RUN)

test-soak-short: $(SOAK_DIRS)
	SOAK_N=$(SOAK_SHORT_N) $(SOAK_RUN)

# The optimised build (what `make bench` uses) must compile too: -O3 makes
# GCC's flow warnings stricter, and -Werror turns them into errors.
test-release: deps
	cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)
	cmake --build build-release -j $(JOBS)

# clang + libFuzzer + ASan/UBSan, FUZZ_SECONDS per target: the callable
# validator, the kernel-mode packet's decoder, submit's checks and element
# access, prepare's descriptors (tests/fuzz/run-fuzz.sh says what each
# covers).
test-fuzz: deps
	FUZZ_SECONDS=$(FUZZ_SECONDS) bash tests/fuzz/run-fuzz.sh build-fuzz

fuzz-long: deps
	FUZZ_SECONDS=$(FUZZ_LONG_SECONDS) bash tests/fuzz/run-fuzz.sh build-fuzz

bench-deps: deps
	@bash tools/install-bench-deps.sh

# Only the benchmarks: the tests are built and run by `make test`.
# BENCH_ARGS: e.g. --quick, --reps 7, --only chain.
BENCH_ARGS ?=
bench: bench-deps
	cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)
	cmake --build build-release -j $(JOBS) --target bench_compare_all
	./build-release/bench/compare/bench_compare $(BENCH_ARGS)

bench-components: deps
	cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)
	cmake --build build-release -j $(JOBS) --target bench_device bench_runtime bench_program bench_kernel bench_trace
	./build-release/bench/bench_device
	./build-release/bench/bench_runtime
	./build-release/bench/bench_program
	./build-release/bench/bench_kernel
	./build-release/bench/bench_trace

bench-trace: deps
	cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)
	cmake --build build-release -j $(JOBS) --target bench_trace
	./build-release/bench/bench_trace

# Builds what is missing without reconfiguring (so `sudo make install` after
# `make` does not rewrite build/ as root), installs, and refreshes the
# loader's cache when root installs for real (not into DESTDIR).
# build/install_manifest.txt records what was written, for uninstall.
install:
	@[ -f build/CMakeCache.txt ] || $(MAKE) build
	cmake --build build -j $(JOBS)
	cmake --install build --prefix $(PREFIX)
	@if [ "$$(id -u)" -eq 0 ] && [ -z "$$DESTDIR" ]; then ldconfig; fi

uninstall:
	bash tools/uninstall.sh build/install_manifest.txt
	@if [ "$$(id -u)" -eq 0 ] && [ -z "$$DESTDIR" ]; then ldconfig; fi

clean:
	rm -rf build build-asan build-tsan build-release build-fuzz build-soak
