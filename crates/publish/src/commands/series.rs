//! `benchops-publish history --lane L`: one lane's series from history
//! (the newest `--limit` records, one `git cat-file --batch` for them all),
//! as a table, CSV or JSON for plotting, and `--svg FILE` drawn by the
//! status page's renderer ([`benchops::chart`]), so the same series gives
//! the same bytes. Reads a local repository only (see [`super::read`] for
//! where it is found); text from records goes through
//! [`benchops::terminal::escape`].

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

use benchops::chart::{self, Chart, TrendPoint, number, with_unit};
use benchops::layout::RecordEntry;
use benchops::record::Direction;
use benchops::terminal::escape;
use benchops::time::order_key;
use benchops::{LaneName, Sha256Digest};
use benchops_history::{HistoryError, LocalHistory};
use serde::Serialize;

use super::read::{ReadError, columns, history_err, lane_arg, open_history};
use super::{CommandError, out};
use crate::cli::Place;
use crate::exit::OK;

/// One point of a series, with the record it comes from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SeriesPoint {
    /// The record's slot.
    pub slot: String,
    /// Its subject commit.
    pub commit: String,
    /// Its digest.
    pub record: Sha256Digest,
    /// The median (`null`: not measured, a gap).
    pub value: Option<f64>,
}

/// One case's metric over a lane's records.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Series {
    /// The case.
    pub case: String,
    /// The metric.
    pub metric: String,
    /// Its unit (the newest record's).
    pub unit: String,
    /// `lower_is_better` or `higher_is_better`.
    pub direction: String,
    /// The median of the lane's baseline record (`null`: no pointer, or
    /// it did not measure the key).
    pub baseline: Option<f64>,
    /// Oldest first.
    pub points: Vec<SeriesPoint>,
}

/// A lane's series (`history --json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LaneHistory {
    /// The lane.
    pub lane: LaneName,
    /// Records read (the newest `--limit`).
    pub records: usize,
    /// The lane's older records not read.
    pub not_read: usize,
    /// The baseline pointer's record, if any.
    pub baseline_record: Option<Sha256Digest>,
    /// Every series that matches, by case and metric.
    pub series: Vec<Series>,
}

impl Series {
    /// The chart of this series (what `--svg` draws).
    pub fn chart<'a>(&'a self, lane: &'a str, points: &'a [TrendPoint]) -> Chart<'a> {
        Chart {
            lane,
            case: &self.case,
            metric: &self.metric,
            unit: &self.unit,
            baseline: self.baseline,
            points,
        }
    }

    /// The points as the chart takes them.
    pub fn trend_points(&self) -> Vec<TrendPoint> {
        self.points
            .iter()
            .map(|p| TrendPoint {
                slot: p.slot.clone(),
                value: p.value,
            })
            .collect()
    }
}

/// Reads a lane's newest `limit` records and its baseline, and builds the
/// series that match `case` and `metric`.
pub fn lane_history(
    h: &LocalHistory,
    lane: &LaneName,
    case: Option<&str>,
    metric: Option<&str>,
    limit: usize,
) -> Result<LaneHistory, ReadError> {
    let tip = h.tip().map_err(history_err(h))?;
    let prefix = format!("results/{lane}/");
    let blobs = match &tip {
        Some(t) => h.files(t, &[prefix.as_str()]).map_err(history_err(h))?,
        None => BTreeMap::new(),
    };
    let mut entries: Vec<(RecordEntry, &str)> = blobs
        .iter()
        .filter_map(|(p, b)| Some((RecordEntry::parse(p).ok()?, b.as_str())))
        .collect();
    if entries.is_empty() {
        let lanes = h
            .latest_per_lane()
            .map_err(history_err(h))?
            .into_keys()
            .map(|l| l.to_string())
            .collect();
        return Err(ReadError::NoRecords {
            lane: lane.clone(),
            repo: h.path().to_path_buf(),
            lanes,
        });
    }
    entries.sort_by(|a, b| (&a.0.slot, &a.0.path).cmp(&(&b.0.slot, &b.0.path)));
    let not_read = entries.len().saturating_sub(limit);
    let entries = entries.split_off(not_read);
    // One `git cat-file --batch` for them all, each verified against the
    // digest in its name while git reads.
    let items: Vec<(&str, Option<&Sha256Digest>)> =
        entries.iter().map(|(e, b)| (*b, Some(&e.digest))).collect();
    let mut records = Vec::with_capacity(entries.len());
    for ((e, _), verdict) in entries
        .iter()
        .zip(h.read_verified(&items).map_err(history_err(h))?)
    {
        let corrupt = |source| {
            history_err(h)(HistoryError::CorruptRecord {
                path: e.path.clone(),
                source,
            })
        };
        let s = verdict.map_err(corrupt)?;
        if !e.places(&s.record().lane, &s.record().slot) {
            return Err(history_err(h)(HistoryError::Misplaced {
                path: e.path.clone(),
                lane: s.record().lane.to_string(),
                slot: s.record().slot.clone(),
            }));
        }
        records.push(s);
    }
    records.sort_by(|a, b| {
        let (ra, rb) = (a.record(), b.record());
        (order_key(&ra.slot), order_key(&ra.finished_at), a.digest()).cmp(&(
            order_key(&rb.slot),
            order_key(&rb.finished_at),
            b.digest(),
        ))
    });
    let pointer = h.baseline(lane).map_err(history_err(h))?;
    let base = match &pointer {
        Some(p) => Some(h.read_record(&p.path).map_err(history_err(h))?),
        None => None,
    };
    let mut keys: BTreeMap<(String, String), (String, Direction)> = BTreeMap::new();
    for s in &records {
        for c in &s.record().cases {
            for m in &c.metrics {
                keys.insert(
                    (c.id.to_string(), m.name.clone()),
                    (m.unit.clone(), m.direction),
                );
            }
        }
    }
    let read = records.len();
    for (flag, want, pick) in [("--case", case, 0usize), ("--metric", metric, 1usize)] {
        let Some(want) = want else { continue };
        let known: BTreeSet<&String> = keys
            .keys()
            .map(|k| if pick == 0 { &k.0 } else { &k.1 })
            .collect();
        if !known.iter().any(|k| k.as_str() == want) {
            return Err(ReadError::NoSuchKey {
                flag,
                value: want.to_owned(),
                lane: lane.clone(),
                read,
                known: known.into_iter().cloned().collect(),
            });
        }
    }
    let mut series = Vec::new();
    for ((c, m), (unit, direction)) in &keys {
        if case.is_some_and(|w| w != c) || metric.is_some_and(|w| w != m) {
            continue;
        }
        series.push(Series {
            case: c.clone(),
            metric: m.clone(),
            unit: unit.clone(),
            direction: match direction {
                Direction::LowerIsBetter => "lower_is_better",
                Direction::HigherIsBetter => "higher_is_better",
            }
            .to_owned(),
            baseline: base.as_ref().and_then(|b| chart::median(b.record(), c, m)),
            points: records
                .iter()
                .map(|s| SeriesPoint {
                    slot: s.record().slot.clone(),
                    commit: s.record().subject.commit.clone(),
                    record: s.digest(),
                    value: chart::median(s.record(), c, m),
                })
                .collect(),
        });
    }
    if series.is_empty() {
        // Both flags name something, but never together.
        return Err(ReadError::NoSuchKey {
            flag: "--metric",
            value: metric.unwrap_or_default().to_owned(),
            lane: lane.clone(),
            read,
            known: keys
                .keys()
                .filter(|k| case.is_none_or(|w| w == k.0))
                .map(|k| k.1.clone())
                .collect(),
        });
    }
    Ok(LaneHistory {
        lane: lane.clone(),
        records: read,
        not_read,
        baseline_record: pointer.map(|p| p.record),
        series,
    })
}

/// One CSV field: quoted when it holds a comma, a quote or a line break.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

/// The CSV of a lane's series: a header, then one row per record and key.
pub fn render_csv(lh: &LaneHistory) -> String {
    let mut s = String::from("lane,case,metric,unit,slot,commit,record,value\n");
    for se in &lh.series {
        for p in &se.points {
            let fields = [
                lh.lane.as_str(),
                &se.case,
                &se.metric,
                &se.unit,
                &p.slot,
                &p.commit,
                &p.record.to_string(),
                &p.value.map(|v| v.to_string()).unwrap_or_default(),
            ];
            let row: Vec<String> = fields.iter().map(|f| csv_field(f)).collect();
            s.push_str(&row.join(","));
            s.push('\n');
        }
    }
    s
}

/// The table of a lane's series, one block per case and metric.
pub fn render_table(lh: &LaneHistory) -> String {
    let mut s = format!(
        "lane {}: {} record(s){}\n",
        lh.lane,
        lh.records,
        if lh.not_read > 0 {
            format!(" (the newest; {} older not read, see --limit)", lh.not_read)
        } else {
            String::new()
        }
    );
    for se in &lh.series {
        let _ = writeln!(
            s,
            "\n{} {} ({}{})",
            escape(&se.case),
            escape(&se.metric),
            se.direction.replace('_', " "),
            se.baseline.map_or_else(String::new, |b| format!(
                ", baseline {}",
                escape(&with_unit(b, &se.unit))
            ))
        );
        let mut rows = vec![vec![
            "slot".to_owned(),
            "commit".to_owned(),
            "record".to_owned(),
            "median".to_owned(),
        ]];
        for p in &se.points {
            rows.push(vec![
                escape(&p.slot),
                escape(p.commit.get(..12).unwrap_or(&p.commit)),
                p.record.hex().get(..12).unwrap_or_default().to_owned(),
                p.value.map_or_else(
                    || "-".to_owned(),
                    |v| escape(format!("{} {}", number(v), se.unit).trim_end()),
                ),
            ]);
        }
        s.push_str(&columns(&rows));
    }
    s
}

/// `benchops-publish history`.
#[expect(
    clippy::too_many_arguments,
    reason = "one argument per command-line option"
)]
pub(super) fn history(
    place: &Place,
    lane: &str,
    case: Option<&str>,
    metric: Option<&str>,
    limit: u32,
    csv: bool,
    json: bool,
    svg: Option<&Path>,
) -> Result<u8, CommandError> {
    let lane = lane_arg(lane)?;
    let h = open_history(place)?;
    let lh = lane_history(&h, &lane, case, metric, limit as usize)?;
    if let Some(path) = svg {
        let [one] = lh.series.as_slice() else {
            let first = &lh.series[0];
            return Err(ReadError::SvgNeedsOne {
                count: lh.series.len(),
                case: first.case.clone(),
                metric: first.metric.clone(),
            }
            .into());
        };
        let points = one.trend_points();
        let mut doc = chart::trend_svg(&one.chart(lane.as_str(), &points));
        doc.push('\n');
        benchops::fsio::write_atomic(path, doc.as_bytes()).map_err(|source| {
            ReadError::WriteSvg {
                path: path.to_path_buf(),
                source,
            }
        })?;
    }
    if json {
        super::print_json(&lh)?;
    } else if csv {
        out(render_csv(&lh));
    } else {
        out(render_table(&lh));
    }
    Ok(OK)
}
