//! The numerics contract is cited from inside the repository, and its
//! citations resolve:
//!
//! * no text file of the repository (tracked, or new and not ignored) points
//!   outside it for the contract or its vectors, and every mention of the
//!   contract's page names its path, `docs/numerics.md`;
//! * every citation of a section of `docs/numerics.md` (the path, `#` and
//!   an anchor), and every `#` link inside that page, names a heading the
//!   page has (GitHub's anchors);
//! * the README of `tb/data/vectors/` describes every file of the folder and
//!   names no file that is missing;
//! * every relative link of every Markdown page (the front page, the pages
//!   of `docs/`, ARCHITECTURE.md, the crates' pages) names a file of the
//!   repository, and a `#` anchor of a Markdown target names one of its
//!   headings.
//!
//! Each check is a function of the files' texts, so
//! `each_check_catches_a_planted_mistake` shows that each one can fail.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The contract's page, relative to the repository root.
const CONTRACT: &str = "docs/numerics.md";
/// The reference vectors' folder and its README, relative to the root.
const VECTORS: &str = "tb/data/vectors";
const VECTORS_README: &str = "tb/data/vectors/README.md";

/// One text file of the repository: its path relative to the root, and its text.
struct TextFile {
    path: String,
    text: String,
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Every text file git knows of or would add (tracked, plus untracked files
/// not ignored), read as UTF-8 without NUL bytes; binary files are skipped.
fn text_files(root: &Path) -> Vec<TextFile> {
    let out = Command::new("git")
        .args([
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ])
        .current_dir(root)
        .output()
        .expect("cannot run git ls-files");
    assert!(
        out.status.success(),
        "git ls-files failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut paths: Vec<String> = String::from_utf8(out.stdout)
        .expect("git paths are UTF-8")
        .split('\0')
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect();
    paths.sort();
    paths.dedup();
    paths
        .into_iter()
        .filter_map(|path| {
            // A tracked file deleted in the work tree has nothing to check.
            let bytes = std::fs::read(root.join(&path)).ok()?;
            let text = String::from_utf8(bytes).ok()?;
            (!text.contains('\0')).then_some(TextFile { path, text })
        })
        .collect()
}

/// The places, outside the repository, that the contract and its vectors
/// must not be cited from. Built at run time so that this file does not
/// contain them itself.
fn outside_paths() -> Vec<String> {
    let shared = ["sha", "red"].concat();
    vec![
        format!("../{shared}"),
        format!("{shared}/spec"),
        format!("{shared}/vectors"),
    ]
}

/// 1-based line number of byte offset `at` in `text`.
fn line_of(text: &str, at: usize) -> usize {
    text[..at].matches('\n').count() + 1
}

/// Check (a): references that leave the repository, and mentions of the
/// contract's page without its path (its file name alone is allowed only in
/// `docs/`, where it is a relative link).
fn outside_references(files: &[TextFile]) -> Vec<String> {
    let page = CONTRACT.rsplit('/').next().expect("a file name");
    let mut bad = Vec::new();
    for f in files {
        for pattern in outside_paths() {
            for (at, _) in f.text.match_indices(&pattern) {
                bad.push(format!(
                    "{}:{}: cites {pattern:?}, outside the repository (cite {CONTRACT})",
                    f.path,
                    line_of(&f.text, at)
                ));
            }
        }
        if f.path.starts_with("docs/") {
            continue;
        }
        for (at, _) in f.text.match_indices(page) {
            if !f.text[..at].ends_with("docs/") {
                bad.push(format!(
                    "{}:{}: names {page} without its path (cite {CONTRACT})",
                    f.path,
                    line_of(&f.text, at)
                ));
            }
        }
    }
    bad
}

/// The GitHub anchor of a heading's text: lower case, characters other than
/// letters, digits, spaces, `-` and `_` dropped, spaces turned into `-`.
fn github_slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a Markdown page's headings, as GitHub makes them: a
/// repeated slug gets `-1`, `-2`, ... Lines inside fenced code blocks are not
/// headings.
fn anchors(markdown: &str) -> BTreeSet<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = BTreeSet::new();
    let mut in_code = false;
    for line in markdown.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        let level = line.chars().take_while(|&c| c == '#').count();
        let Some(text) = line[level..].strip_prefix(' ') else {
            continue;
        };
        if !(1..=6).contains(&level) {
            continue;
        }
        let slug = github_slug(text.trim_end_matches('#'));
        let n = seen.entry(slug.clone()).or_insert(0);
        out.insert(if *n == 0 {
            slug.clone()
        } else {
            format!("{slug}-{n}")
        });
        *n += 1;
    }
    out
}

/// The anchor that starts at `text[at..]`: the characters an anchor can hold.
fn anchor_at(text: &str, at: usize) -> &str {
    let rest = &text[at..];
    let end = rest
        .find(|c: char| !(c.is_alphanumeric() || c == '-' || c == '_'))
        .unwrap_or(rest.len());
    &rest[..end]
}

/// Check (b): citations of a section of the contract's page anywhere, and
/// `#` links inside the page, that name no heading of the page.
fn broken_anchors(files: &[TextFile]) -> Vec<String> {
    let Some(page) = files.iter().find(|f| f.path == CONTRACT) else {
        return vec![format!("{CONTRACT} is missing")];
    };
    let have = anchors(&page.text);
    let cited = format!("{}#", CONTRACT.rsplit('/').next().expect("a file name"));
    let mut bad = Vec::new();
    for f in files {
        let mut starts: Vec<usize> = f
            .text
            .match_indices(&cited)
            .map(|(at, _)| at + cited.len())
            .collect();
        if f.path == CONTRACT {
            starts.extend(f.text.match_indices("](#").map(|(at, _)| at + 3));
        }
        for at in starts {
            let anchor = anchor_at(&f.text, at);
            if !have.contains(anchor) {
                bad.push(format!(
                    "{}:{}: #{anchor} is not a heading of {CONTRACT}",
                    f.path,
                    line_of(&f.text, at)
                ));
            }
        }
    }
    bad
}

/// Whether `name` occurs in `text` as a whole file name (not as the tail of
/// a longer one).
fn names_file(text: &str, name: &str) -> bool {
    text.match_indices(name).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '-' || c == '.')
    })
}

/// Check (c): files of the vectors folder its README does not name, and
/// vector files it names that the folder lacks. `folder` holds the names of
/// the folder's files, README included.
fn undescribed_vectors(readme: &str, folder: &BTreeSet<String>) -> Vec<String> {
    let readme_name = VECTORS_README.rsplit('/').next().expect("a file name");
    let mut bad: Vec<String> = folder
        .iter()
        .filter(|name| name.as_str() != readme_name && !names_file(readme, name))
        .map(|name| format!("{VECTORS}/{name} is not described in {VECTORS_README}"))
        .collect();
    let named: BTreeSet<&str> = readme
        .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-' || c == '.'))
        .filter(|w| w.ends_with(".tsv"))
        .collect();
    bad.extend(
        named
            .into_iter()
            .filter(|name| !folder.contains(*name))
            .map(|name| format!("{VECTORS_README} describes {name}, which {VECTORS} lacks")),
    );
    bad
}

fn vector_folder(root: &Path) -> BTreeSet<String> {
    std::fs::read_dir(root.join(VECTORS))
        .unwrap_or_else(|e| panic!("cannot list {VECTORS}: {e}"))
        .map(|entry| {
            entry
                .expect("a folder entry")
                .file_name()
                .into_string()
                .expect("a UTF-8 file name")
        })
        .collect()
}

/// The relative link targets of a Markdown page outside code blocks and code
/// spans: what `](` and `)` enclose, with the byte offset of each.
fn link_targets(markdown: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut offset = 0;
    let mut in_code = false;
    for line in markdown.split_inclusive('\n') {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_code = !in_code;
        } else if !in_code {
            // Code spans (`...`) hold examples, not links.
            let mut in_span = false;
            let bytes = line.as_bytes();
            let mut i = 0;
            while i < bytes.len() {
                match bytes[i] {
                    b'`' => in_span = !in_span,
                    b']' if !in_span && bytes.get(i + 1) == Some(&b'(') => {
                        if let Some(end) = line[i + 2..].find(')') {
                            let target = &line[i + 2..i + 2 + end];
                            let external = target.contains("://") || target.starts_with("mailto:");
                            if !external && !target.is_empty() {
                                out.push((offset + i + 2, target));
                            }
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
        }
        offset += line.len();
    }
    out
}

/// Check (d): relative links of Markdown pages that name no file of the
/// repository, or an anchor their Markdown target lacks.
fn broken_links(files: &[TextFile]) -> Vec<String> {
    let by_path: HashMap<&str, &TextFile> = files.iter().map(|f| (f.path.as_str(), f)).collect();
    let dirs: BTreeSet<String> = files
        .iter()
        .flat_map(|f| {
            let parts: Vec<&str> = f.path.split('/').collect();
            (1..parts.len()).map(move |n| parts[..n].join("/"))
        })
        .collect();
    let mut bad = Vec::new();
    for f in files.iter().filter(|f| f.path.ends_with(".md")) {
        let base: Vec<&str> = f.path.split('/').collect();
        let base = &base[..base.len() - 1];
        for (at, target) in link_targets(&f.text) {
            let (path, anchor) = target.split_once('#').unwrap_or((target, ""));
            // Resolve against the page's folder.
            let mut parts: Vec<&str> = if path.is_empty() {
                base.to_vec()
            } else {
                Vec::new()
            };
            if !path.is_empty() {
                parts.extend(base);
                for p in path.split('/') {
                    match p {
                        "" | "." => {}
                        ".." => {
                            parts.pop();
                        }
                        p => parts.push(p),
                    }
                }
            }
            let resolved = if path.is_empty() {
                f.path.clone()
            } else {
                parts.join("/")
            };
            let where_ = format!("{}:{}", f.path, line_of(&f.text, at));
            match by_path.get(resolved.as_str()) {
                Some(page) => {
                    if !anchor.is_empty()
                        && page.path.ends_with(".md")
                        && !anchors(&page.text).contains(anchor)
                    {
                        bad.push(format!("{where_}: {resolved} has no heading #{anchor}"));
                    }
                }
                None if dirs.contains(&resolved) || resolved.is_empty() => {}
                None => {
                    // Binary files (images) are not in `files`; take them from disk.
                    if !repo_root().join(&resolved).exists() {
                        bad.push(format!("{where_}: {target} names no file ({resolved})"));
                    }
                }
            }
        }
    }
    bad
}

fn assert_none(what: &str, bad: &[String]) {
    assert!(bad.is_empty(), "{what}:\n{}", bad.join("\n"));
}

#[test]
fn the_contract_is_cited_from_inside_the_repository() {
    let files = text_files(&repo_root());
    assert!(
        files.iter().any(|f| f.path == CONTRACT),
        "{CONTRACT} is not in the repository"
    );
    assert_none(
        "references outside the repository",
        &outside_references(&files),
    );
}

#[test]
fn every_cited_anchor_is_a_heading_of_the_contract() {
    let files = text_files(&repo_root());
    assert_none("broken anchors", &broken_anchors(&files));
}

#[test]
fn the_vectors_readme_describes_every_vector_file() {
    let root = repo_root();
    let readme = std::fs::read_to_string(root.join(VECTORS_README))
        .unwrap_or_else(|e| panic!("cannot read {VECTORS_README}: {e}"));
    assert_none(
        "vector files and their README",
        &undescribed_vectors(&readme, &vector_folder(&root)),
    );
}

#[test]
fn every_relative_link_of_the_pages_resolves() {
    let files = text_files(&repo_root());
    assert_none("broken links", &broken_links(&files));
}

#[test]
fn a_broken_link_is_caught() {
    let file = |path: &str, text: &str| TextFile {
        path: path.to_string(),
        text: text.to_string(),
    };
    let pages = [
        file(
            "README.md",
            "[a](docs/a.md#two) [b](docs/b.md) `[c](nope.md)`\n",
        ),
        file(
            "docs/a.md",
            "# One\n## Two\n[back](../README.md) [self](#one)\n",
        ),
    ];
    let bad = broken_links(&pages);
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert!(bad[0].contains("docs/b.md"), "{bad:?}");
    let pages = [
        file("README.md", "[a](docs/a.md#three)\n"),
        file("docs/a.md", "# One\n[x](#two)\n```\n[y](z.md)\n```\n"),
    ];
    assert_eq!(broken_links(&pages).len(), 2);
}

#[test]
fn github_anchors_follow_githubs_rules() {
    let page = "# Numerics contract\n## FTZ-RNE\n### recip and rsqrt\n\
                ## All-reduce order v2\n## `div32`: exact\n```text\n# not a heading\n```\n\
                ## Notes\n## Notes\n#no-space\n";
    let want: BTreeSet<String> = [
        "numerics-contract",
        "ftz-rne",
        "recip-and-rsqrt",
        "all-reduce-order-v2",
        "div32-exact",
        "notes",
        "notes-1",
    ]
    .into_iter()
    .map(str::to_string)
    .collect();
    assert_eq!(anchors(page), want);
}

#[test]
fn each_check_catches_a_planted_mistake() {
    let file = |path: &str, text: &str| TextFile {
        path: path.to_string(),
        text: text.to_string(),
    };
    let page = file(
        CONTRACT,
        "# Contract\n## All-reduce\nSee [it](#all-reduce).\n",
    );
    let good = vec![
        file(CONTRACT, &page.text),
        file(
            "src/a.rs",
            &format!("//! As `{CONTRACT}#all-reduce` says.\n"),
        ),
    ];
    assert_none("good files, outside", &outside_references(&good));
    assert_none("good files, anchors", &broken_anchors(&good));

    // (a) a path outside the repository, and the page named without its path.
    for pattern in outside_paths() {
        let planted = [file(CONTRACT, &page.text), file("README.md", &pattern)];
        assert_eq!(outside_references(&planted).len(), 1, "{pattern}");
    }
    let page_name = CONTRACT.rsplit('/').next().expect("a file name");
    let bare = [file("src/b.rs", &format!("// see `{page_name}`\n"))];
    assert_eq!(outside_references(&bare).len(), 1);

    // (b) an anchor the page lacks, cited from a file or from the page itself.
    let cited = [
        file(CONTRACT, &page.text),
        file("src/c.rs", &format!("// {CONTRACT}#all-reduce-v3\n")),
    ];
    assert_eq!(broken_anchors(&cited).len(), 1);
    let inside = [file(CONTRACT, "# Contract\nSee [it](#nowhere).\n")];
    assert_eq!(broken_anchors(&inside).len(), 1);
    assert_eq!(broken_anchors(&[]).len(), 1, "a missing page");

    // (c) a file the README does not name, and a named file that is missing.
    let folder: BTreeSet<String> = ["README.md", "a.tsv", "b_v2.tsv"]
        .into_iter()
        .map(str::to_string)
        .collect();
    assert_none(
        "a complete README",
        &undescribed_vectors("`a.tsv`, `b_v2.tsv`", &folder),
    );
    assert_eq!(
        undescribed_vectors("`a.tsv`, `xb_v2.tsv`", &folder).len(),
        2
    );
    assert_eq!(undescribed_vectors("`a.tsv`", &folder).len(), 1);
}
