#!/usr/bin/env bash
# Run every cargo-fuzz target in fuzz/ for SECONDS seconds each (default 10), one after the
# other. Skips, with a message and exit 0, when the nightly toolchain or cargo-fuzz is missing
# (install with `rustup toolchain install nightly && cargo install cargo-fuzz --locked`).
# A crash fails the script; its reproducer is left in fuzz/artifacts/TARGET/. The same run
# is a test: crates/cli/tests/fuzz_smoke.rs (UNPINNED_FUZZ_SECONDS).
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH="${1:-10}"
if ! rustup run nightly rustc --version >/dev/null 2>&1; then
    echo "fuzz-smoke: skipped (no nightly toolchain: rustup toolchain install nightly)"
    exit 0
fi
if ! cargo +nightly fuzz --help >/dev/null 2>&1; then
    echo "fuzz-smoke: skipped (cargo-fuzz not installed: cargo install cargo-fuzz --locked)"
    exit 0
fi
cd fuzz
targets=$(cargo +nightly fuzz list)
cargo +nightly fuzz build -O -a
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for t in $targets; do
    mkdir -p "corpus/$t"
    if [ -d "seeds/$t" ]; then cp -n seeds/"$t"/* "corpus/$t/" 2>/dev/null || true; fi
    if ! cargo +nightly fuzz run -O -a "$t" "corpus/$t" -- -max_total_time="$SECONDS_EACH" \
        -max_len=4096 -print_final_stats=1 >"$log" 2>&1; then
        tail -n 40 "$log"
        echo "fuzz-smoke: $t FAILED (reproducer in fuzz/artifacts/$t/)"
        exit 1
    fi
    execs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -Eo '[0-9]+$' || echo '?')
    echo "fuzz-smoke: $t: ${SECONDS_EACH}s, $execs executions, no finding"
done
echo "fuzz-smoke: all targets ran ${SECONDS_EACH}s without a finding"
