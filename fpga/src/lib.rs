//! FPGA flows for Systole's generated Verilog, and one report of what each
//! preset costs on common FPGAs and how fast it runs.
//!
//! `cargo run --release -p fpga -- report` takes the presets the block
//! registry marks for the report ([`report_presets`]), elaborates each with `gen`,
//! runs it through the flow of every part and writes `report.json` and
//! `report.md` (see [`report::Report`]). Then, for each part, it runs every
//! block's searches for the largest design that fits ([`search`], on the
//! block's [`hw::FpgaSearch`]es: the largest square int8 MXU, the largest
//! VPUs, the SparseCore with the most tiles).
//!
//! The flows know no block by name: what they need (multipliers and their
//! widths, memories for block RAM, a size bound, the searches, the presets
//! the report builds) is what each block states through [`hw::Block`], so a
//! new block is covered by registering it.
//!
//! # The flows
//!
//! | family | synthesis | place and route | parts |
//! | --- | --- | --- | --- |
//! | iCE40 | Debian Yosys `synth_ice40` (`-dsp` on UP5K) | nextpnr-ice40, `icepack` | UP5K sg48, HX8K ct256 |
//! | ECP5 | YoWASP Yosys `synth_ecp5` | YoWASP nextpnr-ecp5 | LFE5U-25F, LFE5U-85F (CABGA381) |
//! | Gowin | YoWASP Yosys `synth_gowin` | YoWASP nextpnr-himbaechel-gowin | GW1NR-9, GW2AR-18 (QN88) |
//! | Xilinx 7-series | Debian Yosys `synth_xilinx -family xc7` | none (no open tool here) | Artix-7 35T, 100T |
//!
//! `scripts/fpga/install.sh` installs the tools (apt-get for the Debian ones, a
//! venv under `build/fpga-tools` for the YoWASP ones); the report runs it when
//! a tool is missing.
//!
//! # Design decisions
//!
//! - **A harness around the block** ([`harness`]): an MXU has more port bits
//!   than a small package has pins, so the flows place a four-pin top that
//!   shifts the MXU's inputs in and its outputs out. Every MXU path then
//!   starts and ends at a flip-flop, so Fmax is the MXU's own, and nothing is
//!   optimised away. Its flip-flops are included in the counts and reported.
//! - **Multipliers to DSP blocks up to the part's DSP count, the rest to
//!   LUTs** ([`synth`]): stock Yosys maps every multiplier to a DSP and fails
//!   on parts with few; marking the surplus as LUT logic first is what a
//!   vendor tool does and is what makes the "largest MXU" figure meaningful.
//! - **ECP5 DSP blocks with their own registers** ([`dsp_registers`]): Yosys
//!   maps a multiply to a `MULT18X18D` and leaves its operand and product
//!   registers in the fabric; before place and route, the flow moves plain
//!   flip-flops on either side into the block's input and output registers
//!   (nextpnr then times the block from register to register), checked by a
//!   gate-level simulation against the RTL (`tests/dsp_registers.rs`).
//! - **The accumulator in block RAM** (`ram_style = "block"`); anything else
//!   left as a memory or any latch fails the flow.
//! - **iCE40 without `ice40_dsp`**: that Yosys pass folds the systolic
//!   partial-sum chain into SB_MAC16 accumulators, and the netlist does not
//!   simulate like the RTL (`tests/gate_level.rs`); the flow keeps SB_MAC16
//!   as plain multipliers, and that netlist matches the RTL bit for bit.
//! - **Bounded**: at most `--jobs` tools run at once (default: the number of
//!   cores), each killed after `--tool-timeout`; a failing tool becomes a
//!   one-line error in its entry, never a crash of the run.
//! - **Reruns are incremental**: a finished flow leaves `flow.json` in its
//!   folder with its result and a key over everything it depends on (the
//!   Verilog, the scripts, the nextpnr options, the tool versions); a rerun
//!   with the same key takes the record instead of the tools (`--fresh` not).
//! - **"Fits"** means placed and routed (iCE40, ECP5) or, for 7-series, every
//!   resource at most 100 % of the part after synthesis.
//! - **Rows say why**: each row shows the block's pipeline depth (its
//!   configuration's `depth` key, read like any other) and, after place and
//!   route, the critical path of `clk_i` from nextpnr's log ([`timing`]).
//! - **Shardable**: `report --shard K/N` runs every N-th unit of one work
//!   list (flows, then searches, a search being one unit) and `--merge`
//!   joins the shards into the report one run gives ([`shard`]).

pub mod design;
pub mod dsp_registers;
pub mod flow;
pub mod harness;
pub mod parts;
pub mod report;
pub mod runner;
pub mod search;
pub mod shard;
pub mod synth;
pub mod timing;
pub mod tools;

pub use design::FlowDesign;
pub use gen::preset_table;

/// The designs of the report, from the block registry (`gen::registry`):
/// every preset marked for the FPGA report of the blocks named in `blocks`
/// (every block when empty), or with `quick` the first such preset of each
/// block, each with `params` (by block name) set over it. A block the flows
/// do not build is returned as a note for the report instead, with the
/// block's reason.
pub fn report_presets(
    quick: bool,
    blocks: &[String],
    params: &BlockParams,
    preset: Option<&str>,
) -> Result<(Vec<FlowDesign>, Vec<String>), String> {
    let mut designs = Vec::new();
    let mut notes = Vec::new();
    for block in gen::registry() {
        if !blocks.is_empty() && !blocks.iter().any(|b| b == block.name()) {
            continue;
        }
        let presets: Vec<_> = match preset {
            Some(name) => {
                preset_table(block, name)?;
                block
                    .presets()
                    .into_iter()
                    .filter(|p| p.name == name)
                    .collect()
            }
            None => block
                .presets()
                .into_iter()
                .filter(|p| p.fpga_report)
                .take(if quick { 1 } else { usize::MAX })
                .collect(),
        };
        for preset in presets {
            let mut table = preset.config.to_table();
            table.extend(params.of(block.name()));
            let configured = block
                .configure(&table)
                .map_err(|e| format!("{} preset {}: {e}", block.name(), preset.name))?;
            match FlowDesign::new(configured) {
                Ok(d) => designs.push(d),
                Err(why) => notes.push(format!(
                    "{} preset {}: not built ({why}).",
                    block.name(),
                    preset.name
                )),
            }
        }
    }
    Ok((designs, notes))
}

/// Checks that `key` is a parameter of `block`'s configuration (`setting`
/// is the option as given, for the error): a key the block lacks (a
/// `depth` on a block without pipeline stages) is one line naming the
/// block's parameters.
pub fn check_key(block: &dyn hw::AnyBlock, key: &str, setting: &str) -> Result<(), String> {
    let mut known: Vec<String> = block.default_table().keys().cloned().collect();
    for p in block.params() {
        if !known.iter().any(|k| k == p.name) {
            known.push(p.name.to_string());
        }
    }
    if known.iter().any(|k| k == key) {
        Ok(())
    } else {
        Err(format!(
            "--param {setting}: block {} has no parameter '{key}' (its parameters: {})",
            block.name(),
            known.join(", ")
        ))
    }
}

/// `--param BLOCK.KEY=VALUE` settings: configuration keys set over every
/// preset and search of one block.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BlockParams {
    by_block: std::collections::BTreeMap<String, toml::Table>,
}

impl BlockParams {
    /// Reads `BLOCK.KEY=VALUE` settings; the block must be registered.
    pub fn parse(settings: &[String]) -> Result<BlockParams, String> {
        let mut out = BlockParams::default();
        for text in settings {
            let (name, entry) = text.split_once('.').ok_or_else(|| {
                format!("--param '{text}': expected BLOCK.KEY=VALUE, e.g. mxu.acc_rows=512")
            })?;
            let block = gen::find_block(name)?;
            let (key, value) = param_entry(entry)?;
            check_key(block, &key, text)?;
            out.by_block
                .entry(block.name().to_string())
                .or_default()
                .insert(key, value);
        }
        Ok(out)
    }

    /// The keys set for `block` (none if it has no settings).
    pub fn of(&self, block: &str) -> toml::Table {
        self.by_block.get(block).cloned().unwrap_or_default()
    }

    /// The settings as given, for the report (`mxu.acc_rows=512`).
    pub fn describe(&self) -> Vec<String> {
        self.by_block
            .iter()
            .flat_map(|(b, t)| {
                t.iter().map(move |(k, v)| match v {
                    toml::Value::String(text) => format!("{b}.{k}={text}"),
                    other => format!("{b}.{k}={other}"),
                })
            })
            .collect()
    }
}

/// `KEY=VALUE` as a TOML entry: the value as TOML (`16`, `true`), else as a
/// string (`int32`).
pub fn param_entry(text: &str) -> Result<(String, toml::Value), String> {
    let (key, value) = text
        .split_once('=')
        .filter(|(k, v)| !k.trim().is_empty() && !v.trim().is_empty())
        .ok_or_else(|| format!("--param '{text}': expected KEY=VALUE, e.g. lanes=16"))?;
    let value = value.trim();
    let parsed = format!("v = {value}")
        .parse::<toml::Table>()
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(value.to_string()));
    Ok((key.trim().to_string(), parsed))
}

/// The parts of `--quick`: the smallest of each family.
pub const QUICK_PARTS: [&str; 3] = ["ice40-up5k", "ecp5-25f", "xc7a35t"];

#[cfg(test)]
mod tests {
    use super::*;

    fn shapes(designs: &[FlowDesign]) -> Vec<String> {
        designs.iter().map(|d| d.info().top).collect()
    }

    fn params(settings: &[&str]) -> BlockParams {
        let settings: Vec<String> = settings.iter().map(|s| s.to_string()).collect();
        BlockParams::parse(&settings).unwrap()
    }

    #[test]
    fn the_report_covers_the_registry_fpga_presets() {
        let none = BlockParams::default();
        let (full, notes) = report_presets(false, &[], &none, None).unwrap();
        // Exactly the presets the blocks mark, in registry order, whatever
        // the blocks are.
        let marked: Vec<String> = gen::registry()
            .iter()
            .flat_map(|b| b.presets())
            .filter(|p| p.fpga_report && p.config.fpga().is_ok())
            .map(|p| p.config.top_name())
            .collect();
        assert_eq!(shapes(&full), marked);
        for top in [
            "mxu_int8_4x4_acc256",
            "mxu_bf16_4x4_acc256",
            "vpu_full_8x1_v16_m256",
            "ici_pair_l4_link_w64_d32_b32_t64_r16_k8",
            "sparsecore_t4_d24_b8_q8_f8",
            "tensorcore_4x4_acc64_ub256_w256_b16_q4",
            "torus_node_4x4x4_v4",
        ] {
            assert!(marked.iter().any(|t| t == top), "{top}");
        }
        // Every block's report presets are built.
        assert!(notes.is_empty(), "{notes:?}");
        // Quick: each block's first; a setting applies to its block only.
        let (quick, _) = report_presets(true, &[], &params(&["mxu.acc_rows=512"]), None).unwrap();
        let firsts: Vec<String> = gen::registry()
            .iter()
            .filter_map(|b| b.presets().into_iter().find(|p| p.fpga_report))
            .filter(|p| p.config.fpga().is_ok())
            .map(|p| p.config.top_name().replace("acc256", "acc512"))
            .collect();
        assert_eq!(shapes(&quick), firsts);
        assert_eq!(shapes(&quick)[0], "mxu_int8_4x4_acc512");
        assert!(shapes(&quick).contains(&"tensorcore_4x4_acc64_ub256_w256_b16_q4".to_string()));
        for (block, n) in [("tensorcore", 1), ("ici", 3), ("vpu", 4), ("sparsecore", 3)] {
            let (only, _) = report_presets(false, &[block.into()], &none, None).unwrap();
            assert_eq!(only.len(), n, "{block}");
        }
        let bad = params(&["mxu.acc_rows=100"]);
        assert!(report_presets(false, &[], &bad, None).is_err());
    }

    #[test]
    fn a_preset_replaces_the_report_presets_and_params_override_it() {
        let none = BlockParams::default();
        let mxu = vec!["mxu".to_string()];
        let (one, _) = report_presets(false, &mxu, &none, Some("int8-8x8")).unwrap();
        assert_eq!(shapes(&one), ["mxu_int8_8x8_acc256"]);
        let over = params(&["mxu.rows=2", "mxu.acc_rows=512"]);
        let (one, _) = report_presets(false, &mxu, &over, Some("int8-8x8")).unwrap();
        assert_eq!(shapes(&one), ["mxu_int8_2x8_acc512"]);
        let err = report_presets(false, &mxu, &none, Some("nope")).unwrap_err();
        assert!(
            err.starts_with("unknown preset 'nope' for block mxu (known presets: int8-1x1, "),
            "{err}"
        );
        assert_eq!(err.lines().count(), 1);
    }

    /// A toy block with a pipeline depth: `depth` registers on a bus.
    #[derive(Clone)]
    struct Stages;

    #[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct StagesConfig {
        width: u32,
        depth: u32,
    }

    impl std::fmt::Display for StagesConfig {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "{} stages of {} bits", self.depth, self.width)
        }
    }

    impl hw::Block for Stages {
        type Config = StagesConfig;
        fn name(&self) -> &'static str {
            "stages"
        }
        fn description(&self) -> &'static str {
            "registers"
        }
        fn params(&self) -> Vec<hw::Param> {
            Vec::new()
        }
        fn default_config(&self) -> StagesConfig {
            StagesConfig { width: 8, depth: 0 }
        }
        fn presets(&self) -> Vec<hw::Preset<StagesConfig>> {
            vec![hw::Preset {
                name: "fmax".into(),
                config: StagesConfig { width: 8, depth: 3 },
                fpga_report: false,
            }]
        }
        fn top_name(&self, cfg: &StagesConfig) -> String {
            format!("stages_w{}_d{}", cfg.width, cfg.depth)
        }
        fn fpga(&self, _: &StagesConfig) -> Result<hw::FpgaFacts, String> {
            Err("a toy".into())
        }
        fn companions(&self) -> hw::Companions {
            hw::Companions {
                golden: hw::Has::No { reason: "a toy" },
                driver: hw::Has::No { reason: "a toy" },
                tests: hw::Has::No { reason: "a toy" },
            }
        }
        fn elaborate(
            &self,
            design: &mut hw::Design,
            cfg: &StagesConfig,
        ) -> std::rc::Rc<hw::ModuleDef> {
            let cfg = cfg.clone();
            design.define(&self.top_name(&cfg), &[], |_, m| {
                let mut v = m.input("d_i", hw::Ty::u(cfg.width));
                for i in 0..cfg.depth {
                    let r = m.reg(&format!("stage{i}"), hw::Ty::u(cfg.width));
                    m.set_next(r, v);
                    v = r.q();
                }
                m.output("q_o", v);
            })
        }
    }

    #[test]
    fn a_depth_key_is_set_like_any_other_and_a_preset_under_it() {
        let block: &dyn hw::AnyBlock = &Stages;
        check_key(block, "depth", "depth=2").unwrap();
        let err = check_key(block, "lanes", "lanes=2").unwrap_err();
        assert_eq!(
            err,
            "--param lanes=2: block stages has no parameter 'lanes' (its parameters: depth, width)"
        );
        // The preset, then the flags, as `fpga flow` assembles them.
        let mut table = block.default_table();
        table.extend(preset_table(block, "fmax").unwrap());
        assert_eq!(table.get("depth"), Some(&toml::Value::Integer(3)));
        let (key, value) = param_entry("depth=1").unwrap();
        table.insert(key, value);
        assert_eq!(block.configure(&table).unwrap().top_name(), "stages_w8_d1");
        assert_eq!(
            preset_table(block, "slow").unwrap_err(),
            "unknown preset 'slow' for block stages (known presets: fmax)"
        );
    }

    #[test]
    fn a_depth_setting_needs_a_block_with_a_depth_key() {
        // Whichever blocks have pipeline stages: `depth` sets theirs, and a
        // block without is one line naming its parameters.
        for block in gen::registry() {
            let setting = format!("{}.depth=1", block.name());
            let parsed = BlockParams::parse(std::slice::from_ref(&setting));
            if block.default_table().contains_key("depth") {
                let p = parsed.unwrap();
                assert_eq!(p.describe(), [setting]);
            } else {
                let err = parsed.unwrap_err();
                assert!(
                    err.starts_with(&format!(
                        "--param {setting}: block {} has no parameter 'depth' (its parameters: ",
                        block.name()
                    )),
                    "{err}"
                );
                assert_eq!(err.lines().count(), 1);
            }
        }
    }

    #[test]
    fn block_params_name_a_block_and_a_key() {
        let p = params(&["mxu.acc_rows=512", "vpu.units=int32"]);
        assert_eq!(p.of("mxu"), "acc_rows = 512".parse().unwrap());
        assert_eq!(p.of("vpu"), "units = \"int32\"".parse().unwrap());
        assert!(p.of("ici").is_empty());
        assert_eq!(p.describe(), ["mxu.acc_rows=512", "vpu.units=int32"]);
        for bad in ["acc_rows=512", "nope.x=1", "mxu.acc_rows", "mxu.bogus=1"] {
            assert!(BlockParams::parse(&[bad.to_string()]).is_err(), "{bad}");
        }
    }
}
