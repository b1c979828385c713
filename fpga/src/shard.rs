//! The report on several machines: `fpga report --shard K/N` runs the K-th
//! of N disjoint parts of the report's work, `fpga report --merge DIR...`
//! joins the parts' `report.json` files into the report one run gives.
//!
//! The work is one list: every (design, part) flow in the report's order,
//! then every (block, part, search) in the order the searches run. A search
//! is one unit (its sizes depend on each other), so is a flow. Unit `u`
//! belongs to shard `u mod N + 1`: the partition depends on nothing but the
//! list, which every shard computes alike from the same settings and commit,
//! and dealing the units out in turn spreads each block's searches (the
//! long units) over the shards.

use crate::report::Report;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The K-th of N parts of the work (`--shard K/N`, 1 <= K <= N).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl Shard {
    /// Reads `K/N`; the error is one line.
    pub fn parse(text: &str) -> Result<Shard, String> {
        let bad = || {
            format!(
                "--shard '{text}': expected K/N, the K-th of N parts with 1 <= K <= N (e.g. 2/4)"
            )
        };
        let (k, n) = text.split_once('/').ok_or_else(bad)?;
        let (index, count) = (
            k.trim().parse::<usize>().map_err(|_| bad())?,
            n.trim().parse::<usize>().map_err(|_| bad())?,
        );
        if index == 0 || index > count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }

    /// Whether unit `unit` of the work list is this shard's.
    pub fn takes(&self, unit: usize) -> bool {
        unit % self.count + 1 == self.index
    }

    /// The units of `0..total` that are this shard's, in order.
    pub fn units(&self, total: usize) -> Vec<usize> {
        (0..total).filter(|u| self.takes(*u)).collect()
    }

    /// The option as given (`--shard 2/4`).
    pub fn option(&self) -> String {
        format!("--shard {}/{}", self.index, self.count)
    }
}

/// What a shard's report holds of the whole work, for the merge.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardRecord {
    pub index: usize,
    pub count: usize,
    /// Flows and searches of the whole work list.
    pub total_flows: usize,
    pub total_searches: usize,
    /// The positions in the whole report of this report's `presets`
    /// entries and of its finished `largest` entries (searches count from
    /// 0 after the flows).
    pub flows: Vec<usize>,
    pub searches: Vec<usize>,
}

impl ShardRecord {
    /// A shard's record before its searches have run.
    pub fn new(shard: Shard, total_flows: usize, total_searches: usize) -> ShardRecord {
        ShardRecord {
            index: shard.index,
            count: shard.count,
            total_flows,
            total_searches,
            flows: shard.units(total_flows),
            searches: Vec::new(),
        }
    }

    fn shard(&self) -> Shard {
        Shard {
            index: self.index,
            count: self.count,
        }
    }

    /// The search positions this shard is to run (its units past the flows).
    pub fn searches_due(&self) -> Vec<usize> {
        let shard = self.shard();
        (0..self.total_searches)
            .filter(|s| shard.takes(self.total_flows + s))
            .collect()
    }
}

/// Reads the `report.json` of each folder.
pub fn read_reports(dirs: &[PathBuf]) -> Result<Vec<(PathBuf, Report)>, String> {
    dirs.iter()
        .map(|d| {
            let path = d.join("report.json");
            let text = std::fs::read_to_string(&path)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            let report: Report = serde_json::from_str(&text)
                .map_err(|e| format!("{}: not a report ({e})", path.display()))?;
            Ok((path, report))
        })
        .collect()
}

/// The settings two shards of one report share: every field but the work
/// done, with the command as run without `--shard`.
fn settings(
    path: &Path,
    r: &Report,
    s: &ShardRecord,
) -> Result<Vec<(&'static str, String)>, String> {
    let suffix = format!(" {}", s.shard().option());
    let command = r.command.strip_suffix(&suffix).ok_or_else(|| {
        format!(
            "{}: its command '{}' does not end in '{suffix}'",
            path.display(),
            r.command
        )
    })?;
    let parts: Vec<&str> = r.parts.iter().map(|p| p.name).collect();
    Ok(vec![
        ("command", command.to_string()),
        (
            "commit",
            r.commit.clone().unwrap_or_else(|| "unknown".into()),
        ),
        ("quick", r.quick.to_string()),
        ("parts", parts.join(",")),
        ("params", r.params.join(" ")),
        ("tools", format!("{:?}", r.tools)),
        ("designs not built", r.not_built.join(" ")),
        ("number of shards", s.count.to_string()),
        ("number of flows", s.total_flows.to_string()),
        ("number of searches", s.total_searches.to_string()),
    ])
}

/// Joins the reports of every shard of one run into the report one run
/// gives: the same settings, the flows and searches in the order of the
/// whole work list, and as the run's time the longest shard's. Shards of
/// different settings or commits, a shard given twice, a missing or
/// unfinished shard are each one line.
pub fn merge(reports: Vec<(PathBuf, Report)>) -> Result<Report, String> {
    let mut shards = Vec::new();
    for (path, r) in &reports {
        let s = r.shard.clone().ok_or_else(|| {
            format!(
                "{} is a whole report, not a shard's (made without --shard)",
                path.display()
            )
        })?;
        shards.push((path, r, settings(path, r, &s)?, s));
    }
    let Some((first_path, first, first_settings, first_shard)) = shards.first() else {
        return Err("--merge needs the folders of a report's shards".into());
    };
    let count = first_shard.count;
    let mut by_index: Vec<Option<&PathBuf>> = vec![None; count];
    for (path, _, settings, s) in &shards {
        for ((what, mine), (_, theirs)) in settings.iter().zip(first_settings) {
            if mine != theirs {
                return Err(format!(
                    "{} and {} are not shards of one report: their {what} differ ({theirs} vs {mine})",
                    first_path.display(),
                    path.display()
                ));
            }
        }
        if let Some(other) = by_index[s.index - 1].replace(path) {
            return Err(format!(
                "shard {}/{count} given twice: {} and {}",
                s.index,
                other.display(),
                path.display()
            ));
        }
        let due = s.searches_due();
        if s.flows != s.shard().units(s.total_flows) || s.searches != due {
            return Err(format!(
                "{}: shard {}/{count} is unfinished or not of this partition ({} of its {} flows, \
                 {} of its {} searches)",
                path.display(),
                s.index,
                s.flows.len(),
                s.shard().units(s.total_flows).len(),
                s.searches.len(),
                due.len()
            ));
        }
    }
    let missing: Vec<String> = (1..=count)
        .filter(|k| by_index[k - 1].is_none())
        .map(|k| format!("{k}/{count}"))
        .collect();
    if !missing.is_empty() {
        return Err(format!("shards missing: {}", missing.join(", ")));
    }
    let mut presets = vec![None; first_shard.total_flows];
    let mut largest = vec![None; first_shard.total_searches];
    for (_, r, _, s) in &shards {
        for (at, flow) in s.flows.iter().zip(&r.presets) {
            presets[*at] = Some(flow.clone());
        }
        for (at, search) in s.searches.iter().zip(&r.largest) {
            largest[*at] = Some(search.clone());
        }
    }
    let command = first_settings[0].1.clone();
    Ok(Report {
        command,
        quick: first.quick,
        seconds: shards.iter().map(|s| s.1.seconds).fold(0.0, f64::max),
        commit: first.commit.clone(),
        tools: first.tools.clone(),
        params: first.params.clone(),
        parts: first.parts.clone(),
        presets: presets
            .into_iter()
            .map(|p| p.expect("every flow has its shard"))
            .collect(),
        not_built: first.not_built.clone(),
        largest: largest
            .into_iter()
            .map(|l| l.expect("every search has its shard"))
            .collect(),
        shard: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flow::{DesignInfo, FlowResult};
    use crate::search::SearchResult;

    fn flow(n: usize) -> FlowResult {
        FlowResult {
            part: "xc7a35t".into(),
            design: DesignInfo {
                top: format!("top{n}"),
                block: "b".into(),
                label: format!("design {n}"),
                config: [("depth".to_string(), n.to_string())].into(),
            },
            harness_ffs: n as u64,
            synth: None,
            synth_seconds: Some(n as f64),
            utilization: None,
            pnr: None,
            fits: Some(true),
            fit_basis: Some("synthesis estimate".into()),
            why_not: None,
            error: None,
            dir: format!("top{n}/xc7a35t"),
        }
    }

    fn search(n: usize) -> SearchResult {
        SearchResult {
            block: "b".into(),
            search: format!("s{n}"),
            description: "the largest b".into(),
            part: "xc7a35t".into(),
            size: Some(n as u32),
            estimate: Some(n as u32 + 1),
            size_label: Some(format!("{n}x{n}")),
            estimate_label: None,
            result: Some(flow(100 + n)),
            next_size_up: None,
            trail: vec![format!("{n}x{n}: fits")],
            error: None,
            seconds: n as f64,
        }
    }

    /// A whole report of `flows` flows and `searches` searches.
    fn whole(flows: usize, searches: usize) -> Report {
        Report {
            command: "cargo run --release -p fpga -- report --parts xc7a35t".into(),
            quick: false,
            seconds: 9.0,
            commit: Some("abc".into()),
            tools: [("yosys".to_string(), "Yosys 0.23".to_string())].into(),
            params: vec!["b.depth=2".into()],
            parts: vec![*crate::parts::part("xc7a35t").unwrap()],
            presets: (0..flows).map(flow).collect(),
            not_built: vec!["c: not built.".into()],
            largest: (0..searches).map(search).collect(),
            shard: None,
        }
    }

    /// What shard `index` of `count` writes for `whole`'s work.
    fn shard_of(whole: &Report, index: usize, count: usize) -> (PathBuf, Report) {
        let shard = Shard { index, count };
        let mut record = ShardRecord::new(shard, whole.presets.len(), whole.largest.len());
        record.searches = record.searches_due();
        let mut r = whole.clone();
        r.command = format!("{} {}", whole.command, shard.option());
        r.seconds = index as f64;
        r.presets = record
            .flows
            .iter()
            .map(|i| whole.presets[*i].clone())
            .collect();
        r.largest = record
            .searches
            .iter()
            .map(|i| whole.largest[*i].clone())
            .collect();
        r.shard = Some(record);
        (PathBuf::from(format!("shard{index}")), r)
    }

    fn json(r: &Report) -> serde_json::Value {
        serde_json::to_value(r).unwrap()
    }

    #[test]
    fn merged_shards_are_the_whole_report() {
        for (flows, searches) in [(7, 5), (2, 0), (0, 3), (1, 1)] {
            let w = whole(flows, searches);
            for count in 1..=4 {
                // In any order, through their JSON form.
                let mut shards: Vec<_> =
                    (1..=count).rev().map(|k| shard_of(&w, k, count)).collect();
                for (_, r) in &mut shards {
                    *r = serde_json::from_value(json(r)).unwrap();
                }
                let mut merged = merge(shards).unwrap();
                assert_eq!(merged.seconds, count as f64, "the longest shard's");
                merged.seconds = w.seconds;
                assert_eq!(
                    json(&merged),
                    json(&w),
                    "{flows} flows, {searches} searches, {count} shards"
                );
                assert_eq!(merged.markdown(), w.markdown());
            }
        }
    }

    #[test]
    fn mismatched_shards_are_one_line_errors() {
        let w = whole(7, 5);
        let all = || (1..=3).map(|k| shard_of(&w, k, 3)).collect::<Vec<_>>();
        let err = |shards: Vec<(PathBuf, Report)>| {
            let e = merge(shards).unwrap_err();
            assert_eq!(e.lines().count(), 1, "{e}");
            e
        };
        assert_eq!(err(all()[..2].to_vec()), "shards missing: 3/3");
        let mut twice = all();
        twice.push(shard_of(&w, 2, 3));
        assert_eq!(err(twice), "shard 2/3 given twice: shard2 and shard2");
        let mut other_commit = all();
        other_commit[2].1.commit = Some("def".into());
        assert_eq!(
            err(other_commit),
            "shard1 and shard3 are not shards of one report: their commit differ (abc vs def)"
        );
        let mut other_params = all();
        other_params[1].1.params.clear();
        assert!(err(other_params).contains("their params differ"));
        let mut other_count = all();
        other_count[1] = shard_of(&w, 2, 4);
        assert!(err(other_count).contains("differ"));
        let mut unfinished = all();
        unfinished[0].1.largest.pop();
        unfinished[0].1.shard.as_mut().unwrap().searches.pop();
        assert_eq!(
            err(unfinished),
            "shard1: shard 1/3 is unfinished or not of this partition (3 of its 3 flows, 0 of its 1 searches)"
        );
        let mut with_whole = all();
        with_whole.push((PathBuf::from("one-run"), w.clone()));
        assert_eq!(
            err(with_whole),
            "one-run is a whole report, not a shard's (made without --shard)"
        );
        assert!(err(Vec::new()).starts_with("--merge needs"));
    }

    #[test]
    fn shards_are_one_line_errors_unless_k_of_n() {
        assert_eq!(Shard::parse("2/4"), Ok(Shard { index: 2, count: 4 }));
        assert_eq!(Shard::parse("1/1"), Ok(Shard { index: 1, count: 1 }));
        for bad in ["3/2", "0/2", "a/b", "2", "1/0", "-1/2", "1/2/3", ""] {
            let err = Shard::parse(bad).unwrap_err();
            assert!(
                err.starts_with(&format!("--shard '{bad}': expected K/N")),
                "{err}"
            );
            assert_eq!(err.lines().count(), 1);
        }
    }

    #[test]
    fn the_shards_of_a_work_list_are_disjoint_and_cover_it() {
        for count in 1..=5 {
            let mut seen = vec![0; 13];
            for index in 1..=count {
                for u in (Shard { index, count }).units(13) {
                    seen[u] += 1;
                }
            }
            assert!(seen.iter().all(|n| *n == 1), "{count}: {seen:?}");
        }
        let s = ShardRecord::new(Shard { index: 2, count: 3 }, 4, 5);
        assert_eq!(s.flows, [1]);
        // Units 4..9 are the searches; 4 and 7 are the second shard's.
        assert_eq!(s.searches_due(), [0, 3]);
    }
}
