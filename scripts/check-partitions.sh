#!/usr/bin/env bash
# Checks that the K partitions `cargo nextest run --partition count:k/K`
# (k = 1..K) together run every test of the workspace exactly once: each test
# is listed by exactly one partition, and no partition lists a test the whole
# run would not. Usage: scripts/check-partitions.sh [K] (default 4).
set -euo pipefail
cd "$(dirname "$0")/.."
K=${1:-4}
case "$K" in '' | *[!0-9]* | 0) echo "error: K must be a whole number >= 1, got '$K'" >&2; exit 2 ;; esac

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
list() {
  cargo nextest list --workspace --message-format oneline "$@" 2>/dev/null | sort
}
list > "$work/all"
: > "$work/parts"
for k in $(seq 1 "$K"); do
  list --partition "count:$k/$K" | tee "$work/part$k" >> "$work/parts"
done
sort -o "$work/parts" "$work/parts"
total=$(wc -l < "$work/all")
if [ "$total" -eq 0 ]; then
  echo "error: cargo nextest listed no tests" >&2
  exit 1
fi
duplicates=$(uniq -d "$work/parts")
missing=$(comm -23 "$work/all" <(uniq "$work/parts"))
extra=$(comm -13 "$work/all" <(uniq "$work/parts"))
sizes=$(for k in $(seq 1 "$K"); do printf '%s ' "$(wc -l < "$work/part$k")"; done)
if [ -n "$duplicates$missing$extra" ]; then
  [ -n "$duplicates" ] && printf 'in more than one partition:\n%s\n' "$duplicates" >&2
  [ -n "$missing" ] && printf 'in no partition:\n%s\n' "$missing" >&2
  [ -n "$extra" ] && printf 'not in the whole run:\n%s\n' "$extra" >&2
  exit 1
fi
echo "partitions: $K partitions of ${sizes}tests run each of the $total tests once"
