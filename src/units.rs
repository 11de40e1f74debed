//! How a measured number is printed for people: the one rule every table
//! of the CLIs uses (`bench analyze`, `compare`, the lane's tables).
//!
//! - Four significant digits ([`SIGNIFICANT`]), trailing zeros kept, so
//!   that a column reads at one precision (`14.65 ms`, `5.000 ms`). An
//!   integer part is never cut: `26081280` stays whole.
//! - Units are scaled **per value**: each value takes the prefix that puts
//!   it in `[1, 1000)` (`[1, 1024)` for bytes); a time whose rounding
//!   reaches 1000 takes the next prefix (`0.9999996 s` is `1.000 s`, not
//!   `1000 ms`). Seconds (`s`, `ms`, `us`/`µs`, `ns`) print as `s`, `ms`,
//!   `µs` or `ns`; bytes (`bytes`, `byte`, `B`) as `B`, `KiB`, `MiB`,
//!   `GiB`, `TiB` (steps of 1024). Any other unit is kept as written after
//!   the number, unscaled; a unitless metric (`""` or `"1"`) is the number
//!   alone.
//! - Zero is `0` with its unit; a value that was not measured is
//!   [`NOT_MEASURED`] (`null`), never 0.
//! - Machine output (`--format json`, `--json`) never goes through here:
//!   it keeps every digit.

use std::fmt::Write as _;

/// Significant digits of a printed value.
pub const SIGNIFICANT: i32 = 4;

/// What a value that was not measured prints as.
pub const NOT_MEASURED: &str = "null";

/// The time prefixes, largest first: (factor in seconds, symbol).
const TIME: [(f64, &str); 4] = [(1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")];

/// The byte prefixes, largest first.
const BYTES: [(f64, &str); 5] = [
    (1_099_511_627_776.0, "TiB"),
    (1_073_741_824.0, "GiB"),
    (1_048_576.0, "MiB"),
    (1024.0, "KiB"),
    (1.0, "B"),
];

/// What a unit is, for scaling.
enum Kind<'a> {
    /// A time; the factor turns one unit into seconds.
    Time(f64),
    /// Bytes.
    Bytes,
    /// Printed after the number as written.
    Other(&'a str),
    /// No unit.
    None,
}

fn kind(unit: &str) -> Kind<'_> {
    match unit.trim() {
        "s" | "sec" | "secs" | "second" | "seconds" => Kind::Time(1.0),
        "ms" => Kind::Time(1e-3),
        "us" | "µs" | "μs" => Kind::Time(1e-6),
        "ns" => Kind::Time(1e-9),
        "B" | "byte" | "bytes" => Kind::Bytes,
        "" | "1" => Kind::None,
        other => Kind::Other(other),
    }
}

/// `value` rounded to [`SIGNIFICANT`] digits (integers keep every digit).
fn round_sig(value: f64) -> f64 {
    if value == 0.0 || !value.is_finite() {
        return value;
    }
    let e = value.abs().log10().floor() as i32;
    let decimals = SIGNIFICANT - 1 - e;
    if decimals <= 0 {
        return value.round();
    }
    let scale = 10f64.powi(decimals);
    (value * scale).round() / scale
}

/// A bare number at [`SIGNIFICANT`] digits: `0.004652`, `12.35`, `26081280`,
/// `4.200e-7` (scientific below 0.0001 and from 10^15 on).
pub fn number(value: f64) -> String {
    if value == 0.0 {
        return "0".to_owned();
    }
    if !value.is_finite() {
        return format!("{value}");
    }
    let r = round_sig(value);
    let e = r.abs().log10().floor() as i32;
    if !(-4..15).contains(&e) {
        return format!("{:.*e}", (SIGNIFICANT - 1) as usize, value);
    }
    let decimals = (SIGNIFICANT - 1 - e).max(0) as usize;
    format!("{r:.decimals$}")
}

/// `value`, measured in `unit`, as people read it (see the module doc);
/// [`NOT_MEASURED`] for `None`.
pub fn quantity(value: Option<f64>, unit: &str) -> String {
    let Some(v) = value else {
        return NOT_MEASURED.to_owned();
    };
    // The prefix by the value; a time whose rounding reaches 1000 of one
    // prefix takes the next (1000 ms is 1.000 s). Bytes step by 1024, so
    // `1024 B` stays as it rounds.
    let scaled = |base: f64, prefixes: &[(f64, &'static str)], step_up: bool| {
        if base == 0.0 {
            let unit = prefixes.iter().find(|(f, _)| *f == 1.0).map_or("", |p| p.1);
            return format!("0 {unit}");
        }
        let mut i = prefixes
            .iter()
            .position(|(f, _)| base.abs() >= *f)
            .unwrap_or(prefixes.len() - 1);
        if step_up && i > 0 && round_sig(base / prefixes[i].0).abs() >= 1000.0 {
            i -= 1;
        }
        let (factor, symbol) = prefixes[i];
        format!("{} {symbol}", number(base / factor))
    };
    match kind(unit) {
        Kind::Time(f) => scaled(v * f, &TIME, true),
        Kind::Bytes => scaled(v, &BYTES, false),
        Kind::Other(u) => format!("{} {u}", number(v)),
        Kind::None => number(v),
    }
}

/// An interval, `[low, high]`, each end by [`quantity`].
pub fn interval(low: f64, high: f64, unit: &str) -> String {
    format!(
        "[{}, {}]",
        quantity(Some(low), unit),
        quantity(Some(high), unit)
    )
}

/// How a column is aligned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// Text.
    Left,
    /// Numbers.
    Right,
}

/// How many characters `s` shows: its characters outside SGR escapes
/// (`ESC [ … m`, the colour a CLI paints a cell with). Text from records
/// never holds a raw escape: the one terminal rule escapes it first.
pub fn visible_width(s: &str) -> usize {
    let mut n = 0;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            n += 1;
        }
    }
    n
}

/// Rows as aligned columns, two spaces apart, widths in visible
/// characters ([`visible_width`]). A
/// column without an entry in `align` is left-aligned; a row may have
/// fewer cells than others, and its last cell then does not widen its
/// column; the last cell of a row is not padded, and no line ends in
/// spaces.
pub fn columns(rows: &[Vec<String>], align: &[Align]) -> String {
    let n = rows.iter().map(Vec::len).max().unwrap_or(0);
    let mut widths = vec![0usize; n];
    for row in rows {
        // The last cell of a short row (a note such as `(no successful
        // runs)`) runs on without widening its column.
        let counted = if row.len() < n { row.len() - 1 } else { n };
        for (w, cell) in widths.iter_mut().zip(row).take(counted) {
            *w = (*w).max(visible_width(cell));
        }
    }
    let mut o = String::new();
    for row in rows {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            let pad = widths[i].saturating_sub(visible_width(cell));
            let last = i + 1 == row.len();
            if i > 0 {
                line.push_str("  ");
            }
            if last && row.len() < n {
                line.push_str(cell);
                continue;
            }
            match align.get(i).copied().unwrap_or(Align::Left) {
                Align::Right => {
                    let _ = write!(line, "{}{cell}", " ".repeat(pad));
                }
                Align::Left if last => line.push_str(cell),
                Align::Left => {
                    let _ = write!(line, "{cell}{}", " ".repeat(pad));
                }
            }
        }
        o.push_str(line.trim_end());
        o.push('\n');
    }
    o
}

/// A size in bytes as people write it: a whole number, optionally with a
/// `K`, `M`, `G` or `T` suffix (powers of 1024, as [`quantity`] prints
/// them; `KiB`, `MB` and a trailing `B` are read the same), e.g. `500M`,
/// `2G`, `1048576`. The error says what was wrong, for the caller to name
/// the flag or key it came from.
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return Err(format!(
            "{t:?} is not a size: write a whole number of bytes, optionally with K, M, G or T (powers of 1024), e.g. 500M or 2G"
        ));
    }
    let (number, suffix) = t.split_at(digits);
    let suffix = suffix.trim().to_ascii_uppercase();
    let suffix = suffix
        .strip_suffix("IB")
        .or_else(|| suffix.strip_suffix('B'))
        .unwrap_or(&suffix);
    let shift = match suffix {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        "T" => 40,
        other => {
            return Err(format!(
                "{t:?}: unknown unit {other:?}; use K, M, G or T (powers of 1024), or a plain number of bytes"
            ));
        }
    };
    number
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(1u64 << shift))
        .ok_or_else(|| format!("{t:?} is too large a size"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_with_binary_suffixes_and_refuse_what_is_not_one() {
        assert_eq!(parse_bytes("1048576"), Ok(1_048_576));
        assert_eq!(parse_bytes("500M"), Ok(500 << 20));
        assert_eq!(parse_bytes("2G"), Ok(2 << 30));
        assert_eq!(parse_bytes("2 GiB"), Ok(2 << 30));
        assert_eq!(parse_bytes("64kb"), Ok(64 << 10));
        assert_eq!(parse_bytes("1T"), Ok(1 << 40));
        for bad in [
            "",
            "G",
            "-1",
            "1.5G",
            "2X",
            "99999999999999999999",
            "16777216T",
        ] {
            assert!(parse_bytes(bad).is_err(), "{bad}");
        }
        assert!(
            parse_bytes("2X")
                .expect_err("unknown unit")
                .contains("use K, M, G or T")
        );
    }

    #[test]
    fn numbers_have_four_significant_digits_and_keep_integers_whole() {
        assert_eq!(number(0.004_651_567_000_000_000_5), "0.004652");
        assert_eq!(number(12.345_6), "12.35");
        assert_eq!(number(1.0), "1.000");
        assert_eq!(number(9.999_6), "10.00");
        assert_eq!(number(26_081_280.0), "26081280");
        assert_eq!(number(-1.5), "-1.500");
        assert_eq!(number(4.2e-7), "4.200e-7");
        assert_eq!(number(0.0), "0");
        assert_eq!(number(0.1 + 0.2), "0.3000");
    }

    #[test]
    fn seconds_scale_per_value() {
        assert_eq!(quantity(Some(0.004_651_567_000_000_000_5), "s"), "4.652 ms");
        assert_eq!(quantity(Some(0.014_652_095), "s"), "14.65 ms");
        assert_eq!(quantity(Some(7.2e-5), "s"), "72.00 µs");
        assert_eq!(quantity(Some(3158.0), "ns"), "3.158 µs");
        assert_eq!(quantity(Some(12.0), "ns"), "12.00 ns");
        assert_eq!(quantity(Some(2.5), "ms"), "2.500 ms");
        assert_eq!(quantity(Some(3.0), "us"), "3.000 µs");
        assert_eq!(quantity(Some(1234.5), "s"), "1235 s");
        // Rounding that reaches the next prefix takes it.
        assert_eq!(quantity(Some(0.999_999_6), "s"), "1.000 s");
        assert_eq!(quantity(Some(-0.002), "s"), "-2.000 ms");
        assert_eq!(quantity(Some(0.0), "s"), "0 s");
        assert_eq!(quantity(Some(0.0), "ns"), "0 s");
    }

    #[test]
    fn bytes_scale_in_steps_of_1024() {
        assert_eq!(quantity(Some(18_231_296.0), "bytes"), "17.39 MiB");
        assert_eq!(quantity(Some(45_056.0), "bytes"), "44.00 KiB");
        assert_eq!(quantity(Some(512.0), "B"), "512.0 B");
        assert_eq!(quantity(Some(1023.9), "bytes"), "1024 B");
        assert_eq!(quantity(Some(1024.0), "bytes"), "1.000 KiB");
        assert_eq!(quantity(Some(3.0 * 1_073_741_824.0), "bytes"), "3.000 GiB");
        assert_eq!(quantity(Some(0.0), "bytes"), "0 B");
    }

    #[test]
    fn other_units_are_kept_and_unitless_values_are_plain() {
        assert_eq!(quantity(Some(1234.567), "ops/s"), "1235 ops/s");
        assert_eq!(quantity(Some(0.5), ""), "0.5000");
        assert_eq!(quantity(Some(42.0), "1"), "42.00");
    }

    #[test]
    fn not_measured_is_null_never_zero() {
        assert_eq!(quantity(None, "s"), "null");
        assert_eq!(quantity(None, ""), "null");
        assert_ne!(quantity(None, "bytes"), quantity(Some(0.0), "bytes"));
    }

    #[test]
    fn intervals_format_both_ends() {
        assert_eq!(
            interval(0.009_525_528, 0.027_079_788, "s"),
            "[9.526 ms, 27.08 ms]"
        );
    }

    #[test]
    fn colour_escapes_take_no_width() {
        assert_eq!(visible_width("\u{1b}[1;31mslower\u{1b}[0m"), 6);
        assert_eq!(visible_width("µs"), 2);
        let rows = vec![
            vec!["V".into(), "X".into()],
            vec!["\u{1b}[31mslower\u{1b}[0m".into(), "1".into()],
        ];
        assert_eq!(
            columns(&rows, &[]),
            "V       X\n\u{1b}[31mslower\u{1b}[0m  1\n"
        );
    }

    #[test]
    fn columns_align_by_characters_and_trim() {
        let rows = vec![
            vec!["CASE".into(), "MEDIAN".into(), "NOTE".into()],
            vec!["a".into(), "72.00 µs".into(), "x".into()],
            vec!["long case".into(), "1.000 s".into(), String::new()],
            vec!["b".into(), "a note wider than the column".into()],
        ];
        assert_eq!(
            columns(&rows, &[Align::Left, Align::Right]),
            "CASE         MEDIAN  NOTE\n\
             a          72.00 µs  x\n\
             long case   1.000 s\n\
             b          a note wider than the column\n"
        );
    }
}
