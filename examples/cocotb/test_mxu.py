"""A cocotb testbench for a generated int8 MXU, written from its documented
interface (README, "The MXU interface"; the crate docs of hw/mxu):

- weight tiles go into the weight FIFO a row at a time (valid/ready), bottom
  row (k = R-1) first, W[k][c] at bits 8c+7..8c of w_row_i;
- activation rows stream in (valid/ready), A[m][r] at bits 8r+7..8r of
  a_row_i; a tile's first row carries a_first_i and waits for its weights,
  the rest of the tile follows in consecutive cycles with distinct
  accumulator rows; each row overwrites (a_acc_add_i = 0) or adds to
  (a_acc_add_i = 1) its accumulator row;
- a row accepted in cycle t is written in cycle t + R + C (int8: L = 1,
  La = 0), with acc_wr_o high;
- acc_rd_en_i in cycle y gives acc_rd_valid_o and the row (column c at bits
  32c+31..32c, int32) in cycle y + 1 (the default depth's; y + 2 at depth 5).

Results are checked against numpy (int32 arithmetic with wraparound). Idle
cycles between tiles, gaps in the weight stream and gaps between reads are
random, and the data on an input whose valid is low is random too. The seed
is printed; SYSTOLE_SEED replays it, SYSTOLE_SOAK=N runs N times the random
tiles.

What the docs leave open, and what this testbench assumes: a row moves when
valid and ready are high together before a rising edge; rst_i is held for
RESET_CYCLES cycles; the accumulator is read only while busy_o is low; rows
of consecutive tiles that use the same accumulator row are accepted at least
SAME_ROW_DISTANCE cycles apart (see MxuBench.run_tile).
"""

import os
import random
import re
from collections import deque

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge
from cocotb.utils import get_sim_time

CLOCK_NS = 10
# Cycles rst_i is held high (the docs say it is synchronous and active high,
# not for how long: one cycle should do, a few cost nothing).
RESET_CYCLES = 4
# Cycles a first row may wait for its weights, or the MXU may stay busy,
# before the test gives up.
PATIENCE = 2000
# Fewest cycles between the acceptance of two rows that use the same
# accumulator row (int8: the row is read when it leaves the array and written
# in the next cycle). Not in the docs; see MxuBench.run_tile.
SAME_ROW_DISTANCE = 2


def seed_for(test_name):
    """The run's seed (SYSTOLE_SEED, or a fresh one) and this test's rng."""
    text = os.environ.get("SYSTOLE_SEED")
    seed = int(text, 0) if text else random.SystemRandom().getrandbits(32)
    print(f"{test_name}: seed {seed} (SYSTOLE_SEED={seed} replays it)")
    return seed, random.Random(f"{seed}:{test_name}")


def soak_factor():
    """SYSTOLE_SOAK=N runs N times the usual number of random tiles."""
    return int(os.environ.get("SYSTOLE_SOAK", "1"))


def wrap_int32(x):
    """int64 values reduced to int32 with two's-complement wraparound."""
    return ((np.asarray(x, dtype=np.int64) + 2**31) % 2**32 - 2**31).astype(np.int64)


def pack(values, bits):
    """Little-endian lanes: values[i] at bits bits*i + bits-1 .. bits*i."""
    word = 0
    for i, v in enumerate(values):
        word |= (int(v) & ((1 << bits) - 1)) << (bits * i)
    return word


def unpack_int32(word, count):
    out = []
    for i in range(count):
        v = (word >> (32 * i)) & 0xFFFFFFFF
        out.append(v - (1 << 32) if v & 0x80000000 else v)
    return out


def cycle_now():
    """The index of the clock cycle in progress (rising edges at k * CLOCK_NS)."""
    return int(get_sim_time(unit="ns")) // CLOCK_NS


class Tile:
    """One weight tile (R x C) and the activation rows streamed through it."""

    def __init__(self, weights, rows, addrs, adds):
        self.weights = weights  # int64 [R, C]
        self.rows = rows  # int64 [M, R]
        self.addrs = addrs  # M distinct accumulator rows
        self.adds = adds  # M flags: add (True) or overwrite (False)


# An idle cycle in the activation queue.
IDLE = None


class MxuBench:
    """Drives one MXU instance and keeps a model of its accumulator.

    Two drivers run every cycle, each from a queue: weight rows (valid low
    at random), and activation rows with idle cycles between tiles. Each
    drives its inputs after a rising edge, and in the ReadOnly phase of the
    same cycle looks at ready: a row is taken at the next rising edge when
    valid and ready are both high.
    """

    def __init__(self, dut, rng):
        self.dut = dut
        self.rng = rng
        m = re.match(r"mxu_(int8|bf16)_(\d+)x(\d+)_acc(\d+)$", dut._name)
        assert m, f"not an MXU top: {dut._name}"
        assert m.group(1) == "int8", "this testbench checks int8 arrays"
        self.R, self.C, self.N = int(m.group(2)), int(m.group(3)), int(m.group(4))
        assert len(dut.a_row_i) == 8 * self.R and len(dut.w_row_i) == 8 * self.C
        assert len(dut.acc_rd_data_o) == 32 * self.C
        assert 2 ** len(dut.a_acc_addr_i) == self.N
        # The accumulator as the model sees it; None: never written.
        self.acc = [None] * self.N
        self.weight_rows = deque()  # packed weight rows still to push
        self.act_queue = deque()  # IDLE or (packed row, address, add, first)
        self.last_tile_addrs = []  # accumulator rows of the last queued tile
        self.accepted = []  # cycles in which activation rows were accepted
        self.writes = []  # cycles with acc_wr_o high
        self.weight_gap = 0.3
        self.read_gap = 0.3

    async def start(self):
        dut = self.dut
        for sig in (dut.w_valid_i, dut.w_row_i, dut.a_valid_i, dut.a_first_i, dut.a_row_i,
                    dut.a_acc_addr_i, dut.a_acc_add_i, dut.acc_rd_en_i, dut.acc_rd_addr_i):
            sig.value = 0
        dut.rst_i.value = 1
        Clock(dut.clk_i, CLOCK_NS, unit="ns").start()
        for _ in range(RESET_CYCLES):
            await RisingEdge(dut.clk_i)
        dut.rst_i.value = 0
        cocotb.start_soon(self.watch_writes())
        cocotb.start_soon(self.drive_weights())
        cocotb.start_soon(self.drive_activations())

    async def watch_writes(self):
        while True:
            await RisingEdge(self.dut.clk_i)
            await ReadOnly()
            if int(self.dut.acc_wr_o.value):
                self.writes.append(cycle_now())

    async def drive_weights(self):
        """Pushes queued weight rows, with random gaps in w_valid_i."""
        dut = self.dut
        while True:
            await RisingEdge(dut.clk_i)
            valid = bool(self.weight_rows) and self.rng.random() >= self.weight_gap
            dut.w_valid_i.value = int(valid)
            dut.w_row_i.value = self.weight_rows[0] if valid else self.rng.getrandbits(8 * self.C)
            await ReadOnly()
            if valid and int(dut.w_ready_o.value):
                self.weight_rows.popleft()

    async def drive_activations(self):
        """Presents queued activation rows; idle cycles drive random data
        with a_valid_i low."""
        dut = self.dut
        waited = 0
        while True:
            await RisingEdge(dut.clk_i)
            # The queue may grow before ReadOnly: what counts is what was
            # driven now.
            queued = bool(self.act_queue)
            item = self.act_queue[0] if queued else IDLE
            if item is IDLE:
                dut.a_valid_i.value = 0
                dut.a_first_i.value = self.rng.getrandbits(1)
                dut.a_row_i.value = self.rng.getrandbits(8 * self.R)
                dut.a_acc_addr_i.value = self.rng.randrange(self.N)
                dut.a_acc_add_i.value = self.rng.getrandbits(1)
            else:
                row, addr, add, first = item
                dut.a_valid_i.value = 1
                dut.a_first_i.value = int(first)
                dut.a_row_i.value = row
                dut.a_acc_addr_i.value = addr
                dut.a_acc_add_i.value = int(add)
            await ReadOnly()
            if not queued:
                continue
            if item is IDLE:
                self.act_queue.popleft()
            elif int(dut.a_ready_o.value):
                self.accepted.append(cycle_now())
                self.act_queue.popleft()
                waited = 0
            else:
                # Only a first row waits (for its tile's weights); the docs
                # say the other rows are always accepted.
                assert item[3], f"a tile's row {item} was not accepted at once"
                waited += 1
                assert waited < PATIENCE, "a first row waited too long for its weights"

    def run_tile(self, tile, idle):
        """Queues `idle` idle cycles (more if needed, see below), the tile's
        weights and its rows, and updates the model (the tile's products,
        then overwrite or add)."""
        for k in reversed(range(self.R)):  # bottom row (k = R-1) first
            self.weight_rows.append(pack(tile.weights[k], 8))
        # Rows of consecutive tiles that use the same accumulator row are
        # kept SAME_ROW_DISTANCE cycles apart: the docs say the first-row gap
        # keeps every read-modify-write apart, but a tile's first row that
        # adds to the row the previous tile's last row wrote, accepted in the
        # next cycle, reads the old value.
        prev = self.last_tile_addrs
        for i, addr in enumerate(tile.addrs):
            for j, prev_addr in enumerate(prev):
                if addr == prev_addr:
                    distance = 1 + i + (len(prev) - 1 - j)
                    idle = max(idle, SAME_ROW_DISTANCE - distance)
        self.last_tile_addrs = list(tile.addrs)
        self.act_queue.extend([IDLE] * idle)
        for i, (row, addr, add) in enumerate(zip(tile.rows, tile.addrs, tile.adds)):
            self.act_queue.append((pack(row, 8), addr, add, i == 0))
        out = wrap_int32(tile.rows @ tile.weights)
        for addr, add, value in zip(tile.addrs, tile.adds, out):
            if add:
                assert self.acc[addr] is not None, "adding to a row never written"
                self.acc[addr] = wrap_int32(self.acc[addr] + value)
            else:
                self.acc[addr] = value

    async def wait_idle(self):
        """Until every queued row is accepted and busy_o is low (every
        accepted row written)."""
        for _ in range(PATIENCE * (1 + len(self.act_queue))):
            await RisingEdge(self.dut.clk_i)
            await ReadOnly()
            if not self.act_queue and not int(self.dut.busy_o.value):
                return
        raise AssertionError("rows still queued or busy_o still high")

    async def read(self, addrs):
        """Reads accumulator rows, with random gaps between the reads."""
        dut = self.dut
        queue, pending, got = list(addrs), None, {}
        while queue or pending is not None:
            await RisingEdge(dut.clk_i)
            issue = bool(queue) and self.rng.random() >= self.read_gap
            addr = queue.pop(0) if issue else self.rng.randrange(self.N)
            dut.acc_rd_en_i.value = int(issue)
            dut.acc_rd_addr_i.value = addr
            await ReadOnly()
            valid = int(dut.acc_rd_valid_o.value)
            assert valid == (pending is not None), f"acc_rd_valid_o {valid} in cycle {cycle_now()}"
            if pending is not None:
                got[pending] = unpack_int32(int(dut.acc_rd_data_o.value), self.C)
            pending = addr if issue else None
        await RisingEdge(dut.clk_i)
        dut.acc_rd_en_i.value = 0
        return got

    async def check_accumulator(self, what):
        """Waits for the MXU to finish, reads every row the model knows and
        compares; checks the write cycle of every row accepted so far."""
        await self.wait_idle()
        known = [a for a in range(self.N) if self.acc[a] is not None]
        self.rng.shuffle(known)
        got = await self.read(known)
        for addr in known:
            want = [int(v) for v in self.acc[addr]]
            assert got[addr] == want, (
                f"{what}: accumulator row {addr} is {got[addr]}, expected {want}")
        # Documented timing: written in cycle t + R*L + C + La (int8: t + R + C).
        want_writes = [t + self.R + self.C for t in self.accepted]
        if self.writes != want_writes:
            i = next((i for i, (a, b) in enumerate(zip(self.writes, want_writes)) if a != b),
                     min(len(self.writes), len(want_writes)))
            raise AssertionError(
                f"{what}: acc_wr_o in cycles {self.writes[i:i + 8]}..., expected "
                f"{want_writes[i:i + 8]}... (rows accepted in {self.accepted[i:i + 8]}...)")
        return len(known)

    def random_int8(self, shape):
        """int8 values, the extremes -128 and 127 more often than uniform."""
        size = int(np.prod(shape))
        v = [self.rng.choice((-128, 127)) if self.rng.random() < 0.1
             else self.rng.randrange(-128, 128) for _ in range(size)]
        return np.array(v, dtype=np.int64).reshape(shape)


def matmul(bench, a, b, base, add_first=False):
    """C = A @ B through the array: K in tiles of R rows (the first k-tile
    overwrites, later ones add, unless add_first), N in tiles of C columns,
    n-tile j's rows at accumulator rows base + j*M + m. Returns C's shape
    in accumulator rows."""
    m, k = a.shape
    _, n = b.shape
    R, C = bench.R, bench.C
    kt, nt = -(-k // R), -(-n // C)
    # Zero padding to whole tiles (the MXU multiplies whole tiles).
    a_pad = np.zeros((m, kt * R), dtype=np.int64)
    a_pad[:, :k] = a
    b_pad = np.zeros((kt * R, nt * C), dtype=np.int64)
    b_pad[:k, :n] = b
    for j in range(nt):
        for i in range(kt):
            tile = Tile(
                weights=b_pad[i * R:(i + 1) * R, j * C:(j + 1) * C],
                rows=a_pad[:, i * R:(i + 1) * R],
                addrs=[base + j * m + r for r in range(m)],
                adds=[add_first or i > 0] * m,
            )
            bench.run_tile(tile, idle=bench.rng.choice((0, 0, 1, 2, 5)))
    return nt


async def read_matmul(bench, m, n, base):
    """C as the accumulator holds it after `matmul` (int32 [m, n])."""
    nt = -(-n // bench.C)
    rows = await bench.read([base + j * m + r for j in range(nt) for r in range(m)])
    full = np.zeros((m, nt * bench.C), dtype=np.int64)
    for j in range(nt):
        for r in range(m):
            full[r, j * bench.C:(j + 1) * bench.C] = rows[base + j * m + r]
    return full[:, :n]


@cocotb.test()
async def matmul_accumulates_k_tiles_and_overwrites(dut):
    """C = A @ B with K over three tiles and N over two column tiles; then a
    second product into the same rows replaces it (overwrite), and a third is
    added onto that one (add from the first k-tile on)."""
    _, rng = seed_for("matmul_accumulates_k_tiles_and_overwrites")
    bench = MxuBench(dut, rng)
    await bench.start()
    R, C, N = bench.R, bench.C, bench.N
    n = 2 * C - 1 if C > 1 else 1
    m = max(1, min(N // 2, 7))
    k = 3 * R - 1 if R > 1 else 3
    products = []
    for step, add_first in enumerate((False, False, True)):
        a, b = bench.random_int8((m, k)), bench.random_int8((k, n))
        matmul(bench, a, b, base=0, add_first=add_first)
        products.append(wrap_int32(a @ b))
        await bench.wait_idle()
        got = await read_matmul(bench, m, n, base=0)
        want = wrap_int32(products[-1] + (products[-2] if add_first else 0))
        assert np.array_equal(got, want), f"step {step}:\n{got}\nexpected\n{want}"
    rows = await bench.check_accumulator("after the three products")
    dut._log.info("3 products of %dx%d by %dx%d checked, %d accumulator rows", m, k, k, n, rows)


@cocotb.test()
async def random_tiles_match_the_model(dut):
    """Random tiles (1 to N rows, any distinct accumulator rows, add or
    overwrite per row) with random idle cycles, weight gaps and reads in
    between, against the model."""
    _, rng = seed_for("random_tiles_match_the_model")
    bench = MxuBench(dut, rng)
    # From a weight row offered every cycle to one in four cycles.
    bench.weight_gap = rng.choice((0.0, 0.3, 0.75))
    await bench.start()
    R, C, N = bench.R, bench.C, bench.N
    tiles = checks = 0
    for _ in range(200 * soak_factor()):
        m = rng.randint(1, N)
        addrs = rng.sample(range(N), m)
        # Only rows written before can be added to.
        adds = [bench.acc[a] is not None and rng.random() < 0.6 for a in addrs]
        tile = Tile(bench.random_int8((R, C)), bench.random_int8((m, R)), addrs, adds)
        bench.run_tile(tile, idle=rng.choice((0, 0, 0, 1, 3, 8)))
        tiles += 1
        if rng.random() < 0.15:
            await bench.check_accumulator(f"after tile {tiles}")
            checks += 1
    rows = await bench.check_accumulator("at the end")
    dut._log.info("%d tiles (weight gaps %.2f), %d intermediate checks, %d rows at the end",
                  tiles, bench.weight_gap, checks, rows)
