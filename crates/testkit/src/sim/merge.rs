//! Three-way merges of git trees, as merging a pull request needs them:
//! the merge base of two commits, the merged tree or the paths that
//! conflict, and the size of a change (commits, files, lines).
//!
//! The merge works path by path over the flattened trees (every entry that
//! is not a tree, with its mode and object id). A path takes the side that
//! changed it since the merge base; when both sides changed it to
//! different results (add/add, modify/modify, modify/delete), it
//! conflicts. No content-level merge is attempted, so two edits to
//! different lines of one file conflict too.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use super::git::{self, Change, ObjectKind, ObjectStore};

/// A path's entry in a flattened tree: (raw git mode, object id).
pub type FlatEntry = (String, String);

/// Every commit reachable from `id` through parents, `id` included.
pub fn ancestors(store: &ObjectStore, id: &str) -> HashSet<String> {
    let mut seen = HashSet::new();
    let mut stack = vec![id.to_owned()];
    while let Some(c) = stack.pop() {
        if !seen.insert(c.clone()) {
            continue;
        }
        if let Some(commit) = store.commit(&c) {
            stack.extend(commit.parents.iter().cloned());
        }
    }
    seen
}

/// The best common ancestor of two commits, as `git merge-base` picks it:
/// a common ancestor that is not an ancestor of another common ancestor.
/// When several qualify (criss-cross histories), the one with the latest
/// committer time wins (ties by id). `None` for unrelated histories.
pub fn merge_base(store: &ObjectStore, a: &str, b: &str) -> Option<String> {
    let from_a = ancestors(store, a);
    let common: BTreeSet<String> = ancestors(store, b)
        .into_iter()
        .filter(|c| from_a.contains(c))
        .collect();
    let mut dominated = HashSet::new();
    for c in &common {
        let mut stack: Vec<String> = store
            .commit(c)
            .map(|x| x.parents.clone())
            .unwrap_or_default();
        while let Some(p) = stack.pop() {
            if dominated.insert(p.clone()) {
                if let Some(x) = store.commit(&p) {
                    stack.extend(x.parents.iter().cloned());
                }
            }
        }
    }
    common
        .into_iter()
        .filter(|c| !dominated.contains(c))
        .max_by_key(|c| (store.commit(c).map_or(0, |x| x.committer.time), c.clone()))
}

/// Every entry of a tree that is not itself a tree, by full path.
pub fn flatten(store: &ObjectStore, tree: &str) -> BTreeMap<String, FlatEntry> {
    store
        .walk(tree)
        .into_iter()
        .filter(|(_, e)| e.kind() != ObjectKind::Tree)
        .map(|(p, e)| (p, (e.mode, e.sha)))
        .collect()
}

fn tree_of(store: &ObjectStore, commit: &str) -> Option<String> {
    store.commit(commit).map(|c| c.tree.clone())
}

/// Merges `theirs` into `ours` over the common `base` tree (`None`: the
/// empty tree). Returns the merged tree's id (written to the store), or
/// the conflicting paths, sorted.
pub fn merge_trees(
    store: &mut ObjectStore,
    base: Option<&str>,
    ours: &str,
    theirs: &str,
) -> Result<String, Vec<String>> {
    let b = base.map(|t| flatten(store, t)).unwrap_or_default();
    let o = flatten(store, ours);
    let t = flatten(store, theirs);
    let paths: BTreeSet<&String> = b.keys().chain(o.keys()).chain(t.keys()).collect();
    let mut conflicts = Vec::new();
    let mut changes = Vec::new();
    for path in paths {
        let (bv, ov, tv) = (b.get(path), o.get(path), t.get(path));
        let pick = if ov == tv || tv == bv {
            ov
        } else if ov == bv {
            tv
        } else {
            conflicts.push(path.clone());
            continue;
        };
        if let Some((mode, sha)) = pick {
            changes.push((
                path.clone(),
                Change::Set {
                    mode: mode.clone(),
                    sha: sha.clone(),
                },
            ));
        }
    }
    if !conflicts.is_empty() {
        return Err(conflicts);
    }
    git::build_tree(store, None, &changes).map_err(|e| match e {
        git::TreeError::PathConflict(p)
        | git::TreeError::BadPath(p)
        | git::TreeError::BadBase(p) => {
            vec![p]
        }
    })
}

/// Merges commit `theirs` into commit `ours` over their merge base.
/// Returns the merged tree, or the conflicting paths.
pub fn merge_commits(
    store: &mut ObjectStore,
    ours: &str,
    theirs: &str,
) -> Result<String, Vec<String>> {
    let base = merge_base(store, ours, theirs).and_then(|c| tree_of(store, &c));
    let o = tree_of(store, ours).ok_or_else(|| vec![ours.to_owned()])?;
    let t = tree_of(store, theirs).ok_or_else(|| vec![theirs.to_owned()])?;
    merge_trees(store, base.as_deref(), &o, &t)
}

/// The size of what `head` brings to `base`, as a pull request reports
/// it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DiffStats {
    /// Commits reachable from the head and not from the base.
    pub commits: usize,
    /// Paths that differ between the merge base and the head.
    pub changed_files: usize,
    /// Lines in the head's version of a changed file and not in the merge
    /// base's (counted as a multiset of lines, not by a real diff).
    pub additions: usize,
    /// Lines in the merge base's version and not in the head's.
    pub deletions: usize,
}

fn lines(store: &ObjectStore, entry: Option<&FlatEntry>) -> Vec<Vec<u8>> {
    entry
        .and_then(|(_, sha)| store.blob(sha))
        .map(|b| {
            b.split(|c| *c == b'\n')
                .filter(|l| !l.is_empty())
                .map(<[u8]>::to_vec)
                .collect()
        })
        .unwrap_or_default()
}

/// [`DiffStats`] of the commits `base` (the base branch's tip) and `head`.
pub fn diff_stats(store: &ObjectStore, base: &str, head: &str) -> DiffStats {
    let in_base = ancestors(store, base);
    let commits = ancestors(store, head)
        .iter()
        .filter(|c| !in_base.contains(*c))
        .count();
    let from = merge_base(store, base, head)
        .and_then(|c| tree_of(store, &c))
        .map(|t| flatten(store, &t))
        .unwrap_or_default();
    let to = tree_of(store, head)
        .map(|t| flatten(store, &t))
        .unwrap_or_default();
    let mut stats = DiffStats {
        commits,
        ..DiffStats::default()
    };
    let paths: BTreeSet<&String> = from.keys().chain(to.keys()).collect();
    for path in paths {
        let (old, new) = (from.get(path), to.get(path));
        if old == new {
            continue;
        }
        stats.changed_files += 1;
        let mut count: HashMap<Vec<u8>, i64> = HashMap::new();
        for l in lines(store, old) {
            *count.entry(l).or_default() -= 1;
        }
        for l in lines(store, new) {
            *count.entry(l).or_default() += 1;
        }
        for n in count.values() {
            let n_abs = usize::try_from(n.unsigned_abs()).unwrap_or(usize::MAX);
            if *n > 0 {
                stats.additions += n_abs;
            } else {
                stats.deletions += n_abs;
            }
        }
    }
    stats
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::git::{Commit, Object, Signature};

    fn commit(store: &mut ObjectStore, parents: &[&str], files: &[(&str, &str)], t: i64) -> String {
        let changes: Vec<(String, Change)> = files
            .iter()
            .map(|(p, c)| {
                let sha = store.insert_blob(c.as_bytes().to_vec());
                (
                    (*p).to_owned(),
                    Change::Set {
                        mode: "100644".into(),
                        sha,
                    },
                )
            })
            .collect();
        let base = parents
            .first()
            .and_then(|p| store.commit(p))
            .map(|c| c.tree.clone());
        let tree = git::build_tree(store, base.as_deref(), &changes).expect("tree");
        let sig = Signature {
            name: "n".into(),
            email: "e".into(),
            time: t,
            offset_minutes: 0,
        };
        store.insert(Object::Commit(Commit {
            tree,
            parents: parents.iter().map(|p| (*p).to_owned()).collect(),
            author: sig.clone(),
            committer: sig,
            message: format!("{t}\n"),
        }))
    }

    #[test]
    fn disjoint_changes_merge_and_overlapping_ones_conflict() {
        let mut s = ObjectStore::default();
        let root = commit(&mut s, &[], &[("README.md", "# r\n")], 1);
        let ours = commit(&mut s, &[&root], &[("a.txt", "a\n")], 2);
        let theirs = commit(&mut s, &[&root], &[("b.txt", "b\n")], 3);
        assert_eq!(merge_base(&s, &ours, &theirs), Some(root.clone()));
        let tree = merge_commits(&mut s, &ours, &theirs).expect("clean");
        let paths: Vec<String> = flatten(&s, &tree).into_keys().collect();
        assert_eq!(paths, ["README.md", "a.txt", "b.txt"]);

        let same = commit(&mut s, &[&root], &[("a.txt", "a\n")], 4);
        assert!(merge_commits(&mut s, &ours, &same).is_ok(), "same content");
        let other = commit(&mut s, &[&root], &[("a.txt", "other\n")], 5);
        assert_eq!(
            merge_commits(&mut s, &ours, &other),
            Err(vec!["a.txt".to_owned()])
        );
        let unrelated = commit(&mut s, &[], &[("x", "x\n")], 6);
        assert_eq!(merge_base(&s, &ours, &unrelated), None);
    }

    #[test]
    fn the_base_is_the_nearest_common_ancestor() {
        let mut s = ObjectStore::default();
        let root = commit(&mut s, &[], &[("f", "1\n")], 1);
        let mid = commit(&mut s, &[&root], &[("f", "2\n")], 2);
        let a = commit(&mut s, &[&mid], &[("g", "a\n")], 3);
        let b = commit(&mut s, &[&mid], &[("f", "3\n")], 4);
        assert_eq!(merge_base(&s, &a, &b), Some(mid.clone()));
        let stats = diff_stats(&s, &a, &b);
        assert_eq!(
            stats,
            DiffStats {
                commits: 1,
                changed_files: 1,
                additions: 1,
                deletions: 1
            }
        );
    }
}
