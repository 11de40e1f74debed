//! Git objects with their real ids.
//!
//! A blob, tree or commit id is the SHA-1 of `"<kind> <len>\0" + body`,
//! exactly as git computes it, so ids match `git hash-object`,
//! `git mktree` and `git commit-tree` (pinned by `tests/git_ids.rs`).

use std::collections::{BTreeMap, HashMap};

use sha1::{Digest, Sha1};

/// The id of the empty tree (`git hash-object -t tree /dev/null`).
pub const EMPTY_TREE: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";

/// The three object kinds the simulator stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjectKind {
    /// File content.
    Blob,
    /// A directory listing.
    Tree,
    /// A commit (also used for submodule entries in trees).
    Commit,
}

impl ObjectKind {
    /// The name git uses in object headers and the API uses in `type`.
    pub fn as_str(self) -> &'static str {
        match self {
            ObjectKind::Blob => "blob",
            ObjectKind::Tree => "tree",
            ObjectKind::Commit => "commit",
        }
    }
}

/// One entry of a tree, as git stores it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeEntry {
    /// Git's raw mode: `100644`, `100755`, `120000`, `40000` or `160000`.
    pub mode: String,
    /// The file or directory name (one path segment).
    pub name: String,
    /// The referenced object's id (40 lowercase hex).
    pub sha: String,
}

impl TreeEntry {
    /// The kind of object the entry points to, from its mode.
    pub fn kind(&self) -> ObjectKind {
        match self.mode.as_str() {
            "40000" => ObjectKind::Tree,
            "160000" => ObjectKind::Commit,
            _ => ObjectKind::Blob,
        }
    }

    /// The mode as the REST API shows it (`040000` for trees).
    pub fn api_mode(&self) -> String {
        if self.mode == "40000" {
            "040000".to_owned()
        } else {
            self.mode.clone()
        }
    }
}

/// Author or committer of a commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    /// Name.
    pub name: String,
    /// E-mail address.
    pub email: String,
    /// Seconds since the Unix epoch.
    pub time: i64,
    /// The time zone offset in minutes east of UTC.
    pub offset_minutes: i32,
}

impl Signature {
    fn write(&self, out: &mut Vec<u8>) {
        let sign = if self.offset_minutes < 0 { '-' } else { '+' };
        let abs = self.offset_minutes.unsigned_abs();
        out.extend_from_slice(
            format!(
                "{} <{}> {} {}{:02}{:02}",
                self.name,
                self.email,
                self.time,
                sign,
                abs / 60,
                abs % 60
            )
            .as_bytes(),
        );
    }
}

/// A commit object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commit {
    /// The root tree's id.
    pub tree: String,
    /// Parent commit ids, in order.
    pub parents: Vec<String>,
    /// Author.
    pub author: Signature,
    /// Committer.
    pub committer: Signature,
    /// The message, byte for byte (git adds nothing).
    pub message: String,
}

/// A stored object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Object {
    /// File content.
    Blob(Vec<u8>),
    /// Entries in git order.
    Tree(Vec<TreeEntry>),
    /// A commit.
    Commit(Commit),
}

impl Object {
    /// The object's kind.
    pub fn kind(&self) -> ObjectKind {
        match self {
            Object::Blob(_) => ObjectKind::Blob,
            Object::Tree(_) => ObjectKind::Tree,
            Object::Commit(_) => ObjectKind::Commit,
        }
    }

    /// The object's body in git's serialization (without the header).
    pub fn body(&self) -> Vec<u8> {
        match self {
            Object::Blob(bytes) => bytes.clone(),
            Object::Tree(entries) => {
                let mut out = Vec::new();
                for e in entries {
                    out.extend_from_slice(e.mode.as_bytes());
                    out.push(b' ');
                    out.extend_from_slice(e.name.as_bytes());
                    out.push(0);
                    out.extend_from_slice(&hex_to_bytes(&e.sha));
                }
                out
            }
            Object::Commit(c) => {
                let mut out = Vec::new();
                out.extend_from_slice(format!("tree {}\n", c.tree).as_bytes());
                for p in &c.parents {
                    out.extend_from_slice(format!("parent {p}\n").as_bytes());
                }
                out.extend_from_slice(b"author ");
                c.author.write(&mut out);
                out.extend_from_slice(b"\ncommitter ");
                c.committer.write(&mut out);
                out.extend_from_slice(b"\n\n");
                out.extend_from_slice(c.message.as_bytes());
                out
            }
        }
    }

    /// The object's git id.
    pub fn id(&self) -> String {
        hash_object(self.kind(), &self.body())
    }
}

/// SHA-1 of `"<kind> <len>\0" + body`, as lowercase hex.
pub fn hash_object(kind: ObjectKind, body: &[u8]) -> String {
    let mut h = Sha1::new();
    h.update(format!("{} {}\0", kind.as_str(), body.len()).as_bytes());
    h.update(body);
    to_hex(&h.finalize())
}

/// Lowercase hex of bytes.
pub fn to_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    s
}

fn hex_to_bytes(hex: &str) -> Vec<u8> {
    hex.as_bytes()
        .chunks(2)
        .map(|pair| {
            let digit = |c: u8| match c {
                b'0'..=b'9' => c - b'0',
                b'a'..=b'f' => c - b'a' + 10,
                b'A'..=b'F' => c - b'A' + 10,
                _ => 0,
            };
            (digit(pair[0]) << 4) | pair.get(1).map_or(0, |&c| digit(c))
        })
        .collect()
}

/// True for a full 40-character hex object id.
pub fn is_sha(s: &str) -> bool {
    s.len() == 40 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Sorts tree entries the way git does: by name, where a tree's name
/// compares as if it ended in `/`.
pub fn sort_entries(entries: &mut [TreeEntry]) {
    fn key(e: &TreeEntry) -> Vec<u8> {
        let mut k = e.name.as_bytes().to_vec();
        if e.kind() == ObjectKind::Tree {
            k.push(b'/');
        }
        k
    }
    entries.sort_by_key(key);
}

/// A repository's object database.
#[derive(Debug, Default, Clone)]
pub struct ObjectStore {
    objects: HashMap<String, Object>,
}

impl ObjectStore {
    /// Stores an object (idempotent) and returns its id.
    pub fn insert(&mut self, object: Object) -> String {
        let id = object.id();
        self.objects.entry(id.clone()).or_insert(object);
        id
    }

    /// Stores a blob.
    pub fn insert_blob(&mut self, bytes: Vec<u8>) -> String {
        self.insert(Object::Blob(bytes))
    }

    /// The object with this id.
    pub fn get(&self, id: &str) -> Option<&Object> {
        self.objects.get(&id.to_ascii_lowercase())
    }

    /// The commit with this id.
    pub fn commit(&self, id: &str) -> Option<&Commit> {
        match self.get(id) {
            Some(Object::Commit(c)) => Some(c),
            _ => None,
        }
    }

    /// The tree entries with this id.
    pub fn tree(&self, id: &str) -> Option<&[TreeEntry]> {
        match self.get(id) {
            Some(Object::Tree(t)) => Some(t),
            _ => None,
        }
    }

    /// The blob bytes with this id.
    pub fn blob(&self, id: &str) -> Option<&[u8]> {
        match self.get(id) {
            Some(Object::Blob(b)) => Some(b),
            _ => None,
        }
    }

    /// True when `ancestor` is `descendant` or reachable from it through
    /// parents.
    pub fn is_ancestor(&self, ancestor: &str, descendant: &str) -> bool {
        let mut stack = vec![descendant.to_owned()];
        let mut seen = std::collections::HashSet::new();
        while let Some(id) = stack.pop() {
            if id == ancestor {
                return true;
            }
            if !seen.insert(id.clone()) {
                continue;
            }
            if let Some(c) = self.commit(&id) {
                stack.extend(c.parents.iter().cloned());
            }
        }
        false
    }

    /// Walks a path (`a/b/c`) from a tree; returns the entry at the end.
    pub fn lookup_path(&self, tree: &str, path: &str) -> Option<TreeEntry> {
        let mut current = TreeEntry {
            mode: "40000".to_owned(),
            name: String::new(),
            sha: tree.to_owned(),
        };
        for segment in path.split('/').filter(|s| !s.is_empty()) {
            let entries = self.tree(&current.sha)?;
            current = entries.iter().find(|e| e.name == segment)?.clone();
        }
        Some(current)
    }

    /// Every entry under a tree, depth first in git order, with full paths
    /// (what `git ls-tree -r -t` lists).
    pub fn walk(&self, tree: &str) -> Vec<(String, TreeEntry)> {
        let mut out = Vec::new();
        self.walk_into(tree, "", &mut out);
        out
    }

    fn walk_into(&self, tree: &str, prefix: &str, out: &mut Vec<(String, TreeEntry)>) {
        for e in self.tree(tree).unwrap_or(&[]) {
            let path = format!("{prefix}{}", e.name);
            out.push((path.clone(), e.clone()));
            if e.kind() == ObjectKind::Tree {
                self.walk_into(&e.sha, &format!("{path}/"), out);
            }
        }
    }
}

/// One change to apply to a tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Point the path at an existing object, with a raw git mode.
    Set {
        /// Raw git mode (`100644`, `40000`, ...).
        mode: String,
        /// Object id.
        sha: String,
    },
    /// Remove the path (no-op when absent).
    Delete,
}

/// Why a tree could not be built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TreeError {
    /// The base tree does not exist.
    BadBase(String),
    /// A path is empty or has an empty, `.` or `..` segment.
    BadPath(String),
    /// A path goes through a file as if it were a directory.
    PathConflict(String),
}

#[derive(Debug, Default)]
struct Node {
    entries: BTreeMap<String, Slot>,
}

#[derive(Debug)]
enum Slot {
    Leaf { mode: String, sha: String },
    Dir(Node),
}

impl Node {
    fn load(store: &ObjectStore, sha: &str) -> Option<Node> {
        let entries = store.tree(sha)?;
        Some(Node {
            entries: entries
                .iter()
                .map(|e| {
                    (
                        e.name.clone(),
                        Slot::Leaf {
                            mode: e.mode.clone(),
                            sha: e.sha.clone(),
                        },
                    )
                })
                .collect(),
        })
    }

    fn apply(
        &mut self,
        store: &ObjectStore,
        segments: &[&str],
        change: &Change,
        full: &str,
    ) -> Result<(), TreeError> {
        let (first, rest) = match segments.split_first() {
            Some(x) => x,
            None => return Err(TreeError::BadPath(full.to_owned())),
        };
        if rest.is_empty() {
            match change {
                Change::Set { mode, sha } => {
                    self.entries.insert(
                        (*first).to_owned(),
                        Slot::Leaf {
                            mode: mode.clone(),
                            sha: sha.clone(),
                        },
                    );
                }
                Change::Delete => {
                    self.entries.remove(*first);
                }
            }
            return Ok(());
        }
        let slot = self
            .entries
            .entry((*first).to_owned())
            .or_insert_with(|| Slot::Dir(Node::default()));
        if let Slot::Leaf { mode, sha } = slot {
            if mode != "40000" {
                if *change == Change::Delete {
                    return Ok(());
                }
                return Err(TreeError::PathConflict(full.to_owned()));
            }
            let node = Node::load(store, sha).unwrap_or_default();
            *slot = Slot::Dir(node);
        }
        match slot {
            Slot::Dir(node) => node.apply(store, rest, change, full),
            Slot::Leaf { .. } => Err(TreeError::PathConflict(full.to_owned())),
        }
    }

    /// Writes the node; `None` when it is empty.
    fn write(self, store: &mut ObjectStore) -> Option<String> {
        let mut entries = Vec::new();
        for (name, slot) in self.entries {
            match slot {
                Slot::Leaf { mode, sha } => entries.push(TreeEntry { mode, name, sha }),
                Slot::Dir(node) => {
                    if let Some(sha) = node.write(store) {
                        entries.push(TreeEntry {
                            mode: "40000".to_owned(),
                            name,
                            sha,
                        });
                    }
                }
            }
        }
        if entries.is_empty() {
            return None;
        }
        sort_entries(&mut entries);
        Some(store.insert(Object::Tree(entries)))
    }
}

/// Applies path changes over an optional base tree, writing every new
/// subtree, and returns the new root tree id. Nested paths create
/// subtrees; subtrees left empty disappear, as in git.
pub fn build_tree(
    store: &mut ObjectStore,
    base: Option<&str>,
    changes: &[(String, Change)],
) -> Result<String, TreeError> {
    let mut root = match base {
        Some(sha) => Node::load(store, sha).ok_or_else(|| TreeError::BadBase(sha.to_owned()))?,
        None => Node::default(),
    };
    for (path, change) in changes {
        let segments: Vec<&str> = path.split('/').collect();
        if segments
            .iter()
            .any(|s| s.is_empty() || *s == "." || *s == ".." || *s == ".git")
        {
            return Err(TreeError::BadPath(path.clone()));
        }
        root.apply(store, &segments, change, path)?;
    }
    Ok(match root.write(store) {
        Some(sha) => sha,
        None => store.insert(Object::Tree(Vec::new())),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blob_and_empty_tree_ids_match_git() {
        // `printf 'hello\n' | git hash-object --stdin`
        assert_eq!(
            hash_object(ObjectKind::Blob, b"hello\n"),
            "ce013625030ba8dba906f756967f9e9ca394464a"
        );
        assert_eq!(Object::Tree(Vec::new()).id(), EMPTY_TREE);
    }

    #[test]
    fn git_sorts_trees_as_if_they_ended_in_a_slash() {
        let mut entries = vec![
            TreeEntry {
                mode: "40000".into(),
                name: "a".into(),
                sha: EMPTY_TREE.into(),
            },
            TreeEntry {
                mode: "100644".into(),
                name: "a.txt".into(),
                sha: EMPTY_TREE.into(),
            },
            TreeEntry {
                mode: "100644".into(),
                name: "a-b".into(),
                sha: EMPTY_TREE.into(),
            },
        ];
        sort_entries(&mut entries);
        let names: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
        // '-' (0x2d) < '.' (0x2e) < '/' (0x2f)
        assert_eq!(names, ["a-b", "a.txt", "a"]);
    }

    #[test]
    fn nested_paths_create_subtrees_and_deletes_prune_them() {
        let mut store = ObjectStore::default();
        let blob = store.insert_blob(b"x".to_vec());
        let set = |sha: &str| Change::Set {
            mode: "100644".into(),
            sha: sha.into(),
        };
        let t1 = build_tree(
            &mut store,
            None,
            &[
                ("results/lane/2026/11/x.json".into(), set(&blob)),
                ("README.md".into(), set(&blob)),
            ],
        )
        .expect("tree builds");
        let paths: Vec<String> = store.walk(&t1).into_iter().map(|(p, _)| p).collect();
        assert_eq!(
            paths,
            [
                "README.md",
                "results",
                "results/lane",
                "results/lane/2026",
                "results/lane/2026/11",
                "results/lane/2026/11/x.json"
            ]
        );
        let t2 = build_tree(
            &mut store,
            Some(&t1),
            &[("results/lane/2026/11/x.json".into(), Change::Delete)],
        )
        .expect("tree builds");
        let paths: Vec<String> = store.walk(&t2).into_iter().map(|(p, _)| p).collect();
        assert_eq!(paths, ["README.md"]);
        assert_eq!(
            build_tree(&mut store, Some(&t1), &[("README.md/x".into(), set(&blob))]),
            Err(TreeError::PathConflict("README.md/x".into()))
        );
        assert!(matches!(
            build_tree(&mut store, None, &[("a//b".into(), set(&blob))]),
            Err(TreeError::BadPath(_))
        ));
    }

    #[test]
    fn ancestry() {
        let mut store = ObjectStore::default();
        let sig = Signature {
            name: "n".into(),
            email: "e".into(),
            time: 0,
            offset_minutes: 0,
        };
        let commit = |parents: Vec<String>| {
            Object::Commit(Commit {
                tree: EMPTY_TREE.into(),
                parents,
                author: sig.clone(),
                committer: sig.clone(),
                message: format!("{}", rand_len()),
            })
        };
        fn rand_len() -> usize {
            use std::sync::atomic::{AtomicUsize, Ordering};
            static N: AtomicUsize = AtomicUsize::new(0);
            N.fetch_add(1, Ordering::Relaxed)
        }
        let a = store.insert(commit(vec![]));
        let b = store.insert(commit(vec![a.clone()]));
        let c = store.insert(commit(vec![a.clone()]));
        assert!(store.is_ancestor(&a, &b));
        assert!(store.is_ancestor(&b, &b));
        assert!(!store.is_ancestor(&b, &c));
    }
}
