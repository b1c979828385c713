//! A loaded model instance and its safe port interface.

use super::builder;
use super::cache;
use super::shim;
use super::spec::{ModelSpec, PortDir, PortSpec};
use super::trace::{self, Trace};
use super::SimError;
use libloading::os::unix::{Library, RTLD_LOCAL, RTLD_NOW};
use std::collections::BTreeMap;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::fmt;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::Mutex;

/// Options of [`Model::build_with`] beyond the spec itself.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct BuildOptions {
    pub trace: Trace,
}

impl BuildOptions {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn trace(mut self, trace: Trace) -> Self {
        self.trace = trace;
        self
    }
}

/// A port of one model, returned by [`Model::port`]. Indexes [`Model::ports`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PortId(u32);

impl PortId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Whether [`Model::build`] compiled the model or found it in the cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheStatus {
    Built,
    Reused,
}

/// What [`Model::instantiate`] makes an instance from: a loaded library and its spec.
struct Instantiated {
    api: &'static Api,
    spec_ports: Vec<PortSpec>,
    top: String,
    clock: Option<String>,
    dir: PathBuf,
    key: String,
    cache_status: CacheStatus,
    trace_request: Option<PathBuf>,
}

/// A running Verilator model. See the [module documentation](super) for the clocking
/// convention.
pub struct Model {
    api: &'static Api,
    handle: NonNull<c_void>,
    top: String,
    label: String,
    ports: Vec<PortSpec>,
    storage: Vec<NonNull<u8>>,
    clock: Option<PortId>,
    /// Inputs (or the clock's falling edge) changed since the last evaluation.
    needs_eval: bool,
    cycle: u64,
    /// Set when the C++ side reported a fatal error; the model is unusable afterwards.
    failed: Option<String>,
    trace_path: Option<PathBuf>,
    /// Where waveforms go (`SYSTOLE_TRACE` or the build option), for new instances.
    trace_request: Option<PathBuf>,
    dir: PathBuf,
    key: String,
    cache_status: CacheStatus,
}

// SAFETY: the C++ instance is only reached through this value: `&mut self` for every call
// that runs model code or writes ports, `&self` only for reading port storage. Verilator
// models built without `--threads` keep no thread affinity (the shim re-points Verilator's
// per-thread context at the instance on every call), so moving one to another thread is sound.
// Every model is such a model: `ModelSpec::validate` refuses `--threads` above 1, whose
// worker threads and per-thread evaluation state this argument does not cover.
unsafe impl Send for Model {}

impl Model {
    /// Builds (or reuses from the cache) and instantiates the model of `spec`. `label` names
    /// the model in messages, failed-build folders and waveform files. Tracing follows
    /// `SYSTOLE_TRACE`.
    pub fn build(spec: &ModelSpec, label: &str) -> Result<Model, SimError> {
        Self::build_with(spec, label, &BuildOptions::default())
    }

    pub fn build_with(
        spec: &ModelSpec,
        label: &str,
        options: &BuildOptions,
    ) -> Result<Model, SimError> {
        let label = cache::sanitize_label(label);
        let trace_request = trace::resolve(&options.trace);
        let built = builder::build(spec, &label, trace_request.is_some())?;
        let api = load(&built.library)?;

        let load_error = |reason: String| SimError::Load {
            path: built.library.clone(),
            reason,
        };
        // SAFETY: plain functions of the shim without preconditions.
        let (version, count) = unsafe { ((api.shim_version)(), (api.port_count)()) };
        if version != shim::SHIM_VERSION || count as usize != spec.ports.len() {
            return Err(load_error(format!(
                "shim v{version} with {count} ports, expected v{} with {}",
                shim::SHIM_VERSION,
                spec.ports.len()
            )));
        }
        for (i, port) in spec.ports.iter().enumerate() {
            // SAFETY: `i` is below the port count checked above.
            let bytes = unsafe { (api.port_bytes)(i as u32) } as usize;
            if bytes != shim::storage_bytes(port.width) {
                return Err(load_error(format!(
                    "port {} has {bytes} bytes of storage, expected {}",
                    port.name,
                    shim::storage_bytes(port.width)
                )));
            }
        }

        let built = Instantiated {
            api,
            spec_ports: spec.ports.clone(),
            top: spec.top.clone(),
            clock: spec.clock.clone(),
            dir: built.dir,
            key: built.key,
            cache_status: if built.reused {
                CacheStatus::Reused
            } else {
                CacheStatus::Built
            },
            trace_request,
        };
        Self::instantiate(built, label)
    }

    /// Another instance of this model's library, in its starting state (all inputs zero),
    /// traced like this one (to a file of its own) if this one is. For designs made of many
    /// copies of one unit (the chips of a torus): one build, many instances.
    pub fn new_instance(&self) -> Result<Model, SimError> {
        let clock = self.clock.map(|p| self.ports[p.index()].name.clone());
        Self::instantiate(
            Instantiated {
                api: self.api,
                spec_ports: self.ports.clone(),
                top: self.top.clone(),
                clock,
                dir: self.dir.clone(),
                key: self.key.clone(),
                cache_status: CacheStatus::Reused,
                trace_request: self.trace_request.clone(),
            },
            self.label.clone(),
        )
    }

    fn instantiate(built: Instantiated, label: String) -> Result<Model, SimError> {
        let Instantiated {
            api,
            spec_ports,
            top,
            clock,
            dir,
            key,
            cache_status,
            trace_request,
        } = built;
        let load_error = |reason: String| SimError::Load {
            path: dir.clone(),
            reason,
        };
        let trace_path = trace_request.as_ref().map(|request| {
            let n = trace::next_index(request);
            trace::file_for(request, &label, n)
        });
        let trace_cstring = match &trace_path {
            Some(path) => {
                if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                    std::fs::create_dir_all(parent).map_err(|e| {
                        SimError::io(format!("create waveform folder {}", parent.display()), e)
                    })?;
                }
                Some(CString::new(path.as_os_str().as_bytes()).map_err(|_| {
                    SimError::Instantiate(format!("waveform path {} has a NUL", path.display()))
                })?)
            }
            None => None,
        };
        let mut message = [0 as c_char; 512];
        // SAFETY: the path is NUL-terminated or null; the message buffer length is passed.
        let raw = unsafe {
            (api.new)(
                trace_cstring
                    .as_ref()
                    .map_or(std::ptr::null(), |c| c.as_ptr()),
                message.as_mut_ptr(),
                message.len(),
            )
        };
        let Some(handle) = NonNull::new(raw) else {
            // SAFETY: the shim NUL-terminates the message within the buffer.
            let msg = unsafe { CStr::from_ptr(message.as_ptr()) };
            return Err(SimError::Instantiate(msg.to_string_lossy().into_owned()));
        };

        let mut storage = Vec::with_capacity(spec_ports.len());
        for (i, port) in spec_ports.iter().enumerate() {
            // SAFETY: live handle, index below the port count.
            let ptr = unsafe { (api.port_ptr)(handle.as_ptr(), i as u32) };
            match NonNull::new(ptr.cast::<u8>()) {
                Some(ptr) => storage.push(ptr),
                None => {
                    // SAFETY: live handle, not used afterwards.
                    unsafe { (api.free)(handle.as_ptr()) };
                    return Err(load_error(format!(
                        "no storage address for port {}",
                        port.name
                    )));
                }
            }
        }
        let clock = clock
            .as_ref()
            .and_then(|name| spec_ports.iter().position(|p| &p.name == name))
            .map(|i| PortId(i as u32));
        let mut model = Model {
            api,
            handle,
            top,
            label,
            ports: spec_ports,
            storage,
            clock,
            needs_eval: true,
            cycle: 0,
            failed: None,
            trace_path,
            dir,
            key,
            cache_status,
            trace_request,
        };
        // Start from all-zero inputs (clock low) whatever Verilator's initial values are.
        for i in 0..model.ports.len() {
            if model.ports[i].dir == PortDir::Input {
                let zeros = vec![0; model.ports[i].words()];
                model.write_words(PortId(i as u32), &zeros);
            }
        }
        if let Some(path) = &model.trace_path {
            eprintln!("waveform: {}", path.display());
        }
        Ok(model)
    }

    /// The port called `name`.
    pub fn port(&self, name: &str) -> Result<PortId, SimError> {
        self.ports
            .iter()
            .position(|p| p.name == name)
            .map(|i| PortId(i as u32))
            .ok_or_else(|| SimError::UnknownPort {
                top: self.top.clone(),
                port: name.to_string(),
            })
    }

    /// All ports, in spec order; `PortId::index` indexes this slice.
    pub fn ports(&self) -> &[PortSpec] {
        &self.ports
    }

    pub fn width(&self, p: PortId) -> u32 {
        self.ports[p.index()].width
    }

    /// Sets an input of up to 64 bits. Panics if `value` has bits above the port's width, if
    /// the port is an output or the clock, or if it is wider than 64 bits.
    pub fn poke(&mut self, p: PortId, value: u64) {
        let port = self.input(p);
        assert!(
            port.width <= 64,
            "sim: port {} is {} bits wide; use poke_wide",
            port.name,
            port.width
        );
        assert!(
            value & !mask(port.width) == 0,
            "sim: value {value:#x} does not fit the {}-bit port {}",
            port.width,
            port.name
        );
        self.write_scalar(p, value);
    }

    /// Sets an input of up to 64 bits from a signed value, stored in two's complement.
    /// Panics if `value` is outside the port's signed range.
    pub fn poke_signed(&mut self, p: PortId, value: i64) {
        let port = self.input(p);
        let width = port.width;
        assert!(
            width <= 64,
            "sim: port {} is {width} bits wide; use poke_wide",
            port.name
        );
        let fits = width == 64 || (-(1i64 << (width - 1))..(1i64 << (width - 1))).contains(&value);
        assert!(
            fits,
            "sim: value {value} does not fit the signed {width}-bit port {}",
            port.name
        );
        self.write_scalar(p, value as u64 & mask(width));
    }

    /// Sets an input of any width from little-endian 32-bit words (exactly
    /// `ceil(width / 32)` of them). Panics on bits above the width.
    pub fn poke_wide(&mut self, p: PortId, words: &[u32]) {
        let port = self.input(p);
        assert_eq!(
            words.len(),
            port.words(),
            "sim: the {}-bit port {} takes {} words",
            port.width,
            port.name,
            port.words()
        );
        let top_bits = port.width % 32;
        assert!(
            top_bits == 0 || words[words.len() - 1] >> top_bits == 0,
            "sim: value does not fit the {}-bit port {}",
            port.width,
            port.name
        );
        self.write_words(p, words);
    }

    /// Reads a port of up to 64 bits. Panics for wider ports.
    pub fn peek(&self, p: PortId) -> u64 {
        let port = &self.ports[p.index()];
        assert!(
            port.width <= 64,
            "sim: port {} is {} bits wide; use peek_wide",
            port.name,
            port.width
        );
        let ptr = self.storage[p.index()].as_ptr();
        // SAFETY: `ptr` addresses the port's storage, whose size matches the width (checked at
        // load) and which lives as long as the instance.
        let raw = unsafe {
            match shim::storage_bytes(port.width) {
                1 => u64::from(ptr.read()),
                2 => u64::from(ptr.cast::<u16>().read()),
                4 => u64::from(ptr.cast::<u32>().read()),
                _ => ptr.cast::<u64>().read(),
            }
        };
        raw & mask(port.width)
    }

    /// Reads a port of up to 64 bits as a two's-complement signed value.
    pub fn peek_signed(&self, p: PortId) -> i64 {
        let width = self.width(p);
        let value = self.peek(p);
        let shift = 64 - width;
        ((value << shift) as i64) >> shift
    }

    /// Reads a port of any width as little-endian 32-bit words (`ceil(width / 32)` of them).
    pub fn peek_wide(&self, p: PortId) -> Vec<u32> {
        let mut words = vec![0u32; self.ports[p.index()].words()];
        self.peek_wide_into(p, &mut words);
        words
    }

    /// Reads a port of any width into `words` (exactly `ceil(width / 32)` of them), as
    /// [`peek_wide`](Self::peek_wide) gives it, without allocating.
    pub fn peek_wide_into(&self, p: PortId, words: &mut [u32]) {
        let port = &self.ports[p.index()];
        assert_eq!(
            words.len(),
            port.words(),
            "sim: the {}-bit port {} has {} words",
            port.width,
            port.name,
            port.words()
        );
        if port.width <= 64 {
            let value = self.peek(p);
            words.copy_from_slice(&[value as u32, (value >> 32) as u32][..port.words()]);
            return;
        }
        // SAFETY: wide ports are VlWide<words>, an array of 32-bit words (size checked at load).
        unsafe {
            std::ptr::copy_nonoverlapping(
                self.storage[p.index()].as_ptr().cast::<u32>(),
                words.as_mut_ptr(),
                words.len(),
            );
        }
        if !port.width.is_multiple_of(32) {
            let last = words.len() - 1;
            words[last] &= (1u32 << (port.width % 32)) - 1;
        }
    }

    /// Settles the combinational logic for the current inputs, so `peek` sees this cycle's
    /// combinational outputs. Panics if the simulation hits a fatal error (`$stop`, a
    /// combinational loop that does not settle).
    pub fn eval(&mut self) {
        self.ensure_usable();
        // SAFETY: live handle.
        let rc = unsafe { (self.api.eval)(self.handle.as_ptr()) };
        self.check(rc);
        self.needs_eval = false;
    }

    /// One clock cycle with the current inputs: settle them (if poked since the last `eval`),
    /// raise the clock and evaluate (registers take their next values), lower the clock.
    /// Increments [`cycle`](Self::cycle). The falling edge is evaluated by the next `eval` or
    /// `step`; registered outputs can be peeked right away. Without a clock this only settles
    /// and advances the cycle count (and the waveform's time).
    pub fn step(&mut self) {
        self.advance(1);
    }

    /// The synchronous reset every block driver starts from: `idle` inputs
    /// (valids, enables, write strobes) driven to 0, then `reset` held high
    /// for one clock cycle and released.
    pub fn reset_with_idle_inputs(&mut self, reset: PortId, idle: &[PortId]) {
        for &port in idle {
            self.poke(port, 0);
        }
        self.poke(reset, 1);
        self.step();
        self.poke(reset, 0);
    }

    /// `n` clock cycles, looped in C++ with the inputs held; the same as `n` calls of
    /// [`step`](Self::step) without poking in between, minus the call overhead.
    pub fn run_cycles_native(&mut self, n: u64) {
        self.advance(n);
    }

    /// Clock cycles completed by `step` and `run_cycles_native`.
    pub fn cycle(&self) -> u64 {
        self.cycle
    }

    /// Whether the design executed `$finish`.
    pub fn got_finish(&self) -> bool {
        // SAFETY: live handle.
        unsafe { (self.api.got_finish)(self.handle.as_ptr()) != 0 }
    }

    /// The waveform file, if this model is traced.
    pub fn trace_path(&self) -> Option<&Path> {
        self.trace_path.as_deref()
    }

    /// Writes buffered waveform data to the file (it is also flushed and closed on drop).
    pub fn flush_trace(&mut self) {
        // SAFETY: live handle.
        unsafe { (self.api.trace_flush)(self.handle.as_ptr()) }
    }

    pub fn label(&self) -> &str {
        &self.label
    }

    /// The cache entry holding the model's library, build log and generated C++.
    pub fn build_dir(&self) -> &Path {
        &self.dir
    }

    /// The model's cache key (hex SHA-256).
    pub fn cache_key(&self) -> &str {
        &self.key
    }

    pub fn cache_status(&self) -> CacheStatus {
        self.cache_status
    }

    fn advance(&mut self, cycles: u64) {
        if cycles == 0 {
            return;
        }
        self.ensure_usable();
        // SAFETY: live handle.
        let rc =
            unsafe { (self.api.step)(self.handle.as_ptr(), cycles, c_int::from(self.needs_eval)) };
        self.check(rc);
        self.cycle += cycles;
        self.needs_eval = self.clock.is_some();
    }

    /// The spec of input `p`, panicking for outputs and the clock.
    fn input(&self, p: PortId) -> &PortSpec {
        let port = &self.ports[p.index()];
        assert!(
            port.dir == PortDir::Input,
            "sim: port {} of {} is an output",
            port.name,
            self.top
        );
        assert!(
            Some(p) != self.clock,
            "sim: the clock {} is driven by step()",
            port.name
        );
        port
    }

    fn write_scalar(&mut self, p: PortId, value: u64) {
        let ptr = self.storage[p.index()].as_ptr();
        // SAFETY: as in `peek`; `value` fits the storage (checked by the callers).
        unsafe {
            match shim::storage_bytes(self.ports[p.index()].width) {
                1 => ptr.write(value as u8),
                2 => ptr.cast::<u16>().write(value as u16),
                4 => ptr.cast::<u32>().write(value as u32),
                _ => ptr.cast::<u64>().write(value),
            }
        }
        self.needs_eval = true;
    }

    /// Writes a port from words, any width (the caller checked count and top bits).
    fn write_words(&mut self, p: PortId, words: &[u32]) {
        let width = self.ports[p.index()].width;
        if width <= 64 {
            let high = words.get(1).map_or(0, |&w| u64::from(w) << 32);
            self.write_scalar(p, high | u64::from(words[0]));
            return;
        }
        // SAFETY: wide ports are VlWide<words> (size checked at load); `words` has that length.
        unsafe {
            std::ptr::copy_nonoverlapping(
                words.as_ptr(),
                self.storage[p.index()].as_ptr().cast::<u32>(),
                words.len(),
            );
        }
        self.needs_eval = true;
    }

    fn ensure_usable(&self) {
        if let Some(msg) = &self.failed {
            panic!("sim: model {} already failed: {msg}", self.label);
        }
    }

    fn check(&mut self, rc: c_int) {
        if rc == 0 {
            return;
        }
        // SAFETY: live handle; the shim returns a NUL-terminated string it owns.
        let msg = unsafe { CStr::from_ptr((self.api.error)(self.handle.as_ptr())) }
            .to_string_lossy()
            .into_owned();
        self.failed = Some(msg.clone());
        panic!(
            "sim: model {} stopped at cycle {}: {msg}",
            self.label, self.cycle
        );
    }
}

impl Drop for Model {
    fn drop(&mut self) {
        // SAFETY: live handle, never used again. Closes the waveform file, if any.
        unsafe { (self.api.free)(self.handle.as_ptr()) }
    }
}

impl fmt::Debug for Model {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Model")
            .field("label", &self.label)
            .field("top", &self.top)
            .field("cycle", &self.cycle)
            .field("trace_path", &self.trace_path)
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

fn mask(width: u32) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

/// The shim's entry points, resolved once per library.
struct Api {
    shim_version: unsafe extern "C" fn() -> u32,
    port_count: unsafe extern "C" fn() -> u32,
    port_bytes: unsafe extern "C" fn(u32) -> u32,
    new: unsafe extern "C" fn(*const c_char, *mut c_char, usize) -> *mut c_void,
    free: unsafe extern "C" fn(*mut c_void),
    port_ptr: unsafe extern "C" fn(*mut c_void, u32) -> *mut c_void,
    eval: unsafe extern "C" fn(*mut c_void) -> c_int,
    step: unsafe extern "C" fn(*mut c_void, u64, c_int) -> c_int,
    trace_flush: unsafe extern "C" fn(*mut c_void),
    error: unsafe extern "C" fn(*mut c_void) -> *const c_char,
    got_finish: unsafe extern "C" fn(*mut c_void) -> c_int,
}

/// Loads a model library once per process and keeps it loaded: unloading C++ code that
/// registered thread-local destructors or exit callbacks is a classic source of crashes, and
/// the libraries are small.
fn load(path: &Path) -> Result<&'static Api, SimError> {
    static LOADED: Mutex<BTreeMap<PathBuf, &'static Api>> = Mutex::new(BTreeMap::new());
    let mut loaded = LOADED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(api) = loaded.get(path) {
        return Ok(api);
    }
    let error = |reason: String| SimError::Load {
        path: path.to_path_buf(),
        reason,
    };
    // RTLD_LOCAL keeps the library's symbols out of the global namespace, so other models
    // never bind to them; RTLD_NOW reports missing symbols here rather than mid-simulation.
    // SAFETY: the library is our own build; its initialisers only set up Verilator statics.
    let library = unsafe { Library::open(Some(path), RTLD_NOW | RTLD_LOCAL) }
        .map_err(|e| error(e.to_string()))?;
    let library: &'static Library = Box::leak(Box::new(library));
    macro_rules! symbol {
        ($name:literal) => {
            // SAFETY: the shim defines the symbol with the signature of the matching field.
            *unsafe { library.get(concat!($name, "\0").as_bytes()) }
                .map_err(|e| error(e.to_string()))?
        };
    }
    let api: &'static Api = Box::leak(Box::new(Api {
        shim_version: symbol!("systole_shim_version"),
        port_count: symbol!("systole_port_count"),
        port_bytes: symbol!("systole_port_bytes"),
        new: symbol!("systole_new"),
        free: symbol!("systole_free"),
        port_ptr: symbol!("systole_port_ptr"),
        eval: symbol!("systole_eval"),
        step: symbol!("systole_step"),
        trace_flush: symbol!("systole_trace_flush"),
        error: symbol!("systole_error"),
        got_finish: symbol!("systole_got_finish"),
    }));
    loaded.insert(path.to_path_buf(), api);
    Ok(api)
}
