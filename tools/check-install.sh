#!/usr/bin/env bash
# Proves the installed package works from outside the tree: installs the
# build into a scratch prefix, checks the installed files against the
# manifest and the source tree's headers, builds the README's first example
# twice against the installed shared library (pkg-config, then a CMake
# project using find_package) and runs both; then uninstalls and checks that
# nothing is left. The CMake project also links the static library. The
# Python package is imported from the prefix (PYTHONPATH, as docs/python.md
# says for a prefix of one's own) and must load the prefix's library.
# Usage: check-install.sh SOURCE_DIR BUILD_DIR LIBDIR VERSION CC CMAKE WORK_DIR PYTHONDIR PYTHON
#   LIBDIR is CMAKE_INSTALL_LIBDIR (lib), VERSION the project's MAJOR.MINOR.PATCH,
#   PYTHONDIR SIMPLER_INSTALL_PYTHONDIR (lib/python3.N/dist-packages), PYTHON
#   the interpreter the package is installed for (/usr/bin/python3).
set -euo pipefail
src=$1 build=$2 libdir=$3 version=$4 cc=$5 cmake=$6 work=$7 pythondir=$8 python=$9
unset DESTDIR # the scratch prefix is the whole destination
major=${version%%.*}
minor_version=${version%.*} # MAJOR.MINOR, what find_package asks for

fail() {
    echo "check-install: $*" >&2
    exit 1
}

rm -rf "$work"
mkdir -p "$work"
work=$(cd "$work" && pwd)
prefix=$work/prefix

# Component "simpler" (cmake/install.cmake): its manifest is
# install_manifest_simpler.txt, so this leaves install_manifest.txt, the
# record of `make install`, alone.
manifest=$build/install_manifest_simpler.txt
"$cmake" --install "$build" --prefix "$prefix" --component simpler >"$work/install.log"

# The files: every public header and the generated version.h, both
# libraries and the soname links, simpler.pc, the CMake package. The
# manifest must name exactly what is there, or uninstall would miss some.
expected=$( {
    for header in "$src"/include/simpler/*.h; do
        echo "include/simpler/${header##*/}"
    done
    echo include/simpler/version.h
    for file in libsimpler.a libsimpler.so "libsimpler.so.$major" "libsimpler.so.$version" \
                pkgconfig/simpler.pc cmake/simpler/simplerConfig.cmake \
                cmake/simpler/simplerConfigVersion.cmake cmake/simpler/simplerTargets.cmake \
                cmake/simpler/simplerTargets-CONFIG.cmake; do
        echo "$libdir/$file"
    done
    for module in "$src"/python/simpler/*.py; do
        echo "$pythondir/simpler/${module##*/}"
    done
    echo "$pythondir/simpler/_installed.py"
} | sort)
installed=$(cd "$prefix" && find . -type f -o -type l | sed 's|^\./||' | sort)
listed=$(sed "s|^$prefix/||" "$manifest" | sort)
config_files='s|simplerTargets-[a-z]*\.cmake$|simplerTargets-CONFIG.cmake|'
[ "$(sed "$config_files" <<<"$installed")" = "$expected" ] ||
    fail "installed files differ from the expected ones:$(diff <(echo "$expected") \
          <(sed "$config_files" <<<"$installed"))"
[ "$listed" = "$installed" ] ||
    fail "the manifest differs from the installed files:$(diff <(echo "$listed") <(echo "$installed"))"

awk '/^```c$/ {inside=1; next} inside && /^```$/ {exit} inside {print}' "$src/README.md" >"$work/first.c"
[ -s "$work/first.c" ] || fail "README.md has no \`\`\`c block"

# Checks that executable $1 needs libsimpler.so.MAJOR and, run with the
# environment given after it, loads it from the prefix; then runs it.
run_against_prefix() {
    local exe=$1
    shift
    readelf -d "$exe" | grep -q "(NEEDED).*\[libsimpler\.so\.$major\]" ||
        fail "$exe does not need libsimpler.so.$major (linked statically?)"
    local loaded
    loaded=$(env "$@" ldd "$exe" | awk -v so="libsimpler.so.$major" '$1 == so {print $3}')
    [ "$loaded" = "$prefix/$libdir/libsimpler.so.$major" ] ||
        fail "$exe loads libsimpler.so.$major from '$loaded', not from $prefix/$libdir"
    env "$@" "$exe" || fail "$exe failed"
}

# 1. pkg-config, as the README says; PKG_CONFIG_LIBDIR (not _PATH) so no
# simpler.pc installed elsewhere on the machine can answer.
export PKG_CONFIG_LIBDIR=$prefix/$libdir/pkgconfig
unset PKG_CONFIG_PATH
[ "$(pkg-config --modversion simpler)" = "$version" ] ||
    fail "pkg-config --modversion simpler: '$(pkg-config --modversion simpler)', expected $version"
# shellcheck disable=SC2046 # the flags are words
"$cc" -std=c11 -Wall -Wextra -Werror "$work/first.c" $(pkg-config --cflags --libs simpler) \
    -o "$work/first_pkgconfig"
echo "pkg-config: built with $(pkg-config --cflags --libs simpler)"
run_against_prefix "$work/first_pkgconfig" LD_LIBRARY_PATH="$prefix/$libdir"

# 2. CMake: find_package and the imported targets. The first three lines
# after project() are the ones docs/install.md shows; the shared library
# comes from the build's RPATH, which CMake sets for an imported library
# outside the system directories. first_static links libsimpler.a.
mkdir -p "$work/app"
cp "$work/first.c" "$work/app/first.c"
cat >"$work/app/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.20)
project(first C)
find_package(simpler $minor_version REQUIRED)
add_executable(first first.c)
target_link_libraries(first simpler::simpler)
add_executable(first_static first.c)
target_link_libraries(first_static simpler::simpler_static)
CMAKE
"$cmake" -S "$work/app" -B "$work/app/build" -DCMAKE_C_COMPILER="$cc" \
    -DCMAKE_PREFIX_PATH="$prefix" >"$work/app-configure.log" ||
    { cat "$work/app-configure.log" >&2; fail "configuring the find_package project failed"; }
"$cmake" --build "$work/app/build" >"$work/app-build.log" ||
    { cat "$work/app-build.log" >&2; fail "building the find_package project failed"; }
echo "find_package: simpler $(sed -n 's/^simpler_DIR:PATH=//p' "$work/app/build/CMakeCache.txt")"
run_against_prefix "$work/app/build/first"
if readelf -d "$work/app/build/first_static" | grep -q "(NEEDED).*libsimpler"; then
    fail "first_static needs libsimpler.so: simpler::simpler_static is not the static library"
fi
"$work/app/build/first_static" || fail "first_static failed"

# 3. Python: the installed package imports from the prefix with nothing but
# PYTHONPATH, finds the prefix's library beside it (SIMPLER_LIBRARY unset:
# CTest sets it for the package's own tests) and reports its version.
# PYTHONDONTWRITEBYTECODE: no __pycache__ for uninstall to meet.
if "$python" -c "" 2>/dev/null; then
    loaded=$(env -u SIMPLER_LIBRARY PYTHONDONTWRITEBYTECODE=1 PYTHONPATH="$prefix/$pythondir" \
             "$python" -c 'import simpler; print(simpler.__file__); print(simpler.library_path); print(simpler.__version__)') ||
        fail "$python cannot import the installed package"
    expected_python="$prefix/$pythondir/simpler/__init__.py
$prefix/$libdir/libsimpler.so.$major
$version"
    [ "$loaded" = "$expected_python" ] ||
        fail "the installed package loaded:
$loaded
expected:
$expected_python"
    echo "python: $python imports simpler $version from $prefix/$pythondir"
else
    echo "python: $python not found: the installed package was not imported" >&2
fi

# 4. Uninstall removes every file it installed, and simpler's own directories.
bash "$src/tools/uninstall.sh" "$manifest" >"$work/uninstall.log"
left=$(cd "$prefix" && find . -type f -o -type l -o -type d -name simpler)
[ -z "$left" ] || fail "uninstall left: $left"
echo "check-install: installed, built outside the tree twice, ran, uninstalled"
