#!/usr/bin/env bash
# Runs every fuzz target of the module for FUZZTIME each. Go can fuzz only
# one target per `go test` invocation, so the targets are found by name.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-5s}
# Minimizing each new interesting input may take up to a minute by default,
# during which nothing new is explored; short runs would do little else.
FUZZMINIMIZETIME=${FUZZMINIMIZETIME:-100x}

found=0
while IFS= read -r file; do
	dir=./$(dirname "$file")
	for target in $(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$file"); do
		found=1
		echo "==> $dir $target ($FUZZTIME)"
		"$GO" test -run='^$' -fuzz="^${target}\$" -fuzztime="$FUZZTIME" -fuzzminimizetime="$FUZZMINIMIZETIME" "$dir"
	done
done < <(git ls-files --cached --others --exclude-standard '*_test.go' | xargs grep -l '^func Fuzz' | sort)

if [ "$found" = 0 ]; then
	echo "no fuzz targets found" >&2
	exit 1
fi
