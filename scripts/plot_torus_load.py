"""Draws docs/torus_load.png from the torus benchmark's load sweep
(build/bench/torus_load.csv, written by `cargo bench -p tb --bench torus -- load`):
throughput and latency (mean, p99) against the offered load of uniform
random traffic. Run through scripts/plot_torus_load.sh, which brings
matplotlib."""

import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

src, out = sys.argv[1], sys.argv[2]
label = f" ({sys.argv[3]})" if len(sys.argv) > 3 and sys.argv[3] else ""
with open(src, newline="") as f:
    rows = sorted(csv.DictReader(f), key=lambda r: float(r["offered"]))
if not rows:
    sys.exit(f"{src}: no rows")
load = [float(r["offered"]) for r in rows]
thr = [float(r["throughput"]) for r in rows]
mean = [float(r["latency_mean"]) for r in rows]
p99 = [float(r["latency_p99"]) for r in rows]

fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4), dpi=110)
a1.plot(load, thr, "o-", color="tab:blue", label="delivered")
a1.plot(load, load, ":", color="gray", lw=1, label="offered")
a1.set_xlabel("offered load (packets / chip / cycle)")
a1.set_ylabel("throughput (packets / chip / cycle)")
a1.set_title(f"Throughput, uniform traffic{label}")
a1.legend()
a1.grid(alpha=0.3)
a2.plot(load, mean, "o-", color="tab:green", label="mean")
a2.plot(load, p99, "s--", color="tab:red", label="p99")
a2.set_xlabel("offered load (packets / chip / cycle)")
a2.set_ylabel("latency (cycles, creation to delivery)")
a2.set_title(f"Latency, uniform traffic{label}")
a2.legend()
a2.grid(alpha=0.3)
fig.tight_layout()
fig.savefig(out)
print(f"wrote {out}")
