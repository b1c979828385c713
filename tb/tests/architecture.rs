//! Invariant 1 of ARCHITECTURE.md, checked on the real dependency graph: no
//! block crate depends on `golden`, directly or through another crate, and
//! `golden` depends neither on `hw` nor on any block crate. The golden models
//! are written from the contract, not from the RTL, so that each can catch
//! the other's mistakes; a path between them would let one be derived from
//! the other.
//!
//! The graph is `cargo metadata`'s. Block crates are found, not listed: every
//! workspace crate whose manifest is in a folder below `hw/` (the crate in
//! `hw/` itself is the hardware-description layer), so a new block crate is
//! covered the day it is added.

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace's crates and their dependency edges.
struct Graph {
    /// Package id -> crate name.
    names: BTreeMap<String, String>,
    /// Package id -> manifest path.
    manifests: BTreeMap<String, PathBuf>,
    /// Package id -> (dependency id, whether the edge is only a dev-dependency).
    deps: BTreeMap<String, Vec<(String, bool)>>,
    workspace_root: PathBuf,
    members: BTreeSet<String>,
}

impl Graph {
    fn load() -> Graph {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let out = Command::new(cargo)
            .args(["metadata", "--format-version", "1"])
            .current_dir(&root)
            .output()
            .expect("cannot run cargo metadata");
        assert!(
            out.status.success(),
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let meta: Value = serde_json::from_slice(&out.stdout).expect("cargo metadata JSON");
        let str_of = |v: &Value| v.as_str().expect("a string").to_string();
        let mut names = BTreeMap::new();
        let mut manifests = BTreeMap::new();
        for p in meta["packages"].as_array().expect("packages") {
            let id = str_of(&p["id"]);
            names.insert(id.clone(), str_of(&p["name"]));
            manifests.insert(id, PathBuf::from(str_of(&p["manifest_path"])));
        }
        let mut deps = BTreeMap::new();
        for node in meta["resolve"]["nodes"].as_array().expect("resolve nodes") {
            let edges = node["deps"]
                .as_array()
                .expect("deps")
                .iter()
                .map(|d| {
                    let dev_only = d["dep_kinds"]
                        .as_array()
                        .expect("dep_kinds")
                        .iter()
                        .all(|k| k["kind"].as_str() == Some("dev"));
                    (str_of(&d["pkg"]), dev_only)
                })
                .collect();
            deps.insert(str_of(&node["id"]), edges);
        }
        let members = meta["workspace_members"]
            .as_array()
            .expect("workspace members")
            .iter()
            .map(str_of)
            .collect();
        Graph {
            names,
            manifests,
            deps,
            workspace_root: PathBuf::from(str_of(&meta["workspace_root"])),
            members,
        }
    }

    fn id_of(&self, name: &str) -> String {
        self.members
            .iter()
            .find(|id| self.names[*id] == name)
            .unwrap_or_else(|| panic!("no workspace crate {name}"))
            .clone()
    }

    /// The block crates: workspace members with a manifest in a folder below `hw/`.
    fn block_crates(&self) -> Vec<String> {
        let hw = self.workspace_root.join("hw");
        self.members
            .iter()
            .filter(|id| {
                let dir = self.manifests[*id].parent().expect("manifest folder");
                dir.starts_with(&hw) && dir != hw
            })
            .cloned()
            .collect()
    }

    /// Every crate `from` needs, each with the path of crate names that leads
    /// to it. `from`'s own dev-dependencies count (its tests would see the
    /// crate); its dependencies' dev-dependencies are never built for it.
    fn reachable(&self, from: &str) -> BTreeMap<String, Vec<String>> {
        let mut paths = BTreeMap::new();
        let mut stack = vec![(from.to_string(), vec![self.names[from].clone()])];
        while let Some((id, path)) = stack.pop() {
            for (dep, dev_only) in &self.deps[&id] {
                if (*dev_only && id != from) || paths.contains_key(dep) {
                    continue;
                }
                let mut p = path.clone();
                p.push(self.names[dep].clone());
                paths.insert(dep.clone(), p.clone());
                stack.push((dep.clone(), p));
            }
        }
        paths
    }
}

#[test]
fn no_block_crate_depends_on_golden_and_golden_depends_on_no_hardware() {
    let graph = Graph::load();
    let blocks = graph.block_crates();
    let block_names: Vec<&str> = blocks.iter().map(|id| graph.names[id].as_str()).collect();
    println!("block crates: {}", block_names.join(", "));
    // The derivation from paths must find the blocks we know of.
    for known in ["mxu", "board", "tensorcore"] {
        assert!(
            block_names.contains(&known),
            "{known} not found among {block_names:?}"
        );
    }
    let golden = graph.id_of("golden");
    let hw = graph.id_of("hw");
    let mut violations = Vec::new();
    for block in &blocks {
        if let Some(path) = graph.reachable(block).get(&golden) {
            violations.push(format!(
                "block crate depends on golden: {}",
                path.join(" -> ")
            ));
        }
    }
    // The compiler writes programs from the instruction set alone: it sees
    // neither the hardware nor the model it is checked against.
    let from_compiler = graph.reachable(&graph.id_of("compiler"));
    for forbidden in blocks.iter().chain([&hw, &golden]) {
        if let Some(path) = from_compiler.get(forbidden) {
            violations.push(format!(
                "the compiler depends on hardware or golden: {}",
                path.join(" -> ")
            ));
        }
    }
    // The host speaks the protocol from PROTOCOL.md, not from the bridge's
    // RTL.
    let from_host = graph.reachable(&graph.id_of("host"));
    for forbidden in blocks.iter().chain([&hw, &golden]) {
        if let Some(path) = from_host.get(forbidden) {
            violations.push(format!(
                "the host depends on hardware or golden: {}",
                path.join(" -> ")
            ));
        }
    }
    let from_golden = graph.reachable(&golden);
    for forbidden in blocks.iter().chain([&hw]) {
        if let Some(path) = from_golden.get(forbidden) {
            violations.push(format!("golden depends on hardware: {}", path.join(" -> ")));
        }
    }
    assert!(
        violations.is_empty(),
        "invariant 1 (ARCHITECTURE.md) is broken:\n{}",
        violations.join("\n")
    );
}
