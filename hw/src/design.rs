//! A design: the set of distinct module definitions, interned by name and
//! generator parameters.
//!
//! Builder functions call [`Design::define`] with the module's name and the
//! parameters that shape it; the first call builds the definition, later calls
//! with the same key return the same `Rc`. That is what keeps a 256x256 array at
//! one PE definition (and one PE in the emitted Verilog) however many instances
//! refer to it, and keeps elaboration time proportional to distinct modules.

use crate::builder::ModuleBuilder;
use crate::error::elab_error;
use crate::ir::ModuleDef;
use std::collections::BTreeMap;
use std::rc::Rc;

/// Generator parameters of a definition, in the order the builder gives them.
pub type Params = Vec<(String, String)>;

/// `params` in the form [`Design::define`] takes, for a configuration that
/// lists its parameters with owned names (`config`'s `params()`).
pub fn param_refs(params: &[(String, String)]) -> Vec<(&str, String)> {
    params
        .iter()
        .map(|(k, v)| (k.as_str(), v.clone()))
        .collect()
}

#[derive(Default)]
pub struct Design {
    /// Definitions in completion order: every child before its parents.
    modules: Vec<Rc<ModuleDef>>,
    by_key: BTreeMap<(String, Params), usize>,
    by_name: BTreeMap<String, usize>,
}

impl Design {
    pub fn new() -> Design {
        Design::default()
    }

    /// Returns the definition of `name` with `params`, building it with `build`
    /// the first time. Two different parameter sets may not share a name.
    #[track_caller]
    pub fn define(
        &mut self,
        name: &str,
        params: &[(&str, String)],
        build: impl FnOnce(&mut Design, &mut ModuleBuilder),
    ) -> Rc<ModuleDef> {
        let params: Params = params
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        let key = (name.to_string(), params.clone());
        if let Some(&i) = self.by_key.get(&key) {
            return self.modules[i].clone();
        }
        if let Some(&i) = self.by_name.get(name) {
            elab_error(format!(
                "module name '{name}' is used for two parameter sets ({:?} and {:?}); \
                 include the parameters in the name",
                self.modules[i].params, params
            ));
        }
        let mut b = ModuleBuilder::new(name);
        for (k, v) in &params {
            b.param(k, v);
        }
        build(self, &mut b);
        let def = Rc::new(b.finish());
        self.modules.push(def.clone());
        self.by_key.insert(key, self.modules.len() - 1);
        self.by_name
            .insert(name.to_string(), self.modules.len() - 1);
        def
    }

    /// Adds a definition built directly with a [`ModuleBuilder`] (no interning
    /// key beyond its name, which must be new).
    #[track_caller]
    pub fn add(&mut self, def: ModuleDef) -> Rc<ModuleDef> {
        if self.by_name.contains_key(&def.name) {
            elab_error(format!("module '{}' is already defined", def.name));
        }
        let def = Rc::new(def);
        self.modules.push(def.clone());
        self.by_name
            .insert(def.name.clone(), self.modules.len() - 1);
        def
    }

    /// All definitions, children before parents.
    pub fn modules(&self) -> &[Rc<ModuleDef>] {
        &self.modules
    }

    /// A definition by name.
    pub fn module(&self, name: &str) -> Option<&Rc<ModuleDef>> {
        self.by_name.get(name).map(|&i| &self.modules[i])
    }

    /// The definitions `top` uses, itself last, children before parents.
    pub fn hierarchy(&self, top: &Rc<ModuleDef>) -> Vec<Rc<ModuleDef>> {
        let mut seen = std::collections::BTreeSet::new();
        let mut out = Vec::new();
        fn visit(
            m: &Rc<ModuleDef>,
            seen: &mut std::collections::BTreeSet<String>,
            out: &mut Vec<Rc<ModuleDef>>,
        ) {
            if !seen.insert(m.name.clone()) {
                return;
            }
            for i in &m.instances {
                visit(&i.module, seen, out);
            }
            for a in &m.arrays {
                visit(&a.module, seen, out);
            }
            out.push(m.clone());
        }
        visit(top, &mut seen, &mut out);
        out
    }
}
