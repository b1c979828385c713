//! Block drivers: for each block, a typed host of its interface on a Verilated [`Model`].
//!
//! A driver builds (or loads from the cache) the model of its block for one configuration,
//! drives the block's handshakes cycle by cycle, and reports results and the cycles they
//! took, measured on the RTL, so tests can hold both to the golden model. It never assumes
//! a cycle the interface does not promise.
//!
//! What every driver shares lives here, so a new driver is only its block's protocol:
//! - [`DriverError`], the one error type of every driver;
//! - [`block_model`], the model of a block's configuration from the Verilog `gen` writes
//!   (the simulated RTL is byte for byte the RTL users get);
//! - [`PortTable`] and [`block_ports!`](crate::block_ports), the one way of taking a
//!   block's ports from its model: a struct of named ports, looked up once, every missing
//!   name an error that says which;
//! - [`Driver`] and [`registry`]: which block each driver hosts, so the registry check
//!   (`tb/tests/registry.rs`) can see that every block has one.
//!
//! Adding a block adds a module here and one line to [`registry`].
//!
//! [`Model`]: crate::Model

pub mod eup;
pub mod ici;
pub mod mxu;
pub mod sparsecore;
pub mod stream_crc;
pub mod tensorcore;
pub mod tensorcore2;
pub mod torus;
pub mod vpu;
pub mod vpu_ops;

use crate::from_hw::model_spec;
use crate::verilator::{Model, PortId, SimError};
use std::fmt;

/// A typed host of one block's interface on a Verilated model.
pub trait Driver: Sized {
    /// The block it hosts; its configuration type is the driver's.
    type Block: hw::Block + Default;

    /// Builds (or loads from the cache) the model of the block for `cfg`,
    /// ready for its first operation.
    fn open(cfg: &<Self::Block as hw::Block>::Config) -> Result<Self, DriverError>;
}

/// The name of the block `D` hosts (`gen --block NAME`).
pub fn block_name<D: Driver>() -> &'static str {
    hw::Block::name(&D::Block::default())
}

/// The blocks that have a driver, by registry name: one line per driver.
pub fn registry() -> Vec<&'static str> {
    vec![
        block_name::<mxu::MxuDriver>(),
        block_name::<vpu::VpuDriver>(),
        block_name::<ici::IciDriver>(),
        block_name::<sparsecore::SparseCoreDriver>(),
        block_name::<tensorcore::TensorCoreDriver>(),
        block_name::<torus::TorusDriver>(),
        block_name::<stream_crc::StreamCrcDriver>(),
        block_name::<eup::EupDriver>(),
        block_name::<tensorcore2::TensorCore2Driver>(),
    ]
}

/// Why a driver's operation on the RTL failed: one type for every block.
#[derive(Debug)]
pub enum DriverError {
    /// The model could not be built or loaded.
    Sim(SimError),
    /// The generator refused the configuration (a generator bug: every valid
    /// configuration elaborates).
    Elaboration(String),
    /// Inputs that do not fit the configuration (shapes, sizes, addresses).
    Input(String),
    /// The RTL broke its interface contract (e.g. never went idle).
    Protocol(String),
    /// An output differs from the expected value. The simulation ran one more
    /// cycle after the failing one, so a waveform shows it.
    Mismatch {
        /// Which output (`C[1][2]`).
        what: String,
        expected: u32,
        got: u32,
        cycle: u64,
        waveform: Option<String>,
    },
    /// Not everything was delivered within the cycle budget.
    Stuck {
        cycles: u64,
        /// What was delivered by then.
        detail: String,
    },
}

impl fmt::Display for DriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DriverError::Sim(e) => write!(f, "{e}"),
            DriverError::Elaboration(s) | DriverError::Input(s) | DriverError::Protocol(s) => {
                f.write_str(s)
            }
            DriverError::Mismatch {
                what,
                expected,
                got,
                cycle,
                waveform,
            } => {
                write!(
                    f,
                    "{what} = {got:#010x} from the RTL, expected {expected:#010x} \
                     (read in cycle {cycle})"
                )?;
                if let Some(w) = waveform {
                    write!(f, "; waveform: {w}")?;
                }
                Ok(())
            }
            DriverError::Stuck { cycles, detail } => {
                write!(
                    f,
                    "not everything was delivered within {cycles} cycles ({detail})"
                )
            }
        }
    }
}

impl std::error::Error for DriverError {}

impl From<SimError> for DriverError {
    fn from(e: SimError) -> Self {
        DriverError::Sim(e)
    }
}

/// The Verilog of `block` for `cfg` and its top module, exactly as `gen`
/// writes it.
pub fn block_files<B: hw::Block>(
    block: &B,
    cfg: &B::Config,
) -> Result<(Vec<hw::EmittedFile>, std::rc::Rc<hw::ModuleDef>), DriverError> {
    let generated = gen::generate_block(block, cfg).map_err(DriverError::Elaboration)?;
    let top = generated
        .top_module
        .expect("an elaborated block has its top module's definition");
    Ok((generated.files, top))
}

/// The Verilated model of `block` for `cfg`, built from the Verilog `gen`
/// writes (or loaded from the cache); only how Verilator lays out its C++
/// is chosen here ([`crate::from_hw::model_spec`]).
pub fn block_model<B: hw::Block>(block: &B, cfg: &B::Config) -> Result<Model, DriverError> {
    let (files, top) = block_files(block, cfg)?;
    Ok(Model::build(&model_spec(&files, &top), &top.name)?)
}

/// The Verilog of a module that is not a registered block (a test top, one
/// part of a block): `build` elaborates it into a fresh design; the file
/// header names `generator` and `params`. Elaboration errors come back as
/// [`DriverError::Elaboration`].
pub fn module_files(
    generator: &str,
    params: Vec<(String, String)>,
    build: impl FnOnce(&mut hw::Design) -> std::rc::Rc<hw::ModuleDef>,
) -> Result<(Vec<hw::EmittedFile>, std::rc::Rc<hw::ModuleDef>), DriverError> {
    hw::quiet_elab_errors();
    let (design, top) = hw::catch_elab(|| {
        let mut design = hw::Design::new();
        let top = build(&mut design);
        (design, top)
    })
    .map_err(|e| DriverError::Elaboration(e.to_string()))?;
    let header = hw::Header {
        generator: generator.to_string(),
        params,
    };
    Ok((hw::emit_design(&design, &top, &header), top))
}

/// The Verilated model of a module that is not a registered block, built
/// as [`block_model`] builds a block's ([`module_files`]).
pub fn module_model(
    generator: &str,
    params: Vec<(String, String)>,
    build: impl FnOnce(&mut hw::Design) -> std::rc::Rc<hw::ModuleDef>,
) -> Result<Model, DriverError> {
    let (files, top) = module_files(generator, params, build)?;
    Ok(Model::build(&model_spec(&files, &top), &top.name)?)
}

/// A model's ports, looked up by name (with a prefix for the ports of one
/// of several identical clients, e.g. `c3_` for chip 3 of a torus).
pub struct PortTable<'a> {
    model: &'a Model,
    prefix: String,
}

impl<'a> PortTable<'a> {
    /// The ports of `model` by their own names.
    pub fn new(model: &'a Model) -> PortTable<'a> {
        PortTable::prefixed(model, "")
    }

    /// The ports of `model` whose names start with `prefix`, by the rest.
    pub fn prefixed(model: &'a Model, prefix: &str) -> PortTable<'a> {
        PortTable {
            model,
            prefix: prefix.to_string(),
        }
    }

    /// The port `name`; an error names it if the model has no such port.
    pub fn get(&self, name: &str) -> Result<PortId, DriverError> {
        Ok(self.model.port(&format!("{}{name}", self.prefix))?)
    }

    /// The ports `names`, in order.
    pub fn list(&self, names: &[&str]) -> Result<Vec<PortId>, DriverError> {
        names.iter().map(|n| self.get(n)).collect()
    }

    /// The ports `names`, in order, as an array.
    pub fn array<const N: usize>(&self, names: [&str; N]) -> Result<[PortId; N], DriverError> {
        let ports = self.list(&names)?;
        Ok(ports.try_into().expect("one port per name"))
    }
}

/// Declares a struct of a block's ports, one [`PortId`] field per port
/// name, with `of(&Model)` and `prefixed(&Model, prefix)` constructors that
/// look every port up through a [`PortTable`](crate::drivers::PortTable).
///
/// ```text
/// sim::block_ports! {
///     /// The VPU's ports.
///     pub struct VpuPorts {
///         instr_valid: vpu::ports::INSTR_VALID,
///         reset: hw::ir::RESET,
///     }
/// }
/// ```
#[macro_export]
macro_rules! block_ports {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $($(#[$fmeta:meta])* $field:ident: $port:expr),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy)]
        $vis struct $name {
            $($(#[$fmeta])* pub $field: $crate::verilator::PortId,)*
        }

        impl $name {
            /// Looks every port up on `model`.
            pub fn of(model: &$crate::verilator::Model) -> Result<Self, $crate::drivers::DriverError> {
                Self::from_table(&$crate::drivers::PortTable::new(model))
            }

            /// Looks every port up on `model`, each name after `prefix`.
            #[allow(dead_code)]
            pub fn prefixed(
                model: &$crate::verilator::Model,
                prefix: &str,
            ) -> Result<Self, $crate::drivers::DriverError> {
                Self::from_table(&$crate::drivers::PortTable::prefixed(model, prefix))
            }

            fn from_table(
                table: &$crate::drivers::PortTable<'_>,
            ) -> Result<Self, $crate::drivers::DriverError> {
                Ok($name {
                    $($field: table.get($port)?,)*
                })
            }
        }
    };
}
