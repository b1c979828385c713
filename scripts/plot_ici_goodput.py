"""Draws docs/ici_goodput.png from the link benchmark's BER sweep
(build/bench/ici_ber_sweep.csv, written by `cargo bench -p tb --bench link -- sweep`):
goodput and retransmit rate against the bit error rate. Run through
scripts/plot_ici_goodput.sh, which brings matplotlib."""

import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

src, out = sys.argv[1], sys.argv[2]
with open(src, newline="") as f:
    rows = list(csv.DictReader(f))
if not rows:
    sys.exit(f"{src}: no rows")
ber0 = [r for r in rows if float(r["ber"]) == 0.0]
pts = sorted((r for r in rows if float(r["ber"]) > 0.0), key=lambda r: float(r["ber"]))
ber = [float(r["ber"]) for r in pts]
goodput = [float(r["goodput"]) for r in pts]
retx = [float(r["retransmit_rate"]) for r in pts]

fig, ax = plt.subplots(figsize=(7, 4.2), dpi=110)
ax.set_xscale("log")
ax.plot(ber, goodput, "o-", color="tab:blue", label="goodput (payload bits / raw lane bit)")
if ber0:
    g0 = float(ber0[0]["goodput"])
    ax.axhline(g0, color="tab:blue", ls=":", lw=1, label=f"goodput at BER 0: {g0:.3f}")
ax.set_xlabel("bit error rate")
ax.set_ylabel("goodput", color="tab:blue")
ax.set_ylim(0, 1)
ax2 = ax.twinx()
ax2.set_yscale("log")
ax2.plot(ber, retx, "s--", color="tab:red", label="retransmitted frames per flit")
ax2.set_ylabel("retransmit rate", color="tab:red")
lines = ax.get_legend_handles_labels()
lines2 = ax2.get_legend_handles_labels()
ax.legend(lines[0] + lines2[0], lines[1] + lines2[1], loc="center left", fontsize=8)
flits = int(pts[0]["flits"])
ax.set_title(f"ICI link, default configuration (571-bit frames, CRC-32), {flits:,} flits per point", fontsize=9)
ax.grid(True, which="both", alpha=0.3)
fig.tight_layout()
fig.savefig(out)
print(f"written: {out}")
