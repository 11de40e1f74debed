//! The hidden markers an issue carries: writing them, and reading an
//! issue's body and comments back into an [`ActualIssue`].
//!
//! A marker is read only where benchops writes it, in the exact form it
//! writes it, one per line: a body's drift and state markers from its
//! leading block, its evidence markers from its trailing block, and a
//! comment's markers from its leading block. Anything else, however much it
//! looks like a marker, is text.
//!
//! A drift key's marker form ([`DriftKey::marker_value`]) and its strict
//! parser live here too.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use crate::digest::Sha256Digest;
use crate::names::{CaseId, NameError};

use super::{DriftKey, IssueState};

/// A `key=` marker value that is not `<case>/<encoded metric>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyParseError {
    /// No `/` between case and metric.
    #[error("drift key {0:?} has no `/` between case and metric")]
    NoSeparator(String),
    /// The metric part is empty.
    #[error("drift key {0:?} has an empty metric")]
    EmptyMetric(String),
    /// A `%` not followed by two hex digits, or a byte that must be escaped.
    #[error("drift key {0:?} has a bad escape in its metric")]
    BadEscape(String),
    /// The decoded metric is not UTF-8.
    #[error("drift key {0:?} has a metric that is not UTF-8")]
    NotUtf8(String),
    /// The case part is not a valid case id.
    #[error("drift key has an invalid case")]
    Case(#[from] NameError),
}

impl DriftKey {
    /// The marker form: `<case>/<metric>`, the metric percent-encoded outside
    /// `[A-Za-z0-9._-]` (so `wall_s` stays `wall_s`, and the last `/`
    /// always separates the two).
    pub fn marker_value(&self) -> String {
        let mut s = format!("{}/", self.case);
        for b in self.metric.bytes() {
            if b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-') {
                s.push(char::from(b));
            } else {
                let _ = write!(s, "%{b:02X}");
            }
        }
        s
    }

    /// Parses [`marker_value`](Self::marker_value) strictly.
    pub fn parse_marker_value(s: &str) -> Result<Self, KeyParseError> {
        let (case, enc) = s
            .rsplit_once('/')
            .ok_or_else(|| KeyParseError::NoSeparator(s.to_owned()))?;
        if enc.is_empty() {
            return Err(KeyParseError::EmptyMetric(s.to_owned()));
        }
        let bad = || KeyParseError::BadEscape(s.to_owned());
        let mut bytes = Vec::with_capacity(enc.len());
        let raw = enc.as_bytes();
        let mut i = 0;
        while i < raw.len() {
            let b = raw[i];
            if b == b'%' {
                let hex = enc.get(i + 1..i + 3).ok_or_else(bad)?;
                if !hex.bytes().all(|c| matches!(c, b'0'..=b'9' | b'A'..=b'F')) {
                    return Err(bad());
                }
                bytes.push(u8::from_str_radix(hex, 16).map_err(|_| bad())?);
                i += 3;
            } else if b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-') {
                bytes.push(b);
                i += 1;
            } else {
                return Err(bad());
            }
        }
        let metric = String::from_utf8(bytes).map_err(|_| KeyParseError::NotUtf8(s.to_owned()))?;
        Ok(Self::new(CaseId::new(case)?, metric))
    }
}

/// The hidden body marker naming the key.
pub fn drift_marker(key: &DriftKey) -> String {
    format!("<!-- benchops:drift key={} -->", key.marker_value())
}

/// The hidden marker that records one announced evidence record.
pub fn evidence_marker(record: &Sha256Digest) -> String {
    format!("<!-- benchops:evidence record={record} -->")
}

/// The hidden marker of the closing comment for an epoch.
pub fn closed_marker(epoch: &Sha256Digest) -> String {
    format!("<!-- benchops:closed epoch={epoch} -->")
}

/// The hidden body marker recording the state benchops last set.
pub fn state_marker(m: &StateMarker) -> String {
    let state = match m.state {
        IssueState::Open => "open",
        IssueState::Closed => "closed",
    };
    format!("<!-- benchops:state {state} epoch={} -->", m.epoch)
}

/// A marker as read from one line.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Marker {
    /// `benchops:drift`; `None` when the key does not parse.
    Drift(Option<DriftKey>),
    /// `benchops:state`.
    State(StateMarker),
    /// `benchops:evidence`.
    Evidence(Sha256Digest),
    /// `benchops:closed`.
    Closed(Sha256Digest),
}

/// A line with the whitespace that editors and the platform leave around it
/// removed, so that a body saved with CRLF line endings, trailing spaces or
/// tabs keeps its markers: any spaces, tabs and carriage returns at the end,
/// and up to three spaces at the start. Four leading spaces or a leading tab
/// make the line an indented code block in Markdown, shown as text, so such
/// a line keeps its indent and is never a (hidden) marker.
pub fn marker_text(line: &str) -> &str {
    let line = line.trim_end_matches([' ', '\t', '\r']);
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent <= 3 { &line[indent..] } else { line }
}

/// The marker a line is, if it is exactly one that benchops writes: the
/// whole line (whitespace around it aside, see [`marker_text`]) is the
/// marker, in the very form [`drift_marker`], [`state_marker`],
/// [`evidence_marker`] or [`closed_marker`] writes it. A drift marker whose
/// key does not parse is still a drift marker (of no key).
fn marker_line(line: &str) -> Option<Marker> {
    let line = marker_text(line);
    let inner = line.strip_prefix("<!-- benchops:")?.strip_suffix(" -->")?;
    let (kind, rest) = inner.split_once(' ')?;
    let digest = |name: &str| -> Option<Sha256Digest> {
        rest.strip_prefix(name)?.strip_prefix('=')?.parse().ok()
    };
    let m = match kind {
        "drift" => {
            let v = rest.strip_prefix("key=")?;
            if v.is_empty() || v.contains(char::is_whitespace) {
                return None;
            }
            Marker::Drift(DriftKey::parse_marker_value(v).ok())
        }
        "state" => {
            let (state, epoch) = rest.split_once(' ')?;
            let state = match state {
                "open" => IssueState::Open,
                "closed" => IssueState::Closed,
                _ => return None,
            };
            let epoch = epoch.strip_prefix("epoch=")?.parse().ok()?;
            Marker::State(StateMarker { state, epoch })
        }
        "evidence" => Marker::Evidence(digest("record")?),
        "closed" => Marker::Closed(digest("epoch")?),
        _ => return None,
    };
    let exact = match &m {
        Marker::Drift(Some(k)) => drift_marker(k) == line,
        Marker::Drift(None) => true,
        Marker::State(s) => state_marker(s) == line,
        Marker::Evidence(d) => evidence_marker(d) == line,
        Marker::Closed(d) => closed_marker(d) == line,
    };
    exact.then_some(m)
}

/// The markers of the leading block of `text`: its first lines, as long as
/// each is a marker line. This is where benchops writes a body's drift and
/// state markers and a comment's marker.
fn leading_markers(text: &str) -> impl Iterator<Item = Marker> + '_ {
    text.lines().map_while(marker_line)
}

/// The markers of the trailing block of `text`: its last lines, blank ones
/// skipped, as long as each is a marker line. This is where benchops writes
/// a body's evidence markers.
fn trailing_markers(text: &str) -> impl Iterator<Item = Marker> + '_ {
    text.lines()
        .rev()
        .filter(|l| !l.trim().is_empty())
        .map_while(marker_line)
}

/// The key named by the first line of `text` that is exactly a drift
/// marker, wherever the line is: what a marker copied into someone else's
/// issue names, to tell a person about it. The reconcile never uses it;
/// [`ActualIssue::from_body`] reads the key from the leading block only.
pub fn quoted_drift_key(text: &str) -> Option<DriftKey> {
    text.lines().find_map(|l| match marker_line(l) {
        Some(Marker::Drift(k)) => k,
        _ => None,
    })
}

/// Who closed a closed issue, as read from its state marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Closer {
    /// The body's state marker says benchops closed it.
    Benchops,
    /// Anyone else (the marker says open, or there is none).
    Human,
}

/// The state benchops last set on an issue, and for which epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateMarker {
    /// The state benchops set.
    pub state: IssueState,
    /// The key's latest evidence record at that moment.
    pub epoch: Sha256Digest,
}

/// An issue as it exists (on GitHub or in the local ledger), with what its
/// markers say. Build it with [`ActualIssue::from_body`] and
/// [`ActualIssue::with_comments`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActualIssue {
    /// The issue number.
    pub number: u64,
    /// Its title.
    pub title: String,
    /// Its body.
    pub body: String,
    /// Open or closed.
    pub state: IssueState,
    /// The platform's state reason (`completed`, `not_planned`, ...), if any.
    pub state_reason: Option<String>,
    /// Its label names.
    pub labels: Vec<String>,
    /// The key from the body's drift marker (`None`: not a drift issue, or a
    /// marker that does not parse).
    pub key: Option<DriftKey>,
    /// The body's state marker.
    pub state_marker: Option<StateMarker>,
    /// Evidence records marked in the body (announced by the opening).
    pub body_evidence: BTreeSet<Sha256Digest>,
    /// Evidence records marked in comments.
    pub commented_evidence: BTreeSet<Sha256Digest>,
    /// Epochs that have a closing comment.
    pub closing_comments: BTreeSet<Sha256Digest>,
    /// The comments read, by id, with the markers each carries.
    pub comments: Vec<IssueComment>,
}

/// One comment benchops wrote, as read back: its id and the markers in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssueComment {
    /// The platform's comment id (ascending in creation order).
    pub id: u64,
    /// The markers it carries, in text order.
    pub markers: Vec<CommentMarker>,
}

impl ActualIssue {
    /// Reads an issue's body markers. Comments come with
    /// [`with_comments`](Self::with_comments).
    pub fn from_body(
        number: u64,
        title: impl Into<String>,
        body: impl Into<String>,
        state: IssueState,
        state_reason: Option<String>,
        labels: Vec<String>,
    ) -> Self {
        let body = body.into();
        let mut key = None;
        let mut marker = None;
        for m in leading_markers(&body) {
            match m {
                Marker::Drift(k) if key.is_none() => key = Some(k),
                Marker::State(s) if marker.is_none() => marker = Some(s),
                _ => {}
            }
        }
        let key = key.flatten();
        let body_evidence: BTreeSet<Sha256Digest> = trailing_markers(&body)
            .filter_map(|m| match m {
                Marker::Evidence(d) => Some(d),
                _ => None,
            })
            .collect();
        Self {
            number,
            title: title.into(),
            body,
            state,
            state_reason,
            labels,
            key,
            state_marker: marker,
            body_evidence,
            commented_evidence: BTreeSet::new(),
            closing_comments: BTreeSet::new(),
            comments: Vec::new(),
        }
    }

    /// Adds what the issue's comments mark (evidence and closing comments),
    /// each comment given as its id and its text.
    #[must_use]
    pub fn with_comments<I, S>(mut self, comments: I) -> Self
    where
        I: IntoIterator<Item = (u64, S)>,
        S: AsRef<str>,
    {
        for (id, c) in comments {
            let mut found = Vec::new();
            for m in leading_markers(c.as_ref()) {
                match m {
                    Marker::Evidence(d) => {
                        self.commented_evidence.insert(d);
                        found.push(CommentMarker::Evidence { record: d });
                    }
                    Marker::Closed(d) => {
                        self.closing_comments.insert(d);
                        found.push(CommentMarker::Closed { epoch: d });
                    }
                    _ => {}
                }
            }
            self.comments.push(IssueComment { id, markers: found });
        }
        self
    }

    /// Comments that repeat what earlier comments already mark: walking the
    /// comments by ascending id, a comment with at least one marker, all of
    /// which an earlier kept comment carries. The earliest of each marker is
    /// kept, and a comment is never a duplicate while it carries a marker
    /// nothing earlier does. Ascending ids, each once.
    pub fn duplicate_comments(&self) -> Vec<u64> {
        let mut by_id: Vec<&IssueComment> = self.comments.iter().collect();
        by_id.sort_by_key(|c| c.id);
        by_id.dedup_by_key(|c| c.id);
        let mut seen: BTreeSet<CommentMarker> = BTreeSet::new();
        let mut out = Vec::new();
        for c in by_id {
            if c.markers.is_empty() {
                continue;
            }
            if c.markers.iter().all(|m| seen.contains(m)) {
                out.push(c.id);
            } else {
                seen.extend(c.markers.iter().copied());
            }
        }
        out
    }

    /// Who closed it; `None` while open.
    pub fn closed_by(&self) -> Option<Closer> {
        match (self.state, self.state_marker) {
            (IssueState::Open, _) => None,
            (
                IssueState::Closed,
                Some(StateMarker {
                    state: IssueState::Closed,
                    ..
                }),
            ) if self.reason_allows_benchops_close() => Some(Closer::Benchops),
            (IssueState::Closed, _) => Some(Closer::Human),
        }
    }

    /// Whether the platform's state reason is one benchops closes with
    /// (`completed`, `duplicate`) or unknown. benchops never closes an issue
    /// as `not_planned`, so an issue closed that way was closed by a person,
    /// whatever the body's state marker still says.
    pub fn reason_allows_benchops_close(&self) -> bool {
        self.state_reason
            .as_deref()
            .is_none_or(|r| r == "completed" || r == "duplicate")
    }

    /// Whether an evidence record is announced (marked in body or comments).
    pub fn announced(&self, record: &Sha256Digest) -> bool {
        self.body_evidence.contains(record) || self.commented_evidence.contains(record)
    }

    pub(super) fn has_label(&self, name: &str) -> bool {
        self.labels.iter().any(|l| l == name)
    }
}

/// What a comment's marker records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CommentMarker {
    /// Announces one evidence record.
    Evidence {
        /// The record.
        record: Sha256Digest,
    },
    /// The closing comment for an epoch.
    Closed {
        /// The latest evidence at closing.
        epoch: Sha256Digest,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(metric: &str) -> DriftKey {
        DriftKey::new(CaseId::new("parse/size=10").expect("case"), metric)
    }

    #[test]
    fn key_marker_round_trips_awkward_metrics() {
        for m in [
            "wall_s",
            "a/b",
            "p99 latency",
            "x-->y",
            "µs",
            "100%",
            "a=b c",
        ] {
            let k = key(m);
            let v = k.marker_value();
            assert!(!v.contains(' ') && !v.contains("-->"), "{v}");
            assert_eq!(DriftKey::parse_marker_value(&v), Ok(k.clone()), "{m}");
            let issue =
                ActualIssue::from_body(1, "t", drift_marker(&k), IssueState::Open, None, vec![]);
            assert_eq!(issue.key, Some(k));
        }
        assert_eq!(key("wall_s").marker_value(), "parse/size=10/wall_s");
    }

    #[test]
    fn key_marker_rejects_garbage() {
        assert!(matches!(
            DriftKey::parse_marker_value("nocase"),
            Err(KeyParseError::NoSeparator(_))
        ));
        assert!(matches!(
            DriftKey::parse_marker_value("a/"),
            Err(KeyParseError::EmptyMetric(_))
        ));
        assert!(matches!(
            DriftKey::parse_marker_value("a/%zz"),
            Err(KeyParseError::BadEscape(_))
        ));
        assert!(matches!(
            DriftKey::parse_marker_value("a/%2"),
            Err(KeyParseError::BadEscape(_))
        ));
        assert!(matches!(
            DriftKey::parse_marker_value("a/%FF"),
            Err(KeyParseError::NotUtf8(_))
        ));
        assert!(matches!(
            DriftKey::parse_marker_value("a b/m"),
            Err(KeyParseError::Case(_))
        ));
    }

    #[test]
    fn markers_parse_from_body_and_comments() {
        let d1 = Sha256Digest::of(b"1");
        let d2 = Sha256Digest::of(b"2");
        let body = format!(
            "{}\n{}\ntext\n{}",
            drift_marker(&key("wall_s")),
            state_marker(&StateMarker {
                state: IssueState::Closed,
                epoch: d2
            }),
            evidence_marker(&d1)
        );
        let issue = ActualIssue::from_body(7, "t", body, IssueState::Closed, None, vec![])
            .with_comments([
                (1, format!("{}\nhello", evidence_marker(&d2))),
                (2, closed_marker(&d2)),
                (
                    3,
                    "<!-- benchops:evidence record=sha256:nothex -->".to_owned(),
                ),
            ]);
        assert_eq!(issue.key, Some(key("wall_s")));
        assert_eq!(
            issue.state_marker,
            Some(StateMarker {
                state: IssueState::Closed,
                epoch: d2
            })
        );
        assert_eq!(issue.closed_by(), Some(Closer::Benchops));
        assert!(issue.announced(&d1) && issue.announced(&d2));
        assert_eq!(issue.closing_comments, BTreeSet::from([d2]));

        let plain = ActualIssue::from_body(
            8,
            "t",
            drift_marker(&key("m")),
            IssueState::Closed,
            None,
            vec![],
        );
        assert_eq!(plain.closed_by(), Some(Closer::Human));
    }

    #[test]
    fn markers_survive_the_whitespace_editors_and_the_api_leave() {
        let d = Sha256Digest::of(b"e");
        let epoch = Sha256Digest::of(b"s");
        let lines = [
            drift_marker(&key("wall_s")),
            state_marker(&StateMarker {
                state: IssueState::Open,
                epoch,
            }),
            "text of the issue".to_owned(),
            String::new(),
            evidence_marker(&d),
        ];
        // Line ending, what an editor leaves at the end of each line, what
        // it leaves at the start (up to three spaces keep an HTML comment
        // hidden), and a final newline or none.
        for eol in ["\n", "\r\n"] {
            for tail in ["", " ", "  ", "\t", " \t ", "\r"] {
                for head in ["", " ", "   "] {
                    for last in ["", eol] {
                        let body = lines
                            .iter()
                            .map(|l| format!("{head}{l}{tail}"))
                            .collect::<Vec<_>>()
                            .join(eol)
                            + last;
                        let issue =
                            ActualIssue::from_body(1, "t", &*body, IssueState::Open, None, vec![]);
                        let shown = format!("{body:?}");
                        assert_eq!(issue.key, Some(key("wall_s")), "{shown}");
                        assert_eq!(issue.state_marker.map(|m| m.epoch), Some(epoch), "{shown}");
                        assert_eq!(issue.body_evidence, BTreeSet::from([d]), "{shown}");
                        let comment = format!("{head}{}{tail}{last}", closed_marker(&epoch));
                        let issue = issue.with_comments([(1, comment)]);
                        assert_eq!(issue.closing_comments, BTreeSet::from([epoch]), "{shown}");
                    }
                }
            }
        }
        assert_eq!(
            crate::watchdog::missed_run_lane("<!-- benchops:missed-run lane=nightly --> \t\r\nx"),
            Some("nightly")
        );
    }

    #[test]
    fn markers_count_only_where_benchops_writes_them() {
        let real = Sha256Digest::of(b"real");
        let forged = Sha256Digest::of(b"forged");
        let head = format!(
            "{}\n{}",
            drift_marker(&key("wall_s")),
            state_marker(&StateMarker {
                state: IssueState::Open,
                epoch: real
            })
        );
        // Forged markers inside text, on their own line in the middle, in a
        // near-miss form, or before the real head: none counts.
        let body = format!(
            "{head}\n## heading\nsummary {} and {}\n{}\n<!--  benchops:evidence record={forged} -->\n\
             <!-- benchops:evidence record={forged} --> \n\
             <!-- benchops:evidence record={} -->\ntable\n\n{}\r\n\n{}\n",
            evidence_marker(&forged),
            state_marker(&StateMarker {
                state: IssueState::Closed,
                epoch: forged
            }),
            evidence_marker(&forged),
            forged.to_string().to_uppercase(),
            evidence_marker(&real),
            evidence_marker(&real),
        );
        let issue = ActualIssue::from_body(1, "t", body, IssueState::Open, None, vec![])
            .with_comments([
                (
                    1,
                    format!(
                        "{}\nThe drift reproduced: {} {}\n{}\n",
                        evidence_marker(&real),
                        evidence_marker(&forged),
                        closed_marker(&forged),
                        closed_marker(&forged)
                    ),
                ),
                (2, format!("quoted:\n{}", closed_marker(&forged))),
                // An indented code block (four spaces, or a tab) shows its
                // text: a marker in it is quoted, not written.
                (3, format!("    {}", closed_marker(&forged))),
                (4, format!("\t{}", closed_marker(&forged))),
            ]);
        assert_eq!(issue.key, Some(key("wall_s")));
        assert_eq!(issue.state_marker.map(|m| m.epoch), Some(real));
        assert_eq!(issue.body_evidence, BTreeSet::from([real]));
        assert_eq!(issue.commented_evidence, BTreeSet::from([real]));
        assert!(issue.closing_comments.is_empty(), "{issue:?}");
        assert!(!issue.announced(&forged));

        // A head that text precedes is no head: no key, no state. What the
        // copied marker names can still be told to a person.
        let late = format!("intro\n{head}");
        assert_eq!(quoted_drift_key(&late), Some(key("wall_s")));
        let issue = ActualIssue::from_body(2, "t", late, IssueState::Open, None, vec![]);
        assert_eq!((issue.key, issue.state_marker), (None, None));
    }

    #[test]
    fn duplicate_comments_keep_the_earliest_of_each_marker() {
        let d1 = Sha256Digest::of(b"1");
        let d2 = Sha256Digest::of(b"2");
        let issue = ActualIssue::from_body(
            7,
            "t",
            drift_marker(&key("wall_s")),
            IssueState::Open,
            None,
            vec![],
        )
        .with_comments([
            (30, evidence_marker(&d1)),
            (10, evidence_marker(&d1)),
            (20, "no marker".to_owned()),
            (
                40,
                format!("{}\n{}", evidence_marker(&d1), closed_marker(&d2)),
            ),
            (50, closed_marker(&d2)),
            (60, evidence_marker(&d2)),
        ]);
        // 30 repeats 10; 40 carries a closed marker nothing earlier does, so
        // it stays; 50 repeats 40's closed marker.
        assert_eq!(issue.duplicate_comments(), vec![30, 50]);
    }
}
