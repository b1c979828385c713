//! Yosys recipes for designs that contain the MXU: the synthesis script of
//! each board build, and the pieces the `fpga` report's scripts share with it.
//!
//! Two things differ from running a family's stock `synth_*` command:
//!
//! - **Multipliers go to DSP blocks only up to the part's count.** Stock Yosys
//!   maps every multiplier to a DSP block whatever the device holds, so an
//!   array with more processing elements than DSPs fails in place and route.
//!   The first `dsps` processing elements (row-major) keep their multiplier
//!   for the DSPs; the others are turned into `$macc` cells first, which
//!   become LUT logic.
//! - **iCE40 runs without `ice40_dsp`.** That pass folds the partial-sum adder
//!   and register of the processing elements into SB_MAC16 accumulators, and
//!   the netlist does not simulate like the RTL: under Icarus with Yosys'
//!   cell models, an int8 MXU synthesised with Yosys 0.23's `synth_ice40
//!   -dsp` gives X on accumulator bits where the RTL has 0 or 1, also with
//!   every x constant in the netlist replaced by 0 and the DSP registers
//!   starting at 0 as on the chip. With this recipe every compared bit
//!   matches the RTL (`fpga/tests/gate_level.rs` runs both). Each multiplier
//!   is then a plain SB_MAC16 multiplier and the adders are LUT carry chains.

use crate::Board;
use config::MxuConfig;
use std::fmt::Write;

/// The `coarse` step of Yosys 0.23's `synth_ice40 -dsp`, spelt out, less
/// `ice40_dsp` (see the module documentation).
pub const ICE40_COARSE_WITHOUT_DSP_PACKING: &str = "opt_expr; opt_clean; check; \
    opt -nodffe -nosdff; fsm; opt; wreduce; peepopt; opt_clean; share; \
    techmap -map +/cmp2lut.v -D LUT_WIDTH=4; opt_expr; opt_clean; memory_dff; wreduce t:$mul; \
    techmap -map +/mul2dsp.v -map +/ice40/dsp_map.v -D DSP_A_MAXWIDTH=16 -D DSP_B_MAXWIDTH=16 \
    -D DSP_A_MINWIDTH=2 -D DSP_B_MINWIDTH=2 -D DSP_Y_MINWIDTH=11 -D DSP_NAME=$__MUL16X16; \
    select a:mul2dsp; setattr -unset mul2dsp; opt_expr -fine; wreduce; select -clear; \
    chtype -set $mul t:$__soft_mul; alumacc; opt; memory -nomap; opt_clean";

/// Yosys `select` patterns naming the first `k` processing elements of an
/// MXU with `cols` columns, in row-major order (instances
/// `g_pe_row[r].g_pe_col[c]`, at any depth of the hierarchy once flattened).
pub fn pe_patterns(k: u64, cols: u64) -> Vec<String> {
    let mut pats = Vec::new();
    if cols == 0 {
        return pats;
    }
    for r in 0..k / cols {
        pats.push(format!("n:*g_pe_row?{r}?.*"));
    }
    let r = k / cols;
    for c in 0..k % cols {
        pats.push(format!("n:*g_pe_row?{r}?.g_pe_col?{c}?.*"));
    }
    pats
}

/// Yosys commands, for a flattened design, that leave the multipliers of the
/// first `dsps` of `pes` processing elements (in `cols` columns) for DSP
/// blocks and turn the others into `$macc` cells (LUT logic). Empty when every
/// multiplier has a DSP.
pub fn dsp_budget_commands(pes: u64, dsps: u64, cols: u64) -> String {
    let k = pes.min(dsps);
    if k == pes {
        return String::new();
    }
    hw::dsp_budget_commands(&pe_patterns(k, cols))
}

/// The command that reads `sources` (file names), deferring elaboration.
pub fn read_command(sources: &[String]) -> String {
    format!("read_verilog -defer {}\n", sources.join(" "))
}

/// The commands every script runs after reading: elaborate, refuse latches,
/// flatten.
pub fn elaborate_commands(top: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "hierarchy -top {top}");
    let _ = writeln!(s, "proc");
    let _ = writeln!(
        s,
        "select -assert-none t:$dlatch t:$adlatch t:$dlatchsr t:$sr"
    );
    let _ = writeln!(s, "flatten");
    let _ = writeln!(s, "opt_expr; opt_clean; wreduce");
    s
}

/// `synth_ice40 -dsp` without `ice40_dsp` (see the module documentation).
pub fn ice40_dsp_commands(top: &str) -> String {
    format!(
        "synth_ice40 -dsp -top {top} -run :coarse\n{ICE40_COARSE_WITHOUT_DSP_PACKING}\n\
         synth_ice40 -dsp -top {top} -run map_ram:\n"
    )
}

/// The board FPGA's synthesis, after the DSP budget.
pub fn family_commands(board: Board, top: &str) -> String {
    match board {
        Board::IceBreaker => ice40_dsp_commands(top),
        Board::Ulx3s => format!("synth_ecp5 -top {top}\n"),
        // synth_gowin puts IO buffers on the ports of every module left
        // (its iopadmap), so the modules kept apart for their registers
        // (`hw::ModuleBuilder::keep_hierarchy`) are flattened first.
        Board::TangNano20k | Board::TangNano9k => {
            format!("setattr -mod -unset keep_hierarchy\nflatten\nsynth_gowin -top {top}\n")
        }
    }
}

/// DSP blocks of each board's FPGA the recipe fills, in the units an MXU
/// multiplier takes (iCE40 UP5K: 8 SB_MAC16; ECP5-85F: 156 MULT18X18D).
/// On Gowin the unit is a MULT9X9 site, two per MULT18X18, since every MXU
/// product, int8 or a bf16 mantissa, fits 9x9 and Yosys maps it to a
/// MULT9X9: nextpnr-himbaechel lists 96 sites on the GW2AR-18 and 40 on the
/// GW1NR-9. The recipe fills nine tenths of them: with all 40 of the
/// GW1NR-9's taken (an int8 7x7) the placer's legaliser had not finished
/// after 14 minutes, with 36 (6x6) the whole place and route took 3. The
/// `fpga` report counts Gowin blocks as MULT18X18s, a MULT9X9 as one.
pub fn board_dsps(board: Board) -> u64 {
    match board {
        Board::IceBreaker => 8,
        Board::Ulx3s => 156,
        Board::TangNano20k => GOWIN_GW2AR18_MULT9_SITES * 9 / 10,
        Board::TangNano9k => GOWIN_GW1NR9_MULT9_SITES * 9 / 10,
    }
}

/// MULT9X9 sites of the GW2AR-18 and the GW1NR-9 (nextpnr-himbaechel's
/// device utilisation).
const GOWIN_GW2AR18_MULT9_SITES: u64 = 96;
const GOWIN_GW1NR9_MULT9_SITES: u64 = 40;

/// The DSP units (as [`board_dsps`] counts them) one signed 32x32 product
/// of the TensorCore's activation unit takes: four 18x18 blocks on iCE40
/// and ECP5; on Gowin one MULT36X36, four MULT18X18s, eight MULT9X9 sites.
fn requant_dsps(board: Board) -> u64 {
    match board {
        Board::IceBreaker | Board::Ulx3s => 4,
        Board::TangNano20k | Board::TangNano9k => 8,
    }
}

/// Yosys commands, for a flattened design, that leave the first `dsps` of
/// the MXU's multipliers for DSP blocks (one block each: every MXU
/// multiplier fits an `SB_MAC16` and a `MULT18X18D`), in the order its FPGA
/// facts list them (int8 at depths 4 and 5: whole products, then the high
/// halves, then the low ones, as the `fpga` flows plan them), and turn the
/// others into `$macc` cells. Empty when every multiplier has a block; at
/// depth 0 to 3, one multiplier per PE, [`dsp_budget_commands`].
pub fn mxu_dsp_budget_commands(cfg: &MxuConfig, dsps: u64) -> String {
    let facts = hw::Block::fpga(&mxu::Mxu, cfg).expect("every MXU states its FPGA facts");
    let one_each = vec![1; facts.multipliers.len()];
    facts.dsp_share(&one_each, dsps).commands()
}

/// The synthesis recipe of a board build with top `top` around the MXU
/// `mxu`, after its sources are read: one command per entry (elaborate,
/// DSP budget, the family's synthesis).
pub fn board_recipe(board: Board, top: &str, mxu: &MxuConfig) -> Vec<String> {
    let mut text = elaborate_commands(top);
    text.push_str(&mxu_dsp_budget_commands(mxu, board_dsps(board)));
    text.push_str(&family_commands(board, top));
    text.lines()
        .flat_map(|l| l.split("; "))
        .map(|c| c.trim().to_string())
        .filter(|c| !c.is_empty())
        .collect()
}

/// The synthesis recipe of a TensorCore board build: as [`board_recipe`],
/// with the DSP budget counting the activation unit's C signed 32x32
/// requantization products ([`requant_dsps`] units each) before the
/// processing elements; when they do not all fit, the first PEs keep DSPs
/// and every other multiplier becomes logic.
pub fn tc_board_recipe(board: Board, top: &str, rows: u32, cols: u32) -> Vec<String> {
    let pes = u64::from(rows) * u64::from(cols);
    let lanes = requant_dsps(board) * u64::from(cols);
    let dsps = board_dsps(board);
    let mut text = elaborate_commands(top);
    // The MXU's accumulator and the unified buffer in block RAM.
    text.push_str("setattr -set ram_style \"block\" m:*acc m:*ub m:*wmem m:*prog\n");
    if pes + lanes > dsps {
        let k = pes.min(dsps);
        text.push_str(&hw::dsp_budget_commands(&pe_patterns(k, u64::from(cols))));
    }
    text.push_str(&family_commands(board, top));
    text.lines()
        .flat_map(|l| l.split("; "))
        .map(|c| c.trim().to_string())
        .filter(|c| !c.is_empty())
        .collect()
}

/// The recipe as a Yosys script (`yosys -s`): reads `sources` (file names in
/// the build folder), runs `recipe`, writes `<top>.json` for nextpnr. `head`
/// is the file's header comment.
pub fn board_script(
    board: Board,
    sources: &[String],
    top: &str,
    recipe: &[String],
    head: &str,
) -> String {
    let mut s = head.to_string();
    let _ = writeln!(
        s,
        "#\n# Run from this folder: yosys -s {}\n",
        script_name(board)
    );
    s.push_str(&read_command(sources));
    for c in recipe {
        let _ = writeln!(s, "{c}");
    }
    let _ = writeln!(s, "stat");
    let _ = writeln!(s, "write_json {top}.json");
    s
}

/// The recipe for FuseSoC (edalize's Yosys backend): a Tcl file, read as a
/// `tclSource` after the Verilog, that redefines the `synth` procedure the
/// backend's script calls next. Every Tcl special character is escaped.
pub fn board_tcl(recipe: &[String], head: &str) -> String {
    let mut s = head.to_string();
    let _ = writeln!(
        s,
        "#\n# Read by edalize's Yosys script after the sources (FuseSoC targets \
         icebreaker, ulx3s,\n# tangnano20k, tangnano9k): replaces its `synth` procedure with this recipe.\n"
    );
    let _ = writeln!(s, "proc synth {{top}} {{");
    for c in recipe {
        let escaped: String = c
            .chars()
            .flat_map(|ch| match ch {
                '$' | '[' | ']' | '{' | '}' | '"' | '\\' | ';' => vec!['\\', ch],
                _ => vec![ch],
            })
            .collect();
        let _ = writeln!(s, "  yosys {escaped}");
    }
    let _ = writeln!(s, "}}");
    s
}

/// The file name of a board build's synthesis script.
pub fn script_name(board: Board) -> String {
    format!("{}.ys", board.top_name())
}

/// The file name of a board build's synthesis recipe for FuseSoC.
pub fn tcl_name(board: Board) -> String {
    format!("{}_synth.tcl", board.top_name())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_cover_whole_rows_then_a_partial_row() {
        assert_eq!(
            pe_patterns(6, 4),
            vec![
                "n:*g_pe_row?0?.*",
                "n:*g_pe_row?1?.g_pe_col?0?.*",
                "n:*g_pe_row?1?.g_pe_col?1?.*"
            ]
        );
        assert!(pe_patterns(0, 4).is_empty());
    }

    fn mxu(rows: u32, cols: u32, depth: u32) -> MxuConfig {
        MxuConfig::new(rows, cols, config::ElemType::Int8)
            .and_then(|c| c.with_depth(depth))
            .unwrap()
    }

    #[test]
    fn an_mxu_s_budget_counts_its_multipliers_not_its_pes() {
        // Depth 0: one multiplier per PE, the PEs' own budget.
        assert_eq!(
            mxu_dsp_budget_commands(&mxu(4, 4, 0), 8),
            dsp_budget_commands(16, 8, 4)
        );
        // Depth 4: two halves per PE; the UP5K's 8 blocks take 8 high
        // halves (two rows of them), not both halves of 8 PEs.
        let s = mxu_dsp_budget_commands(&mxu(4, 4, 4), 8);
        assert!(
            s.starts_with("select -set dspmul n:*g_pe_row?0?.*mul_hi* n:*g_pe_row?1?.*mul_hi*\n"),
            "{s}"
        );
        // 32 halves fit 32 blocks: no budget.
        assert_eq!(mxu_dsp_budget_commands(&mxu(4, 4, 5), 32), "");
        // Whole rows first.
        let whole = mxu(4, 4, 5).with_whole_rows(1).unwrap();
        let s = mxu_dsp_budget_commands(&whole, 6);
        assert!(
            s.contains(
                "n:*g_pe_row?0?.*mul_whole* n:*g_pe_split_row?0?.g_pe_split_col?0?.*mul_hi* "
            ),
            "{s}"
        );
    }

    #[test]
    fn budget_commands_only_when_multipliers_outnumber_dsps() {
        assert_eq!(dsp_budget_commands(9, 9, 3), "");
        let s = dsp_budget_commands(9, 8, 3);
        assert!(s.contains("n:*g_pe_row?2?.g_pe_col?1?.*"), "{s}");
        assert!(s.ends_with("alumacc @softmul\n"), "{s}");
        assert_eq!(
            dsp_budget_commands(4, 0, 2),
            "select -set softmul t:$mul\nalumacc @softmul\n"
        );
    }

    #[test]
    fn ice40_script_avoids_ice40_dsp() {
        let recipe = board_recipe(Board::IceBreaker, "t", &mxu(3, 3, 0));
        let s = board_script(
            Board::IceBreaker,
            &["a.v".into(), "b.v".into()],
            "t",
            &recipe,
            "# head\n",
        );
        assert!(s.starts_with("# head\n"));
        assert!(s.contains("read_verilog -defer a.v b.v\n"));
        assert!(!s.contains("ice40_dsp"), "{s}");
        assert!(s.contains("-run :coarse") && s.contains("-run map_ram:"));
        assert!(s.contains("alumacc @softmul"));
        assert!(s.ends_with("write_json t.json\n"));
        let e = board_recipe(Board::Ulx3s, "t", &mxu(12, 12, 0)).join("\n");
        assert!(
            e.contains("synth_ecp5 -top t") && !e.contains("alumacc"),
            "{e}"
        );
        let t = board_tcl(&recipe, "");
        assert!(
            t.contains("proc synth {top} {\n  yosys hierarchy -top t\n"),
            "{t}"
        );
        assert!(
            t.contains("  yosys select -set softmul t:\\$mul @dspmul %d\n"),
            "{t}"
        );
        assert!(!t.contains("read_verilog") && t.ends_with("}\n"), "{t}");
    }
}
