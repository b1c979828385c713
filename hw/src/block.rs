//! Blocks: what the tools need to know about a hardware generator.
//!
//! A block (the MXU, the VPU, the SparseCore, the ICI link, the torus, the
//! TensorCore, the stream CRC) is a generator with a configuration type. The
//! tools that must cover every block (`gen` emits it, the lint / Icarus /
//! Yosys checks and the FPGA flows run over its presets, the registry check
//! looks for its golden model, driver and tests) see it through this module
//! only, so adding a block means implementing [`Block`] and adding one line
//! to a registry, not threading a new configuration type through each tool.
//! What the FPGA flows need to know (multipliers and their widths, memories
//! for block RAM, the "largest per part" searches) and where the block's
//! other halves live are part of the trait ([`FpgaFacts`], [`FpgaSearch`],
//! [`Companions`]): the block is the one extension point.
//!
//! Two forms:
//! - [`Block`], typed: the block's configuration type is an associated type,
//!   so a block crate and the code that knows the block (its simulator
//!   driver, its tests) keep working with the real type.
//! - [`AnyBlock`], erased and object safe, so one registry can hold blocks
//!   with different configuration types. Every `Block` is an `AnyBlock`.
//!   Configurations cross it as TOML tables (the form of `gen --config FILE`
//!   and of the command-line flags) and come back validated, as a boxed
//!   [`Configured`]: the block paired with one legal configuration, which can
//!   be elaborated, named and described without knowing its type.
//!
//! A configuration type validates when it is deserialised (a value that
//! exists is a legal one), so the TOML path is also the validation path:
//! [`AnyBlock::configure`] fills the keys a table leaves out from the block's
//! default and refuses unknown keys and illegal values with one line.

mod facts;

pub use facts::{
    dsp_budget_commands, multiplier_census, Companions, DspShare, FpgaFacts, FpgaSearch, Has,
    MultiplierShape, Multipliers, Owners, SearchSizes,
};

use crate::design::Design;
use crate::ir::ModuleDef;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::any::Any;
use std::fmt;
use std::rc::Rc;

/// The values a [`Param`] takes. The configuration type's validation is the
/// authority; this is what a user is told (and what `gen` parses a flag as).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParamKind {
    /// An integer in `min..=max`.
    Int { min: u64, max: u64 },
    /// A power of two in `min..=max`.
    PowerOfTwo { min: u64, max: u64 },
    /// One of these names.
    Choice(Vec<&'static str>),
}

impl ParamKind {
    /// The allowed values in words, e.g. `1..=1024`, `a power of two in
    /// 2..=65536`, `int8 | bf16`.
    pub fn allowed(&self) -> String {
        match self {
            ParamKind::Int { min, max } => format!("{min}..={max}"),
            ParamKind::PowerOfTwo { min, max } => format!("a power of two in {min}..={max}"),
            ParamKind::Choice(names) => names.join(" | "),
        }
    }

    /// Whether a value of this kind is an integer (a TOML integer), rather
    /// than a name (a TOML string).
    pub fn is_integer(&self) -> bool {
        !matches!(self, ParamKind::Choice(_))
    }
}

/// One parameter of a block's configuration: a key of its TOML form and a
/// command-line flag (`acc_rows` is `--acc-rows`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    /// The TOML key.
    pub name: &'static str,
    /// The placeholder in usage lines, e.g. `R` in `--rows <R>`.
    pub value_name: &'static str,
    pub kind: ParamKind,
    /// One line for `--help` and `--block list`.
    pub help: &'static str,
}

impl Param {
    /// The command-line flag without its dashes: the name with `-` for `_`.
    pub fn flag(&self) -> String {
        self.name.replace('_', "-")
    }
}

/// A named configuration of a block. Every preset gets the lint, Icarus and
/// Yosys checks; those marked `fpga_report` are also synthesised, placed and
/// routed by the FPGA report.
#[derive(Debug, Clone, PartialEq)]
pub struct Preset<C> {
    /// Unique within its block, e.g. `int8-4x4`.
    pub name: String,
    pub config: C,
    pub fpga_report: bool,
}

/// A hardware generator and its configuration type.
pub trait Block {
    /// The configuration, defined in the `config` crate (the golden model and
    /// the simulator driver take it too). Deserialising it must validate it
    /// and refuse unknown keys; its `Display` is one line.
    type Config: Clone
        + fmt::Debug
        + fmt::Display
        + Serialize
        + DeserializeOwned
        + Send
        + Sync
        + 'static;

    /// The name on command lines (`gen --block NAME`): lowercase, no spaces.
    fn name(&self) -> &'static str;

    /// One line saying what the block is.
    fn description(&self) -> &'static str;

    /// The configuration's parameters, in the order tools list them. Their
    /// names are the keys of the configuration's TOML form.
    fn params(&self) -> Vec<Param>;

    /// The configuration used when nothing else is asked for.
    fn default_config(&self) -> Self::Config;

    /// The named configurations every check covers.
    fn presets(&self) -> Vec<Preset<Self::Config>>;

    /// The Verilog name of the top module for `cfg` (what [`Block::elaborate`]
    /// returns).
    fn top_name(&self, cfg: &Self::Config) -> String;

    /// Builds the block for `cfg` into `design`; returns its top module.
    /// Generator bugs stop elaboration as `hw` does everywhere (a panic that
    /// [`crate::catch_elab`] turns into an error).
    fn elaborate(&self, design: &mut Design, cfg: &Self::Config) -> Rc<ModuleDef>;

    /// What the FPGA flows need to know to build `cfg` (its multipliers,
    /// the memories that belong in block RAM, a bound on its size), or why
    /// the flows do not build this block (one sentence).
    fn fpga(&self, cfg: &Self::Config) -> Result<FpgaFacts, String>;

    /// The "largest that fits" searches the FPGA report runs for every part;
    /// none by default.
    fn fpga_searches(&self) -> Vec<FpgaSearch> {
        Vec::new()
    }

    /// Where the block's golden model, driver and tests live, or why it has
    /// none of one (checked by `tb/tests/registry.rs`).
    fn companions(&self) -> Companions;

    /// `cfg` in one line for people, e.g. in `gen`'s report. Defaults to the
    /// block's name and the configuration's `Display`.
    fn describe(&self, cfg: &Self::Config) -> String {
        format!("{} {cfg}", self.name())
    }

    /// The parameters written into every generated file's header, as
    /// (name, value) pairs. Defaults to every parameter in [`Block::params`]
    /// order, with its value from the TOML form, except a pipeline `depth`
    /// of 0: a block's depth-0 design is the one from before it had the
    /// parameter, and its files stay byte for byte what they were.
    fn design_params(&self, cfg: &Self::Config) -> Vec<(String, String)> {
        let table = to_table(cfg);
        self.params()
            .iter()
            .filter_map(|p| Some((p.name, table.get(p.name)?)))
            .filter(|(name, v)| !(*name == "depth" && v.as_integer() == Some(0)))
            .map(|(name, v)| (name.to_string(), value_text(v)))
            .collect()
    }
}

/// A block with one validated configuration, its type erased. `Send` and
/// `Sync`, so tools can share one among threads (the FPGA report does).
pub trait Configured: Send + Sync {
    /// The block's name ([`Block::name`]).
    fn block_name(&self) -> &'static str;
    /// [`Block::describe`].
    fn describe(&self) -> String;
    /// [`Block::design_params`].
    fn design_params(&self) -> Vec<(String, String)>;
    /// [`Block::top_name`].
    fn top_name(&self) -> String;
    /// [`Block::elaborate`].
    fn elaborate(&self, design: &mut Design) -> Rc<ModuleDef>;
    /// [`Block::fpga`].
    fn fpga(&self) -> Result<FpgaFacts, String>;
    /// The configuration's TOML form, every key present.
    fn to_table(&self) -> toml::Table;
    /// The typed configuration, for code that knows the block (downcast it).
    fn config_any(&self) -> &dyn Any;
}

/// The object-safe form of [`Block`]: what a registry of blocks with
/// different configuration types holds. Implemented for every `Block`.
/// `Send` and `Sync`, so tools can share the registry among threads.
pub trait AnyBlock: Send + Sync {
    /// [`Block::name`].
    fn name(&self) -> &'static str;
    /// [`Block::description`].
    fn description(&self) -> &'static str;
    /// [`Block::params`].
    fn params(&self) -> Vec<Param>;
    /// The default configuration's TOML form, every key present.
    fn default_table(&self) -> toml::Table;
    /// Validates a TOML table (keys it leaves out take the default's values;
    /// an unknown key is an error). The error is one line.
    fn configure(&self, table: &toml::Table) -> Result<Box<dyn Configured>, String>;
    /// [`Block::presets`], each configuration erased.
    fn presets(&self) -> Vec<Preset<Box<dyn Configured>>>;
    /// [`Block::fpga_searches`].
    fn fpga_searches(&self) -> Vec<FpgaSearch>;
    /// [`Block::companions`].
    fn companions(&self) -> Companions;

    /// The default value of `param` as text (`8`, `int8`), if it has one.
    fn default_text(&self, param: &Param) -> Option<String> {
        self.default_table().get(param.name).map(value_text)
    }
}

/// `block` with `config`, its type erased: what [`AnyBlock::configure`]
/// gives for the configuration's table, for code that holds the typed
/// configuration.
pub fn configured<B: Block + Clone + Send + Sync + 'static>(
    block: &B,
    config: B::Config,
) -> Box<dyn Configured> {
    Box::new(WithConfig {
        block: block.clone(),
        config,
    })
}

/// A block and one configuration of it: what [`AnyBlock::configure`] returns.
struct WithConfig<B: Block> {
    block: B,
    config: B::Config,
}

impl<B: Block + Send + Sync> Configured for WithConfig<B> {
    fn block_name(&self) -> &'static str {
        self.block.name()
    }
    fn describe(&self) -> String {
        self.block.describe(&self.config)
    }
    fn design_params(&self) -> Vec<(String, String)> {
        self.block.design_params(&self.config)
    }
    fn top_name(&self) -> String {
        self.block.top_name(&self.config)
    }
    fn elaborate(&self, design: &mut Design) -> Rc<ModuleDef> {
        self.block.elaborate(design, &self.config)
    }
    fn fpga(&self) -> Result<FpgaFacts, String> {
        self.block.fpga(&self.config)
    }
    fn to_table(&self) -> toml::Table {
        to_table(&self.config)
    }
    fn config_any(&self) -> &dyn Any {
        &self.config
    }
}

// Blocks are plain values (usually unit structs); `Clone` lets each erased
// configuration carry its own copy of the block.
impl<B: Block + Clone + Send + Sync + 'static> AnyBlock for B {
    fn name(&self) -> &'static str {
        Block::name(self)
    }
    fn description(&self) -> &'static str {
        Block::description(self)
    }
    fn params(&self) -> Vec<Param> {
        Block::params(self)
    }
    fn default_table(&self) -> toml::Table {
        to_table(&self.default_config())
    }
    fn configure(&self, table: &toml::Table) -> Result<Box<dyn Configured>, String> {
        let mut full = self.default_table();
        full.extend(table.iter().map(|(k, v)| (k.clone(), v.clone())));
        let config: B::Config = toml::Value::Table(full)
            .try_into()
            .map_err(|e: toml::de::Error| one_line(&e.to_string()))?;
        Ok(Box::new(WithConfig {
            block: self.clone(),
            config,
        }))
    }
    fn presets(&self) -> Vec<Preset<Box<dyn Configured>>> {
        Block::presets(self)
            .into_iter()
            .map(|p| Preset {
                name: p.name,
                fpga_report: p.fpga_report,
                config: Box::new(WithConfig {
                    block: self.clone(),
                    config: p.config,
                }) as Box<dyn Configured>,
            })
            .collect()
    }
    fn fpga_searches(&self) -> Vec<FpgaSearch> {
        Block::fpga_searches(self)
    }
    fn companions(&self) -> Companions {
        Block::companions(self)
    }
}

/// The TOML form of a configuration.
fn to_table<C: Serialize>(cfg: &C) -> toml::Table {
    match toml::Value::try_from(cfg) {
        Ok(toml::Value::Table(t)) => t,
        Ok(other) => panic!("a block configuration serialises as a table, not {other}"),
        Err(e) => panic!("a block configuration always serialises: {e}"),
    }
}

/// A TOML value as a user writes it on a command line: names without quotes.
fn value_text(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Joins a multi-line parser message into one line.
fn one_line(msg: &str) -> String {
    msg.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    /// A toy block: a register chain of `depth` stages of `width` bits.
    #[derive(Clone)]
    struct Chain;

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    #[serde(deny_unknown_fields, try_from = "RawChain")]
    struct ChainConfig {
        width: u32,
        depth: u32,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct RawChain {
        width: u32,
        depth: u32,
    }

    impl TryFrom<RawChain> for ChainConfig {
        type Error = String;
        fn try_from(r: RawChain) -> Result<Self, String> {
            if r.width == 0 {
                return Err("width must be at least 1".into());
            }
            Ok(ChainConfig {
                width: r.width,
                depth: r.depth,
            })
        }
    }

    impl fmt::Display for ChainConfig {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "{} x {} bits", self.depth, self.width)
        }
    }

    impl Block for Chain {
        type Config = ChainConfig;
        fn name(&self) -> &'static str {
            "chain"
        }
        fn description(&self) -> &'static str {
            "a register chain"
        }
        fn params(&self) -> Vec<Param> {
            vec![
                Param {
                    name: "depth",
                    value_name: "N",
                    kind: ParamKind::Int { min: 0, max: 8 },
                    help: "Stages",
                },
                Param {
                    name: "width",
                    value_name: "W",
                    kind: ParamKind::Int { min: 1, max: 64 },
                    help: "Bits per stage",
                },
            ]
        }
        fn default_config(&self) -> ChainConfig {
            ChainConfig { width: 8, depth: 2 }
        }
        fn presets(&self) -> Vec<Preset<ChainConfig>> {
            vec![Preset {
                name: "wide".into(),
                config: ChainConfig {
                    width: 64,
                    depth: 1,
                },
                fpga_report: false,
            }]
        }
        fn top_name(&self, cfg: &ChainConfig) -> String {
            format!("chain_w{}_d{}", cfg.width, cfg.depth)
        }
        fn fpga(&self, _: &ChainConfig) -> Result<FpgaFacts, String> {
            Err("a toy".into())
        }
        fn companions(&self) -> Companions {
            Companions {
                golden: Has::No { reason: "a toy" },
                driver: Has::No { reason: "a toy" },
                tests: Has::No { reason: "a toy" },
            }
        }
        fn elaborate(&self, design: &mut Design, cfg: &ChainConfig) -> Rc<ModuleDef> {
            let cfg = cfg.clone();
            design.define(&self.top_name(&cfg), &[], |_, m| {
                let mut v = m.input("d_i", crate::Ty::u(cfg.width));
                for i in 0..cfg.depth {
                    let r = m.reg(&format!("stage{i}"), crate::Ty::u(cfg.width));
                    m.set_next(r, v);
                    v = r.q();
                }
                m.output("q_o", v);
            })
        }
    }

    fn table(text: &str) -> toml::Table {
        text.parse().unwrap()
    }

    #[test]
    fn tables_are_validated_and_missing_keys_take_the_defaults() {
        let block: &dyn AnyBlock = &Chain;
        let c = block.configure(&table("depth = 3")).unwrap();
        assert_eq!(c.top_name(), "chain_w8_d3");
        assert_eq!(c.describe(), "chain 3 x 8 bits");
        assert_eq!(
            c.config_any().downcast_ref::<ChainConfig>(),
            Some(&ChainConfig { width: 8, depth: 3 })
        );
        assert_eq!(c.to_table(), table("width = 8\ndepth = 3"));
        for bad in ["width = 0", "widht = 3", "depth = \"x\"", "depth = -1"] {
            let err = block.configure(&table(bad)).err().expect(bad);
            assert!(!err.is_empty() && !err.contains('\n'), "{bad}: {err}");
        }
    }

    #[test]
    fn design_params_follow_the_parameter_order() {
        let c = Chain.configure(&toml::Table::new()).unwrap();
        let p = c.design_params();
        assert_eq!(
            p,
            [("depth".into(), "2".into()), ("width".into(), "8".into())]
        );
    }

    #[test]
    fn erased_presets_elaborate() {
        let block: &dyn AnyBlock = &Chain;
        let presets = block.presets();
        assert_eq!(presets.len(), 1);
        let mut design = Design::new();
        let top = presets[0].config.elaborate(&mut design);
        assert_eq!(top.name, presets[0].config.top_name());
        assert_eq!(block.default_text(&block.params()[1]).as_deref(), Some("8"));
    }

    #[test]
    fn flags_and_allowed_values_read_as_users_write_them() {
        let p = Param {
            name: "acc_rows",
            value_name: "N",
            kind: ParamKind::PowerOfTwo { min: 2, max: 64 },
            help: "",
        };
        assert_eq!(p.flag(), "acc-rows");
        assert_eq!(p.kind.allowed(), "a power of two in 2..=64");
        assert_eq!(
            ParamKind::Choice(vec!["int8", "bf16"]).allowed(),
            "int8 | bf16"
        );
        assert_eq!(value_text(&toml::Value::String("int8".into())), "int8");
    }
}
