#!/usr/bin/env python3
"""Which nets keep a design from a clock: endpoints grouped by net.

nextpnr's one critical path names the worst path only; a design far from
its target fails on thousands of endpoints for a handful of reasons. Given
the JSON nextpnr writes with `--report FILE --detailed-timing-report`, this
counts the endpoints whose arrival time (from the clock edge) is past a
budget, grouped by the net that reaches them with its indices and numbers
folded (`pe_row[3].mul_hi.s1_product_d[7]` and its siblings are one group),
and prints each group's count and worst arrival, largest first.

    failing_endpoints.py detail.json --past 10.0 [--top 30]

`--past` is the period of the clock you want in ns (10.0 for 100 MHz).
Nets whose driver nextpnr times from no clock edge (event `<async>`: a path
from an unconstrained input pin, such as a reset into the flip-flops' set
and reset ports) say nothing about the clock and are left out of the table;
a line counts their endpoints past the budget. An endpoint has one arrival,
the latest over every start point, so one reached both from registers and
from an input pin (the flow harness's output registers, `out_q`, whose
inputs include `load_i`) can show the pin's longer path: compare with the
report's Fmax before reading such a group as the clock's.
Standard library only.
"""

import argparse
import collections
import json
import re
import sys


def group_of(net: str) -> str:
    """The net's name with indices and numbers folded."""
    return re.sub(r"\d+", "N", net)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", help="nextpnr --report JSON written with --detailed-timing-report")
    parser.add_argument("--past", type=float, required=True, help="budget in ns (the clock period)")
    parser.add_argument("--top", type=int, default=30, help="groups to print (default 30)")
    args = parser.parse_args()
    if not args.past > 0:
        print(f"failing_endpoints: --past must be a positive number of ns, not {args.past}", file=sys.stderr)
        return 2
    try:
        with open(args.report) as f:
            report = json.load(f)
    except (OSError, ValueError) as e:
        print(f"failing_endpoints: cannot read {args.report}: {e}", file=sys.stderr)
        return 2
    nets = report.get("detailed_net_timings") if isinstance(report, dict) else None
    if not isinstance(nets, list):
        print(
            f"failing_endpoints: {args.report} has no detailed_net_timings "
            "(run nextpnr with --detailed-timing-report)",
            file=sys.stderr,
        )
        return 2
    count = collections.Counter()
    worst = {}
    unclocked = 0
    for net in nets:
        name = group_of(str(net.get("net", "?")))
        clocked = net.get("event") != "<async>"
        for end in net.get("endpoints", []):
            arrival = max(end.get("delay", [0.0]))
            if arrival > args.past:
                if not clocked:
                    unclocked += 1
                    continue
                count[name] += 1
                worst[name] = max(worst.get(name, 0.0), arrival)
    total = sum(count.values())
    print(f"{total} endpoints arrive after {args.past} ns, in {len(count)} net groups")
    if unclocked:
        print(f"({unclocked} more on nets from no clock edge, such as input pins, not counted)")
    print("| endpoints | worst arrival (ns) | net group |")
    print("| --- | --- | --- |")
    for name, n in count.most_common(args.top):
        print(f"| {n} | {worst[name]:.2f} | `{name}` |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
