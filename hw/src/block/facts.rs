//! What the tools beside the generator need to know about a block, stated by
//! the block itself: the FPGA flows' facts ([`FpgaFacts`], [`FpgaSearch`]) and
//! where the block's other halves live ([`Companions`]).
//!
//! These are plain data, so a block crate states them without knowing the
//! tools (the `fpga` crate depends on every block through `gen`, never the
//! reverse): a multiplier is described by its operand widths and the FPGA
//! flows work out how many DSP blocks of each family it takes; a memory
//! that belongs in block RAM is named by a Yosys pattern; a search names the
//! parameters it grows.

use crate::ir::{ModuleDef, Op};
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::rc::Rc;

/// Multipliers of one shape, which the FPGA flows may give DSP blocks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Multipliers {
    /// What they are, in a few words ("processing elements", "lane
    /// multipliers").
    pub what: &'static str,
    pub count: u64,
    /// Operand widths in bits, as the RTL's `*` has them.
    pub widths: (u32, u32),
    /// Whether the operands are signed (a signed-only DSP needs one more bit
    /// for an unsigned operand).
    pub signed: bool,
    /// Yosys patterns of the multipliers' owners, so the first k of them can
    /// be given DSP blocks and the rest built from logic; `None` when they
    /// cannot be told apart: then they get DSP blocks only when every
    /// multiplier of the design does.
    pub owners: Option<Owners>,
    /// A lower bound on the 4-input LUTs one of them needs when it is built
    /// from logic (with what it feeds, e.g. a PE's adder), to skip syntheses
    /// that cannot fit; 0 when unknown.
    pub min_lut4s_in_logic: u64,
}

/// Yosys `select` patterns naming multiplier owners in a flattened design,
/// numbered row-major over a grid of `cols` columns: owner `i` is
/// `element` with `{row}` = i / cols and `{col}` = i % cols. A whole row is
/// `row` with `{row}`, when the design has such a name (shorter scripts).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owners {
    pub cols: u64,
    pub row: Option<&'static str>,
    pub element: &'static str,
}

impl Owners {
    /// Owners numbered `0..count` by `element` with `{col}` = the number.
    pub fn indexed(element: &'static str) -> Owners {
        Owners {
            cols: u64::MAX,
            row: None,
            element,
        }
    }

    /// The patterns of the first `k` owners: whole rows where a row pattern
    /// exists, then single elements.
    pub fn first(&self, k: u64) -> Vec<String> {
        let cols = self.cols.max(1);
        let element = |r: u64, c: u64| {
            self.element
                .replace("{row}", &r.to_string())
                .replace("{col}", &c.to_string())
        };
        let mut pats = Vec::new();
        let full_rows = k / cols;
        for r in 0..full_rows {
            match self.row {
                Some(row) => pats.push(row.replace("{row}", &r.to_string())),
                None => pats.extend((0..cols).map(|c| element(r, c))),
            }
        }
        pats.extend((0..k % cols).map(|c| element(full_rows, c)));
        pats
    }
}

/// What the FPGA flows need to know about one configuration of a block.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FpgaFacts {
    /// The multipliers, in the order they get DSP blocks when the part has
    /// too few for all.
    pub multipliers: Vec<Multipliers>,
    /// Yosys patterns (`m:*acc`) of the memories that belong in block RAM;
    /// the rest are left to Yosys.
    pub block_ram: Vec<&'static str>,
    /// Memories that belong in block RAM on parts without distributed RAM
    /// (iCE40), where Yosys would otherwise build them from flip-flops and
    /// multiplexers; elsewhere they are left to Yosys (distributed RAM).
    pub block_ram_without_lutram: Vec<&'static str>,
    /// A lower bound on the 4-input LUTs of everything but the multipliers,
    /// with what it counts ("8 full lanes"); 0 when unknown.
    pub min_lut4s: u64,
    pub min_lut4s_what: String,
}

impl FpgaFacts {
    /// Every multiplier of the design.
    pub fn multiplier_count(&self) -> u64 {
        self.multipliers.iter().map(|m| m.count).sum()
    }

    /// How `dsps` DSP blocks are shared out when group i's multipliers take
    /// `blocks_per[i]` blocks each: every multiplier gets its blocks when
    /// they all fit; otherwise each group, in order, takes as many as are
    /// left, and a group whose owners cannot be named takes none. A group
    /// of 0 blocks each (products too narrow for the family's DSPs, which
    /// synthesis leaves to logic) is given none. The FPGA flows and the
    /// board builds both budget this way.
    pub fn dsp_share(&self, blocks_per: &[u64], dsps: u64) -> DspShare {
        assert_eq!(
            blocks_per.len(),
            self.multipliers.len(),
            "a block count per group"
        );
        let needed: u64 = self
            .multipliers
            .iter()
            .zip(blocks_per)
            .map(|(m, each)| m.count * each)
            .sum();
        if needed <= dsps {
            return DspShare {
                given: self
                    .multipliers
                    .iter()
                    .zip(blocks_per)
                    .map(|(m, &each)| if each == 0 { 0 } else { m.count })
                    .collect(),
                all: true,
                owner_patterns: Vec::new(),
            };
        }
        let mut left = dsps;
        let mut given = Vec::new();
        let mut owner_patterns = Vec::new();
        for (m, each) in self.multipliers.iter().zip(blocks_per) {
            let k = match &m.owners {
                Some(owners) if *each > 0 => {
                    let k = m.count.min(left / each.max(&1));
                    owner_patterns.extend(owners.first(k));
                    k
                }
                _ => 0,
            };
            left -= k * each;
            given.push(k);
        }
        DspShare {
            given,
            all: false,
            owner_patterns,
        }
    }
}

/// A share of a part's DSP blocks ([`FpgaFacts::dsp_share`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DspShare {
    /// Multipliers given DSP blocks, per group of the facts.
    pub given: Vec<u64>,
    /// Every multiplier has its DSP blocks (no budget commands needed).
    pub all: bool,
    /// Yosys patterns of the owners of the multipliers given DSP blocks
    /// (empty when `all`).
    pub owner_patterns: Vec<String>,
}

impl DspShare {
    /// Multipliers given DSP blocks, over all groups.
    pub fn total(&self) -> u64 {
        self.given.iter().sum()
    }

    /// Yosys commands, for a flattened design, that leave the multipliers
    /// given blocks for DSP blocks and turn the others into `$macc` cells
    /// (LUT logic); empty when every multiplier has its blocks.
    pub fn commands(&self) -> String {
        if self.all {
            return String::new();
        }
        dsp_budget_commands(&self.owner_patterns)
    }
}

/// Yosys commands that keep the multipliers (`$mul` cells) of the cells
/// `owner_patterns` select for DSP blocks (none when empty) and turn every
/// other multiplier into `$macc` cells.
pub fn dsp_budget_commands(owner_patterns: &[String]) -> String {
    let mut s = String::new();
    if owner_patterns.is_empty() {
        s.push_str("select -set softmul t:$mul\n");
    } else {
        s.push_str(&format!(
            "select -set dspmul {}\n",
            owner_patterns.join(" ")
        ));
        s.push_str("select -set dspmul @dspmul t:$mul %i\n");
        s.push_str("select -assert-min 1 @dspmul\n");
        s.push_str("select -set softmul t:$mul @dspmul %d\n");
    }
    s.push_str("alumacc @softmul\n");
    s
}

/// The shape of a multiplier for the census: operand widths, narrower
/// first, and signedness.
pub type MultiplierShape = (u32, u32, bool);

impl Multipliers {
    /// This group's shape in the census's form.
    pub fn shape(&self) -> MultiplierShape {
        let (a, b) = self.widths;
        (a.min(b), a.max(b), self.signed)
    }

    /// `count` products, each built from the multiplies `multiplies` (their
    /// operand types, as `hw::arith::int_mul_multiplies` gives them): one
    /// group per multiply, each of `count` and with the products' owners
    /// (owner i names product i, and with it all of its multiplies).
    pub fn per_multiply(
        what: &'static str,
        count: u64,
        multiplies: &[(crate::Ty, crate::Ty)],
        owners: Option<Owners>,
    ) -> Vec<Multipliers> {
        multiplies
            .iter()
            .map(|&(a, b)| {
                assert_eq!(
                    a.signed, b.signed,
                    "a multiply's operands share a signedness"
                );
                Multipliers {
                    what,
                    count,
                    widths: (a.width, b.width),
                    signed: a.signed,
                    owners: owners.clone(),
                    min_lut4s_in_logic: 0,
                }
            })
            .collect()
    }
}

/// Every multiplier of an elaborated design, by shape: the `*` and wide
/// products whose operands are both variable (a product by a constant is
/// shifts and adds, never a DSP block), counted through instances and
/// instance arrays. What a block states in its [`FpgaFacts`] can be held to
/// it, and the FPGA flows budget what a block does not state.
pub fn multiplier_census(top: &Rc<ModuleDef>) -> BTreeMap<MultiplierShape, u64> {
    fn census(
        def: &Rc<ModuleDef>,
        memo: &mut HashMap<String, BTreeMap<MultiplierShape, u64>>,
    ) -> BTreeMap<MultiplierShape, u64> {
        if let Some(c) = memo.get(&def.name) {
            return c.clone();
        }
        let mut out: BTreeMap<MultiplierShape, u64> = BTreeMap::new();
        let constant = |id: &usize| matches!(def.nodes[*id].op, Op::Const(_));
        for n in &def.nodes {
            if matches!(n.op, Op::Mul | Op::MulWide) && !n.args.iter().any(constant) {
                let (a, b) = (&def.nodes[n.args[0]].ty, &def.nodes[n.args[1]].ty);
                let shape = (a.width.min(b.width), a.width.max(b.width), a.signed);
                *out.entry(shape).or_default() += 1;
            }
        }
        let children =
            def.instances
                .iter()
                .map(|i| (&i.module, 1u64))
                .chain(def.arrays.iter().map(|a| {
                    let n = a.dims.iter().map(|(_, e)| u64::from(*e)).product();
                    (&a.module, n)
                }));
        for (child, times) in children {
            for (shape, n) in census(child, memo) {
                *out.entry(shape).or_default() += n * times;
            }
        }
        memo.insert(def.name.clone(), out.clone());
        out
    }
    census(top, &mut HashMap::new())
}

/// The sizes a search tries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SearchSizes {
    /// Every integer in `1..=max`.
    Integers { max: u32 },
    /// Every power of two in `1..=max`.
    PowersOfTwo { max: u32 },
}

impl SearchSizes {
    /// The sizes in ascending order.
    pub fn all(&self) -> Vec<u32> {
        match *self {
            SearchSizes::Integers { max } => (1..=max).collect(),
            SearchSizes::PowersOfTwo { max } => (0..32)
                .map(|k| 1u32 << k)
                .take_while(|&n| n <= max)
                .collect(),
        }
    }
}

/// A "largest that fits" question the FPGA report asks for every part: the
/// configuration `base` (over the block's default) with each of
/// `size_params` set to n, for the largest n of `sizes` that fits.
#[derive(Debug, Clone, PartialEq)]
pub struct FpgaSearch {
    /// Names the search in the report and on the command line (`int8`,
    /// `full`): unique within its block.
    pub name: &'static str,
    /// What is searched, one sentence for the report.
    pub description: &'static str,
    /// Keys set over the block's default configuration.
    pub base: toml::Table,
    /// The parameters set to the size (two for a square array).
    pub size_params: Vec<&'static str>,
    pub sizes: SearchSizes,
    /// The size tried first when nothing is known yet.
    pub start: u32,
    /// How a size reads in the report, `{n}` standing for it (`{n}x{n}`).
    pub size_label: &'static str,
}

impl FpgaSearch {
    /// The configuration table of size `n` (over the block's default).
    pub fn table(&self, n: u32) -> toml::Table {
        let mut t = self.base.clone();
        for p in &self.size_params {
            t.insert((*p).to_string(), toml::Value::Integer(i64::from(n)));
        }
        t
    }

    /// Size `n` as the report writes it.
    pub fn label(&self, n: u32) -> String {
        self.size_label.replace("{n}", &n.to_string())
    }
}

/// Whether a block has a companion, or why it has none: a reason is one
/// sentence a reader of the registry check would accept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Has<T> {
    Yes(T),
    No { reason: &'static str },
}

impl<T> Has<T> {
    pub fn as_ref(&self) -> Has<&T> {
        match self {
            Has::Yes(t) => Has::Yes(t),
            Has::No { reason } => Has::No { reason },
        }
    }
}

/// Where a block's other halves live, which `tb/tests/registry.rs` checks
/// exist: the golden model (a module of the `golden` crate), the simulator
/// driver (registered in `sim::drivers::registry` under the block's name,
/// so it is not named here) and the tests in `tb/tests`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Companions {
    /// The `golden` module holding the bit-exact and cycle models (`mxu`
    /// for `golden::mxu`).
    pub golden: Has<&'static str>,
    /// Whether a driver exists in `sim::drivers` (registered under the
    /// block's name), or why not.
    pub driver: Has<()>,
    /// The files in `tb/tests` that hold the RTL to the golden model.
    pub tests: Has<&'static [&'static str]>,
}

impl fmt::Display for Companions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let has = |h: bool| if h { "yes" } else { "no" };
        write!(
            f,
            "golden {}, driver {}, tests {}",
            has(matches!(self.golden, Has::Yes(_))),
            has(matches!(self.driver, Has::Yes(()))),
            has(matches!(self.tests, Has::Yes(_)))
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_take_whole_rows_then_elements() {
        let grid = Owners {
            cols: 4,
            row: Some("r{row}"),
            element: "r{row}c{col}",
        };
        assert_eq!(grid.first(6), ["r0", "r1c0", "r1c1"]);
        assert_eq!(grid.first(0), Vec::<String>::new());
        let flat = Owners {
            cols: 2,
            row: None,
            element: "s{row}l{col}",
        };
        assert_eq!(flat.first(3), ["s0l0", "s0l1", "s1l0"]);
        assert_eq!(Owners::indexed("lane{col}").first(2), ["lane0", "lane1"]);
    }

    #[test]
    fn the_census_counts_variable_products_through_the_hierarchy() {
        let mut design = crate::Design::new();
        let pe = design.define("pe", &[], |_, m| {
            let a = m.input("a_i", crate::Ty::s(8));
            let b = m.input("b_i", crate::Ty::s(8));
            let c = m.input("c_i", crate::Ty::u(6));
            // Two variable products and one by a constant.
            m.output("p_o", a.mul_wide(b));
            m.output("q_o", a * b);
            m.output("r_o", c * 3);
        });
        let top = design.define("top", &[], |_, m| {
            let a = m.input("a_i", crate::Ty::s(8));
            let c = m.input("c_i", crate::Ty::u(6));
            let d = m.input("d_i", crate::Ty::u(12));
            for k in 0..3 {
                let i = m.instance(&format!("pe{k}"), &pe);
                m.connect(i, "a_i", a);
                m.connect(i, "b_i", a);
                m.connect(i, "c_i", c);
                let p = m.inst_output(i, "p_o");
                let q = m.inst_output(i, "q_o");
                let r = m.inst_output(i, "r_o");
                m.output(&format!("p{k}_o"), p);
                m.output(&format!("q{k}_o"), q);
                m.output(&format!("r{k}_o"), r);
            }
            m.output("w_o", d.mul_wide(c.zext(12)));
        });
        let census = multiplier_census(&top);
        assert_eq!(
            census,
            BTreeMap::from([((8, 8, true), 6), ((12, 12, false), 1)])
        );
    }

    #[test]
    fn search_sizes_and_tables() {
        assert_eq!(SearchSizes::PowersOfTwo { max: 16 }.all(), [1, 2, 4, 8, 16]);
        assert_eq!(SearchSizes::PowersOfTwo { max: 12 }.all(), [1, 2, 4, 8]);
        assert_eq!(SearchSizes::Integers { max: 3 }.all(), [1, 2, 3]);
        let s = FpgaSearch {
            name: "sq",
            description: "",
            base: "dtype = \"int8\"".parse().unwrap(),
            size_params: vec!["rows", "cols"],
            sizes: SearchSizes::Integers { max: 64 },
            start: 4,
            size_label: "{n}x{n}",
        };
        assert_eq!(
            s.table(5),
            "dtype = \"int8\"\nrows = 5\ncols = 5".parse().unwrap()
        );
        assert_eq!(s.label(12), "12x12");
    }
}
