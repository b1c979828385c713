//! The SparseCore's results, as `docs/numerics.md#sparsecore` defines
//! them, on entry lists prepared by [`crate::sparsecore_host`].
//!
//! A table is `rows` x `dim` fp32 bit patterns, row-major. Every sum is the
//! contract's, in its order: per tile, P_t\[s\]\[d\] starts at +0.0 and adds
//! mul32(g, E\[id\]\[d\]) over the tile's entries in sorted order; A\[s\]\[d\]
//! starts at +0.0 and adds P_t\[s\]\[d\] for t = 0 .. T-1. An update accumulates
//! U\[d\] from +0.0 over the id's entries in sorted order, then writes
//! E\[id\]\[d\] = sub32(E\[id\]\[d\], mul32(lr, U\[d\])) once. Entries whose id is
//! outside the table are skipped and counted.

use crate::numerics::{add32, mul32, sub32};
use crate::sparsecore_host::{id_in_table, Prepared};

/// A table of fp32 bit patterns, row-major.
#[derive(Debug, Clone, Copy)]
pub struct Table<'a> {
    pub data: &'a [u32],
    pub rows: u32,
    pub dim: u32,
}

impl<'a> Table<'a> {
    /// A table view; `data` must hold `rows` x `dim` elements.
    pub fn new(data: &'a [u32], rows: u32, dim: u32) -> Self {
        assert_eq!(data.len() as u64, u64::from(rows) * u64::from(dim));
        Table { data, rows, dim }
    }

    fn row(&self, id: i32) -> &'a [u32] {
        let d = self.dim as usize;
        let start = id as usize * d;
        &self.data[start..start + d]
    }
}

/// What a forward pass gives: the activations A\[B\]\[D\] and how many entries
/// were skipped for ids outside the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forward {
    pub activations: Vec<u32>,
    pub invalid: u64,
}

/// Forward: lookup and combine into A\[`batch`\]\[D\].
pub fn forward(table: Table, prepared: &Prepared, batch: u32) -> Forward {
    let d = table.dim as usize;
    let b = batch as usize;
    let mut acts = vec![0u32; b * d];
    let mut invalid = 0;
    for entries in &prepared.tiles {
        let mut partial = vec![0u32; b * d];
        for e in entries {
            if !id_in_table(e.id, table.rows) {
                invalid += 1;
                continue;
            }
            let row = table.row(e.id);
            let p = &mut partial[e.sample as usize * d..][..d];
            for (acc, &x) in p.iter_mut().zip(row) {
                *acc = add32(*acc, mul32(e.gain, x));
            }
        }
        for (a, &p) in acts.iter_mut().zip(&partial) {
            *a = add32(*a, p);
        }
    }
    Forward {
        activations: acts,
        invalid,
    }
}

/// What an update gives: the whole updated table and the skipped entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Update {
    pub table: Vec<u32>,
    pub invalid: u64,
    /// Rows written (each once).
    pub rows_written: u64,
}

/// Update (scatter-add SGD): `grad` is G\[`batch`\]\[D\], `lr` the fp32 rate.
pub fn update(table: Table, prepared: &Prepared, grad: &[u32], batch: u32, lr: u32) -> Update {
    let d = table.dim as usize;
    assert_eq!(grad.len(), batch as usize * d);
    let mut out = table.data.to_vec();
    let mut invalid = 0;
    let mut rows_written = 0;
    for entries in &prepared.tiles {
        let mut i = 0;
        while i < entries.len() {
            let id = entries[i].id;
            if !id_in_table(id, table.rows) {
                invalid += 1;
                i += 1;
                continue;
            }
            let mut u = vec![0u32; d];
            while i < entries.len() && entries[i].id == id {
                let e = entries[i];
                let g = &grad[e.sample as usize * d..][..d];
                for (acc, &x) in u.iter_mut().zip(g) {
                    *acc = add32(*acc, mul32(e.gain, x));
                }
                i += 1;
            }
            let row = &mut out[id as usize * d..][..d];
            for (e, &ud) in row.iter_mut().zip(&u) {
                *e = sub32(*e, mul32(lr, ud));
            }
            rows_written += 1;
        }
    }
    Update {
        table: out,
        invalid,
        rows_written,
    }
}

/// The HBM and queue parameters a cycle count depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// Cycles from a read's handshake to its response (at least 2).
    pub hbm_latency: u32,
    /// Reads the block keeps outstanding at most.
    pub hbm_inflight: u32,
    /// Entries each tile's queue holds.
    pub queue_depth: u32,
    /// Pipeline stages of the fold's adder: each fold write lands this many
    /// cycles later.
    pub depth: u32,
    /// Whether a tile's walker takes its entries from a register stage
    /// loaded from its queue's head (see [`forward_cycles`]).
    pub staged_walk: bool,
    /// Cycles from a combine item entering the combine to its add (the
    /// multiplier's stages, and the product's register with a staged loop).
    pub product_stages: u32,
    /// Stages of the combine's add inside the read-modify-write loop; 0: the
    /// add takes one cycle and a response is combined as it arrives, else
    /// responses wait in a buffer (see [`forward_cycles`]).
    pub loop_stages: u32,
    /// Whether an update keeps many rows in flight (see [`update_cycles`]).
    pub pipelined_update: bool,
    /// Words of each tile's scratchpad (`max_batch` x ceil(`max_dim`/8)),
    /// which bound a pipelined update's U slots.
    pub scratchpad_words: u32,
}

impl Timing {
    /// The block `cfg` with an HBM of fixed latency `hbm_latency`.
    pub fn of(cfg: &config::SparseCoreConfig, hbm_latency: u32) -> Timing {
        Timing {
            hbm_latency,
            hbm_inflight: cfg.hbm_inflight(),
            queue_depth: cfg.queue_depth(),
            depth: cfg.add_stages(),
            staged_walk: cfg.staged_walk(),
            product_stages: cfg.product_stages(),
            loop_stages: cfg.loop_stages(),
            pipelined_update: cfg.pipelined_update(),
            scratchpad_words: cfg.scratchpad_words(),
        }
    }

    /// Cycles from a combine item entering the combine (stage 0) to its
    /// write: 1 + product stages + loop stages.
    fn write_delay(&self) -> u64 {
        1 + u64::from(self.product_stages) + u64::from(self.loop_stages)
    }

    /// The cycle a response answered in cycle `r` enters the combine, the
    /// one before it having entered in `previous`: as it arrives, or with a
    /// response buffer from the cycle it reaches the buffer's head (two
    /// cycles after it arrives, one after the one before it left).
    fn buffered_entry(&self, r: u64, previous: Option<u64>) -> u64 {
        if self.loop_stages == 0 {
            r
        } else {
            previous.map_or(r + 2, |p| (r + 2).max(p + 1))
        }
    }
}

/// A response that entered a staged combine loop: its cycle, tile, sample
/// and the row's elements it adds into.
#[derive(Clone, Copy)]
struct Entered {
    cycle: u64,
    tile: usize,
    sample: u32,
    first: u64,
    last: u64,
}

/// What the cycle model predicts for one forward pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ForwardCycles {
    /// From the cycle `start_i` is accepted (cycle 0) through the last cycle
    /// `busy_o` is high.
    pub cycles: u64,
    /// 32-byte HBM words read.
    pub words_read: u64,
}

/// HBM words covering a row of `dim` elements starting at element `first`.
fn row_words(first: u64, dim: u32) -> u64 {
    (first + u64::from(dim) - 1) / 8 - first / 8 + 1
}

/// One tile in the forward cycle model.
#[derive(Default)]
struct TileWalk {
    /// Entries in the queue with the cycle each was pushed; `None` is the
    /// marker.
    queue: std::collections::VecDeque<(Option<crate::sparsecore_host::Entry>, u64)>,
    /// With a staged walk, the entries in the stage's two places (`None`
    /// inside: the marker), head first, with the cycle from which the walker
    /// sees each.
    stage: std::collections::VecDeque<(Option<crate::sparsecore_host::Entry>, u64)>,
    /// With a staged walk, whether the stage has loaded the marker (it
    /// loads nothing more in the pass).
    marker_staged: bool,
    /// Words of the head entry already granted.
    granted: u64,
    /// The cycle the marker was taken.
    marker: Option<u64>,
    /// The cycle the tile's last response entered the combine.
    last_response: Option<u64>,
}

impl TileWalk {
    /// The walker's head in cycle `c`, if it sees one (`None` inside: the
    /// marker): the stage's, or the queue's from two cycles after its push.
    fn head(&self, timing: Timing, c: u64) -> Option<Option<crate::sparsecore_host::Entry>> {
        if timing.staged_walk {
            self.stage
                .front()
                .filter(|&&(_, seen)| seen <= c)
                .map(|&(item, _)| item)
        } else {
            self.queue
                .front()
                .filter(|&&(_, pushed)| pushed + 2 <= c)
                .map(|&(item, _)| item)
        }
    }

    /// The walker takes its head: the stage's entry, or the queue's head.
    fn take_head(&mut self, timing: Timing) {
        if timing.staged_walk {
            self.stage.pop_front();
        } else {
            self.queue.pop_front();
        }
    }

    /// The stage, with room at the start of cycle `c`, loads the queue's
    /// head unless it has loaded the marker.
    fn load_stage(&mut self, c: u64) {
        if self.marker_staged {
            return;
        }
        if let Some(&(item, pushed)) = self.queue.front() {
            if pushed + 2 <= c {
                self.queue.pop_front();
                self.stage.push_back((item, c + 1));
                self.marker_staged = item.is_none();
            }
        }
    }
}

/// The SparseCore's timing contract (`sparsecore` crate docs, "Protocol and
/// timing contract") for a forward pass, with HBM always ready and answering
/// every read exactly `hbm_latency` cycles after it, and a host that pushes
/// the stream (each tile's entries, then a marker) whenever the block takes
/// it.
///
/// Cycle by cycle from the start (cycle 0): the host pushes the next item of
/// the stream into its tile's queue if that queue holds fewer than
/// `queue_depth` items (an item leaving in a cycle frees its slot the cycle
/// after); an item pushed in cycle c can be at the head from cycle c + 2.
/// With a staged walk the walker's head is the stage's (two places): in
/// every cycle from cycle 1 on in which the stage held fewer than two
/// entries at the cycle's start and has not loaded the tile's marker, the
/// queue's head leaves the queue into the stage, where the walker sees it
/// from the next cycle.
/// Clearing takes cycles 1 ..= S, S = B x ceil(D/8). From cycle S + 1 each
/// tile looks at its head once per cycle: a marker ends its walk, an entry
/// out of bounds is dropped, a valid entry requests its next word. Of the
/// requesting tiles, the lowest-numbered at or above the round-robin pointer
/// (else the lowest-numbered) gets the read, if fewer than `hbm_inflight`
/// reads are outstanding; the pointer moves past it, and the entry leaves
/// with its last word.
///
/// A response enters the combine in cycle e: with the add in one cycle
/// (loop stages A = 0) as it arrives (e = r); with A stages, in arrival
/// order from a buffer, at the earliest two cycles after it arrives and one
/// after the response before it entered, and not while a response to the
/// same tile that adds into one of its partial sums (same sample, a common
/// element of the row) entered fewer than A + 2 cycles before. A read counts
/// as outstanding until its response has entered (from cycle e + 1 it no
/// longer does). Its write lands W = 1 + M + A cycles after it entered (M
/// the stages ahead of the add: the multiplier's, and with A > 0 one more
/// for the product's register). With pipeline depth P (the fold adder's
/// stages), tile t is finished at fin_t = max(marker + 1, last entry + 1 +
/// W); its fold starts at f_t = max(fin_t, g_t) + 1 with g_0 = S + 1 and
/// g_t = f_(t-1) + S + P, and lasts S cycles; the pass ends 1 + P cycles
/// after the last fold's last read (its write).
pub fn forward_cycles(
    prepared: &Prepared,
    rows: u32,
    dim: u32,
    batch: u32,
    timing: Timing,
) -> ForwardCycles {
    let latency = u64::from(timing.hbm_latency);
    let inflight = timing.hbm_inflight as usize;
    let depth = timing.queue_depth as usize;
    let stages = u64::from(timing.depth);
    let loop_gap = u64::from(timing.loop_stages) + 2;
    let span = u64::from(batch) * u64::from(dim.div_ceil(8));
    let n_tiles = prepared.tiles.len();
    let mut last_entry = None;
    // The latest responses into a staged loop: only the last A + 2 can hold
    // a later one back, as one enters per cycle at most.
    let mut entered: std::collections::VecDeque<Entered> = std::collections::VecDeque::new();
    // The stream, in order: (tile, entry or marker).
    let stream = entry_stream(prepared);
    let mut tiles: Vec<TileWalk> = (0..n_tiles).map(|_| TileWalk::default()).collect();
    let mut next = 0;
    let mut outstanding: std::collections::VecDeque<u64> = std::collections::VecDeque::new();
    let mut pointer = 0;
    let mut words_read = 0;
    let mut c = 0u64;
    while tiles.iter().any(|t| t.marker.is_none()) {
        // The host: one push per cycle into the current tile's queue.
        if let Some(&(t, item)) = stream.get(next) {
            if tiles[t].queue.len() < depth {
                tiles[t].queue.push_back((item, c));
                next += 1;
            }
        }
        // The stages' room at the cycle's start.
        let room: Vec<bool> = tiles.iter().map(|t| t.stage.len() < 2).collect();
        if c > span {
            let mut requests = Vec::new();
            for (i, tile) in tiles.iter_mut().enumerate() {
                if tile.marker.is_some() {
                    continue;
                }
                let Some(head) = tile.head(timing, c) else {
                    continue;
                };
                match head {
                    None => {
                        tile.take_head(timing);
                        tile.marker = Some(c);
                    }
                    Some(e) if !id_in_table(e.id, rows) || e.sample >= batch => {
                        tile.take_head(timing);
                    }
                    Some(_) => requests.push(i),
                }
            }
            while outstanding.front().is_some_and(|&r| r < c) {
                outstanding.pop_front();
            }
            if outstanding.len() < inflight && !requests.is_empty() {
                let g = round_robin(&requests, &mut pointer, n_tiles);
                let r = c + latency;
                let tile = &mut tiles[g];
                let e = tile.head(timing, c).expect("a requesting tile has a head");
                let e = e.expect("a requesting head is an entry");
                let row = u64::from(e.id as u32) * u64::from(dim);
                let word = (row / 8 + tile.granted) * 8;
                let mut item = Entered {
                    cycle: timing.buffered_entry(r, last_entry),
                    tile: g,
                    sample: e.sample,
                    first: word.max(row) - row,
                    last: (word + 7).min(row + u64::from(dim) - 1) - row,
                };
                if timing.loop_stages > 0 {
                    for x in &entered {
                        let overlaps = x.first <= item.last && item.first <= x.last;
                        if x.tile == g && x.sample == e.sample && overlaps {
                            item.cycle = item.cycle.max(x.cycle + loop_gap);
                        }
                    }
                    entered.push_back(item);
                    if entered.len() as u64 > loop_gap {
                        entered.pop_front();
                    }
                }
                last_entry = Some(item.cycle);
                outstanding.push_back(item.cycle);
                words_read += 1;
                tile.last_response = Some(item.cycle);
                tile.granted += 1;
                if tile.granted == row_words(row, dim) {
                    tile.take_head(timing);
                    tile.granted = 0;
                }
            }
        }
        if timing.staged_walk && c >= 1 {
            for (tile, room) in tiles.iter_mut().zip(room) {
                if room {
                    tile.load_stage(c);
                }
            }
        }
        c += 1;
    }
    let mut ready = span + 1;
    let mut end = 0;
    for tile in &tiles {
        let marker = tile.marker.expect("every tile took its marker");
        let finished = match tile.last_response {
            Some(e) => (marker + 1).max(e + 1 + timing.write_delay()),
            None => marker + 1,
        };
        let fold = finished.max(ready) + 1;
        ready = fold + span + stages;
        end = fold + span + 1 + stages;
    }
    ForwardCycles {
        cycles: end,
        words_read,
    }
}

/// The entry stream the host pushes, in order: each tile's entries, then
/// its marker (`None`).
fn entry_stream(prepared: &Prepared) -> Vec<(usize, Option<crate::sparsecore_host::Entry>)> {
    prepared
        .tiles
        .iter()
        .enumerate()
        .flat_map(|(t, entries)| {
            entries
                .iter()
                .map(move |&e| (t, Some(e)))
                .chain(std::iter::once((t, None)))
        })
        .collect()
}

/// The read arbiter's grant among the requesting tiles (ascending, not
/// empty): the first at or after `pointer`, else the lowest; the pointer
/// moves past the grant.
fn round_robin(requests: &[usize], pointer: &mut usize, tiles: usize) -> usize {
    let g = requests
        .iter()
        .copied()
        .find(|&i| i >= *pointer)
        .unwrap_or(requests[0]);
    *pointer = (g + 1) % tiles;
    g
}

/// What the cycle model predicts for one update pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UpdateCycles {
    /// From the cycle `start_i` is accepted (cycle 0) through the last cycle
    /// `busy_o` is high.
    pub cycles: u64,
    /// 32-byte HBM words read and written (each updated row once each way).
    pub words_read: u64,
    pub words_written: u64,
}

/// Issues `words` reads from cycle `t` under the in-flight rule; returns the
/// cycle after the last issue and the cycle the last response entered the
/// combine (`last_entry`: the last response's entry so far).
fn issue_reads(
    mut t: u64,
    words: u64,
    timing: Timing,
    outstanding: &mut std::collections::VecDeque<u64>,
    last_entry: &mut Option<u64>,
) -> (u64, u64) {
    let mut last = 0;
    for _ in 0..words {
        let mut c = t;
        while outstanding.front().is_some_and(|&r| r < c) {
            outstanding.pop_front();
        }
        if outstanding.len() == timing.hbm_inflight as usize {
            c = outstanding.pop_front().expect("full") + 1;
        }
        last = timing.buffered_entry(c + u64::from(timing.hbm_latency), *last_entry);
        *last_entry = Some(last);
        outstanding.push_back(last);
        t = c + 1;
    }
    (t, last)
}

/// The SparseCore's timing contract for an update pass (`sparsecore` crate
/// docs), with HBM always ready, a fixed `hbm_latency` and a host that
/// pushes whenever the block takes the stream.
///
/// With [`Timing::pipelined_update`] (depth 0) the update keeps many rows in
/// flight; its rules are stated with the pipelined model below
/// (`pipelined_update_cycles`). Otherwise it handles one id at a time:
/// the tiles walk one after another, each from the cycle after the previous
/// one took its marker; a tile's entries are pushed while the tiles before
/// it work, so its queue never runs dry. There is no clear: tile 0 walks
/// from cycle 1, but the first entry, pushed in the start's cycle, reaches
/// the head of its queue in cycle 2 (the walker in cycle 3 with a staged
/// walk), so the first step is in cycle 2 (3). A
/// marker takes one cycle (after the last tile's, the pass ends); an entry with an id outside the table
/// one cycle. An id's first entry takes one cycle, then every entry of the
/// id ceil(D/8) cycles (its gradient row into U, one word per cycle) and
/// one more (looking at the next entry). With the add staged inside the
/// loop (A stages) an entry's first word waits until A + 2 cycles after the
/// previous entry's first word, and the row's reads wait until the id's last
/// word of U has been written (W = 1 + M + A cycles after it entered, M as
/// in [`forward_cycles`]). Then the id's row is read, one word per cycle under
/// the in-flight rule; each response enters the combine as in
/// [`forward_cycles`] (never held back: a row's responses write no partial
/// sum), is written back W cycles later and leaves the write queue two
/// cycles after that; the walk resumes one cycle after the last read was
/// issued, or 4 + W cycles after the last response entered if that is
/// later.
pub fn update_cycles(
    prepared: &Prepared,
    rows: u32,
    dim: u32,
    batch: u32,
    timing: Timing,
) -> UpdateCycles {
    if timing.pipelined_update {
        return pipelined_update_cycles(prepared, rows, dim, batch, timing);
    }
    let chunks = u64::from(dim.div_ceil(8));
    let write_delay = timing.write_delay();
    let loop_gap = u64::from(timing.loop_stages) + 2;
    let mut outstanding = std::collections::VecDeque::new();
    let mut last_entry = None;
    let mut t = 2 + u64::from(timing.staged_walk);
    let mut words = 0u64;
    let mut end = 0;
    for (i, entries) in prepared.tiles.iter().enumerate() {
        let mut k = 0;
        while k < entries.len() {
            let e = entries[k];
            if !id_in_table(e.id, rows) || e.sample >= batch {
                t += 1;
                k += 1;
                continue;
            }
            // `t` becomes the cycle the walker is in Accumulate for the
            // entry; `first` the cycle its first word enters.
            t += 1;
            let mut first: Option<u64> = None;
            while k < entries.len() && entries[k].id == e.id && entries[k].sample < batch {
                let start = match first {
                    Some(f) if timing.loop_stages > 0 => t.max(f + loop_gap),
                    _ => t,
                };
                first = Some(start);
                t = start + chunks + 1;
                k += 1;
            }
            if timing.loop_stages > 0 {
                t += write_delay;
            }
            let words_of_row = row_words(u64::from(e.id as u32) * u64::from(dim), dim);
            words += words_of_row;
            let (after, last) =
                issue_reads(t, words_of_row, timing, &mut outstanding, &mut last_entry);
            t = (after + 1).max(last + 4 + write_delay);
        }
        // The marker.
        if i + 1 == prepared.tiles.len() {
            end = t + 1;
        }
        t += 1;
    }
    UpdateCycles {
        cycles: end,
        words_read: words,
        words_written: words,
    }
}

/// A pipelined update's U slots per tile for rows of `dim` elements: one per
/// read in flight, as many as fit the scratchpad at ceil(D/8) words each.
pub fn update_slots(timing: Timing, dim: u32) -> u32 {
    timing
        .hbm_inflight
        .min(timing.scratchpad_words / dim.div_ceil(8))
}

/// An item in a first-word fall-through queue: at its head from two cycles
/// after its push, or the cycle after the item ahead of it left.
fn fwft_head(pushed: u64, ahead_left: Option<u64>) -> u64 {
    ahead_left.map_or(pushed + 2, |l| (pushed + 2).max(l + 1))
}

/// A tile of the pipelined update model.
#[derive(Default)]
struct UpdateTile {
    /// The entry queue: (entry or marker, cycle pushed).
    queue: std::collections::VecDeque<(Option<crate::sparsecore_host::Entry>, u64)>,
    /// The open run's id.
    open: Option<i32>,
    /// The head entry's gradient words already stepped.
    stepped: u64,
    /// Slots held: runs opened and not yet released.
    held: u64,
    /// Slots released, effective from these cycles.
    releases: Vec<u64>,
    /// Rows accumulated and waiting for their reads: (first HBM element,
    /// cycle the row is at the row queue's head at the earliest).
    rows: std::collections::VecDeque<(u64, u64)>,
    /// The cycle the last row left the row queue.
    row_left: Option<u64>,
    /// The head row's words already granted.
    granted: u64,
}

/// The pipelined update's timing contract (`sparsecore` crate docs,
/// "Update pass, pipelined"), with HBM always ready for reads and writes,
/// answering each read exactly `hbm_latency` cycles after it, and a host
/// that pushes the stream whenever the block takes it.
///
/// Cycle by cycle from the start (cycle 0), the host pushes as in
/// [`forward_cycles`]. Tile 0 walks from cycle 1, tile t + 1 from the cycle
/// after tile t took its marker; the walking tile looks at its head once per
/// cycle: a marker is taken, an entry out of bounds is taken (counted), and
/// either closes the open run. A valid entry's first word opens a run when
/// no run is open or its id is not the open run's (closing that one), and
/// waits while every one of the tile's [`update_slots`] is held; each of
/// its ceil(D/8) words is one step, one per cycle, and the last takes the
/// entry. A slot is held from the cycle after its run opens through the
/// cycle its row's last response enters. A run closed in cycle c puts its
/// row into the tile's row queue, at the head from c + 2 or the cycle after
/// the row ahead left. Each cycle the channel carries one transfer: the
/// write at the write queue's head if there is one, else a read, granted as
/// in [`forward_cycles`] among the tiles whose row queue has a head, if
/// fewer than `hbm_inflight` reads are outstanding, a read counting from
/// its grant through the cycle its write is accepted. A row leaves its
/// queue with its last word's grant. A response answered in cycle r is
/// written into the write queue in r + 1 and is at its head from r + 3, or
/// the cycle after the write ahead of it left. The pass ends (`busy_o`
/// low) two cycles after the later of the last tile's marker and the last
/// write.
fn pipelined_update_cycles(
    prepared: &Prepared,
    rows: u32,
    dim: u32,
    batch: u32,
    timing: Timing,
) -> UpdateCycles {
    use std::collections::VecDeque;
    let latency = u64::from(timing.hbm_latency);
    let inflight = timing.hbm_inflight as usize;
    let depth = timing.queue_depth as usize;
    let slots = u64::from(update_slots(timing, dim));
    let chunks = u64::from(dim.div_ceil(8));
    let n_tiles = prepared.tiles.len();
    let stream = entry_stream(prepared);
    let mut tiles: Vec<UpdateTile> = (0..n_tiles).map(|_| UpdateTile::default()).collect();
    let mut next = 0;
    // The walking tile and the cycle it walks from.
    let mut walker = 0;
    let mut walk_from = 1u64;
    let mut last_marker = 0u64;
    // Responses to come: (cycle, tile, its row's last word).
    let mut responses: VecDeque<(u64, usize, bool)> = VecDeque::new();
    // Writes pushed and not yet accepted: the cycle each was pushed.
    let mut writes: VecDeque<u64> = VecDeque::new();
    let mut write_left: Option<u64> = None;
    let mut last_write = None;
    // Reads granted and their writes not yet accepted.
    let mut credits = 0usize;
    let mut pointer = 0;
    let mut words = 0u64;
    let mut c = 0u64;
    loop {
        // The host pushes first (a queue's room is as the cycle before left
        // it).
        if let Some(&(t, item)) = stream.get(next) {
            if tiles[t].queue.len() < depth {
                tiles[t].queue.push_back((item, c));
                next += 1;
            }
        }
        for tile in tiles.iter_mut() {
            let freed = tile.releases.iter().filter(|&&r| r <= c).count() as u64;
            tile.releases.retain(|&r| r > c);
            tile.held -= freed;
        }
        // The walk.
        if walker < n_tiles && c >= walk_from {
            let tile = &mut tiles[walker];
            if let Some(&(item, pushed)) = tile.queue.front() {
                if pushed + 2 <= c {
                    match item {
                        None => {
                            tile.queue.pop_front();
                            close_run(tile, dim, c);
                            last_marker = c;
                            walker += 1;
                            walk_from = c + 1;
                        }
                        Some(e) if !id_in_table(e.id, rows) || e.sample >= batch => {
                            tile.queue.pop_front();
                            close_run(tile, dim, c);
                        }
                        Some(e) => {
                            let opens = tile.stepped == 0 && tile.open != Some(e.id);
                            if !opens || tile.held < slots {
                                if opens {
                                    close_run(tile, dim, c);
                                    tile.open = Some(e.id);
                                    tile.held += 1;
                                }
                                tile.stepped += 1;
                                if tile.stepped == chunks {
                                    tile.stepped = 0;
                                    tile.queue.pop_front();
                                }
                            }
                        }
                    }
                }
            }
        }
        // Responses entering this cycle.
        while responses.front().is_some_and(|&(r, _, _)| r == c) {
            let (r, t, last) = responses.pop_front().expect("a response");
            if last {
                tiles[t].releases.push(r + 1);
            }
            writes.push_back(r + 1);
        }
        // The channel: the write at the queue's head, else a read.
        let write_head = writes
            .front()
            .map(|&pushed| fwft_head(pushed, write_left))
            .filter(|&at| at <= c);
        if write_head.is_some() {
            writes.pop_front();
            write_left = Some(c);
            last_write = Some(c);
            credits -= 1;
        } else if credits < inflight {
            let requests: Vec<usize> = (0..n_tiles)
                .filter(|&i| {
                    let tile = &tiles[i];
                    tile.rows
                        .front()
                        .is_some_and(|&(_, avail)| fwft_head(avail, tile.row_left) <= c)
                })
                .collect();
            if !requests.is_empty() {
                let g = round_robin(&requests, &mut pointer, n_tiles);
                let tile = &mut tiles[g];
                let (first, _) = *tile.rows.front().expect("a requesting row");
                tile.granted += 1;
                let last = tile.granted == row_words(first, dim);
                if last {
                    tile.rows.pop_front();
                    tile.row_left = Some(c);
                    tile.granted = 0;
                }
                responses.push_back((c + latency, g, last));
                credits += 1;
                words += 1;
            }
        }
        let idle = walker == n_tiles
            && responses.is_empty()
            && writes.is_empty()
            && tiles.iter().all(|t| t.rows.is_empty());
        if idle {
            let end = (last_marker + 1).max(last_write.map_or(0, |w| w + 1)) + 1;
            return UpdateCycles {
                cycles: end,
                words_read: words,
                words_written: words,
            };
        }
        c += 1;
    }
}

/// Closes the tile's open run in cycle `c`: its row joins the row queue
/// (pushed in `c`, see [`fwft_head`]).
fn close_run(tile: &mut UpdateTile, dim: u32, c: u64) {
    if let Some(id) = tile.open.take() {
        tile.rows
            .push_back((u64::from(id as u32) * u64::from(dim), c));
    }
}
