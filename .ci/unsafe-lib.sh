# Sourced by .ci/valgrind.sh, .ci/miri.sh and .ci/tsan.sh (not run on its own).
#
# make_unsafe_tree ROOT DEST: copies the crate at ROOT to DEST with its
# dev-dependencies, benches and examples left out, and prints DEST.
#
# Why: Miri and ThreadSanitizer build every dependency their own way (Miri
# as MIR, TSan instrumented, with std rebuilt by -Zbuild-std). The unit tests
# in src/ and the stress tests these scripts run use no dev-dependency, but
# `cargo test` builds them all for any test target, and criterion alone
# (clap, regex, serde, ...) is most of that build: on 2 cores, minutes that
# CI has not got. The code under test is the very src/ and tests/ of ROOT,
# copied with their timestamps, so cargo rebuilds only what changed.
make_unsafe_tree() {
  local root=$1 dest=$2
  mkdir -p "$dest"
  rm -rf "$dest/src" "$dest/tests" "$dest/docs"
  # docs/: src/guide.rs includes docs/guide.md.
  cp -a "$root/src" "$root/tests" "$root/docs" "$dest/"
  cp -a "$root/Cargo.lock" "$dest/Cargo.lock"
  # The manifest without [dev-dependencies], [[bench]], [[example]], the
  # bench profile and the workspace's members (not copied); an empty
  # `[workspace]` keeps cargo from looking for one above DEST.
  awk '
    /^\[/ { skip = ($0 ~ /^\[dev-dependencies\]/ || $0 ~ /^\[\[bench\]\]/ ||
                    $0 ~ /^\[\[example\]\]/ || $0 ~ /^\[profile\.bench\]/ ||
                    $0 ~ /^\[workspace\]/) }
    !skip { print }
    END { print ""; print "[workspace]" }
  ' "$root/Cargo.toml" >"$dest/Cargo.toml.new"
  # Only replace the manifest when it changed, so its timestamp does not
  # make cargo rebuild everything.
  if cmp -s "$dest/Cargo.toml.new" "$dest/Cargo.toml"; then
    rm "$dest/Cargo.toml.new"
  else
    mv "$dest/Cargo.toml.new" "$dest/Cargo.toml"
  fi
  printf '%s\n' "$dest"
}

# check_filters LOG FILTER...: fails unless every FILTER matched a test that
# ran (libtest prints `test NAME ... ok`). A filter that matches nothing,
# say after a module moved, would otherwise check nothing and pass.
check_filters() {
  local log=$1 f missing=0
  shift
  for f in "$@"; do
    if ! grep -Eq "^test [^ ]*${f}[^ ]* \.\.\. ok" "$log"; then
      printf 'the test filter %s matched no test that passed (see %s)\n' "$f" "$log" >&2
      missing=1
    fi
  done
  return "$missing"
}
