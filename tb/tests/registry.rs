//! The registry check: every registered block has its other halves, or says
//! why it has none. A block states them itself ([`hw::Block::companions`],
//! [`hw::Block::fpga`]); this test holds each statement to the repository:
//! - a golden model: the named module exists in `golden` (its file, and a
//!   `pub mod` line in `golden/src/lib.rs`);
//! - a driver: `sim::drivers::registry()` has the block's name (and has it
//!   only if the block says so);
//! - FPGA facts: every preset, the default and every search's configuration
//!   either has them or gives the reason the flows do not build the block;
//!   every preset the FPGA report builds has them; the multipliers they state
//!   are the elaborated design's (`hw::multiplier_census`), shape by shape;
//! - tests: the named files exist in `tb/tests`, and between them they use
//!   the golden model and the driver.
//!
//! `a_block_that_lacks_a_part_fails_the_check` shows the check fails on a
//! block that lacks each part.

use hw::{AnyBlock, Block, Companions, Has};
use std::path::{Path, PathBuf};

/// Where the check looks.
struct Repo {
    root: PathBuf,
    drivers: Vec<&'static str>,
}

impl Repo {
    fn this() -> Repo {
        Repo {
            root: Path::new(env!("CARGO_MANIFEST_DIR")).join(".."),
            drivers: sim::drivers::registry(),
        }
    }

    fn read(&self, rel: &str) -> Option<String> {
        std::fs::read_to_string(self.root.join(rel)).ok()
    }
}

/// What `block` lacks, one line each (empty: nothing).
fn problems(block: &dyn AnyBlock, repo: &Repo) -> Vec<String> {
    let name = block.name();
    let c = block.companions();
    let mut out = Vec::new();
    let no = |what: &str, reason: &str| {
        reason
            .trim()
            .is_empty()
            .then(|| format!("{name}: no {what} and no reason given"))
    };
    match c.golden {
        Has::Yes(m) => {
            let file = [
                format!("golden/src/{m}.rs"),
                format!("golden/src/{m}/mod.rs"),
            ]
            .iter()
            .any(|f| repo.root.join(f).is_file());
            let declared = repo
                .read("golden/src/lib.rs")
                .is_some_and(|lib| lib.contains(&format!("pub mod {m};")));
            if !file || !declared {
                out.push(format!(
                    "{name}: its golden model golden::{m} does not exist"
                ));
            }
        }
        Has::No { reason } => out.extend(no("golden model", reason)),
    }
    let registered = repo.drivers.contains(&name);
    match c.driver {
        Has::Yes(()) if !registered => out.push(format!(
            "{name}: no driver in sim::drivers::registry() hosts it"
        )),
        Has::No { .. } if registered => out.push(format!(
            "{name}: says it has no driver, but sim::drivers::registry() has one"
        )),
        Has::No { reason } => out.extend(no("driver", reason)),
        Has::Yes(()) => {}
    }
    out.extend(fpga_problems(block));
    out.extend(test_problems(name, &c, repo));
    out
}

/// Every configuration the tools build has FPGA facts or a reason.
fn fpga_problems(block: &dyn AnyBlock) -> Vec<String> {
    let name = block.name();
    let mut out = Vec::new();
    let mut configs = Vec::new();
    match block.configure(&toml::Table::new()) {
        Ok(c) => configs.push(("the default".to_string(), c, false)),
        Err(e) => out.push(format!("{name}: the default does not configure: {e}")),
    }
    for p in block.presets() {
        configs.push((format!("preset {}", p.name), p.config, p.fpga_report));
    }
    for s in block.fpga_searches() {
        for n in [s.start, *s.sizes.all().last().unwrap_or(&s.start)] {
            match block.configure(&s.table(n)) {
                Ok(c) => configs.push((format!("search {} at {}", s.name, s.label(n)), c, true)),
                Err(e) => out.push(format!("{name}: search {} at {}: {e}", s.name, s.label(n))),
            }
        }
    }
    for (what, c, must_build) in configs {
        match c.fpga() {
            Ok(facts) => out.extend(
                stated_multiplier_problems(&facts, c.as_ref())
                    .into_iter()
                    .map(|p| format!("{name}: {what}: {p}")),
            ),
            Err(reason) if must_build => out.push(format!(
                "{name}: {what} is for the FPGA flows, which do not build it: {reason}"
            )),
            Err(reason) if reason.trim().is_empty() => {
                out.push(format!("{name}: {what}: no FPGA facts and no reason given"))
            }
            Err(_) => {}
        }
    }
    out
}

/// The multipliers the facts state are the design's: for every shape the
/// facts name, as many as the elaborated design has (a product by a constant
/// is not one). Shapes the facts leave out are allowed: the flows budget them
/// as "other multipliers".
fn stated_multiplier_problems(facts: &hw::FpgaFacts, c: &dyn hw::Configured) -> Vec<String> {
    let mut design = hw::Design::new();
    let census = hw::multiplier_census(&c.elaborate(&mut design));
    let mut stated: std::collections::BTreeMap<hw::MultiplierShape, u64> = Default::default();
    for m in &facts.multipliers {
        *stated.entry(m.shape()).or_default() += m.count;
    }
    stated
        .iter()
        .filter(|(shape, &n)| census.get(shape).copied().unwrap_or(0) != n)
        .map(|(&(a, b, signed), n)| {
            let have = census.get(&(a, b, signed)).copied().unwrap_or(0);
            let sign = if signed { "signed" } else { "unsigned" };
            format!("states {n} {sign} {a}x{b} multipliers; the design has {have}")
        })
        .collect()
}

/// The named test files exist and, between them, use the golden model and
/// the driver.
fn test_problems(name: &str, c: &Companions, repo: &Repo) -> Vec<String> {
    let files = match c.tests {
        Has::Yes(files) => files,
        Has::No { reason } if reason.trim().is_empty() => {
            return vec![format!("{name}: no tests and no reason given")]
        }
        Has::No { .. } => return Vec::new(),
    };
    let mut out = Vec::new();
    let mut text = String::new();
    for f in files {
        match repo.read(&format!("tb/tests/{f}")) {
            Some(t) => text.push_str(&t),
            None => out.push(format!("{name}: its test tb/tests/{f} does not exist")),
        }
    }
    if files.is_empty() {
        out.push(format!("{name}: names no test file"));
    }
    if matches!(c.golden, Has::Yes(_)) && !text.contains("golden::") {
        out.push(format!("{name}: its tests do not use the golden model"));
    }
    if matches!(c.driver, Has::Yes(())) && !text.contains("sim::drivers") {
        out.push(format!("{name}: its tests do not use the driver"));
    }
    out
}

#[test]
fn every_registered_block_has_its_golden_model_driver_fpga_facts_and_tests() {
    let repo = Repo::this();
    let mut all = Vec::new();
    for block in gen::registry() {
        let p = problems(block, &repo);
        println!(
            "{}: {}{}",
            block.name(),
            block.companions(),
            if p.is_empty() { "" } else { " (problems)" }
        );
        all.extend(p);
    }
    assert!(all.is_empty(), "{}", all.join("\n"));
}

#[test]
fn every_driver_hosts_a_registered_block() {
    let names: Vec<_> = gen::registry().iter().map(|b| b.name()).collect();
    for d in sim::drivers::registry() {
        assert!(names.contains(&d), "driver for unregistered block {d}");
    }
}

type ClaimedCompanions = fn() -> Companions;
type ClaimedFacts = fn() -> Result<hw::FpgaFacts, String>;

/// The MXU with other companions: what the check says of a block that
/// claims parts it does not have.
#[derive(Clone, Copy)]
struct Claims {
    companions: ClaimedCompanions,
    fpga: ClaimedFacts,
}

impl Block for Claims {
    type Config = config::MxuConfig;
    fn name(&self) -> &'static str {
        "claims"
    }
    fn description(&self) -> &'static str {
        "the MXU, claiming other parts"
    }
    fn params(&self) -> Vec<hw::Param> {
        Block::params(&mxu::Mxu)
    }
    fn default_config(&self) -> config::MxuConfig {
        Block::default_config(&mxu::Mxu)
    }
    fn presets(&self) -> Vec<hw::Preset<config::MxuConfig>> {
        Block::presets(&mxu::Mxu)
    }
    fn top_name(&self, cfg: &config::MxuConfig) -> String {
        Block::top_name(&mxu::Mxu, cfg)
    }
    fn elaborate(
        &self,
        design: &mut hw::Design,
        cfg: &config::MxuConfig,
    ) -> std::rc::Rc<hw::ModuleDef> {
        Block::elaborate(&mxu::Mxu, design, cfg)
    }
    fn fpga(&self, _: &config::MxuConfig) -> Result<hw::FpgaFacts, String> {
        (self.fpga)()
    }
    fn companions(&self) -> Companions {
        (self.companions)()
    }
}

#[test]
fn a_block_that_lacks_a_part_fails_the_check() {
    let repo = Repo::this();
    let complete = || Companions {
        golden: Has::Yes("mxu"),
        driver: Has::No {
            reason: "the check's own example",
        },
        tests: Has::Yes(&["mxu_int8.rs"]),
    };
    let facts = || Ok(hw::FpgaFacts::default());
    let check = |companions, fpga| problems(&Claims { companions, fpga }, &repo);
    // Complete (the driver's absence explained): nothing to report.
    assert_eq!(check(complete, facts), Vec::<String>::new());
    // Each part missing is reported.
    let cases: [(ClaimedCompanions, ClaimedFacts, &str); 6] = [
        (
            || Companions {
                golden: Has::Yes("claims"),
                driver: Has::No { reason: "x" },
                tests: Has::Yes(&["mxu_int8.rs"]),
            },
            || Ok(hw::FpgaFacts::default()),
            "golden model golden::claims does not exist",
        ),
        (
            || Companions {
                golden: Has::No { reason: " " },
                driver: Has::No { reason: "x" },
                tests: Has::Yes(&["mxu_int8.rs"]),
            },
            || Ok(hw::FpgaFacts::default()),
            "no golden model and no reason",
        ),
        (
            || Companions {
                golden: Has::Yes("mxu"),
                driver: Has::Yes(()),
                tests: Has::Yes(&["mxu_int8.rs"]),
            },
            || Ok(hw::FpgaFacts::default()),
            "no driver in sim::drivers::registry()",
        ),
        (
            || Companions {
                golden: Has::Yes("mxu"),
                driver: Has::No { reason: "x" },
                tests: Has::Yes(&["mxu_int8.rs"]),
            },
            || Err(String::new()),
            "is for the FPGA flows, which do not build it",
        ),
        (
            || Companions {
                golden: Has::Yes("mxu"),
                driver: Has::No { reason: "x" },
                tests: Has::Yes(&["claims.rs"]),
            },
            || Ok(hw::FpgaFacts::default()),
            "tb/tests/claims.rs does not exist",
        ),
        (
            || Companions {
                golden: Has::Yes("mxu"),
                driver: Has::No { reason: "x" },
                tests: Has::Yes(&["architecture.rs"]),
            },
            || Ok(hw::FpgaFacts::default()),
            "its tests do not use the golden model",
        ),
    ];
    // FPGA facts that misstate the multipliers (the MXU's default has 64).
    let p = check(complete, || {
        Ok(hw::FpgaFacts {
            multipliers: vec![hw::Multipliers {
                what: "processing elements",
                count: 8,
                widths: (8, 8),
                signed: true,
                owners: None,
                min_lut4s_in_logic: 0,
            }],
            ..hw::FpgaFacts::default()
        })
    });
    assert!(
        p.iter()
            .any(|l| l.contains("states 8 signed 8x8 multipliers; the design has 64")),
        "{p:?}"
    );
    for (companions, fpga, want) in cases {
        let p = check(companions, fpga);
        assert!(p.iter().any(|l| l.contains(want)), "{want}: {p:?}");
    }
}
